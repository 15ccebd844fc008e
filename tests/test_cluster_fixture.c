/*
 * tests/test_cluster_fixture.c - the cluster fixture itself
 * (tests/fixtures/redis_cluster.h): a 3+3 cluster starts with every slot
 * served and a replica per master; a master killed with SIGKILL is replaced
 * by its replica within a bounded time, and so is one SIGSTOPped; a slot
 * migrates by hand with its keys, and redis-cli reshards.
 * Every wait is bounded; every node is stopped by pid.
 */
#include <signal.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "redis_cluster.h"

static struct redis_cluster cl;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
    double t0 = now_s();

    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
    cr_log_info("cluster start: %.2f s", now_s() - t0);
}

static void teardown(void)
{
    redis_cluster_stop(&cl);
}

/* Each of the 3 masters serves a share of all 16384 slots and has one
 * replica; the nodes agree (redis_cluster_start waited for that). */
static void check_served(int masters[3])
{
    static int count[REDIS_CLUSTER_MAX_NODES];
    int n = 0;

    memset(count, 0, sizeof count);
    /* Every 64th slot: CLUSTER SLOTS 256 times sees every range of a fresh
     * cluster (each is thousands of slots wide). */
    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s += 64) {
        int m = redis_cluster_slot_master(&cl, s, -1);

        cr_assert_geq(m, 0, "slot %d unserved", s);
        if (count[m]++ == 0) {
            cr_assert_lt(n, 3, "more than 3 masters");
            masters[n++] = m;
        }
    }
    cr_assert_eq(n, 3);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(redis_cluster_is_master(&cl, masters[k]), 1);
        cr_assert_geq(redis_cluster_replica_of(&cl, masters[k]), 0, "master %d has no replica",
                      masters[k]);
    }
}

Test(cluster_fixture, start_failover_stop, .init = setup, .fini = teardown, .timeout = 120)
{
    int masters[3], m, slot, rep, succ;
    redisReply *r;
    double t0;

    cr_assert_eq(cl.nnodes, 6);
    check_served(masters);
    m = masters[0];
    slot = redis_cluster_first_slot(&cl, m);
    cr_assert_geq(slot, 0);
    rep = redis_cluster_replica_of(&cl, m);
    cr_assert_geq(rep, 0);

    t0 = now_s();
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGKILL), 0);
    succ = redis_cluster_wait_slot_master(&cl, slot, m, 20000);
    cr_log_info("failover after SIGKILL: %.2f s", now_s() - t0);
    cr_assert_eq(succ, rep, "slot %d: served by %d, not by the replica %d", slot, succ, rep);
    cr_assert_eq(redis_cluster_wait_ok(&cl, 20000), 0);

    /* The old master comes back as a replica of its successor. */
    cr_assert_eq(redis_cluster_restart_node(&cl, m), 0);
    cr_assert_eq(redis_cluster_wait_ok(&cl, 20000), 0);
    for (int i = 0; i < 100 && redis_cluster_is_master(&cl, m) != 0; i++)
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    cr_assert_eq(redis_cluster_is_master(&cl, m), 0);

    /* Commands reach a node on a fresh connection. */
    r = redis_cluster_command(&cl, succ, "CLUSTER COUNTKEYSINSLOT %d", slot);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* A SIGSTOPped master counts as down: its replica takes over while it is
 * stopped, and after SIGCONT it rejoins as a replica. */
Test(cluster_fixture, stopped_master, .init = setup, .fini = teardown, .timeout = 120)
{
    int masters[3], m, slot, rep;
    double t0;

    check_served(masters);
    m = masters[1];
    slot = redis_cluster_first_slot(&cl, m);
    rep = redis_cluster_replica_of(&cl, m);
    cr_assert_geq(rep, 0);
    t0 = now_s();
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGSTOP), 0);
    cr_assert_null(redis_cluster_command(&cl, m, "PING"), "a stopped node answers nothing");
    cr_assert_eq(redis_cluster_wait_slot_master(&cl, slot, m, 20000), rep);
    cr_log_info("failover after SIGSTOP: %.2f s", now_s() - t0);
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGCONT), 0);
    cr_assert_eq(redis_cluster_wait_ok(&cl, 20000), 0);
    for (int i = 0; i < 100 && redis_cluster_is_master(&cl, m) != 0; i++)
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    cr_assert_eq(redis_cluster_is_master(&cl, m), 0, "the old master is now a replica");
}

struct steps {
    int seen[4];
};

static int count_step(struct redis_cluster *c, enum redis_cluster_step step, void *arg)
{
    (void)c;
    ((struct steps *)arg)->seen[step]++;
    return 0;
}

Test(cluster_fixture, migrate_and_reshard, .init = setup, .fini = teardown, .timeout = 120)
{
    int masters[3], from, to, slot, got;
    struct steps st = {{0}};
    redisReply *r;
    char key[32];

    check_served(masters);
    from = masters[0];
    to = masters[1];
    /* "{a}..." hashes to slot 15495: find that slot's master and write 25
     * keys there, then move the slot to another master 10 keys at a time. */
    r = redis_cluster_command(&cl, from, "CLUSTER KEYSLOT {a}");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    slot = (int)r->integer;
    freeReplyObject(r);
    from = redis_cluster_slot_master(&cl, slot, -1);
    to = masters[0] == from ? masters[1] : masters[0];
    for (int k = 0; k < 25; k++) {
        snprintf(key, sizeof key, "{a}%d", k);
        r = redis_cluster_command(&cl, from, "SET %s v", key);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET %s", key);
        freeReplyObject(r);
    }
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 10, count_step, &st), 0);
    cr_assert_eq(st.seen[REDIS_CLUSTER_MARKED], 1);
    cr_assert_eq(st.seen[REDIS_CLUSTER_KEYS_SOME], 3);
    cr_assert_eq(st.seen[REDIS_CLUSTER_KEYS_DONE], 1);
    cr_assert_eq(st.seen[REDIS_CLUSTER_ASSIGNED], 1);
    got = redis_cluster_wait_slot_master(&cl, slot, from, 10000);
    cr_assert_eq(got, to);
    r = redis_cluster_command(&cl, to, "CLUSTER COUNTKEYSINSLOT %d", slot);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 25);
    freeReplyObject(r);

    /* And 10 slots with redis-cli. */
    cr_assert_eq(redis_cluster_reshard(&cl, masters[2], to, 10), 0);
}
