/*
 * core/channel.c - the pub/sub channel of a name with waiters, and its
 * line, for the waiters of every kind (waiters.c).  Who is woken, and
 * when, is theirs; this file keeps the subscription and the line.
 *
 * One record per channel with waiters, in the client's table by name,
 * following its subscription through the router (adapters/pubsub.h: one
 * pub/sub connection, or in a cluster one per master):
 *
 *   IDLE --SUBSCRIBE--> SUBSCRIBING --confirmed--> ACTIVE
 *     ^                                               |
 *     +------ confirmed <-- UNSUBSCRIBING <-----------+ (no waiters left)
 *
 * follow() moves a record along after every change: subscribe when it has
 * waiters and the connection is up, unsubscribe when it has none, free it
 * when idle and empty.  Never two commands for one channel on the wire at
 * once, so a confirmation always answers the one command.  A subscription
 * lost unasked (its connection went down, its slot moved to another
 * master) puts the record back to IDLE, and it subscribes again where the
 * channel lives now; its confirmation tells the class the channel is live,
 * for messages in between were lost.
 *
 * A record carries its class (struct channel_class): the waiters' file
 * says what a confirmation and a message do, and how its waiters stop.
 * So the router's events need no sorting by the channel's name: the
 * record found answers for its waiters.
 */
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "client_base.h"

enum channel_state { CH_IDLE,
                     CH_SUBSCRIBING,
                     CH_ACTIVE,
                     CH_UNSUBSCRIBING };

struct wait_channel *channel_find(struct lw_client *c, const char *name, size_t len)
{
    struct wait_channel *ch = NULL;

    HASH_FIND(hh, c->channels, name, len, ch);
    return ch;
}

/* Move ch towards what its waiters need.  ch may be freed. */
static void follow(struct lw_client *c, struct wait_channel *ch)
{
    if (ch->state == CH_IDLE && !lw_list_empty(&ch->line) && c->pubsub) {
        if (pubsub_subscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = CH_SUBSCRIBING;
    } else if (ch->state == CH_ACTIVE && lw_list_empty(&ch->line)) {
        if (c->pubsub && pubsub_unsubscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = CH_UNSUBSCRIBING;
        else
            ch->state = CH_IDLE;
    }
    if (ch->state == CH_IDLE && lw_list_empty(&ch->line)) {
        HASH_DEL(c->channels, ch);
        free(ch);
    }
    stats_subscriptions(&c->count, HASH_COUNT(c->channels));
}

void channel_settle(struct lw_client *c, const char *name, size_t len)
{
    struct wait_channel *ch = channel_find(c, name, len);

    if (ch)
        follow(c, ch);
}

void channel_append(struct wait_channel *ch, struct wait_link *l)
{
    lw_list_insert_tail(&ch->line, &l->node);
    l->chan = ch;
}

int channel_join(struct lw_client *c, const struct channel_class *cls, const char *name,
                 size_t len, struct wait_link *l)
{
    struct wait_channel *ch = channel_find(c, name, len);

    if (!ch) {
        if (!(ch = calloc(1, sizeof *ch + len)))
            return -1;
        ch->cls = cls;
        lw_list_init(&ch->line);
        ch->len = len;
        memcpy(ch->name, name, len);
        HASH_ADD(hh, c->channels, name, ch->len, ch);
    }
    channel_append(ch, l);
    follow(c, ch);
    return ch->state == CH_ACTIVE && channel_first(ch) == l;
}

int channel_remove(struct wait_link *l)
{
    int was_first = channel_first(l->chan) == l;

    lw_list_remove(&l->node);
    l->chan = NULL;
    return was_first;
}

void channel_on_event(void *arg, int event, const char *name, size_t len, const char *msg,
                      size_t msg_len)
{
    struct lw_client *c = arg;
    struct wait_channel *ch, *tmp;

    if (event == LW_PS_UP) { /* channels not subscribed may be now */
        HASH_ITER(hh, c->channels, ch, tmp)
            follow(c, ch);
        return;
    }
    if (!(ch = channel_find(c, name, len)))
        return;
    if (event == LW_PS_SUBSCRIBED && ch->state == CH_SUBSCRIBING) {
        ch->state = CH_ACTIVE;
        ch->cls->live(c, ch); /* may free ch */
    } else if (event == LW_PS_UNSUBSCRIBED && ch->state == CH_UNSUBSCRIBING) {
        ch->state = CH_IDLE;
    } else if (event == LW_PS_MESSAGE && ch->state == CH_ACTIVE) {
        ch->cls->message(c, ch, msg, msg_len); /* may free ch */
    } else if (event == LW_PS_LOST) {
        ch->state = CH_IDLE; /* subscribed again below, where it lives now */
    }
    channel_settle(c, name, len);
}

void channel_shutdown(struct lw_client *c)
{
    struct wait_channel *ch, *tmp;

    HASH_ITER(hh, c->channels, ch, tmp) {
        const struct channel_class *cls = ch->cls;
        struct wait_link *l = channel_first(ch), *next;

        for (; l; l = next) {
            next = channel_next(l);
            cls->stop(c, l); /* may free ch: the last waiter does */
        }
    }
    if (!c->wheel) {
        HASH_ITER(hh, c->channels, ch, tmp) {
            HASH_DEL(c->channels, ch);
            free(ch);
        }
    }
}
