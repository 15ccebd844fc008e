/*
 * adapters/single.c - one Redis at a fixed address: the simplest topology
 * (see topology.h).  One link, node 0, to the endpoint's address; every
 * request goes there.  Its link's reports are topology.c's one-link ones.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"
#include "link.h"
#include "topology.h"

struct single {
    struct topology t;
    struct link *link;
};

static struct link *link_of(const struct topology *t)
{
    return ((const struct single *)t)->link;
}

static void start(struct topology *t)
{
    link_connect(link_of(t));
}

static void route(struct topology *t, struct request *req, int front)
{
    link_queue(link_of(t), req, front);
}

static size_t held(const struct topology *t)
{
    (void)t;
    return 0; /* nothing outside its link */
}

static int fails_at_once(const struct topology *t)
{
    return conn_fails_at_once(&link_of(t)->conn);
}

static void stop(struct topology *t)
{
    (void)t; /* it holds nothing: the link is the engine's to close */
}

static void free_single(struct topology *t)
{
    free(t);
}

static int node_addr(const struct topology *t, unsigned node, const char **host, int *port)
{
    const struct endpoint *ep = t->ls->ep;

    if (node != 0)
        return LW_ERANGE;
    *host = ep->unix_path ? ep->unix_path : ep->host;
    *port = ep->unix_path ? 0 : ep->port;
    return 0;
}

static const struct topology_ops single_ops = {
    .start = start,
    .route = route,
    .held = held,
    .fails_at_once = fails_at_once,
    .stop = stop,
    .free = free_single,
    .link_up = one_link_up,
    .link_down = one_link_down,
    .link_expired = one_link_expired,
    .is_cluster = one_node_is_cluster,
    .sharded = one_node_is_cluster,
    .slot_node = one_node_slot_node,
    .node_count = one_node_count,
    .master_count = one_node_count,
    .node_addr = node_addr,
};

int single_check(const struct engine_config *cfg)
{
    return endpoint_check_address(&cfg->node);
}

/* RFC 6761: names under .invalid never resolve; say so without a query. */
static int is_invalid_name(const char *host)
{
    size_t n = strlen(host);

    while (n && host[n - 1] == '.')
        n--;
    return n >= 8 && !strncasecmp(host + n - 8, ".invalid", 8);
}

int single_check_host(const struct engine_config *cfg)
{
    return !cfg->node.unix_path && is_invalid_name(cfg->node.host) ? LW_ENOHOST : 0;
}

int single_new(const struct engine_config *cfg, struct link_set *ls,
               struct topology **out)
{
    struct single *s = calloc(1, sizeof *s);

    (void)cfg;
    if (!s)
        return LW_ENOMEM;
    s->t.ops = &single_ops;
    s->t.ls = ls;
    *out = ls->topo = &s->t;
    if (links_select_db(ls) || links_reserve(ls, 1) || !(s->link = link_new(ls, 0, NULL, 0)))
        return LW_ENOMEM;
    return 0;
}
