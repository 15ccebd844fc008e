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
 * leaves the hash to the longest of them.  The read-hold and permit
 * renewals are also run beside the scripts they replaced
 * (renewals_before.h) on the same states: Redis must come out the same.
 */
#include <stdlib.h>
#include <time.h>

#include <leasewheel/semaphore.h>

#include "client_base.h"
#include "scripts.h"
#include "entry.h"
#include "owner.h"
#include "lock_util.h"
#include "fixture_util.h"
#include "rw_util.h"
#include "renewals_before.h"

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

/* Redis's TIME now, in ms. */
static long long redis_time_ms(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "TIME");
    long long ms;

    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* A renewal's last answer: Redis's clock when it ran, in microseconds
 * (scripts.c, stamped()); a plausible one, within a minute of ours. */
static int is_redis_time(const redisReply *r)
{
    long long mine = (long long)time(NULL) * 1000000;

    return r->type == REDIS_REPLY_INTEGER && r->integer > mine - 60000000 &&
           r->integer < mine + 60000000;
}

/* One batch of kind as the watchdog sends it (node: a cluster node's
 * layout), run with EVAL; the reply: an answer per entry, then Redis's
 * clock. */
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
    if (k->put_call)
        k->put_call(c, a);
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
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == n + 1, "%s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not one answer per entry");
    cr_assert(is_redis_time(r->element[n]), "the last answer is not Redis's clock");
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
    cr_assert(redisson_read_lock(rc, "books", ours, 1000));
    cr_assert(redisson_read_lock(rc, "books", ours, 1000));
    cr_assert(redisson_read_lock(rc, "books", "other-client:1", 1000));
    cr_assert(redisson_read_lock(rc, "a{tag}b", ours, 1000));
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
    cr_assert(redisson_read_lock(rc, "shelf", "long-reader:1", 120000));
    cr_assert(redisson_read_lock(rc, "shelf", ours, 1000));
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

/* ---- Cheaper renewals, the same effect ----
 *
 * The read-hold and permit renewals were made cheaper (a hash stretched
 * once per name per call with PEXPIRE GT; a semaphore reclaimed once per
 * call, a permit renewed by one ZADD XX CH).  Each state below is set up
 * twice, renewed once by the scripts as they were (renewals_before.h) and
 * once by today's, and must come out the same: the answers, every key
 * (type, content, TTL to the second) and the messages published. */

/* Every key of the db, in name order, as one text: name, type, TTL in
 * seconds (rounded; -1 none) and content. */
/* Every key, its type, TTL in s and value; a zset's scores in s from
 * ARGV[1], the renewals' "now" (epoch ms): a score Redis's TIME + the
 * lease reads the same as the base + the lease the scripts before wrote,
 * though the script ran a few ms after the base. */
static const char dump_script[] =
    "local base = tonumber(ARGV[1]) "
    "local out = {} "
    "local keys = redis.call('keys', '*') "
    "table.sort(keys) "
    "for _, k in ipairs(keys) do "
    "  local t = redis.call('type', k)['ok'] "
    "  local ttl = redis.call('pttl', k) "
    "  if ttl > 0 then ttl = math.floor((ttl + 500) / 1000) end "
    "  local v = '?' "
    "  if t == 'hash' then "
    "    local h, f = redis.call('hgetall', k), {} "
    "    for i = 1, #h, 2 do f[#f + 1] = h[i] .. '=' .. h[i + 1] end "
    "    table.sort(f) "
    "    v = table.concat(f, ',') "
    "  elseif t == 'string' then "
    "    v = redis.call('get', k) "
    "  elseif t == 'zset' then "
    "    local z = redis.call('zrange', k, 0, -1, 'withscores') "
    "    for i = 2, #z, 2 do "
    "      z[i] = string.format('%d', math.floor((tonumber(z[i]) - base + 500) / 1000)) "
    "    end "
    "    v = table.concat(z, ',') "
    "  end "
    "  out[#out + 1] = k .. ' ' .. t .. ' ' .. ttl .. ' ' .. v "
    "end "
    "return table.concat(out, '\\n')";

/* What a renewal left: its answers, the db, the messages published on
 * redisson_* channels meanwhile. */
struct renewal_outcome {
    long long answers[16];
    size_t nanswers;
    char *db;
    size_t db_len;
    char messages[1024];
};

static void renewal_outcome_free(struct renewal_outcome *o)
{
    free(o->db);
}

static redisContext *subscribe_all(void)
{
    redisContext *sub = connect_srv();
    redisReply *r = redisCommand(sub, "PSUBSCRIBE redisson_*");

    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "no subscription");
    freeReplyObject(r);
    return sub;
}

/* The messages sub got, up to the marker published now. */
static void collect_messages(redisContext *rc, redisContext *sub, char *out, size_t n)
{
    size_t at = 0;

    freeReplyObject(redisCommand(rc, "PUBLISH redisson_end end"));
    out[0] = '\0';
    for (int i = 0; i < 64; i++) {
        redisReply *r = NULL;

        cr_assert_eq(redisGetReply(sub, (void **)&r), REDIS_OK, "no message");
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 4);
        if (!strcmp(r->element[2]->str, "redisson_end")) {
            freeReplyObject(r);
            return;
        }
        at += (size_t)snprintf(out + at, n - at, "%s=%s;", r->element[2]->str,
                               r->element[3]->str);
        cr_assert_lt(at, n);
        freeReplyObject(r);
    }
    cr_assert_fail("the marker never came");
}

/* Run argv (EVAL and the rest) on a fresh db that setup() fills. */
/* What a state's set-up needs: the client (its fields), and a permit's
 * scores' base (the renewal's now, in epoch ms). */
struct setup_arg {
    struct lw_client *c;
    long long base;
};

static void outcome_of(redisContext *rc, void (*setup)(redisContext *, const struct setup_arg *),
                       const struct setup_arg *arg, int argc, const char **argv,
                       const size_t *lens, struct renewal_outcome *o)
{
    redisContext *sub;
    redisReply *r;

    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    setup(rc, arg);
    sub = subscribe_all();
    r = redisCommandArgv(rc, argc, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements <= 16, "%s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "no answers");
    /* A last answer of Redis's clock (today's scripts: stamped()) is not
     * an entry's: the scripts before sent none. */
    o->nanswers = r->elements;
    if (o->nanswers && is_redis_time(r->element[o->nanswers - 1]))
        o->nanswers--;
    for (size_t i = 0; i < o->nanswers; i++)
        o->answers[i] = r->element[i]->integer;
    freeReplyObject(r);
    collect_messages(rc, sub, o->messages, sizeof o->messages);
    redisFree(sub);
    r = redisCommand(rc, "EVAL %s 0 %lld", dump_script, arg->base);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s", r ? r->str : "no dump");
    o->db = malloc(r->len + 1);
    memcpy(o->db, r->str, r->len + 1);
    o->db_len = r->len;
    freeReplyObject(r);
}

static void outcomes_equal(const struct renewal_outcome *before, const struct renewal_outcome *now,
                           const char *what)
{
    cr_assert_eq(now->nanswers, before->nanswers, "%s: answers", what);
    for (size_t i = 0; i < now->nanswers; i++)
        cr_assert_eq(now->answers[i], before->answers[i], "%s: answer %zu", what, i);
    cr_assert(now->db_len == before->db_len && !memcmp(now->db, before->db, now->db_len),
              "%s: Redis left otherwise:\n%.*s\n---- before:\n%.*s", what, (int)now->db_len,
              now->db, (int)before->db_len, before->db);
    cr_assert_str_eq(now->messages, before->messages, "%s: messages", what);
}

/* ---- Read holds ---- */

static void field_owner(struct lw_client *c, uint64_t owner, char *buf)
{
    field_of(c, owner, buf);
}

static void eval_ok(redisContext *rc, redisReply *r)
{
    (void)rc;
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s", r ? r->str : "no reply");
    freeReplyObject(r);
}

static void load_rw(redisContext *rc)
{
    load_checked(rc, RS_READ_LOCK, RS_READ_LOCK_SHA);
    load_checked(rc, RS_WRITE_LOCK, RS_WRITE_LOCK_SHA);
    load_checked(rc, RS_READ_FORCE, RS_READ_FORCE_SHA);
}

/* Owner 7 reads "books" twice beside a Redisson reader, and "a{tag}b". */
static void read_shared(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX];

    load_rw(rc);
    field_owner(c, 7, ours);
    cr_assert(redisson_read_lock(rc, "books", ours, 1000));
    cr_assert(redisson_read_lock(rc, "books", ours, 1000));
    cr_assert(redisson_read_lock(rc, "books", "other-client:1", 1000));
    cr_assert(redisson_read_lock(rc, "a{tag}b", ours, 1000));
}

/* Owners 7 and 8 (3 holds) of this client read "shelf" beside a reader
 * with a longer lease: the hash is stretched once, and never shortened. */
static void read_two_owners_long(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX];

    load_rw(rc);
    cr_assert(redisson_read_lock(rc, "shelf", "long-reader:1", 120000));
    field_owner(c, 7, ours);
    cr_assert(redisson_read_lock(rc, "shelf", ours, 1000));
    field_owner(c, 8, ours);
    for (int i = 0; i < 3; i++)
        cr_assert(redisson_read_lock(rc, "shelf", ours, 1000));
}

/* The same two owners alone: the hash goes to the lease. */
static void read_two_owners(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX];

    load_rw(rc);
    field_owner(c, 7, ours);
    cr_assert(redisson_read_lock(rc, "shelf", ours, 1000));
    field_owner(c, 8, ours);
    for (int i = 0; i < 3; i++)
        cr_assert(redisson_read_lock(rc, "shelf", ours, 1000));
}

/* A hash without a TTL (PERSIST): PTTL -1 < lease gave it the lease; a
 * plain PEXPIRE GT would not. */
static void read_persistent_hash(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX];

    load_rw(rc);
    field_owner(c, 7, ours);
    cr_assert(redisson_read_lock(rc, "still", ours, 1000));
    freeReplyObject(redisCommand(rc, "PERSIST still"));
}

/* Owner 7 wrote "doc", then read it (a downgrade: mode stays write). */
static void read_after_downgrade(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX], write_field[FIELD_MAX + 8];

    load_rw(rc);
    field_owner(c, 7, ours);
    snprintf(write_field, sizeof write_field, "%s:write", ours);
    eval_ok(rc, redisCommand(rc, "EVALSHA %s 1 doc 1000 %s", RS_WRITE_LOCK_SHA, write_field));
    cr_assert(redisson_read_lock(rc, "doc", ours, 1000));
}

/* Force-unlocked by Redisson ("forced": the hash gone, our timeout key
 * left), and force-unlocked then read again by another client ("again":
 * the hash back without our field). */
static void read_after_force_unlock(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX];

    load_rw(rc);
    field_owner(c, 7, ours);
    cr_assert(redisson_read_lock(rc, "forced", ours, 1000));
    cr_assert(redisson_read_lock(rc, "again", ours, 1000));
    eval_ok(rc, redisCommand(rc, "EVALSHA %s 2 forced redisson_rwlock:{forced} 0 publish",
                             RS_READ_FORCE_SHA));
    eval_ok(rc, redisCommand(rc, "EVALSHA %s 2 again redisson_rwlock:{again} 0 publish",
                             RS_READ_FORCE_SHA));
    cr_assert(redisson_read_lock(rc, "again", "other-client:2", 1000));
}

/* Keys of other shapes: a string; a plain lock's hash (no mode) holding
 * our field; a hold whose second timeout key is gone early. */
static void read_odd_keys(redisContext *rc, const struct setup_arg *arg)
{
    struct lw_client *c = arg->c;
    char ours[FIELD_MAX], key[400];

    load_rw(rc);
    field_owner(c, 7, ours);
    freeReplyObject(redisCommand(rc, "SET str x"));
    freeReplyObject(redisCommand(rc, "HSET rlock %s 1", ours));
    freeReplyObject(redisCommand(rc, "PEXPIRE rlock 1000"));
    cr_assert(redisson_read_lock(rc, "early", ours, 1000));
    cr_assert(redisson_read_lock(rc, "early", ours, 1000));
    snprintf(key, sizeof key, "{early}:%s:rwlock_timeout:2", ours);
    freeReplyObject(redisCommand(rc, "DEL %s", key));
}

struct read_case {
    const char *what;
    void (*setup)(redisContext *, const struct setup_arg *);
    struct {
        const char *name;
        uint64_t owner;
        uint32_t holds;
    } e[4];
    long long want[4]; /* the answers */
};

static const struct read_case read_cases[] = {
    {"shared", read_shared, {{"books", 7, 2}, {"a{tag}b", 7, 1}, {"gone", 7, 1}}, {1, 1, 0}},
    {"two owners, a longer reader",
     read_two_owners_long,
     {{"shelf", 7, 1}, {"shelf", 8, 3}},
     {1, 1}},
    {"two owners", read_two_owners, {{"shelf", 8, 3}, {"shelf", 7, 1}}, {1, 1}},
    {"no TTL", read_persistent_hash, {{"still", 7, 1}}, {1}},
    {"downgrade", read_after_downgrade, {{"doc", 7, 1}}, {1}},
    {"force-unlock", read_after_force_unlock, {{"forced", 7, 1}, {"again", 7, 1}}, {0, 0}},
    {"odd keys",
     read_odd_keys,
     {{"str", 7, 1}, {"rlock", 7, 1}, {"early", 7, 2}},
     {0, 1, 1}},
};

/* One read case through script (before or now), in a layout. */
static void read_outcome(redisContext *rc, struct lw_client *c, const struct read_case *rcase,
                         const char *script, int node, struct renewal_outcome *o)
{
    struct batch_args *a = batch_args_new();
    struct entry *e[4];
    const char *argv[64];
    size_t lens[64];
    char nkeys[16];
    uint32_t n = 0;
    int nargs;

    for (; n < 4 && rcase->e[n].name; n++) {
        e[n] = make_entry(rcase->e[n].name, rcase->e[n].owner, rcase->e[n].holds, KIND_READ);
        lw_kind_read.put(c, e[n], node, a);
    }
    batch_call(a, c->lease_str, c->lease_len);
    batch_call(a, c->id, c->id_len);
    cr_assert_geq(nargs = batch_assemble(a), 0);
    cr_assert_leq(nargs, 61);
    snprintf(nkeys, sizeof nkeys, "%u", node ? 0 : a->keys.n);
    argv[0] = "EVAL", argv[1] = script, argv[2] = nkeys;
    for (int i = 0; i < 3; i++)
        lens[i] = strlen(argv[i]);
    memcpy(argv + 3, a->argv, (size_t)nargs * sizeof *argv);
    memcpy(lens + 3, a->lens, (size_t)nargs * sizeof *lens);
    outcome_of(rc, rcase->setup, &(struct setup_arg){c, 0}, nargs + 3, argv, lens, o);
    for (uint32_t i = 0; i < n; i++)
        free(e[i]);
    batch_args_free(a);
}

/* A server without PEXPIRE's GT (Redis 6), played on this one: the script
 * after this sees a `redis` whose pcall refuses PEXPIRE with 4 arguments as
 * Redis 6 does (the real table is read-only; a local shadows it). */
static const char without_gt[] =
    "local real = redis "
    "local redis = setmetatable({pcall = function(...) "
    "  local a = {...} "
    "  if a[1] == 'pexpire' and #a == 4 then "
    "    return {err = 'Wrong number of args calling Redis command From Lua script'} "
    "  end "
    "  return real.pcall(...) "
    "end}, {__index = real}) ";

/* Each state, both layouts, with and without GT: today's read renewal
 * leaves Redis as the one of four calls a hold did. */
REDIS_TEST(kinds, read_renewal_same_effect_as_before)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();

    for (size_t i = 0; i < sizeof read_cases / sizeof read_cases[0]; i++) {
        for (int variant = 0; variant < 4; variant++) {
            int node = variant & 1, gt = !(variant & 2);
            const char *script = lw_lock_scripts[node ? SCRIPT_RENEW_READ_NODE : SCRIPT_RENEW_READ];
            struct renewal_outcome before, now;
            char what[128], *shadowed = NULL;

            snprintf(what, sizeof what, "%s (%s%s)", read_cases[i].what, node ? "node" : "keys",
                     gt ? "" : ", no GT");
            if (!gt) {
                cr_assert(shadowed = malloc(sizeof without_gt + strlen(script)));
                strcpy(shadowed, without_gt);
                script = strcat(shadowed, script);
            }
            read_outcome(rc, c, &read_cases[i], node ? OLD_RENEW_READ_NODE : OLD_RENEW_READ,
                         node, &before);
            read_outcome(rc, c, &read_cases[i], script, node, &now);
            outcomes_equal(&before, &now, what);
            for (size_t j = 0; j < now.nanswers; j++)
                cr_assert_eq(now.answers[j], read_cases[i].want[j], "%s: answer %zu", what, j);
            renewal_outcome_free(&before);
            renewal_outcome_free(&now);
            free(shadowed);
        }
    }
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}

/* ---- Permits ---- */

#define LEASE_S "60000" /* the renewal's now: its expiry - this */
#define NEVER 922337203685477LL

static const char *permit_id(char letter)
{
    static const char ids[] = "AAAAAAAAAAAAAAAABBBBBBBBBBBBBBBBCCCCCCCCCCCCCCCC"
                              "DDDDDDDDDDDDDDDDEEEEEEEEEEEEEEEEFFFFFFFFFFFFFFFF"
                              "WWWWWWWWWWWWWWWWXXXXXXXXXXXXXXXXYYYYYYYYYYYYYYYY"
                              "ZZZZZZZZZZZZZZZZ";
    const char *at = strchr(ids, letter);

    cr_assert(at);
    return at;
}

static void timeout_key(const char *name, char *key, size_t n)
{
    snprintf(key, n, strchr(name, '{') ? "%s:timeout" : "{%s}:timeout", name);
}

/* Score the ids (letters) of semaphore name at base + offsets. */
static void score(redisContext *rc, const char *name, const char *letters,
                  const long long *at)
{
    char key[200];

    timeout_key(name, key, sizeof key);
    for (size_t i = 0; letters[i]; i++)
        freeReplyObject(redisCommand(rc, "ZADD %s %lld %b", key, at[i], permit_id(letters[i]),
                                     (size_t)LW_PERMIT_ID_LEN));
}

/* Many permits of two semaphores in one call, interleaved: ours A, B
 * (alive), C (expired: lost), others' X, Y (expired) and Z in "jobs";
 * D and another's expired W in "{q}b"; in "same", E already at the
 * call's expiry and F alive below it (a score above it is never lowered:
 * permit_renewal_never_lowers_a_score). */
static void permits_many(redisContext *rc, const struct setup_arg *arg)
{
    long long b = arg->base;

    freeReplyObject(redisCommand(rc, "SET jobs 0"));
    /* Live ones 10 s ahead: a slow machine (TSan, a loaded one) must not
     * see them expire before the batch runs. */
    score(rc, "jobs", "ABCXYZ",
          (long long[]){b + 10000, b + 10000, b - 1000, b - 2000, b - 3000, b + 15000});
    freeReplyObject(redisCommand(rc, "SET {q}b 5"));
    score(rc, "{q}b", "DW", (long long[]){b + 10000, b - 1000});
    freeReplyObject(redisCommand(rc, "SET same 1"));
    score(rc, "same", "EF", (long long[]){b + 60000, b + 30000});
}

/* Semaphores of other shapes: a count below 0 after the reclaim (no
 * message); a timeout key of another type; none at all; a count of
 * another type (the ids reclaimed, the count untouched). */
static void permits_odd(redisContext *rc, const struct setup_arg *arg)
{
    long long b = arg->base;

    freeReplyObject(redisCommand(rc, "SET neg -5"));
    score(rc, "neg", "XYA", (long long[]){b - 1000, b - 1000, b + 10000});
    freeReplyObject(redisCommand(rc, "SET wt 1"));
    freeReplyObject(redisCommand(rc, "SET {wt}:timeout x"));
    freeReplyObject(redisCommand(rc, "HSET hcount a b"));
    score(rc, "hcount", "XA", (long long[]){b - 1000, b + 10000});
}

struct permit_case {
    const char *what;
    void (*setup)(redisContext *, const struct setup_arg *);
    const char *names[8];
    const char *letters; /* the ids renewed, one per name */
    long long want[8];
    const char *messages;
};

static const struct permit_case permit_cases[] = {
    {"many",
     permits_many,
     {"jobs", "{q}b", "jobs", "jobs", "same", "same"},
     "ADBCEF",
     {1, 1, 1, 0, 1, 1},
     "redisson_sc:{jobs}=3;redisson_sc:{q}b=6;"},
    {"odd", permits_odd, {"neg", "wt", "none", "hcount"}, "AAAA", {1, 0, 0, 1}, ""},
};

/* The call as the scripts before took it (per permit: id, expiry, publish)
 * or as today's (publish once, then the ids: the script reads Redis's
 * TIME for the expiry), in a layout, after argv[0..2]; the argument
 * count. */
static int permit_argv(const struct permit_case *pc, int before, int node, const char *expiry,
                       char (*keys)[200], const char **argv, size_t *lens)
{
    int argc = 3, n = 0;

#define ARG(s, len) (argv[argc] = (s), lens[argc++] = (len))
#define STR(s) ARG(s, strlen(s))
    for (; n < 8 && pc->names[n]; n++) {
        STR(pc->names[n]);
        if (!node) {
            timeout_key(pc->names[n], keys[n], sizeof keys[n]);
            STR(keys[n]);
        }
    }
    STR(LEASE_S);
    STR("client-id");
    if (!before)
        STR("publish");
    for (int i = 0; i < n; i++) {
        ARG(permit_id(pc->letters[i]), LW_PERMIT_ID_LEN);
        if (before)
            STR(expiry), STR("publish");
    }
#undef STR
#undef ARG
    for (int i = 0; i < 3; i++)
        lens[i] = strlen(argv[i]);
    return argc;
}

/* Each state, both layouts: today's permit renewal (one reclaim per
 * semaphore, one ZADD XX CH per permit, Redis's TIME + the lease) leaves
 * Redis and the channels as the reclaim per permit did with the same
 * time from the client (base: Redis's TIME read just before). */
REDIS_TEST(kinds, permit_renewal_same_effect_as_before)
{
    redisContext *rc = connect_srv();
    struct setup_arg arg = {NULL, 0};
    char expiry[24], keys[8][200], nkeys[8];
    const char *argv[64];
    size_t lens[64];

    arg.base = redis_time_ms(rc);
    snprintf(expiry, sizeof expiry, "%lld", arg.base + 60000);
    for (size_t i = 0; i < sizeof permit_cases / sizeof permit_cases[0]; i++) {
        const struct permit_case *pc = &permit_cases[i];

        for (int node = 0; node < 2; node++) {
            struct renewal_outcome before, now;
            char what[128];
            int argc, n = 0;

            while (n < 8 && pc->names[n])
                n++;
            snprintf(what, sizeof what, "%s (%s)", pc->what, node ? "node" : "keys");
            snprintf(nkeys, sizeof nkeys, "%d", node ? 0 : 2 * n);
            argv[0] = "EVAL", argv[2] = nkeys;
            argv[1] = node ? OLD_RENEW_PERMIT_NODE : OLD_RENEW_PERMIT;
            argc = permit_argv(pc, 1, node, expiry, keys, argv, lens);
            outcome_of(rc, pc->setup, &arg, argc, argv, lens, &before);
            argv[1] = lw_lock_scripts[node ? SCRIPT_RENEW_PERMIT_NODE : SCRIPT_RENEW_PERMIT];
            argc = permit_argv(pc, 0, node, expiry, keys, argv, lens);
            outcome_of(rc, pc->setup, &arg, argc, argv, lens, &now);
            outcomes_equal(&before, &now, what);
            for (size_t j = 0; j < now.nanswers; j++)
                cr_assert_eq(now.answers[j], pc->want[j], "%s: answer %zu", what, j);
            cr_assert_str_eq(now.messages, pc->messages, "%s", what);
            renewal_outcome_free(&before);
            renewal_outcome_free(&now);
        }
    }
    redisFree(rc);
}

/* A renewal that reaches Redis after a later one (its connection given
 * up, its bytes delivered late), or a Redisson client's clock ahead, must
 * not take back a later score: one above the call's expiry (Redis's TIME
 * + the lease) stays, and the permit answers renewed.  Both layouts, with
 * ZADD's GT and with the Lua comparison a server without GT gets. */
REDIS_TEST(kinds, permit_renewal_never_lowers_a_score)
{
    redisContext *rc = connect_srv();
    long long base = redis_time_ms(rc);
    char nkeys[8];
    static const char gt_on[] = "local has_gt = true ";

    for (int gt = 0; gt < 2; gt++)
        for (int node = 0; node < 2; node++) {
            const char *script = lw_lock_scripts[node ? SCRIPT_RENEW_PERMIT_NODE
                                                      : SCRIPT_RENEW_PERMIT];
            const char *at = strstr(script, gt_on);
            char *text = malloc(strlen(script) + 2);
            const char *argv[16];
            size_t lens[16];
            int argc = 3;
            redisReply *r;

            cr_assert(text && at, "the script has no GT switch");
            /* Without GT: the fallback from the start, as on a server
             * that refused it. */
            sprintf(text, "%.*slocal has_gt = %s %s", (int)(at - script), script,
                    gt ? "true" : "false", at + strlen(gt_on));
            freeReplyObject(redisCommand(rc, "FLUSHALL"));
            freeReplyObject(redisCommand(rc, "SET later 1"));
            score(rc, "later", "ABC", (long long[]){base + 90000, NEVER, base + 1000});
            argv[0] = "EVAL", argv[1] = text, argv[2] = nkeys;
            snprintf(nkeys, sizeof nkeys, "%d", node ? 0 : 6);
            for (int i = 0; i < 3; i++) {
                argv[argc++] = "later";
                if (!node)
                    argv[argc++] = "{later}:timeout";
            }
            argv[argc++] = LEASE_S;
            argv[argc++] = "client-id";
            argv[argc++] = "publish";
            for (int i = 0; i < 3; i++)
                argv[argc++] = permit_id("ABC"[i]);
            for (int i = 0; i < argc; i++)
                lens[i] = i >= argc - 3 ? LW_PERMIT_ID_LEN : strlen(argv[i]);
            r = redisCommandArgv(rc, argc, argv, lens);
            cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 4, "%s",
                      r && r->type == REDIS_REPLY_ERROR ? r->str : "no array");
            for (int i = 0; i < 3; i++)
                cr_assert_eq(r->element[i]->integer, 1, "gt %d node %d: permit %d", gt, node,
                             i);
            freeReplyObject(r);
            for (int i = 0; i < 3; i++) {
                long long want = i == 0 ? base + 90000 : i == 1 ? NEVER : base + 60000;
                long long got;

                r = redisCommand(rc, "ZSCORE {later}:timeout %b", permit_id("ABC"[i]),
                                 (size_t)LW_PERMIT_ID_LEN);
                cr_assert(r && r->type == REDIS_REPLY_STRING);
                got = atoll(r->str);
                /* Renewed: Redis's TIME (a few ms past base) + the lease. */
                cr_assert(got >= want && got <= (i == 2 ? want + 5000 : want),
                          "gt %d node %d: permit %d at %s", gt, node, i, r->str);
                freeReplyObject(r);
            }
            free(text);
        }
    redisFree(rc);
}

/* The watchdog's own batch of permits (put() per permit, put_call() once):
 * the publish command goes once a call, an id per permit, no time, and
 * the permits still renewed come out at Redis's TIME + the lease. */
REDIS_TEST(kinds, permit_batch_is_timed_by_redis)
{
    struct lw_client *c = new_client(30000, NULL);
    redisContext *rc = connect_srv();
    struct entry *e[3];
    long long t0 = redis_time_ms(rc), t1; /* to the ms: time() was up to 1 s behind */
    static const char *const names[3] = {"jobs", "jobs", "{q}b"};
    static const char letters[] = "ACD";
    redisReply *r;

    permits_many(rc, &(struct setup_arg){c, t0});
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(names[i]);

        e[i] = calloc(1, sizeof *e[i] + len + 1 + LW_PERMIT_ID_LEN);
        cr_assert(e[i]);
        memcpy(e[i]->name, names[i], len);
        memcpy(e[i]->name + len + 1, permit_id(letters[i]), LW_PERMIT_ID_LEN);
        e[i]->len = (uint32_t)len;
        e[i]->holds = 1;
        e[i]->kind = KIND_PERMIT;
    }
    for (int node = 0; node < 2; node++) {
        r = run_batch(rc, c, KIND_PERMIT, e, 3, node);
        cr_assert_eq(r->element[0]->integer, 1);
        cr_assert_eq(r->element[1]->integer, 0, "an expired permit is lost");
        cr_assert_eq(r->element[2]->integer, 1);
        freeReplyObject(r);
    }
    t1 = (long long)time(NULL) * 1000 + 1000;
    r = redisCommand(rc, "ZSCORE {jobs}:timeout %b", permit_id('A'), (size_t)LW_PERMIT_ID_LEN);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert(atoll(r->str) >= t0 + 30000 && atoll(r->str) <= t1 + 30000, "%s", r->str);
    freeReplyObject(r);
    r = redisCommand(rc, "ZSCORE {jobs}:timeout %b", permit_id('C'), (size_t)LW_PERMIT_ID_LEN);
    cr_assert(r && r->type == REDIS_REPLY_NIL, "a lost permit was added back");
    freeReplyObject(r);
    r = redisCommand(rc, "GET jobs");
    cr_assert_str_eq(r->str, "3", "the expired permits were not given back once");
    freeReplyObject(r);
    for (int i = 0; i < 3; i++)
        free(e[i]);
    redisFree(rc);
    cr_assert_eq(lw_client_free(c), 0);
}
