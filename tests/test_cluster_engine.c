/*
 * tests/test_cluster_engine.c - the engine as a Redis Cluster client, on a
 * private 3+3 cluster (tests/fixtures/redis_cluster.h): slots as the server
 * counts them, every master reached through one seed, MOVED after a reshard,
 * ASK and TRYAGAIN during a slot migration driven by hand, a dead shard
 * failing only its own slots with LW_EUNSETTLED, a graceful failover
 * reported as one, and a killed master holding up only its own node's
 * requests. Every wait is bounded; every server is stopped by pid.
 */
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "engine.h"
#include "redis_cluster.h"
#include "time_util.h"

static struct redis_cluster cl;

static void setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
}

static void teardown(void)
{
    redis_cluster_stop(&cl);
}

#define CLUSTER_TEST(name) Test(cluster_engine, name, .init = setup, .fini = teardown, \
                                .timeout = 150)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- the engine ---------------------------------------------------------- */

static char seed[32];
static const char *seeds[1] = {seed};

/* Failover and moved slots seen by on_topology, ORed over its calls. */
static struct {
    uint8_t failover[LW_CLUSTER_SLOTS / 8];
    uint8_t moved[LW_CLUSTER_SLOTS / 8];
    unsigned failovers;
    _Atomic int calls;
} topo;

static pthread_mutex_t topo_mu = PTHREAD_MUTEX_INITIALIZER; /* the engine thread writes */

static void on_topology(const struct topology_change *ch, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&topo_mu);
    for (unsigned i = 0; i < LW_CLUSTER_SLOTS / 8; i++) {
        topo.failover[i] |= ch->failover[i];
        topo.moved[i] |= ch->moved[i];
    }
    topo.failovers += ch->failovers;
    pthread_mutex_unlock(&topo_mu);
    topo.calls++;
}

/* Whether the failover slots seen so far are exactly want. */
static int failover_slots_are(const uint8_t *want)
{
    int same;

    pthread_mutex_lock(&topo_mu);
    same = !memcmp(topo.failover, want, sizeof topo.failover);
    pthread_mutex_unlock(&topo_mu);
    return same;
}

/* An engine that knows the cluster through node 0 alone. */
static struct engine *node0_engine(uint32_t timeout_ms, uint32_t refresh_ms)
{
    struct engine_config cfg;
    struct engine *e;

    snprintf(seed, sizeof seed, "127.0.0.1:%d", cl.node[0].port);
    engine_config_init(&cfg);
    cfg.seeds = seeds;
    cfg.nseeds = 1;
    cfg.node.command_timeout_ms = timeout_ms;
    cfg.topology_refresh_ms = refresh_ms;
    cfg.wheel.tick_ns = 10 * 1000000ull;
    cfg.on_topology = on_topology;
    memset(&topo, 0, sizeof topo);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    return e;
}

/* What a call got: the error, or the reply's gist. */
struct got {
    int err;
    int type;
    long long integer;
    char str[128];
    size_t elements;
    char el[4][32];
};

static void copy_reply(struct request *req, const redisReply *r, int err, void *arg)
{
    struct got *g = arg;

    (void)req;
    memset(g, 0, sizeof *g);
    g->err = err;
    if (!r)
        return;
    g->type = r->type;
    g->integer = r->integer;
    if (r->str)
        snprintf(g->str, sizeof g->str, "%.*s", (int)r->len, r->str);
    g->elements = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    for (size_t i = 0; i < g->elements && i < 4; i++)
        if (r->element[i]->str)
            snprintf(g->el[i], sizeof g->el[i], "%s", r->element[i]->str);
}

/* A command routed as asked, waited for.  Returns the call's error. */
static int call(struct engine *e, struct got *g, int route, unsigned to, const char *a0,
                const char *a1, const char *a2, const char *a3)
{
    const char *argv[] = {a0, a1, a2, a3};
    int argc = a3 ? 4 : a2 ? 3 : a1 ? 2 : 1, rc;
    struct request req;

    request_init(&req);
    cr_assert_eq(request_command(&req, argc, argv, NULL), 0);
    if (route == LW_ROUTE_SLOT)
        request_route_slot(&req, to);
    else if (route == LW_ROUTE_NODE)
        request_route_node(&req, to);
    rc = engine_call(e, &req, copy_reply, g);
    request_clear(&req);
    return rc;
}

/* By the key's slot. */
static int call_key(struct engine *e, struct got *g, const char *cmd, const char *key,
                    const char *arg)
{
    return call(e, g, LW_ROUTE_SLOT, keyslot(key, strlen(key)), cmd, key, arg, NULL);
}

/* Questions for the engine thread, asked through a task. */
struct ask {
    struct engine *e;
    unsigned slot;
    int node;
    unsigned node_count;
    int sharded;
    struct engine_stats ns;    /* the slot's node's stats */
    int ns_rc;
    int bad_rc;                /* engine_node_stats of an unknown node */
};

static void on_ask(struct request *req, const redisReply *r, int err, void *arg)
{
    struct ask *a = arg;
    struct engine *e = a->e;

    (void)req;
    (void)r;
    (void)err;
    a->node = engine_slot_node(e, a->slot);
    a->node_count = engine_node_count(e);
    a->sharded = engine_sharded_pubsub(e);
    a->ns_rc = a->node >= 0 ? engine_node_stats(e, (unsigned)a->node, &a->ns) : -1;
    a->bad_rc = engine_node_stats(e, 100000, &(struct engine_stats){0});
}

static struct ask ask(struct engine *e, unsigned slot)
{
    struct ask a = {.e = e, .slot = slot};
    struct request req;

    request_init(&req);
    request_task(&req);
    cr_assert_eq(engine_call(e, &req, on_ask, &a), 0);
    return a;
}

/* The fixture's index of engine node n (by port). */
static int fixture_node(struct engine *e, int n)
{
    const char *host;
    int port;

    (void)host;
    cr_assert_eq(engine_node_addr(e, (unsigned)n, &host, &port), 0);
    return redis_cluster_node_by_port(&cl, port);
}

/* The server's CLUSTER KEYSLOT of key. */
static int server_keyslot(const char *key, size_t len)
{
    redisReply *r = redis_cluster_command(&cl, 0, "CLUSTER KEYSLOT %b", key, len);
    int slot;

    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    slot = (int)r->integer;
    freeReplyObject(r);
    return slot;
}

/* A key whose slot master `m` (a fixture index) serves, "<prefix>N". */
static void key_on(int m, const char *prefix, char *key, size_t size)
{
    for (int i = 0; i < 100000; i++) {
        snprintf(key, size, "%s%d", prefix, i);
        if (redis_cluster_slot_master(&cl, (int)keyslot(key, strlen(key)), -1) == m)
            return;
    }
    cr_assert(0, "no key for node %d", m);
}

/* --- tests --------------------------------------------------------------- */

CLUSTER_TEST(keyslot_parity)
{
    static const struct {
        const char *key;
        size_t len;
    } keys[] = {
        {"foo", 3}, {"lock:orders", 11}, {"user:{123}:a", 12}, {"{user}{b}", 9},
        {"a{}b{c}", 7}, {"{}", 2}, {"{}x", 3}, {"{", 1}, {"}{x}", 4}, {"x{y", 3},
        {"{{a}}", 5}, {"a{b}{c}", 7}, {"", 0}, {"\0\xff{\0}z", 6}, {"\xfe\x80\x00", 3},
        {"{\xff\xfe}1", 5}, {"redisson_lock__channel:{x}", 26},
    };
    char bin[24];
    unsigned rng = 12345;

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_eq(keyslot(keys[i].key, keys[i].len),
                     (unsigned)server_keyslot(keys[i].key, keys[i].len), "key %zu", i);
    /* Random binary names, some with braces. */
    for (int n = 0; n < 200; n++) {
        size_t len = 1 + n % (sizeof bin - 1);

        for (size_t i = 0; i < len; i++) {
            rng = rng * 1103515245u + 12345u;
            bin[i] = (char)(rng >> 16);
            if ((rng >> 8) % 7 == 0)
                bin[i] = (rng >> 4) % 2 ? '{' : '}';
        }
        cr_assert_eq(keyslot(bin, len), (unsigned)server_keyslot(bin, len), "random %d", n);
    }
}

/* Through one seed: a key on every master, by slot; and each master by
 * node index. */
CLUSTER_TEST(all_masters_through_one_seed)
{
    struct engine *e = node0_engine(5000, 0);
    struct engine_stats st;
    struct got g;
    char key[32];
    int seen[REDIS_CLUSTER_MAX_NODES] = {0};

    cr_assert(engine_is_cluster(e));
    for (int m = 0; m < 3; m++) {
        unsigned slot;
        struct ask a;

        key_on(m, "k", key, sizeof key);
        slot = keyslot(key, strlen(key));
        cr_assert_eq(call_key(e, &g, "SET", key, "v"), 0);
        cr_assert_eq(g.type, REDIS_REPLY_STATUS, "SET %s: %s", key, g.str);
        a = ask(e, slot);
        cr_assert_geq(a.node, 0);
        cr_assert_eq(fixture_node(e, a.node), m, "slot %u: node %d", slot, a.node);
        seen[a.node]++;
        /* The same master by node: it has the key. */
        cr_assert_eq(call(e, &g, LW_ROUTE_NODE, (unsigned)a.node, "EXISTS", key, NULL, NULL), 0);
        cr_assert_eq(g.integer, 1);
        cr_assert(a.sharded, "a Redis 7 cluster answers CLUSTER SHARDS");
        cr_assert_eq(a.ns_rc, 0);
        cr_assert_geq(a.ns.sent, 2, "node %d's own stats", a.node);
        cr_assert_geq(a.ns.replies, 2);
        cr_assert_eq(a.bad_rc, LW_ERANGE);
        cr_assert_geq(a.node_count, 3);
    }
    /* Unrouted: some master answers. */
    cr_assert_eq(call(e, &g, LW_ROUTE_ANY, 0, "PING", NULL, NULL, NULL), 0);
    cr_assert_str_eq(g.str, "PONG");
    /* A node that is not a master (a replica is known, linkless) or not
     * known fails at once. */
    cr_assert_eq(call(e, &g, LW_ROUTE_NODE, 1000, "PING", NULL, NULL, NULL), LW_EUNSETTLED);
    engine_get_stats(e, &st);
    cr_assert_geq(st.topology_refreshes, 1);
    cr_assert_eq(st.redirects, 0);
    engine_free(e);
}

CLUSTER_TEST(moved_after_reshard)
{
    struct engine *e = node0_engine(5000, 3600000); /* no periodic refresh */
    struct engine_stats st;
    struct got g;
    char key[32];
    int from = 0, to = 1, slot, followed = 0;
    static char of2[16384];
    struct ask a;

    key_on(from, "m", key, sizeof key);
    slot = (int)keyslot(key, strlen(key));
    cr_assert_eq(call_key(e, &g, "SET", key, "before"), 0);
    cr_assert_str_eq(g.str, "OK");
    cr_assert_eq(fixture_node(e, ask(e, (unsigned)slot).node), from);

    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 10, NULL, NULL), 0);
    cr_assert_eq(redis_cluster_wait_slot_master(&cl, slot, from, 10000), to);
    cr_assert_eq(call_key(e, &g, "GET", key, NULL), 0);
    cr_assert_str_eq(g.str, "before", "GET after the move: %s", g.str);
    engine_get_stats(e, &st);
    cr_assert_geq(st.redirects, 1);
    a = ask(e, (unsigned)slot);
    cr_assert_eq(fixture_node(e, a.node), to, "the map was patched at once");
    /* The MOVED asked for a map read (within ~100 ms): let it land before
     * resharding, so that the reshard's slots are still old in our map. */
    for (int i = 0; i < 500 && st.topology_refreshes < 2; i++) {
        sleep_ms(10);
        engine_get_stats(e, &st);
    }
    cr_assert_geq(st.topology_refreshes, 2, "no map read after MOVED");

    /* And slots moved by redis-cli --cluster reshard: node 2's slots in
     * our map, one of which is node 0's now. */
    for (int i = 0; i < 16384; i++)
        of2[i] = fixture_node(e, ask(e, (unsigned)i).node) == 2;
    cr_assert_eq(redis_cluster_reshard(&cl, 2, 0, 5), 0);
    for (int i = 0; i < 16384; i++) {
        if (of2[i] && redis_cluster_slot_master(&cl, i, -1) == 0) {
            /* A slot of node 2 in our map that moved: a key there is
             * followed. */
            char k2[32];

            for (int j = 0;; j++) {
                snprintf(k2, sizeof k2, "r%d", j);
                if ((int)keyslot(k2, strlen(k2)) == i)
                    break;
                cr_assert_lt(j, 2000000);
            }
            cr_assert_eq(call_key(e, &g, "SET", k2, "x"), 0);
            cr_assert_str_eq(g.str, "OK");
            cr_assert_eq(fixture_node(e, ask(e, (unsigned)i).node), 0);
            followed = 1;
            break;
        }
    }
    cr_assert(followed, "no resharded slot was still ours to follow");
    engine_free(e);
}

/* Migration by hand: ASK for a key already moved (and for a new key),
 * TRYAGAIN for a two-key command whose keys are split, retried until the
 * slot settles. */
struct mig {
    struct engine *e;
    int some_seen;
    struct request mget;
    struct got mget_got;
    _Atomic int mget_done;
};

static void on_mget(struct request *req, const redisReply *r, int err, void *arg)
{
    struct mig *m = arg;

    copy_reply(req, r, err, &m->mget_got);
    m->mget_done = 1;
}

static int during_migration(struct redis_cluster *c, enum redis_cluster_step step, void *arg)
{
    struct mig *m = arg;
    struct engine_stats before, after;
    struct got g;
    const char *argv[] = {"MGET", "{mig}a", "{mig}b"};

    (void)c;
    if (step == REDIS_CLUSTER_MARKED) {
        /* A new key in a MIGRATING slot: the source says ASK. */
        engine_get_stats(m->e, &before);
        cr_assert_eq(call_key(m->e, &g, "SET", "{mig}new", "n"), 0);
        cr_assert_str_eq(g.str, "OK", "SET while migrating: %s", g.str);
        engine_get_stats(m->e, &after);
        cr_assert_gt(after.redirects, before.redirects, "ASK followed");
    }
    if (step != REDIS_CLUSTER_KEYS_SOME || m->some_seen++)
        return 0;
    /* One key moved ({mig}a sorts first), the other not yet. */
    engine_get_stats(m->e, &before);
    cr_assert_eq(call_key(m->e, &g, "GET", "{mig}a", NULL), 0);
    cr_assert_str_eq(g.str, "va", "GET of a moved key: %s", g.str);
    cr_assert_eq(call_key(m->e, &g, "GET", "{mig}b", NULL), 0);
    cr_assert_str_eq(g.str, "vb");
    engine_get_stats(m->e, &after);
    cr_assert_gt(after.redirects, before.redirects, "ASK followed");
    /* Both keys: TRYAGAIN until the migration ends (the hook returns). */
    request_init(&m->mget);
    cr_assert_eq(request_command(&m->mget, 3, argv, NULL), 0);
    request_route_slot(&m->mget, keyslot("{mig}", 5));
    cr_assert_eq(engine_submit(m->e, &m->mget, on_mget, m), 0);
    sleep_ms(300);
    cr_assert_eq(m->mget_done, 0, "MGET served while its keys are split?");
    engine_get_stats(m->e, &after);
    cr_assert_gt(after.unsettled, before.unsettled, "TRYAGAIN retried");
    return 0;
}

CLUSTER_TEST(ask_and_tryagain_during_migration)
{
    struct mig m = {.e = node0_engine(10000, 3600000)};
    int slot = (int)keyslot("{mig}", 5), from, to;
    struct got g;
    struct ask a;

    from = redis_cluster_slot_master(&cl, slot, -1);
    to = from == 0 ? 1 : 0;
    cr_assert_eq(call_key(m.e, &g, "SET", "{mig}a", "va"), 0);
    cr_assert_eq(call_key(m.e, &g, "SET", "{mig}b", "vb"), 0);
    a = ask(m.e, (unsigned)slot);
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 1, during_migration, &m), 0);
    cr_assert_geq(m.some_seen, 1);
    for (int i = 0; i < 1000 && !m.mget_done; i++)
        sleep_ms(10);
    cr_assert(m.mget_done, "MGET never completed");
    cr_assert_eq(m.mget_got.err, 0, "MGET: %d", m.mget_got.err);
    cr_assert_eq(m.mget_got.elements, 2, "MGET: %s", m.mget_got.str);
    cr_assert_str_eq(m.mget_got.el[0], "va");
    cr_assert_str_eq(m.mget_got.el[1], "vb");
    request_clear(&m.mget);
    (void)a;
    engine_free(m.e);
}

/* Node i says cluster_state:fail. */
static int cluster_down(int i)
{
    redisReply *r = redis_cluster_command(&cl, i, "CLUSTER INFO");
    int down = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:fail");

    freeReplyObject(r);
    return down;
}

/* Every live node: cluster-require-full-coverage yes or no. */
static void full_coverage(const char *yes_no)
{
    for (int i = 0; i < cl.nnodes; i++) {
        redisReply *r = cl.node[i].pid ? redis_cluster_command(&cl, i,
                            "CONFIG SET cluster-require-full-coverage %s", yes_no) : NULL;

        cr_assert(!cl.node[i].pid || (r && r->type == REDIS_REPLY_STATUS));
        freeReplyObject(r);
    }
}

/*
 * A shard with its master and replica dead (SIGKILL, no failover
 * possible).  With full coverage required the live masters answer
 * CLUSTERDOWN to everything: retried until the command timeout, then
 * LW_EUNSETTLED.  Without it, only the dead shard's slots fail so, and
 * the other shards serve.
 */
CLUSTER_TEST(dead_shard_unsettled_others_serve)
{
    struct engine *e = node0_engine(1000, 200);
    struct engine_stats st, after;
    char dead_key[32], live_key[32];
    struct got g;
    int rep = redis_cluster_replica_of(&cl, 2);
    double t0;

    key_on(2, "d", dead_key, sizeof dead_key);
    key_on(0, "l", live_key, sizeof live_key);
    cr_assert_eq(call_key(e, &g, "SET", dead_key, "x"), 0);
    cr_assert_geq(rep, 0);
    cr_assert_eq(redis_cluster_signal(&cl, rep, SIGKILL), 0);
    cr_assert_eq(redis_cluster_signal(&cl, 2, SIGKILL), 0);
    for (int i = 0; i < 500 && !cluster_down(0); i++)
        sleep_ms(20);
    cr_assert(cluster_down(0), "node 0 never said cluster_state:fail");

    engine_get_stats(e, &st);
    t0 = now_s();
    cr_assert_eq(call_key(e, &g, "GET", live_key, NULL), LW_EUNSETTLED);
    cr_assert_geq(now_s() - t0, 0.9, "failed before its timeout");
    cr_assert_leq(now_s() - t0, 1.5, "failed long after its timeout");
    engine_get_stats(e, &after);
    cr_assert_gt(after.unsettled, st.unsettled + 2, "CLUSTERDOWN retried");
    cr_assert_gt(after.error_replies, st.error_replies);

    full_coverage("no");
    for (int i = 0; i < 500 && cluster_down(0); i++)
        sleep_ms(20);
    cr_assert(!cluster_down(0), "node 0 stayed down without full coverage");
    for (int round = 0; round < 3; round++) {
        t0 = now_s();
        cr_assert_eq(call_key(e, &g, "GET", dead_key, NULL), LW_EUNSETTLED);
        cr_assert_geq(now_s() - t0, 0.9, "failed before its timeout");
        cr_assert_leq(now_s() - t0, 1.5, "failed long after its timeout");
        t0 = now_s();
        cr_assert_eq(call_key(e, &g, "SET", live_key, "y"), 0);
        cr_assert_str_eq(g.str, "OK");
        cr_assert_lt(now_s() - t0, 0.5);
    }
    engine_free(e);
}

/* CLUSTER FAILOVER on a replica: on_topology names exactly that shard's
 * slots as failed over, and no slot as moved. */
CLUSTER_TEST(graceful_failover_reported)
{
    struct engine *e = node0_engine(5000, 100);
    uint8_t want[LW_CLUSTER_SLOTS / 8] = {0};
    int rep = redis_cluster_replica_of(&cl, 1), n = 0, slot = redis_cluster_first_slot(&cl, 1);
    struct got g;

    cr_assert_eq(call(e, &g, LW_ROUTE_ANY, 0, "PING", NULL, NULL, NULL), 0);
    cr_assert(wait_until(ask(e, 0).node >= 0, 5000), "no map read within 5 s");
    for (unsigned s = 0; s < LW_CLUSTER_SLOTS; s++)
        if (fixture_node(e, ask(e, s).node) == 1) {
            want[s / 8] |= (uint8_t)(1u << (s % 8));
            n++;
        }
    cr_assert_gt(n, 0);
    cr_assert_geq(rep, 0);
    cr_assert_geq(slot, 0);
    cr_assert_eq(redis_cluster_failover(&cl, slot), rep);
    for (int i = 0; i < 500 && !failover_slots_are(want); i++)
        sleep_ms(10);
    cr_assert(failover_slots_are(want), "failover slots differ");
    engine_free(e); /* its thread is gone: topo is ours to read */
    for (unsigned i = 0; i < sizeof want; i++)
        cr_assert_eq(topo.moved[i], 0, "moved slots reported");
    cr_assert_eq(topo.failovers, 1);
}

/* A field of node i's INFO replication as a number, or -1. */
static long long repl_field(int i, const char *field)
{
    redisReply *r = redis_cluster_command(&cl, i, "INFO replication");
    const char *at;
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING && (at = strstr(r->str, field)))
        v = atoll(at + strlen(field));
    freeReplyObject(r);
    return v;
}

/* Master m's replica has processed everything m has written so far (10 s
 * at most): killing m then loses nothing.  Offsets, not WAIT: WAIT counts
 * only its own connection's writes, and the engine wrote on another. */
static int replica_caught_up(int m)
{
    int r = redis_cluster_replica_of(&cl, m);
    long long want = repl_field(m, "master_repl_offset:");

    return r >= 0 && want > 0 && wait_until(repl_field(r, "slave_repl_offset:") >= want, 10000);
}

/* kill -9 a master: requests routed to the other masters keep succeeding
 * meanwhile; its own slot's requests resume on the replica. */
CLUSTER_TEST(killed_master_holds_up_only_its_node)
{
    struct engine *e = node0_engine(3000, 200);
    char key[32], dead_key[32];
    int nodes[2], dead_node, slot, succ;
    struct got g;
    double t0, worst = 0;

    /* The SET waits for the engine's slot map: the nodes asked for after
     * it are known (asked before, a map still loading answered -1, and a
     * PING to "node -1" failed at once). */
    key_on(2, "x", dead_key, sizeof dead_key);
    slot = (int)keyslot(dead_key, strlen(dead_key));
    cr_assert_eq(call_key(e, &g, "SET", dead_key, "kept"), 0);
    dead_node = ask(e, (unsigned)slot).node;
    cr_assert_geq(dead_node, 0);
    for (int m = 0; m < 2; m++) {
        key_on(m, "o", key, sizeof key);
        nodes[m] = ask(e, keyslot(key, strlen(key))).node;
        cr_assert(nodes[m] >= 0 && nodes[m] != dead_node, "node %d: engine node %d (dead %d)",
                  m, nodes[m], dead_node);
    }
    cr_assert(replica_caught_up(2), "node 2's replica did not get the key in 10 s");
    cr_assert_eq(redis_cluster_signal(&cl, 2, SIGKILL), 0);
    t0 = now_s();
    /* For 3 s (the failover takes about 2.4 s): every call to the other
     * masters answers quickly. */
    while (now_s() - t0 < 3.0) {
        for (int m = 0; m < 2; m++) {
            double c0 = now_s();

            cr_assert_eq(call(e, &g, LW_ROUTE_NODE, (unsigned)nodes[m], "PING", NULL, NULL, NULL), 0);
            cr_assert_str_eq(g.str, "PONG");
            if (now_s() - c0 > worst)
                worst = now_s() - c0;
        }
        sleep_ms(20);
    }
    cr_assert_lt(worst, 0.5, "a healthy master waited %.3f s", worst);
    /* The dead node's own requests fail, quickly. */
    {
        int err = call(e, &g, LW_ROUTE_NODE, (unsigned)dead_node, "PING", NULL, NULL, NULL);

        cr_assert(err == LW_EUNSETTLED || err == LW_ECONNREFUSED || err == LW_ECONNLOST ||
                  err == LW_ETIMEDOUT, "err %d", err);
    }
    succ = redis_cluster_wait_slot_master(&cl, slot, 2, 15000);
    cr_assert_geq(succ, 0);
    cr_assert_eq(call_key(e, &g, "GET", dead_key, NULL), 0);
    cr_assert_str_eq(g.str, "kept");
    engine_free(e);
}

Test(cluster_engine, bad_seeds)
{
    struct engine_config cfg;
    struct engine *e;
    const char *bad[] = {"nohost", ":6379", "h:", "h:0", "h:65536", "h:12x", NULL};
    const int want[] = {LW_EINVAL, LW_EINVAL, LW_EINVAL, LW_ERANGE, LW_ERANGE, LW_EINVAL,
                        LW_EINVAL};
    static const char *many[LW_ENGINE_MAX_SEEDS + 1];

    engine_config_init(&cfg);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg.seeds = &bad[i];
        cfg.nseeds = 1;
        cr_assert_eq(engine_new(&cfg, &e), want[i], "seed %zu", i);
    }
    for (unsigned i = 0; i <= LW_ENGINE_MAX_SEEDS; i++)
        many[i] = "127.0.0.1:1";
    cfg.seeds = many;
    cfg.nseeds = LW_ENGINE_MAX_SEEDS + 1;
    cr_assert_eq(engine_new(&cfg, &e), LW_ERANGE);
    cfg.seeds = NULL;
    cfg.nseeds = 1;
    cr_assert_eq(engine_new(&cfg, &e), LW_EINVAL);
}

/* Nothing listens at any seed: requests fail at once, as for one node. */
Test(cluster_engine, refused_seeds_fail_at_once)
{
    struct engine_config cfg;
    struct engine *e;
    const char *dead[] = {"127.0.0.1:1", "127.0.0.1:2"};
    struct got g;
    double t0;

    engine_config_init(&cfg);
    cfg.seeds = dead;
    cfg.nseeds = 2;
    cfg.node.command_timeout_ms = 5000;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    t0 = now_s();
    cr_assert_eq(call(e, &g, LW_ROUTE_SLOT, 5, "PING", NULL, NULL, NULL), LW_ECONNREFUSED);
    cr_assert_lt(now_s() - t0, 2.0);
    engine_free(e);
}

/*
 * getaddrinfo()'s stand-in (struct endpoint's resolve, a test hook):
 * "slow.test" answers as 127.0.0.1 after 3 s, any other name as
 * getaddrinfo(); dns_running counts the lookups under way.
 */
static _Atomic int dns_running;

static int slow_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                            struct addrinfo **res)
{
    int rc;

    dns_running++;
    if (!strcmp(node, "slow.test")) {
        sleep_ms(3000);
        node = "127.0.0.1";
    }
    rc = getaddrinfo(node, service, hints, res);
    dns_running--;
    return rc;
}

/* Kill node i's connection whose last command was cmd (CLIENT LIST's
 * cmd=...): 1 when one was found and killed. */
static int kill_client_by_cmd(int i, const char *cmd)
{
    redisReply *r = redis_cluster_command(&cl, i, "CLIENT LIST");
    const char *line, *at;
    long long id = -1;
    char want[64];

    snprintf(want, sizeof want, " cmd=%s ", cmd);
    for (line = r && r->type == REDIS_REPLY_STRING ? r->str : NULL; line && id < 0;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');

        at = strstr(line, want);
        if (at && (!end || at < end) && !strncmp(line, "id=", 3))
            id = atoll(line + 3);
    }
    freeReplyObject(r);
    if (id < 0)
        return 0;
    r = redis_cluster_command(&cl, i, "CLIENT KILL ID %lld", id);
    id = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    return id == 1;
}

/*
 * A slow host name holds up only its own connection: the engine's map
 * connection is moved to a seed whose name takes 3 s to resolve (its
 * connection to the first seed killed), and meanwhile every master
 * (linked by the numeric addresses the map gave) answers at once.
 */
CLUSTER_TEST(slow_host_name_holds_up_only_its_connection)
{
    struct engine_config cfg;
    struct engine *e;
    char seed0[32], seed1[32];
    const char *two[2] = {seed0, seed1};
    int nodes[3];
    struct got g;
    double worst = 0;
    int calls = 0;

    snprintf(seed0, sizeof seed0, "127.0.0.1:%d", cl.node[0].port);
    snprintf(seed1, sizeof seed1, "slow.test:%d", cl.node[1].port);
    engine_config_init(&cfg);
    cfg.seeds = two;
    cfg.nseeds = 2;
    cfg.node.command_timeout_ms = 5000;
    cfg.node.connect_timeout_ms = 5000;
    cfg.node.resolve = slow_getaddrinfo;
    cfg.topology_refresh_ms = 3600000; /* the map is read once, from seed0 */
    cfg.wheel.tick_ns = 10 * 1000000ull;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    for (int m = 0; m < 3; m++) {
        char key[32];

        key_on(m, "s", key, sizeof key);
        /* The first map read may not be in yet (under load it was not):
         * until it is, the engine knows no node for the slot. */
        cr_assert(wait_until((nodes[m] = ask(e, keyslot(key, strlen(key))).node) >= 0, 5000),
                  "no map read within 5 s");
        cr_assert_eq(call(e, &g, LW_ROUTE_NODE, (unsigned)nodes[m], "PING", NULL, NULL, NULL), 0);
    }
    cr_assert_eq(dns_running, 0, "a name was looked up before the map connection moved");
    cr_assert(kill_client_by_cmd(0, "cluster|shards"), "no map connection on node 0");
    cr_assert(wait_until(dns_running == 1, 2000), "the map connection did not move to slow.test");
    /* The lookup takes 3 s: PING every master meanwhile. */
    while (dns_running == 1 && calls < 1000) {
        for (int m = 0; m < 3; m++) {
            double c0 = now_s();

            cr_assert_eq(call(e, &g, LW_ROUTE_NODE, (unsigned)nodes[m], "PING", NULL, NULL, NULL),
                         0);
            cr_assert_str_eq(g.str, "PONG");
            if (now_s() - c0 > worst)
                worst = now_s() - c0;
            calls++;
        }
        sleep_ms(20);
    }
    cr_assert_gt(calls, 30, "%d PINGs during the lookup", calls);
    cr_assert_lt(worst, 0.5, "a master waited %.3f s during another connection's lookup", worst);
    engine_free(e);
    cr_assert(wait_until(dns_running == 0, 5000), "the lookup's thread is still running");
}
