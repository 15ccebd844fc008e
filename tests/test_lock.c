/*
 * tests/test_lock.c - the lock calls against a real redis-server: results,
 * reentrancy, the wire format, fencing tokens, waiting, bad input.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_base.h"
#include "lock_op.h"
#include "lock_util.h"
#include "call.h" /* holder_retry_at() */
#include "proxy.h"

REDIS_TEST(lock, reentrant_counts_and_wire_format)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "orders");
    char field[128];
    uint64_t t1 = 0, t2 = 0;
    redisReply *r;

    cr_assert_eq(lw_is_locked(l), 0);
    cr_assert_eq(lw_lock_set_fenced(l, 1), 0);
    cr_assert_eq(lw_lock_acquire(l, &t1), 0);
    cr_assert_eq(lw_lock_acquire(l, &t2), 0);
    cr_assert_gt(t1, 0);
    cr_assert_eq(t2, t1, "a reentrant acquire sees the same token");
    cr_assert_eq(lw_hold_count(l), 2);
    cr_assert_eq(lw_is_held(l), 1);
    cr_assert_eq(lw_is_locked(l), 1);

    /* Redisson's layout: a hash with one field <id>:<thread>, the count. */
    snprintf(field, sizeof field, "%s:%llu", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    r = redis_server_command(&srv, "HGETALL orders");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_assert_str_eq(r->element[0]->str, field);
    cr_assert_str_eq(r->element[1]->str, "2");
    freeReplyObject(r);
    cr_assert_gt(redis_int("PTTL %s", "orders"), 29000);
    cr_assert_eq(redis_int("GET %s", "redisson_lock_token:{orders}"), (long long)t1);

    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 1);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 0);
    cr_assert_eq(lw_is_locked(l), 0);
    cr_assert_eq(redis_int("EXISTS %s", "orders"), 0);
    cr_assert_eq(lw_unlock(l), LW_ENOTOWNER);

    /* The next first acquire gets the next token. */
    cr_assert_eq(lw_lock_acquire(l, &t2), 0);
    cr_assert_eq(t2, t1 + 1);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Companion keys by Redisson's prefixName: a name with '{' keeps its own
 * hash tag (prefix:name), others get one (prefix:{name}); either way every
 * key of the lock hashes to the name's slot. */
REDIS_TEST(lock, companion_keys_follow_redissons_prefix_name)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *plain = new_lock(c, "jobs"), *tagged = new_lock(c, "{user7}:cart");
    uint64_t t = 0;

    cr_assert_str_eq(plain->token_key, "redisson_lock_token:{jobs}");
    cr_assert_str_eq(plain->channel, "redisson_lock__channel:{jobs}");
    cr_assert_str_eq(tagged->token_key, "redisson_lock_token:{user7}:cart");
    cr_assert_str_eq(tagged->channel, "redisson_lock__channel:{user7}:cart");
    cr_assert_eq(plain->slot, keyslot("jobs", 4));
    cr_assert_eq(tagged->slot, keyslot("user7", 5));
    cr_assert_eq(keyslot(tagged->token_key, strlen(tagged->token_key)), tagged->slot);
    cr_assert_eq(keyslot(plain->channel, strlen(plain->channel)), plain->slot);

    cr_assert_eq(lw_lock_set_fenced(tagged, 1), 0);
    cr_assert_eq(lw_lock_acquire(tagged, &t), 0);
    cr_assert_eq(redis_int("GET %s", "redisson_lock_token:{user7}:cart"), (long long)t);
    cr_assert_eq(lw_unlock(tagged), 0);
    lw_lock_free(plain);
    lw_lock_free(tagged);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A fenced lock's token keeps increasing: across unlocks, force-unlocks,
 * handles and clients, as RFencedLock's counter at the same key does; and
 * across the counter's loss with Redis's data (a new one starts at Redis's
 * clock in microseconds, above every token before).  A lock not fenced
 * draws 0 and makes no counter. */
REDIS_TEST(lock, fencing_token_keeps_increasing)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "{t}x"), *lb = new_lock(b, "{t}x");
    uint64_t last = 0, t = 1;
    redisReply *r = redis_server_command(&srv, "TIME");
    long long redis_us = atoll(r->element[0]->str) * 1000000 + atoll(r->element[1]->str);

    freeReplyObject(r);
    cr_assert_eq(lw_lock_acquire(la, &t), 0);
    cr_assert_eq(t, 0, "a lock not fenced drew a token");
    cr_assert_eq(redis_int("EXISTS %s", "redisson_lock_token:{t}x"), 0);
    cr_assert_eq(lw_unlock(la), 0);
    cr_assert_eq(lw_lock_set_fenced(la, 1), 0);
    cr_assert_eq(lw_lock_set_fenced(lb, 1), 0);
    for (int i = 0; i < 6; i++) {
        struct lw_lock *l = i % 2 ? lb : la;

        cr_assert_eq(lw_lock_acquire(l, &t), 0);
        cr_assert_gt(t, last, "round %d: %llu after %llu", i, (unsigned long long)t,
                     (unsigned long long)last);
        last = t;
        if (i % 3 == 2)
            cr_assert_eq(lw_force_unlock(l), 1);
        else
            cr_assert_eq(lw_unlock(l), 0);
    }
    cr_assert_eq(redis_int("GET %s", "redisson_lock_token:{t}x"), (long long)last);
    cr_assert_geq((long long)last, redis_us, "the counter did not start at Redis's clock");
    /* Lost with Redis's data: the next token is still above the last. */
    freeReplyObject(redis_server_command(&srv, "FLUSHALL"));
    cr_assert_eq(lw_lock_acquire(lb, &t), 0);
    cr_assert_gt(t, last, "a token after the counter's loss fell to %llu from %llu",
                 (unsigned long long)t, (unsigned long long)last);
    cr_assert_eq(lw_unlock(lb), 0);
    lw_lock_free(la);
    lw_lock_free(lb);
    cr_assert_eq(lw_client_free(a), 0);
    cr_assert_eq(lw_client_free(b), 0);
}

/* The clients Redis holds back (a CLIENT PAUSE's too), from INFO; -1 on
 * no answer. */
/*
 * An acquire that ran in Redis but whose reply was lost with its
 * connection: the caller is told it failed, and a hold is left that
 * nothing renews.  The same owner's next acquire within that hold's lease
 * finds it (a re-entry to Redis, two holds and the old token) and must
 * give it back: else its unlock leaves one hold, which the watchdog then
 * renews for nobody, and each acquire after it gets the same token.  The
 * reply is lost for sure: Redis holds the acquire back (CLIENT PAUSE
 * WRITE) while the proxy between them stops forwarding, runs it once let
 * go, and the proxy then drops the connection with the reply in it.
 */
REDIS_TEST(lock, an_acquire_whose_reply_was_lost_leaves_no_hold_behind)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    struct outcome lost = {0};
    uint64_t before = 0, token = 0, next = 0;

    cr_assert_not_null(p);
    client_config(&cfg, 5000, NULL); /* the left hold outlives the test's steps */
    cfg.port = proxy_port(p);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "unanswered");
    cr_assert_eq(lw_lock_set_fenced(l, 1), 0);
    cr_assert_eq(lw_trylock(l, 0, 0, &before), 0);
    cr_assert_eq(lw_unlock(l), 0);
    tally_init(&lost.tally);
    freeReplyObject(redis_server_command(&srv, "CLIENT PAUSE %s WRITE", "5000"));
    cr_assert_eq(lw_acquire_async(l, lw_owner_self(), 0, 0, on_outcome, &lost), 0);
    cr_assert(wait_until(blocked_clients() == 1, 3000), "the acquire never reached Redis");
    cr_assert_eq(proxy_hold(p, 1), 0);
    freeReplyObject(redis_server_command(&srv, "CLIENT UNPAUSE"));
    cr_assert(wait_until(redis_int("EXISTS %s", "unanswered") == 1, 3000), "it never ran");
    cr_assert_eq(proxy_drop(p, 1), 0);
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(tally_wait(&lost.tally, 1, 5000), 1);
    cr_assert_neq(atomic_load(&lost.err), 0, "the reply came through");
    /* Its hold is there, with a token of its own; the same owner again. */
    cr_assert_eq(redis_int("GET %s", "redisson_lock_token:{unanswered}"), (long long)before + 1);
    cr_assert_eq(lw_trylock(l, 0, 0, &token), 0);
    cr_assert_eq(token, before + 1, "the token the lost acquire drew, unseen till now");
    cr_assert_eq(lw_hold_count(l), 1, "the lost acquire's hold was given back");
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(redis_int("EXISTS %s", "unanswered"), 0, "a hold left behind");
    cr_assert_eq(lw_trylock(l, 0, 0, &next), 0);
    cr_assert_gt(next, token, "a fresh acquire, not a re-entry");
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    tally_destroy(&lost.tally);
    cr_assert_eq(lw_client_free(c), 0);
    proxy_stop(p);
}

/* Redis's own word on when key expires, on lw_clock_now()'s clock: no
 * earlier than the moment before PTTL was asked + its answer. */
static uint64_t expires_no_earlier_than(const char *key)
{
    uint64_t before = lw_clock_now();

    return before + (uint64_t)redis_int("PTTL %s", key) * 1000000u;
}

/* lw_acquire_until() and its async twin say how long a hold is sure: no
 * later than Redis keeps it, at least a tick ahead, and within a round
 * trip of the lease; NULL is refused. */
REDIS_TEST(lock, acquire_until_is_within_the_lease_redis_keeps)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_lock *l = new_lock(c, "sure");
    struct outcome out = {0};
    uint64_t until = 0, async_until = 0, before, token;

    cr_assert_eq(lw_acquire_until(l, 1, 0, 2000, &token, NULL), LW_EINVAL);
    cr_assert_eq(lw_acquire_until_async(l, 1, 0, 2000, NULL, on_outcome, &out), LW_EINVAL);
    before = lw_clock_now();
    cr_assert_eq(lw_acquire_until(l, 1, 0, 2000, &token, &until), 0);
    cr_assert_leq(until, expires_no_earlier_than("sure"), "sure past Redis's expiry");
    cr_assert_geq(until, lw_clock_now() + 10000000u, "less than a tick left");
    cr_assert_leq(until, lw_clock_now() + 2000000000u - 22000000u, "no drift allowance");
    cr_assert_geq(until, before + 2000000000u - 22000000u, "counted from before the call");
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    /* The watchdog's: its lease. */
    tally_init(&out.tally);
    before = lw_clock_now();
    cr_assert_eq(lw_acquire_until_async(l, 2, 0, 0, &async_until, on_outcome, &out), 0);
    cr_assert_eq(tally_wait(&out.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&out.err), 0);
    cr_assert_leq(async_until, expires_no_earlier_than("sure"));
    cr_assert_gt(async_until, before + 2000000000u, "not the watchdog's lease");
    cr_assert_eq(lw_unlock_owner(l, 2), 0);
    tally_destroy(&out.tally);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

REDIS_TEST(lock, unlock_by_non_owner_leaves_lock_untouched)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "shared"), *lb = new_lock(b, "shared");
    long long ttl_before;

    cr_assert_eq(lw_lock_acquire(la, NULL), 0);
    ttl_before = redis_int("PTTL %s", "shared");
    cr_assert_eq(lw_unlock(lb), LW_ENOTOWNER, "another client");
    cr_assert_eq(lw_unlock_owner(la, lw_owner_self() + 1), LW_ENOTOWNER, "another owner");
    cr_assert_eq(lw_hold_count(la), 1);
    cr_assert_eq(lw_is_held(lb), 0);
    cr_assert_eq(lw_is_locked(lb), 1);
    cr_assert_leq(redis_int("PTTL %s", "shared"), ttl_before);
    cr_assert_eq(lw_unlock(la), 0);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

/* client_id_host: the id says which host and process, "<host>-<pid>-"
 * and 8 hex digits, no ':'; two clients still differ; the default stays a
 * random UUID; anything but 0 or 1 is refused. */
REDIS_TEST(lock, client_id_names_the_host_and_process)
{
    struct lw_client_config cfg;
    struct lw_client *a, *b;
    char host[256] = "", prefix[300];
    const char *id;

    client_config(&cfg, 30000, NULL);
    cfg.client_id_host = 2;
    cr_assert_eq(lw_client_new(&cfg, &a), LW_EINVAL);
    cfg.client_id_host = 1;
    cr_assert_eq(lw_client_new(&cfg, &a), 0);
    cr_assert_eq(lw_client_new(&cfg, &b), 0);
    cr_assert_eq(gethostname(host, sizeof host - 1), 0);
    for (char *p = host; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == ':')
            *p = '-';
    snprintf(prefix, sizeof prefix, "%s-%ld-", host, (long)getpid());
    id = lw_client_id(a);
    cr_assert(strlen(id) <= LW_CLIENT_ID_MAX && !strchr(id, ':'), "'%s'", id);
    if (strlen(prefix) + 8 <= LW_CLIENT_ID_MAX) /* else the host name was cut */
        cr_assert(strncmp(id, prefix, strlen(prefix)) == 0 &&
                      strspn(id + strlen(prefix), "0123456789abcdef") == 8 &&
                      strlen(id) == strlen(prefix) + 8,
                  "'%s' is not '%sxxxxxxxx'", id, prefix);
    cr_assert_str_neq(id, lw_client_id(b));
    lw_client_free(b);
    lw_client_free(a);
    /* The default: a UUID, as before. */
    client_config(&cfg, 30000, NULL);
    cr_assert_eq(lw_client_new(&cfg, &a), 0);
    cr_assert_eq(strlen(lw_client_id(a)), 36);
    lw_client_free(a);
}

/* lw_name_status: free, our own lock with its field and holds, and more
 * holders than the struct keeps (counted all the same). */
REDIS_TEST(lock, name_status_reads_without_taking)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "seen");
    struct lw_name_status st;
    char field[128];
    redisReply *r;

    cr_assert_eq(lw_name_status(l, NULL), LW_EINVAL);
    cr_assert_eq(lw_name_status(l, &st), 0);
    cr_assert_eq(st.kind, LW_NAME_FREE);
    cr_assert_eq(st.ttl_ms, -2);
    cr_assert_eq(st.nholders, 0);
    cr_assert_eq(redis_int("EXISTS %s", "seen"), 0);

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_name_status(l, &st), 0);
    snprintf(field, sizeof field, "%s:%llu", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    cr_assert_eq(st.kind, LW_NAME_LOCK);
    cr_assert_str_eq(st.type, "hash");
    cr_assert(st.ttl_ms > 29000 && st.ttl_ms <= 30000, "ttl %lld", (long long)st.ttl_ms);
    cr_assert_eq(st.nholders, 1);
    cr_assert_str_eq(st.holders[0].id, field);
    cr_assert_eq(st.holders[0].count, 2);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_unlock(l), 0);

    /* 20 readers: 16 kept, 20 counted. */
    for (int i = 0; i < 20; i++) {
        snprintf(field, sizeof field, "reader-%d:1", i);
        r = redis_server_command(&srv, "HSET seen %s 1", field);
        cr_assert_not_null(r);
        freeReplyObject(r);
    }
    r = redis_server_command(&srv, "HSET seen mode read");
    freeReplyObject(r);
    cr_assert_eq(lw_name_status(l, &st), 0);
    cr_assert_eq(st.kind, LW_NAME_READ);
    cr_assert_eq(st.ttl_ms, -1);
    cr_assert_eq(st.nholders, 20);
    cr_assert(strncmp(st.holders[LW_STATUS_HOLDERS - 1].id, "reader-", 7) == 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* lw_unlock_after: the last hold leaves the lock to expire so long after
 * (a minimum hold), held by the same field meanwhile and no longer
 * renewed; an earlier hold is released as lw_unlock's is. */
REDIS_TEST(lock, unlock_after_leaves_it_to_expire)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "atleast");
    struct lw_client_stats st;
    uint64_t other = lw_owner_self() + 1, t0;
    char field[128];

    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), 500), LW_ENOTOWNER, "not held");
    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), 0), LW_ERANGE);
    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), LW_MAX_LEASE_MS + 1ull), LW_ERANGE);

    /* Two holds: the first goes as an unlock's, the lease untouched. */
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), 800), 0);
    cr_assert_eq(lw_hold_count(l), 1);
    cr_assert_gt(redis_int("PTTL %s", "atleast"), 29000);

    /* The last: still there, our field with one hold, 800 ms to live. */
    t0 = now_ms();
    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), 800), 0);
    cr_assert_leq(redis_int("PTTL %s", "atleast"), 800);
    snprintf(field, sizeof field, "%s:%llu", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    cr_assert_eq(redis_int("HGET atleast %s", field), 1);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 0, "the watchdog let it go");
    cr_assert_eq(lw_acquire(l, other, 0, 0, NULL), LW_ELOCKED, "held until it expires");
    cr_assert(wait_until(redis_int("EXISTS %s", "atleast") == 0, 3000));
    cr_assert_geq(now_ms() - t0, 700, "gone before its time");
    cr_assert_eq(lw_acquire(l, other, 0, 0, NULL), 0, "free after");
    cr_assert_eq(lw_unlock_after(l, lw_owner_self(), 500), LW_ENOTOWNER, "another's");
    cr_assert_eq(lw_unlock_owner(l, other), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

REDIS_TEST(lock, force_unlock_ttl_and_explicit_lease)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "lease");
    struct lw_client_stats st;
    int64_t ttl = 0;
    uint64_t t0;

    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    cr_assert_eq(ttl, -2, "not locked");
    cr_assert_eq(lw_force_unlock(l), 0, "nothing to delete");

    /* An explicit 1 s lease: gone after 1 s and never renewed. */
    t0 = now_ms();
    cr_assert_eq(lw_lock_lease(l, 1000, NULL), 0);
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0);
    cr_assert(ttl > 0 && ttl <= 1000, "ttl %lld", (long long)ttl);
    cr_assert(wait_until(redis_int("EXISTS %s", "lease") == 0, 3000));
    cr_assert_geq(now_ms() - t0, 950, "gone before its lease");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.renewals_sent, 0);
    cr_assert_eq(st.locks_held, 0);

    /* Force-unlock deletes whoever holds it. */
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 1);
    cr_assert_eq(lw_force_unlock(l), 1);
    cr_assert_eq(lw_is_locked(l), 0);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 0, "the watchdog stopped with it");
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(lock, bad_input)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l = NULL;
    char big[LW_LOCK_NAME_MAX + 1];
    int64_t ttl;

    /* Configuration. */
    cr_assert_eq(lw_client_new(NULL, &c), LW_EINVAL);
    client_config(&cfg, 30000, NULL);
    cfg.tick_ms = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    client_config(&cfg, 20, NULL); /* under 3 ticks of 10 ms */
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ELEASE);
    client_config(&cfg, 30000, NULL);
    cfg.renew_batch = LW_MAX_RENEW_BATCH + 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    client_config(&cfg, 30000, NULL);
    cfg.client_id = "has:colon";
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    client_config(&cfg, 30000, NULL);
    cfg.client_id = "";
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    client_config(&cfg, 30000, NULL);
    cfg.port = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    client_config(&cfg, 30000, NULL);
    cfg.renew_batches_inflight = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    cr_assert_null(c);

    c = new_client(30000, NULL);
    /* Names. */
    memset(big, 'x', sizeof big);
    cr_assert_eq(lw_lock_new(c, NULL, 3, &l), LW_EINVAL);
    cr_assert_eq(lw_lock_new(c, "x", 0, &l), LW_EINVAL);
    cr_assert_eq(lw_lock_new(NULL, "x", 1, &l), LW_EINVAL);
    cr_assert_eq(lw_lock_new(c, big, sizeof big, &l), LW_ERANGE);
    cr_assert_eq(lw_lock_new(c, big, sizeof big - 1, &l), 0, "the maximum is accepted");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    /* A binary name, NUL included. */
    cr_assert_eq(lw_lock_new(c, "a\0b", 3, &l), 0);
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_is_locked(l), 1);
    cr_assert_eq(redis_int("EXISTS %s", "a"), 0);
    cr_assert_eq(lw_unlock(l), 0);

    /* Leases: zero (explicit), under 3 ticks, too long. */
    cr_assert_eq(lw_lock_lease(l, 0, NULL), LW_EINVAL);
    cr_assert_eq(lw_lock_lease(l, 29, NULL), LW_ELEASE);
    cr_assert_eq(lw_trylock(l, 0, 1, NULL), LW_ELEASE);
    cr_assert_eq(lw_lock_lease(l, (uint64_t)LW_MAX_LEASE_MS + 1, NULL), LW_ERANGE);
    cr_assert_eq(lw_acquire_async(l, 1, 0, 5, NULL, NULL), LW_ELEASE);
    cr_assert_eq(lw_is_locked(l), 0, "nothing was sent");
    lw_lock_free(l);

    /* NULL handles. */
    cr_assert_eq(lw_lock_acquire(NULL, NULL), LW_EINVAL);
    cr_assert_eq(lw_unlock(NULL), LW_EINVAL);
    cr_assert_eq(lw_is_locked(NULL), LW_EINVAL);
    cr_assert_eq(lw_remaining_ttl(NULL, &ttl), LW_EINVAL);
    cr_assert_eq(lw_unlock_async(NULL, 1, NULL, NULL), LW_EINVAL);
    lw_lock_free(NULL);
    cr_assert_eq(lw_client_free(NULL), 0);

    /* A key that is not a lock. */
    cr_assert_eq(lw_lock_new(c, "plain", 5, &l), 0);
    freeReplyObject(redis_server_command(&srv, "SET plain 1"));
    cr_assert_eq(lw_lock_acquire(l, NULL), LW_EWRONGTYPE);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(lock, trylock_woken_by_unlock_and_timing_out)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "door"), *lb = new_lock(b, "door");
    struct lw_client_stats st;
    struct outcome o;
    uint64_t t0, unlocked_at;
    redisReply *r;

    cr_assert_eq(lw_lock_acquire(la, NULL), 0);
    /* Nobody unlocks: a 300 ms wait ends on time. */
    t0 = now_ms();
    cr_assert_eq(lw_trylock(lb, 300, 0, NULL), LW_ELOCKED);
    cr_assert_geq(now_ms() - t0, 300);
    cr_assert_lt(now_ms() - t0, 300 + 100, "late by more than 100 ms");
    cr_assert_eq(lw_trylock(lb, 0, 0, NULL), LW_ELOCKED, "no wait");

    /* A waiter subscribed on the lock's channel is woken by the unlock. */
    tally_init(&o.tally);
    cr_assert_eq(lw_acquire_async(lb, 7, 10000, 0, on_outcome, &o), 0);
    cr_assert(wait_until((lw_client_get_stats(b, &st), st.subscriptions == 1 &&
                          st.waiters == 1), 2000));
    r = redis_server_command(&srv, "PUBSUB CHANNELS *");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    cr_assert_str_eq(r->element[0]->str, "redisson_lock__channel:{door}");
    freeReplyObject(r);
    sleep_ms(100);
    unlocked_at = lw_clock_now();
    cr_assert_eq(lw_unlock(la), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o.err), 0);
    cr_assert_lt((atomic_load(&o.at_ns) - unlocked_at) / 1000000u, 50,
                 "woken %llu ms after the unlock",
                 (unsigned long long)((atomic_load(&o.at_ns) - unlocked_at) / 1000000u));
    cr_assert(wait_until((lw_client_get_stats(b, &st), st.subscriptions == 0), 2000),
              "unsubscribed when nobody waits");
    cr_assert_eq(lw_unlock_owner(lb, 7), 0);
    tally_destroy(&o.tally);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

REDIS_TEST(lock, waiter_retries_when_the_holders_lease_runs_out)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "lapse"), *lb = new_lock(b, "lapse");
    uint64_t t0 = now_ms();

    /* The holder never unlocks: its 300 ms lease runs out, no message. */
    cr_assert_eq(lw_lock_lease(la, 300, NULL), 0);
    cr_assert_eq(lw_trylock(lb, 5000, 0, NULL), 0);
    cr_assert_lt(now_ms() - t0, 1000);
    cr_assert_eq(lw_unlock(lb), 0);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

/* PTTL reads 0 in the millisecond a key expires: a lease about to run out,
 * retried at the next tick.  Only -1 (no TTL) waits for the deadline. */
Test(lock, a_holder_with_pttl_0_is_retried_at_once)
{
    const uint64_t now = 1000000000u, deadline = now + 5000000000u;

    cr_assert_eq(holder_retry_at(now, 0, deadline), now + 1000000u);
    cr_assert_eq(holder_retry_at(now, 300, deadline), now + 300000000u);
    cr_assert_eq(holder_retry_at(now, -1, deadline), deadline);
    cr_assert_eq(holder_retry_at(now, 6000, deadline), deadline);
    cr_assert_eq(holder_retry_at(now, INT64_MAX, UINT64_MAX), UINT64_MAX);
    cr_assert_eq(holder_retry_at(now, 0, now + 500000u), now + 500000u);
}

/* The same against Redis: a waiter on 1 ms ticks retries close to the
 * expiry, where PTTL often reads 0.  Each wait ends soon after the key
 * expires, never at the deadline. */
REDIS_TEST(lock, waiter_retrying_in_the_millisecond_of_expiry_gets_the_lock)
{
    struct lw_client_config cfg;
    struct lw_client *b = NULL;
    struct lw_lock *lb;
    redisReply *r;

    client_config(&cfg, 30000, NULL);
    cfg.tick_ms = 1;
    cr_assert_eq(lw_client_new(&cfg, &b), 0);
    lb = new_lock(b, "edge");
    for (int i = 0; i < 60; i++) {
        uint64_t t0;

        r = redis_server_command(&srv, "HSET edge other:1 1");
        freeReplyObject(r);
        r = redis_server_command(&srv, "PEXPIRE edge %d", 3 + i % 7);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
        freeReplyObject(r);
        t0 = now_ms();
        cr_assert_eq(lw_trylock(lb, 2000, 0, NULL), 0, "attempt %d", i);
        cr_assert_lt(now_ms() - t0, 1000, "attempt %d waited for its deadline", i);
        cr_assert_eq(lw_unlock(lb), 0);
    }
    lw_lock_free(lb);
    lw_client_free(b);
}

/* A callback that keeps the engine thread 150 ms: the ticks it holds up
 * show in worst_tick_late_ns, which explains late losses. */
static void sleep_150ms(int err, int64_t value, void *arg)
{
    (void)value;
    sleep_ms(150);
    tally_add(arg, err);
}

REDIS_TEST(lock, a_held_up_engine_thread_shows_in_the_stats)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "slow");
    struct lw_client_stats st;
    struct tally done;

    tally_init(&done);
    cr_assert_eq(lw_acquire_async(l, 1, 0, 0, sleep_150ms, &done), 0);
    cr_assert_eq(tally_wait(&done, 1, 5000), 1);
    cr_assert_eq(done.failed, 0);
    /* The next tick runs, and sees how late it is. */
    wait_until((lw_client_get_stats(c, &st), st.worst_tick_late_ns >= 100 * 1000000ull), 2000);
    cr_assert_geq(st.worst_tick_late_ns, 100 * 1000000ull, "%.1f ms",
                  (double)st.worst_tick_late_ns / 1e6);
    cr_assert_lt(st.worst_tick_late_ns, 5000 * 1000000ull);
    cr_assert_eq(lw_unlock_owner(l, 1), 0);
    tally_destroy(&done);
    lw_lock_free(l);
    lw_client_free(c);
}

/* Contention: two clients, two threads each, one lock. */
struct contender {
    struct lw_lock *lock;
    _Atomic int *inside;
    _Atomic int *acquired;
    _Atomic int *overlaps;
    int target;
    int errors;
};

static void *contend(void *arg)
{
    struct contender *k = arg;

    for (int i = 0; i < 20000 && atomic_load(k->acquired) < k->target; i++) {
        int rc = lw_lock_acquire(k->lock, NULL);

        if (rc) {
            k->errors++;
            continue;
        }
        if (atomic_fetch_add(k->inside, 1) != 0)
            atomic_fetch_add(k->overlaps, 1);
        atomic_fetch_add(k->acquired, 1);
        atomic_fetch_sub(k->inside, 1);
        if (lw_unlock(k->lock))
            k->errors++;
    }
    return NULL;
}

REDIS_TEST(lock, two_clients_never_hold_it_together)
{
    struct lw_client *c[2] = {new_client(30000, NULL), new_client(30000, NULL)};
    struct lw_lock *l[2] = {new_lock(c[0], "hot"), new_lock(c[1], "hot")};
    _Atomic int inside = 0, acquired = 0, overlaps = 0;
    struct contender k[4];
    pthread_t t[4];

    for (int i = 0; i < 4; i++) {
        k[i] = (struct contender){l[i % 2], &inside, &acquired, &overlaps, 10000, 0};
        pthread_create(&t[i], NULL, contend, &k[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(k[i].errors, 0, "thread %d: %d errors", i, k[i].errors);
    }
    cr_assert_geq(atomic_load(&acquired), 10000);
    cr_assert_eq(atomic_load(&overlaps), 0);
    cr_assert_eq(redis_int("EXISTS %s", "hot"), 0);
    for (int i = 0; i < 2; i++) {
        lw_lock_free(l[i]);
        lw_client_free(c[i]);
    }
}

REDIS_TEST(lock, async_calls_and_free_with_waiters)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "async"), *lb = new_lock(b, "async");
    struct outcome o, w;
    struct lw_client_stats st;

    tally_init(&o.tally);
    tally_init(&w.tally);
    cr_assert_eq(lw_acquire_async(la, 42, LW_WAIT_FOREVER, 0, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o.err), 0);
    cr_assert_eq(atomic_load(&o.value), 0, "a token, not fenced");
    cr_assert_eq(lw_hold_count_async(la, 42, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 2, 5000), 2);
    cr_assert_eq(atomic_load(&o.value), 1);
    cr_assert_eq(lw_is_held_async(la, 43, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 3, 5000), 3);
    cr_assert_eq(atomic_load(&o.value), 0, "owner 43 holds nothing");
    cr_assert_eq(lw_remaining_ttl_async(la, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 4, 5000), 4);
    cr_assert_gt(atomic_load(&o.value), 0);

    /* Waiters of a client being freed end with LW_ESHUTDOWN. */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(lw_acquire_async(lb, 100 + i, LW_WAIT_FOREVER, 0, on_outcome, &w), 0);
    lw_lock_free(lb); /* the pending calls keep the handle alive */
    cr_assert(wait_until((lw_client_get_stats(b, &st), st.waiters == 3), 5000),
              "the three never in line");
    cr_assert_eq(lw_client_free(b), 0);
    cr_assert_eq(tally_wait(&w.tally, 3, 1000), 3);
    cr_assert_eq(w.tally.failed, 3);
    cr_assert_eq(atomic_load(&w.err), LW_ESHUTDOWN);

    cr_assert_eq(lw_unlock_async(la, 42, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 5, 5000), 5);
    cr_assert_eq(atomic_load(&o.err), 0);
    cr_assert_eq(lw_force_unlock_async(la, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 6, 5000), 6);
    cr_assert_eq(atomic_load(&o.value), 0, "already unlocked");
    tally_destroy(&o.tally);
    tally_destroy(&w.tally);
    lw_lock_free(la);
    lw_client_free(a);
}

static void *churn(void *arg)
{
    struct lw_lock *l = arg;
    uint64_t until = now_ms() + 1500;

    for (int i = 0; i < 100000 && now_ms() < until; i++)
        if (lw_lock_acquire(l, NULL) == 0)
            lw_unlock(l);
    return NULL;
}

REDIS_TEST(lock, trylock_deadline_holds_under_unlock_traffic)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "busy"), *lb = new_lock(b, "busy");
    struct lw_client_stats st;
    pthread_t t;
    uint64_t t0;
    int rc;

    pthread_create(&t, NULL, churn, la);
    /* The traffic under way: a's first acquires done. */
    cr_assert(wait_until((lw_client_get_stats(a, &st), st.acquires >= 2), 5000),
              "no unlock traffic");
    for (int i = 0; i < 5; i++) {
        t0 = now_ms();
        rc = lw_trylock(lb, 200, 0, NULL);
        cr_assert(rc == 0 || rc == LW_ELOCKED, "%s", lw_errname(rc));
        cr_assert_lt(now_ms() - t0, 200 + 150, "try-lock overran its wait");
        if (rc == 0)
            cr_assert_eq(lw_unlock(lb), 0);
    }
    pthread_join(t, NULL);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

/* seen[fd]: whether descriptor fd (of the first 1024) is open. */
static void open_fds(unsigned char *seen)
{
    for (int fd = 0; fd < 1024; fd++)
        seen[fd] = fcntl(fd, F_GETFD) != -1;
}

/* The client's sockets (engine and subscriber) are close-on-exec: a
 * program that forks and execs must not hand them to its child. */
REDIS_TEST(lock, sockets_are_close_on_exec)
{
    unsigned char before[1024], after[1024];
    struct lw_client *c;
    struct lw_lock *l;
    int fresh = 0;

    open_fds(before);
    c = new_client(3000, NULL);
    l = new_lock(c, "cloexec");
    cr_assert_eq(lw_trylock(l, 0, 0, NULL), 0);
    cr_assert_eq(lw_is_locked(l), 1);
    open_fds(after);
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;

        if (!after[fd] || before[fd] || fstat(fd, &st) || !S_ISSOCK(st.st_mode))
            continue;
        fresh++;
        cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC, "socket %d is inherited by exec", fd);
    }
    cr_assert_geq(fresh, 1, "the engine's connection is a new socket");
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}
