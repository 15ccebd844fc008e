/*
 * tests/test_rw_renewals.c - leasewheel's read holds next to every form
 * Redisson's read-lock renewal has had, each script verbatim (its SHA1
 * checked at SCRIPT LOAD), run by the test as a Redisson process's
 * watchdog would run it, against a real redis-server.
 *
 * Redisson's read-lock watchdog renews a batch of names per call:
 *   - <= 3.43  RedissonReadLock.renewExpirationAsync, one name per call:
 *              the hash to its lease and every reader's timeout keys;
 *   - 3.44-3.52 renewal/ReadLockTask, a batch: the inner loop's `i`
 *              shadows the pair index, so for every name but the first
 *              it renews keys under the wrong prefix (KEYS[counter + 1]);
 *   - 4.0-4.3  the loop fixed, still every reader's keys (other
 *              processes' dead readers are kept alive);
 *   - >= 4.4   only its own fields' keys.
 * Every form sets the hash to its own lease (PEXPIRE, never the max).
 *
 * What a user of leasewheel needs from each, asserted here:
 *   - our read holds stay renewed, whatever the Redisson renewal did to
 *     their keys and to the hash (cut them or stretched them): leasewheel
 *     restores both at its next renewal;
 *   - we never renew a Redisson reader's keys (its expiry is its own);
 *   - a hold of ours that stops being renewed (a partition past the
 *     lease) is reported lost on time even when a Redisson renewal keeps
 *     its keys alive, and is not taken up again when the link heals;
 *   - a dead leasewheel reader that Redisson keeps alive (<= 4.3) holds a
 *     writer off only while that Redisson reader reads, and for at most
 *     one Redisson lease after it leaves;
 *   - a hold of ours lost while another reader kept the hash alive leaves
 *     its field behind: the same owner reading again starts afresh from
 *     it, and its release leaves nothing renewed.
 * Each test takes 2 to 4 s.
 */
#include <stdlib.h>

#include "lock_util.h"
#include "fixture_util.h"
#include "proxy.h"
#include "rw_util.h"

/* ---- Redisson's renewals, verbatim (redisson/redisson) ---- */

/* <= 3.43.x: RedissonReadLock.renewExpirationAsync (1ce49b7a2:148).
 * KEYS = [name, "{name}"], ARGV = [lease, field]. */
#define RS_RENEW_343_SHA "6563941ff57e01b8cf61e86907b80686438a2f74"
#define RS_RENEW_343                                                                   \
    "local counter = redis.call('hget', KEYS[1], ARGV[2]); if (counter ~= false) then" \
    " redis.call('pexpire', KEYS[1], ARGV[1]); if (redis.call('hlen', KEYS[1]) > 1) t" \
    "hen local keys = redis.call('hkeys', KEYS[1]); for n, key in ipairs(keys) do cou" \
    "nter = tonumber(redis.call('hget', KEYS[1], key)); if type(counter) == 'number' " \
    "then for i=counter, 1, -1 do redis.call('pexpire', KEYS[2] .. ':' .. key .. ':rw" \
    "lock_timeout:' .. i, ARGV[1]); end; end; end; end; return 1; end; return 0;"

/* 3.44.0-3.52.x: renewal/ReadLockTask (redisson-3.44.0 520c1ea94958:82).
 * KEYS = [name1, "{name1}", name2, "{name2}", ...], ARGV = [lease,
 * field1, field2, ...]. */
#define RS_RENEW_344_SHA "1affef780a01e1406cb1968c62918f618d10d6a3"
#define RS_RENEW_344                                                                   \
    "local result = {} local j = 1 for i = 1, #KEYS, 2 do j = j + 1; local counter = " \
    "redis.call('hget', KEYS[i], ARGV[j]); if (counter ~= false) then redis.call('pex" \
    "pire', KEYS[i], ARGV[1]); if (redis.call('hlen', KEYS[i]) > 1) then local keys =" \
    " redis.call('hkeys', KEYS[i]); for n, key in ipairs(keys) do counter = tonumber(" \
    "redis.call('hget', KEYS[i], key)); if type(counter) == 'number' then for i=count" \
    "er, 1, -1 do redis.call('pexpire', KEYS[i+1] .. ':' .. key .. ':rwlock_timeout:'" \
    " .. i, ARGV[1]); end; end; end; end; table.insert(result, 1); else table.insert(" \
    "result, 0); end; end; return result;"

/* 4.0.0-4.3.x: renewal/ReadLockTask (5ba9d976af08:89).  Arguments as
 * 3.44's. */
#define RS_RENEW_40_SHA "d6564f42b98d6eece0e940a478ee248f80b8a90a"
#define RS_RENEW_40                                                                    \
    "local result = {} local j = 1 for i = 1, #KEYS, 2 do j = j + 1; local counter = " \
    "redis.call('hget', KEYS[i], ARGV[j]); if (counter ~= false) then redis.call('pex" \
    "pire', KEYS[i], ARGV[1]); if (redis.call('hlen', KEYS[i]) > 1) then local keys =" \
    " redis.call('hkeys', KEYS[i]); for n, key in ipairs(keys) do counter = tonumber(" \
    "redis.call('hget', KEYS[i], key)); if type(counter) == 'number' then for c=count" \
    "er, 1, -1 do redis.call('pexpire', KEYS[i+1] .. ':' .. key .. ':rwlock_timeout:'" \
    " .. c, ARGV[1]); end; end; end; end; table.insert(result, 1); else table.insert(" \
    "result, 0); end; end; return result;"

/* >= 4.4.0: renewal/ReadLockTask (:93) is RS_READ_RENEW of redisson_rw.h,
 * SHA1 38d2b478dfbe264ab67c221b7e4be62245f00ba0.  KEYS as 3.44's, ARGV =
 * [lease, n1, field..., n2, field..., ...]. */

/* A Redisson process's reader: its field (Redisson's "<uuid>:<thread>"). */
#define RS_FIELD "5f4a9d2e-6c1b-4e3f-9a8d-7b2c1e0f3a4d:1"

#define LEASE_MS 1200u   /* ours: renewed every 400 ms */
#define RS_LEASE_MS 1000 /* the Redisson process's lockWatchdogTimeout */

static void load_all(redisContext *rc)
{
    load_checked(rc, RS_READ_LOCK, RS_READ_LOCK_SHA);
    load_checked(rc, RS_READ_UNLOCK, RS_READ_UNLOCK_SHA);
    load_checked(rc, RS_READ_RENEW, RS_READ_RENEW_SHA);
    load_checked(rc, RS_RENEW_40, RS_RENEW_40_SHA);
    load_checked(rc, RS_RENEW_344, RS_RENEW_344_SHA);
    load_checked(rc, RS_RENEW_343, RS_RENEW_343_SHA);
}

/* One Redisson renewal call: sha over names[0..n-1] (KEYS: each name and
 * "{name}"), with the lease and then args[0..nargs-1].  Its reply, as
 * the integers of an array (or the one integer), in out[]. */
static void redisson_renew(redisContext *rc, const char *sha, const char *const *names, int n,
                           int lease_ms, const char *const *args, int nargs, long long *out)
{
    const char *argv[32];
    char nkeys[8], lease[16], tags[4][128];
    int argc = 0;
    redisReply *r;

    cr_assert_leq(n, 4);
    snprintf(nkeys, sizeof nkeys, "%d", 2 * n);
    snprintf(lease, sizeof lease, "%d", lease_ms);
    argv[argc++] = "EVALSHA";
    argv[argc++] = sha;
    argv[argc++] = nkeys;
    for (int i = 0; i < n; i++) {
        snprintf(tags[i], sizeof tags[i], "{%s}", names[i]);
        argv[argc++] = names[i];
        argv[argc++] = tags[i];
    }
    argv[argc++] = lease;
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    r = redisCommandArgv(rc, argc, argv, NULL);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s", r ? r->str : "no reply");
    if (r->type == REDIS_REPLY_INTEGER) {
        out[0] = r->integer;
    } else {
        cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->elements, (size_t)n);
        for (size_t i = 0; i < r->elements; i++)
            out[i] = r->element[i]->integer;
    }
    freeReplyObject(r);
}

static long long pttl_of(redisContext *rc, const char *key)
{
    redisReply *r = redisCommand(rc, "PTTL %s", key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1000;

    freeReplyObject(r);
    return v;
}

/* The timeout key of hold i of field on name. */
static const char *timeout_key(char *buf, size_t size, const char *name, const char *field,
                               int i)
{
    snprintf(buf, size, "{%s}:%s:rwlock_timeout:%d", name, field, i);
    return buf;
}

/* Whether key's TTL is one our renewal set: at most our lease, and alive. */
static int ours_to_lease(redisContext *rc, const char *key)
{
    long long t = pttl_of(rc, key);

    return t > 0 && t <= LEASE_MS;
}

/*
 * >= 4.4: a Redisson process reading "books" and "maps" renews its own
 * keys and each hash to its lease, and nothing of ours: run with a lease
 * that stands out (100 s), our keys keep the TTL our renewals gave them.
 * Run with a lease shorter than the time our next renewal is due, it cuts
 * the hash: our next renewal restores it.  A dead leasewheel reader (its
 * client freed: nothing renews it) is not kept alive by it: its keys
 * expire with our lease while the Redisson reader holds, and the Redisson
 * reader's unlock then frees the lock at once.
 */
REDIS_TEST(rw_renewals, redisson_4_4_renews_only_its_own_fields)
{
    const char *names[2] = {"books", "maps"};
    const char *args[4] = {"1", RS_FIELD, "1", RS_FIELD};
    struct lost_log log;
    struct lw_client *c = new_client(LEASE_MS, &log);
    redisContext *rc = connect_srv();
    struct lw_lock *l[2];
    char ours[128], key[300];
    long long res[2], cut;

    load_all(rc);
    own_field(c, ours, sizeof ours);
    for (int i = 0; i < 2; i++) {
        cr_assert(redisson_read_lock(rc, names[i], RS_FIELD, RS_LEASE_MS));
        l[i] = read_lock(c, names[i]);
        cr_assert_eq(lw_lock_acquire(l[i], NULL), 0);
    }
    cr_assert_eq(lw_lock_acquire(l[0], NULL), 0); /* two holds on books */

    redisson_renew(rc, RS_READ_RENEW_SHA, names, 2, 100000, args, 4, res);
    cr_assert(res[0] == 1 && res[1] == 1);
    for (int i = 0; i < 2; i++) {
        cr_assert_gt(pttl_of(rc, timeout_key(key, sizeof key, names[i], RS_FIELD, 1)), 90000,
                     "Redisson renews its own key");
        cr_assert(ours_to_lease(rc, timeout_key(key, sizeof key, names[i], ours, 1)),
                  "Redisson >= 4.4 touched our key on %s", names[i]);
    }
    cr_assert(ours_to_lease(rc, timeout_key(key, sizeof key, "books", ours, 2)));

    /* A shorter Redisson lease cuts the hash (900 ms: well past our next
     * renewal, 400 ms at most away, or it would expire first; one of ours
     * may come between the two commands); our next renewal mends it. */
    redisson_renew(rc, RS_READ_RENEW_SHA, names, 2, 900, args, 4, res);
    cut = pttl_of(rc, "books");
    cr_assert(cut <= 900 || cut > 1100, "PTTL %lld: neither cut nor renewed by us since", cut);
    cr_assert(wait_until(pttl_of(rc, "books") > 950, LEASE_MS),
              "our renewal did not restore the hash");
    /* Our renewals never stretch the Redisson reader's key. */
    redisson_renew(rc, RS_READ_RENEW_SHA, names, 2, 800, args, 4, res);
    sleep_ms(LEASE_MS / 2); /* a renewal of ours or more: an absence has no condition */
    cr_assert_leq(pttl_of(rc, timeout_key(key, sizeof key, "maps", RS_FIELD, 1)), 800);
    cr_assert_eq(atomic_load(&log.count), 0);

    /* Our reader dies; Redisson's goes on renewing: our keys expire. */
    lw_lock_free(l[0]);
    lw_lock_free(l[1]);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert(wait_until((redisson_renew(rc, RS_READ_RENEW_SHA, names, 2, RS_LEASE_MS, args, 4,
                                         res),
                          pttl_of(rc, timeout_key(key, sizeof key, "maps", ours, 1)) < 0),
                         LEASE_MS + 1000),
              "Redisson >= 4.4 kept our dead reader alive");
    cr_assert_eq(res[1], 1, "the Redisson reader still holds");
    cr_assert_eq(redisson_read_unlock(rc, "maps", RS_FIELD), 1,
                 "with our dead reader's keys gone, the lock is free at Redisson's unlock");
    redisFree(rc);
}

/*
 * 4.0-4.3: a Redisson process reading "ledger" renews every reader's keys,
 * ours too.  Stretched by it (100 s), our keys come back to our lease at
 * our next renewal.  Then our client is cut off (a partition past the
 * lease) while the Redisson process goes on renewing: our keys stay alive
 * on the server, yet our client reports the hold lost on time, as it must
 * (it cannot know who renewed them).  The Redisson reader leaves: our dead
 * hold, its keys kept to Redisson's lease, holds a writer off one Redisson
 * lease at most.  When the link heals, our client takes nothing up again
 * (the renewals held in the partition find the field gone).
 */
REDIS_TEST(rw_renewals, redisson_4_0_keeps_our_cut_off_reader_alive_for_one_lease)
{
    const char *names[1] = {"ledger"};
    const char *args[1] = {RS_FIELD};
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *c = NULL, *w = new_client(LEASE_MS, NULL);
    redisContext *rc = connect_srv();
    struct lw_lock *l, *wl;
    char ours[128], key[300];
    long long res[1];
    struct lw_client_stats st;
    uint64_t t0, lost_ms, left_ms, writer_ms;
    int rc_w;

    cr_assert(p, "no proxy");
    client_config(&cfg, LEASE_MS, &log);
    cfg.port = proxy_port(p);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    load_all(rc);
    own_field(c, ours, sizeof ours);
    timeout_key(key, sizeof key, "ledger", ours, 1);
    cr_assert(redisson_read_lock(rc, "ledger", RS_FIELD, RS_LEASE_MS));
    l = read_lock(c, "ledger");
    wl = write_lock(w, "ledger");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);

    redisson_renew(rc, RS_RENEW_40_SHA, names, 1, 100000, args, 1, res);
    cr_assert_eq(res[0], 1);
    cr_assert_gt(pttl_of(rc, key), 90000, "Redisson 4.0-4.3 renews every reader's keys");
    cr_assert(wait_until(ours_to_lease(rc, key), LEASE_MS), "our renewal set our key back");

    /* Cut off: Redisson renews every 300 ms, our client renews nothing. */
    cr_assert_eq(proxy_hold(p, 1), 0);
    t0 = now_ms();
    cr_assert(wait_until((redisson_renew(rc, RS_RENEW_40_SHA, names, 1, RS_LEASE_MS, args, 1,
                                         res),
                          sleep_ms(300), atomic_load(&log.count) >= 1),
                         3 * LEASE_MS),
              "the cut-off hold was not reported lost");
    lost_ms = atomic_load(&log.at_ns) / 1000000u - t0;
    cr_assert_eq(atomic_load(&log.reason), LW_LOST_EXPIRED);
    lw_client_get_stats(c, &st);
    /* By the lease after the last renewal, give or take how late the
     * engine's tick ever ran (a sanitizer's build runs it late). */
    cr_assert_leq(lost_ms, LEASE_MS + 50 + st.worst_tick_late_ns / 1000000u,
                  "reported %llu ms after the cut (ticks up to %llu ms late)",
                  (unsigned long long)lost_ms,
                  (unsigned long long)(st.worst_tick_late_ns / 1000000u));
    cr_assert_gt(pttl_of(rc, key), 0, "Redisson 4.0-4.3 kept our dead hold's key alive");
    cr_assert_eq(st.locks_held, 0, "the lost hold is no longer renewed");

    /* The Redisson reader leaves: our dead key holds the hash a while. */
    cr_assert_eq(rc_w = lw_trylock(wl, 0, 0, NULL), LW_ELOCKED, "%s", lw_strerror(rc_w));
    cr_assert_eq(redisson_read_unlock(rc, "ledger", RS_FIELD), 0,
                 "our dead hold's key, alive, keeps the hash");
    left_ms = now_ms();
    rc_w = lw_trylock(wl, 3000, 0, NULL);
    writer_ms = now_ms() - left_ms;
    cr_assert_eq(rc_w, 0, "%s", lw_strerror(rc_w));
    cr_log_info("4.0-4.3: lost reported %llu ms after the cut; the writer got in %llu ms after "
                "the Redisson reader left",
                (unsigned long long)lost_ms,
                (unsigned long long)writer_ms);
    cr_assert_leq(writer_ms, RS_LEASE_MS + 1000, "a writer waits one Redisson lease, not more");

    /* Healed: what the partition held arrives, and changes nothing. */
    cr_assert_eq(proxy_hold(p, 0), 0);
    sleep_ms(LEASE_MS / 2); /* the held renewals run: an absence has no condition */
    cr_assert_eq(lw_is_held(l), 0);
    cr_assert_eq(lw_is_held(wl), 1, "the writer keeps the lock");
    cr_assert_eq(atomic_load(&log.count), 1);
    cr_assert_eq(lw_unlock(wl), 0);
    lw_lock_free(l);
    lw_lock_free(wl);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert_eq(lw_client_free(w), 0);
    proxy_stop(p);
    redisFree(rc);
}

/*
 * <= 3.43: one call per name, every reader's keys.  A dead leasewheel
 * reader (its client freed) is kept alive by it while the Redisson reader
 * reads: after our lease its key is still there.  The Redisson reader
 * leaves, and the lock is free one Redisson lease later at most.
 */
REDIS_TEST(rw_renewals, redisson_3_43_keeps_our_dead_reader_for_one_lease_after_it_leaves)
{
    const char *names[1] = {"shelf"};
    const char *args[1] = {RS_FIELD};
    struct lw_client *c = new_client(LEASE_MS, NULL), *w = new_client(LEASE_MS, NULL);
    redisContext *rc = connect_srv();
    struct lw_lock *l = read_lock(c, "shelf"), *wl = write_lock(w, "shelf");
    char ours[128], key[300];
    long long res[1];
    uint64_t t0, writer_ms;
    int rc_w;

    load_all(rc);
    own_field(c, ours, sizeof ours);
    timeout_key(key, sizeof key, "shelf", ours, 1);
    cr_assert(redisson_read_lock(rc, "shelf", RS_FIELD, RS_LEASE_MS));
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0); /* dead: its hold stays, unrenewed */
    t0 = now_ms();
    while (now_ms() - t0 < LEASE_MS + 300) { /* Redisson's watchdog, every 300 ms */
        redisson_renew(rc, RS_RENEW_343_SHA, names, 1, RS_LEASE_MS, args, 1, res);
        cr_assert_eq(res[0], 1);
        sleep_ms(300);
    }
    cr_assert_gt(pttl_of(rc, key), 0, "Redisson <= 3.43 keeps our dead reader's key alive");
    cr_assert_eq(redisson_read_unlock(rc, "shelf", RS_FIELD), 0);
    t0 = now_ms();
    rc_w = lw_trylock(wl, 3000, 0, NULL);
    writer_ms = now_ms() - t0;
    cr_assert_eq(rc_w, 0, "%s", lw_strerror(rc_w));
    cr_log_info("<= 3.43: the writer got in %llu ms after the Redisson reader left",
                (unsigned long long)writer_ms);
    cr_assert_leq(writer_ms, RS_LEASE_MS + 1000, "a writer waits one Redisson lease, not more");
    cr_assert_eq(lw_unlock(wl), 0);
    lw_lock_free(wl);
    cr_assert_eq(lw_client_free(w), 0);
    redisFree(rc);
}

/*
 * 3.44-3.52: a Redisson process reading "north" and "south" in one batch.
 * For "south" the shadowed `i` renews "{north}:<field>:rwlock_timeout:1"
 * for each field of south with one hold: our key on north (stretched to
 * its lease), none of south's.  Its own reader's key on south is never
 * renewed and expires; ours there is renewed by our watchdog all along,
 * so south stays read-locked: the Redisson reader's unlock keeps the hash
 * for us and a writer stays out.
 */
REDIS_TEST(rw_renewals, redisson_3_44_batch_bug_leaves_our_holds_renewed)
{
    const char *names[2] = {"north", "south"};
    const char *args[2] = {RS_FIELD, RS_FIELD};
    struct lost_log log;
    struct lw_client *c = new_client(LEASE_MS, &log), *w = new_client(LEASE_MS, NULL);
    redisContext *rc = connect_srv();
    struct lw_lock *l[2], *wl = write_lock(w, "south");
    char ours[128], key[300], rs_key[300];
    long long res[2];
    uint64_t t0;
    int rc_w;

    load_all(rc);
    own_field(c, ours, sizeof ours);
    for (int i = 0; i < 2; i++) {
        cr_assert(redisson_read_lock(rc, names[i], RS_FIELD, RS_LEASE_MS));
        l[i] = read_lock(c, names[i]);
        cr_assert_eq(lw_lock_acquire(l[i], NULL), 0);
    }
    redisson_renew(rc, RS_RENEW_344_SHA, names, 2, 100000, args, 2, res);
    cr_assert(res[0] == 1 && res[1] == 1);
    cr_assert_gt(pttl_of(rc, timeout_key(key, sizeof key, "north", ours, 1)), 90000,
                 "3.44 renews every reader's key on the first name");
    cr_assert(ours_to_lease(rc, timeout_key(key, sizeof key, "south", ours, 1)),
              "3.44 renewed our key on the second name");
    timeout_key(rs_key, sizeof rs_key, "south", RS_FIELD, 1);
    cr_assert_leq(pttl_of(rc, rs_key), RS_LEASE_MS, "3.44 renewed its own key on south");

    /* Redisson's watchdog goes on; its reader's key on south expires,
     * ours stays renewed. */
    t0 = now_ms();
    cr_assert(wait_until((redisson_renew(rc, RS_RENEW_344_SHA, names, 2, RS_LEASE_MS, args, 2,
                                         res),
                          sleep_ms(100), pttl_of(rc, rs_key) < 0),
                         RS_LEASE_MS + 1000),
              "the Redisson reader's key on south never expired");
    cr_log_info("3.44: the Redisson reader's own key on south expired after %llu ms",
                (unsigned long long)(now_ms() - t0));
    cr_assert_eq(res[1], 1, "Redisson still believes it reads south");
    cr_assert_gt(pttl_of(rc, timeout_key(key, sizeof key, "south", ours, 1)), 0);
    cr_assert(wait_until(ours_to_lease(rc, timeout_key(key, sizeof key, "north", ours, 1)),
                         LEASE_MS),
              "our renewal set our key on north back to our lease");
    cr_assert_eq(redisson_read_unlock(rc, "south", RS_FIELD), 0,
                 "our live key keeps the hash");
    cr_assert_gt(pttl_of(rc, "south"), 0);
    cr_assert_eq(rc_w = lw_trylock(wl, 0, 0, NULL), LW_ELOCKED, "%s", lw_strerror(rc_w));
    cr_assert_eq(lw_is_held(l[1]), 1);
    cr_assert_eq(atomic_load(&log.count), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(lw_unlock(l[i]), 0);
        lw_lock_free(l[i]);
    }
    cr_assert_eq(lw_trylock(wl, 0, 0, NULL), 0, "free once we leave");
    cr_assert_eq(lw_unlock(wl), 0);
    lw_lock_free(wl);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert_eq(lw_client_free(w), 0);
    redisFree(rc);
}

/*
 * A hold of ours lost while a Redisson reader (>= 4.4) keeps the hash
 * alive: cut off past our lease, our timeout key expires, but our field
 * stays in the hash (nobody removes a dead reader's field).  The same
 * owner reads again once the link is back, then releases: nothing of the
 * old hold may survive that.  Redis must show no field of ours, our
 * client must renew nothing, and when the Redisson reader leaves the lock
 * is free (a writer gets in at once) instead of being kept by a field
 * our watchdog would go on renewing.
 */
REDIS_TEST(rw_renewals, a_read_hold_lost_under_a_live_hash_is_not_revived)
{
    const char *names[1] = {"atlas"};
    const char *args[2] = {"1", RS_FIELD};
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client_stats st;
    struct lost_log log;
    struct lw_client *c = NULL, *w = new_client(LEASE_MS, NULL);
    redisContext *rc = connect_srv();
    struct lw_lock *l, *wl;
    char ours[128], key[300];
    long long res[1];
    int rc_w;

    cr_assert(p, "no proxy");
    client_config(&cfg, LEASE_MS, &log);
    cfg.port = proxy_port(p);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    load_all(rc);
    own_field(c, ours, sizeof ours);
    timeout_key(key, sizeof key, "atlas", ours, 1);
    cr_assert(redisson_read_lock(rc, "atlas", RS_FIELD, RS_LEASE_MS));
    l = read_lock(c, "atlas");
    wl = write_lock(w, "atlas");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);

    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(wait_until((redisson_renew(rc, RS_READ_RENEW_SHA, names, 1, RS_LEASE_MS, args, 2,
                                         res),
                          sleep_ms(100),
                          atomic_load(&log.count) >= 1 && pttl_of(rc, key) < 0),
                         3 * LEASE_MS),
              "lost: %d, our key's PTTL %lld", atomic_load(&log.count), pttl_of(rc, key));
    redisson_renew(rc, RS_READ_RENEW_SHA, names, 1, RS_LEASE_MS, args, 2, res);
    cr_assert_eq(proxy_hold(p, 0), 0);

    /* Read again by the same owner, and released. */
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_hold_count(l), 1, "one acquire is one hold");
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 0, "released, yet a hold of ours is left in the hash");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 0, "our watchdog still renews a hold");

    /* The Redisson reader leaves: the lock is free. */
    redisson_renew(rc, RS_READ_RENEW_SHA, names, 1, RS_LEASE_MS, args, 2, res);
    cr_assert_eq(redisson_read_unlock(rc, "atlas", RS_FIELD), 1, "the lock was kept");
    cr_assert_eq(rc_w = lw_trylock(wl, 0, 0, NULL), 0, "%s", lw_strerror(rc_w));
    cr_assert_eq(lw_unlock(wl), 0);
    cr_assert_eq(atomic_load(&log.count), 1);
    lw_lock_free(l);
    lw_lock_free(wl);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert_eq(lw_client_free(w), 0);
    proxy_stop(p);
    redisFree(rc);
}
