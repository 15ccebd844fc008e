/*
 * tests/test_fair.c - fair locks (lw_fair_lock_new()) on a real Redis,
 * interleaved with Redisson's own RFairLock scripts (redisson_fair.h,
 * each checked against its SHA1 before use): one queue for both, served
 * in order, each waiter woken on its own channel; Redisson's stale-head
 * drop and its give-up time shift leaving ours consistent; force-unlock;
 * a leasewheel waiter's place as a lease (a dead one drops out within
 * it); a try without wait never queues; a waiter that gives up leaves.
 */
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>

#include "lock_util.h"
#include "redisson_fair.h"
#include "rw_util.h"

#define NAME "jobs"
#define QUEUE "redisson_lock_queue:{jobs}"
#define TIMEOUTS "redisson_lock_timeout:{jobs}"
#define PLACES "leasewheel_lock_place:{jobs}"
#define CHANNEL "redisson_lock__channel:{jobs}"
#define RS_WAIT "300000" /* Redisson's fairLockWaitTimeout */
#define LW_ID "lw-1"     /* our client's id: its fields are "lw-1:<owner>" */

static long long epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Redisson's side, by EVALSHA of its scripts, loaded and checked ---- */

static redisContext *rs_connect(void)
{
    redisContext *rc = connect_srv();

    load_checked(rc, RS_FAIR_TRY, RS_FAIR_TRY_SHA);
    load_checked(rc, RS_FAIR_LOCK, RS_FAIR_LOCK_SHA);
    load_checked(rc, RS_FAIR_FAILED, RS_FAIR_FAILED_SHA);
    load_checked(rc, RS_FAIR_UNLOCK, RS_FAIR_UNLOCK_SHA);
    load_checked(rc, RS_FAIR_FORCE, RS_FAIR_FORCE_SHA);
    return rc;
}

/* Redisson's lock() or tryLock(wait) for field: 1 acquired (nil), 0
 * queued (the ms to wait). */
static int rs_lock(redisContext *rc, const char *field, const char *wait)
{
    redisReply *r = redisCommand(rc, "EVALSHA %s 3 %s %s %s 30000 %s %s %lld", RS_FAIR_LOCK_SHA,
                                 NAME, QUEUE, TIMEOUTS, field, wait, epoch_ms());
    int got;

    cr_assert(r && r->type != REDIS_REPLY_ERROR, "Redisson's fair lock: %s",
              r ? r->str : "no reply");
    got = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    return got;
}

/* Redisson's unlock for field: 1 freed, 0 held still, -1 nil (not its). */
static long long rs_unlock(redisContext *rc, const char *field)
{
    static int request;
    redisReply *r = redisCommand(rc, "EVALSHA %s 5 %s %s %s %s redisson_unlock_latch:{%s}:r%d 0 "
                                     "30000 %s %lld publish 1000",
                                 RS_FAIR_UNLOCK_SHA, NAME, QUEUE, TIMEOUTS, CHANNEL, NAME,
                                 ++request, field, epoch_ms());
    long long v;

    cr_assert(r && r->type != REDIS_REPLY_ERROR);
    v = r->type == REDIS_REPLY_NIL ? -1 : r->integer;
    freeReplyObject(r);
    return v;
}

static long long rs_force(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "EVALSHA %s 4 %s %s %s %s 0 %lld publish", RS_FAIR_FORCE_SHA,
                                 NAME, QUEUE, TIMEOUTS, CHANNEL, epoch_ms());
    long long v;

    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

/* The queue, its entries joined by ' '. */
static char *queue(redisContext *rc, char *buf, size_t n)
{
    redisReply *r = redisCommand(rc, "LRANGE %s 0 -1", QUEUE);
    size_t used = 0;

    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    buf[0] = 0;
    for (size_t i = 0; i < r->elements; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " " : "", r->element[i]->str);
    freeReplyObject(r);
    return buf;
}

static long long score(redisContext *rc, const char *key, const char *member)
{
    redisReply *r = redisCommand(rc, "ZSCORE %s %s", key, member);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

/* ---- Channels: who was woken ---- */

/* A thread subscribed to the waiters' own channels of fields, counting
 * the messages each got. */
struct listener {
    pthread_t thread;
    redisContext *rc;
    const char *fields[4];
    int n;
    _Atomic int got[4];
    _Atomic int ready;
};

static void *listen_loop(void *arg)
{
    struct listener *l = arg;
    redisReply *r;

    while (redisGetReply(l->rc, (void **)&r) == REDIS_OK) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            !strcmp(r->element[0]->str, "subscribe"))
            atomic_fetch_add(&l->ready, 1);
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            !strcmp(r->element[0]->str, "message"))
            for (int i = 0; i < l->n; i++) {
                char ch[200];

                snprintf(ch, sizeof ch, CHANNEL ":%s", l->fields[i]);
                if (!strcmp(r->element[1]->str, ch))
                    atomic_fetch_add(&l->got[i], 1);
            }
        freeReplyObject(r);
    }
    return NULL;
}

static void listen_start(struct listener *l)
{
    l->rc = connect_srv();
    for (int i = 0; i < l->n; i++)
        redisAppendCommand(l->rc, "SUBSCRIBE " CHANNEL ":%s", l->fields[i]);
    cr_assert_eq(pthread_create(&l->thread, NULL, listen_loop, l), 0);
    cr_assert(wait_until(atomic_load(&l->ready) == l->n, 3000), "never subscribed");
}

static void listen_stop(struct listener *l)
{
    shutdown(l->rc->fd, SHUT_RDWR);
    pthread_join(l->thread, NULL);
    redisFree(l->rc);
}

/* ---- The library's side ---- */

static struct lw_client *fair_client(void)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, 3000, NULL);
    cfg.client_id = LW_ID;
    cfg.fair_place_ms = 600;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

static struct lw_lock *fair_lock(struct lw_client *c)
{
    struct lw_lock *l = NULL;

    cr_assert_eq(lw_fair_lock_new(c, NAME, strlen(NAME), &l), 0);
    return l;
}

/* Our client (LW_ID), its fair lock handle on NAME, and a connection
 * for Redisson's side, its scripts loaded and checked. */
static void fair_open(struct lw_client **c, struct lw_lock **l, redisContext **rc)
{
    *c = fair_client();
    *l = fair_lock(*c);
    *rc = rs_connect();
}

static void fair_close(struct lw_client *c, struct lw_lock *l, redisContext *rc)
{
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
    redisFree(rc);
}

/* Wait until the queue reads want. */
static void queue_is(redisContext *rc, const char *want)
{
    char buf[512];

    if (!wait_until(!strcmp(queue(rc, buf, sizeof buf), want), 3000))
        cr_assert_fail("the queue is \"%s\", not \"%s\"", buf, want);
}

/* ---- The tests ---- */

/* Every Redisson script the tests use is the one its SHA1 names. */
REDIS_TEST(fair, redissons_scripts_are_the_quoted_ones)
{
    redisFree(rs_connect());
}

/* A free fair lock is held as Redisson holds it: the hash at the name,
 * the field "<client id>:<owner>", the lease; the queue stays empty; a
 * re-entry counts, the token is the name's. */
REDIS_TEST(fair, held_as_redisson_holds_it)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    uint64_t token = 0, again = 0;
    char buf[64];

    fair_open(&c, &l, &rc);
    cr_assert_eq(lw_acquire(l, 7, LW_WAIT_FOREVER, 0, &token), 0);
    cr_assert_eq(lw_acquire(l, 7, 0, 0, &again), 0);
    cr_assert_eq(again, token);
    cr_assert_eq(redis_int("HGET " NAME " %s", LW_ID ":7"), 2);
    cr_assert_gt(redis_int("PTTL %s", NAME), 2000);
    cr_assert_str_eq(queue(rc, buf, sizeof buf), "");
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 0, "Redisson got in");
    cr_assert_eq(lw_unlock_owner(l, 7), 0);
    cr_assert_eq(lw_unlock_owner(l, 7), 0);
    cr_assert_eq(lw_unlock_owner(l, 7), LW_ENOTOWNER);
    fair_close(c, l, rc);
}

/*
 * One queue, served in order: Redisson holds the lock; a leasewheel
 * waiter A, a Redisson waiter R and a leasewheel waiter B queue in that
 * order.  Each release wakes only the next on its own channel: Redisson's
 * unlock wakes A, A's unlock wakes R, R's unlock wakes B.
 */
REDIS_TEST(fair, one_queue_in_order_each_woken_on_its_own_channel)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    struct listener ears = {.fields = {LW_ID ":1", "java-1:2", LW_ID ":3"}, .n = 3};
    struct outcome a = {0}, b = {0};

    fair_open(&c, &l, &rc);
    listen_start(&ears);
    tally_init(&a.tally);
    tally_init(&b.tally);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_acquire_async(l, 1, 10000, 0, on_outcome, &a), 0);
    queue_is(rc, LW_ID ":1");
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_eq(lw_acquire_async(l, 3, 10000, 0, on_outcome, &b), 0);
    queue_is(rc, LW_ID ":1 java-1:2 " LW_ID ":3");
    cr_assert_gt(score(rc, PLACES, LW_ID ":1"), epoch_ms(), "A's place");
    cr_assert_eq(score(rc, PLACES, "java-1:2"), -1, "Redisson's waiter has no place");

    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1);
    cr_assert_eq(tally_wait(&a.tally, 1, 3000), 1, "A was not woken");
    cr_assert_eq(atomic_load(&a.err), 0);
    /* The listener reads the message on its own: it may come after A's
     * outcome, which a round trip of A's own follows. */
    cr_assert(wait_until(atomic_load(&ears.got[0]) == 1, 3000), "A was not woken on its channel");
    queue_is(rc, "java-1:2 " LW_ID ":3");
    cr_assert_eq(score(rc, PLACES, LW_ID ":1"), -1, "A's place left with it");

    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    cr_assert(wait_until(atomic_load(&ears.got[1]) == 1, 3000), "R was not woken");
    cr_assert_eq(tally_wait(&b.tally, 1, 200), 0, "B passed R");
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 1, "R's turn");
    queue_is(rc, LW_ID ":3");
    cr_assert_eq(rs_unlock(rc, "java-1:2"), 1);
    cr_assert_eq(tally_wait(&b.tally, 1, 3000), 1, "B was not woken");
    cr_assert_eq(atomic_load(&b.err), 0);
    cr_assert(wait_until(atomic_load(&ears.got[2]) == 1, 3000), "B was not woken on its channel");
    cr_assert_eq(lw_unlock_owner(l, 3), 0);
    queue_is(rc, "");
    cr_assert_eq(atomic_load(&ears.got[0]), 1, "A woken twice");
    cr_assert_eq(atomic_load(&ears.got[2]), 1, "B woken twice");

    listen_stop(&ears);
    tally_destroy(&a.tally);
    tally_destroy(&b.tally);
    fair_close(c, l, rc);
}

/* The order in which waiters got a lock (struct served's callback). */
struct served {
    struct outcome o[4];
    _Atomic int next;
    _Atomic int order[4]; /* owners, as they got in */
};

struct turn {
    struct served *s;
    int owner;
};

static void on_served(int err, int64_t value, void *arg)
{
    struct turn *t = arg;
    int at = atomic_fetch_add(&t->s->next, 1);

    if (at < 4 && !err)
        atomic_store(&t->s->order[at], t->owner);
    on_outcome(err, value, &t->s->o[t->owner - 1]);
}

/*
 * Served in the order they asked, however long they waited: a holder
 * keeps the lock over several place renewals while L1..L4 queue in that
 * order, and each releases as soon as it gets in.  Every acquire ahead
 * lowers a waiter's give-up time by the wait (Redisson's rule); a waiter
 * whose renewal had only raised it to now + the wait was left with it in
 * the past when its turn came, and was dropped as stale by the release
 * before it: L1, L3, L4, L2.  A place renewal keeps it at what the
 * waiter's position needs (scripts.c, keep()).  The wait is short here
 * (500 ms against the lock's 1.5 s lease), so that the hold outlasts
 * every give-up time Redisson's rule gave at the join.
 */
REDIS_TEST(fair, waiters_are_served_in_order_after_a_long_wait)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    redisContext *rc = connect_srv();
    struct served s = {0};
    struct turn turns[4];
    char want[128];

    client_config(&cfg, 1500, NULL);
    cfg.client_id = LW_ID;
    cfg.fair_place_ms = 600;
    cfg.fair_wait_ms = 500;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = fair_lock(c);
    cr_assert_eq(lw_acquire(l, 9, 0, 0, NULL), 0);
    want[0] = 0;
    for (int i = 0; i < 4; i++) {
        turns[i] = (struct turn){&s, i + 1};
        tally_init(&s.o[i].tally);
        cr_assert_eq(lw_acquire_async(l, (uint64_t)i + 1, 20000, 0, on_served, &turns[i]), 0);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s" LW_ID ":%d",
                 i ? " " : "", i + 1);
        queue_is(rc, want); /* in this order */
    }
    sleep_ms(3000); /* past every give-up time the join gave: renewals only */
    cr_assert_eq(lw_unlock_owner(l, 9), 0);
    for (int k = 0; k < 4; k++) {
        int owner;

        cr_assert(wait_until(atomic_load(&s.next) > k, 5000), "nobody got in after %d", k);
        owner = atomic_load(&s.order[k]);
        cr_assert_eq(owner, k + 1, "served %d in turn %d: out of order", owner, k + 1);
        cr_assert_eq(atomic_load(&s.o[owner - 1].err), 0);
        cr_assert_eq(lw_unlock_owner(l, (uint64_t)owner), 0);
    }
    for (int i = 0; i < 4; i++)
        tally_destroy(&s.o[i].tally);
    fair_close(c, l, rc);
}

/* A stale Redisson waiter heads the queue (its give-up time passed: it
 * died): our acquire drops it, as Redisson's scripts do, and gets the free
 * lock. */
REDIS_TEST(fair, a_stale_head_is_dropped_by_our_acquire_too)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    char buf[64];

    fair_open(&c, &l, &rc);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1);
    queue_is(rc, "java-1:2");
    /* Its give-up time passed (it died five minutes ago, say). */
    freeReplyObject(redisCommand(rc, "ZADD %s %lld java-1:2", TIMEOUTS, epoch_ms() - 1));
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), 0, "the dead head kept it");
    cr_assert_str_eq(queue(rc, buf, sizeof buf), "");
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    fair_close(c, l, rc);
}

/* A Redisson acquire moves every give-up time up by its wait (5 minutes):
 * a live leasewheel waiter's falls into the past, but its place's renewal
 * raises it again, and it keeps its turn. */
REDIS_TEST(fair, redissons_shift_does_not_drop_a_live_waiter)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    struct outcome a = {0};

    fair_open(&c, &l, &rc);
    tally_init(&a.tally);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_eq(lw_acquire_async(l, 1, 10000, 0, on_outcome, &a), 0);
    queue_is(rc, "java-1:2 " LW_ID ":1");
    /* Redisson's unlock wakes R; R's acquire, with a wait longer than
     * ours (Redisson's waits may differ), shifts our give-up time back by
     * it: into the past, read in the same transaction (a renewal could
     * raise it at any moment after). */
    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1);
    freeReplyObject(redisCommand(rc, "MULTI"));
    freeReplyObject(redisCommand(rc, "EVALSHA %s 3 %s %s %s 30000 java-1:2 1000000 %lld",
                                 RS_FAIR_LOCK_SHA, NAME, QUEUE, TIMEOUTS, epoch_ms()));
    freeReplyObject(redisCommand(rc, "ZSCORE %s %s", TIMEOUTS, LW_ID ":1"));
    {
        redisReply *r = redisCommand(rc, "EXEC");

        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        cr_assert_eq(r->element[0]->type, REDIS_REPLY_NIL, "R did not get it");
        cr_assert_lt(atoll(r->element[1]->str), epoch_ms(), "not shifted into the past");
        freeReplyObject(r);
    }
    /* Within a renewal period (a third of the place's 600 ms) it is back. */
    cr_assert(wait_until(score(rc, TIMEOUTS, LW_ID ":1") > epoch_ms(), 2000),
              "the place's renewal did not raise it");
    cr_assert_eq(rs_unlock(rc, "java-1:2"), 1);
    cr_assert_eq(tally_wait(&a.tally, 1, 3000), 1, "the live waiter lost its turn");
    cr_assert_eq(atomic_load(&a.err), 0);
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    tally_destroy(&a.tally);
    fair_close(c, l, rc);
}

/* A leasewheel waiter that died (its client gone without a word) keeps
 * its place only for its place lease: Redisson's unlock wakes it in vain,
 * but the next waiter, a leasewheel one, drops it at its next look and
 * gets the lock, long before the dead one's give-up time (5 minutes). */
REDIS_TEST(fair, a_dead_waiter_drops_out_within_its_place_lease)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    struct outcome b = {0};
    uint64_t t0;

    fair_open(&c, &l, &rc);
    tally_init(&b.tally);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    /* The dead waiter, as a leasewheel client left it: its give-up time
     * Redisson's, its place 600 ms long, renewed no more. */
    freeReplyObject(redisCommand(rc, "RPUSH %s lw-dead:1", QUEUE));
    freeReplyObject(redisCommand(rc, "ZADD %s %lld lw-dead:1", TIMEOUTS, epoch_ms() + 330000));
    freeReplyObject(redisCommand(rc, "ZADD %s %lld lw-dead:1", PLACES, epoch_ms() + 600));
    cr_assert_eq(lw_acquire_async(l, 2, 10000, 0, on_outcome, &b), 0);
    queue_is(rc, "lw-dead:1 " LW_ID ":2");
    t0 = now_ms();
    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1); /* wakes the dead one */
    cr_assert_eq(tally_wait(&b.tally, 1, 3000), 1, "still behind the dead waiter");
    cr_assert_eq(atomic_load(&b.err), 0);
    cr_assert_lt(now_ms() - t0, 1000, "more than its place lease");
    queue_is(rc, "");
    cr_assert_eq(lw_unlock_owner(l, 2), 0);
    tally_destroy(&b.tally);
    fair_close(c, l, rc);
}

/* A leasewheel waiter that dies while no other leasewheel waiter renews
 * a place (all of them cut off by an outage, say) still drops out by its
 * place: the places' key outlives the give-up times it stands beside.
 * It once lived two place leases past its last write, and then a dead
 * waiter without a place looked like a Redisson one and held the queue
 * up to its give-up time, minutes (the election's fault model, under a
 * lock delay, found it after a restart). */
REDIS_TEST(fair, a_dead_waiter_drops_out_long_after_its_place_ran_out)
{
    struct lw_client_config cfg;
    struct lw_client *c, *dead = NULL;
    struct lw_lock *l, *dl;
    redisContext *rc;
    struct outcome b = {0}, d = {0};
    long long place;
    uint64_t t0;

    fair_open(&c, &l, &rc);
    tally_init(&b.tally);
    tally_init(&d.tally);
    client_config(&cfg, 3000, NULL);
    cfg.client_id = "lw-dead";
    cfg.fair_place_ms = 600;
    cr_assert_eq(lw_client_new(&cfg, &dead), 0);
    dl = fair_lock(dead);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_acquire_async(dl, 1, 300000, 0, on_outcome, &d), 0);
    queue_is(rc, "lw-dead:1");
    lw_lock_free(dl);
    cr_assert_eq(lw_client_free(dead), 0); /* its wait fails, nothing sent */
    place = score(rc, PLACES, "lw-dead:1");
    cr_assert_gt(place, 0);
    /* Three place leases past its place's end, nothing of ours touching
     * the queue meanwhile. */
    cr_assert(wait_until(epoch_ms() > place + 1800, 5000));
    queue_is(rc, "lw-dead:1");
    cr_assert_eq(lw_acquire_async(l, 2, 10000, 0, on_outcome, &b), 0);
    t0 = now_ms();
    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1);
    cr_assert_eq(tally_wait(&b.tally, 1, 5000), 1, "still behind the dead waiter");
    cr_assert_eq(atomic_load(&b.err), 0);
    cr_assert_lt(now_ms() - t0, 3000);
    queue_is(rc, "");
    cr_assert_eq(lw_unlock_owner(l, 2), 0);
    tally_destroy(&b.tally);
    tally_destroy(&d.tally);
    fair_close(c, l, rc);
}

/* A try without wait never queues: it fails while a waiter heads the
 * queue, even with the lock free (Redisson's tryLock() too). */
REDIS_TEST(fair, a_try_without_wait_never_queues)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    char buf[64];

    fair_open(&c, &l, &rc);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_trylock(l, 0, 0, NULL), LW_ELOCKED);
    cr_assert_str_eq(queue(rc, buf, sizeof buf), "");
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_eq(rs_unlock(rc, "java-1:1"), 1);
    cr_assert_eq(lw_trylock(l, 0, 0, NULL), LW_ELOCKED, "passed the head");
    cr_assert_str_eq(queue(rc, buf, sizeof buf), "java-1:2");
    fair_close(c, l, rc);
}

/* A waiter that gives up leaves the queue, and the give-up times behind
 * it move up by the wait, as Redisson's acquireFailed does. */
REDIS_TEST(fair, a_waiter_that_gives_up_leaves_the_queue)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    long long behind;

    fair_open(&c, &l, &rc);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), LW_ELOCKED);
    cr_assert_eq(rs_lock(rc, "java-1:9", RS_WAIT), 0); /* ahead of ours */
    {
        struct outcome a = {0};

        tally_init(&a.tally);
        cr_assert_eq(lw_acquire_async(l, 1, 300, 0, on_outcome, &a), 0);
        queue_is(rc, "java-1:9 " LW_ID ":1");
        cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
        queue_is(rc, "java-1:9 " LW_ID ":1 java-1:2");
        behind = score(rc, TIMEOUTS, "java-1:2");
        cr_assert_eq(tally_wait(&a.tally, 1, 3000), 1);
        cr_assert_eq(atomic_load(&a.err), LW_ELOCKED);
        tally_destroy(&a.tally);
    }
    queue_is(rc, "java-1:9 java-1:2");
    cr_assert_eq(score(rc, TIMEOUTS, "java-1:2"), behind - 300000, "not moved up by the wait");
    cr_assert_eq(score(rc, PLACES, LW_ID ":1"), -1);
    fair_close(c, l, rc);
}

/* A waiter answered after its wait was over leaves the queue too: Redis
 * ran its acquire late (writes paused past the wait), which put it in
 * the queue, and the answer "in the queue" found the call over.  Nobody
 * renews that place, and without a leave the waiters behind it would
 * wait out its lease. */
REDIS_TEST(fair, a_waiter_answered_after_its_wait_leaves_the_queue)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    redisReply *r;
    char buf[512];

    fair_open(&c, &l, &rc);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    r = redis_server_command(&srv, "CLIENT PAUSE 1000 WRITE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
    freeReplyObject(r);
    cr_assert_neq(lw_acquire(l, 1, 200, 0, NULL), 0);
    /* Its acquire has run (its answer came): the leave follows it. */
    queue_is(rc, "");
    cr_assert_eq(score(rc, PLACES, LW_ID ":1"), -1);
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_str_eq(queue(rc, buf, sizeof buf), "java-1:2", "queued behind a place nobody keeps");
    fair_close(c, l, rc);
}

/* Force-unlock, Redisson's or ours, frees the lock and wakes the head. */
REDIS_TEST(fair, force_unlock_wakes_the_head)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    struct outcome a = {0};

    fair_open(&c, &l, &rc);
    tally_init(&a.tally);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_acquire_async(l, 1, 10000, 0, on_outcome, &a), 0);
    queue_is(rc, LW_ID ":1");
    cr_assert_eq(rs_force(rc), 1);
    cr_assert_eq(tally_wait(&a.tally, 1, 3000), 1, "Redisson's force-unlock woke nobody");
    cr_assert_eq(atomic_load(&a.err), 0);
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    queue_is(rc, "java-1:2");
    cr_assert_eq(lw_force_unlock(l), 1);
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 1, "the head's turn");
    cr_assert_eq(rs_unlock(rc, "java-1:2"), 1);
    tally_destroy(&a.tally);
    fair_close(c, l, rc);
}

/* lw_name_status() reads the queue: who holds, who waits in turn, each
 * waiter's give-up time, and a leasewheel waiter's place. */
REDIS_TEST(fair, status_says_who_waits_in_turn)
{
    struct lw_client *c;
    struct lw_lock *l;
    redisContext *rc;
    struct lw_name_status st;
    struct outcome a = {0};

    fair_open(&c, &l, &rc);
    tally_init(&a.tally);
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(lw_acquire_async(l, 1, 10000, 0, on_outcome, &a), 0);
    queue_is(rc, LW_ID ":1");
    cr_assert_eq(rs_lock(rc, "java-1:2", RS_WAIT), 0);
    cr_assert_eq(lw_name_status(l, &st), 0);
    cr_assert_eq(st.kind, LW_NAME_LOCK);
    cr_assert_eq(st.nholders, 1);
    cr_assert_str_eq(st.holders[0].id, "java-1:1");
    cr_assert_eq(st.nwaiters, 2);
    cr_assert_str_eq(st.waiters[0].id, LW_ID ":1");
    cr_assert_str_eq(st.waiters[1].id, "java-1:2");
    cr_assert_gt(st.waiters[0].give_up_ms, 300000);
    cr_assert_gt(st.waiters[1].give_up_ms, st.waiters[0].give_up_ms);
    cr_assert(st.waiters[0].place_ms > 0 && st.waiters[0].place_ms <= 600, "%lld",
              (long long)st.waiters[0].place_ms);
    cr_assert_eq(st.waiters[1].place_ms, INT64_MIN, "a Redisson waiter has no place");
    cr_assert_eq(rs_force(rc), 1);
    cr_assert_eq(tally_wait(&a.tally, 1, 3000), 1);
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    tally_destroy(&a.tally);
    fair_close(c, l, rc);
}

/* ---- Processes in one queue: lwlock --fair ---- */

#include "contention_log.h"
#include "proc_util.h"

#define QUEUED 8

static void setup_lwlock(void)
{
    server_start();
    make_test_dir("/tmp/lw-fair-XXXXXX");
}

static void teardown_lwlock(void)
{
    remove_test_dir();
    server_stop();
}

/* lwlock --fair -w 30s NAME, its COMMAND a section of hold_ms logged as id
 * (contender.c's section mode). */
static pid_t start_fair(const char *id, const char *hold_ms)
{
    char addr[32], log[300], out[32], err[32];

    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv.port);
    path_in_dir("log", log, sizeof log);
    snprintf(out, sizeof out, "%s.out", id);
    snprintf(err, sizeof err, "%s.err", id);
    return start_child(LWLOCK_PATH,
                       ARGS("--fair", "-w", "30s", "-r", addr, NAME, CONTENDER_PATH, "section",
                            "--log", log, "--id", id, "--round", "0", "--hold-ms", hold_ms),
                       NULL, out, err);
}

/* When id's section began (kind "enter") or ended ("exit"), 0 if not
 * yet. */
static uint64_t logged(const char *kind, const char *id)
{
    char path[300];
    size_t n;
    struct record *recs;
    uint64_t at = 0;

    if (!exists("log"))
        return 0;
    recs = read_log(path_in_dir("log", path, sizeof path), &n);
    for (size_t i = 0; i < n && !at; i++)
        if (!strcmp(recs[i].kind, kind) && !strcmp(recs[i].holder, id))
            at = recs[i].ns;
    free(recs);
    return at;
}

static long long queue_len(void)
{
    return redis_int("LLEN %s", QUEUE);
}

/*
 * Eight lwlock --fair processes queue behind a holder, in a known order.
 * The fourth is killed (SIGKILL) just before its turn, when the third is
 * inside: its place is renewed no more, and when the third leaves, the
 * unlock wakes the dead one in vain.  The fifth gets in within the place's
 * lease (lwlock's: 5 s) and a tick (100 ms) of the third's exit, and the
 * order of entry is the order of the queue, but for the dead one.  For
 * the record: a waiter queued as Redisson's lock() queues, dead, holds the
 * queue up until its give-up time, five minutes and the holder's lease
 * away.
 */
Test(fair_lwlock, a_killed_waiter_delays_those_behind_by_its_place_lease_at_most,
     .init = setup_lwlock, .fini = teardown_lwlock, .timeout = 120)
{
    static const char *const ids[QUEUED] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
    pid_t holder, pids[QUEUED];
    uint64_t prev = 0, third_out, fifth_in;
    redisContext *rc;
    long long rs_wait;

    holder = start_fair("h", "1500");
    cr_assert(wait_until(logged("enter", "h"), 10000), "the holder never got in");
    for (int i = 0; i < QUEUED; i++) {
        pids[i] = start_fair(ids[i], "200");
        cr_assert(wait_until(queue_len() == i + 1, 10000), "%s never queued", ids[i]);
    }
    cr_assert(wait_until(logged("enter", "w2"), 20000), "the third never got in");
    kill(pids[3], SIGKILL);
    cr_assert_eq(wait_child(pids[3], 5000), 128 + SIGKILL);
    for (int i = 0; i < QUEUED; i++)
        if (i != 3)
            cr_assert_eq(wait_child(pids[i], 30000), 0, "%s", ids[i]);
    cr_assert_eq(wait_child(holder, 5000), 0);
    for (int i = 0; i < QUEUED; i++) {
        uint64_t in = logged("enter", ids[i]);

        if (i == 3) {
            cr_assert_eq(in, 0, "the dead one got in");
            continue;
        }
        cr_assert_gt(in, prev, "%s came in out of turn", ids[i]);
        prev = in;
    }
    third_out = logged("exit", "w2");
    fifth_in = logged("enter", "w4");
    fprintf(stderr, "fair: the dead waiter held the fifth up %.0f ms (its place lease: %u ms)\n",
            ms_between(third_out, fifth_in), LW_DEFAULT_FAIR_PLACE_MS);
    cr_assert_leq(ms_between(third_out, fifth_in), LW_DEFAULT_FAIR_PLACE_MS + 100 + 300,
                  "more than its place lease and a tick");
    cr_assert_eq(queue_len(), 0);

    /* Redisson's way, for the record: a dead waiter behind a holder keeps
     * its place until its give-up time. */
    rc = rs_connect();
    cr_assert_eq(rs_lock(rc, "java-1:1", RS_WAIT), 1);
    cr_assert_eq(rs_lock(rc, "java-dead:1", RS_WAIT), 0);
    rs_wait = score(rc, TIMEOUTS, "java-dead:1") - epoch_ms();
    fprintf(stderr, "fair: a dead Redisson waiter would hold those behind it up %lld ms\n",
            rs_wait);
    cr_assert_gt(rs_wait, 300000);
    redisFree(rc);
}
