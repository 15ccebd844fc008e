/*
 * The lock API and the watchdog's renewal script against their baselines.
 *
 *   lock/lock+unlock             one thread, uncontended: lw_lock_acquire() then
 *                                lw_unlock() on one name, 2000 pairs per
 *                                iteration, through a client with the
 *                                default config.  items: pairs.
 *   lock/raw-2xevalsha           the floor under it: a bare engine and, per
 *                                pair, two blocking engine_call()s of the
 *                                client's own SCRIPT_LOCK and SCRIPT_UNLOCK
 *                                with the arguments the client sends (each
 *                                formatted once, re-sent).  What the client
 *                                adds (ops, watchdog bookkeeping, owner
 *                                fields) is the distance between the two
 *                                items_per_second.
 *   renew/batched/B              saturation throughput of the watchdog's
 *                                renewal: 20000 lock hashes renewed as
 *                                20000 / B SCRIPT_RENEW calls of B keys,
 *                                at most 64 calls unanswered (the client's
 *                                default renew_batches_inflight).
 *   renew/watchdog               the real thing, saturated: a client holding
 *                                120000 watchdog locks on a 300 ms lease (1.2M
 *                                renewals/s asked for; what it cannot carry
 *                                is lost until the rest fits); items:
 *                                renewals confirmed, counted from the stats.
 *   renew/single-key-pipelined   the ceiling batching has to beat: the same
 *                                keys, one key per SCRIPT_RENEW call, up to
 *                                4096 unanswered (the engine's default
 *                                max_inflight).  items: keys renewed.
 *
 * The renew cases use the engine, not the client, so that they measure the
 * script and the transport the watchdog uses; as the watchdog does, they
 * refill the window from the reply callbacks, on the engine thread.  Every
 * reply is checked (a renewal must answer 1 per key).  The server is a
 * private redis-server on a free loopback port, started here.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel/lock.h>

#include "scripts.h"
#include "engine.h"
#include "pipeline.h"
#include "redis_server.h"
#include "shim.h"

#define PAIRS 2000              /* lock/unlock pairs per iteration */
#define RENEW_KEYS 20000u       /* lock hashes renewed per iteration */
#define RENEW_WINDOW 64u        /* LW_DEFAULT_RENEW_BATCHES_INFLIGHT */
#define SINGLE_WINDOW 4096u     /* LW_ENGINE_DEFAULT_MAX_INFLIGHT */
#define LEASE "30000"           /* LW_DEFAULT_WATCHDOG_TIMEOUT_MS */
/* An owner field as the client makes it: "<UUID>:<owner>". */
#define FIELD "0b6f8a52-3c1e-4d7a-9f20-5e4c3b2a1d09:1"

static struct redis_server server;

/* ---- lock/lock+unlock ------------------------------------------------ */

/* One lock+unlock pair; 0, or -1 with why filled in. */
static int lock_pair(struct lw_lock *l, uint64_t *last_tok, char *why, size_t n)
{
    uint64_t tok = 0;
    int rc;

    if ((rc = lw_lock_acquire(l, &tok))) {
        snprintf(why, n, "lw_lock: %s (%s)", lw_errname(rc), lw_strerror(rc));
        return -1;
    }
    if (tok <= *last_tok) {
        snprintf(why, n, "lw_lock: token %llu after %llu", (unsigned long long)tok,
                 (unsigned long long)*last_tok);
        return -1;
    }
    *last_tok = tok;
    if ((rc = lw_unlock(l))) {
        snprintf(why, n, "lw_unlock: %s (%s)", lw_errname(rc), lw_strerror(rc));
        return -1;
    }
    return 0;
}

static int lock_pairs(struct lw_lock *l, int n, uint64_t *last_tok, char *why, size_t len)
{
    for (int i = 0; i < n; i++)
        if (lock_pair(l, last_tok, why, len))
            return -1;
    return 0;
}

/* After the pairs the watchdog must hold nothing. */
static int check_client_idle(struct lw_client *c, char *why, size_t n)
{
    struct lw_client_stats s;

    lw_client_get_stats(c, &s);
    if (s.locks_held == 0 && s.lost_not_owner + s.lost_errors + s.lost_expired == 0)
        return 0;
    snprintf(why, n, "after unlock: locks_held %llu, lost %llu/%llu/%llu",
             (unsigned long long)s.locks_held, (unsigned long long)s.lost_not_owner,
             (unsigned long long)s.lost_errors, (unsigned long long)s.lost_expired);
    return -1;
}

static void bm_lock_unlock(struct lwb_state *st)
{
    static const char name[] = "lw:bench:lock1";
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l = NULL;
    uint64_t last_tok = 0;
    int64_t total = 0;
    char why[256] = "";
    int bad;

    lw_client_config_init(&cfg);
    cfg.port = server.port;
    if (lw_client_new(&cfg, &c) || lw_lock_new(c, name, strlen(name), &l)) {
        lwb_error(st, "client set-up failed");
        lw_client_free(c);
        return;
    }
    bad = lock_pairs(l, 100, &last_tok, why, sizeof why); /* connect, warm up */
    while (!bad && lwb_keep_running(st)) {
        uint64_t start = lw_clock_now();

        bad = lock_pairs(l, PAIRS, &last_tok, why, sizeof why);
        lwb_set_iteration_time(st, (double)(lw_clock_now() - start) / 1e9);
        total += PAIRS;
    }
    if (!bad)
        bad = check_client_idle(c, why, sizeof why);
    if (bad) {
        fprintf(stderr, "lock/lock+unlock: %s\n", why);
        lwb_error(st, why);
    }
    lwb_set_items(st, total);
    lw_lock_free(l);
    lw_client_free(c);
}

/* ---- lock/raw-2xevalsha ---------------------------------------------- */

struct raw_check {
    int bad;        /* engine thread writes, the caller reads after the call */
    char why[128];
};

static void raw_fail(struct raw_check *k, const char *what, const redisReply *r, int err)
{
    k->bad = 1;
    if (err)
        snprintf(k->why, sizeof k->why, "%s: %s", what, lw_errname(err));
    else
        snprintf(k->why, sizeof k->why, "%s: unexpected reply (type %d%s%s)", what,
                 r->type, r->type == REDIS_REPLY_ERROR ? ": " : "",
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
}

/* SCRIPT_LOCK on a free lock: {token, 1}. */
static void on_raw_lock(struct request *req, const redisReply *r, int err, void *arg)
{
    (void)req;
    if (err || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer != 1)
        raw_fail(arg, "lock script", r, err);
}

/* SCRIPT_UNLOCK of the only hold: 0. */
static void on_raw_unlock(struct request *req, const redisReply *r, int err, void *arg)
{
    (void)req;
    if (err || r->type != REDIS_REPLY_INTEGER || r->integer != 0)
        raw_fail(arg, "unlock script", r, err);
}

/* The two requests, formatted as core/lock.c formats them. */
static int raw_format(struct request *lock, struct request *unlock)
{
    static const char name[] = "lw:bench:lock2";
    const char *lock_argv[] = {name, TOKEN_PREFIX ":{lw:bench:lock2}", LEASE, FIELD};
    const char *unlock_argv[] = {name, CHANNEL_PREFIX ":{lw:bench:lock2}", FIELD, "publish"};

    request_init(lock);
    request_init(unlock);
    if (request_evalsha(lock, SCRIPT_LOCK, 2, 4, lock_argv, NULL))
        return -1;
    return request_evalsha(unlock, SCRIPT_UNLOCK, 2, 4, unlock_argv, NULL) ? -1 : 0;
}

static int raw_pairs(struct engine *e, struct request *lock, struct request *unlock,
                     int n, struct raw_check *k)
{
    for (int i = 0; i < n && !k->bad; i++) {
        int rc = engine_call(e, lock, on_raw_lock, k);

        if (rc == 0)
            rc = engine_call(e, unlock, on_raw_unlock, k);
        if (rc && !k->bad)
            raw_fail(k, "engine_call", NULL, rc);
    }
    return k->bad ? -1 : 0;
}

static void bm_raw(struct lwb_state *st)
{
    struct engine *e;
    struct request lock, unlock;
    struct raw_check k = {0};
    int64_t total = 0;

    if (raw_format(&lock, &unlock) ||
        pipe_scripts_engine("127.0.0.1", server.port, LW_ENGINE_DEFAULT_MAX_INFLIGHT, &e)) {
        lwb_error(st, "engine set-up failed");
        request_clear(&lock);
        request_clear(&unlock);
        return;
    }
    raw_pairs(e, &lock, &unlock, 100, &k); /* connect, load scripts, warm up */
    while (!k.bad && lwb_keep_running(st)) {
        uint64_t start = lw_clock_now();

        raw_pairs(e, &lock, &unlock, PAIRS, &k);
        lwb_set_iteration_time(st, (double)(lw_clock_now() - start) / 1e9);
        total += PAIRS;
    }
    if (k.bad) {
        fprintf(stderr, "lock/raw-2xevalsha: %s\n", k.why);
        lwb_error(st, k.why);
    }
    lwb_set_items(st, total);
    engine_free(e);
    request_clear(&lock);
    request_clear(&unlock);
}

/* ---- renew/batched/B and renew/single-key-pipelined ------------------ */

static char (*key_names)[32]; /* RENEW_KEYS names, made once in main */

/* One HSET per key: every key a lock hash owned by FIELD (no expiry; the
 * renewals set one, of 30 s, which outlasts a case). */
static int make_locks(struct engine *e)
{
    struct request *reqs = calloc(RENEW_KEYS, sizeof *reqs);
    struct pipeline p = {.e = e, .reqs = reqs, .n = RENEW_KEYS, .window = SINGLE_WINDOW};
    int rc = reqs ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < RENEW_KEYS; i++)
        rc = request_command(&reqs[i], 4,
                             (const char *[]){"HSET", key_names[i], FIELD, "1"}, NULL);
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, RENEW_KEYS);
    return rc;
}

/* RENEW_KEYS / batch SCRIPT_RENEW calls, keys then LEASE then fields, as
 * core/watchdog.c formats them. */
static struct request *format_renewals(uint32_t batch, uint32_t *ncalls)
{
    uint32_t n = RENEW_KEYS / batch;
    struct request *reqs = calloc(n, sizeof *reqs);
    const char **argv = calloc(2 * batch + 1, sizeof *argv);
    int rc = reqs && argv ? 0 : -1;

    for (uint32_t c = 0; rc == 0 && c < n; c++) {
        for (uint32_t i = 0; i < batch; i++) {
            argv[i] = key_names[c * batch + i];
            argv[batch + 1 + i] = FIELD;
        }
        argv[batch] = LEASE;
        rc = request_evalsha(&reqs[c], SCRIPT_RENEW, (int)batch, (int)(2 * batch + 1),
                             argv, NULL);
    }
    free(argv);
    if (rc) {
        pipe_free_reqs(reqs, n);
        return NULL;
    }
    *ncalls = n;
    return reqs;
}

static void renew_case(struct lwb_state *st, uint32_t batch, uint32_t window)
{
    struct pipeline p = {.window = window, .ones = batch};
    int64_t total = 0;
    double s = 0;
    char why[128];

    if (RENEW_KEYS % batch ||
        pipe_scripts_engine("127.0.0.1", server.port, LW_ENGINE_DEFAULT_MAX_INFLIGHT, &p.e)) {
        lwb_error(st, "engine set-up failed");
        return;
    }
    if (make_locks(p.e) || !(p.reqs = format_renewals(batch, &p.n))) {
        lwb_error(st, "creating the lock hashes failed");
        engine_free(p.e);
        return;
    }
    pipe_run(&p); /* load the script, warm up */
    while (s >= 0 && !atomic_load(&p.failed) && lwb_keep_running(st)) {
        if ((s = pipe_run(&p)) < 0)
            break;
        lwb_set_iteration_time(st, s);
        total += RENEW_KEYS;
    }
    if (s < 0)
        lwb_error(st, "a run did not finish within 60 s");
    else if (atomic_load(&p.failed))
        lwb_error(st, pipe_why(&p, why, sizeof why));
    lwb_set_items(st, total);
    lwb_counter(st, "keys_per_call", batch);
    engine_free(p.e); /* fails whatever is left: callbacks end before */
    pipe_free_reqs(p.reqs, p.n);
}

static void bm_renew_batched(struct lwb_state *st)
{
    renew_case(st, (uint32_t)lwb_arg(st, 0), RENEW_WINDOW);
}

static void bm_renew_single(struct lwb_state *st)
{
    renew_case(st, 1, SINGLE_WINDOW);
}

/* ---- renew/watchdog -------------------------------------------------- */

#define WD_LOCKS 120000u
#define WD_LEASE_MS 300u       /* 120000 locks renewed every 100 ms: 1.2M/s asked */
#define WD_TICK_MS 10u

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Empty the server: 120000 locks left to expire at once would load Redis
 * during whatever case runs next. */
static void flush_server(void)
{
    redisReply *r = redis_server_command(&server, "FLUSHALL");

    if (r)
        freeReplyObject(r);
}

struct acquiring {
    _Atomic uint32_t done;
    _Atomic uint32_t failed;
};

static void count_acquired(int err, int64_t value, void *arg)
{
    struct acquiring *a = arg;

    (void)value;
    if (err)
        atomic_fetch_add(&a->failed, 1);
    atomic_fetch_add(&a->done, 1);
}

/* Hold WD_LOCKS watchdog locks on a lease short enough that renewals are
 * asked for faster than one client and one Redis can do them; locks the
 * watchdog cannot keep up with are lost, until what is left is what it
 * can carry.  Each iteration counts the renewals confirmed in 1 s. */
static void bm_renew_watchdog(struct lwb_state *st)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock **locks = calloc(WD_LOCKS, sizeof *locks);
    struct lw_client_stats a, b;
    struct acquiring acq = {0};
    static unsigned runs;
    unsigned run = runs++; /* the last run's locks are still there: new names */
    char name[40];
    int64_t total = 0;

    flush_server(); /* no expiry storm of an earlier run's locks */
    lw_client_config_init(&cfg);
    cfg.port = server.port;
    cfg.tick_ms = WD_TICK_MS;
    cfg.watchdog_timeout_ms = WD_LEASE_MS;
    if (!locks || lw_client_new(&cfg, &c)) {
        lwb_error(st, "client set-up failed");
        free(locks);
        return;
    }
    /* At most 1000 acquires outstanding: a burst of them all would queue the
     * first locks' renewals behind the rest, longer than their lease. */
    for (uint32_t i = 0; i < WD_LOCKS; i++) {
        snprintf(name, sizeof name, "lw:bench:wd:%u:%06u", run, i);
        for (int spin = 0; spin < 100000 && i - atomic_load(&acq.done) >= 1000; spin++)
            sleep_s(0.0001);
        if (lw_lock_new(c, name, strlen(name), &locks[i]) ||
            lw_acquire_async(locks[i], 1, 0, 0, count_acquired, &acq))
            break;
    }
    sleep_s(1.0); /* acquired, and settled into saturation */
    while (lwb_keep_running(st)) {
        uint64_t start = lw_clock_now();

        lw_client_get_stats(c, &a);
        sleep_s(1.0);
        lw_client_get_stats(c, &b);
        lwb_set_iteration_time(st, (double)(lw_clock_now() - start) / 1e9);
        total += (int64_t)(b.renewals_confirmed - a.renewals_confirmed);
    }
    lw_client_get_stats(c, &b);
    lwb_set_items(st, total);
    lwb_counter(st, "acquired", atomic_load(&acq.done) - atomic_load(&acq.failed));
    lwb_counter(st, "held_at_end", (double)b.locks_held);
    lwb_counter(st, "keys_per_call",
                b.renew_batches ? (double)b.renewals_sent / (double)b.renew_batches : 0);
    lw_client_free(c);
    for (uint32_t i = 0; i < WD_LOCKS; i++)
        lw_lock_free(locks[i]);
    free(locks);
    flush_server();
}

/* ---- main ------------------------------------------------------------ */

static int make_key_names(void)
{
    if (!(key_names = calloc(RENEW_KEYS, sizeof *key_names)))
        return -1;
    for (uint32_t i = 0; i < RENEW_KEYS; i++)
        snprintf(key_names[i], sizeof key_names[i], "lw:bench:renew:%05u", i);
    return 0;
}

int main(int argc, char **argv)
{
    static const int64_t batches[] = {10, 100};
    int rc;

    if (make_key_names() || redis_server_start(&server, NULL))
        return 1;
    lwb_register("lock/lock+unlock", bm_lock_unlock, NULL, 0, LWB_MANUAL_TIME, 0);
    lwb_register("lock/raw-2xevalsha", bm_raw, NULL, 0, LWB_MANUAL_TIME, 0);
    lwb_register("renew/batched", bm_renew_batched, batches, 2, LWB_MANUAL_TIME, 0);
    lwb_register("renew/single-key-pipelined", bm_renew_single, NULL, 0, LWB_MANUAL_TIME, 0);
    lwb_register("renew/watchdog", bm_renew_watchdog, NULL, 0, LWB_MANUAL_TIME, 0);
    rc = lwb_run(argc, argv);
    redis_server_stop(&server);
    free(key_names);
    return rc;
}
