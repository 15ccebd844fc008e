/*
 * adapters/cluster.c - a Redis Cluster as a topology (topology.h): the
 * nodes, the slot map, refreshes, failover vs migration, and routing (by
 * slot, by node, redirects, unsettled retries).  link.c runs the pipeline
 * to each master; this file decides which link a request goes to, and
 * takes back what a link reports: a redirect or an unsettled reply is
 * routed again from here, as libvalkey's cluster layer wraps its
 * connections' callbacks.
 *
 * Topology.  A connection of its own (not a link: it may be to a replica,
 * and it needs no scripts) asks CLUSTER SHARDS, or CLUSTER SLOTS on a
 * server that does not know SHARDS (before Redis 7).  It starts at the
 * first seed and moves to the next address (seeds, then every node seen)
 * whenever it fails, so any one live node is enough.  The map is read at
 * start, every topology_refresh_ms, and soon (at most one read per 100 ms)
 * after a MOVED, an unsettled reply or a link's connection error.
 *
 * Nodes are known by address; an index, once given, stays with its address
 * and is never reused, so a caller may keep node numbers across refreshes.
 * Only masters that serve slots get a link; replicas are only remembered
 * for telling a failover from a migration.
 *
 * Failover vs migration.  Each read map is compared with what the reads
 * said before (not with the map MOVED patched since: those patches are
 * guesses until a read confirms them).  A slot whose master changed to a
 * node that was in the old master's shard (CLUSTER SHARDS) or listed as
 * its replica (CLUSTER SLOTS) failed over: writes the old master
 * acknowledged may be lost.  Any other change is a migration, and MIGRATE
 * carried the keys.
 *
 * "Before" is the latest read that knew: the node asked sees a failover
 * one gossip message at a time, and a read may fall in between.  When the
 * old master's "I replicate the new one" reaches it before the new
 * master's "I serve these slots", it has the slots unassigned and neither
 * node a master, so CLUSTER SHARDS lists neither; a node that heard the
 * promotion but not yet the slots lists the new master alone, serving
 * nothing.  Compared with such a read, the next one (the new master
 * serving the slots) would look like a slot found, or a migration, and
 * the failover would never be told.  So a slot keeps its latest known
 * master while reads leave it unassigned, and a node keeps the shard (the
 * index of its master) it was last listed in among shards serving slots.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backoff.h"
#include "counter.h"
#include "engine.h"
#include "link.h"
#include "topology.h"

#define REFRESH_GAP_NS 100000000ull  /* at most one map read per 100 ms */
#define DEGRADED_GAP_NS 250000000ull /* a master down: read every 250 ms */
#define MAX_REDIRECTS 16
#define STORM_REDIRECTS 100 /* redirects in a second worth a log line */
#define RETRY_MIN_MS 20u    /* unsettled: 20 ms doubling to 200 ms */
#define RETRY_MAX_MS 200u

struct node {
    char *host;
    int port;
    int master;    /* serves slots by the latest map (or a redirect said so) */
    int shard;     /* its master's index, by the latest read that listed it
                      in a shard serving slots; -1: never */
    int new_shard; /* the same from the read being parsed, -1: not there */
};

struct cluster {
    struct topology t;
    struct link_set *ls;
    char *seed_host[LW_ENGINE_MAX_SEEDS];
    int seed_port[LW_ENGINE_MAX_SEEDS];
    unsigned nseeds;
    struct node *nodes;
    unsigned nnodes, cap;
    int16_t map[LW_CLUSTER_SLOTS];          /* routing: node, -1 unknown */
    int16_t read[LW_CLUSTER_SLOTS];         /* latest known master, for the diff */
    int16_t next[LW_CLUSTER_SLOTS];         /* the map being parsed */
    uint8_t failover[LW_CLUSTER_SLOTS / 8]; /* what on_topology is told */
    uint8_t moved[LW_CLUSTER_SLOTS / 8];
    int have_map;
    int sharded;   /* the cluster answered CLUSTER SHARDS */
    int use_slots; /* it did not: ask CLUSTER SLOTS */

    /* The topology connection. */
    struct conn tconn;
    char *thost;        /* its address, for CLUSTER SLOTS' empty host */
    unsigned next_addr; /* candidate tried next: seeds, then nodes */
    unsigned failures;  /* attempts failed since a map was last read */
    int last_err;       /* why the latest attempt failed */
    int fail_err;       /* every seed refused before any map: fail at once */
    int querying;       /* a query is in flight */
    int again;          /* another read was asked for meanwhile */
    uint64_t query_ns;  /* when the query in flight was sent */
    uint64_t read_ns;   /* when the latest read was sent */
    uint64_t storm_ns;  /* this second of redirects began then */
    unsigned storm;     /* redirects in it */
    ev_timer periodic, soon, reopen;

    struct fifo pending; /* no route yet (no map, no link) */
    struct fifo backoff; /* unsettled, until their retry_ns */
    struct xorshift rng; /* the back-off's jitter */
};

static struct cluster *of(const struct topology *t)
{
    return (struct cluster *)t;
}

/* --- configuration ------------------------------------------------------ */

int cluster_check(const struct engine_config *cfg)
{
    int rc;

    if (cfg->nseeds > LW_ENGINE_MAX_SEEDS)
        return LW_ERANGE;
    if (!cfg->seeds)
        return LW_EINVAL;
    for (unsigned i = 0; i < cfg->nseeds; i++)
        if ((rc = parse_addr(cfg->seeds[i], NULL, NULL)))
            return rc;
    return 0;
}

/* --- nodes -------------------------------------------------------------- */

/* The index of the node at host:port, made when new; -1 out of memory. */
static int node_at(struct cluster *c, const char *host, size_t hlen, int port)
{
    struct node *n;

    for (unsigned i = 0; i < c->nnodes; i++)
        if (c->nodes[i].port == port && !strncmp(c->nodes[i].host, host, hlen) &&
            !c->nodes[i].host[hlen])
            return (int)i;
    if (c->nnodes >= (unsigned)INT16_MAX)
        return -1;
    if (c->nnodes == c->cap) {
        unsigned cap = c->cap ? 2 * c->cap : 16;
        struct node *nodes = realloc(c->nodes, cap * sizeof *nodes);

        if (!nodes)
            return -1;
        c->nodes = nodes;
        c->cap = cap;
    }
    if (links_reserve(c->ls, c->nnodes + 1)) /* links are indexed by node */
        return -1;
    n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof *n);
    if (!(n->host = strndup(host, hlen)))
        return -1;
    n->port = port;
    n->shard = n->new_shard = -1;
    return (int)c->nnodes++;
}

/* Node i's link, made (and connecting) when it has none; NULL when out of
 * memory. */
static struct link *link_of(struct cluster *c, unsigned i)
{
    struct link *l = c->ls->links[i];

    if (!l && (l = link_new(c->ls, i, c->nodes[i].host, c->nodes[i].port)))
        link_connect(l);
    return l;
}

/* --- routing ------------------------------------------------------------ */

/* A master that is up, else any master with a link, else NULL. */
static struct link *any_master(struct cluster *c)
{
    struct link *some = NULL;

    for (unsigned i = 0; i < c->nnodes; i++) {
        struct link *l = c->ls->links[i];

        if (!c->nodes[i].master || !l)
            continue;
        if (link_is_up(l))
            return l;
        if (!some)
            some = l;
    }
    return some;
}

/* Queue req on l's node, on the lane it asks for, and write it if there
 * is room. */
static void to_link(struct link *l, struct request *req, int front)
{
    link_queue(l, req, front);
    link_pump(l);
}

static void route(struct topology *t, struct request *req, int front)
{
    struct cluster *c = of(t);
    struct link *l = NULL;
    unsigned to = req->route_to;

    switch (req->route) {
    case LW_ROUTE_NODE:
        /* A batch for one master: if that node no longer is one, the
         * caller must regroup its keys by the new map. */
        if (to >= c->nnodes || !c->nodes[to].master || !(l = link_of(c, to))) {
            links_complete(c->ls, req, NULL, LW_EUNSETTLED);
            return;
        }
        break;
    case LW_ROUTE_SLOT:
        if (c->map[to % LW_CLUSTER_SLOTS] >= 0)
            l = link_of(c, (unsigned)c->map[to % LW_CLUSTER_SLOTS]);
        break;
    default:
        l = any_master(c);
    }
    if (l) {
        to_link(l, req, front);
        return;
    }
    fifo_push(&c->pending, req);
}

/* Route again what waits on l but belongs elsewhere now; fail node-routed
 * requests of a node that is no longer a master. */
static void reroute_queue(struct cluster *c, struct link *l, struct fifo *q)
{
    struct fifo all = fifo_take(q);
    struct request *req;
    int is_master = c->nodes[l->node].master;

    while ((req = fifo_pop(&all))) {
        int stays = req->route == LW_ROUTE_SLOT ? c->map[req->route_to] == (int)l->node
                                                : is_master;

        if (stays || req->asking)
            fifo_push(q, req);
        else
            route(&c->t, req, 0);
    }
}

static void reroute_link(struct cluster *c, struct link *l)
{
    reroute_queue(c, l, &l->urgent);
    reroute_queue(c, l, &l->waiting);
}

static void reroute_all(struct cluster *c)
{
    struct fifo all = fifo_take(&c->pending);
    struct request *req;

    for (unsigned i = 0; i < c->nnodes; i++) {
        struct link *l = c->ls->links[i];

        if (l)
            reroute_link(c, l);
        if (l && l->side)
            reroute_link(c, l->side);
    }
    while ((req = fifo_pop(&all)))
        route(&c->t, req, 0);
    links_pump_all(c->ls);
}

/* Unsettled: try again after the back-off (backoff.h: 20 ms doubling to
 * 200 ms, jittered), but never past the request's own time; then
 * LW_EUNSETTLED. */
static void retry_later(struct cluster *c, struct request *req)
{
    uint64_t now = lw_clock_now();
    uint32_t ms = backoff_delay_ms(RETRY_MIN_MS, RETRY_MAX_MS, req->unsettled, &c->rng);

    count_add(&c->ls->count.unsettled, 1);
    if (now >= req->expires_ns) {
        links_complete(c->ls, req, NULL, LW_EUNSETTLED);
        return;
    }
    if (req->unsettled < UINT8_MAX)
        req->unsettled++;
    req->retry_ns = now + ms * 1000000ull;
    if (req->retry_ns > req->expires_ns)
        req->retry_ns = req->expires_ns;
    fifo_push(&c->backoff, req);
}

/* --- the topology connection --------------------------------------------- */

static void refresh_soon(struct cluster *c);

static const char shards_cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
static const char slots_cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

static void send_query(struct cluster *c)
{
    const char *cmd = c->use_slots ? slots_cmd : shards_cmd;
    size_t len = c->use_slots ? sizeof slots_cmd - 1 : sizeof shards_cmd - 1;

    if (!conn_is_ready(&c->tconn) || c->querying)
        return;
    if (conn_send(&c->tconn, cmd, len) == 0) {
        c->querying = 1;
        c->again = 0;
        c->query_ns = c->read_ns = lw_clock_now();
    }
}

static void refresh_soon(struct cluster *c)
{
    uint64_t now = lw_clock_now(), next = c->read_ns + REFRESH_GAP_NS;

    if (c->querying) {
        c->again = 1;
        return;
    }
    if (now >= next) {
        send_query(c);
        return;
    }
    if (!ev_is_active(&c->soon)) {
        ev_timer_set(&c->soon, (double)(next - now) / 1e9, 0.0);
        ev_timer_start(c->ls->loop, &c->soon);
    }
}

/* Reply helpers: a RESP2 array of name/value pairs. */
static const redisReply *field(const redisReply *r, const char *name)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i];

        if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) &&
            !strcasecmp(k->str, name))
            return r->element[i + 1];
    }
    return NULL;
}

static int is_str(const redisReply *r, const char *s)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           !strcasecmp(r->str, s);
}

static int int_of(const redisReply *r)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER)
        return (int)r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return atoi(r->str);
    return -1;
}

/* The node a CLUSTER SHARDS node entry names; -1 when unusable.  Over TLS
 * its "tls-port" is the one to use ("port" is the plain one, 0 when the
 * node serves TLS only). */
static int shards_node(struct cluster *c, const redisReply *n)
{
    const redisReply *ip = field(n, "ip"), *port = field(n, "port");

    if (c->ls->ep->tls.enable && int_of(field(n, "tls-port")) > 0)
        port = field(n, "tls-port");

    if (!ip || ip->type != REDIS_REPLY_STRING || !ip->len || !strcmp(ip->str, "?"))
        ip = field(n, "endpoint");
    if (!ip || ip->type != REDIS_REPLY_STRING || !ip->len || int_of(port) <= 0)
        return -1;
    return node_at(c, ip->str, ip->len, int_of(port));
}

/* A CLUSTER SHARDS shard's master: the node with role master, an online
 * one first (a failed old master may still be listed); -1 when none. */
static int shard_master(struct cluster *c, const redisReply *nodes)
{
    int master = -1, master_ok = 0;

    for (size_t i = 0; i < nodes->elements; i++) {
        const redisReply *n = nodes->element[i];
        int idx = shards_node(c, n), ok = !is_str(field(n, "health"), "fail");

        if (idx >= 0 && is_str(field(n, "role"), "master") && (master < 0 || (ok && !master_ok))) {
            master = idx;
            master_ok = ok;
        }
    }
    return master;
}

/* CLUSTER SHARDS: each shard holds "slots" (start, end, ...) and "nodes".
 * A shard serving no slots names no one's shard (see the top). */
static int parse_shards(struct cluster *c, const redisReply *r)
{
    for (size_t s = 0; s < r->elements; s++) {
        const redisReply *slots = field(r->element[s], "slots");
        const redisReply *nodes = field(r->element[s], "nodes");
        int master, idx;

        if (!slots || !nodes || slots->type != REDIS_REPLY_ARRAY ||
            nodes->type != REDIS_REPLY_ARRAY)
            return -1;
        master = shard_master(c, nodes);
        for (size_t i = 0; master >= 0 && slots->elements >= 2 && i < nodes->elements; i++)
            if ((idx = shards_node(c, nodes->element[i])) >= 0)
                c->nodes[idx].new_shard = master;
        for (size_t i = 0; master >= 0 && i + 1 < slots->elements; i += 2) {
            int from = int_of(slots->element[i]), to = int_of(slots->element[i + 1]);

            for (int slot = from; slot >= 0 && slot <= to && slot < (int)LW_CLUSTER_SLOTS; slot++)
                c->next[slot] = (int16_t)master;
        }
    }
    return 0;
}

/* A CLUSTER SLOTS node entry: [host, port, id, ...]; "" is the host asked. */
static int slots_node(struct cluster *c, const redisReply *n)
{
    const char *host;
    size_t hlen;

    if (n->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
        n->element[0]->type != REDIS_REPLY_STRING || int_of(n->element[1]) <= 0)
        return -1;
    host = n->element[0]->len ? n->element[0]->str : c->thost;
    hlen = n->element[0]->len ? n->element[0]->len : strlen(c->thost);
    return node_at(c, host, hlen, int_of(n->element[1]));
}

/* CLUSTER SLOTS: [start, end, master, replica...] per range; a shard is
 * named by its master's index. */
static int parse_slots(struct cluster *c, const redisReply *r)
{
    for (size_t s = 0; s < r->elements; s++) {
        const redisReply *range = r->element[s];
        int master, from, to;

        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3)
            return -1;
        from = int_of(range->element[0]);
        to = int_of(range->element[1]);
        if ((master = slots_node(c, range->element[2])) < 0)
            continue;
        c->nodes[master].new_shard = master;
        for (size_t i = 3; i < range->elements; i++) {
            int idx = slots_node(c, range->element[i]);

            if (idx >= 0)
                c->nodes[idx].new_shard = master;
        }
        for (int slot = from; slot >= 0 && slot <= to && slot < (int)LW_CLUSTER_SLOTS; slot++)
            c->next[slot] = (int16_t)master;
    }
    return 0;
}

static unsigned count_bits(const uint8_t *map)
{
    unsigned n = 0;

    for (unsigned i = 0; i < LW_CLUSTER_SLOTS / 8; i++)
        n += (unsigned)__builtin_popcount(map[i]);
    return n;
}

/* Say a map change in the log: a failover as a warning (what the old
 * masters acknowledged last may be gone), a migration as news. */
static void say_change(struct cluster *c, const struct topology_change *change)
{
    unsigned failed = count_bits(change->failover), moved = count_bits(change->moved);

    if (change->failovers)
        log_say(c->ls->log, LOG_FAILOVER, LOG_WARN,
                "cluster: %u shard(s) failed over (%u slots): held locks there are checked "
                "on the new masters",
                change->failovers, failed);
    if (moved)
        log_say(c->ls->log, LOG_TOPOLOGY, LOG_INFO,
                "cluster: slot map changed: %u slots moved to another master", moved);
}

/* Compare the new map with the latest known masters and tell on_topology. */
static void report_change(struct cluster *c)
{
    uint8_t *failover = c->failover, *moved = c->moved;
    uint8_t *shard_seen = calloc(c->nnodes + 1, 1);
    struct topology_change change = {failover, moved, 0};
    int any = 0;

    memset(failover, 0, sizeof c->failover);
    memset(moved, 0, sizeof c->moved);
    for (unsigned s = 0; s < LW_CLUSTER_SLOTS; s++) {
        int was = c->read[s], now = c->next[s];

        if (was < 0 || now < 0 || was == now)
            continue;
        any = 1;
        if (c->nodes[was].shard >= 0 && c->nodes[now].shard == c->nodes[was].shard) {
            failover[s / 8] |= (uint8_t)(1u << (s % 8));
            if (shard_seen && !shard_seen[was]) { /* shards by old master */
                shard_seen[was] = 1;
                change.failovers++;
            }
        } else {
            moved[s / 8] |= (uint8_t)(1u << (s % 8));
        }
    }
    free(shard_seen);
    if (!any)
        return;
    say_change(c, &change);
    topology_tell(&c->t, &change);
}

/* A map was read: report what changed, adopt it, route by it. */
static void adopt_map(struct cluster *c)
{
    if (c->have_map)
        report_change(c);
    for (unsigned i = 0; i < c->nnodes; i++) {
        c->nodes[i].master = 0;
        if (c->nodes[i].new_shard >= 0)
            c->nodes[i].shard = c->nodes[i].new_shard;
    }
    for (unsigned s = 0; s < LW_CLUSTER_SLOTS; s++)
        if (c->next[s] >= 0) {
            c->nodes[c->next[s]].master = 1;
            c->read[s] = c->next[s];
        }
    memcpy(c->map, c->next, sizeof c->map);
    for (unsigned i = 0; i < c->nnodes; i++)
        if (c->nodes[i].master)
            link_of(c, i);
    c->have_map = 1;
    c->failures = 0;
    c->fail_err = 0;
    count_add(&c->ls->count.topology_refreshes, 1);
    atomic_store_explicit(&c->ls->status, 0, memory_order_relaxed);
    reroute_all(c);
}

static void on_topology_reply(void *arg, redisReply *reply)
{
    struct cluster *c = arg;
    int rc = -1;

    c->querying = 0;
    if (reply->type == REDIS_REPLY_ERROR && !c->use_slots &&
        (strstr(reply->str, "nknown") || strstr(reply->str, "ubcommand"))) {
        c->use_slots = 1; /* before Redis 7 */
        c->sharded = 0;
        send_query(c);
        return;
    }
    if (reply->type == REDIS_REPLY_ARRAY) {
        for (unsigned s = 0; s < LW_CLUSTER_SLOTS; s++)
            c->next[s] = -1;
        for (unsigned i = 0; i < c->nnodes; i++) /* a read that failed half-way */
            c->nodes[i].new_shard = -1;
        rc = c->use_slots ? parse_slots(c, reply) : parse_shards(c, reply);
    }
    if (rc) { /* not a cluster, or an answer we cannot read: ask elsewhere */
        conn_fail(&c->tconn, LW_EREDIS);
        return;
    }
    c->sharded = !c->use_slots;
    adopt_map(c);
    if (c->again)
        refresh_soon(c);
}

static void on_topology_up(void *arg)
{
    struct cluster *c = arg;

    send_query(c);
}

static void open_topology(struct cluster *c);

/* The topology connection failed: the next address, at once while a round
 * lasts, after the back-off (backoff.h, over the rounds) once every
 * address failed.  Before any map, a round of refusals fails requests at
 * once, as a refused single node does. */
static void on_topology_down(void *arg, int err)
{
    struct cluster *c = arg;
    const struct endpoint *ep = c->ls->ep;
    unsigned ncand = c->nseeds + c->nnodes;
    double delay = 0.0;

    c->querying = 0;
    c->last_err = err;
    c->failures++;
    conn_close(&c->tconn); /* ours to move elsewhere, not its own retry */
    if (c->failures % ncand == 0) {
        unsigned rounds = c->failures / ncand;

        delay = backoff_delay_ms(ep->reconnect_min_ms, ep->reconnect_max_ms, rounds - 1,
                                 &c->rng) /
                1000.0;
        if (!c->have_map && conn_is_hard_failure(err)) {
            c->fail_err = err;
            links_fail_all(c->ls, &c->pending, err);
        }
    }
    if (!c->have_map)
        atomic_store_explicit(&c->ls->status, err, memory_order_relaxed);
    ev_timer_set(&c->reopen, delay, 0.0);
    ev_timer_start(c->ls->loop, &c->reopen);
}

static void open_topology(struct cluster *c)
{
    unsigned ncand = c->nseeds + c->nnodes, i = c->next_addr++ % ncand;
    const struct conn_config cc = {
        .ep = c->ls->ep,
        .host = i < c->nseeds ? c->seed_host[i] : c->nodes[i - c->nseeds].host,
        .port = i < c->nseeds ? c->seed_port[i] : c->nodes[i - c->nseeds].port,
        .loop = c->ls->loop,
        .on_up = on_topology_up,
        .on_down = on_topology_down,
        .on_reply = on_topology_reply,
        .arg = c,
    };

    conn_clear(&c->tconn);
    c->thost = (char *)cc.host;
    if (conn_init(&c->tconn, &cc)) {
        on_topology_down(c, LW_ENOMEM);
        return;
    }
    conn_connect(&c->tconn);
}

static void on_reopen(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    open_topology(w->data);
}

static void on_soon(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct cluster *c = w->data;

    (void)loop;
    (void)revents;
    if (c->querying)
        c->again = 1;
    else
        send_query(c);
}

static void on_periodic(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    refresh_soon(w->data);
}

/* --- replies and failures of links -------------------------------------- */

static int starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

/* "MOVED <slot> <host>:<port>" or "ASK ...": the target node, or -1. */
static int redirect_target(struct cluster *c, const char *msg)
{
    const char *addr = strchr(msg, ' ');
    const char *colon;

    addr = addr ? strchr(addr + 1, ' ') : NULL;
    if (!addr || !(colon = strrchr(++addr, ':')) || colon == addr)
        return -1;
    return node_at(c, addr, (size_t)(colon - addr), atoi(colon + 1));
}

/* Count a redirect; a second with many is said in the log (slots are
 * moving, or the map is stale). */
static void count_redirect(struct cluster *c)
{
    uint64_t now = lw_clock_now();

    count_add(&c->ls->count.redirects, 1);
    if (now - c->storm_ns < 1000000000ull) {
        if (++c->storm == STORM_REDIRECTS)
            log_say(c->ls->log, LOG_REDIRECTS, LOG_WARN,
                    "cluster: %u MOVED/ASK redirects within a second: slots are moving",
                    STORM_REDIRECTS);
        return;
    }
    c->storm_ns = now;
    c->storm = 1;
}

/* MOVED: the slot is the target's now; patch the map at once and have the
 * whole map read soon.  ASK: this one request goes there, after ASKING. */
static int redirect(struct cluster *c, struct request *req, const char *msg)
{
    int ask = starts(msg, "ASK "), to = redirect_target(c, msg);
    struct link *l;

    count_redirect(c);
    if (to < 0 || ++req->redirects > MAX_REDIRECTS || !(l = link_of(c, (unsigned)to))) {
        links_complete(c->ls, req, NULL, LW_EUNSETTLED);
        return 1;
    }
    if (ask) {
        req->asking = 1;
        to_link(l, req, 1);
        return 1;
    }
    c->nodes[to].master = 1;
    c->map[(unsigned)atoi(msg + 6) % LW_CLUSTER_SLOTS] = (int16_t)to; /* "MOVED <slot> " */
    refresh_soon(c);
    route(&c->t, req, 1);
    return 1;
}

/* Replies that say the cluster is moving, not that the command failed. */
static int is_unsettled(const char *msg)
{
    return starts(msg, "TRYAGAIN") || starts(msg, "CLUSTERDOWN") || starts(msg, "LOADING") ||
           starts(msg, "READONLY") || starts(msg, "MASTERDOWN");
}

/* A request routed by slot answered MOVED, ASK or unsettled: routed again
 * from here; anything else is the caller's to read. */
static int link_error(struct topology *t, struct link *l, struct request *req,
                      const redisReply *reply)
{
    struct cluster *c = of(t);

    if (req->route != LW_ROUTE_SLOT)
        return 0; /* by node or unrouted: the caller reads the error */
    if (starts(reply->str, "MOVED ") || starts(reply->str, "ASK ")) {
        l->redirects++; /* counted on the node that answered it */
        return redirect(c, req, reply->str);
    }
    if (!is_unsettled(reply->str))
        return 0;
    if (!starts(reply->str, "TRYAGAIN"))
        refresh_soon(c); /* TRYAGAIN is a migration in progress: the map holds */
    retry_later(c, req);
    return 1;
}

/* A request lost with its connection: one routed by slot is sent again
 * (it may have run: route commands that are not safe to repeat by node). */
static void link_lost(struct topology *t, struct link *l, struct request *req, int err)
{
    (void)l;
    if (req->route == LW_ROUTE_SLOT &&
        (err == LW_ECONNLOST || err == LW_ECONNREFUSED || err == LW_ECONNECT))
        retry_later(of(t), req);
    else
        links_complete(t->ls, req, NULL, err);
}

static void link_down(struct topology *t, struct link *l, int err)
{
    (void)l;
    (void)err;
    refresh_soon(of(t)); /* a failover, perhaps */
}

/* A request that waited its whole time on a master that is not up: by
 * slot, the cluster was moving; else why that master could not be had. */
static int link_expired(struct topology *t, struct link *l, const struct request *req)
{
    (void)t;
    if (req->route == LW_ROUTE_SLOT)
        return LW_EUNSETTLED;
    return l->conn.last_err ? l->conn.last_err : LW_ETIMEDOUT;
}

/* --- the tick ----------------------------------------------------------- */

/* Requests with no route that waited their time: LW_EUNSETTLED once a map
 * is known, else why the topology could not be read. */
static void expire_pending(struct cluster *c, uint64_t now)
{
    struct fifo all = fifo_take(&c->pending);
    struct request *req;
    int err = c->have_map ? LW_EUNSETTLED : c->last_err ? c->last_err
                                                        : LW_ETIMEDOUT;

    while ((req = fifo_pop(&all))) {
        if (req->expires_ns <= now)
            links_complete(c->ls, req, NULL, err);
        else
            fifo_push(&c->pending, req);
    }
}

static void run_backoff(struct cluster *c, uint64_t now)
{
    struct fifo all = fifo_take(&c->backoff);
    struct request *req;

    while ((req = fifo_pop(&all))) {
        if (req->expires_ns <= now)
            links_complete(c->ls, req, NULL, LW_EUNSETTLED);
        else if (req->retry_ns <= now)
            route(&c->t, req, 1);
        else
            fifo_push(&c->backoff, req);
    }
}

/* A master serving slots has no connection: a failover may be under way,
 * and the sooner it is seen the sooner its slots are served again.  Its
 * link's reconnects, backing off to seconds, would ask too seldom. */
static int degraded(const struct cluster *c)
{
    for (unsigned i = 0; i < c->nnodes; i++)
        if (c->nodes[i].master && c->ls->links[i] && !link_is_up(c->ls->links[i]))
            return 1;
    return 0;
}

static void tick(struct topology *t, uint64_t now_ns)
{
    struct cluster *c = of(t);

    if (c->have_map && !c->querying && now_ns - c->read_ns >= DEGRADED_GAP_NS && degraded(c))
        send_query(c);
    if (c->querying && now_ns - c->query_ns >= c->ls->command_timeout_ns)
        conn_fail(&c->tconn, LW_ETIMEDOUT); /* that node hangs: ask another */
    if (!fifo_empty(&c->pending))
        expire_pending(c, now_ns);
    if (!fifo_empty(&c->backoff))
        run_backoff(c, now_ns);
}

static size_t held(const struct topology *t)
{
    return of(t)->pending.count + of(t)->backoff.count;
}

static int fails_at_once(const struct topology *t)
{
    return of(t)->fail_err;
}

/* --- life --------------------------------------------------------------- */

static void start(struct topology *t)
{
    struct cluster *c = of(t);

    ev_timer_start(c->ls->loop, &c->periodic);
    open_topology(c);
}

static void stop(struct topology *t)
{
    struct cluster *c = of(t);

    ev_timer_stop(c->ls->loop, &c->periodic);
    ev_timer_stop(c->ls->loop, &c->soon);
    ev_timer_stop(c->ls->loop, &c->reopen);
    conn_close(&c->tconn);
    links_fail_all(c->ls, &c->pending, LW_ESHUTDOWN);
    links_fail_all(c->ls, &c->backoff, LW_ESHUTDOWN);
}

static void free_cluster(struct topology *t)
{
    struct cluster *c = of(t);

    conn_clear(&c->tconn);
    for (unsigned i = 0; i < c->nseeds; i++)
        free(c->seed_host[i]);
    for (unsigned i = 0; i < c->nnodes; i++)
        free(c->nodes[i].host);
    free(c->nodes);
    free(c);
}

/* --- the questions -------------------------------------------------------- */

static int is_cluster(const struct topology *t)
{
    (void)t;
    return 1;
}

static int sharded(const struct topology *t)
{
    return of(t)->sharded;
}

static int slot_node(const struct topology *t, unsigned slot)
{
    return of(t)->map[slot % LW_CLUSTER_SLOTS];
}

static unsigned node_count(const struct topology *t)
{
    return of(t)->nnodes;
}

static unsigned master_count(const struct topology *t)
{
    const struct cluster *c = of(t);
    unsigned n = 0;

    for (unsigned i = 0; i < c->nnodes; i++)
        n += c->nodes[i].master != 0;
    return n ? n : 1;
}

static int node_addr(const struct topology *t, unsigned node, const char **host, int *port)
{
    const struct cluster *c = of(t);

    if (node >= c->nnodes)
        return LW_ERANGE;
    *host = c->nodes[node].host;
    *port = c->nodes[node].port;
    return 0;
}

static const struct topology_ops cluster_ops = {
    .start = start,
    .route = route,
    .held = held,
    .fails_at_once = fails_at_once,
    .tick = tick,
    .stop = stop,
    .free = free_cluster,
    .link_down = link_down,
    .link_error = link_error,
    .link_lost = link_lost,
    .link_expired = link_expired,
    .is_cluster = is_cluster,
    .sharded = sharded,
    .slot_node = slot_node,
    .node_count = node_count,
    .master_count = master_count,
    .node_addr = node_addr,
};

int cluster_new(const struct engine_config *cfg, struct link_set *ls,
                struct topology **out)
{
    struct cluster *c = calloc(1, sizeof *c);
    uint32_t period = cfg->topology_refresh_ms ? cfg->topology_refresh_ms
                                               : LW_ENGINE_DEFAULT_TOPOLOGY_REFRESH_MS;

    if (!c)
        return LW_ENOMEM;
    c->t.ops = &cluster_ops;
    c->t.ls = c->ls = ls;
    c->t.on_change = cfg->on_topology;
    c->t.change_arg = cfg->topology_arg;
    *out = ls->topo = &c->t;
    /* Each link has the configured cap, and all together twice that: a
     * master that stopped answering holds at most half of what the engine
     * lets out, until its commands time out.  No SELECT (links_select_db()):
     * a cluster has only db 0. */
    ls->max_inflight_all = 2 * ls->max_inflight;
    c->tconn.state = CONN_CLOSED; /* nothing to close or clear yet */
    c->rng = xorshift_seed((uint64_t)(uintptr_t)c ^ lw_clock_now());
    memset(c->map, 0xff, sizeof c->map); /* -1: unknown */
    memset(c->read, 0xff, sizeof c->read);
    ev_init(&c->soon, on_soon);
    c->soon.data = c;
    ev_init(&c->reopen, on_reopen);
    c->reopen.data = c;
    ev_timer_init(&c->periodic, on_periodic, period / 1000.0, period / 1000.0);
    c->periodic.data = c;
    for (; c->nseeds < cfg->nseeds; c->nseeds++)
        if (parse_addr(cfg->seeds[c->nseeds], &c->seed_host[c->nseeds],
                       &c->seed_port[c->nseeds]))
            return LW_ENOMEM;
    return 0;
}
