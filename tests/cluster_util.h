/*
 * tests/cluster_util.h - what the tests on a private Redis Cluster
 * (redis_cluster.h) share: a client config seeded with one node, and who
 * serves each slot.
 */
#ifndef LW_TESTS_CLUSTER_UTIL_H
#define LW_TESTS_CLUSTER_UTIL_H

#include <stdio.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <leasewheel/lock.h>

#include "redis_cluster.h"

/* A client config for cl seeded with node `via` alone (it finds the rest),
 * 10 ms ticks, a 5 s command timeout.  One seed at a time per test file:
 * the seed's storage is the file's. */
static inline void cluster_client_config(struct lw_client_config *cfg,
                                         const struct redis_cluster *cl, int via)
{
    static char seed[32];
    static const char *seeds[1] = {seed};

    snprintf(seed, sizeof seed, "127.0.0.1:%d", cl->node[via].port);
    lw_client_config_init(cfg);
    cfg->cluster_seeds = seeds;
    cfg->cluster_nseeds = 1;
    cfg->tick_ms = 10;
    cfg->command_timeout_ms = 5000;
}

/* owner_of[slot]: the node that serves it in node `ask`'s view (CLUSTER
 * SLOTS), -1 for none. */
static inline void cluster_slot_owners(struct redis_cluster *cl, int ask, int *owner_of)
{
    redisReply *r = redis_cluster_command(cl, ask, "CLUSTER SLOTS");

    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s++)
        owner_of[s] = -1;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        int node = redis_cluster_node_by_port(cl, (int)e->element[2]->element[1]->integer);

        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            owner_of[s] = node;
    }
    freeReplyObject(r);
}

#endif
