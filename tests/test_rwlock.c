/*
 * tests/test_rwlock.c - read-write locks (lw_read_lock_new(),
 * lw_write_lock_new()) against a real redis-server, interleaved with
 * Redisson's own read-write lock scripts (redisson_rw.h, verbatim, their
 * SHA1s checked at SCRIPT LOAD): the format on the wire, sharing and
 * exclusion, downgrade, no upgrade, the other kind refused, wake-ups by
 * message, renewal, force-unlock seen as lost.
 */
#include <pthread.h>
#include <stdlib.h>

#include "client_base.h"
#include "fixture_util.h"
#include "lock_util.h"
#include "attempts_util.h"
#include "rw_util.h"

static void load_redisson(redisContext *rc)
{
    static const char *const scripts[][2] = {
        {RS_READ_LOCK, RS_READ_LOCK_SHA},
        {RS_READ_UNLOCK, RS_READ_UNLOCK_SHA},
        {RS_READ_IS_LOCKED, RS_READ_IS_LOCKED_SHA},
        {RS_WRITE_LOCK, RS_WRITE_LOCK_SHA},
        {RS_WRITE_UNLOCK, RS_WRITE_UNLOCK_SHA},
    };

    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++)
        load_checked(rc, scripts[i][0], scripts[i][1]);
}

/* Redisson's write tryLock for field with lease_ms: 1 acquired (nil), 0
 * not. */
static int redisson_write_lock(redisContext *rc, const char *name, const char *field,
                               int lease_ms)
{
    redisReply *r = redisCommand(rc, "EVALSHA %s 1 %s %d %s:write", RS_WRITE_LOCK_SHA, name,
                                 lease_ms, field);
    int got;

    cr_assert(r && r->type != REDIS_REPLY_ERROR);
    got = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    return got;
}

/* Redisson's write unlock of field's last hold: 1 released (and 1
 * published when no one reads), 0 still held, -1 nil. */
static long long redisson_write_unlock(redisContext *rc, const char *name, const char *field)
{
    char channel[300], latch[300];
    redisReply *r;
    long long v;

    snprintf(channel, sizeof channel, "redisson_rwlock:{%s}", name);
    snprintf(latch, sizeof latch, "redisson_unlock_latch:{%s}:%032x", name, (unsigned)rand());
    r = redisCommand(rc, "EVALSHA %s 3 %s %s %s 1 30000 %s:write publish 30000",
                     RS_WRITE_UNLOCK_SHA, name, channel, latch, field);
    cr_assert(r && r->type != REDIS_REPLY_ERROR);
    v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

static long long redisson_read_is_locked(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "EVALSHA %s 1 %s", RS_READ_IS_LOCKED_SHA, name);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return v;
}

/* A subscriber to the name's channel, and the next message on it (NULL
 * when none within ms). */
static redisContext *subscribe(const char *name)
{
    redisContext *sub = connect_srv();
    redisReply *r = redisCommand(sub, "SUBSCRIBE redisson_rwlock:{%s}", name);

    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    return sub;
}

static int next_message(redisContext *sub, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisReply *r = NULL;
    int msg = -1;

    redisSetTimeout(sub, tv);
    if (redisGetReply(sub, (void **)&r) == REDIS_OK && r && r->type == REDIS_REPLY_ARRAY &&
        r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING)
        msg = atoi(r->element[2]->str);
    freeReplyObject(r);
    return msg;
}

/* Readers share, in Redisson's layout: mode, the field's count, one
 * timeout key per hold; Redisson's isLocked sees it and its writer is kept
 * out; the last read release deletes it and publishes 0. */
REDIS_TEST(rwlock, readers_share_in_redissons_format)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "books");
    redisContext *rc = connect_srv(), *sub = subscribe("books");
    char field[128], key[256];
    uint64_t token = 99;

    load_redisson(rc);
    own_field(c, field, sizeof field);
    cr_assert_eq(lw_lock_acquire(r, &token), 0);
    cr_assert_eq(token, 0, "reads have no token");
    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert_eq(lw_hold_count(r), 2);
    cr_assert_eq(lw_is_held(r), 1);
    cr_assert_eq(lw_is_locked(r), 1);
    cr_assert_eq(redis_int("HGET books %s", field), 2);
    {
        redisReply *m = redis_server_command(&srv, "HGET books mode");

        cr_assert(m && m->type == REDIS_REPLY_STRING);
        cr_assert_str_eq(m->str, "read");
        freeReplyObject(m);
    }
    for (int i = 1; i <= 2; i++) {
        snprintf(key, sizeof key, "{books}:%s:rwlock_timeout:%d", field, i);
        cr_assert_gt(redis_int("PTTL %s", key), 29000);
    }
    cr_assert_eq(redisson_read_is_locked(rc, "books"), 1);
    cr_assert(redisson_read_lock(rc, "books", "redisson-reader:1", 30000), "readers share");
    cr_assert_not(redisson_write_lock(rc, "books", "redisson-writer:1", 30000));
    cr_assert_eq(redisson_read_unlock(rc, "books", "redisson-reader:1"), 0);

    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(redis_int("EXISTS %s", "books"), 1);
    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(redis_int("EXISTS %s", "books"), 0);
    cr_assert_eq(next_message(sub, 2000), 0, "the last reader publishes 0");
    cr_assert_eq(lw_unlock(r), LW_ENOTOWNER);
    redisFree(sub);
    redisFree(rc);
    lw_lock_free(r);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A Redisson reader with a 1 s lease leaves while ours holds on the
 * watchdog: its unlock (Redisson's scan of every reader's timeout keys)
 * must keep the hash for ours.  Then a Redisson reader whose keys are left
 * to expire does not keep the lock once ours leaves: a writer gets in. */
REDIS_TEST(rwlock, redisson_readers_leave_and_expire_around_ours)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "shelf"), *w = write_lock(c, "shelf");
    redisContext *rc = connect_srv();

    load_redisson(rc);
    cr_assert(redisson_read_lock(rc, "shelf", "redisson-reader:1", 1000));
    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert_eq(redisson_read_unlock(rc, "shelf", "redisson-reader:1"), 0);
    cr_assert_gt(redis_int("PTTL %s", "shelf"), 28000, "the hash kept to our lease");

    cr_assert(redisson_read_lock(rc, "shelf", "redisson-reader:2", 300));
    cr_assert(wait_until(redis_int("EXISTS %s", "{shelf}:redisson-reader:2:rwlock_timeout:1") == 0,
                         3000));
    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(redis_int("EXISTS %s", "shelf"), 0, "an expired reader does not keep it");
    cr_assert_eq(lw_trylock(w, 0, 0, NULL), 0);
    cr_assert_eq(lw_unlock(w), 0);
    redisFree(rc);
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The writer may read too (a downgrade); its write release then leaves it
 * reading, publishing 1.  A reader may not write (no upgrade): a waiting
 * write acquire fails at once with LW_EDEADLK, a try with LW_ELOCKED. */
REDIS_TEST(rwlock, downgrade_allowed_upgrade_refused)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "doc"), *w = write_lock(c, "doc");
    redisContext *sub = subscribe("doc");
    uint64_t t1 = 0, t2 = 0, start;

    cr_assert_eq(lw_lock_set_fenced(r, 1), LW_EINVAL, "a read lock has no token");
    cr_assert_eq(lw_lock_set_fenced(w, 1), 0);
    cr_assert_eq(lw_lock_acquire(w, &t1), 0);
    cr_assert_gt(t1, 0, "a fenced write acquire takes a fencing token");
    cr_assert_eq(lw_trylock(r, 0, 0, NULL), 0, "the writer may read");
    cr_assert_eq(lw_is_locked(w), 1);
    cr_assert_eq(lw_unlock(w), 0);
    cr_assert_eq(next_message(sub, 2000), 1, "a write release publishes 1");
    cr_assert_eq(lw_is_locked(w), 0);
    cr_assert_eq(lw_is_held(r), 1, "still reading after the downgrade");

    start = now_ms();
    cr_assert_eq(lw_trylock(w, 10000, 0, NULL), LW_EDEADLK);
    cr_assert_lt(now_ms() - start, 5000, "refused at once, not after the wait");
    cr_assert_eq(lw_trylock(w, 0, 0, NULL), LW_ELOCKED);
    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(lw_lock_acquire(w, &t2), 0);
    cr_assert_gt(t2, t1);
    cr_assert_eq(lw_unlock(w), 0);
    redisFree(sub);
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* No minimum hold for a read-write lock: lw_unlock_after() refuses its
 * handles and leaves the hold as it was. */
REDIS_TEST(rwlock, unlock_after_refused_for_read_and_write)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "shelf"), *w = write_lock(c, "shelf2");

    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert_eq(lw_lock_acquire(w, NULL), 0);
    cr_assert_eq(lw_unlock_after(r, lw_owner_self(), 5000), LW_EINVAL);
    cr_assert_eq(lw_unlock_after(w, lw_owner_self(), 5000), LW_EINVAL);
    cr_assert_eq(lw_is_held(r), 1, "the read hold is untouched");
    cr_assert_eq(lw_is_held(w), 1, "the write hold is untouched");
    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(lw_unlock(w), 0);
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A plain lock's name refuses read and write acquires, a read-write
 * lock's refuses a lock's, and nothing is added to either hash. */
REDIS_TEST(rwlock, the_other_kind_is_refused)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *plain = new_lock(c, "plain"), *pr = read_lock(c, "plain"),
                   *pw = write_lock(c, "plain");
    struct lw_lock *rw = read_lock(c, "rw"), *rwl = new_lock(c, "rw");

    cr_assert_eq(lw_lock_acquire(plain, NULL), 0);
    cr_assert_eq(lw_trylock(pr, 1000, 0, NULL), LW_EWRONGKIND);
    cr_assert_eq(lw_trylock(pw, 1000, 0, NULL), LW_EWRONGKIND);
    cr_assert_eq(redis_int("HLEN %s", "plain"), 1, "no mode added to a plain lock");
    cr_assert_eq(lw_unlock(pr), LW_ENOTOWNER);
    cr_assert_eq(lw_unlock(plain), 0);

    cr_assert_eq(lw_lock_acquire(rw, NULL), 0);
    cr_assert_eq(lw_trylock(rwl, 1000, 0, NULL), LW_EWRONGKIND);
    cr_assert_eq(redis_int("HLEN %s", "rw"), 2);
    cr_assert_eq(lw_unlock(rw), 0);
    lw_lock_free(plain);
    lw_lock_free(pr);
    lw_lock_free(pw);
    lw_lock_free(rw);
    lw_lock_free(rwl);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Waiters wake on the channel's messages, not on the holder's lease (30
 * s, far past the test's bounds): a reader waiting for a writer, a writer
 * waiting for readers, in both directions through another client. */
REDIS_TEST(rwlock, waiters_wake_on_messages)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *aw = write_lock(a, "queue"), *ar = read_lock(a, "queue");
    struct lw_lock *br = read_lock(b, "queue"), *bw = write_lock(b, "queue");
    struct outcome got;

    cr_assert_eq(lw_lock_acquire(aw, NULL), 0);
    tally_init(&got.tally);
    cr_assert_eq(lw_acquire_async(br, 7, LW_WAIT_FOREVER, 0, on_outcome, &got), 0);
    cr_assert_eq(tally_wait(&got.tally, 1, 300), 0, "the reader waits for the writer");
    cr_assert_eq(lw_unlock(aw), 0);
    cr_assert_eq(tally_wait(&got.tally, 1, 10000), 1, "woken by the write release's 1");
    cr_assert_eq(atomic_load(&got.err), 0);
    tally_destroy(&got.tally);

    tally_init(&got.tally);
    cr_assert_eq(lw_acquire_async(aw, 8, LW_WAIT_FOREVER, 0, on_outcome, &got), 0);
    cr_assert_eq(tally_wait(&got.tally, 1, 300), 0, "the writer waits for the reader");
    cr_assert_eq(lw_unlock_owner(br, 7), 0);
    cr_assert_eq(tally_wait(&got.tally, 1, 10000), 1, "woken by the read release's 0");
    cr_assert_eq(atomic_load(&got.err), 0);
    cr_assert_eq(lw_unlock_owner(aw, 8), 0);
    tally_destroy(&got.tally);
    (void)ar;
    (void)bw;
    lw_lock_free(aw);
    lw_lock_free(ar);
    lw_lock_free(br);
    lw_lock_free(bw);
    cr_assert_eq(lw_client_free(a), 0);
    cr_assert_eq(lw_client_free(b), 0);
}

/* Read holds on the watchdog outlive their lease, every timeout key with
 * them; a force-unlock by another client is seen as lost. */
REDIS_TEST(rwlock, read_holds_renewed_and_force_unlock_seen_as_lost)
{
    struct lost_log lost;
    struct lw_client *a = new_client(1000, &lost), *b = new_client(30000, NULL);
    struct lw_lock *r = read_lock(a, "feed"), *force = read_lock(b, "feed");
    struct lw_client_stats st;
    char field[128], key[256];

    own_field(a, field, sizeof field);
    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert(wait_until((lw_client_get_stats(a, &st), st.renewals_confirmed >= 6), 10000));
    cr_assert_eq(atomic_load(&lost.count), 0);
    for (int i = 1; i <= 2; i++) {
        snprintf(key, sizeof key, "{feed}:%s:rwlock_timeout:%d", field, i);
        cr_assert_gt(redis_int("PTTL %s", key), 0, "timeout key %d renewed", i);
    }
    cr_assert_eq(lw_force_unlock(force), 1);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 5000), "the reader is told");
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_NOT_OWNER);
    lw_lock_free(r);
    lw_lock_free(force);
    cr_assert_eq(lw_client_free(a), 0);
    cr_assert_eq(lw_client_free(b), 0);
}

/* 15 threads of one client read without a pause between them, so the
 * name is never free of readers; a writer of the same client still gets
 * in: while it waits, the client's new read acquires queue behind it. */
struct reader_loop {
    struct lw_lock *lock;
    _Atomic int *stop;
    _Atomic int reads;
};

static void *reader_thread(void *arg)
{
    struct reader_loop *rl = arg;

    for (int i = 0; i < 100000 && !atomic_load(rl->stop); i++) {
        if (lw_lock_acquire(rl->lock, NULL) != 0)
            break;
        sleep_ms(2);
        atomic_fetch_add(&rl->reads, 1);
        if (lw_unlock(rl->lock) != 0)
            break;
    }
    return NULL;
}

REDIS_TEST(rwlock, writer_not_starved_by_its_clients_readers)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "hot"), *w = write_lock(c, "hot");
    _Atomic int stop = 0;
    struct reader_loop rl[15];
    pthread_t th[15];
    int before = 0, after = 0;
    uint64_t start;

    for (int i = 0; i < 15; i++) {
        rl[i] = (struct reader_loop){.lock = r, .stop = &stop};
        cr_assert_eq(pthread_create(&th[i], NULL, reader_thread, &rl[i]), 0);
    }
    cr_assert(wait_until(atomic_load(&rl[14].reads) > 5, 10000), "the readers run");
    for (int i = 0; i < 15; i++)
        before += atomic_load(&rl[i].reads);
    start = now_ms();
    cr_assert_eq(lw_trylock(w, 20000, 0, NULL), 0, "the writer got in");
    cr_log_info("writer waited %llu ms behind 15 readers",
                (unsigned long long)(now_ms() - start));
    cr_assert_eq(redis_int("HLEN %s", "hot"), 2, "alone: mode and its field");
    cr_assert_eq(lw_unlock(w), 0);
    cr_assert(wait_until(atomic_load(&rl[0].reads) + atomic_load(&rl[14].reads) > 0, 5000));
    atomic_store(&stop, 1);
    for (int i = 0; i < 15; i++) {
        pthread_join(th[i], NULL);
        after += atomic_load(&rl[i].reads);
    }
    cr_assert_gt(after, before, "the readers went on after the writer");
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A force-unlock of the other mode frees nothing, and the holds it did
 * not free go on being renewed (they are not forgotten by the client). */
REDIS_TEST(rwlock, force_unlock_of_the_other_mode_keeps_the_holds)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1000, &lost);
    struct lw_lock *r = read_lock(c, "pad"), *w = write_lock(c, "pad");
    struct lw_client_stats st;
    uint64_t confirmed;

    cr_assert_eq(lw_lock_acquire(r, NULL), 0);
    cr_assert_eq(lw_force_unlock(w), 0, "not held for writing: nothing to free");
    lw_client_get_stats(c, &st);
    confirmed = st.renewals_confirmed;
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.renewals_confirmed >= confirmed + 6),
                         10000),
              "the read hold is still renewed");
    cr_assert_eq(atomic_load(&lost.count), 0);
    cr_assert_eq(lw_is_held(r), 1);
    cr_assert_eq(lw_force_unlock(r), 1);
    cr_assert_eq(redis_int("EXISTS %s", "pad"), 0);
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Lease holds (not the watchdog's) of one owner, read and write of one
 * name, are kept apart: releasing the write lock leaves the read hold
 * known, and its release is that of a read. */
REDIS_TEST(rwlock, lease_holds_of_both_modes)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *r = read_lock(c, "leased"), *w = write_lock(c, "leased");

    cr_assert_eq(lw_lock_lease(w, 20000, NULL), 0);
    cr_assert_eq(lw_lock_lease(r, 20000, NULL), 0);
    cr_assert_eq(lw_unlock(w), 0);
    cr_assert_eq(lw_is_held(r), 1);
    cr_assert_eq(lw_is_held(w), 0);
    cr_assert_eq(lw_unlock(r), 0);
    cr_assert_eq(redis_int("EXISTS %s", "leased"), 0);
    lw_lock_free(r);
    lw_lock_free(w);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Readers of this client waiting behind another client's writer all get
 * in when it leaves (its one message wakes them all), long before the
 * holder's lease (30 s) would have them retry. */
REDIS_TEST(rwlock, waiting_readers_all_woken_by_a_write_release)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *aw = write_lock(a, "news"), *br = read_lock(b, "news");
    struct outcome got;

    cr_assert_eq(lw_lock_acquire(aw, NULL), 0);
    tally_init(&got.tally);
    for (uint64_t owner = 1; owner <= 5; owner++)
        cr_assert_eq(lw_acquire_async(br, owner, LW_WAIT_FOREVER, 0, on_outcome, &got), 0);
    cr_assert_eq(tally_wait(&got.tally, 1, 300), 0, "the readers wait for the writer");
    cr_assert_eq(lw_unlock(aw), 0);
    cr_assert_eq(tally_wait(&got.tally, 5, 10000), 5, "all five readers got in");
    cr_assert_eq(redis_int("HLEN %s", "news"), 6, "mode and five readers");
    for (uint64_t owner = 1; owner <= 5; owner++)
        cr_assert_eq(lw_unlock_owner(br, owner), 0);
    tally_destroy(&got.tally);
    lw_lock_free(aw);
    lw_lock_free(br);
    cr_assert_eq(lw_client_free(a), 0);
    cr_assert_eq(lw_client_free(b), 0);
}

/* ---- Who a message wakes, and how many attempts it costs ---- */

static long long subscribed(const char *name)
{
    char channel[300];
    redisReply *r;
    long long n;

    snprintf(channel, sizeof channel, "redisson_rwlock:{%s}", name);
    r = redis_server_command(&srv, "PUBSUB NUMSUB %s", channel);
    n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

/* The line behind the first waiter (FIRST_WAITER_SETTLED(), attempts_util.h)
 * holds all `n`, and the first's last answer is in, once a query of
 * `lock` (one more script) has come back: the count to compare with. */
static long long lined_up(struct lw_client *c, struct lw_lock *lock, uint64_t n,
                          long long start)
{
    struct lw_client_stats st;

    cr_assert(wait_until((lw_client_get_stats(c, &st), st.waiters == n),
                         5000),
              "%llu waiters in line, not %llu", (unsigned long long)st.waiters,
              (unsigned long long)n);
    cr_assert_geq(lw_is_locked(lock), 0); /* one more script */
    cr_assert_eq(evalsha_calls() - start, 3, "the waiters behind the first sent nothing");
    return start + 3;
}

/* Readers woken at once: the first to hear that it got in looks at the
 * hash from its callback, on the engine thread, before that thread sends
 * anything more.  Woken one after another, it alone would be in (the
 * next is sent after its reply); woken together, all their attempts went
 * in one write ahead of its reply, and every one of them is in. */
struct together {
    struct outcome o;
    const char *name;
    _Atomic long long first_saw; /* the hash's fields then; -1 none yet */
};

static void on_reader_in(int err, int64_t value, void *arg)
{
    struct together *t = arg;

    if (atomic_load(&t->first_saw) == -1)
        atomic_store(&t->first_saw, redis_int("HLEN %s", t->name));
    on_outcome(err, value, &t->o);
}

/* A Redisson writer's release (its write unlock: one message, 1) lets this
 * client's five waiting readers in together: five attempts, one each, all
 * on the wire before the first answer, not a chain. */
REDIS_TEST(rwlock, a_writers_1_wakes_the_readers_at_once)
{
    struct lw_client *b = new_client(30000, NULL);
    struct lw_lock *br = read_lock(b, "board");
    redisContext *rc = connect_srv();
    struct together t = {.name = "board", .first_saw = -1};
    long long before;

    load_redisson(rc);
    cr_assert(redisson_write_lock(rc, "board", "java-1:7", 30000));
    tally_init(&t.o.tally);
    before = evalsha_calls();
    cr_assert_eq(lw_acquire_async(br, 1, LW_WAIT_FOREVER, 0, on_reader_in, &t), 0);
    FIRST_WAITER_SETTLED(subscribed("board"), before);
    for (uint64_t owner = 2; owner <= 5; owner++)
        cr_assert_eq(lw_acquire_async(br, owner, LW_WAIT_FOREVER, 0, on_reader_in, &t), 0);
    before = lined_up(b, br, 5, before);
    cr_assert_eq(tally_wait(&t.o.tally, 1, 0), 0, "the readers wait for the writer");

    cr_assert_eq(redisson_write_unlock(rc, "board", "java-1:7"), 1);
    cr_assert_eq(tally_wait(&t.o.tally, 5, 5000), 5, "all five readers got in");
    cr_assert_eq(atomic_load(&t.o.err), 0);
    cr_assert_eq(atomic_load(&t.first_saw), 6,
                 "when the first reader heard it got in, the hash had %lld fields, not mode "
                 "and five readers",
                 atomic_load(&t.first_saw));
    cr_assert_eq(evalsha_settled() - before, 1 + 5,
                 "Redisson's unlock and one attempt per reader");
    for (uint64_t owner = 1; owner <= 5; owner++)
        cr_assert_eq(lw_unlock_owner(br, owner), 0);
    tally_destroy(&t.o.tally);
    redisFree(rc);
    lw_lock_free(br);
    cr_assert_eq(lw_client_free(b), 0);
}

/* A Redisson reader's last release (0) wakes the client's waiting writer,
 * with one attempt; the client's reader that came after the writer waits
 * behind it (writers first inside the client) and gets in at the writer's
 * own release (1). */
REDIS_TEST(rwlock, a_readers_0_wakes_the_writer_and_reads_wait_behind_it)
{
    struct lw_client *b = new_client(30000, NULL);
    struct lw_lock *bw = write_lock(b, "ledger"), *br = read_lock(b, "ledger");
    redisContext *rc = connect_srv();
    struct outcome wr, rd;
    long long before;

    load_redisson(rc);
    cr_assert(redisson_read_lock(rc, "ledger", "java-1:7", 30000));
    tally_init(&wr.tally);
    tally_init(&rd.tally);
    before = evalsha_calls();
    cr_assert_eq(lw_acquire_async(bw, 1, LW_WAIT_FOREVER, 0, on_outcome, &wr), 0);
    FIRST_WAITER_SETTLED(subscribed("ledger"), before);
    /* Redis holds it for reading: only the writer's turn keeps this out. */
    cr_assert_eq(lw_acquire_async(br, 2, LW_WAIT_FOREVER, 0, on_outcome, &rd), 0);
    before = lined_up(b, br, 2, before);
    cr_assert_eq(tally_wait(&wr.tally, 1, 0) + tally_wait(&rd.tally, 1, 0), 0);

    cr_assert_eq(redisson_read_unlock(rc, "ledger", "java-1:7"), 1, "freed: 0 published");
    cr_assert_eq(tally_wait(&wr.tally, 1, 5000), 1, "the writer got in");
    cr_assert_eq(atomic_load(&wr.err), 0);
    cr_assert_eq(evalsha_settled() - before, 1 + 1, "Redisson's unlock and the writer's one "
                                                    "attempt: the reader sent none");
    cr_assert_eq(tally_wait(&rd.tally, 1, 0), 0, "the reader waits behind the writer");

    cr_assert_eq(lw_unlock_owner(bw, 1), 0);
    cr_assert_eq(tally_wait(&rd.tally, 1, 5000), 1, "the writer's 1 let the reader in");
    cr_assert_eq(atomic_load(&rd.err), 0);
    cr_assert_eq(lw_unlock_owner(br, 2), 0);
    tally_destroy(&wr.tally);
    tally_destroy(&rd.tally);
    redisFree(rc);
    lw_lock_free(bw);
    lw_lock_free(br);
    cr_assert_eq(lw_client_free(b), 0);
}
