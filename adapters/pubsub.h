/*
 * adapters/pubsub.h - the release-message router: which pub/sub connection
 * each channel is subscribed on.
 *
 * Outside a cluster, and in a cluster with sharded pub/sub off, there is
 * one subscriber and plain SUBSCRIBE (in a cluster PUBLISH reaches every
 * node, so any node will do).  Where nodes are, and which serves a slot,
 * the topology says (topology.h's questions): the engine's, the same
 * table its requests are routed by.  In sharded mode there is one subscriber per
 * master that has channels, and each channel is SSUBSCRIBEd on the master
 * serving its slot (keyslot of the channel name).  The user (core's
 * waiters) keeps its own per-channel state, as it did on one subscriber,
 * and sees events per channel:
 *
 *   LW_PS_UP            a connection came up: subscribe the channels that
 *                       are not (calls that returned LW_ECONNLOST)
 *   LW_PS_SUBSCRIBED    the channel's subscription is confirmed
 *   LW_PS_UNSUBSCRIBED  its unsubscription is confirmed
 *   LW_PS_MESSAGE       a message on it, with its payload (what the
 *                       publisher said: a lock's 0 or 1, a semaphore's
 *                       count)
 *   LW_PS_LOST          it is no longer subscribed, unasked: its connection
 *                       went down, its slot moved (an unsolicited
 *                       sunsubscribe, MOVED, a new slot map), or an error.
 *                       Messages may have been missed; subscribe again
 *                       (it goes where the channel lives now) and check
 *                       again what was waited for.
 *
 * Everything runs on the engine thread, pubsub_new() and
 * pubsub_free() included.
 */
#ifndef LW_ADAPTERS_PUBSUB_H
#define LW_ADAPTERS_PUBSUB_H

#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"

struct ev_loop;
struct engine;
struct pubsub;
struct topology;

enum pubsub_event {
    LW_PS_UP,
    LW_PS_SUBSCRIBED,
    LW_PS_UNSUBSCRIBED,
    LW_PS_MESSAGE,
    LW_PS_LOST,
};

/* channel is NULL for LW_PS_UP.  msg is the payload of LW_PS_MESSAGE,
 * msg_len bytes (not terminated, valid during the call only; NULL when the
 * server sent none), NULL for the other events. */
typedef void pubsub_fn(void *arg, int event, const char *channel, size_t len,
                       const char *msg, size_t msg_len);

struct pubsub_config {
    struct engine *engine; /* its loop, topology and endpoint, unless
                              given below; may be NULL when they are */
    struct ev_loop *loop;  /* NULL: the engine's */
    /* Where channels live: the slot map, each node's address, whether the
     * cluster has sharded pub/sub (the questions of topology.h).  NULL: the
     * engine's.  A test may give a table of its own with just the
     * questions.  It must outlive the router. */
    const struct topology *topology;
    /* How subscribers connect: credentials, timeouts, back-off (the
     * address is the topology's node's).  NULL: the engine's endpoint;
     * else copied. */
    const struct endpoint *endpoint;
    int sharded; /* enum lw_sharded_mode */
    pubsub_fn *on_event;
    void *arg;
};

/* pubsub_new - copy cfg (validated by the caller).  Outside a cluster
 * the one subscriber starts connecting (to node 0's address, asked again
 * before every attempt: Sentinel's master moves); in a cluster a
 * subscriber connects when a channel first needs it.  Returns 0,
 * LW_ENOMEM. */
int pubsub_new(const struct pubsub_config *cfg, struct pubsub **out);

/* pubsub_free - close every connection; no event runs after.  NULL
 * ignored.  Not from inside one of its events. */
void pubsub_free(struct pubsub *ps);

/* pubsub_subscribe, pubsub_unsubscribe - send SUBSCRIBE or
 * SSUBSCRIBE (UNSUBSCRIBE, SUNSUBSCRIBE) on the channel's connection; the
 * confirmation comes as an event.  Returns 0, or LW_ECONNLOST when that
 * connection is not up (or the slot map is not known yet): LW_PS_UP
 * follows when it is worth trying again.  LW_ENOMEM. */
int pubsub_subscribe(struct pubsub *ps, const char *channel, size_t len);
int pubsub_unsubscribe(struct pubsub *ps, const char *channel, size_t len);

/* pubsub_topology_changed - the engine has a new slot map: channels
 * whose slot now lives on another master are LW_PS_LOST (and so
 * resubscribed there); a change of sharded mode (AUTO learning that the
 * cluster has sharded pub/sub) moves every channel. */
void pubsub_topology_changed(struct pubsub *ps);

/* pubsub_is_sharded - 1 when channels are SSUBSCRIBEd (or about to be:
 * AUTO decides by the engine's latest map), so unlocks must SPUBLISH. */
int pubsub_is_sharded(const struct pubsub *ps);

/* pubsub_channel_node - the node a channel is subscribed (or being
 * subscribed) on, or -1 when it is not; the single subscriber outside a
 * cluster is -2.  For tests and stats. */
int pubsub_channel_node(const struct pubsub *ps, const char *channel, size_t len);

#endif
