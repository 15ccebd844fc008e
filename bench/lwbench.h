/*
 * bench/lwbench.h - what lwbench's parts share.
 *
 * lwbench.c         options, the sweep, main
 * lwbench_target.c  the Redis it runs against: a private redis-server or
 *                   HOST:PORT; Redis CPU from INFO; deleting its keys
 * lwbench_ceiling.c the same-run ceiling: raw pipelined floods of the
 *                   renew script
 * lwbench_run.c     one sizing run: acquire N watchdog locks, hold them,
 *                   measure
 * lwbench_report.c  the table, JSON and the gnuplot plot
 */
#ifndef LW_BENCH_LWBENCH_H
#define LW_BENCH_LWBENCH_H

#include <signal.h>
#include <stdint.h>

#include "redis_server.h"

struct opts {
    uint32_t locks;
    uint32_t lease_ms, tick_ms, slots, batch, inflight;
    double duration_s;
    const char *redis;          /* HOST:PORT, or NULL: a private server */
    const char *json, *plot;    /* files, or NULL */
    int sweep;
};

struct target {
    char host[256];
    int port;
    struct redis_server server; /* pid 0 unless private and running */
    int private_server;         /* started by lwbench */
    char prefix[64];            /* every key this process makes starts so */
    sigset_t stop_signals;      /* SIGINT, SIGTERM: blocked, polled in nap() */
};

/* The ceiling: keys renewed per second by a raw flood of the renew script,
 * measured on the target in this run, on the run's own locks. */
struct ceiling {
    double batched;             /* opts.batch keys per call, opts.inflight calls out */
    double single;              /* 1 key per call, SINGLE_WINDOW calls out */
    double redis_cpu_pct;       /* Redis during the batched flood */
};
#define SINGLE_WINDOW 4096u     /* the engine's default max_inflight */

struct run_result {
    struct ceiling ceiling;     /* measured on this run's locks */
    uint32_t locks, acquired;
    double acquire_s;           /* to acquire them all */
    double window_s;            /* the measured hold: whole renewal periods */
    double needed, achieved;    /* renewals/s: locks / (lease/3); confirmed */
    uint64_t lag_p50_ns, lag_p99_ns, lag_max_ns; /* over the window */
    uint64_t lost;              /* over the whole run */
    double engine_cpu_pct;      /* the engine thread, % of one core */
    double redis_cpu_pct;
    double bytes_per_lock;      /* client RSS growth per lock acquired */
    double keys_per_call;
    int held;                   /* all acquired, none lost, not behind */
    int interrupted;
};

/* lwbench_target.c */
int target_open(struct target *t, const char *redis, char *why, size_t n);
void target_close(struct target *t);
/* Redis's CPU seconds so far (INFO cpu), or -1. */
double target_cpu_s(const struct target *t);
/* Delete "<p>:<i>" and "{<p>:<i>}:token" for i < count.  0 or -1. */
int target_delete(const struct target *t, const char *p, uint32_t count);
/* "<p>:<i>" into buf. */
int key_name(char *buf, size_t n, const char *p, uint32_t i);
/* Sleep s seconds; 1 when SIGINT or SIGTERM came instead. */
int nap(const struct target *t, double s);
/* A line of progress on stderr (overwritten in place on a terminal). */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A thread's CPU seconds so far, from /proc, or -1. */
double thread_cpu_s(int tid);

/* lwbench_ceiling.c: flood the locks "<prefix>:<i>", i < count, whose
 * owner field is `field`; with remake, HSET them first (some were lost).
 * 0, or -1 with why filled in. */
struct flood_keys {
    const char *prefix;
    const char *field;
    uint32_t count;
    int remake;
};
int measure_ceiling(const struct opts *o, struct target *t, const struct flood_keys *k,
                    struct ceiling *out, char *why, size_t n);

/* lwbench_run.c: the client's config from the options (server not set). */
struct lw_client_config;
void client_config(const struct opts *o, struct lw_client_config *cfg);
/* 0 (r filled in, held or not), or -1 with why filled in. */
int sizing_run(const struct opts *o, struct target *t, uint32_t locks, unsigned step,
               struct run_result *r, char *why, size_t n);

/* lwbench_report.c */
void report_table(const struct opts *o, const struct target *t, const struct run_result *runs,
                  unsigned nruns, uint32_t largest_held);
int report_json(const char *path, const struct opts *o, const struct target *t,
                const struct run_result *runs, unsigned nruns, uint32_t largest_held);
int report_plot(const char *path, const struct opts *o, const struct run_result *runs,
                unsigned nruns);

#endif
