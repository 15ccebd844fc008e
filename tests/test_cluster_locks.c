/*
 * tests/test_cluster_locks.c - the locks on a real Redis Cluster (3 masters,
 * 3 replicas, tests/fixtures/redis_cluster.h), one private cluster per test:
 * locks on every master through one seed; held locks kept through a reshard,
 * a slot migrated by hand (ASK, TRYAGAIN), a graceful failover and a killed
 * master, and the CLUSTERDOWN window on a lease too short for the dead
 * master's shard; a lock and a read hold the replica never got
 * reported lost to the failover (and those it got renewed on the new
 * master); and contention that never lets two
 * holders in.  Every wait is bounded; every node is stopped by pid.
 *
 * Built again with LW_TEST_TLS (cluster_locks_tls): every node serves TLS
 * only, its bus and replication over TLS too, and the client connects to
 * every node with mutual TLS.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "engine.h"
#include "cluster_util.h"
#include "redis_cluster.h"
#include "time_util.h"
#include "lost_util.h"
#include "log_util.h"
#include "race_util.h"
#include "risk_util.h"
#include "stall_util.h"

#define NLOCKS 300

static struct redis_cluster cl;
static int owner_of[REDIS_CLUSTER_SLOTS]; /* slot -> node, by CLUSTER SLOTS */

#ifdef LW_TEST_TLS
#include "tls_certs.h"

static struct tls_certs certs;

static void setup(void)
{
    struct fixture_tls tls;

    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    cr_assert_eq(redis_cluster_start_tls(&cl, 3, 1, &tls), 0, "the cluster did not start");
}

static void teardown(void)
{
    redis_cluster_stop(&cl);
    tls_certs_remove(&certs);
}

static void tls_client(struct lw_client_config *cfg)
{
    cfg->tls.enable = 1;
    cfg->tls.ca_file = certs.ca_file;
    cfg->tls.cert_file = certs.client_cert;
    cfg->tls.key_file = certs.client_key;
}
#else
static void setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
}

static void teardown(void)
{
    redis_cluster_stop(&cl);
}

static void tls_client(struct lw_client_config *cfg)
{
    (void)cfg;
}
#endif

/* Each test with its own cluster.  (No TestSuite(): the lite runner of the
 * TSan build has none.) */
#define CLUSTER_LOCKS_TEST(name) \
    Test(cluster_locks, name, .init = setup, .fini = teardown, .timeout = 120)

/* A field of INFO replication as a number, or -1. */
static long long repl_field(int node, const char *field)
{
    redisReply *r = redis_cluster_command(&cl, node, "INFO replication");
    const char *at;
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING && (at = strstr(r->str, field)))
        v = atoll(at + strlen(field));
    if (r)
        freeReplyObject(r);
    return v;
}

/* Wait until replica r has everything master m has written so far.  WAIT
 * on a fresh connection proves nothing (it counts only that connection's
 * own writes), and the first version of these tests, trusting it, saw a
 * whole shard's locks missing on the promoted replica: rightly reported
 * LW_LOST_FAILOVER. */
static int wait_replicated(int m, int r, int ms)
{
    long long want = repl_field(m, "master_repl_offset:");

    return want > 0 && wait_until(repl_field(r, "slave_repl_offset:") >= want, ms);
}

/* Who serves each slot, in node `ask`'s view. */
static void read_slot_map(int ask)
{
    cluster_slot_owners(&cl, ask, owner_of);
}

static int node_of(const char *name)
{
    return owner_of[keyslot(name, strlen(name))];
}

static char seed[32];
static const char *seeds[1] = {seed};

/* A client knowing the cluster by one seed (node `via`). */
static struct lw_client *new_client(int via, uint32_t lease_ms, struct lost_log *log)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    cluster_client_config(&cfg, &cl, via);
    cfg.watchdog_timeout_ms = lease_ms;
    tls_client(&cfg);
    cfg.log = log_to_stderr;
    cfg.log_level = LW_LOG_INFO;
    log_since = lw_clock_now();
    if (log) {
        memset(log, 0, sizeof *log);
        cfg.on_lost = record_lost;
        cfg.lost_arg = log;
    }
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* How many of h's locks the cluster has, each asked at its slot's master. */
static int count_present(const struct held *h)
{
    int present = 0;

    read_slot_map(redis_cluster_slot_master(&cl, 0, -1));
    for (int i = 0; i < h->n; i++) {
        redisReply *r = redis_cluster_command(&cl, node_of(h->name[i]), "EXISTS %s",
                                              h->name[i]);

        present += r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        if (r)
            freeReplyObject(r);
    }
    return present;
}

static void stats(struct lw_client *c, struct lw_client_stats *st)
{
    lw_client_get_stats(c, st);
}

/* A master other than node m. */
static int other_master(int m)
{
    for (int i = 0; i < cl.nnodes; i++)
        if (i != m && redis_cluster_is_master(&cl, i) == 1)
            return i;
    return -1;
}

CLUSTER_LOCKS_TEST(locks_on_all_masters_through_one_seed)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, 1500, &log);
    static struct held h;
    struct lw_client_stats st;
    int per_master[REDIS_CLUSTER_MAX_NODES] = {0}, masters = 0;
    uint64_t token = 0;

    acquire_all(c, &h, "all", NLOCKS);
    read_slot_map(0);
    for (int i = 0; i < h.n; i++)
        if (per_master[node_of(h.name[i])]++ == 0)
            masters++;
    cr_assert_eq(masters, 3, "the names spread over the 3 masters");
    cr_assert_eq(count_present(&h), NLOCKS);

    /* Two leases: every lock renewed several times, batched by node. */
    sleep_ms(3000);
    stats(c, &st);
    cr_assert_eq(log.count, 0);
    cr_assert_eq(count_present(&h), NLOCKS);
    cr_assert_geq(st.renewals_confirmed, 3 * NLOCKS);
    cr_log_info("renewals %llu in %llu calls: %.1f keys per call",
                (unsigned long long)st.renewals_sent, (unsigned long long)st.renew_batches,
                (double)st.renewals_sent / (double)st.renew_batches);
    cr_assert_gt(st.renewals_sent, 2 * st.renew_batches, "more than a key per call");

    /* The token key lives with the lock. */
    release_all(&h, 1);
    {
        struct lw_lock *l = NULL;

        cr_assert_eq(lw_lock_new(c, "tok", 3, &l), 0);
        cr_assert_eq(lw_lock_set_fenced(l, 1), 0);
        cr_assert_eq(lw_lock_acquire(l, &token), 0);
        cr_assert_eq(lw_unlock(l), 0);
        cr_assert_eq(lw_lock_acquire(l, NULL), 0);
        cr_assert_eq(lw_unlock(l), 0);
        read_slot_map(0);
        redisReply *r = redis_cluster_command(&cl, node_of("tok"), "GET %s",
                                              "redisson_lock_token:{tok}");
        cr_assert(r && r->type == REDIS_REPLY_STRING);
        cr_assert_eq(atoll(r->str), (long long)token + 1);
        freeReplyObject(r);
        lw_lock_free(l);
    }
    cr_assert_eq(lw_client_free(c), 0);
}

CLUSTER_LOCKS_TEST(held_locks_survive_a_reshard)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, 1500, &log);
    static struct held h;
    struct lw_client_stats st;
    int from, to;

    acquire_all(c, &h, "re", NLOCKS);
    from = redis_cluster_slot_master(&cl, 0, -1);
    to = other_master(from);
    cr_assert_eq(redis_cluster_reshard(&cl, from, to, 2000), 0);
    sleep_ms(2000); /* more than a lease after the move */
    stats(c, &st);
    cr_log_info("reshard: redirects %llu, unsettled %llu, refreshes %llu",
                (unsigned long long)st.redirects, (unsigned long long)st.unsettled,
                (unsigned long long)st.topology_refreshes);
    cr_assert_eq(log.count, 0, "lost %d", log.count);
    cr_assert_eq(count_present(&h), NLOCKS);
    release_all(&h, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The lease of the locks held across a hand-made migration.  1.5 s left
 * a renewal 1 s of slack: under two busy loops beside the suite a node
 * held off the CPU past the node timeout calls the cluster down for a
 * node timeout more (CLUSTERDOWN to renewals too), and 13 of 40 locks
 * were lost.  At 3 s, the same load lost all 40 in one run of five, with
 * no error and no "not ours" answer, every node's cluster_state ok at
 * each step, and the client itself not running: its locks went at risk
 * with 177 ms left instead of 1.5 s (its timers ran 1.3 s late), and later
 * at risk and lost in the same instant.  A lock has only its lease against
 * a holder that does not run, so 6 s, as the failover test's; the stall
 * seen is said with the result (stall_util.h). */
#define MIGRATION_LEASE_MS 6000

/* Each node's cluster_state after a migration step, to stderr beside the
 * client's log: a lock lost in a migration is read from it. */
static void say_cluster_state(struct redis_cluster *c, enum redis_cluster_step step)
{
    char line[256];
    int n = 0;

    for (int i = 0; i < c->nnodes && n < (int)sizeof line - 16; i++) {
        redisReply *r = redis_cluster_command(c, i, "CLUSTER INFO");
        const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "cluster_state:")
                                                             : NULL;

        at = at ? at + strlen("cluster_state:") : "none";
        n += snprintf(line + n, sizeof line - (size_t)n, " %d:%.*s", i,
                      (int)strcspn(at, "\r\n"), at);
        if (r)
            freeReplyObject(r);
    }
    fprintf(stderr, "[%6llu ms] migration step %d, cluster_state%s\n", log_ms(), (int)step,
            line);
}

/* Between the steps of a hand-made migration, hold on for more than a
 * renewal period (a third of the lease): renewals of the slot's locks
 * meet ASK (keys moved), TRYAGAIN or the node batch's -1 while keys are
 * on both sides.  A wait for time to pass, not for a condition. */
static int slow_steps(struct redis_cluster *c, enum redis_cluster_step step, void *arg)
{
    (void)arg;
    say_cluster_state(c, step);
    sleep_ms(MIGRATION_LEASE_MS / 3 + 100);
    return 0;
}

CLUSTER_LOCKS_TEST(held_locks_survive_a_slot_migrating_key_by_key)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, MIGRATION_LEASE_MS, &log);
    static struct held h;
    struct lw_client_stats st;
    struct stall_watch stall;
    uint64_t stalled_ms;
    int slot, from, to;

    acquire_all(c, &h, "{mig}", 40); /* one slot */
    slot = (int)keyslot("mig", 3);
    from = redis_cluster_slot_master(&cl, slot, -1);
    to = other_master(from);
    /* 80 keys (each lock's hash and its fencing token's) in batches of 20:
     * four MIGRATEs, keys on both sides across renewals. */
    cr_assert_eq(stall_watch_start(&stall), 0);
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 20, slow_steps, NULL), 0);
    sleep_ms(MIGRATION_LEASE_MS); /* more than a lease after the move */
    stalled_ms = stall_watch_stop(&stall);
    stats(c, &st);
    cr_log_info("migration: redirects %llu, unsettled %llu; this process held off the CPU "
                "for up to %llu ms",
                (unsigned long long)st.redirects, (unsigned long long)st.unsettled,
                (unsigned long long)stalled_ms);
    cr_assert_eq(log.count, 0,
                 "lost %d (not owner %d, errors %d, expired %d, failover %d); this process "
                 "held off the CPU for up to %llu ms",
                 log.count, log.by_reason[1], log.by_reason[2], log.by_reason[3],
                 log.by_reason[4], (unsigned long long)stalled_ms);
    cr_assert_eq(count_present(&h), 40);
    release_all(&h, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A manual failover pauses the master's writes until its replica has
 * caught up, and for Redis's manual-failover timeout (5 s) when it stalls
 * (the fixture then tries again): on a lease shorter than that, a stalled
 * attempt expires the shard's locks, rightly.  Seen once under load, over
 * TLS, with a 3 s lease.  So a lease longer than the pause. */
#define FAILOVER_LEASE_MS 6000

CLUSTER_LOCKS_TEST(graceful_failover_loses_nothing)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, FAILOVER_LEASE_MS, &log);
    static struct held h;
    struct lw_client_stats st;
    int slot;

    acquire_all(c, &h, "gf", NLOCKS);
    slot = (int)keyslot("gf0", 3);
    cr_assert_geq(redis_cluster_failover(&cl, slot), 0, "the replica never took over");
    cr_assert(wait_until((stats(c, &st), st.failovers >= 1), 15000), "failover not seen");
    sleep_ms(FAILOVER_LEASE_MS + 500); /* more than a lease after */
    stats(c, &st);
    cr_assert_eq(log.count, 0, "lost %d (not owner %d, errors %d, expired %d, failover %d)",
                 log.count, log.by_reason[1], log.by_reason[2], log.by_reason[3],
                 log.by_reason[4]);
    cr_assert_eq(st.lost_failover, 0);
    cr_assert_eq(count_present(&h), NLOCKS);
    release_all(&h, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The CLUSTERDOWN window: from the master's death until its replica is
 * promoted, nodes may answer CLUSTERDOWN for every slot.  Nothing that was
 * replicated is lost, on the dead master's shard or the healthy ones. */
/* A failover's signs: the log says it (a warning), and the locks of the
 * shard that failed over are at risk until the new master has answered
 * for them, then safe again; none lost. */
static struct {
    struct risk_log risks;
    _Atomic int warned;
} seen;

static void note_failover_line(int level, const char *message, void *arg)
{
    (void)arg;
    if (level == LW_LOG_WARN && strstr(message, "failed over"))
        atomic_fetch_add(&seen.warned, 1);
}

CLUSTER_LOCKS_TEST(a_failover_is_logged_and_its_locks_at_risk_until_checked)
{
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *c;
    static struct held h;
    struct lw_client_stats st;

    cluster_client_config(&cfg, &cl, 0);
    cfg.watchdog_timeout_ms = FAILOVER_LEASE_MS;
    tls_client(&cfg);
    memset(&log, 0, sizeof log);
    memset(&seen, 0, sizeof seen);
    risk_log_init(&seen.risks);
    cfg.on_lost = record_lost;
    cfg.lost_arg = &log;
    cfg.on_risk = record_risk;
    cfg.risk_arg = &seen.risks;
    cfg.log = note_failover_line;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    acquire_all(c, &h, "fl", NLOCKS);
    cr_assert_geq(redis_cluster_failover(&cl, (int)keyslot("fl0", 3)), 0);
    cr_assert(wait_until((stats(c, &st), st.failovers >= 1), 15000), "failover not seen");
    cr_assert(wait_until(atomic_load(&seen.warned) >= 1, 2000), "the failover not logged");
    cr_assert(wait_until((stats(c, &st), st.at_risk == 0 && st.went_at_risk > 0), 5000),
              "%llu at risk, %llu went", (unsigned long long)st.at_risk,
              (unsigned long long)st.went_at_risk);
    cr_log_info("failover: %d at risk, %d safe again", atomic_load(&seen.risks.risk),
                atomic_load(&seen.risks.safe));
    cr_assert_gt(atomic_load(&seen.risks.risk), NLOCKS / 10, "a shard's locks were re-checked");
    cr_assert_eq(atomic_load(&seen.risks.safe), atomic_load(&seen.risks.risk));
    cr_assert_eq(log.count, 0, "lost %d", log.count);
    release_all(&h, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

/* The node the client reads the map from sees a failover one gossip
 * message at a time, and a read may fall in between (adapters/cluster.c).
 * Here that node stops knowing the old master (CLUSTER FORGET: for a
 * minute it ignores what others say of it), so it answers the shard's
 * slots unserved and lists neither node, until the replica, promoted,
 * claims them.  The client still tells the failover (it took the new
 * master for a slot found, and told nothing: seen once under load, the
 * window being short there). */
CLUSTER_LOCKS_TEST(a_failover_is_seen_through_a_node_that_lost_sight_of_the_shard)
{
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_client_stats st;
    int slot = (int)keyslot("lf0", 3), m, r, via = -1;
    uint64_t reads;
    redisReply *rep;

    m = redis_cluster_slot_master(&cl, slot, -1);
    r = m >= 0 ? redis_cluster_replica_of(&cl, m) : -1;
    for (int i = 0; i < cl.nnodes; i++) /* a replica, so no vote is missing */
        if (i != m && i != r && redis_cluster_is_master(&cl, i) == 0)
            via = i;
    cr_assert(m >= 0 && r >= 0 && via >= 0, "master %d, replica %d, via %d", m, r, via);
    snprintf(seed, sizeof seed, "127.0.0.1:%d", cl.node[via].port);
    lw_client_config_init(&cfg);
    cfg.cluster_seeds = seeds;
    cfg.cluster_nseeds = 1;
    cfg.topology_refresh_ms = 100;
    tls_client(&cfg);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert(wait_until((stats(c, &st), st.topology_refreshes >= 1), 5000), "no map read");
    rep = redis_cluster_command(&cl, via, "CLUSTER FORGET %s", cl.node[m].id);
    cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "CLUSTER FORGET: %s", rep ? rep->str : "-");
    freeReplyObject(rep);
    cr_assert_eq(redis_cluster_slot_master(&cl, slot, via), -1);
    stats(c, &st);
    reads = st.topology_refreshes;
    cr_assert(wait_until((stats(c, &st), st.topology_refreshes >= reads + 2), 5000),
              "no map read without the shard");
    cr_assert_eq(redis_cluster_failover(&cl, slot), r);
    cr_assert(wait_until((stats(c, &st), st.failovers >= 1), 5000), "failover not seen");
    cr_assert_eq(st.failovers, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

CLUSTER_LOCKS_TEST(killed_master_keeps_replicated_locks)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, 10000, &log);
    static struct held h;
    struct lw_client_stats st;
    int m, successor, slot, down_seen = 0;
    uint64_t t0, promoted_ms;
    redisReply *rep;

    acquire_all(c, &h, "km", NLOCKS);
    slot = (int)keyslot("km0", 3);
    m = redis_cluster_slot_master(&cl, slot, -1);
    cr_assert(wait_replicated(m, redis_cluster_replica_of(&cl, m), 5000), "not replicated");
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGKILL), 0);
    t0 = now_ms();
    /* Watch a healthy master's view for the CLUSTERDOWN window. */
    while (now_ms() - t0 < 15000) {
        rep = redis_cluster_command(&cl, other_master(m), "CLUSTER INFO");
        if (rep && rep->type == REDIS_REPLY_STRING && strstr(rep->str, "cluster_state:fail"))
            down_seen++;
        if (rep)
            freeReplyObject(rep);
        if (redis_cluster_slot_master(&cl, slot, other_master(m)) != m)
            break;
        sleep_ms(20);
    }
    successor = redis_cluster_wait_slot_master(&cl, slot, m, 15000);
    promoted_ms = now_ms() - t0;
    cr_assert_geq(successor, 0, "no successor");
    cr_assert(wait_until((stats(c, &st), st.failovers >= 1), 15000), "failover not seen");
    cr_log_info("kill -9: promoted after %llu ms, CLUSTERDOWN seen in %d polls, "
                "failover seen by the client after %llu ms",
                (unsigned long long)promoted_ms, down_seen,
                (unsigned long long)(now_ms() - t0));
    sleep_ms(10000); /* a whole lease after the failover */
    stats(c, &st);
    cr_log_info("present after: %d of %d", count_present(&h), NLOCKS);
    cr_log_info("unsettled %llu, redirects %llu", (unsigned long long)st.unsettled,
                (unsigned long long)st.redirects);
    cr_assert_eq(log.count, 0, "lost %d (failover %d, expired %d, errors %d)", log.count,
                 log.by_reason[LW_LOST_FAILOVER], log.by_reason[LW_LOST_EXPIRED],
                 log.by_reason[LW_LOST_ERRORS]);
    cr_assert_eq(count_present(&h), NLOCKS);
    release_all(&h, 1);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Which of the "cd<i>" locks on_lost reported. */
static _Atomic int lost_cd[NLOCKS];

static void record_cd(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    char buf[24];
    int i;

    record_lost(name, len, owner, reason, arg);
    if (len < sizeof buf && len > 2) {
        memcpy(buf, name, len);
        buf[len] = 0;
        i = atoi(buf + 2);
        if (i >= 0 && i < NLOCKS)
            atomic_store(&lost_cd[i], 1);
    }
}

/* The same kill with a lease too short for the dead master's shard (6 s:
 * its renewals get through again only once the client has the new map)
 * but long enough for the healthy shards, whose renewals meet CLUSTERDOWN
 * until the promotion: there nothing may be lost. */
CLUSTER_LOCKS_TEST(clusterdown_window_loses_nothing_on_healthy_shards)
{
    struct lost_log log;
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    static struct held h;
    int m, slot, healthy = 0, healthy_lost = 0, dead_lost = 0;

    cluster_client_config(&cfg, &cl, 0);
    cfg.watchdog_timeout_ms = 6000;
    memset(&log, 0, sizeof log);
    memset(lost_cd, 0, sizeof lost_cd);
    cfg.on_lost = record_cd;
    cfg.lost_arg = &log;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    acquire_all(c, &h, "cd", NLOCKS);
    slot = (int)keyslot("cd0", 3);
    m = redis_cluster_slot_master(&cl, slot, -1);
    read_slot_map(m);
    sleep_ms(1000); /* renewals in every phase */
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGKILL), 0);
    cr_assert_geq(redis_cluster_wait_slot_master(&cl, slot, m, 15000), 0, "no successor");
    sleep_ms(8000); /* more than a lease after the promotion */
    for (int i = 0; i < h.n; i++) {
        int on_dead = node_of(h.name[i]) == m;

        healthy += !on_dead;
        if (atomic_load(&lost_cd[i]))
            on_dead ? dead_lost++ : healthy_lost++;
    }
    cr_log_info("CLUSTERDOWN, 6 s lease: lost %d of %d on healthy shards, %d of %d on the "
                "dead master's",
                healthy_lost, healthy, dead_lost, h.n - healthy);
    cr_assert_eq(healthy_lost, 0);
    release_all(&h, 0);
    cr_assert_eq(lw_client_free(c), 0);
}

/*
 * A lock the replica never got.  Stopping the replica (SIGSTOP) is not
 * enough: the master's writes wait in the replica's socket buffer and are
 * applied once it runs again (measured: the "unreplicated" key was there).
 * So the replica is stopped, then the master drops its replication link
 * (CLIENT KILL TYPE replica), so the acquire after it goes nowhere; then the
 * master is killed and the replica let go on (SIGCONT).  The fixture sets
 * cluster-replica-validity-factor 0, so a replica cut off for however long
 * may still be promoted, without the write.  The client must tell the
 * holder LW_LOST_FAILOVER soon after it sees the failover, for a lock and
 * for a read hold alike; the replicated ones go on being renewed.
 */
CLUSTER_LOCKS_TEST(unreplicated_lock_is_reported_lost_to_the_failover)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, 10000, &log);
    struct lw_lock *kept = NULL, *gone = NULL, *rkept = NULL, *rgone = NULL;
    struct lw_client_stats st;
    int m, r, slot;
    uint64_t t0, seen_ms, lost_ms, confirmed;
    char key[160];
    redisReply *rep;

    cr_assert_eq(lw_lock_new(c, "{u}kept", 7, &kept), 0);
    cr_assert_eq(lw_lock_new(c, "{u}gone", 7, &gone), 0);
    cr_assert_eq(lw_read_lock_new(c, "{u}rkept", 8, &rkept), 0);
    cr_assert_eq(lw_read_lock_new(c, "{u}rgone", 8, &rgone), 0);
    slot = (int)keyslot("u", 1);
    m = redis_cluster_slot_master(&cl, slot, -1);
    r = redis_cluster_replica_of(&cl, m);
    cr_assert_geq(r, 0);
    cr_assert_eq(lw_lock_acquire(rkept, NULL), 0);
    cr_assert_eq(lw_lock_acquire(kept, NULL), 0);
    cr_assert(wait_replicated(m, r, 5000), "kept not replicated");

    cr_assert_eq(redis_cluster_signal(&cl, r, SIGSTOP), 0);
    rep = redis_cluster_command(&cl, m, "CLIENT KILL TYPE replica");
    cr_assert(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
    freeReplyObject(rep);
    cr_assert_eq(lw_lock_acquire(rgone, NULL), 0);
    cr_assert_eq(lw_lock_acquire(gone, NULL), 0);
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGKILL), 0);
    cr_assert_eq(redis_cluster_signal(&cl, r, SIGCONT), 0);
    t0 = now_ms();
    cr_assert_eq(redis_cluster_wait_slot_master(&cl, slot, m, 20000), r, "no promotion");
    cr_assert(wait_until((stats(c, &st), st.failovers >= 1), 15000), "failover not seen");
    seen_ms = now_ms() - t0;
    cr_assert(wait_until(log.count >= 2, 5000), "the lost lock and read hold were not reported");
    lost_ms = now_ms() - t0;
    cr_log_info("unreplicated: failover seen after %llu ms, lost reported after %llu ms",
                (unsigned long long)seen_ms, (unsigned long long)lost_ms);
    sleep_ms(200);
    cr_assert_eq(log.count, 2);
    cr_assert_eq(log.by_reason[LW_LOST_FAILOVER], 2);
    stats(c, &st);
    cr_assert_eq(st.lost_failover, 2);
    cr_assert_eq(lw_is_held(kept), 1, "the replicated lock is kept");
    cr_assert_eq(lw_is_held(rkept), 1, "the replicated read hold is kept");
    /* The kept read hold, on the new master, is renewed there. */
    snprintf(key, sizeof key, "{u}rkept:%s:%llu:rwlock_timeout:1", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    rep = redis_cluster_command(&cl, r, "PTTL %s", key);
    cr_assert(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer > 0,
              "the read hold's key is on the new master");
    freeReplyObject(rep);
    confirmed = st.renewals_confirmed;
    cr_assert(wait_until((stats(c, &st), st.renewals_confirmed >= confirmed + 4), 10000),
              "the kept ones not renewed on the new master");
    cr_assert_eq(log.count, 2);
    cr_assert_eq(lw_unlock(kept), 0);
    cr_assert_eq(lw_unlock(rkept), 0);
    lw_lock_free(kept);
    lw_lock_free(gone);
    lw_lock_free(rkept);
    lw_lock_free(rgone);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Contention: threads of two clients take turns on a few locks while the
 * cluster fails over gracefully, migrates the locks' slot and has its
 * clients' connections killed; never two holders at once. */
CLUSTER_LOCKS_TEST(contention_never_lets_two_holders_in)
{
    pthread_t t[RACE_THREADS];
    struct lost_log log;
    int slot = (int)keyslot("race", 4), r, to;
    redisReply *rep;

    race_start(t, new_client(0, 3000, &log), new_client(1, 3000, NULL), "{race}%d");
    sleep_ms(500);

    r = redis_cluster_failover(&cl, slot);
    cr_assert_geq(r, 0, "the replica never took over");
    sleep_ms(500);
    /* From the slot's master as the cluster has it now: under load a
     * master held off the CPU past the node timeout is failed over by its
     * replica on its own: r had stopped serving the slot by the time of
     * the migration (MIGRATE from r: "MOVED"). */
    cr_assert_eq(redis_cluster_wait_ok(&cl, 15000), 0);
    r = redis_cluster_slot_master(&cl, slot, -1);
    cr_assert_geq(r, 0);
    to = other_master(r);
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, r, to, 1, slow_steps, NULL), 0);
    sleep_ms(500);
    for (int i = 0; i < cl.nnodes; i++) {
        rep = redis_cluster_command(&cl, i, "CLIENT KILL TYPE normal");
        if (rep)
            freeReplyObject(rep);
    }
    sleep_ms(1000);
    race_stop(t, "contention");
}

/* Read and write holds of read-write locks on every master, on the
 * watchdog: renewed in node batches of their own kind (the read holds'
 * timeout keys built by the node script), none lost, every hash and
 * timeout key alive after several leases. */
#define NRW 60
CLUSTER_LOCKS_TEST(read_and_write_holds_renewed_on_all_masters)
{
    struct lost_log log;
    struct lw_client *c = new_client(0, 1500, &log);
    struct lw_lock *r[NRW], *w[NRW];
    char name[64], key[200];
    struct lw_client_stats st;

    for (int i = 0; i < NRW; i++) {
        snprintf(name, sizeof name, "rw-read:%d", i);
        cr_assert_eq(lw_read_lock_new(c, name, strlen(name), &r[i]), 0);
        cr_assert_eq(lw_lock_acquire(r[i], NULL), 0);
        snprintf(name, sizeof name, "rw-write:%d", i);
        cr_assert_eq(lw_write_lock_new(c, name, strlen(name), &w[i]), 0);
        cr_assert_eq(lw_lock_acquire(w[i], NULL), 0);
    }
    sleep_ms(4500); /* three leases */
    stats(c, &st);
    cr_assert_eq(log.count, 0, "lost %d", log.count);
    cr_assert_geq(st.renewals_confirmed, 2 * 3 * NRW);
    read_slot_map(redis_cluster_slot_master(&cl, 0, -1));
    for (int i = 0; i < NRW; i++) {
        redisReply *rep;

        snprintf(name, sizeof name, "rw-read:%d", i);
        snprintf(key, sizeof key, "{%s}:%s:%llu:rwlock_timeout:1", name, lw_client_id(c),
                 (unsigned long long)lw_owner_self());
        rep = redis_cluster_command(&cl, node_of(name), "PTTL %s", key);
        cr_assert(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer > 0,
                  "%s's timeout key renewed", name);
        freeReplyObject(rep);
        snprintf(name, sizeof name, "rw-write:%d", i);
        rep = redis_cluster_command(&cl, node_of(name), "PTTL %s", name);
        cr_assert(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer > 0);
        freeReplyObject(rep);
        cr_assert_eq(lw_unlock(r[i]), 0);
        cr_assert_eq(lw_unlock(w[i]), 0);
        lw_lock_free(r[i]);
        lw_lock_free(w[i]);
    }
    cr_assert_eq(lw_client_free(c), 0);
}
