/*
 * tests/test_kinds.c - the lease kinds' batches on the wire, against a real
 * redis-server and Redisson's own read-write lock scripts (redisson_rw.h,
 * verbatim, their SHA1s checked at SCRIPT LOAD).
 *
 * Each test builds a batch exactly as the watchdog does (the kind's put(),
 * the lease as the call's argument, batch_assemble()) and runs the kind's
 * script on it, then looks at what Redisson would see: a read hold's
 * timeout keys, "{name}:<field>:rwlock_timeout:<i>", renewed with the
 * hash, nobody else's keys touched, and a Redisson reader's unlock that
 * leaves the hash to the longest of them.
 */
#include <stdlib.h>

#include "client_private.h"
#include "lock_util.h"
#include "fixture_util.h"
#include "redisson_rw.h"

static redisContext *connect_srv(void)
{
    redisContext *rc = fixture_connect_at(srv.port, srv.unix_path, NULL, 2000);

    cr_assert(rc && !rc->err, "no connection to the fixture");
    return rc;
}

static void load_checked(redisContext *rc, const char *script, const char *sha)
{
    redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", script);

    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, sha, "a Redisson script is not verbatim");
    freeReplyObject(r);
}

/* Redisson's read lock: tryLock with lease_ms for field (nil: acquired). */
static void redisson_read_lock(redisContext *rc, const char *name, const char *field,
                               int lease_ms)
{
    char prefix[300], write_field[200];
    redisReply *r;

    snprintf(prefix, sizeof prefix, strchr(name, '{') ? "%s:%s:rwlock_timeout" : "{%s}:%s:rwlock_timeout",
             name, field);
    snprintf(write_field, sizeof write_field, "%s:write", field);
    r = redisCommand(rc, "EVALSHA %s 2 %s %s %d %s %s", RS_READ_LOCK_SHA, name, prefix,
                     lease_ms, field, write_field);
    cr_assert(r && r->type == REDIS_REPLY_NIL, "Redisson's read lock was not acquired");
    freeReplyObject(r);
}

/* Redisson's read unlock for field: its reply (0 still locked, 1 freed). */
static long long redisson_read_unlock(redisContext *rc, const char *name, const char *field)
{
    char prefix[300], channel[300], tag[300], latch[300];
    redisReply *r;
    long long v;

    snprintf(prefix, sizeof prefix, "{%s}:%s:rwlock_timeout", name, field);
    snprintf(channel, sizeof channel, "redisson_rwlock:{%s}", name);
    snprintf(tag, sizeof tag, "{%s}", name);
    snprintf(latch, sizeof latch, "redisson_unlock_latch:{%s}:0123456789abcdef0123456789abcdef",
             name);
    r = redisCommand(rc, "EVALSHA %s 5 %s %s %s %s %s 0 %s publish 30000", RS_READ_UNLOCK_SHA,
                     name, channel, prefix, tag, latch, field);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "Redisson's read unlock failed");
    v = r->integer;
    freeReplyObject(r);
    return v;
}

static struct entry *make_entry(const char *name, uint64_t owner, uint32_t holds, uint8_t kind)
{
    size_t len = strlen(name);
    struct entry *e = calloc(1, sizeof *e + len + 1);

    cr_assert(e);
    memcpy(e->name, name, len);
    e->len = (uint32_t)len;
    e->owner = owner;
    e->holds = holds;
    e->kind = kind;
    return e;
}

/* One batch of kind as the watchdog sends it (node: a cluster node's
 * layout), run with EVAL; the reply. */
static redisReply *run_batch(redisContext *rc, struct lw_client *c, uint8_t kind,
                             struct entry **e, uint32_t n, int node)
{
    const struct lease_kind *k = lw_kinds[kind];
    struct batch_args *a = batch_args_new();
    const char **argv;
    size_t *lens;
    char nkeys[16];
    int nargs, keys;
    redisReply *r;

    cr_assert(a);
    for (uint32_t i = 0; i < n; i++)
        k->put(c, e[i], node, a);
    batch_call(a, c->lease_str, c->lease_len);
    batch_call(a, c->id, c->id_len);
    cr_assert_geq(nargs = batch_assemble(a), 0);
    keys = node ? 0 : (int)a->keys.n;
    argv = calloc((size_t)nargs + 3, sizeof *argv);
    lens = calloc((size_t)nargs + 3, sizeof *lens);
    argv[0] = "EVAL";
    argv[1] = lw_lock_scripts[node ? k->renew_node : k->renew];
    argv[2] = nkeys;
    snprintf(nkeys, sizeof nkeys, "%d", keys);
    for (int i = 0; i < 3; i++)
        lens[i] = strlen(argv[i]);
    memcpy(argv + 3, a->argv, (size_t)nargs * sizeof *argv);
    memcpy(lens + 3, a->lens, (size_t)nargs * sizeof *lens);
    r = redisCommandArgv(rc, nargs + 3, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == n, "%s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not one answer per entry");
    free(argv);
    free(lens);
    batch_args_free(a);
    return r;
}

static long long pttl(redisContext *rc, const char *key)
{
    redisReply *r = redisCommand(rc, "PTTL %s", key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1000;

    freeReplyObject(r);
    return v;
}

static void field_of(struct lw_client *c, uint64_t owner, char *buf)
{
    client_field(c, owner, buf);
}

/* A leasewheel reader (2 holds), a Redisson reader (1 hold, 1 s) and a
 * name with its own hash tag: one batch renews every own timeout key and
 * the hashes, leaves the other reader's key alone, and answers 0 for a
 * name whose field is gone.  Then the other reader's unlock (Redisson's
 * script) finds our keys alive and keeps the hash for us. */
static void read_renewal(int node)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();
    char ours[FIELD_MAX], key[400];
    struct entry *e[3];
    redisReply *r;

    load_checked(rc, RS_READ_LOCK, RS_READ_LOCK_SHA);
    load_checked(rc, RS_READ_UNLOCK, RS_READ_UNLOCK_SHA);
    field_of(c, 7, ours);
    redisson_read_lock(rc, "books", ours, 1000);
    redisson_read_lock(rc, "books", ours, 1000);
    redisson_read_lock(rc, "books", "other-client:1", 1000);
    redisson_read_lock(rc, "a{tag}b", ours, 1000);
    e[0] = make_entry("books", 7, 2, KIND_READ);
    e[1] = make_entry("a{tag}b", 7, 1, KIND_READ);
    e[2] = make_entry("gone", 7, 1, KIND_READ);

    r = run_batch(rc, c, KIND_READ, e, 3, node);
    cr_assert_eq(r->element[0]->integer, 1);
    cr_assert_eq(r->element[1]->integer, 1);
    cr_assert_eq(r->element[2]->integer, 0, "a read hold whose field is gone is lost");
    freeReplyObject(r);

    for (int i = 1; i <= 2; i++) {
        snprintf(key, sizeof key, "{books}:%s:rwlock_timeout:%d", ours, i);
        cr_assert_gt(pttl(rc, key), 29000, "own timeout key %d renewed", i);
    }
    snprintf(key, sizeof key, "a{tag}b:%s:rwlock_timeout:1", ours);
    cr_assert_gt(pttl(rc, key), 29000, "a tagged name's key is name:<field>:...");
    cr_assert_gt(pttl(rc, "books"), 29000);
    cr_assert_gt(pttl(rc, "a{tag}b"), 29000);
    cr_assert_leq(pttl(rc, "{books}:other-client:1:rwlock_timeout:1"), 1000,
                  "another reader's key is not ours to renew");

    /* Redisson's reader leaves: the hash stays, to our keys' TTL. */
    cr_assert_eq(redisson_read_unlock(rc, "books", "other-client:1"), 0);
    cr_assert_gt(pttl(rc, "books"), 28000, "Redisson's unlock kept the hash for us");
    for (int i = 0; i < 3; i++)
        free(e[i]);
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}

REDIS_TEST(kinds, read_renewal_renews_own_keys_only)
{
    read_renewal(0);
}

REDIS_TEST(kinds, read_renewal_node_batch_renews_own_keys_only)
{
    read_renewal(1);
}

/* The hash goes to max(PTTL, lease): another reader's longer explicit
 * lease is not cut short (Redisson's own renewal does cut it). */
REDIS_TEST(kinds, read_renewal_never_shortens_the_hash)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();
    char ours[FIELD_MAX];
    struct entry *e = make_entry("shelf", 9, 1, KIND_READ);
    redisReply *r;

    load_checked(rc, RS_READ_LOCK, RS_READ_LOCK_SHA);
    field_of(c, 9, ours);
    redisson_read_lock(rc, "shelf", "long-reader:1", 120000);
    redisson_read_lock(rc, "shelf", ours, 1000);
    for (int node = 0; node < 2; node++) {
        r = run_batch(rc, c, KIND_READ, &e, 1, node);
        cr_assert_eq(r->element[0]->integer, 1);
        freeReplyObject(r);
        cr_assert_gt(pttl(rc, "shelf"), 100000);
    }
    free(e);
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A write hold is renewed by the locks' script with the ":write" field; a
 * lock entry of the same owner does not see it, nor a key of another
 * type break the batch. */
REDIS_TEST(kinds, write_renewal_uses_the_write_field)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();
    char ours[FIELD_MAX + 8];
    struct entry *e[2];
    redisReply *r;

    load_checked(rc, RS_WRITE_LOCK, RS_WRITE_LOCK_SHA);
    field_of(c, 3, ours);
    strcat(ours, ":write");
    r = redisCommand(rc, "EVALSHA %s 1 ledger 1000 %s", RS_WRITE_LOCK_SHA, ours);
    cr_assert(r && r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    freeReplyObject(redisCommand(rc, "SET plain-string x"));
    e[0] = make_entry("ledger", 3, 1, KIND_WRITE);
    e[1] = make_entry("plain-string", 3, 1, KIND_WRITE);
    for (int node = 0; node < 2; node++) {
        r = run_batch(rc, c, KIND_WRITE, e, 2, node);
        cr_assert_eq(r->element[0]->integer, 1);
        cr_assert_eq(r->element[1]->integer, 0, "a key of another type is not ours");
        freeReplyObject(r);
        cr_assert_gt(pttl(rc, "ledger"), 29000);
    }
    e[0]->kind = KIND_LOCK;
    r = run_batch(rc, c, KIND_LOCK, e, 1, 0);
    cr_assert_eq(r->element[0]->integer, 0, "a lock entry does not renew a write hold");
    freeReplyObject(r);
    free(e[0]);
    free(e[1]);
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The read hold's renewal declares every key it touches: each hold's
 * timeout key, after its name. */
REDIS_TEST(kinds, read_batch_declares_its_timeout_keys)
{
    struct lw_client *c = new_client(30000, NULL);
    struct batch_args *a = batch_args_new();
    struct entry *e = make_entry("books", 7, 3, KIND_READ);
    char ours[FIELD_MAX], key[400];
    int n;

    field_of(c, 7, ours);
    lw_kind_read.put(c, e, 0, a);
    batch_call(a, c->lease_str, c->lease_len);
    batch_call(a, c->id, c->id_len);
    cr_assert_eq(n = batch_assemble(a), 4 + 2 + 2);
    cr_assert_eq(a->keys.n, 4);
    cr_assert_eq(a->lens[0], 5);
    cr_assert_eq(memcmp(a->argv[0], "books", 5), 0);
    for (int i = 1; i <= 3; i++) {
        snprintf(key, sizeof key, "{books}:%s:rwlock_timeout:%d", ours, i);
        cr_assert_eq(a->lens[i], strlen(key));
        cr_assert_eq(memcmp(a->argv[i], key, a->lens[i]), 0);
    }
    cr_assert_eq(memcmp(a->argv[4], "30000", 5), 0);
    cr_assert_eq(a->lens[5], c->id_len);
    cr_assert_eq(memcmp(a->argv[5], c->id, c->id_len), 0);
    cr_assert_eq(a->lens[6], 1);
    cr_assert_eq(memcmp(a->argv[6], "7", 1), 0);
    cr_assert_eq(memcmp(a->argv[7], "3", 1), 0);
    free(e);
    batch_args_free(a);
    cr_assert_eq(lw_client_free(c), 0);
}

/* RESP bytes of one argument: $<len>\r\n<bytes>\r\n. */
static size_t resp_bytes(size_t len)
{
    char digits[24];

    return 1 + (size_t)snprintf(digits, sizeof digits, "%zu", len) + 2 + len + 2;
}

/* The lock batch sends the client id once and an owner per lock: the
 * field Redis keeps is still Redisson's "<client id>:<owner>" (a hash
 * set as Redisson's tryLock sets it is renewed; one of another owner, or
 * another client id, is not), and a renewal costs its name and an owner,
 * not its name and the whole field. */
REDIS_TEST(kinds, lock_batch_sends_the_client_id_once)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();
    struct batch_args *a = batch_args_new();
    char field[FIELD_MAX], name[32];
    struct entry *e[100];
    size_t bytes = 0;
    redisReply *r;
    int n;

    field_of(c, 7, field);
    freeReplyObject(redisCommand(rc, "HSET mine %s 1", field));
    freeReplyObject(redisCommand(rc, "PEXPIRE mine 1000"));
    freeReplyObject(redisCommand(rc, "HSET other-owner %s:8 1", c->id));
    freeReplyObject(redisCommand(rc, "HSET other-client x%s 1", field));
    e[0] = make_entry("mine", 7, 1, KIND_LOCK);
    e[1] = make_entry("other-owner", 7, 1, KIND_LOCK);
    e[2] = make_entry("other-client", 7, 1, KIND_LOCK);
    for (int node = 0; node < 2; node++) {
        r = run_batch(rc, c, KIND_LOCK, e, 3, node);
        cr_assert_eq(r->element[0]->integer, 1);
        cr_assert_eq(r->element[1]->integer, 0);
        cr_assert_eq(r->element[2]->integer, 0);
        freeReplyObject(r);
        cr_assert_gt(pttl(rc, "mine"), 29000);
    }
    for (int i = 0; i < 3; i++)
        free(e[i]);

    /* 100 renewals of 10-byte names by owners of 7 digits. */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "lock:%05d", i);
        e[i] = make_entry(name, 1234567, 1, KIND_LOCK);
        lw_kind_lock.put(c, e[i], 0, a);
    }
    batch_call(a, c->lease_str, c->lease_len);
    batch_call(a, c->id, c->id_len);
    cr_assert_eq(n = batch_assemble(a), 202);
    for (int i = 0; i < n; i++)
        bytes += resp_bytes(a->lens[i]);
    cr_log_info("a renewal of a 10-byte name: %.1f bytes of arguments", bytes / 100.0);
    cr_assert_lt(bytes, 100 * (resp_bytes(10) + resp_bytes(7)) + 200,
                 "a renewal sends its name and its owner, no more");
    for (int i = 0; i < 100; i++)
        free(e[i]);
    batch_args_free(a);
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}
