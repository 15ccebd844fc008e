/*
 * tests/test_wrongtype.c - a name that holds another type of Redis value,
 * against every kind: each Redis type (a string, a list, a set, a sorted
 * set, a stream, an application's hash) refuses each kind's acquire (a
 * lock, a read and a write lock, a fair lock, permits, a multi-lock) with
 * LW_EWRONGTYPE, Redis's own words in lw_reply_error(), and the value
 * left as it was.  A hash is refused by its shape: a lock's hash
 * (Redisson's RLock, a read-write lock) held by another is held, one of
 * any other shape is no lock, and lw_name_status() says the same.  And Redis's words for another error (out of memory),
 * through a blocking call and a callback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <leasewheel/multi.h>
#include <leasewheel/semaphore.h>

#include "lock_util.h"

#define NAME "report"

/* A Redis type, and the command that makes NAME one. */
struct redis_type {
    const char *type;
    const char *make;
};

static const struct redis_type types[] = {
    {"string", "SET %s hello"}, {"list", "RPUSH %s a b"},   {"set", "SADD %s a b"},
    {"zset", "ZADD %s 1 a"},    {"stream", "XADD %s * f v"}, {"hash", "HSET %s f v"},
};
#define NTYPES (sizeof types / sizeof types[0])

enum kind { LOCK, READ, WRITE, FAIR, PERMITS, MULTI, NKINDS };
static const char *const kind_names[NKINDS] = {"lock", "read", "write", "fair", "permits", "multi"};

/* Redis's DUMP of NAME: its value as bytes, to see it untouched. */
static char *dump(size_t *len)
{
    redisReply *r = redis_server_command(&srv, "DUMP %s", NAME);
    char *copy;

    cr_assert(r && r->type == REDIS_REPLY_STRING, "DUMP %s", NAME);
    copy = malloc(r->len);
    cr_assert(copy);
    memcpy(copy, r->str, r->len);
    *len = r->len;
    freeReplyObject(r);
    return copy;
}

static void make(const struct redis_type *t)
{
    redisReply *r = redis_server_command(&srv, "DEL %s", NAME);

    freeReplyObject(r);
    r = redis_server_command(&srv, t->make, NAME);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s", t->make);
    freeReplyObject(r);
}

static int acquire_multi(struct lw_client *c)
{
    struct lw_lock *locks[2] = {new_lock(c, "free-one"), new_lock(c, NAME)};
    struct lw_multi *m = NULL;
    int rc;

    cr_assert_eq(lw_multi_new(locks, 2, &m), 0);
    lw_lock_free(locks[0]); /* the multi-lock keeps its own references */
    lw_lock_free(locks[1]);
    rc = lw_multi_acquire(m, 1, 0, 0, NULL);
    lw_multi_free(m);
    cr_assert_eq(redis_int("EXISTS %s", "free-one"), 0, "multi: the free name stayed held");
    return rc;
}

static int acquire_permits(struct lw_client *c)
{
    struct lw_semaphore *sem = NULL;
    struct lw_permit p;
    int rc;

    cr_assert_eq(lw_semaphore_new(c, NAME, strlen(NAME), &sem), 0);
    rc = lw_permit_acquire(sem, 1, 0, 0, &p);
    lw_semaphore_free(sem);
    return rc;
}

/* kind's acquire of NAME, without waiting. */
static int acquire(struct lw_client *c, enum kind kind)
{
    struct lw_lock *l = NULL;
    int rc;

    switch (kind) {
    case PERMITS: return acquire_permits(c);
    case MULTI: return acquire_multi(c);
    case READ: rc = lw_read_lock_new(c, NAME, strlen(NAME), &l); break;
    case WRITE: rc = lw_write_lock_new(c, NAME, strlen(NAME), &l); break;
    case FAIR: rc = lw_fair_lock_new(c, NAME, strlen(NAME), &l); break;
    default: rc = lw_lock_new(c, NAME, strlen(NAME), &l); break;
    }
    cr_assert_eq(rc, 0);
    rc = lw_acquire(l, 1, 0, 0, NULL);
    lw_lock_free(l);
    return rc;
}

/* Each type against each kind: LW_EWRONGTYPE, Redis's WRONGTYPE in
 * lw_reply_error(), the value as it was. */
REDIS_TEST(wrongtype, each_type_refuses_each_kind)
{
    struct lw_client *c = new_client(3000, NULL);
    int checked = 0;

    for (size_t t = 0; t < NTYPES; t++)
        for (int k = 0; k < NKINDS; k++) {
            size_t before_len, after_len;
            char *before, *after;
            int rc;

            make(&types[t]);
            before = dump(&before_len);
            rc = acquire(c, k);
            cr_assert_eq(rc, LW_EWRONGTYPE, "%s against %s: %s", types[t].type, kind_names[k],
                         lw_errname(rc));
            cr_assert(strstr(lw_reply_error(), "WRONGTYPE"), "%s against %s: \"%s\"",
                      types[t].type, kind_names[k], lw_reply_error());
            after = dump(&after_len);
            cr_assert(before_len == after_len && memcmp(before, after, before_len) == 0,
                      "%s against %s: the value changed", types[t].type, kind_names[k]);
            free(before);
            free(after);
            checked++;
        }
    cr_assert_eq(checked, (int)NTYPES * NKINDS);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The hashes a lock's name may hold, against the kinds of locks: a
 * Redisson RLock's (its UUID and thread id) held by another, a
 * read-write lock's, and an application's hashes of other shapes, which
 * are no lock (LW_EWRONGTYPE, where they were waited on for ever).  And
 * what lw_name_status() calls each. */
REDIS_TEST(wrongtype, a_hash_is_a_lock_by_its_shape)
{
    static const struct {
        const char *what;
        const char *fields; /* HSET NAME's arguments */
        int status;         /* lw_name_status()'s kind */
        int want[MULTI + 1];
    } hashes[] = {
        {"Redisson's RLock",
         "8743c9c0-0795-4907-87fd-6c719a6b4586:1 1",
         LW_NAME_LOCK,
         {[LOCK] = LW_ELOCKED,
          [READ] = LW_EWRONGKIND,
          [WRITE] = LW_EWRONGKIND,
          [FAIR] = LW_ELOCKED,
          [MULTI] = LW_ELOCKED}},
        {"a read lock",
         "mode read 8743c9c0-0795-4907-87fd-6c719a6b4586:1 2",
         LW_NAME_READ,
         {[LOCK] = LW_EWRONGKIND,
          [READ] = 0,
          [WRITE] = LW_ELOCKED,
          [FAIR] = LW_EWRONGKIND,
          [MULTI] = LW_EWRONGKIND}},
        {"a write lock",
         "mode write 8743c9c0-0795-4907-87fd-6c719a6b4586:1:write 1",
         LW_NAME_WRITE,
         {[LOCK] = LW_EWRONGKIND,
          [READ] = LW_ELOCKED,
          [WRITE] = LW_ELOCKED,
          [FAIR] = LW_EWRONGKIND,
          [MULTI] = LW_EWRONGKIND}},
        {"a field with no owner", "f v", LW_NAME_OTHER,
         {LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, 0, LW_EWRONGTYPE}},
        {"a holder's field with no count", "web-1:7 ready", LW_NAME_OTHER,
         {LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, 0, LW_EWRONGTYPE}},
        {"two holders and no mode", "a:1 1 b:2 1", LW_NAME_OTHER,
         {LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, 0, LW_EWRONGTYPE}},
        {"a mode that is no lock's", "mode dark a:1 1", LW_NAME_OTHER,
         {LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, LW_EWRONGTYPE, 0, LW_EWRONGTYPE}},
    };
    struct lw_client *c = new_client(3000, NULL);
    struct lw_lock *l = new_lock(c, NAME);
    struct lw_name_status st;

    for (size_t h = 0; h < sizeof hashes / sizeof hashes[0]; h++)
        for (int k = 0; k < NKINDS; k++) {
            char cmd[160];
            redisReply *r;
            int rc;

            if (k == PERMITS)
                continue;
            r = redis_server_command(&srv, "DEL %s", NAME);
            freeReplyObject(r);
            snprintf(cmd, sizeof cmd, "HSET %s %s", NAME, hashes[h].fields);
            r = redis_server_command(&srv, cmd);
            cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", cmd);
            freeReplyObject(r);
            rc = acquire(c, k);
            cr_assert_eq(rc, hashes[h].want[k], "%s against %s: %s, not %s", hashes[h].what,
                         kind_names[k], lw_errname(rc), lw_errname(hashes[h].want[k]));
            if (rc == LW_EWRONGTYPE)
                cr_assert(strstr(lw_reply_error(), "a hash that is not a lock"), "%s: \"%s\"",
                          hashes[h].what, lw_reply_error());
            cr_assert_eq(lw_name_status(l, &st), 0);
            cr_assert_eq(st.kind, hashes[h].status, "%s: kind %d", hashes[h].what, st.kind);
            cr_assert_str_eq(st.type, "hash");
            if (st.kind == LW_NAME_OTHER)
                cr_assert_eq(st.nholders, 0, "%s", hashes[h].what);
        }
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A call that Redis answers without an error clears the words. */
REDIS_TEST(wrongtype, a_call_without_an_error_clears_the_words)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_lock *l = new_lock(c, "free-one");

    make(&types[0]);
    cr_assert_eq(acquire(c, LOCK), LW_EWRONGTYPE);
    cr_assert_neq(lw_reply_error()[0], 0);
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), 0);
    cr_assert_str_eq(lw_reply_error(), "");
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The words are the thread's: another thread's error does not show. */
struct other {
    struct lw_lock *lock;
    int rc;
    char words[LW_REPLY_ERROR_MAX];
};

static void *other_thread(void *arg)
{
    struct other *o = arg;

    o->rc = lw_acquire(o->lock, 1, 0, 0, NULL);
    snprintf(o->words, sizeof o->words, "%s", lw_reply_error());
    return NULL;
}

REDIS_TEST(wrongtype, the_words_are_the_threads_own)
{
    struct lw_client *c = new_client(3000, NULL);
    struct other o = {.lock = new_lock(c, NAME)};
    pthread_t t;

    make(&types[0]);
    cr_assert_str_eq(lw_reply_error(), "");
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &o), 0);
    pthread_join(t, NULL);
    cr_assert_eq(o.rc, LW_EWRONGTYPE);
    cr_assert(strncmp(o.words, "WRONGTYPE ", 10) == 0, "%s", o.words);
    cr_assert_str_eq(lw_reply_error(), "");
    lw_lock_free(o.lock);
    cr_assert_eq(lw_client_free(c), 0);
}

struct said {
    struct tally tally;
    _Atomic int err;
    char words[LW_REPLY_ERROR_MAX];
};

static void keep_words(int err, int64_t value, void *arg)
{
    struct said *s = arg;

    (void)value;
    snprintf(s->words, sizeof s->words, "%s", lw_reply_error());
    atomic_store(&s->err, err);
    tally_add(&s->tally, err);
}

/* Another error in Redis's words (out of memory, with maxmemory set and
 * nothing to evict): LW_EREPLY, and "OOM ..." through a blocking call and
 * a callback; the callback's words are gone once it returned. */
REDIS_TEST(wrongtype, redis_words_for_another_error)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_lock *l = new_lock(c, "free-one");
    struct said s = {0};
    redisReply *r;

    tally_init(&s.tally);
    r = redis_server_command(&srv, "CONFIG SET maxmemory 1");
    freeReplyObject(r);
    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), LW_EREPLY);
    cr_assert(strncmp(lw_reply_error(), "OOM ", 4) == 0, "\"%s\"", lw_reply_error());
    cr_assert_eq(lw_acquire_async(l, 2, 0, 0, keep_words, &s), 0);
    cr_assert_eq(tally_wait(&s.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&s.err), LW_EREPLY);
    cr_assert(strncmp(s.words, "OOM ", 4) == 0, "\"%s\"", s.words);
    r = redis_server_command(&srv, "CONFIG SET maxmemory 0");
    freeReplyObject(r);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
    tally_destroy(&s.tally);
}
