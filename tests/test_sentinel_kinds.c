/*
 * tests/test_sentinel_kinds.c - read holds, write holds and permits in
 * Sentinel mode, on a real master, two replicas and three sentinels
 * (tests/fixtures/redis_sentinel.h), as test_sentinel.c does for locks:
 * through a killed master, the ones its replicas had are kept and go on
 * being renewed on the new master, and the ones they never got (the
 * replicas cut off before the acquires) are reported lost to the
 * failover at once.  Every wait is bounded; every process is stopped by
 * pid.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "redis_sentinel.h"
#include "time_util.h"
#include "lost_util.h"
#include "log_util.h"

#define LEASE_MS 10000u /* outlasts the switch; renewed every 3.3 s */

static struct redis_sentinel rs;

static void setup(void)
{
    cr_assert_eq(redis_sentinel_start(&rs, "mymaster", NULL, NULL), 0,
                 "the Sentinel setup did not start");
}

static void teardown(void)
{
    redis_sentinel_stop(&rs);
}

static char addr_buf[128];
static const char *addrs[REDIS_SENTINEL_SENTINELS];

static struct lw_client *new_client(struct lost_log *log)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    char *save = NULL, *p;
    int n = 0;

    redis_sentinel_addrs(&rs, addr_buf, sizeof addr_buf);
    for (p = strtok_r(addr_buf, ",", &save); p && n < REDIS_SENTINEL_SENTINELS;
         p = strtok_r(NULL, ",", &save))
        addrs[n++] = p;
    cr_assert_eq(n, REDIS_SENTINEL_SENTINELS);
    lw_client_config_init(&cfg);
    cfg.sentinels = addrs;
    cfg.nsentinels = REDIS_SENTINEL_SENTINELS;
    cfg.sentinel_master = "mymaster";
    cfg.tick_ms = 10;
    cfg.watchdog_timeout_ms = LEASE_MS;
    cfg.command_timeout_ms = 3000;
    cfg.reconnect_min_ms = 20;
    cfg.reconnect_max_ms = 500;
    memset(log, 0, sizeof *log);
    cfg.on_lost = record_lost;
    cfg.lost_arg = log;
    cfg.log = log_to_stderr;
    cfg.log_level = LW_LOG_INFO;
    log_since = lw_clock_now();
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* An integer reply of data node i, or -1000 when none. */
static long long node_int(int i, const char *fmt, const char *arg)
{
    redisReply *r = redis_sentinel_command(&rs, i, fmt, arg);
    long long v = -1000;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r)
        freeReplyObject(r);
    return v;
}

/* The expiry (epoch ms) of permit p of semaphore name on data node i, or
 * -1 when it has none there. */
static long long permit_score(int i, const char *name, const struct lw_permit *p)
{
    char key[64];
    redisReply *r;
    long long v = -1;

    snprintf(key, sizeof key, "{%s}:timeout", name);
    r = redis_sentinel_command(&rs, i, "ZSCORE %s %b", key, p->id, (size_t)LW_PERMIT_ID_LEN);
    if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    if (r)
        freeReplyObject(r);
    return v;
}

/* A reading of a lease on data node i, positive when it has one: a key's
 * PTTL, a permit's expiry. */
typedef long long lease_reading(int i, const void *what);

static long long pttl_of(int i, const void *key)
{
    return node_int(i, "PTTL %s", key);
}

/* The lease renewed on data node i after this call began: a reading more
 * than 500 ms above the lowest seen (a TTL only falls, an expiry stays,
 * until a renewal).  When none came within a renewal period and more,
 * what was seen is logged. */
static int renewed_on(int i, lease_reading *read, const void *what)
{
    uint64_t t0 = now_ms();
    long long v = -1, low = -1;

    if (wait_until((v = read(i, what), low = v > 0 && (low < 0 || v < low) ? v : low,
                    low > 0 && v > low + 500),
                   LEASE_MS / 3 + 3000))
        return 1;
    cr_log_info("node %d: not renewed in %llu ms: lowest %lld, last %lld", i,
                (unsigned long long)(now_ms() - t0), low, v);
    return 0;
}

/* The lease renewed on the master the sentinels name, other than node
 * old.  Under load they may switch once more after the first failover
 * (they saw the new master down for a moment, and named the other
 * replica): the client follows the switch, and so does this check. */
static int renewed_on_master(int old, lease_reading *read, const void *what)
{
    for (int switches = 0; switches < 3; switches++) {
        int n = redis_sentinel_wait_master(&rs, old, 30000), now;

        if (n < 0)
            return 0;
        if (renewed_on(n, read, what))
            return 1;
        if ((now = redis_sentinel_wait_master(&rs, old, 30000)) == n)
            return 0;
        cr_log_info("the master switched again, from node %d to %d: checked there", n, now);
    }
    return 0;
}

/* A read hold, a write hold and a permit, each with the watchdog. */
struct kinds {
    struct lw_lock *read, *write;
    struct lw_semaphore *sem;
    struct lw_permit permit;
    char rname[16], wname[16], sname[16];
};

static void kinds_new(struct lw_client *c, struct kinds *k, const char *tag)
{
    snprintf(k->rname, sizeof k->rname, "r-%s", tag);
    snprintf(k->wname, sizeof k->wname, "w-%s", tag);
    snprintf(k->sname, sizeof k->sname, "s-%s", tag);
    cr_assert_eq(lw_read_lock_new(c, k->rname, strlen(k->rname), &k->read), 0);
    cr_assert_eq(lw_write_lock_new(c, k->wname, strlen(k->wname), &k->write), 0);
    cr_assert_eq(lw_semaphore_new(c, k->sname, strlen(k->sname), &k->sem), 0);
    cr_assert_eq(lw_semaphore_try_set(k->sem, 3), 1);
}

static void kinds_acquire(struct kinds *k)
{
    cr_assert_eq(lw_lock_acquire(k->read, NULL), 0);
    cr_assert_eq(lw_lock_acquire(k->write, NULL), 0);
    cr_assert_eq(lw_permit_acquire(k->sem, 1, 0, 0, &k->permit), 0);
}

static void kinds_free(struct kinds *k)
{
    lw_lock_free(k->read);
    lw_lock_free(k->write);
    lw_semaphore_free(k->sem);
}

/* The expiry of k's permit on data node i (a lease_reading). */
static long long permit_expiry_of(int i, const void *kinds)
{
    const struct kinds *k = kinds;

    return permit_score(i, k->sname, &k->permit);
}

/* The read hold's first timeout key. */
static void read_key(struct lw_client *c, const struct kinds *k, char *buf, size_t n)
{
    snprintf(buf, n, "{%s}:%s:%llu:rwlock_timeout:1", k->rname, lw_client_id(c),
             (unsigned long long)lw_owner_self());
}

/*
 * kill -9 the master.  The kinds acquired while the replicas were in step
 * ("kept") are on the new master and are renewed there: their TTLs and
 * the permit's expiry move on after the switch.  Those acquired with both
 * replicas cut off ("gone") are not on it: each is reported lost with
 * LW_LOST_FAILOVER as soon as the new master answers for it.
 */
Test(sentinel_kinds, killed_master_keeps_replicated_kinds_and_reports_the_rest,
     .init = setup, .fini = teardown, .timeout = 150)
{
    struct lost_log log;
    struct lw_client *c = new_client(&log);
    struct lw_client_stats st;
    struct kinds kept, gone;
    int m = redis_sentinel_master(&rs), n;
    int r1 = (m + 1) % REDIS_SENTINEL_DATA, r2 = (m + 2) % REDIS_SENTINEL_DATA;
    long long key_ttl, write_ttl, score;
    char key[160];
    uint64_t t0;

    cr_assert_geq(m, 0);
    kinds_new(c, &kept, "kept");
    kinds_new(c, &gone, "gone");
    kinds_acquire(&kept);
    read_key(c, &kept, key, sizeof key);
    cr_assert_eq(redis_sentinel_wait_synced(&rs, 5000), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r1, 1), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r2, 1), 0);
    kinds_acquire(&gone);
    cr_assert_eq(redis_sentinel_signal(&rs, m, SIGKILL), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r1, 0), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r2, 0), 0);
    t0 = now_ms();
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.failovers >= 1), 30000),
              "switch not seen");
    n = redis_sentinel_wait_master(&rs, m, 30000);
    cr_assert_geq(n, 0, "no promotion");

    /* The three the new master lacks: lost to the failover. */
    cr_assert(wait_until(atomic_load(&log.count) >= 3, 5000), "%d of 3 reported lost",
              atomic_load(&log.count));
    cr_log_info("kinds through a killed master: %d lost %llu ms after the kill",
                atomic_load(&log.count), (unsigned long long)(now_ms() - t0));
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.at_risk == 0 && st.went_at_risk >= 6),
                         10000),
              "the held kinds never re-checked");
    cr_assert_eq(atomic_load(&log.count), 3);
    cr_assert_eq(atomic_load(&log.by_reason[LW_LOST_FAILOVER]), 3);
    cr_assert_eq(st.lost_failover, 3);
    cr_assert_eq(st.locks_held, 3, "the three kept are still renewed");

    /* The three kept are on the new master, and renewed there. */
    key_ttl = node_int(n, "PTTL %s", key);
    write_ttl = node_int(n, "PTTL %s", kept.wname);
    score = permit_score(n, kept.sname, &kept.permit);
    cr_assert(key_ttl > 0 && write_ttl > 0 && score > 0, "kept: %lld %lld %lld", key_ttl,
              write_ttl, score);
    cr_assert_lt(permit_score(n, gone.sname, &gone.permit), 0);
    cr_assert(renewed_on_master(m, pttl_of, key), "the read hold not renewed on the new master");
    cr_assert(renewed_on_master(m, pttl_of, kept.wname),
              "the write hold not renewed on the new master");
    cr_assert(renewed_on_master(m, permit_expiry_of, &kept),
              "the permit not renewed on the new master");
    cr_assert_eq(lw_is_held(kept.read), 1);
    cr_assert_eq(lw_is_held(kept.write), 1);
    cr_assert_eq(lw_unlock(kept.read), 0);
    cr_assert_eq(lw_unlock(kept.write), 0);
    cr_assert_eq(lw_permit_release(kept.sem, &kept.permit, 1), 0);
    n = redis_sentinel_wait_master(&rs, m, 30000);
    cr_assert_eq(node_int(n, "EXISTS %s", kept.rname), 0);
    cr_assert_eq(node_int(n, "EXISTS %s", kept.wname), 0);
    cr_assert_lt(permit_score(n, kept.sname, &kept.permit), 0);
    kinds_free(&kept);
    kinds_free(&gone);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A multi-lock over two names, with the watchdog. */
static struct lw_multi *multi_over(struct lw_client *c, const char *a, const char *b)
{
    struct lw_lock *locks[2];
    struct lw_multi *mu = NULL;

    cr_assert_eq(lw_lock_new(c, a, strlen(a), &locks[0]), 0);
    cr_assert_eq(lw_lock_new(c, b, strlen(b), &locks[1]), 0);
    cr_assert_eq(lw_multi_new(locks, 2, &mu), 0);
    lw_lock_free(locks[0]);
    lw_lock_free(locks[1]);
    return mu;
}

/*
 * The same for multi-locks: a set taken while the replicas were in step
 * is on the new master and renewed there; a set taken with both replicas
 * cut off is lost to the failover, reported once for its two names.
 */
Test(sentinel_kinds, killed_master_keeps_a_replicated_set_and_reports_the_other_once,
     .init = setup, .fini = teardown, .timeout = 150)
{
    struct lost_log log;
    struct lw_client *c = new_client(&log);
    struct lw_client_stats st;
    struct lw_multi *kept = multi_over(c, "mk-a", "mk-b"), *gone = multi_over(c, "mg-a", "mg-b");
    int m = redis_sentinel_master(&rs), n;
    int r1 = (m + 1) % REDIS_SENTINEL_DATA, r2 = (m + 2) % REDIS_SENTINEL_DATA;

    cr_assert_geq(m, 0);
    cr_assert_eq(lw_multi_lock(kept), 0);
    cr_assert_eq(redis_sentinel_wait_synced(&rs, 5000), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r1, 1), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r2, 1), 0);
    cr_assert_eq(lw_multi_lock(gone), 0);
    cr_assert_eq(redis_sentinel_signal(&rs, m, SIGKILL), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r1, 0), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, r2, 0), 0);
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.failovers >= 1), 30000),
              "switch not seen");
    n = redis_sentinel_wait_master(&rs, m, 30000);
    cr_assert_geq(n, 0, "no promotion");

    cr_assert(wait_until(atomic_load(&log.count) >= 1, 5000), "the lost set never reported");
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.at_risk == 0), 10000),
              "the held names never re-checked");
    cr_assert_eq(wait_until(atomic_load(&log.count) > 1, 1000), 0, "the set reported twice");
    cr_assert_eq(atomic_load(&log.by_reason[LW_LOST_FAILOVER]), 1);
    cr_assert_eq(st.locks_held, 2, "the kept set's two names are still renewed");
    cr_assert(renewed_on_master(m, pttl_of, "mk-a"), "mk-a not renewed on the new master");
    cr_assert(renewed_on_master(m, pttl_of, "mk-b"), "mk-b not renewed on the new master");
    cr_assert_eq(lw_multi_unlock(gone), LW_ENOTOWNER);
    cr_assert_eq(lw_multi_unlock(kept), 0);
    n = redis_sentinel_wait_master(&rs, m, 30000);
    cr_assert_eq(node_int(n, "EXISTS %s", "mk-a"), 0);
    cr_assert_eq(node_int(n, "EXISTS %s", "mk-b"), 0);
    lw_multi_free(kept);
    lw_multi_free(gone);
    cr_assert_eq(lw_client_free(c), 0);
}
