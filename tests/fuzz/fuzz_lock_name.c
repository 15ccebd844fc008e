/*
 * tests/fuzz/fuzz_lock_name.c - lock names: binary-safe, 1..LW_LOCK_NAME_MAX
 * bytes.  The input is the name.
 *
 * One client, on a private redis-server started once per process
 * (LLVMFuzzerInitialize) and stopped at exit.  For each name: lw_lock_new
 * refuses an empty one (LW_EINVAL) and a long one (LW_ERANGE); otherwise
 * the lock is taken twice (reentrant, watchdog lease) and released twice,
 * and at every step the library's answers (is-held, hold count, is-locked,
 * the token) and the key itself, read with plain hiredis (the hash field
 * "<client id>:<owner>" holding the count, its expiry), must agree; after
 * the last unlock the key is gone.  The lock is fenced: its token counter
 * (Redisson's prefixName: "redisson_lock_token:{<name>}", or
 * "redisson_lock_token:<name>" for a name with a '{'), which the library
 * never deletes, is deleted by the fuzzer so that every input starts on
 * an empty database (and the token is a fresh counter's).  The
 * read-write lock of the same name follows (lw_read_lock_new(),
 * lw_write_lock_new()): two read holds without a token, each with its
 * timeout key "{<name>}:<field>:rwlock_timeout:<i>" (or "<name>:..." for a
 * name with a '{'), no upgrade, released; then the fenced write lock,
 * with the name's next token.
 */
#include <string.h>

#include <leasewheel.h>

#include "fuzz_util.h"
#include "redis_server.h"

static struct redis_server srv;
static struct lw_client *client;
static redisContext *redis; /* the fuzzer's own look at the keys */

static void stop(void)
{
    lw_client_free(client);
    redisFree(redis);
    redis_server_stop(&srv);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct lw_client_config cfg;

    (void)argc;
    (void)argv;
    FUZZ_CHECK(redis_server_start(&srv, NULL) == 0, "no redis-server");
    atexit(stop);
    lw_client_config_init(&cfg);
    cfg.port = srv.port;
    cfg.command_timeout_ms = 10000;
    FUZZ_CHECK(lw_client_new(&cfg, &client) == 0, "no client");
    redis = redisConnectWithTimeout("127.0.0.1", srv.port, (struct timeval){5, 0});
    FUZZ_CHECK(redis && !redis->err, "cannot connect");
    redisSetTimeout(redis, (struct timeval){10, 0});
    return 0;
}

/* A binary-safe command on the fuzzer's connection; the reply, never NULL. */
static redisReply *command(int argc, const char **argv, const size_t *lens)
{
    redisReply *r = redisCommandArgv(redis, argc, argv, lens);

    FUZZ_CHECK(r, "%s: %s", argv[0], redis->errstr);
    return r;
}

/* A command about the key of len bytes at name, with an integer reply. */
static long long key_int(const char *cmd, const void *name, size_t len)
{
    const char *argv[] = {cmd, name};
    size_t lens[] = {strlen(cmd), len};
    redisReply *r = command(2, argv, lens);
    long long v;

    FUZZ_CHECK(r->type == REDIS_REPLY_INTEGER, "%s: reply type %d", cmd, r->type);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

/* The hold count in the lock's hash for this thread, as Redis has it:
 * -1 when the field is not there. */
static long long field_count(const void *name, size_t len)
{
    char field[128];
    const char *argv[] = {"HGET", name, field};
    size_t lens[] = {4, len, 0};
    redisReply *r;
    long long v = -1;

    lens[2] = (size_t)snprintf(field, sizeof field, "%s:%llu", lw_client_id(client),
                               (unsigned long long)lw_owner_self());
    r = command(3, argv, lens);
    if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else
        FUZZ_CHECK(r->type == REDIS_REPLY_NIL, "HGET: reply type %d", r->type);
    freeReplyObject(r);
    return v;
}

/* The library and the key agree that this thread holds it `holds` times. */
static void check_holds(struct lw_lock *lock, const void *name, size_t len, int holds)
{
    long long ttl;

    FUZZ_CHECK(lw_is_held(lock) == !!holds, "is_held, %d holds", holds);
    FUZZ_CHECK(lw_hold_count(lock) == holds, "hold_count, %d holds", holds);
    FUZZ_CHECK(lw_is_locked(lock) == !!holds, "is_locked, %d holds", holds);
    FUZZ_CHECK(field_count(name, len) == (holds ? holds : -1), "the field, %d holds", holds);
    FUZZ_CHECK(key_int("EXISTS", name, len) == !!holds, "the key, %d holds", holds);
    if (holds) {
        ttl = key_int("PTTL", name, len);
        FUZZ_CHECK(ttl > 0 && ttl <= LW_DEFAULT_WATCHDOG_TIMEOUT_MS, "PTTL %lld", ttl);
    }
}

/* Held twice, released twice: its token. */
static uint64_t lock_unlock(struct lw_lock *lock, const void *name, size_t len)
{
    uint64_t token = 0, again = 0;
    int rc;

    check_holds(lock, name, len, 0);
    FUZZ_CHECK((rc = lw_trylock(lock, 0, 0, &token)) == 0, "trylock: %s", lw_errname(rc));
    FUZZ_CHECK(token > 0, "token %llu on an empty database", (unsigned long long)token);
    check_holds(lock, name, len, 1);
    FUZZ_CHECK((rc = lw_trylock(lock, 0, 0, &again)) == 0, "again: %s", lw_errname(rc));
    FUZZ_CHECK(again == token, "reentrant token %llu", (unsigned long long)again);
    check_holds(lock, name, len, 2);
    FUZZ_CHECK((rc = lw_unlock(lock)) == 0, "unlock: %s", lw_errname(rc));
    check_holds(lock, name, len, 1);
    FUZZ_CHECK((rc = lw_unlock(lock)) == 0, "last unlock: %s", lw_errname(rc));
    check_holds(lock, name, len, 0);
    FUZZ_CHECK((rc = lw_unlock(lock)) == LW_ENOTOWNER, "unlock unheld: %s", lw_errname(rc));
    return token;
}

/* Whether read hold i's timeout key is there: Redisson's suffixName of
 * the name and this thread's field, then ":rwlock_timeout:<i>". */
static int timeout_key_exists(const void *name, size_t len, int i)
{
    char tail[200];
    int tagged = memchr(name, '{', len) != NULL;
    int n = snprintf(tail, sizeof tail, ":%s:%llu:rwlock_timeout:%d", lw_client_id(client),
                     (unsigned long long)lw_owner_self(), i);
    char *key = malloc(len + 2 + (size_t)n), *p = key;
    long long v;

    FUZZ_CHECK(key, "out of memory");
    if (!tagged)
        *p++ = '{';
    memcpy(p, name, len);
    p += len;
    if (!tagged)
        *p++ = '}';
    memcpy(p, tail, (size_t)n);
    p += n;
    v = key_int("EXISTS", key, (size_t)(p - key));
    free(key);
    return v == 1;
}

/* The read-write lock of the name: read twice, no upgrade, released; then
 * the write lock, fenced: the token after last. */
static void read_write(const void *name, size_t len, uint64_t last)
{
    struct lw_lock *r = NULL, *w = NULL;
    uint64_t token = 9;
    int rc;

    FUZZ_CHECK(lw_read_lock_new(client, name, len, &r) == 0, "read handle");
    FUZZ_CHECK(lw_write_lock_new(client, name, len, &w) == 0, "write handle");
    FUZZ_CHECK(lw_lock_set_fenced(w, 1) == 0, "fenced");
    for (int i = 1; i <= 2; i++) {
        FUZZ_CHECK((rc = lw_trylock(r, 0, 0, &token)) == 0, "read %d: %s", i, lw_errname(rc));
        FUZZ_CHECK(token == 0, "a read's token %llu", (unsigned long long)token);
        FUZZ_CHECK(timeout_key_exists(name, len, i), "no timeout key %d", i);
    }
    FUZZ_CHECK(lw_hold_count(r) == 2 && field_count(name, len) == 2, "two read holds");
    FUZZ_CHECK((rc = lw_trylock(w, 0, 0, NULL)) == LW_ELOCKED, "upgrade: %s", lw_errname(rc));
    for (int i = 2; i >= 1; i--) {
        FUZZ_CHECK((rc = lw_unlock(r)) == 0, "read unlock: %s", lw_errname(rc));
        FUZZ_CHECK(!timeout_key_exists(name, len, i), "timeout key %d left", i);
    }
    FUZZ_CHECK(key_int("EXISTS", name, len) == 0, "the hash left after the readers");
    FUZZ_CHECK((rc = lw_trylock(w, 0, 0, &token)) == 0, "write: %s", lw_errname(rc));
    FUZZ_CHECK(token == last + 1, "write token %llu after %llu", (unsigned long long)token,
               (unsigned long long)last);
    FUZZ_CHECK(lw_is_held(w) == 1 && lw_is_locked(w) == 1, "write held");
    FUZZ_CHECK((rc = lw_unlock(w)) == 0, "write unlock: %s", lw_errname(rc));
    FUZZ_CHECK(key_int("EXISTS", name, len) == 0, "the hash left after the writer");
    lw_lock_free(r);
    lw_lock_free(w);
}

/* The token counter deleted; it must have been there. */
static void drop_token(const void *name, size_t len)
{
    static const char prefix[] = "redisson_lock_token:";
    size_t np = sizeof prefix - 1;
    int tagged = memchr(name, '{', len) != NULL;
    char *key = malloc(np + len + 2), *p = key;

    FUZZ_CHECK(key, "out of memory");
    memcpy(p, prefix, np);
    p += np;
    if (!tagged)
        *p++ = '{';
    memcpy(p, name, len);
    p += len;
    if (!tagged)
        *p++ = '}';
    FUZZ_CHECK(key_int("DEL", key, (size_t)(p - key)) == 1, "no token counter");
    free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lw_lock *lock = NULL, *unused = NULL;
    int rc = lw_lock_new(client, data, size, &lock);

    FUZZ_CHECK(lw_lock_new(client, NULL, size, &unused) == LW_EINVAL, "NULL name");
    FUZZ_CHECK(lw_lock_new(NULL, data, size, &unused) == LW_EINVAL, "NULL client");
    if (size == 0 || size > LW_LOCK_NAME_MAX) {
        FUZZ_CHECK(rc == (size ? LW_ERANGE : LW_EINVAL), "%zu bytes: %s", size,
                   lw_errname(rc));
        return 0;
    }
    FUZZ_CHECK(rc == 0, "%zu bytes: %s", size, lw_errname(rc));
    FUZZ_CHECK(lw_lock_set_fenced(lock, 1) == 0, "fenced");
    read_write(data, size, lock_unlock(lock, data, size));
    drop_token(data, size);
    lw_lock_free(lock);
    return 0;
}
