/*
 * adapters/topology.h - what the engine does not know: where a request
 * goes.  One table of operations, three implementations:
 *
 *   single.c    one Redis at a fixed address: one link, node 0;
 *   sentinel.c  one Redis whose address Sentinel names, and which moves
 *               at a failover: one link, node 0, held while asking;
 *   cluster.c   a Redis Cluster: a link per master, the slot map, MOVED,
 *               ASK and the unsettled retries.
 *
 * The engine (engine.c) calls only through the table: start, route each
 * request it takes in, tick, stop, free, and the questions; it makes its
 * topology with topology_new(), which picks the implementation.  A link
 * (link.c) reports through it what it cannot decide alone.  A topology
 * calls down into link.c (making links, queueing requests on them) and
 * completes requests through the link set; neither the links nor their
 * connections (conn.c) know which topology they serve.  The pub/sub
 * router (pubsub.c) asks the same questions of the same table, so one
 * interface tells both where a slot lives.
 *
 * Every entry runs on the engine thread, but the constructors.  Every
 * entry must be set but these, which may be NULL (each says what NULL
 * means, and its caller checks): tick, link_where, link_up, link_down,
 * link_error, link_lost; and link_demoted, for a topology that never sets
 * the link set's check_role.
 */
#ifndef LW_ADAPTERS_TOPOLOGY_H
#define LW_ADAPTERS_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"

struct link;
struct link_set;
struct engine_config;
struct topology;
struct topology_change;

struct topology_ops {
    /* --- What the engine asks. --- */

    /* Start connecting (engine thread, before any request is routed). */
    void (*start)(struct topology *t);
    /* Take a request in: queue it on a link (first in line when front: it
     * comes back from a redirect or a retry), hold it until there is one,
     * or complete it (a node that is no master).  The engine pumps the
     * links after. */
    void (*route)(struct topology *t, struct request *req, int front);
    /* Requests held outside the links (for the stats' `waiting`). */
    size_t (*held)(const struct topology *t);
    /* Why a request taken in now fails at once (no first connection can
     * be had: refused, no such socket, wrong password), or 0.  The engine
     * takes in one that waits through it (request_waits_through()). */
    int (*fails_at_once)(const struct topology *t);
    /* Every tick: expire and retry what it holds, look after its maps.
     * NULL: nothing to do. */
    void (*tick)(struct topology *t, uint64_t now_ns);
    /* Shutting down: fail what it holds with LW_ESHUTDOWN, close its own
     * connections (the links are the engine's to close). */
    void (*stop)(struct topology *t);
    /* Free it (after stop, the links closed; before the links are freed). */
    void (*free)(struct topology *t);

    /* --- What a link reports. --- */

    /* Where l connects now (its conn.h where hook): 0 with the address
     * set, or 1 to hold the link until link_connect().  NULL: the address
     * it was made with. */
    int (*link_where)(struct topology *t, struct link *l, const char **host, int *port);
    /* l's set-up is done: requests flow.  NULL: nothing to do. */
    void (*link_up)(struct topology *t, struct link *l);
    /* l's connection attempt failed or its connection was lost (err), after
     * its requests in flight were reported (link_lost).  NULL: nothing to
     * do. */
    void (*link_down)(struct topology *t, struct link *l, int err);
    /* A user's request answered with an error: 1 when the topology took it
     * over (a redirect, a retry, or completed it otherwise), 0 to complete
     * it with the reply.  NULL: 0. */
    int (*link_error)(struct topology *t, struct link *l, struct request *req,
                      const redisReply *reply);
    /* A user's request lost with l's connection (err): retried or
     * completed.  NULL: completed with err. */
    void (*link_lost)(struct topology *t, struct link *l, struct request *req, int err);
    /* Why a request that waited its whole time on l, which is not up,
     * fails. */
    int (*link_expired)(struct topology *t, struct link *l, const struct request *req);
    /* l's node says it is no master (its ROLE in the set-up, asked only
     * when the set's check_role is set).  Required with check_role; NULL
     * without, since it is never called. */
    void (*link_demoted)(struct topology *t, struct link *l);

    /* --- The questions (also the pub/sub router's). --- */

    /* 1 when sharded by slot: a Redis Cluster. */
    int (*is_cluster)(const struct topology *t);
    /* 1 when the cluster has sharded pub/sub (it answered CLUSTER SHARDS). */
    int (*sharded)(const struct topology *t);
    /* The node serving slot by the current map, -1 while unknown. */
    int (*slot_node)(const struct topology *t, unsigned slot);
    /* Node indexes in use so far. */
    unsigned (*node_count)(const struct topology *t);
    /* Nodes serving slots by the current map, at least 1. */
    unsigned (*master_count)(const struct topology *t);
    /* A node's address: 0, LW_ERANGE for an unknown node, LW_EUNSETTLED
     * while not known (Sentinel before a master is named).  Port 0: host
     * is a unix socket's path.  Valid until the topology changes. */
    int (*node_addr)(const struct topology *t, unsigned node, const char **host, int *port);
};

/* Each implementation's state starts with this. */
struct topology {
    const struct topology_ops *ops;
    struct link_set *ls; /* the engine's links; NULL for a map only */
    void (*on_change)(const struct topology_change *change,
                      void *arg); /* the engine config's on_topology */
    void *change_arg;
};

/*
 * topology_check - the config's topology, by its fields (seeds: a cluster;
 * sentinels: Sentinel; else one Redis): its part of the config is sound.
 * Seeds and sentinels together: LW_EINVAL.  0, LW_EINVAL, LW_ERANGE.
 */
int topology_check(const struct engine_config *cfg);

/*
 * topology_check_host - after the whole config was checked: LW_ENOHOST
 * when the topology's address is a name that can never resolve (one
 * Redis under RFC 6761's .invalid), said at once without a query; else 0.
 * (Seeds and sentinels are asked in the background: a name of theirs that
 * does not resolve fails an attempt, as any other failure does.)
 */
int topology_check_host(const struct engine_config *cfg);

/*
 * topology_new - make the config's topology over the engine's link set
 * (its endpoint copied already), with its first links.  What the links'
 * set-up and caps take from the topology it sets on the set here: the cap
 * on all links together (max_inflight_all, one link's unless raised),
 * SELECT (links_select_db(), for nodes that have databases), ROLE
 * (check_role).  *out (and the
 * set's topo, where the links report) is set as soon as the state exists,
 * so that even on failure its free entry frees what was made.  0 or
 * LW_ENOMEM.
 */
int topology_new(const struct engine_config *cfg, struct link_set *ls,
                 struct topology **out);

/* The implementations' own, which topology_check() and topology_new()
 * choose between. */
int single_check(const struct engine_config *cfg);
int single_check_host(const struct engine_config *cfg);
int single_new(const struct engine_config *cfg, struct link_set *ls,
               struct topology **out);
int sentinel_check(const struct engine_config *cfg);
int sentinel_new(const struct engine_config *cfg, struct link_set *ls,
                 struct topology **out);
int cluster_check(const struct engine_config *cfg);
int cluster_new(const struct engine_config *cfg, struct link_set *ls,
                struct topology **out);

/* topology.c: what the implementations share. */

/* Tell the engine's user of a change (on_topology), as a callback. */
void topology_tell(struct topology *t, const struct topology_change *change);

/* The reports of a topology with one link (single node, Sentinel): the
 * engine's status follows the main link; before a first connection was set
 * up, a failure a wait will not mend fails the requests waiting on it;
 * a request that waited its whole time fails with the status. */
void one_link_up(struct topology *t, struct link *l);
void one_link_down(struct topology *t, struct link *l, int err);
int one_link_expired(struct topology *t, struct link *l, const struct request *req);

/* The questions of a topology with one node, 0, for all slots. */
int one_node_is_cluster(const struct topology *t);
int one_node_slot_node(const struct topology *t, unsigned slot);
unsigned one_node_count(const struct topology *t);

#endif
