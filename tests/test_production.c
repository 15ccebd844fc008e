/*
 * tests/test_production.c - what a team running it in production asks of a
 * lock client, against a real redis-server (tests/fixtures):
 *
 *   - warned before lost: a link that goes silent, without a reset (a
 *     proxy that stops forwarding), past a renewal turns the lock at risk
 *     (on_risk, with time left) before it is lost (on_lost), and the lock
 *     is safe again (on_risk 0) when the link comes back in time;
 *   - a cap on holding: a lock held max_hold_ms is given up at once
 *     (LW_LOST_HELD_TOO_LONG), not renewed, and left to expire at the end
 *     of its lease; per client and per handle;
 *   - the acquire-wait and hold-time histograms;
 *   - the log hook: a killed connection said, and its restoration; lines
 *     rate-limited by kind;
 *   - a server without WAIT with acquire_replicas set: LW_ENOTSUP, and the
 *     reason in lw_client_last_error(), not a reply error;
 *   - every kind of lease reported as such: a lock, a read hold, a write
 *     hold and a permit at risk, safe again, then lost, each told to
 *     on_lease_risk and on_lease_lost with its kind (a permit with its
 *     whole id), to on_risk and on_lost as before, and in the log by its
 *     noun.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lock_util.h"
#include "log_util.h"
#include "proxy.h"

#define LEASE_MS 1000u

/* What on_risk and on_lost said, in order, with when. */
struct events {
    pthread_mutex_t lock;
    int n;
    struct event {
        char what;       /* 'r' at risk, 's' safe, 'l' lost */
        int reason;      /* lost: LW_LOST_* */
        uint64_t left_ms; /* at risk, safe: what on_risk said */
        uint64_t at_ns;
    } ev[64];
};

static struct events events = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void add_event(char what, int reason, uint64_t left_ms)
{
    pthread_mutex_lock(&events.lock);
    if (events.n < 64)
        events.ev[events.n++] = (struct event){what, reason, left_ms, lw_clock_now()};
    pthread_mutex_unlock(&events.lock);
}

static void on_risk(const char *name, size_t len, uint64_t owner, int at_risk, uint64_t left_ms,
                    void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)arg;
    add_event(at_risk ? 'r' : 's', 0, left_ms);
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)arg;
    add_event('l', reason, 0);
}

/* The events so far, as a string ("rl", "rs", ...). */
static const char *history(void)
{
    static char s[65];

    pthread_mutex_lock(&events.lock);
    for (int i = 0; i < events.n; i++)
        s[i] = events.ev[i].what;
    s[events.n] = 0;
    pthread_mutex_unlock(&events.lock);
    return s;
}

static struct lw_client *client_at(int port, uint32_t lease_ms, uint64_t max_hold_ms)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, NULL);
    cfg.port = port;
    cfg.on_risk = on_risk;
    cfg.on_lost = on_lost;
    cfg.command_timeout_ms = 10000; /* a silent link is not timed out here */
    cfg.max_hold_ms = max_hold_ms;
    events.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

REDIS_TEST(production, a_silent_link_is_at_risk_before_lost)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *l;
    uint64_t acquired_ns;

    cr_assert(p);
    c = client_at(proxy_port(p), LEASE_MS, 0);
    l = new_lock(c, "prod:silent");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    acquired_ns = lw_clock_now();
    sleep_ms(LEASE_MS / 2); /* a renewal confirmed: safe */
    cr_assert_str_eq(history(), "");
    cr_assert_eq(proxy_hold(p, 1), 0); /* silence, no RST */
    cr_assert(wait_until(strchr(history(), 'l') != NULL, 5 * LEASE_MS), "never lost");
    cr_assert_str_eq(history(), "rl", "at risk, then lost");
    cr_assert_gt(events.ev[0].left_ms, 0, "time left when at risk");
    cr_assert_leq(events.ev[0].left_ms, LEASE_MS / 2);
    cr_assert_eq(events.ev[1].reason, LW_LOST_EXPIRED);
    cr_assert_lt(events.ev[0].at_ns, events.ev[1].at_ns);
    cr_log_info("at risk %.0f ms after the acquire, %llu ms left; lost %.0f ms after",
                (double)(events.ev[0].at_ns - acquired_ns) / 1e6,
                (unsigned long long)events.ev[0].left_ms,
                (double)(events.ev[1].at_ns - acquired_ns) / 1e6);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.went_at_risk, 1);
    cr_assert_eq(st.at_risk, 0, "a lost lock is at risk no more");
    cr_assert_eq(st.recovered, 0);
    /* Reported by valid_until, unless the host held the engine thread up
     * (seen under TSan): then later by up to the hold-up, which the engine
     * measures as its tick's lateness, plus the tick's work before the
     * report, as test_watchdog's expiry test allows. */
    cr_assert_leq(st.worst_lost_late_ns, st.worst_tick_late_ns + 1000000u,
                  "lost %.1f ms late; the engine thread held up %.1f ms",
                  (double)st.worst_lost_late_ns / 1e6, (double)st.worst_tick_late_ns / 1e6);
    cr_assert_eq(proxy_hold(p, 0), 0);
    lw_lock_free(l);
    lw_client_free(c);
    proxy_stop(p);
}

REDIS_TEST(production, a_link_back_in_time_makes_it_safe_again)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *l;

    cr_assert(p);
    c = client_at(proxy_port(p), 2000, 0);
    l = new_lock(c, "prod:recover");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    sleep_ms(100);
    cr_assert_eq(proxy_hold(p, 1), 0);
    /* The renewal at about 667 ms is held; at about 980 ms under half the
     * lease is sure to be left: at risk.  Back at 1400 ms: the held
     * renewal's reply confirms it. */
    cr_assert(wait_until(strchr(history(), 'r') != NULL, 3000), "never at risk");
    sleep_ms(300);
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert(wait_until(strchr(history(), 's') != NULL, 3000), "never safe again: %s",
              history());
    sleep_ms(2500); /* more than a lease: renewed on */
    cr_assert_str_eq(history(), "rs", "at risk, then safe: no loss");
    cr_assert_gt(events.ev[1].left_ms, events.ev[0].left_ms, "the lease proven grew");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.went_at_risk, 1);
    cr_assert_eq(st.recovered, 1);
    cr_assert_eq(st.at_risk, 0);
    cr_assert_eq(lw_is_held(l), 1);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
    proxy_stop(p);
}

/* Held max_hold_ms: told at once, renewed no more, left to expire. */
static void expect_capped(struct lw_client *c, struct lw_lock *l, uint64_t cap_ms)
{
    struct lw_client_stats st;
    uint64_t t0 = lw_clock_now(), told;
    uint64_t renewed;
    int64_t ttl;

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert(wait_until(strchr(history(), 'l') != NULL, cap_ms + 2000), "never capped");
    told = (events.ev[events.n - 1].at_ns - t0) / 1000000u;
    cr_assert_eq(events.ev[events.n - 1].reason, LW_LOST_HELD_TOO_LONG);
    cr_assert_geq(told, cap_ms - 20, "told after %llu ms", (unsigned long long)told);
    cr_assert_leq(told, cap_ms + 100, "told after %llu ms", (unsigned long long)told);
    /* Still there: its lease is the holder's time to stop. */
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    cr_assert_gt(ttl, 0, "the key must run out by itself, not be deleted");
    lw_client_get_stats(c, &st);
    renewed = st.renewals_confirmed;
    cr_assert(wait_until(lw_is_locked(l) == 0, 2 * LEASE_MS), "never expired");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.renewals_confirmed, renewed, "renewed after the cap");
    cr_log_info("capped at %llu ms: told after %llu ms", (unsigned long long)cap_ms,
                (unsigned long long)told);
}

REDIS_TEST(production, a_lock_held_too_long_is_given_up)
{
    struct lw_client *c = client_at(srv.port, LEASE_MS, 1200);
    struct lw_client_stats st;
    struct lw_lock *l = new_lock(c, "prod:cap");
    struct lw_lock *h = new_lock(c, "prod:cap-handle");

    expect_capped(c, l, 1200); /* the client's cap, past a renewal or three */
    cr_assert_eq(lw_lock_set_max_hold(h, 400), 0); /* the handle's own */
    events.n = 0;
    expect_capped(c, h, 400);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.lost_held_too_long, 2);
    cr_assert_eq(lw_lock_set_max_hold(h, (uint64_t)LW_MAX_LEASE_MS * 1000 + 1), LW_ERANGE);
    cr_assert_eq(lw_lock_set_max_hold(NULL, 1), LW_EINVAL);
    lw_lock_free(l);
    lw_lock_free(h);
    lw_client_free(c);
}

/* The histogram's count at or above floor_ns. */
static uint64_t count_from(const uint64_t *buckets, uint64_t floor_ns)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        if (lw_lag_bucket_floor_ns(i) >= floor_ns)
            n += buckets[i];
    return n;
}

REDIS_TEST(production, waits_and_holds_are_counted)
{
    struct lw_client *a = client_at(srv.port, LEASE_MS, 0), *b = new_client(LEASE_MS, NULL);
    struct lw_client_stats st;
    struct lw_lock *la = new_lock(a, "prod:hist"), *lb = new_lock(b, "prod:hist");
    struct outcome waited = {0};

    tally_init(&waited.tally);
    cr_assert_eq(lw_lock_acquire(la, NULL), 0);
    cr_assert_eq(lw_acquire_async(lb, 1, 5000, 0, on_outcome, &waited), 0);
    sleep_ms(300); /* b waits about this long */
    cr_assert_eq(lw_unlock(la), 0);
    cr_assert_eq(tally_wait(&waited.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&waited.err), 0);
    lw_client_get_stats(b, &st);
    cr_assert_eq(st.acquires, 1);
    cr_assert_eq(count_from(st.acquire_wait, 250000000ull), 1, "the wait, about 300 ms");
    lw_client_get_stats(a, &st);
    cr_assert_eq(st.acquires, 1);
    cr_assert_eq(st.holds_ended, 1);
    cr_assert_eq(count_from(st.hold_time, 250000000ull), 1, "the hold, about 300 ms");
    cr_assert_eq(lw_unlock_owner(lb, 1), 0);
    tally_destroy(&waited.tally);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

REDIS_TEST(production, the_log_says_a_killed_connection_and_its_return)
{
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *l;
    redisReply *r;
    int64_t ttl;

    client_config(&cfg, LEASE_MS, NULL);
    cfg.log = on_log;
    cfg.reconnect_min_ms = 20;
    logged.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "prod:log");
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    cr_assert_eq(logged.n, 0, "silent while all is well: %s", logged.line[0]);
    r = redis_server_command(&srv, "CLIENT KILL TYPE normal");
    freeReplyObject(r);
    cr_assert(wait_until(logged_with("connection restored", LW_LOG_INFO), 3000),
              "no restored line (%d lines)", logged.n);
    cr_assert(logged_with("closed by the server (LW_ECONNLOST)", LW_LOG_WARN),
              "no lost line: %s", logged.line[0]);
    for (int i = 0; i < logged.n; i++)
        cr_log_info("logged: %s: %s", lw_log_level_name(logged.level[i]), logged.line[i]);
    lw_lock_free(l);
    lw_client_free(c);

    /* Quiet below its level. */
    cfg.log_level = LW_LOG_ERROR;
    logged.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "prod:log");
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    r = redis_server_command(&srv, "CLIENT KILL TYPE normal");
    freeReplyObject(r);
    /* The loss seen and the connection made again: both lines would have
     * been said by now. */
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.reconnects >= 1), 3000),
              "the connection never made again");
    cr_assert_eq(logged.n, 0, "a warning said at level error: %s", logged.line[0]);
    lw_lock_free(l);
    lw_client_free(c);
    cfg.log_level = 7;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
}

/* Every at-risk and lost report, counted (on_risk, on_lost). */
static _Atomic int went_at_risk, went_lost;

static void count_risk(const char *name, size_t len, uint64_t owner, int at_risk,
                       uint64_t left_ms, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)left_ms;
    (void)arg;
    if (at_risk)
        atomic_fetch_add(&went_at_risk, 1);
}

static void count_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&went_lost, 1);
}

/* Lines holding what: how many, and the sum of the N of their "(and N
 * more like it, not logged)"; whether the last of them has one. */
static int lines_with(const char *what, long *unsaid, int *last_says_more)
{
    int n = 0;

    *unsaid = 0;
    *last_says_more = 0;
    pthread_mutex_lock(&logged.lock);
    for (int i = 0; i < logged.n; i++) {
        const char *more;

        if (!strstr(logged.line[i], what))
            continue;
        n++;
        more = strstr(logged.line[i], " (and ");
        *last_says_more = more && strstr(more, " more like it, not logged)");
        if (*last_says_more)
            *unsaid += atol(more + strlen(" (and "));
    }
    pthread_mutex_unlock(&logged.lock);
    return n;
}

/* 100 locks at risk, then lost, at once: a handful of lines each.  One more
 * lock at risk and lost seconds later: its lines say how many went unsaid,
 * and with them every report is accounted for. */
REDIS_TEST(production, the_log_is_rate_limited)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client *c;
    struct tally acquired;
    struct lw_lock *locks[100], *last;
    int risk_lines, lost_lines, more;
    long unsaid;

    cr_assert(p);
    client_config(&cfg, LEASE_MS, NULL);
    cfg.port = proxy_port(p);
    cfg.command_timeout_ms = 10000;
    cfg.log = on_log;
    cfg.on_risk = count_risk;
    cfg.on_lost = count_lost;
    logged.n = 0;
    atomic_store(&went_at_risk, 0);
    atomic_store(&went_lost, 0);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    tally_init(&acquired);
    for (int i = 0; i < 100; i++) {
        char name[32];

        snprintf(name, sizeof name, "prod:many:%d", i);
        locks[i] = new_lock(c, name);
        cr_assert_eq(lw_acquire_async(locks[i], 1, 0, 0, count_outcome, &acquired), 0);
    }
    cr_assert_eq(tally_wait(&acquired, 100, 5000), 100);
    cr_assert_eq(proxy_hold(p, 1), 0); /* 100 locks at risk, then lost */
    cr_assert(wait_until(atomic_load(&went_lost) == 100, 5 * LEASE_MS), "%d lost",
              atomic_load(&went_lost));
    risk_lines = lines_with(" at risk: ", &unsaid, &more);
    cr_log_info("%d lines in all, %d of them at-risk lines", logged.n, risk_lines);
    cr_assert_leq(risk_lines, 2 * 5, "100 locks at risk in %d lines", risk_lines);
    cr_assert_gt(risk_lines, 0);
    cr_assert_leq(logged.n, 30);

    /* Seconds later, in a window of its own: the next lock's lines carry
     * the count of those not said. */
    cr_assert_eq(proxy_hold(p, 0), 0);
    last = new_lock(c, "prod:many:last");
    cr_assert_eq(lw_acquire(last, 1, 5000, 0, NULL), 0);
    sleep_ms(LEASE_MS / 2); /* a renewal confirmed */
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(wait_until(atomic_load(&went_lost) == 101, 5 * LEASE_MS), "never lost");
    risk_lines = lines_with(" at risk: ", &unsaid, &more);
    cr_assert(more, "the last at-risk line says no more like it");
    cr_assert_eq(risk_lines + unsaid, atomic_load(&went_at_risk),
                 "%d at-risk lines, %ld unsaid, %d at risk", risk_lines, unsaid,
                 atomic_load(&went_at_risk));
    lost_lines = lines_with(") lost: ", &unsaid, &more);
    cr_assert(more, "the last lost line says no more like it");
    cr_assert_eq(lost_lines + unsaid, 101, "%d lost lines, %ld unsaid", lost_lines, unsaid);
    cr_log_info("at risk %d times in %d lines, lost 101 in %d", atomic_load(&went_at_risk),
                risk_lines, lost_lines);
    cr_assert_eq(proxy_hold(p, 0), 0);
    for (int i = 0; i < 100; i++)
        lw_lock_free(locks[i]);
    lw_lock_free(last);
    tally_destroy(&acquired);
    lw_client_free(c);
    proxy_stop(p);
}

/* A server without WAIT (serverless Redis, Valkey: here renamed away). */
REDIS_TEST(production, no_wait_on_the_server_is_said_clearly)
{
    static const char *const args[] = {"--rename-command", "WAIT", "", NULL};
    struct redis_server bare;
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_lock *l;
    char why[300];
    int64_t ttl;

    cr_assert_eq(redis_server_start_args(&bare, NULL, args), 0);
    client_config(&cfg, LEASE_MS, NULL);
    cfg.port = bare.port;
    cfg.acquire_replicas = 1;
    cfg.log = on_log;
    logged.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "prod:nowait");
    cr_assert_eq(lw_lock_acquire(l, NULL), LW_ENOTSUP);
    cr_assert_eq(lw_client_last_error(c, why, sizeof why), LW_ENOTSUP);
    cr_assert(strstr(why, "no WAIT command"), "%s", why);
    cr_assert(logged_with("no WAIT command", LW_LOG_ERROR));
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    cr_assert_eq(ttl, -2, "the hold is given back");
    cr_log_info("%s", why);
    lw_lock_free(l);
    lw_client_free(c);
    redis_server_stop(&bare);
}

/* --- every kind of lease, reported as such -------------------------------- */

#define KINDS (LW_LEASE_PERMIT + 1)

/* What the lease callbacks said, per kind: the events in order ('r' at
 * risk, 's' safe, 'l' lost), the loss's reason; and what did not match
 * the lease held (name, owner, permit id, size, the callback's arg). */
static struct {
    pthread_mutex_t lock;
    char seen[KINDS][16];
    int reason[KINDS];
    char wrong[200]; /* the first mismatch, or "" */
    const char *name[KINDS];
    uint64_t owner[KINDS];
    struct lw_permit permit;
    _Atomic int old_risk, old_lost; /* on_risk's and on_lost's calls */
} kinds = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void kind_event(const struct lw_lease *lease, char what, int reason, void *arg)
{
    int k = lease->kind;

    pthread_mutex_lock(&kinds.lock);
    if (arg != &kinds)
        snprintf(kinds.wrong, sizeof kinds.wrong, "arg %p: not the lease callbacks' own", arg);
    else if (k < 0 || k >= KINDS)
        snprintf(kinds.wrong, sizeof kinds.wrong, "kind %d", k);
    else if (lease->size != sizeof *lease || lease->len != strlen(kinds.name[k]) ||
             memcmp(lease->name, kinds.name[k], lease->len) != 0 || lease->name[lease->len])
        snprintf(kinds.wrong, sizeof kinds.wrong, "%s: name %.*s, size %zu",
                 lw_lease_kind_name(k), (int)lease->len, lease->name, lease->size);
    else if (lease->owner != kinds.owner[k])
        snprintf(kinds.wrong, sizeof kinds.wrong, "%s: owner %llu", lw_lease_kind_name(k),
                 (unsigned long long)lease->owner);
    else if (k == LW_LEASE_PERMIT ? !lease->permit || memcmp(lease->permit, &kinds.permit,
                                                              sizeof kinds.permit) != 0
                                  : lease->permit != NULL)
        snprintf(kinds.wrong, sizeof kinds.wrong, "%s: the permit's id", lw_lease_kind_name(k));
    else {
        size_t n = strlen(kinds.seen[k]);

        if (n + 1 < sizeof kinds.seen[k])
            kinds.seen[k][n] = what;
        if (what == 'l')
            kinds.reason[k] = reason;
    }
    pthread_mutex_unlock(&kinds.lock);
}

static void on_lease_risk(const struct lw_lease *lease, int at_risk, uint64_t left_ms, void *arg)
{
    (void)left_ms;
    kind_event(lease, at_risk ? 'r' : 's', 0, arg);
}

static void on_lease_lost(const struct lw_lease *lease, int reason, void *arg)
{
    kind_event(lease, 'l', reason, arg);
}

static void old_risk(const char *name, size_t len, uint64_t owner, int at_risk, uint64_t left_ms,
                     void *arg)
{
    (void)name, (void)len, (void)owner, (void)at_risk, (void)left_ms, (void)arg;
    atomic_fetch_add(&kinds.old_risk, 1);
}

static void old_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name, (void)len, (void)owner, (void)reason, (void)arg;
    atomic_fetch_add(&kinds.old_lost, 1);
}

/* Whether every kind has said as many events as `said` has ("r", "rs",
 * "rsl"). */
static int every_kind_said(const char *said)
{
    int all = 1;

    pthread_mutex_lock(&kinds.lock);
    for (int k = 0; k < KINDS; k++)
        all = all && strlen(kinds.seen[k]) >= strlen(said);
    pthread_mutex_unlock(&kinds.lock);
    return all;
}

/* How many times c is in s. */
static int times(const char *s, char c)
{
    int n = 0;

    for (; *s; s++)
        n += *s == c;
    return n;
}

/* Whether a kind's events were at risk, safe again, then lost: at risk
 * and safe in turns before the loss (a renewal held early in its period
 * may leave the lease under half proven when it is confirmed: the next
 * one's wait is a risk of its own). */
static int risk_safe_lost(const char *seen)
{
    size_t n = strlen(seen);

    if (n < 3 || seen[n - 1] != 'l')
        return 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (seen[i] != (i % 2 ? 's' : 'r'))
            return 0;
    return 1;
}

/* The metrics text has this sample, with this value. */
static int metric_is(struct lw_client *c, const char *sample, int value)
{
    char text[1 << 15], line[200];

    cr_assert_lt(lw_client_format_metrics(c, text, sizeof text), (int)sizeof text);
    snprintf(line, sizeof line, "\n%s %d\n", sample, value);
    return strstr(text, line) != NULL;
}

/*
 * A lock, a read hold, a write hold and a permit, all renewed by the
 * watchdog, behind a proxy: the link silent from the start, each at risk
 * (its acquire confirmed the last lease) within a tick or two of the
 * others, half a lease before it would be lost; the link back, each safe
 * again; then each one's keys deleted behind its back, each lost (not
 * owner) at its next renewal.  Told to both generations of callbacks, and
 * to the log by its noun.
 */
REDIS_TEST(production, every_kind_is_reported_as_such)
{
    static const char *const names[KINDS] = {"prod:kinds:l", "prod:kinds:r", "prod:kinds:w",
                                             "prod:kinds:s"};
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_lock *l[3];
    struct lw_semaphore *sem;
    char hex[LW_PERMIT_HEX_LEN + 1], line[200];
    int reports = 0;
    int (*make[3])(struct lw_client *, const void *, size_t, struct lw_lock **) = {
        lw_lock_new, lw_read_lock_new, lw_write_lock_new};

    cr_assert(p);
    client_config(&cfg, 1500, NULL);
    cfg.port = proxy_port(p);
    cfg.command_timeout_ms = 10000; /* a silent link is not timed out here */
    cfg.on_risk = old_risk;
    cfg.on_lost = old_lost;
    cfg.on_lease_risk = on_lease_risk;
    cfg.lease_risk_arg = &kinds;
    cfg.on_lease_lost = on_lease_lost;
    cfg.lease_lost_arg = &kinds;
    cfg.log = on_log;
    logged.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(make[k](c, names[k], strlen(names[k]), &l[k]), 0);
        kinds.name[k] = names[k];
        kinds.owner[k] = lw_owner_self();
    }
    cr_assert_eq(lw_semaphore_new(c, names[3], strlen(names[3]), &sem), 0);
    cr_assert_eq(lw_semaphore_try_set(sem, 2), 1);
    kinds.name[3] = names[3];

    for (int k = 0; k < 3; k++)
        cr_assert_eq(lw_lock_acquire(l[k], NULL), 0);
    cr_assert_eq(lw_permit_acquire(sem, 1, 0, 0, &kinds.permit), 0);
    kinds.owner[3] = lw_permit_owner(&kinds.permit);
    cr_assert_eq(proxy_hold(p, 1), 0); /* the first renewals go unanswered */
    cr_assert(wait_until(every_kind_said("r"), 5000), "not every kind at risk");
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert(wait_until(every_kind_said("rs"), 3000), "not every kind safe again");
    for (int k = 0; k < 3; k++)
        cr_assert_eq(lw_is_held(l[k]), 1, "%s", lw_lease_kind_name(k));

    redis_int("DEL %s", names[0]);
    redis_int("DEL %s", names[1]);
    redis_int("DEL %s", names[2]);
    redis_int("DEL %s", "{prod:kinds:s}:timeout");
    cr_assert(wait_until(every_kind_said("rsl"), 3000), "not every kind lost");
    pthread_mutex_lock(&kinds.lock);
    cr_assert_str_empty(kinds.wrong, "%s", kinds.wrong);
    for (int k = 0; k < KINDS; k++) {
        cr_assert(risk_safe_lost(kinds.seen[k]), "%s: %s", lw_lease_kind_name(k), kinds.seen[k]);
        cr_assert_eq(kinds.reason[k], LW_LOST_NOT_OWNER, "%s", lw_lease_kind_name(k));
        reports += (int)strlen(kinds.seen[k]) - 1;
        cr_log_info("%s: %s", lw_lease_kind_name(k), kinds.seen[k]);
    }
    pthread_mutex_unlock(&kinds.lock);
    cr_assert_eq(atomic_load(&kinds.old_risk), reports, "on_risk is called as before");
    cr_assert_eq(atomic_load(&kinds.old_lost), KINDS, "on_lost is called as before");

    /* The log names each by its noun; a permit by the id its holder saw. */
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "%s %s (owner %llu) at risk: ", lw_lease_kind_name(k),
                 names[k], (unsigned long long)lw_owner_self());
        cr_assert(logged_with(line, LW_LOG_WARN), "no line %s", line);
        snprintf(line, sizeof line, "%s %s (owner %llu) lost: not owner", lw_lease_kind_name(k),
                 names[k], (unsigned long long)lw_owner_self());
        cr_assert(logged_with(line, LW_LOG_ERROR), "no line %s", line);
    }
    snprintf(line, sizeof line, "permit %s (id %s) safe again", names[3],
             lw_permit_hex(&kinds.permit, hex));
    cr_assert(logged_with(line, LW_LOG_INFO), "no line %s", line);
    snprintf(line, sizeof line, "permit %s (id %s) lost: not owner", names[3], hex);
    cr_assert(logged_with(line, LW_LOG_ERROR), "no line %s", line);

    /* Counted by kind too. */
    cr_assert(metric_is(c, "leasewheel_leases_went_at_risk_total{kind=\"permit\"}",
                        times(kinds.seen[LW_LEASE_PERMIT], 'r')));
    cr_assert(metric_is(c, "leasewheel_leases_recovered_total{kind=\"read\"}",
                        times(kinds.seen[LW_LEASE_READ], 's')));
    cr_assert(metric_is(c, "leasewheel_leases_lost_total{kind=\"write\",reason=\"not_owner\"}", 1));
    cr_assert(metric_is(c, "leasewheel_locks_lost_total{reason=\"not_owner\"}", KINDS));
    cr_assert(metric_is(c, "leasewheel_leases_held{kind=\"lock\"}", 0));

    for (int k = 0; k < 3; k++)
        lw_lock_free(l[k]);
    lw_semaphore_free(sem);
    lw_client_free(c);
    proxy_stop(p);
}

Test(production, lease_kind_names)
{
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_LOCK), "lock");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_READ), "read lock");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_WRITE), "write lock");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_PERMIT), "permit");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_FAIR), "fair lock");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_PLACE), "place");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_TERM), "term");
    cr_assert_str_eq(lw_lease_kind_name(-1), "unknown");
    cr_assert_str_eq(lw_lease_kind_name(LW_LEASE_TERM + 1), "unknown");
}
