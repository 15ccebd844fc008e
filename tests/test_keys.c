/*
 * tests/test_keys.c - what stays in Redis: after the last holder and
 * waiter of a name leave, no key of leasewheel's remains, for every kind,
 * unless the user asked for it: a semaphore's count (the user set it), a
 * fenced lock's token counter (lw_lock_set_fenced(): Redisson's
 * RFencedLock keeps it so), an election's term counter.  Each kind runs a cycle that touches every
 * key it can make (holds, re-entries, waiters that get in, a waiter that
 * gives up, renewals), then the whole database is listed.
 */
#include <stdlib.h>
#include <string.h>

#include <leasewheel/election.h>

#include "lock_util.h"

/* Every key of the database, sorted and joined by spaces, into buf. */
static const char *keys_left(char *buf, size_t n)
{
    redisReply *r = redis_server_command(&srv, "EVAL %s 0",
                                         "local k = redis.call('keys', '*') "
                                         "table.sort(k) "
                                         "return table.concat(k, ' ')");

    cr_assert(r && r->type == REDIS_REPLY_STRING, "no key listing");
    snprintf(buf, n, "%s", r->str);
    freeReplyObject(r);
    return buf;
}

static void nothing_but(const char *want, const char *what)
{
    char buf[2048];

    if (!wait_until(!strcmp(keys_left(buf, sizeof buf), want), 3000))
        cr_assert_fail("%s left \"%s\" in Redis, not \"%s\"", what, buf, want);
}

/* One owner holds name (twice: a re-entry), another waits and gets it
 * when the first lets go, a third gives up waiting meanwhile; the leases
 * are renewed a few times; then all let go. */
static void lock_cycle(struct lw_lock *l, int shares)
{
    struct outcome waiter = {0}, quitter = {0};

    tally_init(&waiter.tally);
    tally_init(&quitter.tally);
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), 0);
    if (!shares) {
        cr_assert_eq(lw_acquire_async(l, 2, 10000, 0, on_outcome, &waiter), 0);
        cr_assert_eq(lw_acquire_async(l, 3, 300, 0, on_outcome, &quitter), 0);
        cr_assert_eq(tally_wait(&quitter.tally, 1, 5000), 1, "the third never gave up");
        cr_assert_eq(atomic_load(&quitter.err), LW_ELOCKED);
    } else {
        cr_assert_eq(lw_acquire(l, 2, 0, 0, NULL), 0);
    }
    sleep_ms(700); /* a few renewals of the 1 s lease */
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    if (!shares) {
        cr_assert_eq(tally_wait(&waiter.tally, 1, 5000), 1, "the waiter never got in");
        cr_assert_eq(atomic_load(&waiter.err), 0);
    }
    cr_assert_eq(lw_unlock_owner(l, 2), 0);
    tally_destroy(&waiter.tally);
    tally_destroy(&quitter.tally);
}

REDIS_TEST(keys, no_lock_of_any_kind_leaves_a_key)
{
    struct lw_client *c = new_client(1000, NULL);
    struct lw_lock *l;

    l = new_lock(c, "plain");
    lock_cycle(l, 0);
    lw_lock_free(l);
    nothing_but("", "a lock");

    cr_assert_eq(lw_write_lock_new(c, "rw", 2, &l), 0);
    lock_cycle(l, 0);
    lw_lock_free(l);
    nothing_but("", "a write lock");

    cr_assert_eq(lw_read_lock_new(c, "rw", 2, &l), 0);
    lock_cycle(l, 1);
    lw_lock_free(l);
    nothing_but("", "a read lock");

    cr_assert_eq(lw_fair_lock_new(c, "fair", 4, &l), 0);
    lock_cycle(l, 0);
    lw_lock_free(l);
    nothing_but("", "a fair lock");
    cr_assert_eq(lw_client_free(c), 0);
}

REDIS_TEST(keys, a_multi_lock_leaves_no_key)
{
    struct lw_client *c = new_client(1000, NULL);
    struct lw_lock *l[2] = {new_lock(c, "m1"), new_lock(c, "m2")};
    struct lw_multi *m;

    cr_assert_eq(lw_multi_new(l, 2, &m), 0);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_multi_acquire(m, 2, 200, 0, NULL), LW_ELOCKED);
    sleep_ms(700);
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    lw_multi_free(m);
    lw_lock_free(l[0]);
    lw_lock_free(l[1]);
    nothing_but("", "a multi-lock");
    cr_assert_eq(lw_client_free(c), 0);
}

/* A semaphore leaves its count, which the user set, and nothing else: its
 * zset of permits goes with the last permit. */
REDIS_TEST(keys, a_semaphore_leaves_only_its_count)
{
    struct lw_client *c = new_client(1000, NULL);
    struct lw_semaphore *s;
    struct lw_permit p[2];

    cr_assert_eq(lw_semaphore_new(c, "sem", 3, &s), 0);
    cr_assert_eq(lw_semaphore_try_set(s, 1), 1);
    cr_assert_eq(lw_permit_acquire(s, 1, 0, 0, &p[0]), 0);
    cr_assert_eq(lw_permit_acquire(s, 1, 200, 0, &p[1]), LW_ELOCKED);
    sleep_ms(700);
    cr_assert_eq(lw_permit_release(s, &p[0], 1), 0);
    lw_semaphore_free(s);
    nothing_but("sem", "a semaphore");
    cr_assert_eq(lw_client_free(c), 0);
}

/* Fenced, a lock keeps the token counter, as Redisson's RFencedLock does:
 * asked for. */
REDIS_TEST(keys, a_fenced_lock_leaves_its_token_counter)
{
    struct lw_client *c = new_client(1000, NULL);
    struct lw_lock *l = new_lock(c, "fenced");

    cr_assert_eq(lw_lock_set_fenced(l, 1), 0);
    lock_cycle(l, 0);
    lw_lock_free(l);
    nothing_but("redisson_lock_token:{fenced}", "a fenced lock");
    cr_assert_eq(lw_client_free(c), 0);
}

static void on_observed_nothing(int state, const struct lw_leader *l, void *arg)
{
    (void)state;
    (void)l;
    (void)arg;
}

/* One candidate leads (campaigning twice: a re-entry), another waits and
 * leads when the first resigns, a third gives up waiting meanwhile, an
 * observer watches throughout; queued (the fair lock's queue) and not.
 * An election leaves its term counter (terms must rise for the name) and
 * nothing else: the term and value go with the lock, the queue with its
 * last waiter. */
static void election_cycle(struct lw_client *c, int queued)
{
    struct lw_election *e[4];
    struct outcome waiter = {0}, quitter = {0};

    for (int i = 0; i < 4; i++) {
        cr_assert_eq(lw_election_new(c, "elected", 7, &e[i]), 0);
        cr_assert_eq(lw_election_set_queued(e[i], queued), 0);
    }
    tally_init(&waiter.tally);
    tally_init(&quitter.tally);
    cr_assert_eq(lw_election_observe(e[3], on_observed_nothing, NULL), 0);
    cr_assert_eq(lw_election_campaign(e[0], "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_election_campaign(e[0], "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_election_campaign_async(e[1], "b", 1, 10000, on_outcome, &waiter), 0);
    cr_assert_eq(lw_election_campaign_async(e[2], "c", 1, 300, on_outcome, &quitter), 0);
    cr_assert_eq(tally_wait(&quitter.tally, 1, 5000), 1, "the third never gave up");
    cr_assert_eq(atomic_load(&quitter.err), LW_ELOCKED);
    sleep_ms(700); /* a few renewals of the 1 s lease */
    cr_assert_eq(lw_election_proclaim(e[0], "a2", 2), 0);
    cr_assert_eq(lw_election_resign(e[0]), 0);
    cr_assert_eq(tally_wait(&waiter.tally, 1, 5000), 1, "the waiter never led");
    cr_assert_eq(atomic_load(&waiter.err), 0);
    cr_assert_eq(lw_election_resign(e[1]), 0);
    cr_assert_eq(lw_election_unobserve(e[3]), 0);
    for (int i = 0; i < 4; i++)
        lw_election_free(e[i]);
    tally_destroy(&waiter.tally);
    tally_destroy(&quitter.tally);
}

REDIS_TEST(keys, an_election_leaves_its_term_counter)
{
    struct lw_client *c = new_client(1000, NULL);

    election_cycle(c, 1);
    nothing_but("redisson_lock_token:{elected}", "a queued election");
    election_cycle(c, 0);
    nothing_but("redisson_lock_token:{elected}", "an unqueued election");
    cr_assert_eq(lw_client_free(c), 0);
}
