/*
 * tests/test_embedded.c - a client on the caller's loop (config.loop), run
 * by the test's own thread: async calls, the watchdog, waiting, on_lost,
 * a server restart, LW_EDEADLK for blocking calls on the loop's thread,
 * and lw_client_free() with calls pending.  (test_lock and test_watchdog
 * also run as lock_embedded and watchdog_embedded: the blocking calls from
 * other threads while a thread of the test runs the loop.)
 */
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>

#include <ev.h>

#include "lock_util.h"
#include "wait_child.h"

static struct ev_loop *loop;
static ev_timer pulse;
static pthread_t loop_thread;

static void on_pulse(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)w;
    (void)revents;
}

/* The fixture: a server, and a loop this thread runs.  SIGPIPE ignored,
 * as lock.h asks of a program that runs the client on its loop. */
static void setup(void)
{
    server_start();
    signal(SIGPIPE, SIG_IGN);
    loop_thread = pthread_self();
    loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(loop);
    /* Wakes the loop every 5 ms, so that run_until() looks at its
     * condition that often. */
    ev_timer_init(&pulse, on_pulse, 0.005, 0.005);
    ev_timer_start(loop, &pulse);
}

static void teardown(void)
{
    ev_timer_stop(loop, &pulse);
    ev_loop_destroy(loop);
    server_stop();
}

#define EMBEDDED_TEST(name) \
    Test(embedded, name, .init = setup, .fini = teardown, .timeout = 120)

/* Run the loop until cond holds or ms have passed; returns cond. */
#define run_until(cond, ms)                                                      \
    __extension__({                                                              \
        uint64_t until_ = now_ms() + (ms);                                       \
        while (!(cond) && now_ms() < until_)                                     \
            ev_run(loop, EVRUN_ONCE);                                            \
        (cond);                                                                  \
    })

static void run_for(long ms)
{
    run_until(0, ms);
}

/* on_lost, noting whether it ran on the loop's thread. */
static _Atomic int lost_off_loop;

static void lost_on_loop(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    if (!pthread_equal(pthread_self(), loop_thread))
        atomic_fetch_add(&lost_off_loop, 1);
    record_lost(name, len, owner, reason, arg);
}

/* A client on this thread's loop; losses go to lost (may be NULL). */
static struct lw_client *client_on_loop(uint32_t lease_ms, struct lost_log *lost)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, lost);
    cfg.loop = loop;
    if (lost)
        cfg.on_lost = lost_on_loop;
    lost_off_loop = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* An async call's outcome; `off_loop` counts callbacks on another thread. */
struct result {
    _Atomic int done;
    _Atomic int err;
    _Atomic int64_t value;
    _Atomic int off_loop;
};

static void on_result(int err, int64_t value, void *arg)
{
    struct result *r = arg;

    atomic_store(&r->err, err);
    atomic_store(&r->value, value);
    if (!pthread_equal(pthread_self(), loop_thread))
        atomic_fetch_add(&r->off_loop, 1);
    atomic_fetch_add(&r->done, 1);
}

/* An async acquire (try, waiting up to wait_ms), run to its end. */
static int acquire_now(struct lw_lock *l, uint64_t owner, uint64_t wait_ms, int64_t *token)
{
    struct result r = {0};

    cr_assert_eq(lw_acquire_async(l, owner, wait_ms, 0, on_result, &r), 0);
    cr_assert(run_until(r.done == 1, wait_ms + 5000), "the acquire never ended");
    cr_assert_eq(r.off_loop, 0);
    if (token)
        *token = r.value;
    return r.err;
}

static int unlock_now(struct lw_lock *l, uint64_t owner)
{
    struct result r = {0};

    cr_assert_eq(lw_unlock_async(l, owner, on_result, &r), 0);
    cr_assert(run_until(r.done == 1, 5000), "the unlock never ended");
    return r.err;
}

static struct lw_client_stats stats_of(struct lw_client *c)
{
    struct lw_client_stats st;

    lw_client_get_stats(c, &st);
    return st;
}

EMBEDDED_TEST(acquire_renew_unlock)
{
    struct lost_log lost;
    struct lw_client *c = client_on_loop(300, &lost);
    struct lw_lock *l = new_lock(c, "job");
    int64_t token = 0;
    uint64_t confirmed;

    cr_assert_eq(lw_lock_set_fenced(l, 1), 0);
    cr_assert_eq(acquire_now(l, 1, 0, &token), 0);
    cr_assert_gt(token, 0);
    confirmed = stats_of(c).renewals_confirmed;
    run_for(1200); /* four leases: renewals every 100 ms */
    cr_assert_geq(stats_of(c).renewals_confirmed, confirmed + 6,
                  "the watchdog renews on the caller's loop");
    cr_assert_eq(lost.count, 0);
    cr_assert_gt(redis_int("PTTL %s", "job"), 0);
    cr_assert_eq(unlock_now(l, 1), 0);
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0);
    cr_assert_eq(unlock_now(l, 1), LW_ENOTOWNER);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Owner 1 holds l, owner 2 waits for it; owner 1's unlock wakes owner 2
 * at once.  c's lease is 30 s: only the unlock's message (or, had the
 * subscriber been away, its resubscription) can have woken it. */
static void check_waiter_woken(struct lw_client *c, struct lw_lock *l)
{
    struct result waiter = {0};
    uint64_t t0;

    cr_assert_eq(acquire_now(l, 1, 5000, NULL), 0);
    cr_assert_eq(lw_acquire_async(l, 2, 10000, 0, on_result, &waiter), 0);
    cr_assert(run_until(stats_of(c).subscriptions == 1, 5000));
    run_for(100); /* the subscription confirmed, the waiter's retry answered */
    cr_assert_eq(waiter.done, 0, "owner 1 still holds it");
    t0 = now_ms();
    cr_assert_eq(unlock_now(l, 1), 0);
    cr_assert(run_until(waiter.done == 1, 3000), "the waiter was not woken");
    cr_assert_lt(now_ms() - t0, 2000);
    cr_assert_eq(waiter.err, 0);
    cr_assert_eq(waiter.off_loop, 0);
    cr_assert_eq(unlock_now(l, 2), 0);
}

EMBEDDED_TEST(waiter_woken_by_unlock)
{
    struct lw_client *c = client_on_loop(30000, NULL);
    struct lw_lock *l = new_lock(c, "job");

    check_waiter_woken(c, l);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

EMBEDDED_TEST(on_lost_runs_on_the_loop_when_the_key_is_deleted)
{
    struct lost_log lost;
    struct lw_client *c = client_on_loop(300, &lost);
    struct lw_lock *l = new_lock(c, "job");

    cr_assert_eq(acquire_now(l, 1, 0, NULL), 0);
    cr_assert_eq(redis_int("DEL %s", "job"), 1);
    cr_assert(run_until(lost.count == 1, 3000), "the loss was not reported");
    cr_assert_eq(lost.reason, LW_LOST_NOT_OWNER);
    cr_assert_str_eq(lost.name, "job");
    cr_assert_eq(lost_off_loop, 0);
    run_for(300);
    cr_assert_eq(lost.count, 1, "once");
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A restart empties the server: the held lock is lost (the renewal finds
 * it gone), and the connections of both clients on the loop come back: an
 * acquire works, and a waiter is woken by an unlock's message. */
EMBEDDED_TEST(server_restart_loses_the_lock_and_reconnects)
{
    struct lost_log lost;
    struct lw_client *c = client_on_loop(600, &lost), *d = client_on_loop(30000, NULL);
    struct lw_lock *l = new_lock(c, "job"), *m = new_lock(d, "after");

    cr_assert_eq(acquire_now(l, 1, 0, NULL), 0);
    run_for(100);
    cr_assert_eq(redis_server_restart(&srv), 0);
    cr_assert(run_until(lost.count == 1, 5000), "the loss was not reported");
    cr_assert_eq(lost_off_loop, 0);
    check_waiter_woken(d, m);
    lw_lock_free(l);
    lw_lock_free(m);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert_eq(lw_client_free(d), 0);
}

/* Every blocking call, made on the loop's thread: each must be LW_EDEADLK. */
static int blocking_calls_refused(struct lw_lock *l)
{
    int64_t ttl;
    int refused = 0;

    refused += lw_lock_acquire(l, NULL) == LW_EDEADLK;
    refused += lw_lock_lease(l, 1000, NULL) == LW_EDEADLK;
    refused += lw_trylock(l, 0, 0, NULL) == LW_EDEADLK;
    refused += lw_acquire(l, 1, 1000, 0, NULL) == LW_EDEADLK;
    refused += lw_unlock(l) == LW_EDEADLK;
    refused += lw_unlock_owner(l, 1) == LW_EDEADLK;
    refused += lw_force_unlock(l) == LW_EDEADLK;
    refused += lw_is_locked(l) == LW_EDEADLK;
    refused += lw_is_held(l) == LW_EDEADLK;
    refused += lw_hold_count(l) == LW_EDEADLK;
    refused += lw_remaining_ttl(l, &ttl) == LW_EDEADLK;
    return refused;
}
#define BLOCKING_CALLS 11

struct in_callback {
    struct lw_lock *lock;
    struct lw_client *client;
    int refused;
    int free_rc;
    int done;
};

static void call_blocking_in_callback(int err, int64_t value, void *arg)
{
    struct in_callback *cb = arg;

    (void)err;
    (void)value;
    cb->refused = blocking_calls_refused(cb->lock);
    cb->free_rc = lw_client_free(cb->client);
    cb->done = 1;
}

static void *free_elsewhere(void *arg)
{
    return (void *)(intptr_t)lw_client_free(arg);
}

EMBEDDED_TEST(blocking_calls_on_the_loop_thread_are_edeadlk)
{
    struct lw_client *c = client_on_loop(30000, NULL);
    struct lw_lock *l = new_lock(c, "job");
    struct in_callback cb = {.lock = l, .client = c};
    uint64_t t0 = now_ms();
    pthread_t t;
    void *rc;

    /* Outside any callback, the loop not running: refused at once. */
    cr_assert_eq(blocking_calls_refused(l), BLOCKING_CALLS);
    cr_assert_lt(now_ms() - t0, 1000);
    /* Inside a callback: the same, and lw_client_free() too. */
    cr_assert_eq(lw_is_locked_async(l, call_blocking_in_callback, &cb), 0);
    cr_assert(run_until(cb.done, 5000));
    cr_assert_eq(cb.refused, BLOCKING_CALLS);
    cr_assert_eq(cb.free_rc, LW_EDEADLK);
    /* lw_client_free() from another thread would race the loop. */
    cr_assert_eq(pthread_create(&t, NULL, free_elsewhere, c), 0);
    pthread_join(t, &rc);
    cr_assert_eq((int)(intptr_t)rc, LW_EDEADLK);
    /* Nothing was sent: the key was never touched. */
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0);
    cr_assert_eq(acquire_now(l, 1, 0, NULL), 0, "the client still works");
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A blocking acquire from another thread, waiting for the lock. */
struct blocked {
    struct lw_lock *lock;
    _Atomic int rc;
};

static void *acquire_blocking(void *arg)
{
    struct blocked *b = arg;

    atomic_store(&b->rc, lw_acquire(b->lock, 3, 60000, 0, NULL));
    return NULL;
}

/* Calls submitted by another thread while the loop does not run: they sit
 * in the engine's queue when the client is freed. */
#define QUEUED 6
struct submitter {
    struct lw_lock *lock;
    struct result r[QUEUED];
    int accepted;
};

static void *submit_calls(void *arg)
{
    struct submitter *s = arg;

    for (int i = 0; i < QUEUED - 1; i++)
        s->accepted += lw_is_locked_async(s->lock, on_result, &s->r[i]) == 0;
    s->accepted += lw_unlock_async(s->lock, 1, on_result, &s->r[QUEUED - 1]) == 0;
    return NULL;
}

EMBEDDED_TEST(free_fails_pending_calls_with_eshutdown)
{
    struct lw_client *c = client_on_loop(30000, NULL);
    struct lw_lock *l = new_lock(c, "job");
    struct result waiters[3] = {{0}};
    struct blocked b = {.lock = l};
    struct submitter s = {.lock = l};
    pthread_t bt, st;

    cr_assert_eq(acquire_now(l, 1, 0, NULL), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(lw_acquire_async(l, 10 + i, LW_WAIT_FOREVER, 0, on_result, &waiters[i]), 0);
    cr_assert_eq(pthread_create(&bt, NULL, acquire_blocking, &b), 0);
    cr_assert(run_until(stats_of(c).waiters == 4, 5000), "four acquires wait");
    cr_assert_eq(pthread_create(&st, NULL, submit_calls, &s), 0);
    pthread_join(st, NULL);
    cr_assert_eq(s.accepted, QUEUED);

    cr_assert_eq(lw_client_free(c), 0);
    pthread_join(bt, NULL);
    cr_assert_eq(b.rc, LW_ESHUTDOWN, "the blocked caller returns");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(waiters[i].done, 1);
        cr_assert_eq(waiters[i].err, LW_ESHUTDOWN);
    }
    for (int i = 0; i < QUEUED; i++) {
        cr_assert_eq(s.r[i].done, 1, "call %d's callback ran", i);
        cr_assert_eq(s.r[i].err, LW_ESHUTDOWN);
        cr_assert_eq(s.r[i].off_loop, 0);
    }
    /* Freeing does not release: owner 1's hold stays until its lease. */
    cr_assert_eq(redis_int("EXISTS %s", "job"), 1);
    cr_assert_eq(lw_is_locked_async(l, on_result, &waiters[0]), LW_ESHUTDOWN);
    lw_lock_free(l);
}

/* docs/examples/libev_server.c against this server: 30 jobs on 3 locks,
 * every one done or skipped, none failed, the locks released after. */
REDIS_TEST(embedded, libev_server_example)
{
    char port[16];
    char *argv[] = {LIBEV_SERVER_PATH, port, "30", NULL};
    extern char **environ;
    pid_t pid;

    snprintf(port, sizeof port, "%d", srv.port);
    cr_assert_eq(posix_spawn(&pid, LIBEV_SERVER_PATH, NULL, NULL, argv, environ), 0);
    cr_assert_eq(wait_child(pid, 30000), 0, "libev_server failed");
    for (int i = 0; i < 3; i++) {
        char name[32], token[32];

        snprintf(name, sizeof name, "report:%d", i);
        snprintf(token, sizeof token, "redisson_lock_token:{report:%d}", i);
        cr_assert_eq(redis_int("EXISTS %s", name), 0);
        cr_assert_gt(redis_int("GET %s", token), 0, "report %d was taken", i);
    }
}
