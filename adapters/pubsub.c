/*
 * adapters/pubsub.c - the release-message router (see pubsub.h).
 *
 * A route is a channel that is subscribed, or being subscribed or
 * unsubscribed, on one subscriber (a node_sub).  Events of a subscriber
 * count only for the routes on it: a late confirmation from a connection
 * the channel has left since is ignored.
 *
 * Moving a channel is always the same: drop its route and tell the user
 * LW_PS_LOST; the user subscribes again, and the new route goes where the
 * slot map (or a MOVED just seen) says the channel lives.  Routes are
 * dropped first and the user told after, because the user's subscribe
 * adds routes while we would still be walking them.
 *
 * In a cluster subscribers are created when a channel needs one (outside
 * one, the one subscriber connects at once) and freed only on a new slot
 * map (when they carry no channel and are down) or with the router: never
 * from inside one of their own events.
 */
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <uthash.h>

#include <leasewheel/error.h>
#include <leasewheel/lock.h>

#include "engine.h"
#include "pubsub.h"
#include "queue.h"
#include "subscriber.h"
#include "topology.h"

#define NODE_SINGLE (-2) /* the one subscriber outside a cluster */
#define HOLD_S 0.1       /* how long a channel refused by its node waits */

struct node_sub {
    struct pubsub *ps;
    struct sub *sub;
    int node;        /* engine node index, or NODE_SINGLE */
    int sharded;     /* SSUBSCRIBE on it, or SUBSCRIBE */
    unsigned routes; /* channels on it */
};

struct route {
    UT_hash_handle hh;
    struct lw_qnode qnode; /* in a list of routes dropped, or held */
    struct node_sub *ns;   /* NULL while held */
    int unsubscribing;
    size_t len;
    char name[];
};

struct pubsub {
    const struct topology *topo; /* where channels live */
    const struct endpoint *ep;   /* how subscribers connect */
    struct endpoint own_ep;      /* a copy of the config's, if it gave one */
    struct ev_loop *loop;
    int mode;                /* enum lw_sharded_mode */
    int sharded;             /* the mode in force */
    struct node_sub *plain;  /* the one subscriber when not sharded */
    struct node_sub **nodes; /* sharded: by engine node index */
    unsigned nnodes;
    struct route *routes; /* by channel name */
    struct lw_slist held; /* routes refused by their node: LOST when hold ends */
    int16_t *hint;        /* slot -> node + 1 that a MOVED named */
    ev_timer hold;
    ev_timer recheck; /* the mode is to change: a new map, soon */
    pubsub_fn *on_event;
    void *arg;
};

/* The topology's questions. */
static int is_cluster(const struct pubsub *ps)
{
    return ps->topo->ops->is_cluster(ps->topo);
}

static int slot_node(const struct pubsub *ps, unsigned slot)
{
    return ps->topo->ops->slot_node(ps->topo, slot);
}

static unsigned node_count(const struct pubsub *ps)
{
    return ps->topo->ops->node_count(ps->topo);
}

static int node_addr(const struct pubsub *ps, unsigned node, const char **host, int *port)
{
    return ps->topo->ops->node_addr(ps->topo, node, host, port);
}

static int want_sharded(const struct pubsub *ps)
{
    if (!is_cluster(ps) || ps->mode == LW_SHARDED_OFF)
        return 0;
    if (ps->mode == LW_SHARDED_ON)
        return 1;
    return ps->topo->ops->sharded(ps->topo);
}

static struct route *find_route(const struct pubsub *ps, const char *name, size_t len)
{
    struct route *r = NULL;

    HASH_FIND(hh, ps->routes, name, len, r);
    return r;
}

static void tell(struct pubsub *ps, int event, const char *name, size_t len)
{
    ps->on_event(ps->arg, event, name, len, NULL, 0);
}

/* Take r out of the map and off its subscriber (it is not freed). */
static void unroute(struct pubsub *ps, struct route *r)
{
    HASH_DEL(ps->routes, r);
    if (r->ns)
        r->ns->routes--;
    r->ns = NULL;
}

/* The route first in a list of them, taken off it; NULL: none. */
static struct route *pop_route(struct lw_slist *list)
{
    return lw_item_of(lw_slist_pop(list), struct route, qnode);
}

/* Tell LW_PS_LOST for each dropped route, freeing them. */
static void tell_lost(struct pubsub *ps, struct lw_slist list)
{
    struct route *r;

    while ((r = pop_route(&list))) {
        tell(ps, LW_PS_LOST, r->name, r->len);
        free(r);
    }
}

static void on_sub_event(void *arg, int event, const char *name, size_t len,
                         const char *detail, size_t detail_len);

/* Outside a cluster the one subscriber goes where node 0 is, asked again
 * before every attempt: Sentinel's master moves, and until one is named
 * the subscriber is held. */
static int node0_where(void *arg, const char **host, int *port)
{
    struct pubsub *ps = arg;

    return node_addr(ps, 0, host, port) ? 1 : 0;
}

/* A subscriber for node (NODE_SINGLE: node 0 of a topology that is no
 * cluster). */
static struct node_sub *new_node_sub(struct pubsub *ps, int node)
{
    struct node_sub *ns = calloc(1, sizeof *ns);
    struct sub_config sc = {
        .ep = ps->ep,
        .loop = ps->loop,
        .on_event = on_sub_event,
        .arg = ns,
    };

    if (!ns)
        return NULL;
    if (node == NODE_SINGLE) {
        sc.where = node0_where;
        sc.where_arg = ps;
        if (node_addr(ps, 0, &sc.host, &sc.port)) /* not known yet: held */
            sc.host = NULL;
    } else if (node_addr(ps, (unsigned)node, &sc.host, &sc.port)) {
        free(ns);
        return NULL;
    }
    ns->ps = ps;
    ns->node = node;
    ns->sharded = ps->sharded;
    if (sub_new(&sc, &ns->sub)) {
        free(ns);
        return NULL;
    }
    return ns;
}

static void free_node_sub(struct pubsub *ps, struct node_sub *ns)
{
    if (!ns)
        return;
    if (ns == ps->plain)
        ps->plain = NULL;
    else if (ns->node >= 0 && (unsigned)ns->node < ps->nnodes)
        ps->nodes[ns->node] = NULL;
    sub_free(ns->sub);
    free(ns);
}

/* The sharded subscriber of node, created when missing. */
static struct node_sub *node_sub_of(struct pubsub *ps, int node)
{
    struct node_sub **nodes;

    if ((unsigned)node >= ps->nnodes) {
        if (!(nodes = realloc(ps->nodes, (node + 1u) * sizeof *nodes)))
            return NULL;
        memset(nodes + ps->nnodes, 0, (node + 1u - ps->nnodes) * sizeof *nodes);
        ps->nodes = nodes;
        ps->nnodes = node + 1u;
    }
    if (!ps->nodes[node])
        ps->nodes[node] = new_node_sub(ps, node);
    return ps->nodes[node];
}

static int has_subscribers(const struct pubsub *ps)
{
    for (unsigned i = 0; i < ps->nnodes; i++)
        if (ps->nodes[i])
            return 1;
    return ps->plain != NULL;
}

/*
 * AUTO learns whether the cluster has sharded pub/sub with its first map,
 * which need not differ from any before it, so no new map may ever be
 * reported.  Check at each subscribe: with no subscriber yet the mode
 * just changes; otherwise the channels move as on a new map, from the
 * loop (not from inside the user's call), and this subscribe waits for
 * the LW_PS_UP that follows.  0 when the mode in force is the right one.
 */
static int mode_settled(struct pubsub *ps)
{
    int sharded = want_sharded(ps);

    if (sharded == ps->sharded)
        return 1;
    if (!has_subscribers(ps) && !ps->routes && lw_slist_empty(&ps->held)) {
        ps->sharded = sharded;
        return 1;
    }
    if (!ev_is_active(&ps->recheck)) {
        ev_timer_set(&ps->recheck, 0.0, 0.0);
        ev_timer_start(ps->loop, &ps->recheck);
    }
    return 0;
}

static void on_recheck(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    pubsub_topology_changed(w->data);
}

/* Where a channel is to be subscribed now, or NULL (no map yet, the mode
 * about to change, no memory).  Not sharded, in a cluster: the master of
 * slot 0, any master would do. */
static struct node_sub *sub_for_channel(struct pubsub *ps, const char *name, size_t len)
{
    unsigned slot;
    int node;

    if (!mode_settled(ps))
        return NULL;
    if (!ps->sharded) {
        if (!ps->plain) {
            node = is_cluster(ps) ? slot_node(ps, 0) : NODE_SINGLE;
            if (node != -1)
                ps->plain = new_node_sub(ps, node);
        }
        return ps->plain;
    }
    slot = keyslot(name, len);
    node = ps->hint && ps->hint[slot] ? ps->hint[slot] - 1 : slot_node(ps, slot);
    return node < 0 ? NULL : node_sub_of(ps, node);
}

int pubsub_subscribe(struct pubsub *ps, const char *name, size_t len)
{
    struct node_sub *ns;
    struct route *r = find_route(ps, name, len);
    int rc;

    if (r)
        return r->unsubscribing ? LW_ECONNLOST : 0; /* on its way already */
    if (!(ns = sub_for_channel(ps, name, len)) || !sub_is_up(ns->sub))
        return LW_ECONNLOST;
    rc = ns->sharded ? sub_ssubscribe(ns->sub, name, len)
                     : sub_subscribe(ns->sub, name, len);
    if (rc)
        return rc;
    if (!(r = calloc(1, sizeof *r + len)))
        return LW_ENOMEM; /* its confirmation will be ignored */
    r->ns = ns;
    r->len = len;
    memcpy(r->name, name, len);
    HASH_ADD(hh, ps->routes, name, r->len, r);
    ns->routes++;
    return 0;
}

/* Ask r's subscriber to drop it; the answer is not waited for. */
static int send_unsubscribe(struct route *r)
{
    struct node_sub *ns = r->ns;

    if (!ns || !sub_is_up(ns->sub))
        return LW_ECONNLOST;
    return ns->sharded ? sub_sunsubscribe(ns->sub, r->name, r->len)
                       : sub_unsubscribe(ns->sub, r->name, r->len);
}

int pubsub_unsubscribe(struct pubsub *ps, const char *name, size_t len)
{
    struct route *r = find_route(ps, name, len);
    int rc;

    if (!r)
        return LW_ECONNLOST;
    if ((rc = send_unsubscribe(r))) {
        unroute(ps, r);
        free(r);
        return rc;
    }
    r->unsubscribing = 1;
    return 0;
}

/* Drop every route on ns (or every route, ns NULL) into a list. */
static struct lw_slist drop_routes(struct pubsub *ps, const struct node_sub *ns)
{
    struct route *r, *tmp;
    struct lw_slist list = {0};

    HASH_ITER(hh, ps->routes, r, tmp) {
        if (ns && r->ns != ns)
            continue;
        unroute(ps, r);
        lw_slist_push(&list, &r->qnode);
    }
    return list;
}

/* Remember the node a MOVED named ("host:port"), when the engine knows
 * it and it is not where we asked.  0 when remembered. */
static int note_moved(struct pubsub *ps, const struct node_sub *ns, const char *name,
                      size_t len, const char *addr)
{
    const char *colon = strrchr(addr, ':'), *host;
    unsigned n = node_count(ps);
    int port;

    if (!colon || (!ps->hint && !(ps->hint = calloc(LW_CLUSTER_SLOTS, sizeof *ps->hint))))
        return -1;
    for (unsigned i = 0; i < n; i++) {
        if (node_addr(ps, i, &host, &port) || (int)i == ns->node)
            continue;
        if (port == atoi(colon + 1) && strlen(host) == (size_t)(colon - addr) &&
            !memcmp(host, addr, (size_t)(colon - addr))) {
            ps->hint[keyslot(name, len)] = (int16_t)(i + 1);
            return 0;
        }
    }
    return -1;
}

/* The node refused r: hold it a while before it is tried again, so that
 * a node that keeps refusing is not asked in a tight loop. */
static void hold(struct pubsub *ps, struct route *r)
{
    unroute(ps, r);
    lw_slist_push(&ps->held, &r->qnode);
    if (!ev_is_active(&ps->hold)) {
        ev_timer_set(&ps->hold, HOLD_S, 0.0);
        ev_timer_start(ps->loop, &ps->hold);
    }
}

static void on_hold_over(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct pubsub *ps = w->data;

    (void)loop;
    (void)revents;
    tell_lost(ps, lw_slist_take(&ps->held));
}

/* A channel event of ns's: only for a route on ns.  detail: a message's
 * payload (detail_len bytes), MOVED's address, an error's text. */
static void on_channel_event(struct node_sub *ns, int event, const char *name, size_t len,
                             const char *detail, size_t detail_len)
{
    struct pubsub *ps = ns->ps;
    struct route *r = find_route(ps, name, len);
    struct lw_slist lost = {0};

    if (!r || r->ns != ns)
        return;
    switch (event) {
    case LW_SUB_SUBSCRIBED:
        if (!r->unsubscribing)
            tell(ps, LW_PS_SUBSCRIBED, name, len);
        return;
    case LW_SUB_MESSAGE:
        if (!r->unsubscribing)
            ps->on_event(ps->arg, LW_PS_MESSAGE, name, len, detail, detail_len);
        return;
    case LW_SUB_UNSUBSCRIBED:
        if (!r->unsubscribing)
            return;
        unroute(ps, r);
        free(r);
        tell(ps, LW_PS_UNSUBSCRIBED, name, len);
        return;
    case LW_SUB_MOVED:
        if (note_moved(ps, ns, name, len, detail) == 0)
            break; /* where it lives is known: at once */
        hold(ps, r);
        return;
    case LW_SUB_ERROR:
        hold(ps, r);
        return;
    }
    unroute(ps, r); /* LW_SUB_LOST, or MOVED to a known node */
    lw_slist_push(&lost, &r->qnode);
    tell_lost(ps, lost);
}

static void on_sub_event(void *arg, int event, const char *name, size_t len,
                         const char *detail, size_t detail_len)
{
    struct node_sub *ns = arg;

    if (event == LW_SUB_UP)
        tell(ns->ps, LW_PS_UP, NULL, 0);
    else if (event == LW_SUB_DOWN)
        tell_lost(ns->ps, drop_routes(ns->ps, ns));
    else
        on_channel_event(ns, event, name, len, detail, detail_len);
}

/* A subscriber that carries no channel and is not up (its node may be
 * gone for good) goes, or every one without a channel when the mode
 * changed.  One that is up stays: a new map may come every refresh, and
 * reconnecting each time would cost more than an idle connection.  On a
 * new map only: never inside their events. */
static int idle(const struct node_sub *ns, int all)
{
    return ns && !ns->routes && (all || !sub_is_up(ns->sub));
}

static void free_idle(struct pubsub *ps, int all)
{
    for (unsigned i = 0; i < ps->nnodes; i++)
        if (idle(ps->nodes[i], all))
            free_node_sub(ps, ps->nodes[i]);
    if (idle(ps->plain, all))
        free_node_sub(ps, ps->plain);
}

/* Sharded: drop the routes whose slot now lives elsewhere, unsubscribing
 * them where they were (best effort: that node may be gone). */
static struct lw_slist drop_moved(struct pubsub *ps)
{
    struct route *r, *tmp;
    struct lw_slist list = {0};

    HASH_ITER(hh, ps->routes, r, tmp) {
        int node = slot_node(ps, keyslot(r->name, r->len));

        if (node < 0 || node == r->ns->node)
            continue;
        if (!r->unsubscribing)
            send_unsubscribe(r);
        unroute(ps, r);
        lw_slist_push(&list, &r->qnode);
    }
    return list;
}

/* Not sharded, in a cluster: a subscriber that is down while its node
 * serves slot 0 no more (failed over, gone) moves to the one that does. */
static struct lw_slist drop_stale_plain(struct pubsub *ps)
{
    struct lw_slist none = {0};
    int node;

    if (!ps->plain || ps->plain->node == NODE_SINGLE || sub_is_up(ps->plain->sub))
        return none;
    node = slot_node(ps, 0);
    if (node < 0 || node == ps->plain->node)
        return none;
    return drop_routes(ps, ps->plain);
}

/* Outside a cluster (Sentinel): node 0, a master named for the first
 * time or another one: the one subscriber follows (its channels are lost
 * when it moves, and so subscribed again on the new master). */
static void follow_node0(struct pubsub *ps)
{
    const char *host;
    int port;

    if (ps->plain && node_addr(ps, 0, &host, &port) == 0)
        sub_follow(ps->plain->sub, host, port);
}

void pubsub_topology_changed(struct pubsub *ps)
{
    int sharded = want_sharded(ps), flipped = sharded != ps->sharded;
    struct lw_qnode *n;
    struct lw_slist list;

    if (!is_cluster(ps)) {
        follow_node0(ps);
        tell(ps, LW_PS_UP, NULL, 0);
        return;
    }

    if (ps->hint)
        memset(ps->hint, 0, LW_CLUSTER_SLOTS * sizeof *ps->hint);
    if (flipped) {
        list = drop_routes(ps, NULL);
        for (n = lw_slist_first(&list); n; n = lw_qnode_next(n))
            lw_item_of(n, struct route, qnode)->ns = NULL;
        ps->sharded = sharded;
    } else {
        list = sharded ? drop_moved(ps) : drop_stale_plain(ps);
    }
    free_idle(ps, flipped); /* before the user subscribes again */
    tell_lost(ps, list);
    tell(ps, LW_PS_UP, NULL, 0); /* the map may have just become known */
}

int pubsub_is_sharded(const struct pubsub *ps)
{
    return want_sharded(ps);
}

int pubsub_channel_node(const struct pubsub *ps, const char *name, size_t len)
{
    const struct route *r = find_route(ps, name, len);

    return r && r->ns ? r->ns->node : -1;
}

int pubsub_new(const struct pubsub_config *cfg, struct pubsub **out)
{
    struct pubsub *ps = calloc(1, sizeof *ps);
    int failed = 0;

    if (!ps)
        return LW_ENOMEM;
    ps->topo = cfg->topology ? cfg->topology : engine_topology(cfg->engine);
    ps->loop = cfg->loop ? cfg->loop : engine_loop(cfg->engine);
    if (cfg->endpoint) {
        failed = endpoint_copy(&ps->own_ep, cfg->endpoint) != 0;
        ps->ep = &ps->own_ep;
    } else {
        ps->ep = engine_endpoint(cfg->engine);
    }
    ps->mode = cfg->sharded;
    ps->sharded = want_sharded(ps);
    ps->on_event = cfg->on_event;
    ps->arg = cfg->arg;
    ev_init(&ps->hold, on_hold_over);
    ps->hold.data = ps;
    ev_init(&ps->recheck, on_recheck);
    ps->recheck.data = ps;
    /* One Redis: connect at once, as the one subscriber always has, so
     * that the first waiter does not wait for the connection as well. */
    if (!failed && !is_cluster(ps) && !(ps->plain = new_node_sub(ps, NODE_SINGLE)))
        failed = 1;
    if (failed) {
        pubsub_free(ps);
        return LW_ENOMEM;
    }
    *out = ps;
    return 0;
}

static void free_list(struct lw_slist list)
{
    struct route *r;

    while ((r = pop_route(&list)))
        free(r);
}

void pubsub_free(struct pubsub *ps)
{
    if (!ps)
        return;
    ev_timer_stop(ps->loop, &ps->hold);
    ev_timer_stop(ps->loop, &ps->recheck);
    free_list(drop_routes(ps, NULL));
    free_list(lw_slist_take(&ps->held));
    for (unsigned i = 0; i < ps->nnodes; i++)
        free_node_sub(ps, ps->nodes[i]);
    free_node_sub(ps, ps->plain);
    free(ps->nodes);
    free(ps->hint);
    endpoint_clear(&ps->own_ep);
    free(ps);
}
