/*
 * core/publish.c - the command unlock scripts publish with, "publish" or
 * "spublish": the lock calls (lock.c) and the watchdog's drops
 * (watchdog.c) both release locks and tell the waiters so.
 *
 * Below every other file of core/ but the leaves: it reads the client's
 * pub/sub router and configuration and calls nothing of core/, so the
 * files that publish need not call back up into client.c, which starts
 * the router.  Engine thread.
 */
#include "client_base.h"
#include "publish.h"

/* Unlock messages go out the way waiters listen: the pub/sub router decides
 * whether they listen sharded (in a cluster: ON, or AUTO once the cluster
 * has said it has sharded pub/sub, as Redisson's shardedSubscriptionMode).
 * Before the router exists, the same rule from the configuration. */
const char *client_publish_command(const struct lw_client *c)
{
    int sharded = c->pubsub ? pubsub_is_sharded(c->pubsub)
                            : c->cluster && c->sharded_pubsub != LW_SHARDED_OFF &&
                                  (c->sharded_pubsub == LW_SHARDED_ON ||
                                   engine_sharded_pubsub(c->engine));

    return sharded ? "spublish" : "publish";
}
