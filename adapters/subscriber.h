/*
 * adapters/subscriber.h - one pub/sub connection, on the engine's loop.
 *
 * Lock and permit waiters listen for release messages here, and read
 * what a message says (its payload comes with LW_SUB_MESSAGE).  The subscriber only
 * carries SUBSCRIBE, UNSUBSCRIBE and the messages; which channels should
 * be subscribed is its user's business (core/ keeps a channel per lock
 * with waiters).  Everything runs on the engine thread, including
 * sub_new() and sub_free().
 *
 * Connection life (conn.h): connect, AUTH when there is a password, PING;
 * the PING's reply makes it UP.  A failure, or no PING reply within the connect
 * timeout, drops the connection and tries again after a jittered,
 * doubling back-off.  Going down forgets every subscription (the event
 * LW_SUB_DOWN says so); after the next LW_SUB_UP the user subscribes again.
 * Messages published while it was down are lost: users must check again
 * whatever they were waiting for.
 *
 * Sharded pub/sub (Redis 7: SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH) rides on
 * the same connection: its confirmations and messages come as the same
 * events.  A cluster node drops a sharded subscription by itself when the
 * channel's slot leaves it (an "sunsubscribe" nobody asked for:
 * LW_SUB_LOST), and answers SSUBSCRIBE for a slot it does not serve with
 * MOVED (LW_SUB_MOVED).  Either way the channel is not subscribed here.
 */
#ifndef LW_ADAPTERS_SUBSCRIBER_H
#define LW_ADAPTERS_SUBSCRIBER_H

#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"

struct ev_loop;
struct sub;

enum sub_event {
    LW_SUB_UP,           /* connected: subscribe what you need */
    LW_SUB_DOWN,         /* disconnected: every subscription is gone */
    LW_SUB_SUBSCRIBED,   /* the server confirmed SUBSCRIBE channel */
    LW_SUB_UNSUBSCRIBED, /* the server confirmed UNSUBSCRIBE channel */
    LW_SUB_MESSAGE,      /* a message was published on channel: detail
                            is its payload, detail_len bytes */
    LW_SUB_LOST,         /* the server dropped the sharded subscription
                            (the channel's slot left the node) */
    LW_SUB_MOVED,        /* SSUBSCRIBE answered MOVED: detail is
                            "host:port" of the slot's node */
    LW_SUB_ERROR,        /* another error reply to a (un)subscribe: detail
                            is the message; the channel is not subscribed */
};

/* channel is NULL for UP and DOWN.  detail is NULL but for MESSAGE (the
 * payload: detail_len bytes, any bytes, not terminated), MOVED and ERROR
 * (a C string, detail_len its length); valid during the call only. */
typedef void sub_fn(void *arg, int event, const char *channel, size_t len,
                    const char *detail, size_t detail_len);

struct sub_config {
    const struct endpoint *ep; /* credentials, timeouts, back-off, and the
                                  address unless host is set; it must
                                  outlive the subscriber */
    const char *host;          /* another address (a cluster node), or NULL */
    int port;                  /* with host; 0: host is a unix socket's path */
    struct ev_loop *loop;
    sub_fn *on_event;
    void *arg;
    /* Asked before each attempt where to connect (conn.h's where hook), so
     * that a reconnect goes to the master of the moment (Sentinel); NULL:
     * always the address above. */
    int (*where)(void *arg, const char **host, int *port);
    void *where_arg;
};

/* sub_new - copy cfg (validated by the caller) and start connecting.
 * Returns 0, LW_ENOMEM. */
int sub_new(const struct sub_config *cfg, struct sub **out);

/* sub_free - close the connection; no event runs after.  NULL ignored. */
void sub_free(struct sub *sub);

/* sub_is_up - 1 between LW_SUB_UP and LW_SUB_DOWN. */
int sub_is_up(const struct sub *sub);

/* sub_subscribe, sub_unsubscribe - send the command; its
 * confirmation comes as an event.  Returns 0, or LW_ECONNLOST when not up
 * (or the write failed: LW_SUB_DOWN follows), LW_ENOMEM. */
int sub_subscribe(struct sub *sub, const char *channel, size_t len);
int sub_unsubscribe(struct sub *sub, const char *channel, size_t len);

/* sub_ssubscribe, sub_sunsubscribe - the same, sharded. */
int sub_ssubscribe(struct sub *sub, const char *channel, size_t len);
int sub_sunsubscribe(struct sub *sub, const char *channel, size_t len);

/* sub_follow - the node to be on is host:port now (port 0: a unix
 * socket; Sentinel named another master): when the subscriber is
 * elsewhere, or held by its where hook, it reconnects at once (its
 * subscriptions are lost: LW_SUB_DOWN when it was up). */
void sub_follow(struct sub *sub, const char *host, int port);

#endif
