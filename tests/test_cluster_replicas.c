/*
 * tests/test_cluster_replicas.c - acquires acknowledged by replicas in a
 * Redis Cluster (3 masters, a replica each, tests/fixtures/redis_cluster.h):
 * the option holds per master, each master's acquires WAITing on that
 * master's side connection.  With one master's replica stopped, only that
 * master's acquires fail, and leave no key.  An acquire sent on by MOVED
 * is acknowledged where it ran.  A first acquire that ran, lost its reply
 * with its connection and was sent again is still a first acquire: its
 * surplus hold is given back and it waits for its replica.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "engine.h"
#include "redis_cluster.h"

#define PER_MASTER 4
#define WAIT_MS 600u

static struct redis_cluster cl;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static uint64_t now_ms(void)
{
    return lw_clock_now() / 1000000u;
}

/* One connection to node i, 6 s timeouts; NULL when it cannot. */
static redisContext *connect_node(int i)
{
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", cl.node[i].port,
                                               (struct timeval){2, 0});

    if (rc && !rc->err) {
        redisSetTimeout(rc, (struct timeval){6, 0});
        return rc;
    }
    if (rc)
        redisFree(rc);
    return NULL;
}

static long long int_reply(redisReply *r)
{
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1000;

    if (r)
        freeReplyObject(r);
    return v;
}

/* A write of ours to master m, then WAIT on the same connection: its
 * replica is in step, and has acknowledged at least once (a fresh replica
 * counts for no WAIT until then). */
static int replica_in_step(int m, const char *key)
{
    redisContext *rc = connect_node(m);
    long long n;

    if (!rc)
        return 0;
    freeReplyObject(redisCommand(rc, "SET %s 1", key));
    n = int_reply(redisCommand(rc, "WAIT 1 5000"));
    freeReplyObject(redisCommand(rc, "DEL %s", key));
    redisFree(rc);
    return n == 1;
}

/* Whether node i holds key: KEYS, which names no key and so is answered
 * by any node, a replica of a master whose new slot it has not heard of
 * yet too (EXISTS would be MOVED).  The names have no glob characters. */
static long long exists_on(int i, const char *key)
{
    redisContext *rc = connect_node(i);
    redisReply *r;
    long long v = -1000;

    if (!rc)
        return v;
    if ((r = redisCommand(rc, "KEYS %s", key))) {
        if (r->type == REDIS_REPLY_ARRAY)
            v = (long long)r->elements;
        freeReplyObject(r);
    }
    redisFree(rc);
    return v;
}

struct outcome {
    _Atomic int done;
    _Atomic int err;
};

static void on_done(int err, int64_t value, void *arg)
{
    struct outcome *o = arg;

    (void)value;
    atomic_store(&o->err, err);
    atomic_store(&o->done, 1);
}

/* A client of the cluster whose first acquires one replica acknowledges
 * (WAIT_MS at most). */
static struct lw_client *new_client(void)
{
    char seeds[64];
    const char *seed[1] = {seeds};
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    snprintf(seeds, sizeof seeds, "127.0.0.1:%d", cl.node[0].port);
    lw_client_config_init(&cfg);
    cfg.cluster_seeds = seed;
    cfg.cluster_nseeds = 1;
    cfg.tick_ms = 10;
    cfg.watchdog_timeout_ms = 5000;
    cfg.command_timeout_ms = 5000;
    cfg.acquire_replicas = 1;
    cfg.acquire_replicas_timeout_ms = WAIT_MS;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* PER_MASTER lock names for each master, by the slot map. */
static void names_by_master(char names[3][PER_MASTER][32])
{
    int have[3] = {0};

    for (int i = 0, left = 3 * PER_MASTER; left && i < 100000; i++) {
        char name[32];
        int m;

        snprintf(name, sizeof name, "crep-%d", i);
        m = redis_cluster_slot_master(&cl, (int)keyslot(name, strlen(name)), -1);
        cr_assert(m >= 0 && m < 3, "slot without a master");
        if (have[m] < PER_MASTER) {
            strcpy(names[m][have[m]++], name);
            left--;
        }
    }
}

Test(cluster_replicas, per_master, .timeout = 120)
{
    char names[3][PER_MASTER][32];
    struct lw_client *c = NULL;
    struct lw_lock *l[3][PER_MASTER];
    struct outcome o[3][PER_MASTER];
    struct lw_client_stats st;
    int cut, rep;
    uint64_t t0, took;

    memset(o, 0, sizeof o);
    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
    names_by_master(names);
    for (int m = 0; m < 3; m++)
        cr_assert(replica_in_step(m, names[m][0]), "master %d's replica is not in step", m);
    c = new_client();
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++)
            cr_assert_eq(lw_lock_new(c, names[m][i], strlen(names[m][i]), &l[m][i]), 0);

    /* Every master's replica up: every acquire is acknowledged, and on
     * its master's replica when it returns. */
    for (int m = 0; m < 3; m++) {
        rep = redis_cluster_replica_of(&cl, m);
        cr_assert_geq(rep, 0);
        for (int i = 0; i < PER_MASTER; i++) {
            int rc = lw_acquire(l[m][i], 1, 0, 0, NULL);

            cr_assert_eq(rc, 0, "%s on master %d: %s", names[m][i], m, lw_strerror(rc));
            cr_assert_eq(exists_on(rep, names[m][i]), 1, "%s is not on the replica",
                         names[m][i]);
        }
    }
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++)
            cr_assert_eq(lw_unlock_owner(l[m][i], 1), 0);

    /* Master 1's replica stopped: only master 1's acquires fail. */
    cut = 1;
    rep = redis_cluster_replica_of(&cl, cut);
    cr_assert_eq(redis_cluster_signal(&cl, rep, SIGSTOP), 0);
    t0 = now_ms();
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++)
            cr_assert_eq(lw_acquire_async(l[m][i], 2, 0, 0, on_done, &o[m][i]), 0);
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++) {
            uint64_t until = now_ms() + 10000;

            while (!atomic_load(&o[m][i].done) && now_ms() < until)
                sleep_ms(5);
            cr_assert(atomic_load(&o[m][i].done), "%s never ended", names[m][i]);
            cr_assert_eq(atomic_load(&o[m][i].err), m == cut ? LW_EREPLICAS : 0,
                         "%s on master %d: %s", names[m][i], m,
                         lw_strerror(atomic_load(&o[m][i].err)));
        }
    took = now_ms() - t0;
    cr_log_info("master %d's acquires refused, the others acknowledged, in %llu ms", cut,
                (unsigned long long)took);
    cr_assert_lt(took, 3 * WAIT_MS + 1000);
    for (int i = 0; i < PER_MASTER; i++)
        cr_assert_eq(exists_on(cut, names[cut][i]), 0, "%s was not given back", names[cut][i]);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.replicas_refused, PER_MASTER);
    cr_assert_eq(redis_cluster_signal(&cl, rep, SIGCONT), 0);

    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++)
            if (m != cut)
                cr_assert_eq(lw_unlock_owner(l[m][i], 2), 0);

    /* A slot moved from master 0 to master 2 behind the client's back: the
     * acquire is sent on by MOVED, runs on master 2, and its WAIT follows
     * it there.  (Not ASK: an importing node answers TRYAGAIN to a script
     * whose keys do not all exist yet, and the acquire's never all do.) */
    {
        unsigned slot = keyslot(names[0][0], strlen(names[0][0]));
        struct lw_client_stats before;
        int rc, rep2 = redis_cluster_replica_of(&cl, 2);

        lw_client_get_stats(c, &before);
        cr_assert_eq(redis_cluster_migrate_slot(&cl, (int)slot, 0, 2, 10, NULL, NULL), 0);
        rc = lw_acquire(l[0][0], 3, 0, 0, NULL);
        cr_assert_eq(rc, 0, "after MOVED: %s", lw_strerror(rc));
        lw_client_get_stats(c, &st);
        cr_log_info("redirects followed: %llu",
                    (unsigned long long)(st.redirects - before.redirects));
        cr_assert_eq(st.replicas_refused, PER_MASTER);
        cr_assert_eq(exists_on(rep2, names[0][0]), 1, "not on master 2's replica");
        cr_assert_eq(lw_unlock_owner(l[0][0], 3), 0);
    }
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < PER_MASTER; i++)
            lw_lock_free(l[m][i]);
    cr_assert_eq(lw_client_free(c), 0);
    redis_cluster_stop(&cl);
}

/* Write a command on rc without reading its reply. */
static void send_only(redisContext *rc, const char *cmd)
{
    int done = 0;

    cr_assert_eq(redisAppendCommand(rc, cmd), REDIS_OK);
    for (int i = 0; i < 100 && !done; i++)
        cr_assert_eq(redisBufferWrite(rc, &done), REDIS_OK);
    cr_assert(done);
}

/* Node i is busy (running a DEBUG SLEEP): a PING on a new connection gets
 * no answer within 100 ms. */
static int asleep(int i)
{
    redisContext *rc = connect_node(i);
    redisReply *r;

    if (!rc)
        return 0;
    redisSetTimeout(rc, (struct timeval){0, 100000});
    r = redisCommand(rc, "PING");
    if (r)
        freeReplyObject(r);
    redisFree(rc);
    return !r;
}

/* The id of the one client of node i whose last command was cmd, or -1. */
static long long client_id_by_cmd(redisContext *rc, const char *cmd)
{
    redisReply *r = redisCommand(rc, "CLIENT LIST");
    char want[64];
    long long id = -1;

    snprintf(want, sizeof want, " cmd=%s ", cmd);
    for (char *line = r && r->type == REDIS_REPLY_STRING ? r->str : NULL, *next; line;
         line = next) {
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        if (strstr(line, want) && !strncmp(line, "id=", 3))
            id = atoll(line + 3);
    }
    if (r)
        freeReplyObject(r);
    return id;
}

/*
 * The acquire runs on its master, and its reply is lost with the side
 * connection: the master sleeps (DEBUG SLEEP) while the acquire and then
 * a CLIENT KILL of that connection arrive, so on waking it runs the
 * acquire and drops the connection before the reply goes out.  The
 * cluster code sends the acquire again (ECONNLOST), and it runs again:
 * two holds.  It is a first acquire all the same: the surplus hold is
 * given back, it waits for its replica, and one unlock frees the lock.
 */
Test(cluster_replicas, resent_first_acquire_is_no_reentry, .timeout = 120)
{
    char names[3][PER_MASTER][32];
    struct lw_client_stats before, st;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    struct outcome o = {0};
    redisContext *sleeper, *killer;
    redisReply *r;
    const int m = 0;
    long long side;
    char kill[64];
    int rep;

    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
    names_by_master(names);
    cr_assert(replica_in_step(m, names[m][1]), "master %d's replica is not in step", m);
    rep = redis_cluster_replica_of(&cl, m);
    c = new_client();
    cr_assert_eq(lw_lock_new(c, names[m][0], strlen(names[m][0]), &l), 0);
    /* The side connection to master m, its last command a WAIT. */
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_unlock(l), 0);

    killer = connect_node(m);
    sleeper = connect_node(m);
    cr_assert(killer && sleeper);
    side = client_id_by_cmd(killer, "wait");
    cr_assert_gt(side, 0, "no side connection found");
    lw_client_get_stats(c, &before);
    send_only(sleeper, "DEBUG SLEEP 0.6");
    {
        int slept = 0;

        for (uint64_t until = now_ms() + 2000; !(slept = asleep(m)) && now_ms() < until;)
            sleep_ms(5);
        cr_assert(slept, "master %d never seen in its DEBUG SLEEP", m);
    }
    cr_assert_eq(lw_acquire_async(l, lw_owner_self(), 0, 0, on_done, &o), 0);
    sleep_ms(150); /* written: it waits in the sleeping master's socket */
    snprintf(kill, sizeof kill, "CLIENT KILL ID %lld", side);
    send_only(killer, kill);
    cr_assert_eq(redisGetReply(killer, (void **)&r), REDIS_OK);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "the kill missed");
    freeReplyObject(r);
    cr_assert_eq(redisGetReply(sleeper, (void **)&r), REDIS_OK);
    freeReplyObject(r);
    redisFree(killer);
    redisFree(sleeper);

    for (uint64_t until = now_ms() + 10000; !atomic_load(&o.done) && now_ms() < until;)
        sleep_ms(5);
    cr_assert(atomic_load(&o.done), "the acquire never ended");
    cr_assert_eq(atomic_load(&o.err), 0, "%s", lw_strerror(atomic_load(&o.err)));
    lw_client_get_stats(c, &st);
    cr_assert_gt(st.unsettled, before.unsettled, "the acquire was not sent again");
    cr_assert_eq(exists_on(rep, names[m][0]), 1, "the replica does not have it");
    cr_assert_eq(lw_hold_count(l), 1, "the resend's hold was kept");
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(exists_on(m, names[m][0]), 0, "one unlock did not free it");
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
    redis_cluster_stop(&cl);
}
