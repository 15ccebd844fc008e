/*
 * bench/lwbench.h - what lwbench's parts share.
 *
 * lwbench_main.c    options, the sweep, main
 * lwbench_target.c  the Redis it runs against: a private redis-server
 *                   (TLS-only with --tls) or a given one; Redis CPU from
 *                   INFO; deleting its keys
 * lwbench_node.c    lwbench's own connections to a node, the deleter, a
 *                   private server's certificates, naps, progress lines:
 *                   what the files above and below call, calling none
 * lwbench_cluster.c --cluster: a private or given Redis Cluster, its
 *                   masters and slot map, per-master counters from INFO,
 *                   the cluster ceiling (per-master floods at once)
 * lwbench_ceiling.c the same-run ceiling: raw pipelined floods of the
 *                   renew script
 * lwbench_order.c   the order the floods renew the locks in
 * lwbench_run.c     one sizing run: acquire N watchdog locks, hold them,
 *                   measure
 * lwbench_permit.c  --kind permit: the run's semaphores, the ceiling of the
 *                   permit renewal script, deleting them
 * lwbench_report.c  the table, JSON and the gnuplot plot
 * lwbench_cleanup.c the keys of earlier runs that were killed: found with
 *                   SCAN, judged by the run they name, UNLINKed
 *
 * lwbench's own connections (PING, INFO, CLUSTER SLOTS, the sentinels'
 * question, deleting its keys, the ceiling's floods) go through the
 * library's engine (adapters/engine.h), as the client's do, so that they
 * speak TLS when the target does: target_node() and node_call() for a
 * command, struct deleter for the pipelined DELs, target_engine() for the
 * floods.
 */
#ifndef LW_BENCH_LWBENCH_H
#define LW_BENCH_LWBENCH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "redis_cluster.h"
#include "redis_server.h"
#include "redis_url.h"
#include "tls_opts.h"

/* --kind: which locks a run holds. */
enum lwb_kind {
    LWB_KIND_LOCK = 0, /* lw_lock_new(): Redisson's RLock */
    LWB_KIND_READ,     /* lw_read_lock_new(): read holds of read-write locks */
    LWB_KIND_WRITE,    /* lw_write_lock_new(): their write holds */
    LWB_KIND_PERMIT,   /* lw_permit_acquire(): permits of semaphores
                          (--locks counts them, --per-semaphore to one) */
    LWB_KIND_FAIR,     /* lw_fair_lock_new(): Redisson's RFairLock, held
                          (renewed as a lock is) */
    LWB_KIND_MULTI,    /* lw_multi_new(): sets of --names-per-lock locks,
                          each set taken at once (--locks counts names) */
};

/* "lock", "read", "write", "permit", "fair" or "multi": --kind's words,
 * the JSON's. */
static inline const char *lwb_kind_name(enum lwb_kind kind)
{
    static const char *const name[] = {"lock", "read", "write", "permit", "fair", "multi"};

    return name[kind];
}

struct opts {
    uint32_t locks;
    enum lwb_kind kind; /* --kind, default LWB_KIND_LOCK */
    uint32_t lease_ms, tick_ms, slots, batch, inflight;
    double duration_s;
    const char *redis;                                 /* -r as given, or NULL: a private server */
    struct redis_url url;                              /* -r parsed (credentials, DB; sentinels) */
    const char *sentinel_username, *sentinel_password; /* $LWLOCK_SENTINEL_*
                                   with a redis-sentinel:// -r, or NULL */
    struct lw_tls_config tls;                          /* --tls, --cacert, ... (tls_opts.h), enable
                                                          also by a rediss -r: the data nodes' TLS
                                                          (the one Redis, every cluster node, the
                                                          master the sentinels name) */
    int plain_sentinels;                               /* $LWLOCK_SENTINEL_TLS=0: the sentinels
                                                          without TLS; else as the data nodes */
    int cluster;                                       /* --cluster */
    struct redis_seeds seeds;                          /* --cluster's seeds; n == 0: -r's HOST:PORT,
                                                          or without -r a private cluster */
    const char *json, *plot;                           /* files, or NULL */
    int sweep;
    int verbose;             /* -v: the library's log lines to stderr */
    uint32_t clients;        /* --clients: clients splitting the locks,
                                1..LWB_MAX_CLIENTS, default 1 */
    int no_ceiling;          /* --no-ceiling, or a given Redis without
                                --ceiling: no floods, no ceiling, ratio or
                                capacity estimate */
    int ceiling;             /* --ceiling: flood a given Redis too */
    int no_ceiling_given;    /* no_ceiling because the Redis is given */
    int given;               /* -r, LWLOCK_REDIS or -c SEEDS: a Redis
                                lwbench does not start (a shared one) */
    uint32_t per_semaphore;  /* --per-semaphore: permits of one semaphore
                                (--kind permit) */
    uint32_t names_per_lock; /* --names-per-lock: names of one multi-lock
                                (--kind multi) */
    int cleanup;             /* --cleanup: only remove gone runs' keys */
    int no_cleanup;          /* --no-cleanup: not before the run either */
};

#define LWB_DEFAULT_PER_SEMAPHORE 100u
#define LWB_DEFAULT_NAMES_PER_LOCK 4u

/* A given Redis is flooded no sooner than this after lwbench said it
 * would be (--ceiling): time to read it and press Ctrl-C. */
#define FLOOD_NOTICE_NS (5ull * 1000000000ull)

/* The share of the ceiling to plan for (docs/tuning.md): past it, the
 * client falls behind in bursts before the ceiling's rate is reached. */
#define LWB_PLANNING_SHARE 0.70

/* A run's keys: "lwbench:<host>:<pid>:<start>" (lwbench_node.c's
 * run_prefix()), then ":r<step>:{<i>}" for lock i of sweep step <step>
 * (":p<step>:{<j>}" for semaphore j), the index a hash tag so that the
 * keys Redisson's layout derives from a name ("<name>:timeout", a
 * reader's "<name>:<field>:rwlock_timeout:1") start with it too. */
#define LWB_HOST_MAX 32u   /* bytes of the host name kept */
#define LWB_PREFIX_MAX 96u /* "lwbench:" host ":" pid ":" start, and a 0 */
#define LWB_NAME_MAX 128u  /* a run's prefix, ":r<step>" and ":{<i>}" */

#define LWB_MAX_MASTERS 16
#define LWB_MAX_CLIENTS 256 /* --clients: each an engine thread */

/* A cluster master: where it is. */
struct master {
    char host[REDIS_URL_HOST_MAX];
    int port;
};

struct target {
    char host[256]; /* one Redis; in a cluster the first master */
    int port;
    const char *username, *password; /* NULL when none */
    int db;
    struct lw_tls_config tls;   /* the data nodes' TLS, for the client and
                                   lwbench's own connections: o->tls, or
                                   with a private TLS server its CA */
    struct tls_certs certs;     /* a private TLS server's throwaway CA and
                                   certificate (dir "" unless made) */
    struct redis_server server; /* pid 0 unless private and running */
    int private_server;         /* started by lwbench */
    uint64_t warned_at;         /* lw_clock_now() when a given Redis was warned of
                                   the floods (--ceiling), or 0 */
    /* Every key this process makes starts so: run_prefix()'s. */
    char prefix[LWB_PREFIX_MAX];
    sigset_t stop_signals; /* SIGINT, SIGTERM: blocked, polled in nap() */
    /* --cluster */
    int cluster;
    struct redis_cluster private_cluster; /* nnodes 0 unless started here */
    struct redis_seeds seeds;             /* what the client is given */
    unsigned nmasters;
    struct master masters[LWB_MAX_MASTERS];
    uint8_t slot_master[REDIS_CLUSTER_SLOTS]; /* slot -> index in masters */
};

/* One master's share of a cluster run. */
struct master_result {
    uint32_t locks;        /* the run's locks whose slot it serves */
    double renewals_per_s; /* PEXPIREs by the renew script (INFO
                              commandstats), over the window */
    double calls_per_s;    /* EVALSHAs, over the window */
    double redis_cpu_pct;  /* its CPU over the window */
    double ceiling;        /* its share of the cluster flood, keys/s */
    double single;         /* ... of the single-key flood, keys/s */
};

/* The ceiling: keys renewed per second by a raw flood of the renew script,
 * measured on the target in this run, on the run's own locks. */
struct ceiling {
    double batched;       /* opts.batch keys per call, opts.inflight calls out */
    double single;        /* 1 key per call, SINGLE_WINDOW calls out */
    double redis_cpu_pct; /* Redis during the batched flood */
};
#define SINGLE_WINDOW 4096u     /* the engine's default max_inflight */
#define SINGLE_KEYS_MAX 200000u /* formatted single-key calls kept at once \
                                   (in a cluster: over all masters) */

#define SERIES_MAX 600u /* seconds of renewals per second kept */

struct run_result {
    struct ceiling ceiling; /* measured on this run's locks */
    uint32_t locks, acquired;
    double acquire_s;                            /* to acquire them all */
    double window_s;                             /* the measured hold: whole renewal periods */
    double needed, achieved;                     /* renewals/s: locks / (lease/3); confirmed */
    uint64_t lag_p50_ns, lag_p99_ns, lag_max_ns; /* over the window: the max is exact
                                                    when the run's worst came in it,
                                                    else its histogram bucket's top */
    uint64_t lag_worst_ns;                       /* the worst since the run's clients began, acquiring
                                                    included: what the progress lines say */
    uint64_t lost;                               /* over the whole run */
    double engine_cpu_pct;                       /* the engine thread, % of one core */
    double redis_cpu_pct;
    double bytes_per_lock; /* client RSS growth per lock acquired */
    double keys_per_call;
    uint32_t refused;         /* acquires refused by admission
                                 (LW_EOVERLOAD): the Redis could renew no
                                 more; `acquired` is then the client's
                                 measured capacity at this lease */
    uint32_t skipped;         /* not asked for once one was refused */
    uint64_t overloads;       /* times admission closed */
    double per_s[SERIES_MAX]; /* renewals sent in each second of the hold */
    unsigned nper_s;
    int held;                /* all acquired (or refused by admission),
                                none lost, not behind */
    int interrupted;         /* SIGINT or SIGTERM while acquiring or
                                holding: what was measured until then */
    double window_planned_s; /* the hold asked for (window_s is what was
                                measured) */
    int ceiling_measured;    /* the ceiling's floods ran to their end */
    unsigned nmasters;       /* cluster: masters[0..nmasters) */
    struct master_result masters[LWB_MAX_MASTERS];
};

/* lwbench_target.c */
/* target_open's failures: the Redis (given, or private) did not answer,
 * refused lwbench or is not what was asked (a TLS handshake or certificate,
 * AUTH, the DB, no sentinel naming the master, not a cluster): exit 69;
 * lwbench's own (a private server that did not start, no certificates
 * made): exit 2. */
enum { TARGET_FAILED = -1,
       TARGET_UNAVAILABLE = -2 };
/* target_open - t's Redis, as o says, answering lwbench's own connections:
 * 0, or TARGET_FAILED / TARGET_UNAVAILABLE with why (one line). */
int target_open(struct target *t, const struct opts *o, char *why, size_t n);
void target_close(struct target *t);
/* Redis's CPU seconds so far (INFO cpu), or -1. */
double target_cpu_s(const struct target *t);
/* Delete key_name(p, i) for i < count; with read_holds (read-write locks
 * held for reading) every reader's timeout keys the hash names too.  0 or
 * -1. */
int target_delete(const struct target *t, const char *p, uint32_t count, int read_holds);

/* lwbench_node.c */
/* --tls without a given Redis: a throwaway CA and server certificate (the
 * fixtures' tls_certs, in a temporary directory target_close() removes),
 * the server settings into *ft, and t->tls trusting that CA alone. */
struct fixture_tls;
int target_private_tls(struct target *t, struct fixture_tls *ft, char *why, size_t n);
/* An engine on host:port as username/password (either may be NULL), on
 * db, with tls, that knows `scripts` (5 s to connect, command_timeout_ms
 * per command).  0 or an LW_E* code. */
struct engine;
int node_engine(const char *host, int port, const char *username, const char *password, int db,
                const struct lw_tls_config *tls, const char *const *scripts, unsigned nscripts,
                uint32_t max_inflight, uint32_t command_timeout_ms, struct engine **e);
/* A bare engine on host:port with t's credentials, DB and TLS that knows
 * `scripts`, a minute's command timeout.  0 or an LW_E* code. */
int target_engine(const struct target *t, const char *host, int port,
                  const char *const *scripts, unsigned nscripts, uint32_t max_inflight,
                  struct engine **e);
/* lwbench's own connection to host:port, with t's credentials, DB and TLS:
 * an engine without scripts (5 s to connect, 30 s per command), for
 * node_call().  0 or an LW_E* code; engine_last_error() says why a
 * connection failed. */
int target_node(const struct target *t, const char *host, int port, struct engine **e);
/* One command through e, waited for.  fn (may be NULL) reads the reply on
 * the engine thread, an error reply too.  0 when a reply came that is not
 * an error, LW_EREDIS when it is one, else the request's LW_E* code. */
typedef void node_reply_fn(const redisReply *r, void *arg);
int node_call(struct engine *e, node_reply_fn *fn, void *arg, int argc, const char **argv);

/* Deleting a run's keys on one node: DELs pipelined DELETE_CHUNK at a time
 * (each chunk sent, then its replies awaited). */
#define DELETE_CHUNK 1000u
struct deleter {
    struct engine *e;
    struct request *reqs; /* DELETE_CHUNK */
    struct pipeline *p;
    uint32_t queued;
    int bad;        /* a DEL failed, or a chunk never finished */
    int read_holds; /* set after deleter_open(): delete the
                       readers' timeout keys too */
};
/* 0, or -1 (nothing left to close). */
int deleter_open(struct deleter *d, const struct target *t, const char *host, int port);
/* Queue the DEL of key_name(p, i) (with read_holds, and its readers'
 * timeout keys, all in its slot); a full chunk is sent and awaited. */
void deleter_add(struct deleter *d, const char *p, uint32_t i);
/* Send what is queued, wait, free.  0, or -1 when any DEL failed. */
int deleter_close(struct deleter *d);

/* "<p>:{<i>}" into buf: a run's i-th name (see LWB_PREFIX_MAX). */
int key_name(char *buf, size_t n, const char *p, uint32_t i);
/* This process's prefix, "lwbench:<host>:<pid>:<start>", into buf: the
 * host name (its first LWB_HOST_MAX bytes, a byte other than a letter, a
 * digit, '.', '-' or '_' made '_'), the pid, and the process's start time
 * (/proc/<pid>/stat's, clock ticks since boot), which tells a run from a
 * later process given the same pid. */
void run_prefix(char *buf, size_t n);
/* This host's name as run_prefix() writes it. */
void run_host(char *buf, size_t n);
/* Process pid's start time as run_prefix() writes it, or 0 when it
 * cannot be read (no such process, or /proc hides it). */
unsigned long long proc_start(int pid);
/* Sleep s seconds; 1 when SIGINT or SIGTERM came instead, or came
 * before (the main thread's naps only: the signals are blocked in every
 * thread and taken here). */
int nap(const struct target *t, double s);
/* The signal a nap() took (SIGINT or SIGTERM), or 0. */
int stop_signal(void);
/* "SIGINT", "SIGTERM" (or "signal N"). */
const char *sig_name(int sig);
/* A line of progress on stderr (overwritten in place on a terminal). */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A thread's CPU seconds so far, from /proc, or -1. */
double thread_cpu_s(int tid);

/* flood_order - the lock a flood renews j-th of keys locks: each once per
 * pass of keys, in a scattered order, as a watchdog's renewals come due
 * (lwbench_order.c says why). */
uint32_t flood_order(uint64_t j, uint32_t keys);

/* lwbench_ceiling.c: flood the locks "<prefix>:<i>", i < count, of kind,
 * held by owner 1 of the client `id` (its owner field `field`,
 * "<id>:1"); with remake, write them first as that holder (some were
 * lost).  0, or -1 with why filled in. */
struct flood_keys {
    const char *prefix;
    const char *field;
    uint32_t count;
    int remake;
    const char *id;
    enum lwb_kind kind;
};
int measure_ceiling(const struct opts *o, struct target *t, const struct flood_keys *k,
                    struct ceiling *out, char *why, size_t n);
/* A flood's rate when SIGINT or SIGTERM stopped it: the ceiling functions
 * then return 0 with nothing measured (stop_signal() says so). */
#define FLOOD_STOPPED -2.0

/* lwbench_cluster.c */
/* Start a private cluster or read a given one's masters and slot map: 0,
 * or TARGET_FAILED / TARGET_UNAVAILABLE (no seed answered, not a
 * cluster...) with why. */
int cluster_open(struct target *t, const struct opts *o, char *why, size_t n);
void cluster_close(struct target *t);
/* The masters index serving key name. */
unsigned cluster_master_of(const struct target *t, const char *name);
/* Master i's counters so far: renew-script PEXPIREs, EVALSHAs, CPU s.
 * -1 each when it did not answer. */
struct master_counters {
    double pexpire, evalsha, cpu_s;
};
void cluster_counters(const struct target *t, unsigned i, struct master_counters *c);
/* The cluster ceiling: every master's flood at once, each over the run's
 * locks it serves.  Fills r->masters[].ceiling and r->ceiling. */
int cluster_ceiling(const struct opts *o, struct target *t, const struct flood_keys *k,
                    struct run_result *r, char *why, size_t n);
int cluster_delete(const struct target *t, const char *p, uint32_t count, int read_holds);

/* lwbench_main.c: -v's log hook (lw_log_fn): "lwbench: LEVEL: message" on
 * stderr. */
void lwbench_log(int level, const char *message, void *arg);

/* lwbench_run.c: the client's config from the options (server not set). */
struct lw_client_config;
void client_config(const struct opts *o, struct lw_client_config *cfg);
/* 0 (r filled in, held or not), or -1 with why filled in. */
int sizing_run(const struct opts *o, struct target *t, uint32_t locks, unsigned step,
               struct run_result *r, char *why, size_t n);

/* lwbench_permit.c: --kind permit.  The run's permits, `per` to a
 * semaphore "<prefix>:<j>" (the last may have fewer), semaphore j made by
 * client j * nclients / nsems. */
struct lw_semaphore;
struct lw_permit;
struct lw_client;
struct permit_handles {
    char prefix[LWB_PREFIX_MAX + 16];
    uint32_t permits, per, nsems;
    struct lw_semaphore **sems; /* nsems */
    struct lw_permit *ids;      /* permits: those of semaphore j from j * per */
};
/* The semaphore j's share of the permits. */
uint32_t permits_of(const struct permit_handles *ph, uint32_t j);
/* Handles for every semaphore, each created with its permits (try-set):
 * 0, or an LW_E* code. */
int permit_semaphores(struct permit_handles *ph, struct lw_client *const *clients,
                      unsigned nclients);
/* Free the handles and ids (the keys stay). */
void permit_handles_free(struct permit_handles *ph);
/* The ceiling on the run's permits: SCRIPT_RENEW_PERMIT_NODE flooded, as
 * the watchdog sends it to one Redis.  0, or -1 with why. */
int permit_ceiling(const struct opts *o, struct target *t, const struct permit_handles *ph,
                   struct ceiling *out, char *why, size_t n);
/* Delete the semaphores' keys.  0 or -1. */
int permit_delete(const struct target *t, const struct permit_handles *ph);

/* lwbench_cleanup.c: the keys of earlier runs of this host whose process
 * is gone (kill -9, a crash), found with SCAN and UNLINKed, at most
 * budget_s seconds; the keys left (runs still running, of other hosts,
 * of lwbench 0.4) counted.  0, or -1 with c->why. */
#define CLEANUP_PIDS 8u
struct cleanup {
    uint64_t scanned;                    /* lwbench's keys looked at */
    uint64_t removed;                    /* of gone runs, UNLINKed */
    uint64_t live, other_host, old_form; /* left */
    unsigned runs_removed, runs_live, runs_other;
    int runs_uncounted;     /* more runs than counted */
    int pids[CLEANUP_PIDS]; /* the first gone runs' */
    int live_pids[CLEANUP_PIDS];
    unsigned npids, nlive_pids;
    int complete;    /* the whole keyspace seen */
    int interrupted; /* SIGINT or SIGTERM */
    char why[256];
};
int cleanup_stale(const struct target *t, double budget_s, struct cleanup *c);
/* What c found, in lines on f, each starting with `what`: what was
 * removed, 0.4's keys, a look cut short; with all, what was left too. */
void cleanup_say(FILE *f, const char *what, const struct cleanup *c, int all);

/* lwbench_report.c */
void report_table(const struct opts *o, const struct target *t, const struct run_result *runs,
                  unsigned nruns, uint32_t largest_held);
/* The results as JSON into f (opened before the runs, so that a path
 * that cannot be written fails before them), closed; 0 or -1, said. */
int report_json(FILE *f, const char *path, const struct opts *o, const struct target *t,
                const struct run_result *runs, unsigned nruns, uint32_t largest_held);
int report_plot(const char *path, const struct opts *o, const struct run_result *runs,
                unsigned nruns);

#endif
