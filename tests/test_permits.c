/*
 * tests/test_permits.c - semaphores whose permits expire
 * (<leasewheel/semaphore.h>), on a real Redis, interleaved with Redisson's
 * own RPermitExpirableSemaphore scripts (redisson_semaphore.h, each
 * checked against its SHA1 before use): the layout as Redisson reads it,
 * each side reclaiming the other's expired permits, wake-ups by message,
 * all or none, the missing semaphore, release by id from any thread; the
 * permit watchdog (renewal, loss, max hold), on one Redis and a cluster.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "client_base.h"
#include "scripts.h"
#include "lock_util.h"
#include "attempts_util.h"
#include "proxy.h"
#include "cluster_util.h"
#include "redis_cluster.h"
#include "redisson_semaphore.h"

#define SEM "jobs"
#define SEM_TIMEOUT "{jobs}:timeout"
#define SEM_CHANNEL "redisson_sc:{jobs}"
#define NEVER "922337203685477"

/* ---- Redisson's side: its scripts, by EVAL on the test's own connection ---- */

static long long epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* EVAL script (after SCRIPT LOAD has answered its SHA1) with nkeys keys
 * and then args: each a string, or a permit's 16 bytes when its len is
 * given. */
static redisReply *rs_eval(const char *script, const char *sha, int argc, const char **argv,
                           const size_t *lens)
{
    redisContext *ctx = redisConnectUnix(srv.unix_path);
    const char *full[16];
    size_t full_lens[16];
    redisReply *r;

    cr_assert(ctx && !ctx->err, "no connection to the server");
    r = redisCommand(ctx, "SCRIPT LOAD %s", script);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "SCRIPT LOAD failed");
    cr_assert_str_eq(r->str, sha, "Redisson's script is not the one quoted");
    freeReplyObject(r);
    full[0] = "EVAL", full_lens[0] = 4;
    full[1] = script, full_lens[1] = strlen(script);
    for (int i = 0; i < argc; i++) {
        full[2 + i] = argv[i];
        full_lens[2 + i] = lens && lens[i] ? lens[i] : strlen(argv[i]);
    }
    r = redisCommandArgv(ctx, argc + 2, full, full_lens);
    cr_assert(r, "EVAL failed");
    redisFree(ctx);
    return r;
}

static long long reply_int(redisReply *r)
{
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? atoll(r->str)
                                                  : -1000;

    freeReplyObject(r);
    return v;
}

static int rs_try_set(int n)
{
    char s[16];

    snprintf(s, sizeof s, "%d", n);
    return (int)reply_int(rs_eval(RS_TRY_SET, RS_TRY_SET_SHA, 5,
                                  (const char *[]){"2", SEM, SEM_CHANNEL, s, "publish"}, NULL));
}

static long long rs_available(void)
{
    char now[24];

    snprintf(now, sizeof now, "%lld", epoch_ms());
    return reply_int(rs_eval(RS_AVAILABLE, RS_AVAILABLE_SHA, 6,
                             (const char *[]){"3", SEM, SEM_TIMEOUT, SEM_CHANNEL, now, "publish"},
                             NULL));
}

/* Redisson's tryAcquire of one permit with id for lease_ms: 1 acquired,
 * 0 not. */
static int rs_try_acquire(const struct lw_permit *id, long long lease_ms)
{
    char expiry[24], now[24];
    redisReply *r;
    int got;

    snprintf(expiry, sizeof expiry, "%lld", epoch_ms() + lease_ms);
    snprintf(now, sizeof now, "%lld", epoch_ms());
    r = rs_eval(RS_TRY_ACQUIRE, RS_TRY_ACQUIRE_SHA, 10,
                (const char *[]){"3", SEM, SEM_TIMEOUT, SEM_CHANNEL, "1", expiry, now, NEVER,
                                 "publish", (const char *)id->id},
                (size_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0, LW_PERMIT_ID_LEN});
    got = (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
          strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    return got;
}

/* Redisson's release of one id: 1 released, 0 not (or expired). */
static int rs_release(const struct lw_permit *id)
{
    char now[24];

    snprintf(now, sizeof now, "%lld", epoch_ms());
    return (int)reply_int(rs_eval(
        RS_RELEASE, RS_RELEASE_SHA, 8,
        (const char *[]){"3", SEM, SEM_CHANNEL, SEM_TIMEOUT, (const char *)id->id, "1", now,
                         "publish"},
        (size_t[]){0, 0, 0, 0, LW_PERMIT_ID_LEN, 0, 0, 0}));
}

/* Redisson's release of several ids at once (RedissonPermitExpirableSemaphore
 * releaseAsync(List), redisson 4.7, verbatim): it publishes the number
 * released, not the count available. */
#define RS_RELEASE_MANY_SHA "cf3ab77b1c0ae1226ae0e06e5cb18ee75f56c96b"
#define RS_RELEASE_MANY                                                         \
    "for i = 4, #ARGV, 1 do local expire = redis.call('zscore', KEYS[3],"       \
    " ARGV[i]);if expire== false or tonumber(expire) <= tonumber(ARGV[2]) then" \
    " return 0;end; end; local expiredIds = redis.call('zrangebyscore',"        \
    " KEYS[3], 0, ARGV[2], 'limit', 0, -1); if #expiredIds > 0 then"            \
    " redis.call('zrem', KEYS[3], unpack(expiredIds)); local value ="           \
    " redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then"  \
    " redis.call(ARGV[3], KEYS[2], value); end; end; local keys = {}; for i ="  \
    " 4, #ARGV, 1 do table.insert(keys, ARGV[i]); end; local removed ="         \
    " redis.call('zrem', KEYS[3], unpack(keys)); redis.call('incrby', KEYS[1]," \
    " removed); redis.call(ARGV[3], KEYS[2], removed); return removed;"

/* Redisson's release of n ids at once: the number released (0: none). */
static long long rs_release_many(const struct lw_permit *ids, int n)
{
    const char *argv[16] = {"3", SEM, SEM_CHANNEL, SEM_TIMEOUT, NULL, NULL, "publish"};
    size_t lens[16] = {0};
    char count[8], now[24];

    cr_assert_leq(n, 7); /* rs_eval() takes 14 arguments */
    snprintf(count, sizeof count, "%d", n);
    snprintf(now, sizeof now, "%lld", epoch_ms());
    argv[4] = count;
    argv[5] = now;
    for (int i = 0; i < n; i++) {
        argv[7 + i] = (const char *)ids[i].id;
        lens[7 + i] = LW_PERMIT_ID_LEN;
    }
    return reply_int(rs_eval(RS_RELEASE_MANY, RS_RELEASE_MANY_SHA, 7 + n, argv, lens));
}

/* Redisson's getLeaseTime: ms left, -1 never, 0 unknown. */
static long long rs_lease_left(const struct lw_permit *id)
{
    char now[24];

    snprintf(now, sizeof now, "%lld", epoch_ms());
    return reply_int(rs_eval(RS_GET_LEASE_TIME, RS_GET_LEASE_TIME_SHA, 8,
                             (const char *[]){"3", SEM, SEM_TIMEOUT, SEM_CHANNEL,
                                              (const char *)id->id, NEVER, now, "publish"},
                             (size_t[]){0, 0, 0, 0, LW_PERMIT_ID_LEN, 0, 0, 0}));
}

/* Redisson's updateLeaseTime to now + lease_ms: 1 updated, 0 not there. */
static int rs_update_lease(const struct lw_permit *id, long long lease_ms)
{
    char expiry[24], now[24];

    snprintf(expiry, sizeof expiry, "%lld", epoch_ms() + lease_ms);
    snprintf(now, sizeof now, "%lld", epoch_ms());
    return (int)reply_int(rs_eval(RS_UPDATE_LEASE, RS_UPDATE_LEASE_SHA, 8,
                                  (const char *[]){"3", SEM, SEM_TIMEOUT, SEM_CHANNEL,
                                                   (const char *)id->id, expiry, now, "publish"},
                                  (size_t[]){0, 0, 0, 0, LW_PERMIT_ID_LEN, 0, 0, 0}));
}

/* The score of id in the zset, as Redis has it (-1: not there). */
static long long score_of(const struct lw_permit *id)
{
    redisReply *r = redis_server_command(&srv, "ZSCORE %s %b", SEM_TIMEOUT, id->id,
                                         (size_t)LW_PERMIT_ID_LEN);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    if (r)
        freeReplyObject(r);
    return v;
}

/* How many connections are subscribed to the semaphore's channel. */
static long long subscribers(void)
{
    redisReply *r = redis_server_command(&srv, "PUBSUB NUMSUB %s", SEM_CHANNEL);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer
                                                                        : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

static struct lw_semaphore *new_sem(struct lw_client *c)
{
    struct lw_semaphore *s = NULL;

    cr_assert_eq(lw_semaphore_new(c, SEM, strlen(SEM), &s), 0);
    return s;
}

static int64_t available(struct lw_semaphore *s)
{
    int64_t v = -1000;

    cr_assert_eq(lw_semaphore_available(s, &v), 0);
    return v;
}

static int64_t acquired(struct lw_semaphore *s)
{
    int64_t v = -1000;

    cr_assert_eq(lw_semaphore_acquired(s, &v), 0);
    return v;
}

/* The line behind the first waiter (FIRST_WAITER_SETTLED(), attempts_util.h)
 * has queued, and the first's last answer is in, once an availability
 * read (one more script) has come back: the count to compare with. */
static long long lined_up(struct lw_semaphore *s, long long start)
{
    (void)available(s);
    cr_assert_eq(evalsha_calls() - start, 3, "the waiters behind the first sent nothing");
    return start + 3;
}

/* ---- The tests ---- */

/* Every Redisson script the tests use is the one its SHA1 names. */
REDIS_TEST(permits, redissons_scripts_are_the_quoted_ones)
{
    const char *scripts[][2] = {{RS_TRY_ACQUIRE, RS_TRY_ACQUIRE_SHA},
                                {RS_RELEASE, RS_RELEASE_SHA},
                                {RS_AVAILABLE, RS_AVAILABLE_SHA},
                                {RS_UPDATE_LEASE, RS_UPDATE_LEASE_SHA},
                                {RS_TRY_SET, RS_TRY_SET_SHA},
                                {RS_ADD, RS_ADD_SHA},
                                {RS_SET, RS_SET_SHA},
                                {RS_GET_LEASE_TIME, RS_GET_LEASE_TIME_SHA}};

    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        redisReply *r = redis_server_command(&srv, "SCRIPT LOAD %s", scripts[i][0]);

        cr_assert(r && r->type == REDIS_REPLY_STRING);
        cr_assert_str_eq(r->str, scripts[i][1]);
        freeReplyObject(r);
    }
}

/* Our permits as Redisson reads them, and Redisson's as we do: the count,
 * the zset of 16-byte ids scored with their expiry in epoch ms, leases
 * read and changed by Redisson, releases across the two. */
REDIS_TEST(permits, layout_and_ids_as_redisson_reads_them)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit mine, theirs, parsed;
    char hex[LW_PERMIT_HEX_LEN + 1];
    long long before = epoch_ms(), left;

    cr_assert_eq(lw_semaphore_try_set(s, 3), 1);
    cr_assert_eq(lw_semaphore_try_set(s, 5), 0, "an existing semaphore keeps its count");
    cr_assert_eq(rs_available(), 3);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 60000, &mine), 0);
    cr_assert_eq(redis_int("GET %s", SEM), 2);
    cr_assert_geq(score_of(&mine), before + 60000);
    cr_assert_leq(score_of(&mine), epoch_ms() + 60000);
    cr_assert_eq(rs_available(), 2);
    left = rs_lease_left(&mine);
    cr_assert(left > 55000 && left <= 60000, "Redisson reads %lld ms left", left);
    cr_assert_eq(rs_update_lease(&mine, 120000), 1);
    cr_assert_gt(rs_lease_left(&mine), 115000);

    /* The id's hex form is Redisson's: 32 lowercase characters. */
    lw_permit_hex(&mine, hex);
    cr_assert_eq(strlen(hex), 32);
    cr_assert_eq(strspn(hex, "0123456789abcdef"), 32);
    cr_assert_eq(lw_permit_from_hex(hex, &parsed), 0);
    cr_assert_eq(memcmp(&parsed, &mine, sizeof mine), 0);
    cr_assert_eq(lw_permit_from_hex("xyz", &parsed), LW_EINVAL);

    /* Redisson's permit, counted and released by us; ours by Redisson. */
    cr_assert_eq(lw_permit_from_hex("00112233445566778899aabbccddeeff", &theirs), 0);
    cr_assert_eq(rs_try_acquire(&theirs, 60000), 1);
    cr_assert_eq(available(s), 1);
    cr_assert_eq(acquired(s), 2);
    cr_assert_eq(lw_permit_release(s, &theirs, 1), 0);
    cr_assert_eq(rs_release(&mine), 1);
    cr_assert_eq(rs_available(), 3);
    cr_assert_eq(acquired(s), 0);
    cr_assert_eq(lw_permit_release(s, &mine, 1), LW_ENOPERMIT, "released twice");
    cr_assert_eq(available(s), 3);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Set-up: set makes available + acquired = N, add may be negative; a
 * count set by Redisson is ours too. */
REDIS_TEST(permits, set_and_add)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit p[2];
    int64_t v = 0;

    cr_assert_eq(rs_try_set(4), 1);
    cr_assert_eq(lw_permit_acquire(s, 2, 0, 60000, p), 0);
    cr_assert_eq(lw_semaphore_set(s, 5), 0);
    cr_assert_eq(available(s), 3);
    cr_assert_eq(acquired(s), 2);
    cr_assert_eq(lw_semaphore_add(s, -4, &v), 0);
    cr_assert_eq(v, -1);
    cr_assert_eq(rs_available(), -1, "Redisson reads the same negative count");
    cr_assert_eq(lw_permit_release(s, p, 2), 0);
    cr_assert_eq(available(s), 1);
    cr_assert_eq(lw_semaphore_set(s, 2), 0);
    cr_assert_eq(available(s), 2);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* An acquire on a semaphore nobody created fails at once, even one that
 * would wait for ever; so do the queries.  add creates it. */
REDIS_TEST(permits, missing_semaphore_fails_at_once)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit p;
    int64_t v;
    uint64_t t0 = now_ms();

    cr_assert_eq(lw_permit_acquire(s, 1, LW_WAIT_FOREVER, 10000, &p), LW_ENOSEM);
    cr_assert_lt(now_ms() - t0, 5000);
    cr_assert_eq(lw_semaphore_available(s, &v), LW_ENOSEM);
    cr_assert_eq(lw_semaphore_acquired(s, &v), LW_ENOSEM);
    cr_assert_eq(lw_permit_acquire(s, 0, 0, 10000, &p), LW_EINVAL);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 5, &p), LW_ELEASE);
    cr_assert_eq(lw_semaphore_add(s, 1, &v), 0);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 10000, &p), 0);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* n permits are taken all or none: too few free, nothing is taken. */
REDIS_TEST(permits, n_permits_all_or_none)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit a[2], b[2];

    cr_assert_eq(lw_semaphore_try_set(s, 3), 1);
    cr_assert_eq(lw_permit_acquire(s, 2, 0, 60000, a), 0);
    cr_assert_neq(memcmp(&a[0], &a[1], sizeof a[0]), 0);
    cr_assert_eq(lw_permit_acquire(s, 2, 50, 60000, b), LW_ELOCKED);
    cr_assert_eq(available(s), 1);
    cr_assert_eq(acquired(s), 2);
    cr_assert_eq(score_of(&b[0]), -1);
    cr_assert_eq(lw_permit_release(s, a, 2), 0);
    cr_assert_eq(lw_permit_acquire(s, 2, 0, 60000, b), 0);
    /* A release of several with one unknown releases none. */
    cr_assert_eq(lw_permit_release(s, (struct lw_permit[]){b[0], a[0]}, 2), LW_ENOPERMIT);
    cr_assert_eq(acquired(s), 2);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A Redisson permit past its lease is reclaimed by our acquire, which
 * waited for its expiry (the timer at the nearest expiry: an expiry
 * publishes nothing), and it is gone from the zset. */
REDIS_TEST(permits, redisson_permit_past_lease_reclaimed)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit theirs, mine;
    uint64_t t0;

    cr_assert_eq(rs_try_set(1), 1);
    cr_assert_eq(lw_permit_from_hex("ffeeddccbbaa99887766554433221100", &theirs), 0);
    cr_assert_eq(rs_try_acquire(&theirs, 300), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 60000, &mine), LW_ELOCKED);
    t0 = now_ms();
    cr_assert_eq(lw_permit_acquire(s, 1, 10000, 60000, &mine), 0);
    cr_assert_lt(now_ms() - t0, 5000, "waited for the deadline, not the expiry");
    cr_assert_eq(score_of(&theirs), -1);
    cr_assert_eq(rs_release(&theirs), 0, "Redisson's release of a reclaimed permit");
    cr_assert_eq(rs_available(), 0);
    cr_assert_eq(acquired(s), 1);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Our permit past its lease: Redisson's acquire reclaims it, and our
 * release of it then fails without giving it back twice. */
REDIS_TEST(permits, expired_permit_released_once)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit mine, theirs;

    cr_assert_eq(lw_semaphore_try_set(s, 1), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 100, &mine), 0);
    cr_assert_eq(lw_permit_from_hex("0123456789abcdef0123456789abcdef", &theirs), 0);
    cr_assert(wait_until(rs_try_acquire(&theirs, 60000), 5000), "never reclaimed");
    cr_assert_eq(lw_permit_release(s, &mine, 1), LW_ENOPERMIT);
    cr_assert_eq(available(s), 0);
    cr_assert_eq(rs_release(&theirs), 1);
    cr_assert_eq(available(s), 1);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Waiters are woken by the release's message, not their timers (the
 * permits held have a minute of lease): one release, one waiter served;
 * two, both; the oldest first. */
static uint64_t waiting(struct lw_client *c)
{
    struct lw_client_stats st;

    lw_client_get_stats(c, &st);
    return st.waiters;
}

/* The waiters are counted in the client's `waiters`, as a lock's are. */
REDIS_TEST(permits, waiters_woken_by_message)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit held[2], w[3];
    struct outcome o[3];
    uint64_t t0;

    cr_assert_eq(lw_semaphore_try_set(s, 2), 1);
    cr_assert_eq(lw_permit_acquire(s, 2, 0, 60000, held), 0);
    for (int i = 0; i < 3; i++) {
        memset(&o[i], 0, sizeof o[i]);
        tally_init(&o[i].tally);
        cr_assert_eq(lw_permit_acquire_async(s, 1, 30000, 60000, &w[i], on_outcome, &o[i]), 0);
    }
    /* The three answered "too few" (their attempts were pipelined ahead
     * of the subscription, which the first one's reply asked for). */
    cr_assert(wait_until(subscribers() == 1, 5000), "never subscribed");
    cr_assert(wait_until(waiting(c) == 3, 5000), "%llu waiters counted",
              (unsigned long long)waiting(c));
    t0 = now_ms();
    cr_assert_eq(rs_release(&held[0]), 1);
    cr_assert_eq(tally_wait(&o[0].tally, 1, 5000), 1, "the oldest waiter was not woken");
    cr_assert_lt(now_ms() - t0, 5000);
    cr_assert_eq(atomic_load(&o[0].err), 0);
    cr_assert_eq(tally_wait(&o[1].tally, 1, 100), 0, "one permit served two waiters");
    cr_assert_eq(lw_permit_release(s, &held[1], 1), 0);
    cr_assert_eq(tally_wait(&o[1].tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o[1].err), 0);
    cr_assert_eq(lw_permit_release(s, w, 2), 0);
    cr_assert_eq(tally_wait(&o[2].tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o[2].err), 0);
    cr_assert_eq(available(s), 1);
    cr_assert_eq(waiting(c), 0);

    for (int i = 0; i < 3; i++)
        tally_destroy(&o[i].tally);
    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* ---- Who a message wakes, and how many attempts it costs ---- */

/* Waiters woken at once: the first to hear it got its permit looks at the
 * zset from its callback, on the engine thread, before that thread sends
 * anything more.  Woken one after another, its permit alone would be
 * there; woken together, every attempt went in one write ahead of its
 * reply. */
struct together {
    struct tally tally;
    _Atomic int err;
    _Atomic long long first_saw; /* permits acquired then; -1 none yet */
};

static void on_permit_in(int err, int64_t value, void *arg)
{
    struct together *t = arg;

    (void)value;
    if (err)
        atomic_store(&t->err, err);
    if (atomic_load(&t->first_saw) == -1)
        atomic_store(&t->first_saw, redis_int("ZCARD %s", SEM_TIMEOUT));
    tally_add(&t->tally, err);
}

/* Redisson's release of three permits at once publishes 3: the three
 * oldest of four waiters get in together, one attempt each.  The fourth
 * queued behind the first without trying, so it has never heard when a
 * permit expires: once first, it asks once, at the next tick, and then
 * waits (no permit is left for it) until the next release. */
REDIS_TEST(permits, a_release_of_three_wakes_three_at_once)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit theirs[3], w[4];
    struct together t = {.first_saw = -1}, last = {.first_saw = -1};
    long long before;

    cr_assert_eq(rs_try_set(3), 1);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(lw_permit_from_hex(i == 0   ? "00000000000000000000000000000001"
                                        : i == 1 ? "00000000000000000000000000000002"
                                                 : "00000000000000000000000000000003",
                                        &theirs[i]),
                     0);
        cr_assert(rs_try_acquire(&theirs[i], 60000));
    }
    tally_init(&t.tally);
    tally_init(&last.tally);
    before = evalsha_calls();
    cr_assert_eq(lw_permit_acquire_async(s, 1, 30000, 60000, &w[0], on_permit_in, &t), 0);
    FIRST_WAITER_SETTLED(subscribers(), before);
    for (int i = 1; i < 3; i++)
        cr_assert_eq(lw_permit_acquire_async(s, 1, 30000, 60000, &w[i], on_permit_in, &t), 0);
    cr_assert_eq(lw_permit_acquire_async(s, 1, 30000, 60000, &w[3], on_permit_in, &last), 0);
    before = lined_up(s, before);
    cr_assert_eq(tally_wait(&t.tally, 1, 0) + tally_wait(&last.tally, 1, 0), 0);

    cr_assert_eq(rs_release_many(theirs, 3), 3);
    cr_assert_eq(tally_wait(&t.tally, 3, 5000), 3, "the three oldest got in");
    cr_assert_eq(atomic_load(&t.err), 0);
    cr_assert_eq(atomic_load(&t.first_saw), 3,
                 "when the first heard it got its permit, %lld were acquired, not 3",
                 atomic_load(&t.first_saw));
    evalsha_reach(before, 4);
    cr_assert_eq(evalsha_settled() - before, 4, "one attempt each, and the fourth's one ask");
    cr_assert_eq(tally_wait(&last.tally, 1, 0), 0, "no permit was left for the fourth");

    cr_assert_eq(lw_permit_release(s, &w[0], 1), 0);
    cr_assert_eq(tally_wait(&last.tally, 1, 5000), 1, "the next release let it in");
    cr_assert_eq(atomic_load(&last.err), 0);
    cr_assert_eq(lw_permit_release(s, &w[1], 3), 0);
    cr_assert_eq(available(s), 3);
    tally_destroy(&t.tally);
    tally_destroy(&last.tally);
    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A count published by hand wakes that many permits' worth, oldest first,
 * a waiter wanting two counting as two: "3" lets in the waiter of two and
 * the next of one; "0" wakes no one.  Of the two behind them, the first
 * asks once (it queued without trying, as the last waiter of the test
 * above) and the other sends nothing. */
REDIS_TEST(permits, a_count_published_by_hand_wakes_that_many)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit two[2], one[3];
    struct outcome o[4];
    long long before;

    cr_assert_eq(lw_semaphore_try_set(s, 0), 1);
    for (int i = 0; i < 4; i++) {
        memset(&o[i], 0, sizeof o[i]);
        tally_init(&o[i].tally);
    }
    before = evalsha_calls();
    cr_assert_eq(lw_permit_acquire_async(s, 2, 30000, 60000, two, on_outcome, &o[0]), 0);
    FIRST_WAITER_SETTLED(subscribers(), before);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(
            lw_permit_acquire_async(s, 1, 30000, 60000, &one[i], on_outcome, &o[1 + i]), 0);
    before = lined_up(s, before);

    freeReplyObject(redis_server_command(&srv, "PUBLISH %s 0", SEM_CHANNEL));
    freeReplyObject(redis_server_command(&srv, "INCRBY %s 3", SEM));
    freeReplyObject(redis_server_command(&srv, "PUBLISH %s 3", SEM_CHANNEL));
    cr_assert_eq(tally_wait(&o[0].tally, 1, 5000), 1, "the waiter of two got in");
    cr_assert_eq(tally_wait(&o[1].tally, 1, 5000), 1, "the next, of one, got in");
    cr_assert_eq(atomic_load(&o[0].err) + atomic_load(&o[1].err), 0);
    evalsha_reach(before, 3);
    cr_assert_eq(evalsha_settled() - before, 3,
                 "two attempts, and the next waiter's one ask: none for the 0, none from "
                 "the last");
    cr_assert_eq(tally_wait(&o[2].tally, 1, 0) + tally_wait(&o[3].tally, 1, 0), 0);
    cr_assert_eq(available(s), 0);

    cr_assert_eq(lw_permit_release(s, two, 2), 0);
    cr_assert_eq(tally_wait(&o[2].tally, 1, 5000) + tally_wait(&o[3].tally, 1, 5000), 2,
                 "a release of two let the last two in");
    cr_assert_eq(lw_permit_release(s, one, 3), 0);
    cr_assert_eq(available(s), 3);
    for (int i = 0; i < 4; i++)
        tally_destroy(&o[i].tally);
    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

struct release_call {
    struct lw_semaphore *sem;
    struct lw_permit permit;
    int rc;
};

static void *release_thread(void *arg)
{
    struct release_call *call = arg;

    call->rc = lw_permit_release(call->sem, &call->permit, 1);
    return NULL;
}

/* A permit is a value: acquired on one thread, released on another. */
REDIS_TEST(permits, release_by_another_thread)
{
    struct lw_client *c = new_client(3000, NULL);
    struct release_call call = {0};
    pthread_t t;

    call.sem = new_sem(c);
    cr_assert_eq(lw_semaphore_try_set(call.sem, 1), 1);
    cr_assert_eq(lw_permit_acquire(call.sem, 1, 0, 60000, &call.permit), 0);
    cr_assert_eq(pthread_create(&t, NULL, release_thread, &call), 0);
    pthread_join(t, NULL);
    cr_assert_eq(call.rc, 0);
    cr_assert_eq(available(call.sem), 1);
    cr_assert_eq(lw_permit_release(call.sem, &call.permit, 1), LW_ENOPERMIT);

    lw_semaphore_free(call.sem);
    cr_assert_eq(lw_client_free(c), 0);
}

/* ---- The permit watchdog ---- */

/* on_lost for permits: how many, and the last one's name, owner, reason. */
struct permit_lost {
    _Atomic int count;
    _Atomic int reason;
    _Atomic uint64_t owner;
    char name[64];
};

static void record_permit_lost(const char *name, size_t len, uint64_t owner, int reason,
                               void *arg)
{
    struct permit_lost *l = arg;

    if (len < sizeof l->name) {
        memcpy(l->name, name, len);
        l->name[len] = 0;
    }
    atomic_store(&l->owner, owner);
    atomic_store(&l->reason, reason);
    atomic_fetch_add(&l->count, 1);
}

/* A client renewing a 300 ms watchdog lease every 100 ms, with a 20 ms
 * clock-skew allowance. */
static struct lw_client *watchdog_client(struct permit_lost *lost)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, 300, NULL);
    cfg.permit_clock_skew_ms = 20;
    memset(lost, 0, sizeof *lost);
    cfg.on_lost = record_permit_lost;
    cfg.lost_arg = lost;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

static uint64_t confirmed(struct lw_client *c)
{
    struct lw_client_stats st;

    lw_client_get_stats(c, &st);
    return st.renewals_confirmed;
}

/* n more renewals confirmed than now, within 5 s. */
static int renewed_more(struct lw_client *c, uint64_t n)
{
    uint64_t base = confirmed(c);

    return wait_until(confirmed(c) >= base + n, 5000);
}

/* A Redisson permit past its lease is reclaimed, by Redisson's own count,
 * while ours, acquired with lease 0, is renewed past many of its leases. */
REDIS_TEST(permit_watchdog, renewed_while_redissons_expires)
{
    struct permit_lost lost;
    struct lw_client *c = watchdog_client(&lost);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit mine, theirs;
    long long first;

    cr_assert_eq(rs_try_set(2), 1);
    cr_assert_eq(lw_permit_from_hex("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &theirs), 0);
    cr_assert_eq(rs_try_acquire(&theirs, 300), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &mine), 0);
    first = score_of(&mine);
    cr_assert_leq(first, epoch_ms() + 300);
    cr_assert(renewed_more(c, 12), "renewals stopped"); /* 4 leases */
    cr_assert_eq(rs_available(), 1, "Redisson's expired permit was not reclaimed");
    cr_assert_eq(score_of(&theirs), -1);
    cr_assert_gt(score_of(&mine), first, "never renewed");
    cr_assert_gt(score_of(&mine), epoch_ms());
    cr_assert_gt(rs_lease_left(&mine), 0, "Redisson reads it as expired");
    cr_assert_eq(atomic_load(&lost.count), 0);
    cr_assert_eq(lw_permit_release(s, &mine, 1), 0);
    cr_assert_eq(rs_available(), 2);
    cr_assert_eq(atomic_load(&lost.count), 0, "a released permit reported lost");

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Released by somebody else (Redisson's release of our id): on_lost names
 * the semaphore and the permit, and later renewals never add it back. */
REDIS_TEST(permit_watchdog, released_by_another_is_lost_not_readded)
{
    struct permit_lost lost;
    struct lw_client *c = watchdog_client(&lost);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit mine, other;

    cr_assert_eq(lw_semaphore_try_set(s, 2), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &mine), 0);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &other), 0);
    cr_assert_eq(rs_release(&mine), 1);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 5000), "never reported lost");
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_NOT_OWNER);
    cr_assert_str_eq(lost.name, SEM);
    cr_assert_eq(atomic_load(&lost.owner), lw_permit_owner(&mine));
    cr_assert(renewed_more(c, 6), "the other permit's renewals stopped");
    cr_assert_eq(score_of(&mine), -1, "a lost permit was added back");
    cr_assert_gt(score_of(&other), epoch_ms());
    cr_assert_eq(atomic_load(&lost.count), 1);
    cr_assert_eq(lw_permit_release(s, &mine, 1), LW_ENOPERMIT);
    cr_assert_eq(available(s), 1);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Redis stopped past the lease (SIGSTOP): the permit is reported lost;
 * once Redis runs again, it is reclaimed (by the clock, at the latest a
 * lease after a renewal caught in the stall) and never added back. */
REDIS_TEST(permit_watchdog, stalled_past_lease_is_lost_not_readded)
{
    struct permit_lost lost;
    struct lw_client *c = watchdog_client(&lost);
    struct lw_semaphore *s = new_sem(c);
    struct lw_permit mine, fresh;

    cr_assert_eq(lw_semaphore_try_set(s, 2), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &mine), 0);
    cr_assert(renewed_more(c, 2));
    cr_assert_eq(redis_server_signal(&srv, SIGSTOP), 0);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 5000), "never reported lost");
    cr_assert_eq(redis_server_signal(&srv, SIGCONT), 0);
    cr_assert_eq(lw_permit_acquire(s, 1, 5000, 0, &fresh), 0);
    cr_assert(wait_until(available(s) == 1, 5000), "the lost permit never came back");
    cr_assert(renewed_more(c, 6), "the fresh permit's renewals stopped");
    cr_assert_eq(score_of(&mine), -1, "a lost permit was added back");
    cr_assert_eq(available(s), 1);
    cr_assert_eq(atomic_load(&lost.count), 1);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The renewal scripts themselves, both layouts (names in KEYS: one
 * Redis's batches, and a cluster's entry sent alone; names in ARGV: a
 * cluster node's batch, which the tests above do not reach), on a name
 * with a hash tag of its own: per permit 1 renewed (scored Redis's TIME +
 * the lease), 0 gone, then Redis's clock; the expired Redisson permit
 * reclaimed to the count on the way. */
REDIS_TEST(permit_watchdog, renewal_scripts_both_layouts)
{
    static const char name[] = "{q}jobs", timeout[] = "{q}jobs:timeout";
    struct lw_permit mine, gone, old;
    long long base = epoch_ms(); /* Redis's clock too: the same machine's */
    redisReply *r;

    memset(&mine, 1, sizeof mine);
    memset(&gone, 2, sizeof gone);
    memset(&old, 3, sizeof old);
    for (int layout = 0; layout < 2; layout++) {
        redisContext *ctx = redisConnectUnix(srv.unix_path);
        const char *argv[16];
        size_t lens[16];
        int argc = 0;

        cr_assert(ctx && !ctx->err);
        freeReplyObject(redisCommand(ctx, "SET %s 0", name));
        freeReplyObject(redisCommand(ctx, "ZADD %s %lld %b %lld %b", timeout, base + 1000,
                                     mine.id, (size_t)16, base - 1000, old.id, (size_t)16));
#define ARG(s, n) (argv[argc] = (s), lens[argc++] = (n))
        ARG("EVAL", 4);
        if (layout == 0) {
            ARG(lw_lock_scripts[SCRIPT_RENEW_PERMIT], strlen(lw_lock_scripts[SCRIPT_RENEW_PERMIT]));
            ARG("4", 1);
            ARG(name, strlen(name)), ARG(timeout, strlen(timeout));
            ARG(name, strlen(name)), ARG(timeout, strlen(timeout));
        } else {
            ARG(lw_lock_scripts[SCRIPT_RENEW_PERMIT_NODE],
                strlen(lw_lock_scripts[SCRIPT_RENEW_PERMIT_NODE]));
            ARG("0", 1);
            ARG(name, strlen(name)), ARG(name, strlen(name));
        }
        ARG("60000", 5), ARG("client-id", 9), ARG("publish", 7);
        ARG((const char *)mine.id, 16), ARG((const char *)gone.id, 16);
#undef ARG
        r = redisCommandArgv(ctx, argc, argv, lens);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3, "layout %d", layout);
        cr_assert_eq(r->element[0]->integer, 1, "layout %d: not renewed", layout);
        cr_assert_eq(r->element[1]->integer, 0, "layout %d: a gone id renewed", layout);
        cr_assert_geq(r->element[2]->integer, base * 1000, "layout %d: Redis's clock", layout);
        freeReplyObject(r);
        r = redisCommand(ctx, "ZSCORE %s %b", timeout, mine.id, (size_t)16);
        cr_assert(atoll(r->str) >= base + 60000 && atoll(r->str) <= epoch_ms() + 60000,
                  "layout %d: scored %s, not Redis's TIME + the lease", layout, r->str);
        freeReplyObject(r);
        r = redisCommand(ctx, "ZCARD %s", timeout);
        cr_assert_eq(r->integer, 1, "the expired permit stayed, or the gone one was added");
        freeReplyObject(r);
        r = redisCommand(ctx, "GET %s", name);
        cr_assert_str_eq(r->str, "1", "the expired permit was not given back");
        freeReplyObject(r);
        freeReplyObject(redisCommand(ctx, "DEL %s %s", name, timeout));
        redisFree(ctx);
    }
}

/* max_hold_ms caps a permit as a lock: lost as held too long, no longer
 * renewed, and back in the count once its last lease has run out. */
REDIS_TEST(permit_watchdog, max_hold_caps_a_permit)
{
    struct permit_lost lost;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_semaphore *s;
    struct lw_permit mine;

    client_config(&cfg, 300, NULL);
    memset(&lost, 0, sizeof lost);
    cfg.on_lost = record_permit_lost;
    cfg.lost_arg = &lost;
    cfg.max_hold_ms = 500;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    s = new_sem(c);
    cr_assert_eq(lw_semaphore_try_set(s, 1), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &mine), 0);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 5000), "never given up");
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_HELD_TOO_LONG);
    cr_assert_eq(atomic_load(&lost.owner), lw_permit_owner(&mine));
    cr_assert(wait_until(available(s) == 1, 5000), "its lease was renewed on");
    cr_assert_eq(score_of(&mine), -1);

    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* ---- A lease counts from the time its command carries ---- */

struct one_call {
    struct tally tally;
    _Atomic int err;
};

static void on_call(int err, int64_t value, void *arg)
{
    struct one_call *o = arg;

    (void)value;
    atomic_store(&o->err, err);
    tally_add(&o->tally, err);
}

/*
 * An acquire carries no time: the script scores its permits Redis's TIME
 * + the lease when it runs.  One that waits in the client longer than its
 * lease (no connection to be had) and is written once there is one again
 * is granted a whole lease from then, and handed over: its lease counts
 * from its write, as a lock's.  (Before 0.5 it carried this client's
 * clock + the lease, stamped when formatted, and had to be given back.)
 * The connection is held down by the proxy: the old one dropped, the new
 * ones held in its listen backlog, their set-up unanswered, until it lets
 * go.
 */
REDIS_TEST(permits, an_acquire_that_waited_in_the_client_past_its_lease_is_granted_from_its_write)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_client_stats st;
    struct lw_semaphore *s;
    struct lw_permit mine;
    struct one_call out = {0};
    long long released;

    cr_assert_not_null(p);
    client_config(&cfg, 1000, NULL);
    cfg.port = proxy_port(p);
    cfg.connect_timeout_ms = 10000; /* the held set-up outlasts the lease */
    cfg.command_timeout_ms = 10000; /* and so does the acquire's wait */
    cfg.reconnect_min_ms = cfg.reconnect_max_ms = 20;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    s = new_sem(c);
    cr_assert_eq(lw_semaphore_try_set(s, 1), 1);
    tally_init(&out.tally);
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert_eq(proxy_drop(p, 1), 0);
    cr_assert(wait_until(engine_status(c->engine) != 0, 3000), "the drop went unseen");
    cr_assert_eq(lw_permit_acquire_async(s, 1, 0, 0, &mine, on_call, &out), 0);
    sleep_ms(1500); /* a lease and a half: time that must pass */
    cr_assert_eq(tally_wait(&out.tally, 1, 0), 0, "answered with no connection to be had");
    released = epoch_ms();
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(tally_wait(&out.tally, 1, 8000), 1, "never answered");
    cr_assert_eq(atomic_load(&out.err), 0, "not granted: %s", lw_errname(atomic_load(&out.err)));
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.acquired_too_late, 0);
    cr_assert_eq(st.locks_held, 1, "the watchdog does not renew it");
    cr_assert_geq(score_of(&mine), released + 1000, "scored before its write");
    cr_assert_eq(available(s), 0);
    cr_assert_eq(lw_permit_release(s, &mine, 1), 0);
    cr_assert_eq(available(s), 1);

    tally_destroy(&out.tally);
    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
    proxy_stop(p);
}

/* lw_permit_acquire_until() says how long the permits are sure: before
 * their score, by the skew allowance at least, and a tick ahead at least;
 * NULL is refused. */
REDIS_TEST(permits, acquire_until_is_before_the_score_less_the_skew)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_semaphore *s;
    struct lw_permit mine[2];
    uint64_t until = 0, mono = lw_clock_now();
    long long epoch = epoch_ms();

    client_config(&cfg, 3000, NULL);
    cfg.permit_clock_skew_ms = 200;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    s = new_sem(c);
    cr_assert_eq(lw_semaphore_try_set(s, 2), 1);
    cr_assert_eq(lw_permit_acquire_until(s, 1, 0, 0, mine, NULL), LW_EINVAL);
    cr_assert_eq(lw_permit_acquire_until(s, 2, 0, 0, mine, &until), 0);
    /* The score on lw_clock_now()'s clock, read against the epoch then. */
    cr_assert_leq(until + 200000000u,
                  mono + (uint64_t)(score_of(&mine[0]) - epoch + 1) * 1000000u,
                  "less than the skew allowance before the score");
    cr_assert_geq(until, lw_clock_now() + 10000000u, "less than a tick left");
    cr_assert_eq(lw_permit_release(s, mine, 2), 0);
    lw_semaphore_free(s);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The acquire script run twice with the same ids (a copy sent again
 * after its connection was lost: it may have run) takes the permits
 * once: the second answers acquired, with the count as the first left
 * it, and moves their scores to a lease from when it ran (Redis's TIME):
 * the client counts the lease from the second copy's write. */
REDIS_TEST(permits, an_acquire_run_twice_takes_its_permits_once)
{
    redisContext *ctx = redisConnectUnix(srv.unix_path);
    const char *argv[] = {"EVAL", lw_lock_scripts[SCRIPT_SEM_ACQUIRE], "3", SEM, SEM_TIMEOUT,
                          SEM_CHANNEL, "2", "60000", "publish",
                          "AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"};
    long long first = 0;
    redisReply *r;

    cr_assert(ctx && !ctx->err);
    cr_assert_eq(rs_try_set(3), 1);
    for (int i = 0; i < 2; i++) {
        long long before = epoch_ms(), score;

        if (i)
            usleep(20000); /* the copies' TIMEs apart */
        r = redisCommandArgv(ctx, 11, argv, NULL);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "copy %d", i);
        cr_assert_eq(r->element[0]->integer, 1, "copy %d not acquired", i);
        cr_assert_eq(r->element[1]->integer, 1, "copy %d: permits left", i);
        freeReplyObject(r);
        score = redis_int("ZSCORE %s AAAAAAAAAAAAAAAA", SEM_TIMEOUT);
        cr_assert(score >= before + 60000 && score <= epoch_ms() + 60000, "copy %d: %lld", i,
                  score);
        cr_assert_gt(score, first, "copy %d did not move the score", i);
        first = score;
    }
    cr_assert_eq(redis_int("GET %s", SEM), 1);
    cr_assert_eq(redis_int("ZCARD %s", SEM_TIMEOUT), 2);
    redisFree(ctx);
}

/* ---- In a cluster ---- */

static struct redis_cluster cl;

static void cluster_setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 0), 0, "the cluster did not start");
}

static void cluster_teardown(void)
{
    redis_cluster_stop(&cl);
}

/* Semaphores on every master: each call routed by its name's slot, and
 * the permits renewed in node batches (the names in ARGV) for many
 * leases, none lost; released, they are back. */
Test(permit_cluster, renewed_on_every_master, .init = cluster_setup, .fini = cluster_teardown,
     .timeout = 120)
{
    enum { N = 12 };
    struct permit_lost lost;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_semaphore *s[N];
    struct lw_permit p[N];
    char name[16];
    int64_t v;

    cluster_client_config(&cfg, &cl, 0);
    cfg.watchdog_timeout_ms = 300;
    cfg.permit_clock_skew_ms = 20;
    memset(&lost, 0, sizeof lost);
    cfg.on_lost = record_permit_lost;
    cfg.lost_arg = &lost;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "sem%d", i);
        cr_assert_eq(lw_semaphore_new(c, name, strlen(name), &s[i]), 0);
        cr_assert_eq(lw_semaphore_try_set(s[i], 1), 1);
        cr_assert_eq(lw_permit_acquire(s[i], 1, 0, 0, &p[i]), 0);
    }
    cr_assert(renewed_more(c, 4 * N), "renewals stopped"); /* over a lease each */
    for (int i = 0; i < N; i++) {
        cr_assert_eq(lw_semaphore_acquired(s[i], &v), 0);
        cr_assert_eq(v, 1, "sem%d's permit expired", i);
    }
    cr_assert_eq(atomic_load(&lost.count), 0);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(lw_permit_release(s[i], &p[i], 1), 0);
        cr_assert_eq(lw_semaphore_available(s[i], &v), 0);
        cr_assert_eq(v, 1);
        lw_semaphore_free(s[i]);
    }
    cr_assert_eq(atomic_load(&lost.count), 0);
    cr_assert_eq(lw_client_free(c), 0);
}
