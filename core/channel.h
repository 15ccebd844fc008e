/*
 * core/channel.h - channel.c's calls: the pub/sub channel of a name that
 * has waiters, and their line, for the waiters of every kind
 * (waiters.c).
 */
#ifndef LW_CORE_CHANNEL_H
#define LW_CORE_CHANNEL_H

#include <stddef.h>

#include <uthash.h>

#include "queue.h"

struct lw_client;
struct wait_channel;

/* A waiter's place in its channel's line, in its struct waiter
 * (waiters.h; found from it by lw_container_of). */
struct wait_link {
    struct lw_list node;       /* in its channel's line */
    struct lw_qnode wake;      /* in a batch being woken (waiters.c) */
    struct wait_channel *chan; /* NULL: in no line */
};

/* What a channel's waiters do at its events: their file's rules. */
struct channel_class {
    /* The subscription is confirmed, first or again: releases before it
     * went unheard, so someone must ask. */
    void (*live)(struct lw_client *c, struct wait_channel *ch);
    /* A message, its payload msg (len bytes; NULL when none). */
    void (*message)(struct lw_client *c, struct wait_channel *ch, const char *msg, size_t len);
    /* The client stops: end the waiter of l if it waits (this may leave
     * the line, and free the channel). */
    void (*stop)(struct lw_client *c, struct wait_link *l);
};

struct wait_channel {
    UT_hash_handle hh;
    const struct channel_class *cls;
    struct lw_list line; /* the waiters (wait_link.node), oldest first */
    int state;           /* channel.c's */
    size_t len;
    char name[];
};

/* The first waiter in ch's line, or NULL when it has none. */
static inline struct wait_link *channel_first(const struct wait_channel *ch)
{
    return lw_item_of(lw_list_first(&ch->line), struct wait_link, node);
}

/* The waiter after l (in a line) in its line, or NULL when l is the last. */
static inline struct wait_link *channel_next(const struct wait_link *l)
{
    return lw_item_of(lw_list_next(&l->chan->line, &l->node), struct wait_link, node);
}

/* The channel named so, or NULL when it has no waiters. */
struct wait_channel *channel_find(struct lw_client *c, const char *name, size_t len);
/* l joins the line of the channel named so, created (for cls) when
 * missing, and the channel is subscribed when it is not: 1 when the
 * subscription is live and l is first (ask now: a release may have gone
 * unheard), 0 to wait, -1 out of memory (l in no line). */
int channel_join(struct lw_client *c, const struct channel_class *cls, const char *name,
                 size_t len, struct wait_link *l);
/* l, last in line of ch (which has waiters). */
void channel_append(struct wait_channel *ch, struct wait_link *l);
/* l leaves its line; 1 when it was first.  The channel stays until
 * channel_settle(). */
int channel_remove(struct wait_link *l);
/* The channel named so, if any, follows its waiters: subscribed while it
 * has some, unsubscribed and freed when none are left. */
void channel_settle(struct lw_client *c, const char *name, size_t len);
/* The client's pub/sub events (adapters/pubsub.h's pubsub_fn), for
 * every channel: its class is told. */
void channel_on_event(void *arg, int event, const char *name, size_t len, const char *msg,
                      size_t msg_len);
/* Stop the waiters (engine thread, closing), or, once the engine is gone
 * (c->wheel NULL), free what is left. */
void channel_shutdown(struct lw_client *c);

#endif
