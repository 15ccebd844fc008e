/* bench/redis_cluster.c - see redis_cluster.h. */
#include "redis_cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"

/* Running and not SIGSTOPped: one that can answer. */
static int live(const struct redis_cluster_node *n)
{
    return n->pid && !n->stopped;
}

static redisContext *connect_node(const struct redis_cluster_node *n, int timeout_ms)
{
    return live(n) ? fixture_connect(n->port, "", timeout_ms) : NULL;
}

static redisReply *vcommand(const struct redis_cluster *c, int i, const char *fmt, va_list ap)
{
    redisContext *rc;
    redisReply *r;

    if (i < 0 || i >= c->nnodes || !(rc = connect_node(&c->node[i], 2000)))
        return NULL;
    r = redisvCommand(rc, fmt, ap);
    redisFree(rc);
    return r;
}

redisReply *redis_cluster_command(const struct redis_cluster *c, int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = vcommand(c, i, fmt, ap);
    va_end(ap);
    return r;
}

/* The command's reply is a status "OK" (or, with a NULL want, not an error). */
static int command_ok(const struct redis_cluster *c, int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;
    int ok;

    va_start(ap, fmt);
    r = vcommand(c, i, fmt, ap);
    va_end(ap);
    ok = r && r->type != REDIS_REPLY_ERROR;
    if (r && !ok)
        fprintf(stderr, "redis_cluster: node %d: %s\n", i, r->str);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static pid_t spawn_node(struct redis_cluster_node *n)
{
    char port[16], bus[16], log[340];
    char *argv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes", "--cluster-port", bus,
                    "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
                    /* Tests kill masters and cut replicas off: a replica
                     * must still be elected, and must stay where it is. */
                    "--cluster-replica-validity-factor", "0",
                    "--cluster-allow-replica-migration", "no",
                    "--repl-diskless-sync-delay", "0", "--save", "", "--appendonly", "no",
                    "--dir", n->dir, "--logfile", log, "--enable-debug-command", "local",
                    NULL};

    snprintf(port, sizeof port, "%d", n->port);
    snprintf(bus, sizeof bus, "%d", n->bus_port);
    snprintf(log, sizeof log, "%s/redis.log", n->dir);
    return fixture_spawn(argv, log);
}

/* Start node n on its ports and wait (5 s) for PONG; 0 or -1. */
static int launch(struct redis_cluster_node *n)
{
    n->pid = spawn_node(n);
    return fixture_wait_up(&n->pid, &n->stopped, n->port, "");
}

/* Fresh ports for node n, then launch; a few attempts (a port may be taken
 * between our pick and the server's bind). */
static int launch_fresh(struct redis_cluster_node *n)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        int p[2];

        if (fixture_free_ports(p, 2) != 0)
            return -1;
        n->port = p[0];
        n->bus_port = p[1];
        if (launch(n) == 0)
            return 0;
    }
    return -1;
}

static int node_id(struct redis_cluster *c, int i)
{
    redisReply *r = redis_cluster_command(c, i, "CLUSTER MYID");
    int ok = r && r->type == REDIS_REPLY_STRING && r->len < (int)sizeof c->node[i].id;

    if (ok)
        snprintf(c->node[i].id, sizeof c->node[i].id, "%s", r->str);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int create(struct redis_cluster *c)
{
    char addrs[REDIS_CLUSTER_MAX_NODES][32], reps[16], log[300];
    char *argv[REDIS_CLUSTER_MAX_NODES + 8];
    int k = 0;

    argv[k++] = "redis-cli";
    argv[k++] = "--cluster";
    argv[k++] = "create";
    for (int i = 0; i < c->nnodes; i++) {
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", c->node[i].port);
        argv[k++] = addrs[i];
    }
    snprintf(reps, sizeof reps, "%d", c->replicas_per_master);
    argv[k++] = "--cluster-replicas";
    argv[k++] = reps;
    argv[k++] = "--cluster-yes";
    argv[k] = NULL;
    snprintf(log, sizeof log, "%s/create.log", c->dir);
    pid_t pid = fixture_spawn(argv, log);
    if (pid < 0 || fixture_reap(pid, 30000) != 0) {
        fprintf(stderr, "redis_cluster: redis-cli --cluster create failed (see %s)\n", log);
        return -1;
    }
    return 0;
}

/* Every replica's link to its master is up (a sync finished), so that a
 * test killing a master right away finds a replica with its data. */
static int replicas_synced(const struct redis_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++) {
        redisReply *r;
        int ok = 1;

        if (!live(&c->node[i]) || redis_cluster_is_master(c, i) != 0)
            continue;
        r = redis_cluster_command(c, i, "INFO replication");
        ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
        freeReplyObject(r);
        if (!ok)
            return 0;
    }
    return 1;
}

int redis_cluster_start(struct redis_cluster *c, int masters, int replicas_per_master)
{
    const char *tmp = getenv("TMPDIR");
    int n = masters * (1 + replicas_per_master);

    memset(c, 0, sizeof *c);
    if (masters < 3 || replicas_per_master < 0 || n > REDIS_CLUSTER_MAX_NODES) {
        fprintf(stderr, "redis_cluster: %d masters x %d replicas not supported\n", masters,
                replicas_per_master);
        return -1;
    }
    c->masters = masters;
    c->replicas_per_master = replicas_per_master;
    snprintf(c->dir, sizeof c->dir, "%s/lw-cluster-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) {
        fprintf(stderr, "redis_cluster: mkdtemp %s: %s\n", c->dir, strerror(errno));
        c->dir[0] = 0;
        return -1;
    }
    for (c->nnodes = 0; c->nnodes < n; c->nnodes++) {
        struct redis_cluster_node *nd = &c->node[c->nnodes];

        snprintf(nd->dir, sizeof nd->dir, "%s/node%d", c->dir, c->nnodes);
        if (mkdir(nd->dir, 0700) != 0 || launch_fresh(nd) != 0) {
            fprintf(stderr, "redis_cluster: node %d did not start (see %s)\n", c->nnodes,
                    nd->dir);
            goto fail;
        }
    }
    if (create(c) != 0 || redis_cluster_wait_ok(c, 20000) != 0)
        goto fail;
    for (int i = 0; i < n; i++)
        if (node_id(c, i) != 0)
            goto fail;
    for (int64_t deadline = fixture_now_ms() + 10000; !replicas_synced(c); fixture_sleep_ms(20))
        if (fixture_now_ms() > deadline) {
            fprintf(stderr, "redis_cluster: replicas did not sync in 10 s\n");
            goto fail;
        }
    return 0;
fail:
    redis_cluster_stop(c);
    return -1;
}

void redis_cluster_stop(struct redis_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->node[i].pid) {
            kill(c->node[i].pid, SIGCONT);
            kill(c->node[i].pid, SIGTERM);
        }
    for (int i = 0; i < c->nnodes; i++)
        fixture_forget(&c->node[i].pid, &c->node[i].stopped, 5000);
    if (c->dir[0])
        fixture_remove_tree(c->dir);
    c->dir[0] = 0;
}

void redis_cluster_seeds(const struct redis_cluster *c, char *buf, size_t size)
{
    size_t off = 0;

    if (size)
        buf[0] = 0;
    for (int i = 0; i < c->nnodes && off < size; i++) {
        int w = snprintf(buf + off, size - off, "%s127.0.0.1:%d", i ? "," : "", c->node[i].port);

        if (w < 0)
            break;
        off += (size_t)w;
    }
}

int redis_cluster_node_by_port(const struct redis_cluster *c, int port)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->node[i].port == port)
            return i;
    return -1;
}

int redis_cluster_is_master(const struct redis_cluster *c, int i)
{
    return fixture_role(redis_cluster_command(c, i, "ROLE"));
}

int redis_cluster_replica_of(const struct redis_cluster *c, int m)
{
    for (int i = 0; i < c->nnodes; i++) {
        redisReply *r;
        int hit;

        if (i == m || !live(&c->node[i]))
            continue;
        /* ROLE of a replica: "slave", master ip, master port, ... */
        r = redis_cluster_command(c, i, "ROLE");
        hit = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
              r->element[2]->type == REDIS_REPLY_INTEGER &&
              r->element[2]->integer == c->node[m].port;
        freeReplyObject(r);
        if (hit)
            return i;
    }
    return -1;
}

/* Node ask's slot map: map[slot] = serving node index, -1 when unserved or
 * unknown.  0, or -1 when ask did not answer. */
static int slot_map(const struct redis_cluster *c, int ask, int *map)
{
    redisReply *r = redis_cluster_command(c, ask, "CLUSTER SLOTS");

    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s++)
        map[s] = -1;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return -1;
    }
    for (size_t k = 0; k < r->elements; k++) {
        redisReply *e = r->element[k];

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            continue;
        int node = redis_cluster_node_by_port(c, (int)e->element[2]->element[1]->integer);
        for (long long s = e->element[0]->integer;
             s <= e->element[1]->integer && s < REDIS_CLUSTER_SLOTS; s++)
            map[s] = node;
    }
    freeReplyObject(r);
    return 0;
}

static int first_live(const struct redis_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (live(&c->node[i]) && fixture_ping(c->node[i].port, ""))
            return i;
    return -1;
}

int redis_cluster_slot_master(const struct redis_cluster *c, int slot, int ask)
{
    static _Thread_local int map[REDIS_CLUSTER_SLOTS];

    if (slot < 0 || slot >= REDIS_CLUSTER_SLOTS)
        return -1;
    if (ask < 0)
        ask = first_live(c);
    if (slot_map(c, ask, map) != 0)
        return -1;
    return map[slot];
}

int redis_cluster_first_slot(const struct redis_cluster *c, int m)
{
    static _Thread_local int map[REDIS_CLUSTER_SLOTS];

    if (slot_map(c, m, map) != 0)
        return -1;
    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s++)
        if (map[s] == m)
            return s;
    return -1;
}

static int state_ok(const struct redis_cluster *c, int i)
{
    redisReply *r = redis_cluster_command(c, i, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");

    freeReplyObject(r);
    return ok;
}

/* Every live node is ok and has the same full slot map.  Down nodes (pid 0)
 * are skipped; a SIGSTOPped one fails the check, as it should. */
static int agreed(const struct redis_cluster *c)
{
    static _Thread_local int first[REDIS_CLUSTER_SLOTS], map[REDIS_CLUSTER_SLOTS];
    int seen = 0;

    for (int i = 0; i < c->nnodes; i++) {
        if (!live(&c->node[i]))
            continue;
        if (!state_ok(c, i) || slot_map(c, i, seen ? map : first) != 0)
            return 0;
        if (seen && memcmp(first, map, sizeof map) != 0)
            return 0;
        seen = 1;
    }
    for (int s = 0; seen && s < REDIS_CLUSTER_SLOTS; s++)
        if (first[s] < 0 || !live(&c->node[first[s]]))
            return 0;
    return seen;
}

int redis_cluster_wait_ok(const struct redis_cluster *c, int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;

    for (;;) {
        if (agreed(c))
            return 0;
        if (fixture_now_ms() > deadline)
            break;
        fixture_sleep_ms(50);
    }
    fprintf(stderr, "redis_cluster: not ok and agreed within %d ms\n", timeout_ms);
    return -1;
}

int redis_cluster_wait_slot_master(const struct redis_cluster *c, int slot, int not_node,
                                   int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;

    for (;;) {
        int who = -2;

        for (int i = 0; i < c->nnodes && who != -1; i++) {
            int m;

            if (!live(&c->node[i]))
                continue;
            m = redis_cluster_slot_master(c, slot, i);
            if (m < 0 || m == not_node || !live(&c->node[m]) || (who >= 0 && m != who))
                who = -1;
            else
                who = m;
        }
        if (who >= 0 && redis_cluster_is_master(c, who) == 1)
            return who;
        if (fixture_now_ms() > deadline)
            break;
        fixture_sleep_ms(50);
    }
    fprintf(stderr, "redis_cluster: slot %d has no new agreed master within %d ms\n", slot,
            timeout_ms);
    return -1;
}

int redis_cluster_signal(struct redis_cluster *c, int i, int sig)
{
    if (i < 0 || i >= c->nnodes)
        return -1;
    return fixture_signal(&c->node[i].pid, &c->node[i].stopped, sig);
}

int redis_cluster_restart_node(struct redis_cluster *c, int i)
{
    if (i < 0 || i >= c->nnodes)
        return -1;
    if (c->node[i].pid)
        redis_cluster_signal(c, i, SIGTERM);
    if (launch(&c->node[i]) != 0) {
        fprintf(stderr, "redis_cluster: node %d did not restart on port %d\n", i,
                c->node[i].port);
        return -1;
    }
    return 0;
}

/* MIGRATE the keys of slot from `from` to `to`, batch at a time; hook after
 * each batch.  0, 1 (hook aborted) or -1. */
static int move_keys(struct redis_cluster *c, int slot, int from, int to, int batch,
                     redis_cluster_hook *hook, void *arg)
{
    for (int rounds = 0; rounds < 1000000; rounds++) {
        redisReply *keys = redis_cluster_command(c, from, "CLUSTER GETKEYSINSLOT %d %d", slot,
                                                 batch);
        if (!keys || keys->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(keys);
            return -1;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return 0;
        }
        size_t n = keys->elements + 7;
        const char **argv = calloc(n, sizeof *argv);
        size_t *lens = calloc(n, sizeof *lens);
        char port[16];
        snprintf(port, sizeof port, "%d", c->node[to].port);
        const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"};
        for (int k = 0; argv && lens && k < 7; k++) {
            argv[k] = head[k];
            lens[k] = strlen(head[k]);
        }
        n = 7;
        for (size_t k = 0; argv && lens && k < keys->elements; k++, n++) {
            argv[n] = keys->element[k]->str;
            lens[n] = keys->element[k]->len;
        }
        redisContext *rc = connect_node(&c->node[from], 2000);
        redisReply *r = rc && argv && lens ? redisCommandArgv(rc, (int)n, argv, lens) : NULL;
        int ok = r && r->type != REDIS_REPLY_ERROR;
        if (r && !ok)
            fprintf(stderr, "redis_cluster: MIGRATE: %s\n", r->str);
        freeReplyObject(r);
        redisFree(rc);
        free(argv);
        free(lens);
        freeReplyObject(keys);
        if (!ok)
            return -1;
        if (hook && hook(c, REDIS_CLUSTER_KEYS_SOME, arg))
            return 1;
    }
    return -1;
}

int redis_cluster_migrate_slot(struct redis_cluster *c, int slot, int from, int to, int batch,
                               redis_cluster_hook *hook, void *arg)
{
    int rc;

    if (batch < 1 || from < 0 || to < 0 || from >= c->nnodes || to >= c->nnodes ||
        (!c->node[from].id[0] && node_id(c, from) != 0) ||
        (!c->node[to].id[0] && node_id(c, to) != 0))
        return -1;
    /* Importing first: a client sent to the target by ASK must find it
     * ready (redis-cli's order). */
    if (command_ok(c, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, c->node[from].id) ||
        command_ok(c, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, c->node[to].id))
        return -1;
    if (hook && hook(c, REDIS_CLUSTER_MARKED, arg))
        return 1;
    if ((rc = move_keys(c, slot, from, to, batch, hook, arg)) != 0)
        return rc;
    if (hook && hook(c, REDIS_CLUSTER_KEYS_DONE, arg))
        return 1;
    /* Target, then source, then the other masters: the source stops
     * answering ASK only once the target owns the slot. */
    if (command_ok(c, to, "CLUSTER SETSLOT %d NODE %s", slot, c->node[to].id) ||
        command_ok(c, from, "CLUSTER SETSLOT %d NODE %s", slot, c->node[to].id))
        return -1;
    for (int i = 0; i < c->nnodes; i++)
        if (i != to && i != from && live(&c->node[i]) && redis_cluster_is_master(c, i) == 1)
            command_ok(c, i, "CLUSTER SETSLOT %d NODE %s", slot, c->node[to].id);
    if (hook && hook(c, REDIS_CLUSTER_ASSIGNED, arg))
        return 1;
    return 0;
}

int redis_cluster_failover(struct redis_cluster *c, int slot)
{
    int m = redis_cluster_slot_master(c, slot, -1);
    int r = m >= 0 ? redis_cluster_replica_of(c, m) : -1;

    if (r < 0)
        return -1;
    for (int attempt = 1; attempt <= 3; attempt++) {
        if (command_ok(c, r, "CLUSTER FAILOVER"))
            return -1;
        if (redis_cluster_wait_slot_master(c, slot, m, 10000) == r)
            return r;
        fprintf(stderr, "redis_cluster: CLUSTER FAILOVER %d on node %d did not happen\n", attempt,
                r);
    }
    return -1;
}

int redis_cluster_reshard(struct redis_cluster *c, int from, int to, int nslots)
{
    char seed[32], n[16], log[300];

    if (from < 0 || to < 0 || from >= c->nnodes || to >= c->nnodes || node_id(c, from) ||
        node_id(c, to))
        return -1;
    snprintf(seed, sizeof seed, "127.0.0.1:%d", c->node[from].port);
    snprintf(n, sizeof n, "%d", nslots);
    snprintf(log, sizeof log, "%s/reshard.log", c->dir);
    char *argv[] = {"redis-cli", "--cluster", "reshard", seed,
                    "--cluster-from", c->node[from].id, "--cluster-to", c->node[to].id,
                    "--cluster-slots", n, "--cluster-yes", NULL};
    pid_t pid = fixture_spawn(argv, log);
    if (pid < 0 || fixture_reap(pid, 60000) != 0) {
        fprintf(stderr, "redis_cluster: redis-cli --cluster reshard failed (see %s)\n", log);
        return -1;
    }
    return redis_cluster_wait_ok(c, 10000);
}
