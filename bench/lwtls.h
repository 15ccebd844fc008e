/*
 * bench/lwtls.h - what the parts of lwtls share (lwtls.c says what it
 * measures and how): the options, the runs and their results, and each
 * part's entry.
 *
 *   lwtls.c         options, the runs in turn, exit status
 *   lwtls_tls.c     the TLS settings: servers, the clients', tls-noresume's
 *                   SSL_CTX
 *   lwtls_setup.c   1. connection set-up times (the library's conn.c)
 *   lwtls_storm.c   2. the reconnect storm (the public API, one loop)
 *   lwtls_report.c  spreads, the tables, the JSON
 */
#ifndef LW_BENCH_LWTLS_H
#define LW_BENCH_LWTLS_H

#include <signal.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include <leasewheel/lock.h>

struct ev_loop;
struct redis_server;
struct tls_certs;

#define MAX_LOCKS 64u

enum run_kind { RUN_TCP,
                RUN_TLS,
                RUN_TLS_NOCACHE,
                RUN_TLS_NORESUME,
                RUN_KINDS };

extern const char *const run_names[RUN_KINDS];

struct opts {
    int runs[RUN_KINDS]; /* which, in this order */
    uint32_t samples, clients, locks, lease_ms, reconnect_min_ms;
    int server_auth, verbose;
    const char *json;
    void *ssl_ctx; /* tls-noresume: the clients' SSL_CTX, lwtls's own */
};

/* Quantiles of a set of times, ns. */
struct spread {
    unsigned n;
    uint64_t p50, p99, max;
};

struct storm_result {
    unsigned clients, locks;
    uint64_t cold_ns;                         /* until every client answered a first call */
    long long killed_normal, killed_pubsub;   /* CLIENT KILL's replies; -1: failed */
    struct spread up, renew;                  /* over the clients that got there */
    uint64_t all_renewing_ns;                 /* from the kill; 0: not every client */
    uint64_t longest_iteration_ns;            /* the loop's longest, after the kill */
    uint64_t reconnects, handshakes, resumed; /* command connections, since the kill */
    uint64_t failed_attempts;                 /* connection attempts that failed after the kill */
    uint64_t went_at_risk, lost, acquire_failed;
    long long gone;                 /* locks whose hold Redis no longer has at the end; -1: unknown */
    uint64_t held_end;              /* locks_held at the end, all clients */
    double self_cpu_s, redis_cpu_s; /* from the kill until all renewing; -1: unknown */
    int ok;
};

struct run {
    enum run_kind kind;
    int done_setup, done_storm;
    struct spread fresh, again; /* set-up: new connections, made again */
    unsigned resumed;           /* "again"s that resumed a session */
    unsigned refused;           /* "again"s whose session the server refused */
    struct storm_result storm;
    int interrupted;
};

/* Set by SIGINT or SIGTERM: the run in progress ends early, the rest are
 * skipped. */
extern volatile sig_atomic_t interrupted;

/* lwtls_tls.c */
/* Start run k's private redis-server (TLS only on TCP for the TLS runs):
 * 0, or non-zero. */
int start_server(const struct opts *o, enum run_kind k, const struct tls_certs *certs,
                 struct redis_server *s);
/* The clients' TLS settings for run k. */
struct lw_tls_config client_tls(const struct opts *o, enum run_kind k,
                                const struct tls_certs *certs);
/* tls-noresume's SSL_CTX, or NULL (said); and its end. */
void *make_ssl_ctx(const struct opts *o, const struct tls_certs *certs);
void free_ssl_ctx(void *ctx);

/* lwtls_setup.c: the set-up pairs of run k on the server at port, into
 * run; 0, or 2 (a failure, said). */
int measure_setup(struct ev_loop *loop, const struct opts *o, enum run_kind k,
                  const struct tls_certs *certs, int port, struct run *run);

/* lwtls_storm.c: the storm of run k (the index-th) on srv, rc lwtls's own
 * connection to it; 0 (results in run->storm), or 2 (a failure, said). */
int run_storm(struct ev_loop *loop, const struct opts *o, enum run_kind k,
              const struct tls_certs *certs, const struct redis_server *srv,
              redisContext *rc, unsigned index, struct run *run);

/* lwtls_report.c */
/* Sort v[n] and take its spread. */
struct spread spread_of(uint64_t *v, unsigned n);
void print_setup(const struct opts *o, const struct run *runs, unsigned n);
void print_storm(const struct opts *o, const struct run *runs, unsigned n);
/* The results to o->json: 0, or -1 (said). */
int write_json(const struct opts *o, const struct run *runs, unsigned n);

#endif
