/*
 * tests/test_watchdog.c - lease renewal and lost locks against a real
 * redis-server, including its faults.
 */
#include <signal.h>
#include <stdlib.h>

#include "client_base.h"
#include "entry.h"
#include "watchdog.h"
#include "lock_util.h"

/* Each lag falls in the bucket whose edges surround it, and the buckets
 * tile the line with at most 12.5% of width. */
Test(watchdog, lag_buckets_tile_the_line)
{
    static const uint64_t lags_us[] = {0, 1, 7, 8, 9, 15, 16, 17, 100, 999, 1000, 1001,
                                       123456, 10000000, (1ull << 35) - 1};

    for (unsigned i = 0; i < sizeof lags_us / sizeof lags_us[0]; i++) {
        uint64_t ns = lags_us[i] * 1000u + 500u;
        unsigned b = lag_bucket(ns);

        cr_assert_lt(b, LW_LAG_BUCKETS);
        cr_assert_leq(lw_lag_bucket_floor_ns(b), ns, "%llu us", (unsigned long long)lags_us[i]);
        cr_assert_gt(lw_lag_bucket_floor_ns(b + 1), ns, "%llu us", (unsigned long long)lags_us[i]);
    }
    for (unsigned b = 8; b + 1 < LW_LAG_BUCKETS; b++) {
        uint64_t lo = lw_lag_bucket_floor_ns(b), hi = lw_lag_bucket_floor_ns(b + 1);

        cr_assert_gt(hi, lo);
        cr_assert_leq((hi - lo) * 8, lo, "bucket %u", b);
    }
    cr_assert_eq(lag_bucket(UINT64_MAX), LW_LAG_BUCKETS - 1);
}

/* Every renewal sent is in the histogram; unloaded, within about a tick
 * (plus a shared machine's scheduling hiccup) of its due time. */
static void check_lag_histogram(const struct lw_client_stats *st, uint64_t tick_ms)
{
    uint64_t total = 0;

    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        total += st->renewal_lag[i];
    cr_assert_eq(total, st->renewals_sent);
    cr_assert_leq(lw_stats_lag_ns(st, 0.5), (tick_ms + 2) * 1000000u, "p50 %llu ns",
                  (unsigned long long)lw_stats_lag_ns(st, 0.5));
    cr_assert_geq(lw_stats_lag_ns(st, 1.0), st->worst_renewal_lag_ns);
    cr_assert_leq(lw_stats_lag_ns(st, 1.0), st->worst_renewal_lag_ns / 8 * 9 + 1000);
}

REDIS_TEST(watchdog, renews_past_the_lease)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1500, &lost);
    struct lw_lock *l = new_lock(c, "long-job");
    struct lw_client_stats st;

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    sleep_ms(5000);
    cr_assert_eq(lw_is_held(l), 1, "held after more than three leases");
    cr_assert_gt(redis_int("PTTL %s", "long-job"), 900, "renewed within the last third");
    lw_client_get_stats(c, &st);
    cr_assert_geq(st.renewals_confirmed, 8, "%llu", (unsigned long long)st.renewals_confirmed);
    cr_assert_eq(st.locks_held, 1);
    cr_assert_eq(atomic_load(&lost.count), 0);
    check_lag_histogram(&st, 10);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

/* MONITOR on its own connection for ms: seen[i] counts the commands that
 * name words[i]. */
static void monitor_count(const char *const *words, int *seen, int n, long ms)
{
    struct timeval tv = {0, 100000};
    redisContext *m = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
    redisReply *r;
    uint64_t until = now_ms() + (uint64_t)ms;

    cr_assert(m && !m->err);
    r = redisCommand(m, "MONITOR");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    tv.tv_sec = 0;
    tv.tv_usec = 200000;
    redisSetTimeout(m, tv);
    memset(seen, 0, (size_t)n * sizeof *seen);
    while (now_ms() < until) {
        /* Something to read at least every 100 ms, so that a read timeout
         * (which ends the connection) never happens. */
        freeReplyObject(redis_server_command(&srv, "ECHO %s", "tick"));
        while (redisGetReply(m, (void **)&r) == REDIS_OK) {
            int tick = strstr(r->str, "\"tick\"") != NULL;

            for (int i = 0; i < n; i++)
                seen[i] += strstr(r->str, words[i]) != NULL;
            freeReplyObject(r);
            if (tick)
                break;
        }
        cr_assert_eq(m->err, 0, "MONITOR connection: %s", m->errstr);
        sleep_ms(100);
    }
    redisFree(m);
}

REDIS_TEST(watchdog, no_renewal_after_unlock)
{
    struct lw_client *c = new_client(1500, NULL);
    struct lw_lock *quiet = new_lock(c, "quiet"), *busy = new_lock(c, "busy");
    struct lw_client_stats after;
    int seen[2];

    cr_assert_eq(lw_lock_acquire(quiet, NULL), 0);
    cr_assert_eq(lw_lock_acquire(busy, NULL), 0);
    sleep_ms(700); /* a renewal or two of each */
    cr_assert_eq(lw_unlock(quiet), 0);
    /* Two leases: renewals of "busy" show MONITOR sees them; none of "quiet". */
    monitor_count((const char *[]){"busy", "quiet"}, seen, 2, 3000);
    cr_assert_geq(seen[0], 4, "renewals of busy seen: %d", seen[0]);
    cr_assert_eq(seen[1], 0, "commands naming quiet after its unlock: %d", seen[1]);
    lw_client_get_stats(c, &after);
    cr_assert_eq(after.locks_held, 1);
    cr_assert_eq(redis_int("EXISTS %s", "quiet"), 0);
    cr_assert_eq(lw_unlock(busy), 0);
    lw_lock_free(quiet);
    lw_lock_free(busy);
    lw_client_free(c);
}

REDIS_TEST(watchdog, key_deleted_is_lost_not_owner)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1500, &lost);
    struct lw_lock *l = new_lock(c, "stolen");
    struct lw_client_stats st;

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    freeReplyObject(redis_server_command(&srv, "DEL stolen"));
    /* The next renewal is at most a third of the lease away. */
    cr_assert(wait_until(atomic_load(&lost.count) > 0, 500 + 100));
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_NOT_OWNER);
    cr_assert_str_eq(lost.name, "stolen");
    cr_assert_eq(lw_is_held(l), 0);
    cr_assert_eq(lw_unlock(l), LW_ENOTOWNER);
    sleep_ms(1000);
    cr_assert_eq(atomic_load(&lost.count), 1, "reported once");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.lost_not_owner, 1);
    cr_assert_eq(st.locks_held, 0);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(watchdog, server_stopped_past_the_lease_is_lost_expired)
{
    struct lost_log lost;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    struct lw_client_stats st;
    uint64_t before, after, at, slack, lease = 1500, drift = 1500 / 100 + 2, tick = 10;

    client_config(&cfg, (uint32_t)lease, &lost);
    cfg.command_timeout_ms = 10000; /* the lease runs out before any timeout */
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "frozen");
    before = lw_clock_now();
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    after = lw_clock_now();
    redis_server_signal(&srv, SIGSTOP);
    /* valid_until = the acquire's send time + lease - drift: between
     * before's and after's.  The loss comes in the tick before it. */
    cr_assert(wait_until(atomic_load(&lost.count) > 0, 3000));
    at = atomic_load(&lost.at_ns);
    redis_server_signal(&srv, SIGCONT);
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_EXPIRED);
    cr_assert_geq(at, before + (lease - drift - tick) * 1000000u,
                  "lost more than a tick before valid_until");
    lw_client_get_stats(c, &st);
    /* By valid_until, unless the host held the engine thread up (seen
     * under TSan on a loaded machine): then later by up to the hold-up,
     * which the engine measures as its tick's lateness, plus the tick's
     * work before the report (a millisecond is plenty). */
    slack = st.worst_tick_late_ns + 1000000u;
    cr_assert_leq(at, after + (lease - drift) * 1000000u + slack,
                  "lost %lld ms after valid_until; the engine thread held up %.1f ms",
                  (long long)(at - after) / 1000000 - (long long)(lease - drift),
                  (double)st.worst_tick_late_ns / 1e6);
    cr_assert_leq(st.worst_lost_late_ns, slack, "counted %.1f ms late; held up %.1f ms",
                  (double)st.worst_lost_late_ns / 1e6, (double)st.worst_tick_late_ns / 1e6);
    if (st.lost_late)
        cr_log_info("lost %.1f ms after valid_until; the engine thread held up %.1f ms",
                    (double)st.worst_lost_late_ns / 1e6, (double)st.worst_tick_late_ns / 1e6);
    cr_assert_eq(lw_is_held(l), 0);
    cr_assert_eq(st.lost_expired, 1);
    lw_lock_free(l);
    lw_client_free(c);
}

/* An acquire of lease_ms that Redis runs only after pause_ms (stopped):
 * its outcome.  The client is connected already. */
/* 1 when the server answers a PING (a paused one, only at the end). */
static int server_answers(void)
{
    redisReply *r = redis_server_command(&srv, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;

    freeReplyObject(r);
    return ok;
}

static int acquire_answered_late(struct lw_lock *l, uint64_t owner, uint64_t lease_ms,
                                 long pause_ms)
{
    struct outcome o;
    int err;

    tally_init(&o.tally);
    redis_server_signal(&srv, SIGSTOP);
    cr_assert_eq(lw_acquire_async(l, owner, 0, lease_ms, on_outcome, &o), 0);
    sleep_ms(pause_ms);
    redis_server_signal(&srv, SIGCONT);
    cr_assert_eq(tally_wait(&o.tally, 1, 5000), 1);
    err = atomic_load(&o.err);
    tally_destroy(&o.tally);
    return err;
}

/* The key may be gone before anyone could use a lock whose acquire was
 * answered after its lease: it is given back and the caller told
 * LW_ETIMEDOUT, never handed a lock already lost. */
REDIS_TEST(watchdog, an_acquire_answered_after_its_lease_is_given_back)
{
    struct lost_log lost;
    struct lw_client *c = new_client(300, &lost), *c3 = new_client(3000, NULL);
    struct lw_lock *l = new_lock(c, "late"), *l3 = new_lock(c3, "late");
    struct lw_client_stats st;

    cr_assert_eq(lw_is_locked(l), 0, "connected, and free");
    cr_assert_eq(lw_is_locked(l3), 0);
    /* The watchdog's lease, then a fixed one. */
    cr_assert_eq(acquire_answered_late(l, 1, 0, 600), LW_ETIMEDOUT);
    cr_assert_eq(redis_int("EXISTS %s", "late"), 0, "given back before the call ended");
    cr_assert_eq(acquire_answered_late(l3, 1, 300, 600), LW_ETIMEDOUT);
    cr_assert_eq(redis_int("EXISTS %s", "late"), 0);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.acquired_too_late, 1);
    cr_assert_eq(st.locks_held, 0);
    cr_assert_eq(atomic_load(&lost.count), 0, "never held, so never lost");
    /* In time, the same calls hold it. */
    cr_assert_eq(acquire_answered_late(l, 1, 0, 50), 0);
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    cr_assert_eq(acquire_answered_late(l3, 1, 300, 50), 0);
    cr_assert_eq(lw_unlock_owner(l3, 1), 0);
    /* A hold the watchdog renews is not at stake: a late reentrant
     * acquire keeps its hold. */
    cr_assert_eq(lw_acquire(l3, 2, 0, 0, NULL), 0);
    cr_assert_eq(acquire_answered_late(l3, 2, 300, 600), 0);
    cr_assert_eq(lw_unlock_owner(l3, 2), 0);
    cr_assert_eq(redis_int("EXISTS %s", "late"), 1, "two holds: one left");
    cr_assert_eq(lw_unlock_owner(l3, 2), 0);
    cr_assert_eq(redis_int("EXISTS %s", "late"), 0);
    lw_client_get_stats(c3, &st);
    cr_assert_eq(st.acquired_too_late, 1);
    lw_lock_free(l);
    lw_lock_free(l3);
    lw_client_free(c);
    lw_client_free(c3);
}

REDIS_TEST(watchdog, failing_renewals_are_lost_errors_and_dropped)
{
    struct lost_log lost;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;

    client_config(&cfg, 3000, &lost);
    cfg.command_timeout_ms = 200; /* two renewals time out well within the lease */
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "flaky");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    redis_server_signal(&srv, SIGSTOP);
    cr_assert(wait_until(atomic_load(&lost.count) > 0, 2500));
    redis_server_signal(&srv, SIGCONT);
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_ERRORS);
    /* Our field is dropped rather than left to expire with the lease. */
    cr_assert(wait_until(redis_int("EXISTS %s", "flaky") == 0, 1500));
    cr_assert_eq(lw_is_held(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(watchdog, script_flush_does_not_stop_renewals)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1500, &lost);
    struct lw_lock *l = new_lock(c, "flushed");
    struct lw_client_stats st;

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    freeReplyObject(redis_server_command(&srv, "SCRIPT FLUSH"));
    sleep_ms(2000);
    cr_assert_eq(atomic_load(&lost.count), 0);
    cr_assert_eq(lw_is_held(l), 1);
    lw_client_get_stats(c, &st);
    cr_assert_geq(st.renewals_confirmed, 3);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

/* The locks many:0..n-1 alive in Redis, and their fencing counters, at one
 * instant: a script sees the clock stand still while it runs, and EXISTS
 * takes a key whose lease has run out for gone (DBSIZE counts it until
 * Redis evicts it).  {locks, tokens}, or {-1, -1} without an answer. */
static void alive_at_one_instant(int n, long long *locks, long long *tokens)
{
    static const char script[] =
        "local locks, tokens = 0, 0 "
        "for i = 0, tonumber(ARGV[1]) - 1 do "
        "  locks = locks + redis.call('exists', 'many:' .. i) "
        "  tokens = tokens + redis.call('exists', 'redisson_lock_token:{many:' .. i .. '}') "
        "end "
        "return {locks, tokens}";
    redisReply *r = redis_server_command(&srv, "EVAL %s 0 %d", script, n);

    *locks = *tokens = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        *locks = r->element[0]->integer;
        *tokens = r->element[1]->integer;
    }
    freeReplyObject(r);
}

/* An unlock's outcome: done, or LW_ENOTOWNER (its lease ran out) apart. */
struct unlocks {
    struct tally tally;
    _Atomic int not_owner;
};

static void count_unlock(int err, int64_t value, void *arg)
{
    struct unlocks *u = arg;

    (void)value;
    if (err == LW_ENOTOWNER)
        atomic_fetch_add(&u->not_owner, 1);
    tally_add(&u->tally, err);
}

/*
 * Held six seconds means alive in Redis six seconds after the last acquire:
 * nobody else makes these keys, so a lock alive then was never lost
 * before.  Redis is read first, at one instant, and the client's counts
 * after it: read the other way round, a stalled engine thread under load
 * can let a lease run out between the two reads, past the six seconds, and
 * Redis would disagree with counts taken before it.  A loss the client
 * reports after Redis's instant is such a late one: its lock is counted
 * lost, not held, and its unlock finds it gone.
 */
REDIS_TEST(watchdog, ten_thousand_locks_held_six_seconds)
{
    enum { N = 10000 };
    struct lost_log lost;
    struct lw_client *c = new_client(1500, &lost);
    struct lw_lock **locks = calloc(N, sizeof *locks);
    struct lw_client_stats st;
    struct unlocks u = {0};
    struct tally t;
    long long alive, tokens;
    int lost_before;
    char name[32];

    tally_init(&t);
    tally_init(&u.tally);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "many:%d", i);
        locks[i] = new_lock(c, name);
        cr_assert_eq(lw_acquire_async(locks[i], 1, 0, 0, count_outcome, &t), 0);
    }
    cr_assert_eq(tally_wait(&t, N, 30000), N);
    cr_assert_eq(t.failed, 0);
    sleep_ms(6000);
    lost_before = atomic_load(&lost.count);
    alive_at_one_instant(N, &alive, &tokens);
    lw_client_get_stats(c, &st);
    cr_assert_eq(lost_before, 0,
                 "%d locks lost within the six seconds (%s; worst renewal lag %llu ms, tick "
                 "late %llu ms)",
                 lost_before, lw_lost_reason_name(atomic_load(&lost.reason)),
                 (unsigned long long)(st.worst_renewal_lag_ns / 1000000u),
                 (unsigned long long)(st.worst_tick_late_ns / 1000000u));
    cr_assert_eq(alive, N, "every lock alive after six seconds");
    cr_assert_eq(tokens, 0, "a fencing counter made for a lock not fenced");
    cr_assert_geq(st.renewals_confirmed, 10ull * N, "%llu",
                  (unsigned long long)st.renewals_confirmed);
    cr_assert_lt(st.renew_batches, st.renewals_sent / 50, "batched");
    /* The client holds every lock it has not reported lost (the count
     * drops just before on_lost runs: waited for). */
    cr_assert(wait_until((lw_client_get_stats(c, &st),
                          st.locks_held + (uint64_t)atomic_load(&lost.count) == N),
                         2000),
              "held %llu, lost %d", (unsigned long long)st.locks_held, atomic_load(&lost.count));
    for (int i = 0; i < N; i++)
        cr_assert_eq(lw_unlock_async(locks[i], 1, count_unlock, &u), 0);
    cr_assert_eq(tally_wait(&u.tally, N, 30000), N);
    cr_assert_eq(u.tally.failed, atomic_load(&u.not_owner), "an unlock failed: %s",
                 lw_errname(u.tally.last_err));
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 0);
    for (int i = 0; i < N; i++)
        lw_lock_free(locks[i]);
    free(locks);
    tally_destroy(&t);
    tally_destroy(&u.tally);
    lw_client_free(c);
}

REDIS_TEST(watchdog, failed_unlock_resumes_renewing)
{
    struct lost_log lost;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    int holds;

    /* The writes are held only until the unlock has timed out (300 ms),
     * well within the lease: the renewals the pause held back land in
     * time even on a loaded machine (a pause of a fixed second, with a
     * lease of 1.5 s, once left a renewal late under TSan). */
    client_config(&cfg, 3000, &lost);
    cfg.command_timeout_ms = 300;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "sticky");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    freeReplyObject(redis_server_command(&srv, "CLIENT PAUSE %s WRITE", "10000"));
    cr_assert_eq(lw_unlock(l), LW_ETIMEDOUT);
    freeReplyObject(redis_server_command(&srv, "CLIENT UNPAUSE"));
    /* Whether or not that unlock ran, one hold is left: it must live on. */
    holds = lw_hold_count(l);
    cr_assert(holds == 1 || holds == 2, "holds %d; %d lost (%s)", holds,
              atomic_load(&lost.count), lw_lost_reason_name(atomic_load(&lost.reason)));
    sleep_ms(3500);
    cr_assert_eq(lw_hold_count(l), holds, "renewed past its lease");
    cr_assert_eq(atomic_load(&lost.count), 0);
    while (holds--)
        cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_is_locked(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(watchdog, short_reentrant_lease_does_not_cut_the_watchdogs)
{
    struct lost_log lost;
    struct lw_client *c = new_client(3000, &lost);
    struct lw_lock *l = new_lock(c, "mixed");

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_trylock(l, 0, 200, NULL), 0);
    cr_assert_gt(redis_int("PTTL %s", "mixed"), 2000);
    sleep_ms(400);
    cr_assert_eq(lw_hold_count(l), 2);
    cr_assert_eq(atomic_load(&lost.count), 0);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(watchdog, many_losses_are_dropped_in_few_calls)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1000, &lost);
    struct lw_lock *locks[300];
    struct lw_client_stats st0, st1;
    struct engine_stats es0, es1;
    struct tally acquired;
    uint64_t calls;
    char name[32];

    /* Acquired all at once, so that their leases run out together: one
     * by one, on a loaded machine, they spread over as many ticks as the
     * acquires take, and each tick's losses are a drop call of their own. */
    tally_init(&acquired);
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "mass:%d", i);
        locks[i] = new_lock(c, name);
        cr_assert_eq(lw_acquire_async(locks[i], 1, 0, 0, count_outcome, &acquired), 0);
    }
    cr_assert_eq(tally_wait(&acquired, 300, 5000), 300);
    cr_assert_eq(acquired.failed, 0, "%d acquires failed, the last %s", acquired.failed,
                 lw_strerror(acquired.last_err));
    tally_destroy(&acquired);
    lw_client_get_stats(c, &st0);
    engine_get_stats(c->engine, &es0);
    /* Paused past the lease: every lock expires unconfirmed, and each
     * wants its field dropped.  The calls queue in Redis until the end. */
    freeReplyObject(redis_server_command(&srv, "CLIENT PAUSE 1500 ALL"));
    cr_assert(wait_until(atomic_load(&lost.count) == 300, 3000));
    /* The pause is over (the server answers us) and the queued calls
     * answered (none on the wire). */
    cr_assert(wait_until(server_answers() && (engine_get_stats(c->engine, &es1),
                                              es1.inflight == 0),
                         5000),
              "%llu calls still on the wire", (unsigned long long)es1.inflight);
    lw_client_get_stats(c, &st1);
    engine_get_stats(c->engine, &es1);
    cr_assert_eq(st1.lost_expired, 300);
    cr_assert_eq(es1.reconnects, es0.reconnects);
    /* Commands written besides renewals: a few drop batches, not 300. */
    calls = (es1.sent - es0.sent) - (st1.renew_batches - st0.renew_batches);
    cr_log_info("300 losses dropped in %llu calls", (unsigned long long)calls);
    cr_assert_leq(calls, 30);
    for (int i = 0; i < 300; i++)
        lw_lock_free(locks[i]);
    lw_client_free(c);
}

/* --- smooth renewals: a burst's first renewals spread over the period --- */

/* Counts of offsets (each under period) in `bins` equal windows of the
 * period: the fullest window over the mean. */
static double fullest_over_mean(const uint64_t *offsets, size_t n, uint64_t period, unsigned bins)
{
    unsigned count[64] = {0}, most = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned b = (unsigned)(offsets[i] / (period / bins + (period % bins != 0)));

        cr_assert_lt(b, bins);
        if (++count[b] > most)
            most = count[b];
    }
    return most / ((double)n / bins);
}

/* 200,000 new locks in a row (from wherever the count is), a 30 s lease:
 * their first renewals come early by shares that fill every second of the
 * 10 s period alike, and none comes later than lease/3. */
Test(watchdog, first_renewals_of_a_burst_spread_over_the_period)
{
    static uint64_t early[200000];
    const uint64_t period = 10000 * 1000000ull;

    for (uint64_t start = 0; start < 3000000; start += 1234567) {
        for (size_t i = 0; i < 200000; i++) {
            early[i] = watchdog_first_early_ns(start + i, period);
            cr_assert_lt(early[i], period);
        }
        cr_assert_leq(fullest_over_mean(early, 200000, period, 10), 1.01);
        cr_assert_leq(fullest_over_mean(early, 200000, period, 50), 1.02);
    }
}

struct due_times {
    uint64_t *due;  /* every entry's next renewal */
    uint64_t *sent; /* and when its last acquire or renewal was sent */
    size_t n;
};

/* On the engine thread: every entry's next renewal, and its last send
 * (valid_until less the lease and its drift allowance). */
static void read_due_times(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct lw_client *c = ((void **)arg)[0];
    struct due_times *d = ((void **)arg)[1];
    uint64_t lease = c->lease_ms * 1000000u, drift = lease / 100 + 2000000u;
    struct entry *head, *tmp;

    (void)req;
    (void)reply;
    (void)err;
    HASH_ITER(hh, c->wd.entries, head, tmp) {
        for (struct entry *e = head; e;
             e = lw_item_of(lw_qnode_next(&e->owner_node), struct entry, owner_node), d->n++) {
            d->due[d->n] = e->due_ns;
            d->sent[d->n] = e->valid_until_ns + drift - lease;
        }
    }
}

/* A burst of 4,000 acquires on a 30 s lease: the wheel holds their
 * renewals spread over the 10 s period (counts, not time: each one's
 * place in the period, from the burst's start), and none due later than
 * a third of the lease after the lock's last send.  (A lock whose first
 * renewal came early in the burst has been renewed since: it keeps its
 * place.) */
REDIS_TEST(watchdog, a_burst_of_locks_comes_due_spread_over_the_period)
{
    /* 125 runs of WATCHDOG_PHASE_RUN locks sharing a phase: 12 or 13 a
     * tenth of the period (2,000 were 62, 6 or 7 a tenth, and their send
     * times' spread took the fullest past 1.2 once). */
    enum { N = 4000 };
    const uint64_t period = 10000 * 1000000ull;
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *locks[N];
    struct tally t;
    struct request task;
    struct due_times d = {calloc(N, sizeof(uint64_t)), calloc(N, sizeof(uint64_t)), 0};
    void *args[2] = {c, &d};
    uint64_t start = lw_clock_now();

    tally_init(&t);
    for (int i = 0; i < N; i++) {
        char name[32];

        snprintf(name, sizeof name, "burst:%d", i);
        locks[i] = new_lock(c, name);
        cr_assert_eq(lw_acquire_async(locks[i], 1, 0, 0, count_outcome, &t), 0);
    }
    cr_assert_eq(tally_wait(&t, N, 60000), N);
    cr_assert_eq(t.failed, 0);
    request_init(&task);
    request_task(&task);
    cr_assert_eq(engine_call(c->engine, &task, read_due_times, args), 0);
    cr_assert_eq(d.n, N);
    for (size_t i = 0; i < d.n; i++) {
        cr_assert_leq(d.due[i], d.sent[i] + period, "entry %zu due %lld ms after lease/3", i,
                      (long long)(d.due[i] - d.sent[i] - period) / 1000000);
        d.due[i] = (d.due[i] - start) % period; /* its place in the period */
    }
    cr_assert_leq(fullest_over_mean(d.due, d.n, period, 10), 1.2);
    for (int i = 0; i < N; i++)
        lw_lock_free(locks[i]);
    lw_client_free(c);
    free(d.due);
    free(d.sent);
    tally_destroy(&t);
}

/* Leases that went at risk or were lost, by kind (lw_lease_kind). */
struct risk_count {
    _Atomic int risk[8];
    _Atomic int lost[8];
};

static void count_risk(const struct lw_lease *lease, int at_risk, uint64_t left_ms, void *arg)
{
    struct risk_count *n = arg;

    (void)left_ms;
    if (at_risk && lease->kind >= 0 && lease->kind < 8)
        atomic_fetch_add(&((struct risk_count *)n)->risk[lease->kind], 1);
}

static void count_lease_lost(const struct lw_lease *lease, int reason, void *arg)
{
    struct risk_count *n = arg;

    (void)reason;
    if (lease->kind >= 0 && lease->kind < 8)
        atomic_fetch_add(&n->lost[lease->kind], 1);
}

/*
 * On a healthy Redis no lease goes at risk between renewals, at any lease
 * the library accepts: here the shortest, three ticks (300 ms at a tick
 * of 100 ms: the margin before risk is the two ticks after a renewal
 * falls due), of every kind at once (a lock, a read and a write hold, a
 * permit, a fair lock held and a waiter's place behind it, a multi-lock's
 * names), for about fifteen renewals each.  A renewal answered in a
 * tick's time is well inside it, on a loaded machine too.
 */
REDIS_TEST(watchdog, the_shortest_lease_of_every_kind_never_goes_at_risk)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct risk_count n = {0};
    struct lw_lock *plain, *rd, *wr, *fair, *m[2];
    struct lw_multi *multi;
    struct lw_semaphore *sem;
    struct lw_permit permit;
    struct outcome place = {0};

    client_config(&cfg, 300, NULL);
    cfg.tick_ms = 100;
    cfg.fair_place_ms = 300;
    cfg.on_lease_risk = count_risk;
    cfg.lease_risk_arg = &n;
    cfg.on_lease_lost = count_lease_lost;
    cfg.lease_lost_arg = &n;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    plain = new_lock(c, "short:lock");
    cr_assert_eq(lw_read_lock_new(c, "short:rw", 8, &rd), 0);
    cr_assert_eq(lw_write_lock_new(c, "short:rw2", 9, &wr), 0);
    cr_assert_eq(lw_fair_lock_new(c, "short:fair", 10, &fair), 0);
    m[0] = new_lock(c, "short:m1");
    m[1] = new_lock(c, "short:m2");
    cr_assert_eq(lw_multi_new(m, 2, &multi), 0);
    cr_assert_eq(lw_semaphore_new(c, "short:sem", 9, &sem), 0);
    cr_assert_eq(lw_semaphore_try_set(sem, 1), 1);
    tally_init(&place.tally);

    cr_assert_eq(lw_acquire(plain, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_acquire(rd, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_acquire(wr, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_acquire(fair, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_acquire_async(fair, 2, 60000, 0, on_outcome, &place), 0); /* waits */
    cr_assert_eq(lw_multi_acquire(multi, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_permit_acquire(sem, 1, 0, 0, &permit), 0);
    sleep_ms(1500);
    for (int k = 0; k < 8; k++) {
        cr_assert_eq(atomic_load(&n.risk[k]), 0, "a %s lease went at risk",
                     lw_lease_kind_name(k));
        cr_assert_eq(atomic_load(&n.lost[k]), 0, "a %s lease was lost", lw_lease_kind_name(k));
    }
    cr_assert_eq(tally_wait(&place.tally, 1, 0), 0, "the waiter got in");

    cr_assert_eq(lw_permit_release(sem, &permit, 1), 0);
    cr_assert_eq(lw_multi_unlock_owner(multi, 1), 0);
    cr_assert_eq(lw_unlock_owner(fair, 1), 0);
    cr_assert_eq(tally_wait(&place.tally, 1, 5000), 1, "the waiter never got in");
    cr_assert_eq(lw_unlock_owner(fair, 2), 0);
    cr_assert_eq(lw_unlock_owner(wr, 1), 0);
    cr_assert_eq(lw_unlock_owner(rd, 1), 0);
    cr_assert_eq(lw_unlock_owner(plain, 1), 0);
    tally_destroy(&place.tally);
    lw_semaphore_free(sem);
    lw_multi_free(multi);
    for (int i = 0; i < 2; i++)
        lw_lock_free(m[i]);
    lw_lock_free(fair);
    lw_lock_free(wr);
    lw_lock_free(rd);
    lw_lock_free(plain);
    cr_assert_eq(lw_client_free(c), 0);
}
