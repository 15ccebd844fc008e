/*
 * tests/test_fault_matrix.c - what each Redis fault does to 1000 held
 * watchdog locks.
 *
 * Every case acquires 1000 locks on a 1 s watchdog lease (50 ms ticks), in
 * ten waves a thirtieth of a lease apart so that renewals go out all the
 * time, lets them renew, injects one fault, waits for it to clear and for
 * 1.5 leases more, then checks the library's promises:
 *   - no crash and no hang (the case's own timeout; the client frees);
 *   - every lock is either still held - our field in Redis, with a live
 *     expiry, and renewed since the fault - or was reported lost, exactly
 *     once, and not both;
 *   - no loss was reported after the lock's valid_until: the library's own
 *     count (lost_late) is 0, and every loss came before a bound the test
 *     knows from outside: valid_until <= (the last moment Redis could
 *     still confirm a renewal) + lease - drift, plus one tick;
 *   - after the fault, the names of lost locks and new names can be
 *     acquired, by another client.
 * What each fault should do (all lost, none, some) is the table at the end;
 * docs/reliability.md explains each row.
 *
 * Built twice: as it is, and with LW_TEST_TLS (fault_matrix_tls), where the
 * server serves TLS only and every client connects with mutual TLS
 * (engine_util.h, lock_util.h).  The test's own connections to the server
 * go over its unix socket either way.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "lock_util.h"
#include "proxy.h"

#define NLOCKS 1000
#define LEASE_MS 1000u
/* The bound on a loss is valid_until + one tick, and the library aims a
 * tick before valid_until: a held-up engine thread has two ticks.  The
 * ASan build now and then holds it up a few tens of ms (late losses of
 * 22 ms on 20 ms ticks in CI; cause not found; docs/reliability.md):
 * 50 ms ticks. */
#define TICK_MS 50u
#define DRIFT_MS (LEASE_MS / 100u + 2u)
#define OWNER 7u
#define MS 1000000ull

enum expect { NONE_LOST, ALL_LOST, SOME_LOST };

/* The held locks and what on_lost said about each. */
struct matrix {
    struct lw_client *client;
    struct lw_lock *locks[NLOCKS];
    _Atomic uint64_t lost_at[NLOCKS]; /* 0: not reported lost */
    _Atomic int reason[NLOCKS];
    _Atomic int lost, lost_twice, strangers;
    uint64_t fault_ns, cleared_ns;
};

static struct matrix m;
static int client_port; /* where the client connects: the server, or a proxy */

static void lock_name(int i, char *buf, size_t size)
{
    snprintf(buf, size, "fm:%04d", i);
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct matrix *mx = arg;
    int i = len == 7 && !memcmp(name, "fm:", 3) ? atoi(name + 3) : -1;

    if (i < 0 || i >= NLOCKS || owner != OWNER) {
        atomic_fetch_add(&mx->strangers, 1);
        return;
    }
    if (atomic_exchange(&mx->lost_at[i], lw_clock_now()) != 0)
        atomic_fetch_add(&mx->lost_twice, 1);
    atomic_store(&mx->reason[i], reason);
    atomic_fetch_add(&mx->lost, 1);
}

/* A client holding NLOCKS watchdog locks, acquired asynchronously in
 * waves: each wave renews at its own ticks. */
static void hold_locks(void)
{
    struct lw_client_config cfg;
    struct tally acquired;
    char name[16];

    memset(&m, 0, sizeof m);
    client_config(&cfg, LEASE_MS, NULL);
    if (client_port)
        cfg.port = client_port;
    cfg.tick_ms = TICK_MS;
    cfg.command_timeout_ms = 3000; /* the default: longer than the lease */
    cfg.on_lost = on_lost;
    cfg.lost_arg = &m;
    cr_assert_eq(lw_client_new(&cfg, &m.client), 0);
    tally_init(&acquired);
    for (int i = 0; i < NLOCKS; i++) {
        lock_name(i, name, sizeof name);
        m.locks[i] = new_lock(m.client, name);
        cr_assert_eq(lw_acquire_async(m.locks[i], OWNER, 0, 0, count_outcome, &acquired), 0);
        if ((i + 1) % (NLOCKS / 10) == 0)
            sleep_ms(LEASE_MS / 30);
    }
    cr_assert_eq(tally_wait(&acquired, NLOCKS, 20000), NLOCKS, "acquires did not finish");
    cr_assert_eq(acquired.failed, 0, "an acquire failed: %s", lw_errname(acquired.last_err));
    tally_destroy(&acquired);
}

static void release_locks(void)
{
    for (int i = 0; i < NLOCKS; i++)
        lw_lock_free(m.locks[i]);
    cr_assert_eq(lw_client_free(m.client), 0);
}

static redisContext *connect_srv(void)
{
    struct timeval tv = {5, 0};
    redisContext *r = redisConnectUnixWithTimeout(srv.unix_path, tv);

    cr_assert(r && !r->err, "cannot connect to the fixture's server");
    redisSetTimeout(r, tv);
    return r;
}

/* Each lock's state in Redis, pipelined: our field there, the key's PTTL. */
static void redis_state(int *ours, long long *pttl)
{
    redisContext *r = connect_srv();
    char name[16], field[96];
    redisReply *reply;

    snprintf(field, sizeof field, "%s:%u", lw_client_id(m.client), OWNER);
    for (int i = 0; i < NLOCKS; i++) {
        lock_name(i, name, sizeof name);
        redisAppendCommand(r, "HEXISTS %s %s", name, field);
        redisAppendCommand(r, "PTTL %s", name);
    }
    for (int i = 0; i < 2 * NLOCKS; i++) {
        cr_assert_eq(redisGetReply(r, (void **)&reply), REDIS_OK);
        cr_assert_eq(reply->type, REDIS_REPLY_INTEGER);
        if (i % 2 == 0)
            ours[i / 2] = (int)reply->integer;
        else
            pttl[i / 2] = reply->integer;
        freeReplyObject(reply);
    }
    redisFree(r);
}

/* Every lock held (ours in Redis, expiring, renewed) or reported lost. */
static int check_held_or_lost(uint64_t confirmed_before)
{
    static int ours[NLOCKS];
    static long long pttl[NLOCKS];
    struct lw_client_stats st;
    int held = 0;

    redis_state(ours, pttl);
    lw_client_get_stats(m.client, &st);
    for (int i = 0; i < NLOCKS; i++) {
        if (atomic_load(&m.lost_at[i]))
            continue;
        held++;
        cr_assert_eq(ours[i], 1, "fm:%04d: neither held in Redis nor reported lost", i);
        cr_assert_gt(pttl[i], 0, "fm:%04d: held without an expiry (%lld)", i, pttl[i]);
    }
    cr_assert_eq(held + atomic_load(&m.lost), NLOCKS);
    cr_assert_eq(st.locks_held, (uint64_t)held, "the client counts %llu held, Redis %d",
                 (unsigned long long)st.locks_held, held);
    /* Renewed since the fault cleared: a lease has passed, so each held
     * lock was confirmed at least twice more. */
    cr_assert_geq(st.renewals_confirmed - confirmed_before, 2ull * (uint64_t)held);
    return held;
}

/*
 * No loss after its valid_until plus a tick: the library's count, and the
 * bound.  Losses are reported by valid_until as a rule.  Only an engine
 * thread held up by the host (seen on these shared machines: a thread woken
 * 50-100 ms after its timer) can make one later, by about the hold-up,
 * which the engine measures (worst_tick_late_ns).  So the slack is one
 * tick, plus the hold-up when it exceeds a tick: lateness beyond that is
 * the library's own, and fails.
 */
static void check_loss_times(uint64_t confirmable_until_ns)
{
    struct lw_client_stats st;
    uint64_t slack_ns, bound;

    lw_client_get_stats(m.client, &st);
    slack_ns = TICK_MS * MS + (st.worst_tick_late_ns > TICK_MS * MS ? st.worst_tick_late_ns : 0);
    bound = confirmable_until_ns + (LEASE_MS - DRIFT_MS) * MS + slack_ns;
    if (st.worst_tick_late_ns > TICK_MS * MS)
        cr_log_info("the engine thread was held up %.1f ms (its tick ran that late)",
                    (double)st.worst_tick_late_ns / 1e6);
    cr_assert_leq(st.worst_lost_late_ns, slack_ns, "%llu losses after valid_until, "
                  "the worst %.1f ms after; the engine thread held up %.1f ms at worst",
                  (unsigned long long)st.lost_late, (double)st.worst_lost_late_ns / 1e6,
                  (double)st.worst_tick_late_ns / 1e6);
    if (st.lost_late)
        cr_log_info("%llu losses after valid_until, the worst %.1f ms after",
                    (unsigned long long)st.lost_late, (double)st.worst_lost_late_ns / 1e6);
    cr_assert_eq(atomic_load(&m.lost_twice), 0, "a lock reported lost twice");
    cr_assert_eq(atomic_load(&m.strangers), 0, "a loss for a lock not held");
    for (int i = 0; i < NLOCKS; i++) {
        uint64_t at = atomic_load(&m.lost_at[i]);

        cr_assert(at <= bound, "fm:%04d lost %.1f ms after valid_until + 1 tick", i,
                  (double)(at - bound) / 1e6);
    }
}

/* Another client gets lost names (once their lease is over) and new ones. */
static void check_acquires_work(void)
{
    struct lw_client *other = new_client(LEASE_MS, NULL);
    char name[32];
    int tried = 0;

    for (int i = 0; i < NLOCKS && tried < 10; i++) {
        struct lw_lock *l;

        if (!atomic_load(&m.lost_at[i]))
            continue;
        lock_name(i, name, sizeof name);
        l = new_lock(other, name);
        cr_assert_eq(lw_trylock(l, 3 * LEASE_MS, 0, NULL), 0, "%s: not acquirable", name);
        cr_assert_eq(lw_unlock(l), 0);
        lw_lock_free(l);
        tried++;
    }
    for (int i = 0; i < 10; i++) {
        struct lw_lock *l;

        snprintf(name, sizeof name, "after:%d", i);
        l = new_lock(other, name);
        cr_assert_eq(lw_trylock(l, 0, 0, NULL), 0, "%s: not acquirable", name);
        cr_assert_eq(lw_unlock(l), 0);
        lw_lock_free(l);
    }
    cr_assert_eq(lw_client_free(other), 0);
}

/* ---- The faults.  Each returns once the fault has cleared, and says
 * until when Redis could still confirm a renewal (0: until it cleared). */

static void command(const char *cmd)
{
    redisReply *r = redis_server_command(&srv, cmd);

    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", cmd, r ? r->str : "no reply");
    freeReplyObject(r);
}

/* Renewal keys sent and not yet answered. */
static uint64_t renewals_on_the_wire(void)
{
    struct lw_client_stats st;

    lw_client_get_stats(m.client, &st);
    return st.renewals_sent - st.renewals_confirmed - st.renewals_failed;
}

/* Killed while a renewal batch is on the wire (caught within 2 s, or
 * killed anyway), then an empty server on the same port. */
static uint64_t restart(void)
{
    uint64_t until = now_ms() + 2000, at, wire;

    while ((wire = renewals_on_the_wire()) == 0 && now_ms() < until)
        ;
    at = lw_clock_now();
    cr_assert_eq(redis_server_signal(&srv, SIGKILL), 0);
    cr_log_info("killed with %llu renewals on the wire", (unsigned long long)wire);
    cr_assert_eq(redis_server_restart(&srv), 0);
    return at;
}

static uint64_t sigstop_past_lease(void)
{
    uint64_t at = lw_clock_now();

    cr_assert_eq(redis_server_signal(&srv, SIGSTOP), 0);
    sleep_ms(2 * LEASE_MS);
    cr_assert_eq(redis_server_signal(&srv, SIGCONT), 0);
    return at;
}

static uint64_t pause_for(unsigned ms)
{
    char cmd[64];
    uint64_t at = lw_clock_now();

    snprintf(cmd, sizeof cmd, "CLIENT PAUSE %u ALL", ms);
    command(cmd);
    sleep_ms(ms + 50);
    return at;
}

static uint64_t pause_short(void)
{
    return pause_for(LEASE_MS / 3);
}

static uint64_t pause_past_lease(void)
{
    return pause_for(2 * LEASE_MS);
}

static uint64_t debug_sleep_short(void)
{
    uint64_t at = lw_clock_now();

    command("DEBUG SLEEP 0.3");
    return at;
}

static uint64_t debug_sleep_past_lease(void)
{
    uint64_t at = lw_clock_now();

    command("DEBUG SLEEP 1.5");
    return at;
}

static uint64_t script_flush(void)
{
    for (int i = 0; i < 3; i++) {
        command("SCRIPT FLUSH");
        sleep_ms(LEASE_MS / 4);
    }
    return 0;
}

static uint64_t flushall(void)
{
    uint64_t at = lw_clock_now();

    command("FLUSHALL");
    return at;
}

static uint64_t client_kill(void)
{
    command("CLIENT KILL TYPE normal");
    sleep_ms(LEASE_MS / 2);
    command("CLIENT KILL TYPE pubsub");
    return 0;
}

static long long used_memory(void)
{
    redisReply *r = redis_server_command(&srv, "INFO memory");
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "used_memory:") : NULL;
    long long used = at ? atoll(at + strlen("used_memory:")) : -1;

    freeReplyObject(r);
    cr_assert_gt(used, 0);
    return used;
}

/* maxmemory under what the locks take, allkeys-lru, and writes that make
 * Redis evict: lock keys go. */
static uint64_t eviction(void)
{
    char cmd[96], value[1024];
    redisContext *r = connect_srv();

    command("CONFIG SET maxmemory-policy allkeys-lru");
    snprintf(cmd, sizeof cmd, "CONFIG SET maxmemory %lld", used_memory() - 100000);
    command(cmd);
    memset(value, 'x', sizeof value - 1);
    value[sizeof value - 1] = 0;
    for (int i = 0; i < 200; i++)
        freeReplyObject(redisCommand(r, "SET junk:%d %s", i, value));
    redisFree(r);
    sleep_ms(LEASE_MS / 2);
    command("CONFIG SET maxmemory 0");
    return 0;
}

/* A partition: the link goes silent, no RST, no FIN (the proxy the client
 * connects through stops forwarding), past the lease, then heals. */
static struct proxy *partition;

static uint64_t partition_past_lease(void)
{
    uint64_t at = lw_clock_now();

    cr_assert_eq(proxy_hold(partition, 1), 0);
    sleep_ms(2 * LEASE_MS);
    cr_assert_eq(proxy_hold(partition, 0), 0);
    return at;
}

/* ---- The matrix ---- */

static void run_fault(uint64_t (*fault)(void), enum expect expect)
{
    struct lw_client_stats st;
    uint64_t confirmable_until;
    int held;

    hold_locks();
    sleep_ms(LEASE_MS / 2); /* renewals under way */
    m.fault_ns = lw_clock_now();
    confirmable_until = fault();
    m.cleared_ns = lw_clock_now();
    if (!confirmable_until)
        confirmable_until = m.cleared_ns;
    lw_client_get_stats(m.client, &st);
    sleep_ms(LEASE_MS + LEASE_MS / 2);
    held = check_held_or_lost(st.renewals_confirmed);
    check_loss_times(confirmable_until);
    lw_client_get_stats(m.client, &st);
    cr_log_info("fault for %.0f ms: %d held, %d lost (not owner %llu, errors %llu, "
                "expired %llu)", (double)(m.cleared_ns - m.fault_ns) / 1e6, held,
                atomic_load(&m.lost), (unsigned long long)st.lost_not_owner,
                (unsigned long long)st.lost_errors, (unsigned long long)st.lost_expired);
    if (expect == NONE_LOST)
        cr_assert_eq(held, NLOCKS, "%d locks lost", NLOCKS - held);
    else if (expect == ALL_LOST)
        cr_assert_eq(held, 0, "%d locks still held", held);
    else
        cr_assert_gt(atomic_load(&m.lost), 0, "nothing was lost");
    check_acquires_work();
    release_locks();
}

#define FAULT_TEST(name, expect) \
    REDIS_TEST(fault_matrix, name) { run_fault(name, expect); }

FAULT_TEST(restart, ALL_LOST)
FAULT_TEST(sigstop_past_lease, ALL_LOST)
FAULT_TEST(pause_short, NONE_LOST)
FAULT_TEST(pause_past_lease, ALL_LOST)
FAULT_TEST(script_flush, NONE_LOST)
FAULT_TEST(flushall, ALL_LOST)
FAULT_TEST(eviction, SOME_LOST)
FAULT_TEST(client_kill, NONE_LOST)
FAULT_TEST(debug_sleep_short, NONE_LOST)
FAULT_TEST(debug_sleep_past_lease, ALL_LOST)

REDIS_TEST(fault_matrix, partition_past_lease)
{
    cr_assert(partition = proxy_start(srv.port), "no proxy");
    client_port = proxy_port(partition);
    run_fault(partition_past_lease, ALL_LOST);
    client_port = 0;
    proxy_stop(partition);
}
