/*
 * tests/test_multi.c - multi-locks (<leasewheel/multi.h>) on a real
 * Redis: all or nothing against a name Redisson's own tryLock holds
 * (redisson_lock.h, its SHA1 checked), one round trip for ten names,
 * write locks and re-entry in a set, the other kind and another type
 * refused with nothing left behind, a refused acquire woken by the
 * refusing name's unlock, two clients over the same names in opposite
 * orders both finishing, and a set lost as one: reported once, with its
 * handle, the rest released.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "lock_util.h"
#include "multi_util.h"
#include "redisson_lock.h"
#include "rw_util.h"

#define LW_ID "lw-1" /* our client's id: its fields are "lw-1:<owner>" */

static struct lw_client *client_as(const char *id, uint32_t lease_ms, lw_lease_lost_fn *lost,
                                   void *arg)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, NULL);
    cfg.client_id = id;
    cfg.on_lease_lost = lost;
    cfg.lease_lost_arg = arg;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

static struct lw_client *client(uint32_t lease_ms, lw_lease_lost_fn *lost, void *arg)
{
    return client_as(LW_ID, lease_ms, lost, arg);
}

/* A multi-lock over n lock handles named prefix0, prefix1, ...  (the
 * handles are its: freed here). */
static struct lw_multi *multi_of(struct lw_client *c, const char *const *names, size_t n)
{
    struct lw_lock *locks[LW_MULTI_MAX];
    struct lw_multi *m = NULL;

    for (size_t i = 0; i < n; i++) {
        locks[i] = new_lock(c, names[i]);
        cr_assert_eq(lw_lock_set_fenced(locks[i], 1), 0); /* tokens to look at */
    }
    cr_assert_eq(lw_multi_new(locks, n, &m), 0);
    for (size_t i = 0; i < n; i++)
        lw_lock_free(locks[i]);
    return m;
}

static long long hget_int(const char *name, const char *field)
{
    redisReply *r = redis_server_command(&srv, "HGET %s %s", name, field);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    return v;
}

static long long subscribers(const char *channel)
{
    redisReply *r = redis_server_command(&srv, "PUBSUB NUMSUB %s", channel);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer
                                                                        : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

static long long evalsha_calls(void)
{
    redisReply *r = redis_server_command(&srv, "INFO %s", "commandstats");
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "cmdstat_evalsha:calls=")
                                                       : NULL;
    long long n = p ? atoll(p + strlen("cmdstat_evalsha:calls=")) : 0;

    freeReplyObject(r);
    return n;
}

/* Redisson's tryLock of name for field (lease 30 s): 1 acquired. */
static int rs_try_lock(redisContext *rc, const char *name, const char *field)
{
    redisReply *r = redisCommand(rc, "EVALSHA %s 1 %s 30000 %s", RS_LOCK_TRY_SHA, name, field);
    int got;

    cr_assert(r && r->type != REDIS_REPLY_ERROR, "Redisson's tryLock: %s", r ? r->str : "none");
    got = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    return got;
}

static const char *const five[] = {"acct:a", "acct:b", "acct:c", "acct:d", "acct:e"};

/* One name held by Redisson's own tryLock: the set is refused, and no
 * field, key or token is left on the other four.  Once it is free, the
 * set is taken whole, each name as an RLock holds it, and Redisson's
 * tryLock on any of them is refused. */
REDIS_TEST(multi, all_or_nothing_against_redissons_holder)
{
    struct lw_client *c = client(30000, NULL, NULL);
    struct lw_multi *m = multi_of(c, five, 5);
    redisContext *rc = connect_srv();
    uint64_t tokens[5];
    char field[64];

    load_checked(rc, RS_LOCK_TRY, RS_LOCK_TRY_SHA);
    cr_assert_eq(rs_try_lock(rc, "acct:c", "java-1:7"), 1);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, tokens), LW_ELOCKED);
    for (int i = 0; i < 5; i++) {
        if (i == 2)
            continue;
        cr_assert_eq(redis_int("EXISTS %s", five[i]), 0, "%s was left held", five[i]);
    }
    cr_assert_eq(hget_int("acct:c", "java-1:7"), 1, "Redisson's hold was touched");

    cr_assert_eq(redis_int("DEL %s", "acct:c"), 1);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, tokens), 0);
    snprintf(field, sizeof field, "%s:1", LW_ID);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(hget_int(five[i], field), 1, "%s", five[i]);
        cr_assert_gt(redis_int("PTTL %s", five[i]), 20000);
        cr_assert_gt(tokens[i], 0);
        cr_assert_eq(rs_try_lock(rc, five[i], "java-1:7"), 0, "Redisson got %s", five[i]);
    }
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(redis_int("EXISTS %s", five[i]), 0);
    redisFree(rc);
    lw_multi_free(m);
    cr_assert_eq(lw_client_free(c), 0);
}

/* On one Redis, ten free names cost one call; the set is sure for its
 * lease from before the call, less the drift. */
REDIS_TEST(multi, ten_names_one_round_trip)
{
    static const char *const ten[] = {"t0", "t1", "t2", "t3", "t4",
                                      "t5", "t6", "t7", "t8", "t9"};
    struct lw_client *c = client(30000, NULL, NULL);
    struct lw_multi *m = multi_of(c, ten, 10);
    long long before = evalsha_calls();
    uint64_t t0 = lw_clock_now(), until = 0;

    cr_assert_eq(lw_multi_acquire_until(m, 1, 0, 20000, NULL, &until), 0);
    cr_assert(until > t0 + 19000 * 1000000ull && until <= lw_clock_now() + 20000 * 1000000ull,
              "the sure end is not the lease from the command's write, less the drift");
    cr_assert_eq(evalsha_calls() - before, 1, "%lld calls", evalsha_calls() - before);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(redis_int("EXISTS %s", ten[i]), 1);
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    cr_assert_eq(evalsha_calls() - before, 2, "the release: one call too");
    lw_multi_free(m);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A write lock in a set: Redisson's write-lock layout (mode write, the
 * ":write" field); a name the owner holds already is re-entered, and the
 * set's release takes back its own hold only. */
REDIS_TEST(multi, write_locks_and_reentry)
{
    struct lw_client *c = client(30000, NULL, NULL);
    struct lw_lock *plain = new_lock(c, "acct:a"), *w = NULL, *locks[2];
    struct lw_multi *m = NULL;
    char field[64];

    cr_assert_eq(lw_write_lock_new(c, "shard:1", 7, &w), 0);
    locks[0] = w;
    locks[1] = plain;
    cr_assert_eq(lw_multi_new(locks, 2, &m), 0);
    cr_assert_eq(lw_acquire(plain, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), 0);
    snprintf(field, sizeof field, "%s:1", LW_ID);
    cr_assert_eq(hget_int("acct:a", field), 2, "re-entered");
    snprintf(field, sizeof field, "%s:1:write", LW_ID);
    cr_assert_eq(hget_int("shard:1", field), 1);
    cr_assert_eq(redis_int("HEXISTS %s mode", "shard:1"), 1);
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    cr_assert_eq(redis_int("EXISTS %s", "shard:1"), 0);
    snprintf(field, sizeof field, "%s:1", LW_ID);
    cr_assert_eq(hget_int("acct:a", field), 1, "the lock's own hold stays");
    cr_assert_eq(lw_unlock_owner(plain, 1), 0);
    cr_assert_eq(redis_int("EXISTS %s", "acct:a"), 0);
    lw_multi_free(m);
    lw_lock_free(plain);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A name that is a read-write lock (as a plain lock in the set), or holds
 * a string: refused, nothing taken. */
REDIS_TEST(multi, other_kinds_and_types_refused_whole)
{
    struct lw_client *c = client(30000, NULL, NULL);
    struct lw_multi *m = multi_of(c, five, 5);

    cr_assert_eq(redis_int("HSET %s mode read", "acct:d"), 1);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), LW_EWRONGKIND);
    cr_assert_eq(redis_int("DEL %s", "acct:d"), 1);
    freeReplyObject(redis_server_command(&srv, "SET %s x", "acct:e"));
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), LW_EWRONGTYPE);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(redis_int("EXISTS %s", five[i]), 0, "%s was left held", five[i]);
    lw_multi_free(m);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Bad handles and counts are refused before anything is sent. */
REDIS_TEST(multi, bad_arguments)
{
    struct lw_client *c = client(30000, NULL, NULL), *c2 = client_as("lw-2", 30000, NULL, NULL);
    struct lw_lock *a = new_lock(c, "a"), *a2 = new_lock(c, "a"), *b2 = new_lock(c2, "b"), *r;
    struct lw_lock *many[LW_MULTI_MAX + 1];
    struct lw_multi *m = NULL;

    cr_assert_eq(lw_read_lock_new(c, "r", 1, &r), 0);
    cr_assert_eq(lw_multi_new(NULL, 1, &m), LW_EINVAL);
    cr_assert_eq(lw_multi_new((struct lw_lock *[]){a}, 0, &m), LW_ERANGE);
    for (size_t i = 0; i <= LW_MULTI_MAX; i++)
        many[i] = a;
    cr_assert_eq(lw_multi_new(many, LW_MULTI_MAX + 1, &m), LW_ERANGE);
    cr_assert_eq(lw_multi_new((struct lw_lock *[]){a, a2}, 2, &m), LW_EINVAL, "a name twice");
    cr_assert_eq(lw_multi_new((struct lw_lock *[]){a, b2}, 2, &m), LW_EINVAL, "two clients");
    cr_assert_eq(lw_multi_new((struct lw_lock *[]){a, r}, 2, &m), LW_EINVAL, "a read lock");
    cr_assert_eq(lw_multi_new((struct lw_lock *[]){a}, 1, &m), 0);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 5, NULL), LW_ELEASE);
    cr_assert_eq(lw_multi_unlock_owner(m, 9), LW_ENOTOWNER);
    lw_multi_free(m);
    lw_lock_free(a);
    lw_lock_free(a2);
    lw_lock_free(b2);
    lw_lock_free(r);
    cr_assert_eq(lw_client_free(c2), 0);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A set refused by a name another client holds waits on that name's
 * channel, and is taken as soon as it is unlocked. */
REDIS_TEST(multi, refused_set_woken_by_the_unlock)
{
    struct lw_client *c = client(30000, NULL, NULL), *other = client_as("lw-2", 30000, NULL, NULL);
    struct lw_multi *m = multi_of(c, five, 5);
    struct lw_lock *held = new_lock(other, "acct:b");
    struct outcome o;
    uint64_t t0;

    memset(&o, 0, sizeof o);
    tally_init(&o.tally);
    cr_assert_eq(lw_acquire(held, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_multi_acquire_async(m, 1, 10000, 0, NULL, on_outcome, &o), 0);
    cr_assert(wait_until(subscribers("redisson_lock__channel:{acct:b}") == 1, 5000),
              "never waited on the refusing name's channel");
    cr_assert_eq(tally_wait(&o.tally, 1, 100), 0, "taken while held");
    for (int i = 0; i < 5; i++)
        cr_assert_eq(redis_int("EXISTS %s", five[i]), i == 1, "%s", five[i]);
    t0 = now_ms();
    cr_assert_eq(lw_unlock_owner(held, 1), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o.err), 0);
    cr_assert_lt(now_ms() - t0, 1000, "not woken by the unlock");
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    tally_destroy(&o.tally);
    lw_multi_free(m);
    lw_lock_free(held);
    cr_assert_eq(lw_client_free(other), 0);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Two clients (as two processes), each looping a thousand times over the
 * same four names given in opposite orders, holding each set a random
 * moment: every acquire gets its set within its wait, none overlaps. */
REDIS_TEST(multi, opposite_orders_both_finish)
{
    static const char *const up[] = {"n1", "n2", "n3", "n4"};
    static const char *const down[] = {"n4", "n3", "n2", "n1"};
    struct lw_client *ca = client_as("lw-a", 30000, NULL, NULL);
    struct lw_client *cb = client_as("lw-b", 30000, NULL, NULL);
    struct lw_multi *a = multi_of(ca, up, 4), *b = multi_of(cb, down, 4);

    loop_both(a, b, 1000, 5000);
    lw_multi_free(a);
    lw_multi_free(b);
    cr_assert_eq(lw_client_free(ca), 0);
    cr_assert_eq(lw_client_free(cb), 0);
}

/* Losses as the set's: counted, and the last lease seen. */
struct set_losses {
    _Atomic int count;
    _Atomic int with_set;
    const struct lw_multi *m;
    char name[64];
};

static void on_lease_lost(const struct lw_lease *lease, int reason, void *arg)
{
    struct set_losses *s = arg;

    (void)reason;
    if (lease->multi == s->m)
        atomic_fetch_add(&s->with_set, 1);
    if (lease->len < sizeof s->name) {
        memcpy(s->name, lease->name, lease->len);
        s->name[lease->len] = 0;
    }
    atomic_fetch_add(&s->count, 1);
}

static uint64_t lost_count(struct lw_client *c)
{
    struct lw_client_stats st;

    lw_client_get_stats(c, &st);
    return st.lost_not_owner + st.lost_errors + st.lost_expired;
}

/* One name of a watchdog set deleted behind its back: the next renewal
 * finds it gone, the set is reported lost once (with its handle and that
 * name), and the set's holds on the others are released; its release
 * then says LW_ENOTOWNER.  Then two names wiped at once: still once. */
REDIS_TEST(multi, set_lost_as_one)
{
    struct set_losses s;
    struct lw_client *c;
    struct lw_multi *m;

    memset(&s, 0, sizeof s);
    c = client(1500, on_lease_lost, &s);
    m = multi_of(c, five, 3);
    s.m = m;
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), 0);
    cr_assert_eq(redis_int("DEL %s", "acct:b"), 1);
    cr_assert(wait_until(atomic_load(&s.count) == 1, 3000), "never told (%llu lost)",
              (unsigned long long)lost_count(c));
    cr_assert_eq(atomic_load(&s.with_set), 1);
    cr_assert_str_eq(s.name, "acct:b");
    cr_assert(wait_until(redis_int("EXISTS %s", "acct:a") == 0 &&
                             redis_int("EXISTS %s", "acct:c") == 0,
                         2000),
              "the rest of the set stayed held");
    cr_assert_eq(lw_multi_unlock_owner(m, 1), LW_ENOTOWNER);

    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), 0);
    cr_assert_eq(redis_int("DEL %s", "acct:a"), 1);
    cr_assert_eq(redis_int("DEL %s", "acct:c"), 1);
    cr_assert(wait_until(atomic_load(&s.count) == 2, 3000), "never told (%llu lost, %d told)",
              (unsigned long long)lost_count(c), atomic_load(&s.count));
    cr_assert_eq(wait_until(atomic_load(&s.count) > 2, 1500), 0, "told twice");
    cr_assert(wait_until(redis_int("EXISTS %s", "acct:b") == 0, 2000));
    cr_assert_eq(lw_multi_unlock_owner(m, 1), LW_ENOTOWNER);
    lw_multi_free(m);
    cr_assert_eq(lw_client_free(c), 0);
}
