/*
 * adapters/topology.c - what the topologies share (see topology.h): which
 * one a config asks for, the call that tells the engine's user of a
 * change, and the behaviour of a topology with one link and one node (a
 * single Redis, and Sentinel's master, which moves but is still one).
 *
 * With one link, the engine's status follows its main connection: 0 once
 * set up, else why its last attempt failed.  Before a first connection was
 * ever set up, a failure that waiting will not mend (nothing listens, no
 * such socket, a wrong password: conn_fails_at_once()) fails the requests
 * waiting on the link at once, instead of after the command timeout; but
 * not those whose caller's wait goes on through a Redis down or starting
 * (links_fail_all(), request_waits_through()).
 */
#include "engine.h"
#include "link.h"
#include "topology.h"

/* The implementations, by the config that asks for them. */
struct kind {
    int (*check)(const struct engine_config *cfg);
    int (*check_host)(const struct engine_config *cfg); /* NULL: 0 */
    int (*make)(const struct engine_config *cfg, struct link_set *ls,
                struct topology **out);
};

static const struct kind single_kind = {single_check, single_check_host, single_new};
static const struct kind sentinel_kind = {sentinel_check, NULL, sentinel_new};
static const struct kind cluster_kind = {cluster_check, NULL, cluster_new};

/* Seeds and sentinels in one config ask for two topologies: refused, where
 * choosing one would drop the other's settings without a word. */
static int both_check(const struct engine_config *cfg)
{
    (void)cfg;
    return LW_EINVAL;
}

static int both_new(const struct engine_config *cfg, struct link_set *ls,
                    struct topology **out)
{
    (void)cfg, (void)ls, (void)out;
    return LW_EINVAL; /* never reached: both_check() refused the config */
}

static const struct kind both_kind = {both_check, NULL, both_new};

static const struct kind *kind_of(const struct engine_config *cfg)
{
    if (cfg->nseeds && cfg->nsentinels)
        return &both_kind;
    return cfg->nseeds ? &cluster_kind : cfg->nsentinels ? &sentinel_kind
                                                         : &single_kind;
}

int topology_check(const struct engine_config *cfg)
{
    return kind_of(cfg)->check(cfg);
}

int topology_check_host(const struct engine_config *cfg)
{
    const struct kind *k = kind_of(cfg);

    return k->check_host ? k->check_host(cfg) : 0;
}

int topology_new(const struct engine_config *cfg, struct link_set *ls,
                 struct topology **out)
{
    return kind_of(cfg)->make(cfg, ls, out);
}

void topology_tell(struct topology *t, const struct topology_change *change)
{
    if (!t->on_change)
        return;
    t->ls->in_callback++;
    t->on_change(change, t->change_arg);
    t->ls->in_callback--;
}

void one_link_up(struct topology *t, struct link *l)
{
    if (!l->is_side) /* the engine's status is its main connection's */
        atomic_store_explicit(&t->ls->status, 0, memory_order_relaxed);
}

void one_link_down(struct topology *t, struct link *l, int err)
{
    int fail;

    if (!l->is_side)
        atomic_store_explicit(&t->ls->status, err, memory_order_relaxed);
    if (!atomic_load_explicit(t->ls->closing, memory_order_relaxed) &&
        (fail = conn_fails_at_once(&l->conn))) {
        links_fail_all(t->ls, &l->urgent, fail);
        links_fail_all(t->ls, &l->waiting, fail);
    }
}

int one_link_expired(struct topology *t, struct link *l, const struct request *req)
{
    int err = atomic_load_explicit(&t->ls->status, memory_order_relaxed);

    (void)l;
    (void)req;
    return err ? err : LW_ETIMEDOUT;
}

int one_node_is_cluster(const struct topology *t)
{
    (void)t;
    return 0;
}

int one_node_slot_node(const struct topology *t, unsigned slot)
{
    (void)t;
    (void)slot;
    return 0;
}

unsigned one_node_count(const struct topology *t)
{
    (void)t;
    return 1;
}
