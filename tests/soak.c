/*
 * tests/soak.c - the soak: many watchdog locks on a short lease, renewed
 * for a long time while other threads lock and unlock other names; then
 * a verdict.  On the public API only, so that users can run it as long as
 * they like against their own Redis.
 *
 *   soak [--redis HOST:PORT] [--locks N] [--lease-ms L] [--tick-ms T]
 *        [--churn-threads K] [--warmup-s W] [--duration-s D]
 *
 * Phases:
 *   1. client A acquires N watchdog locks (owner 1), with a bounded window
 *      of async acquires outstanding, as lwbench does;
 *   2. K churn threads start (soak_churn.c), on client A and a second
 *      client B: the engine that renews the N locks carries their traffic
 *      too, and the two clients contend;
 *   3. warm-up for W seconds (allocators, buffers and ASan's quarantine
 *      reach their working size), then memory is taken;
 *   4. D seconds more (whole renewal periods), measured: renewals
 *      confirmed per second, renewal lag, churn pairs per second; memory
 *      again at the end;
 *   5. the churn stops and the checks run; every lock is unlocked, every
 *      handle and both clients freed, a private server stopped - so that
 *      LeakSanitizer sees everything freed.
 * A progress line goes to stderr about every PROGRESS_S seconds, the
 * results and the verdict to stdout.
 *
 * The verdict: pass (exit 0) when no lock was lost (on_lost and the lost_*
 * counters of both clients), client A still holds the N locks (its
 * locks_held, and in Redis: each key has A's field with a hold count of 1
 * and a TTL), the churn made progress without an unexpected result or an
 * overlap, and memory stayed flat: RSS at the end at most MAX_RSS_GROWTH
 * over its size after the warm-up (under a sanitizer, its heap in use:
 * check_memory() says why); else 1.  2: it could not run (no Redis), 64:
 * usage.
 * SIGINT or SIGTERM end phase 3 or 4 early; the checks still run.
 *
 * On a Redis it did not start, the soak makes only keys under
 * "soak:<pid>:<random>" and deletes them at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <leasewheel/lock.h>
#include <leasewheel/wheel.h>

#include "cli_util.h"
#include "redis_server.h"
#include "soak.h"

#define OWNER 1u                     /* of the held locks */
#define ACQUIRE_WINDOW 1000u         /* async acquires or unlocks outstanding */
#define STALL_LIMIT_NS (60ull * 1000000000ull) /* no acquire/unlock done for so long */
#define PROGRESS_S 5.0
#define STUCK_NS (60ull * 1000000000ull) /* a churn operation running this long */
#define STOP_TIMEOUT_S 60.0          /* for the churn threads to finish */
#define MAX_RSS_GROWTH 0.05
#define CHECK_CHUNK 1000u            /* keys checked (or deleted) per pipeline */
#define MAX_LOCKS 50000000u

struct opts {
    const char *redis;               /* HOST:PORT, or NULL: a private server */
    uint32_t locks, lease_ms, tick_ms, threads;
    double warmup_s, duration_s;
};

struct target {
    char host[256];
    int port;
    struct redis_server server;      /* pid 0 unless private */
    char prefix[64];                 /* every key made starts so */
    sigset_t stop_signals;           /* blocked everywhere, polled by nap() */
};

/* A point in time: what the window is measured between. */
struct sample {
    uint64_t at_ns;
    double rss;
    double live;                     /* sanitizer_live_bytes() */
    struct lw_client_stats st;       /* client A */
    struct churn_totals churn;
};

struct soak {
    struct lw_client *a, *b;
    struct lw_lock **locks;          /* the N held ones, on client A */
    struct churn *churn;
    _Atomic uint32_t done, failed;   /* async acquires or unlocks ended */
    _Atomic int first_err;
    _Atomic uint64_t lost_a, lost_b; /* on_lost calls */
    uint64_t start_ns;
    double acquire_s;
    struct sample warm, end;
    int interrupted, stuck, problems;
    int stuck_shown;                 /* report_stuck() ran */
};

static const char usage_text[] =
    "usage: soak [options]\n"
    "Holds N watchdog locks on a short lease while churn threads lock and unlock\n"
    "other names on two clients, then checks that none was lost, all are still\n"
    "held, the churn ran without errors and memory stayed flat.\n"
    "\n"
    "  --redis HOST:PORT   a running Redis (keys under soak:<pid>:..., deleted at\n"
    "                      the end); default: a private redis-server on a free\n"
    "                      loopback port, stopped at the end\n"
    "  --locks N           watchdog locks to hold (default 100000)\n"
    "  --lease-ms L        their lease (default 6000), renewed every L/3\n"
    "  --tick-ms T         the wheel's tick (default 10)\n"
    "  --churn-threads K   threads locking and unlocking other names (default 2)\n"
    "  --warmup-s W        seconds before RSS is taken (default 10)\n"
    "  --duration-s D      seconds measured after the warm-up (default 45), rounded\n"
    "                      up to whole renewal periods\n"
    "  -h, --help\n"
    "\n"
    "Exit status: 0 pass, 1 fail, 2 could not run, 64 usage.\n";

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "soak: %s%s\n(soak --help for the options)\n", what, arg);
    return 64;
}

enum { O_REDIS = 256, O_LOCKS, O_LEASE, O_TICK, O_THREADS, O_WARMUP, O_DURATION };

static const struct option long_opts[] = {
    {"redis", required_argument, NULL, O_REDIS},
    {"locks", required_argument, NULL, O_LOCKS},
    {"lease-ms", required_argument, NULL, O_LEASE},
    {"tick-ms", required_argument, NULL, O_TICK},
    {"churn-threads", required_argument, NULL, O_THREADS},
    {"warmup-s", required_argument, NULL, O_WARMUP},
    {"duration-s", required_argument, NULL, O_DURATION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One numeric option into its field; 0, or -1 when out of range. */
static int numeric_opt(int opt, const char *arg, struct opts *o)
{
    switch (opt) {
    case O_LOCKS: return cli_parse_u32(arg, 1, MAX_LOCKS, &o->locks);
    case O_LEASE: return cli_parse_u32(arg, LW_MIN_LEASE_MS, LW_MAX_LEASE_MS, &o->lease_ms);
    case O_TICK: return cli_parse_u32(arg, 1, LW_MAX_TICK_MS, &o->tick_ms);
    case O_THREADS: return cli_parse_u32(arg, 1, 256, &o->threads);
    case O_WARMUP: return cli_parse_seconds(arg, 0, 30 * 86400.0, &o->warmup_s);
    default: return cli_parse_seconds(arg, 1, 30 * 86400.0, &o->duration_s);
    }
}

/* 0 to run, 1 help shown, 64 bad usage (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    int opt;

    *o = (struct opts){.locks = 100000, .lease_ms = 6000, .tick_ms = 10, .threads = 2,
                       .warmup_s = 10, .duration_s = 45};
    while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage_text, stdout);
            return 1;
        }
        if (opt == '?')
            return usage_error("bad option", "");
        if (opt == O_REDIS)
            o->redis = optarg;
        else if (numeric_opt(opt, optarg, o))
            return usage_error("not a number in range for its option: ", optarg);
    }
    if (optind < argc)
        return usage_error("unexpected argument ", argv[optind]);
    if ((uint64_t)o->lease_ms < 3ull * o->tick_ms)
        return usage_error("the lease must be at least 3 ticks", "");
    return 0;
}

/* ---- the Redis it runs on ---- */

static redisContext *connect_sync(const struct target *t)
{
    return cli_connect(t->host, t->port);
}

static int target_open(struct target *t, const char *redis)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(t->prefix, sizeof t->prefix, "soak:%d:%08lx", (int)getpid(),
             (unsigned long)(now.tv_nsec ^ now.tv_sec) & 0xffffffffUL);
    if (redis && cli_parse_host_port(redis, t->host, sizeof t->host, &t->port)) {
        fprintf(stderr, "soak: --redis %s: expected HOST:PORT\n", redis);
        return -1;
    }
    if (!redis) {
        if (redis_server_start(&t->server, NULL)) {
            fprintf(stderr, "soak: could not start a private redis-server (installed?)\n");
            return -1;
        }
        snprintf(t->host, sizeof t->host, "127.0.0.1");
        t->port = t->server.port;
    }
    if (!cli_reachable(t->host, t->port)) {
        fprintf(stderr, "soak: Redis at %s:%d does not answer PING\n", t->host, t->port);
        return -1;
    }
    return 0;
}

static void target_close(struct target *t)
{
    if (t->server.pid)
        redis_server_stop(&t->server);
}

/* Sleep s seconds; 1 when SIGINT or SIGTERM came instead. */
static int nap(const struct target *t, double s)
{
    uint64_t end = lw_clock_now() + (uint64_t)(s * 1e9);

    for (;;) {
        uint64_t now = lw_clock_now(), left = end > now ? end - now : 0;
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};

        if (left == 0)
            return 0;
        if (sigtimedwait(&t->stop_signals, NULL, &ts) > 0)
            return 1;
    }
}

/* ---- small things ---- */

/* The sanitizer allocator's bytes in use (ASan, TSan); weak, so that the
 * plain build links without it: NULL there. */
size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

/* The heap in use under a sanitizer, -1 in a plain build. */
static double sanitizer_live_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes
               ? (double)__sanitizer_get_current_allocated_bytes() : -1;
}

static double mb(double bytes)
{
    return bytes / 1048576.0;
}

static double since_s(uint64_t t0)
{
    return (double)(lw_clock_now() - t0) / 1e9;
}

/* A criterion not met: said on stdout, counted. */
static void problem(struct soak *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct soak *s, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("soak: FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    s->problems++;
}

static uint64_t lost_counters(const struct lw_client_stats *st)
{
    return st->lost_not_owner + st->lost_errors + st->lost_expired;
}

static void lag_window(const struct lw_client_stats *a, const struct lw_client_stats *b,
                       struct lw_client_stats *d)
{
    *d = *b;
    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        d->renewal_lag[i] -= a->renewal_lag[i];
}

/* ---- clients and the held locks ---- */

static void on_lost_a(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct soak *s = arg;

    if (atomic_fetch_add(&s->lost_a, 1) < 5) /* the first few, to see why */
        fprintf(stderr, "soak: lost %.*s (owner %llu): %s\n", (int)len, name,
                (unsigned long long)owner, lw_lost_reason_name(reason));
}

static void on_lost_b(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct soak *s = arg;

    if (atomic_fetch_add(&s->lost_b, 1) < 5)
        fprintf(stderr, "soak: lost %.*s on client B (owner %llu): %s\n", (int)len, name,
                (unsigned long long)owner, lw_lost_reason_name(reason));
}

static int new_client(const struct opts *o, const struct target *t, lw_lost_fn *lost,
                      struct soak *s, struct lw_client **out)
{
    struct lw_client_config cfg;
    int rc;

    lw_client_config_init(&cfg);
    cfg.host = t->host;
    cfg.port = t->port;
    cfg.watchdog_timeout_ms = o->lease_ms;
    cfg.tick_ms = o->tick_ms;
    cfg.on_lost = lost;
    cfg.lost_arg = s;
    if ((rc = lw_client_new(&cfg, out)))
        fprintf(stderr, "soak: lw_client_new: %s\n", lw_strerror(rc));
    return rc;
}

static void on_done(int err, int64_t value, void *arg)
{
    struct soak *s = arg;
    int none = 0;

    (void)value;
    if (err) {
        atomic_fetch_add(&s->failed, 1);
        atomic_compare_exchange_strong(&s->first_err, &none, err);
    }
    atomic_fetch_add(&s->done, 1);
}

static void name_of(char *buf, size_t n, const struct target *t, uint32_t i)
{
    snprintf(buf, n, "%s:%u", t->prefix, i);
}

static int make_handles(const struct opts *o, const struct target *t, struct soak *s)
{
    char name[96];

    if (!(s->locks = calloc(o->locks, sizeof *s->locks)))
        return -1;
    for (uint32_t i = 0; i < o->locks; i++) {
        name_of(name, sizeof name, t, i);
        if (lw_lock_new(s->a, name, strlen(name), &s->locks[i]))
            return -1;
    }
    return 0;
}

/* Wait while `window` calls are out; 0, or -1 when none ended for too long. */
static int window_slot(struct soak *s, uint32_t issued, uint32_t window)
{
    uint64_t since = lw_clock_now();
    uint32_t seen = atomic_load(&s->done);

    while (issued - atomic_load(&s->done) >= window) {
        nanosleep(&(struct timespec){0, 100000}, NULL);
        if (atomic_load(&s->done) != seen)
            seen = atomic_load(&s->done), since = lw_clock_now();
        else if (lw_clock_now() - since > STALL_LIMIT_NS)
            return -1;
    }
    return 0;
}

/* The async call `unlock` or acquire on every held lock, a window at a time;
 * waits for them all.  0, or -1 when stalled. */
static int all_locks(const struct opts *o, struct soak *s, int unlock)
{
    atomic_store(&s->done, 0);
    atomic_store(&s->failed, 0);
    atomic_store(&s->first_err, 0);
    for (uint32_t i = 0; i < o->locks; i++) {
        int rc;

        if (window_slot(s, i, ACQUIRE_WINDOW))
            return -1;
        rc = unlock ? lw_unlock_async(s->locks[i], OWNER, on_done, s)
                    : lw_acquire_async(s->locks[i], OWNER, 0, 0, on_done, s);
        if (rc) /* refused: done will not run */
            on_done(rc, 0, s);
    }
    return window_slot(s, o->locks, 1);
}

static int acquire_held(const struct opts *o, struct soak *s)
{
    uint64_t t0 = lw_clock_now();

    fprintf(stderr, "soak: acquiring %u watchdog locks\n", o->locks);
    if (all_locks(o, s, 0)) {
        problem(s, "acquiring stalled (%u of %u done)", atomic_load(&s->done), o->locks);
        return -1;
    }
    s->acquire_s = since_s(t0);
    if (atomic_load(&s->failed)) {
        problem(s, "%u of %u acquires failed, the first: %s", atomic_load(&s->failed), o->locks,
                lw_strerror(atomic_load(&s->first_err)));
        return -1;
    }
    return 0;
}

/* ---- the run ---- */

static void take_sample(struct soak *s, struct sample *x)
{
    x->at_ns = lw_clock_now();
    x->rss = cli_rss_bytes();
    x->live = sanitizer_live_bytes();
    lw_client_get_stats(s->a, &x->st);
    churn_totals(s->churn, &x->churn);
}

/* ", heap in use N MB" under a sanitizer, "" else. */
static const char *live_text(char *buf, size_t n, double live)
{
    if (live < 0)
        return "";
    snprintf(buf, n, ", heap in use %.1f MB", mb(live));
    return buf;
}

static void progress(const struct soak *s, const char *phase, const struct sample *prev,
                     const struct sample *now)
{
    double dt = (double)(now->at_ns - prev->at_ns) / 1e9;
    struct lw_client_stats d;
    char live[48];

    lag_window(&prev->st, &now->st, &d);
    fprintf(stderr,
            "soak: %4.0f s %s: held %llu, renewed %.0f/s, lost %llu, lag p99 %.1f ms, "
            "churn %.0f pairs/s (%llu errors), RSS %.1f MB%s\n",
            since_s(s->start_ns), phase, (unsigned long long)now->st.locks_held,
            (double)(now->st.renewals_confirmed - prev->st.renewals_confirmed) / dt,
            (unsigned long long)(atomic_load(&s->lost_a) + atomic_load(&s->lost_b)),
            (double)lw_stats_lag_ns(&d, 0.99) / 1e6,
            (double)(now->churn.pairs - prev->churn.pairs) / dt,
            (unsigned long long)now->churn.errors, mb(now->rss),
            live_text(live, sizeof live, now->live));
}

/*
 * The progress interval and the measured window are whole renewal periods
 * (lease/3): each lock is then renewed equally often in each of them, and
 * renewals per second compare with what is due.
 */
static double period_s(const struct opts *o)
{
    return o->lease_ms / 3000.0;
}

static double progress_every_s(const struct opts *o)
{
    uint64_t k = (uint64_t)(PROGRESS_S / period_s(o) + 0.5);

    return period_s(o) * (double)(k ? k : 1);
}

static double window_s(const struct opts *o)
{
    return period_s(o) * (double)(uint64_t)(o->duration_s / period_s(o) + 0.999);
}

/* Run for `seconds` with progress lines; 1 when it must end early. */
static void report_stuck(const struct target *t, struct soak *s);

static int run_phase(const struct opts *o, const struct target *t, struct soak *s,
                     const char *phase, double seconds)
{
    struct sample prev, now;
    uint64_t t0 = lw_clock_now();
    double every = progress_every_s(o);

    take_sample(s, &prev);
    while (since_s(t0) < seconds) {
        double left = seconds - since_s(t0);

        if (nap(t, left < every ? left : every)) {
            s->interrupted = 1;
            return 1;
        }
        take_sample(s, &now);
        progress(s, phase, &prev, &now);
        prev = now;
        if (now.churn.errors)
            return 1;
        if (now.churn.oldest_running_ns > STUCK_NS) {
            s->stuck = 1;
            report_stuck(t, s);
            return 1;
        }
    }
    return 0;
}

/* A stuck churn operation's lock in Redis: its holds, TTL and channel's
 * subscribers. */
static void show_lock_state(redisContext *rc, const char *name)
{
    redisReply *h = redisCommand(rc, "HGETALL %s", name);
    redisReply *p = redisCommand(rc, "PTTL %s", name);
    redisReply *n = redisCommand(rc, "PUBSUB NUMSUB redisson_lock__channel:{%s}", name);

    printf("soak:   in Redis: PTTL %lld, holds:",
           p && p->type == REDIS_REPLY_INTEGER ? p->integer : -3);
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        printf(" %s=%s", h->element[i]->str, h->element[i + 1]->str);
    printf("; channel subscribers %lld\n",
           n && n->type == REDIS_REPLY_ARRAY && n->elements == 2 ? n->element[1]->integer : -1);
    freeReplyObject(h);
    freeReplyObject(p);
    freeReplyObject(n);
}

/* What the operations running for over 10 s wait for: each one's call and
 * lock, the lock's state in Redis, and both clients' waiters and channels.
 * Once, when the soak finds one stuck. */
static void report_stuck(const struct target *t, struct soak *s)
{
    struct churn_stuck st[8];
    int n = s->churn ? churn_stuck(s->churn, 10ull * 1000000000ull, st, 8) : 0;
    redisContext *rc = n ? connect_sync(t) : NULL;
    struct lw_client_stats a, b;

    if (!n || s->stuck_shown++)
        return;
    for (int i = 0; i < n; i++) {
        printf("soak: stuck: thread %u, %s on %s, client %c, in %s for %.0f s\n", st[i].thread,
               churn_kind_name(st[i].kind), st[i].name, "AB"[st[i].client & 1],
               st[i].call ? st[i].call : "?", (double)st[i].running_ns / 1e9);
        if (rc)
            show_lock_state(rc, st[i].name);
    }
    lw_client_get_stats(s->a, &a);
    lw_client_get_stats(s->b, &b);
    printf("soak: stuck: client A: %llu waiters, %llu channels; client B: %llu waiters, "
           "%llu channels\n",
           (unsigned long long)a.waiters, (unsigned long long)a.subscriptions,
           (unsigned long long)b.waiters, (unsigned long long)b.subscriptions);
    if (rc)
        redisFree(rc);
}

/* Fewer names than churn operations at once: they meet on them. */
static unsigned churn_names(const struct opts *o)
{
    return o->threads + 2;
}

static void churn_config_of(const struct opts *o, const struct target *t, struct soak *s,
                            struct churn_config *cc)
{
    *cc = (struct churn_config){.clients = {s->a, s->b}, .prefix = t->prefix,
                                .threads = o->threads, .names = churn_names(o),
                                /* Long beside a hold, so that none runs out inside. */
                                .lease_ms = o->lease_ms > 10000 ? o->lease_ms : 10000};
}

/* Churn, warm up, measure.  0, or -1 when the churn did not start. */
static int churn_and_hold(const struct opts *o, const struct target *t, struct soak *s)
{
    struct churn_config cc;
    char live[48];

    churn_config_of(o, t, s, &cc);
    if (churn_start(&cc, &s->churn))
        return -1;
    if (run_phase(o, t, s, "warm-up", o->warmup_s) == 0) {
        take_sample(s, &s->warm);
        fprintf(stderr, "soak: warmed up: RSS %.1f MB%s\n", mb(s->warm.rss),
                live_text(live, sizeof live, s->warm.live));
        run_phase(o, t, s, "soak", window_s(o));
    }
    if (!s->warm.at_ns)
        take_sample(s, &s->warm);
    take_sample(s, &s->end);
    return 0;
}

/* ---- the checks ---- */

/* Check one pipelined chunk [from, to): HGET field, PTTL per key.  Returns
 * the keys not held as they should be, or -1 on a Redis error. */
static long check_chunk(redisContext *rc, const struct target *t, const char *field,
                        uint32_t from, uint32_t to, const struct opts *o)
{
    char name[96];
    long bad = 0;

    for (uint32_t i = from; i < to; i++) {
        name_of(name, sizeof name, t, i);
        redisAppendCommand(rc, "HGET %s %s", name, field);
        redisAppendCommand(rc, "PTTL %s", name);
    }
    for (uint32_t i = from; i < to; i++) {
        redisReply *h = NULL, *p = NULL;
        int ok = redisGetReply(rc, (void **)&h) == REDIS_OK &&
                 redisGetReply(rc, (void **)&p) == REDIS_OK && h && p;

        if (ok)
            bad += !(h->type == REDIS_REPLY_STRING && strcmp(h->str, "1") == 0 &&
                     p->type == REDIS_REPLY_INTEGER && p->integer > 0 &&
                     p->integer <= (long long)o->lease_ms);
        if (h)
            freeReplyObject(h);
        if (p)
            freeReplyObject(p);
        if (!ok)
            return -1;
    }
    return bad;
}

/* Every held key in Redis has A's field with count 1 and a TTL. */
static void check_redis(const struct opts *o, const struct target *t, struct soak *s)
{
    redisContext *rc = connect_sync(t);
    char field[LW_CLIENT_ID_MAX + 24];
    long bad = 0, chunk = 0;

    snprintf(field, sizeof field, "%s:%u", lw_client_id(s->a), OWNER);
    for (uint32_t i = 0; rc && chunk >= 0 && i < o->locks; i += CHECK_CHUNK) {
        chunk = check_chunk(rc, t, field, i,
                            i + CHECK_CHUNK < o->locks ? i + CHECK_CHUNK : o->locks, o);
        bad += chunk > 0 ? chunk : 0;
    }
    if (!rc || chunk < 0)
        problem(s, "could not read the locks back from Redis");
    else if (bad)
        problem(s, "%ld of %u locks not held in Redis (field %s = 1, TTL)", bad, o->locks,
                field);
    if (rc)
        redisFree(rc);
}

static void check_lost(struct soak *s)
{
    struct lw_client_stats b;
    uint64_t on_lost = atomic_load(&s->lost_a) + atomic_load(&s->lost_b);
    uint64_t counted;

    lw_client_get_stats(s->b, &b);
    counted = lost_counters(&s->end.st) + lost_counters(&b);
    if (on_lost || counted)
        problem(s, "locks lost: on_lost %llu times, lost counters %llu",
                (unsigned long long)on_lost, (unsigned long long)counted);
    if (b.locks_held)
        problem(s, "client B still holds %llu watchdog locks after the churn",
                (unsigned long long)b.locks_held);
}

static void check_churn(struct soak *s)
{
    struct churn_totals final, *c = &final; /* the threads have stopped: all of it */

    churn_totals(s->churn, &final);
    if (s->stuck)
        problem(s, "a churn operation ran for over %llu s",
                (unsigned long long)(STUCK_NS / 1000000000u));
    if (c->errors)
        problem(s, "churn: %llu unexpected results, the first: %s",
                (unsigned long long)c->errors, c->first_error);
    if (c->overlaps)
        problem(s, "churn: two owners inside one lock %llu times",
                (unsigned long long)c->overlaps);
    if (s->end.churn.pairs - s->warm.churn.pairs == 0)
        problem(s, "churn: no lock/unlock pair completed after the warm-up");
}

/*
 * Memory stays flat: RSS in a plain build.  Under a sanitizer RSS also
 * counts what the sanitizer keeps on purpose - ASan's quarantine of freed
 * blocks, its allocator's per-size-class regions, the stack depot that
 * grows with every allocation stack it has not seen yet - and creeps up for
 * minutes with no growth in the program's memory; there the sanitizer
 * allocator's bytes in use are judged instead (RSS is still reported).
 */
static void check_memory(struct soak *s)
{
    int sanitized = s->warm.live >= 0;
    double before = sanitized ? s->warm.live : s->warm.rss;
    double after = sanitized ? s->end.live : s->end.rss;

    if (after > before * (1 + MAX_RSS_GROWTH))
        problem(s, "%s grew %.1f%% after the warm-up (%.1f MB to %.1f MB), over %.0f%%",
                sanitized ? "the heap in use" : "RSS", 100 * (after / before - 1), mb(before),
                mb(after), 100 * MAX_RSS_GROWTH);
}

static void check_all(const struct opts *o, const struct target *t, struct soak *s)
{
    struct lw_client_stats a;

    check_lost(s);
    check_churn(s);
    lw_client_get_stats(s->a, &a); /* now that the churn holds nothing */
    if (a.locks_held != o->locks)
        problem(s, "client A holds %llu watchdog locks, not %u",
                (unsigned long long)a.locks_held, o->locks);
    check_redis(o, t, s);
    check_memory(s);
}

/* ---- the end ---- */

static void report(const struct opts *o, const struct target *t, const struct soak *s)
{
    double w = (double)(s->end.at_ns - s->warm.at_ns) / 1e9;
    const struct churn_totals *c0 = &s->warm.churn, *c1 = &s->end.churn;
    struct lw_client_stats d, a, b;

    lag_window(&s->warm.st, &s->end.st, &d);
    printf("soak: %u locks, lease %u ms, tick %u ms, %u churn threads; Redis %s:%d%s\n",
           o->locks, o->lease_ms, o->tick_ms, o->threads, t->host, t->port,
           t->server.pid ? " (private)" : "");
    printf("soak: acquired in %.1f s; measured %.1f s after a %.0f s warm-up%s\n", s->acquire_s,
           w, o->warmup_s, s->interrupted ? " (interrupted)" : "");
    printf("soak: renewals %.0f/s confirmed (%.0f/s due), %llu failed; lag p50 %.1f ms "
           "p99 %.1f ms max %.1f ms\n",
           (double)(s->end.st.renewals_confirmed - s->warm.st.renewals_confirmed) / w,
           o->locks * 3000.0 / o->lease_ms,
           (unsigned long long)(s->end.st.renewals_failed - s->warm.st.renewals_failed),
           (double)lw_stats_lag_ns(&d, 0.5) / 1e6, (double)lw_stats_lag_ns(&d, 0.99) / 1e6,
           (double)lw_stats_lag_ns(&d, 1.0) / 1e6);
    printf("soak: churn %.0f pairs/s (", (double)(c1->pairs - c0->pairs) / w);
    for (unsigned k = 0; k < CHURN_KINDS; k++)
        printf("%s%s %llu", k ? ", " : "", churn_kind_name((enum churn_kind)k),
               (unsigned long long)(c1->by_kind[k] - c0->by_kind[k]));
    printf("), %llu tries found it held, slowest %.1f ms\n",
           (unsigned long long)(c1->contended - c0->contended), (double)c1->slowest_ns / 1e6);
    lw_client_get_stats(s->a, &a);
    lw_client_get_stats(s->b, &b);
    printf("soak: calls taken a tick late, their wake-up missed: client A %llu, B %llu\n",
           (unsigned long long)a.requests_taken_late, (unsigned long long)b.requests_taken_late);
    printf("soak: RSS %.1f MB after the warm-up, %.1f MB at the end (%+.2f%%)\n",
           mb(s->warm.rss), mb(s->end.rss), 100 * (s->end.rss / s->warm.rss - 1));
    if (s->warm.live >= 0)
        printf("soak: heap in use (sanitizer) %.1f MB after the warm-up, %.1f MB at the end "
               "(%+.2f%%)\n",
               mb(s->warm.live), mb(s->end.live), 100 * (s->end.live / s->warm.live - 1));
}

/* Unlock the held locks (checked), free everything. */
static void release(const struct opts *o, struct soak *s, int acquired)
{
    if (acquired && all_locks(o, s, 1))
        problem(s, "unlocking stalled (%u of %u done)", atomic_load(&s->done), o->locks);
    else if (acquired && atomic_load(&s->failed))
        problem(s, "%u of %u unlocks failed, the first: %s", atomic_load(&s->failed), o->locks,
                lw_strerror(atomic_load(&s->first_err)));
    churn_free(s->churn);
    for (uint32_t i = 0; s->locks && i < o->locks; i++)
        lw_lock_free(s->locks[i]);
    free(s->locks);
    lw_client_free(s->a);
    lw_client_free(s->b);
}

/* Read `n` replies and drop them. */
static void drain(redisContext *rc, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        redisReply *r = NULL;

        if (redisGetReply(rc, (void **)&r) != REDIS_OK)
            return;
        freeReplyObject(r);
    }
}

/* On a Redis the soak did not start: its keys (the tokens stay otherwise). */
static void delete_keys(const struct opts *o, const struct target *t)
{
    redisContext *rc = connect_sync(t);
    char name[96];
    uint32_t total = o->locks + churn_names(o), queued = 0;

    for (uint32_t i = 0; rc && i < total; i++) {
        if (i < o->locks)
            name_of(name, sizeof name, t, i);
        else
            snprintf(name, sizeof name, "%s:churn:%u", t->prefix, i - o->locks);
        redisAppendCommand(rc, "DEL %s redisson_lock_token:{%s}", name, name);
        if (++queued == CHECK_CHUNK || i + 1 == total) {
            drain(rc, queued);
            queued = 0;
        }
    }
    if (rc)
        redisFree(rc);
}

/* The churn threads are stopped; if one does not come back, it is stuck
 * in the library with the clients in use: nothing can be freed, so say
 * so and leave. */
static void stop_churn(struct target *t, struct soak *s)
{
    if (!s->churn || churn_stop(s->churn, STOP_TIMEOUT_S) == 0)
        return;
    churn_totals(s->churn, &s->end.churn);
    report_stuck(t, s);
    problem(s, "a churn thread did not finish within %.0f s (an operation has run for %.0f s)",
            STOP_TIMEOUT_S, (double)s->end.churn.oldest_running_ns / 1e9);
    printf("soak: FAIL\n");
    target_close(t);
    _exit(1);
}

static int soak(const struct opts *o, struct target *t)
{
    struct soak s = {.start_ns = lw_clock_now()};
    int acquired = 0, ran = 0;

    if (new_client(o, t, on_lost_a, &s, &s.a) == 0 &&
        new_client(o, t, on_lost_b, &s, &s.b) == 0 && make_handles(o, t, &s) == 0)
        acquired = acquire_held(o, &s) == 0;
    else
        problem(&s, "could not set up the clients and handles");
    if (acquired && !(ran = churn_and_hold(o, t, &s) == 0))
        problem(&s, "the churn did not start");
    stop_churn(t, &s);
    if (ran) {
        report(o, t, &s);
        check_all(o, t, &s);
    }
    release(o, &s, acquired);
    if (!t->server.pid)
        delete_keys(o, t);
    printf("soak: %s\n", s.problems ? "FAIL" : "PASS");
    return s.problems ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct target t = {0};
    struct opts o;
    int rc = parse_args(argc, argv, &o);

    if (rc)
        return rc == 1 ? 0 : rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Blocked in every thread (they inherit it), taken by nap(). */
    sigemptyset(&t.stop_signals);
    sigaddset(&t.stop_signals, SIGINT);
    sigaddset(&t.stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &t.stop_signals, NULL);
    if (target_open(&t, o.redis)) {
        target_close(&t);
        return 2;
    }
    rc = soak(&o, &t);
    target_close(&t);
    return rc;
}
