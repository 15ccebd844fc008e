/*
 * core/waiters.c - acquires waiting for an unlock, on the lock's channel.
 *
 * One channel record per lock name with waiters, holding them in a list
 * and following its subscription through the router (adapters/pubsub.h:
 * one pub/sub connection, or in a cluster one per master):
 *
 *   IDLE --SUBSCRIBE--> SUBSCRIBING --confirmed--> ACTIVE
 *     ^                                               |
 *     +------ confirmed <-- UNSUBSCRIBING <-----------+ (no waiters left)
 *
 * channel_sync() moves a record along after every change: subscribe when
 * it has waiters and the connection is up, unsubscribe when it has none,
 * free it when idle and empty.  Never two commands for one channel on the
 * wire at once, so a confirmation always answers the one command.  A
 * subscription lost unasked (its connection went down, its slot moved to
 * another master) puts the record back to IDLE, and it subscribes again
 * where the channel lives now.
 *
 * Every message on a channel, and every (re)subscription, wakes all its
 * waiters: each tries again.  Waking all rather than one costs attempts
 * under heavy contention, but no wake-up can be lost to a waiter that
 * gives up or fails at the same moment.  An attempt already on the wire
 * when the message comes is marked `woken` and retried when it fails.
 * Messages lost while a subscription was gone are made up for by the
 * wake-up of the resubscription, and, failing that, by each waiter's
 * timer at the holder's PTTL.
 */
#include <stdlib.h>
#include <string.h>

#include "client_private.h"

enum channel_state { CH_IDLE,
                     CH_SUBSCRIBING,
                     CH_ACTIVE,
                     CH_UNSUBSCRIBING };

struct channel {
    UT_hash_handle hh;
    struct op *head, *tail; /* waiters, oldest first */
    int state;              /* enum channel_state */
    size_t len;
    char name[];
};

static struct channel *find_channel(struct lw_client *c, const char *name, size_t len)
{
    struct channel *ch = NULL;

    HASH_FIND(hh, c->channels, name, len, ch);
    return ch;
}

static void publish_counts(struct lw_client *c)
{
    stats_subscriptions(&c->count, HASH_COUNT(c->channels));
}

/* Move ch towards what its waiters need.  ch may be freed. */
static void channel_sync(struct lw_client *c, struct channel *ch)
{
    if (ch->state == CH_IDLE && ch->head && c->pubsub) {
        if (lw_pubsub_subscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = CH_SUBSCRIBING;
    } else if (ch->state == CH_ACTIVE && !ch->head) {
        if (c->pubsub && lw_pubsub_unsubscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = CH_UNSUBSCRIBING;
        else
            ch->state = CH_IDLE;
    }
    if (ch->state == CH_IDLE && !ch->head) {
        HASH_DEL(c->channels, ch);
        free(ch);
    }
    publish_counts(c);
}

int waiters_join(struct lw_client *c, struct op *op)
{
    const struct lw_lock *lock = op->lock;
    struct channel *ch = find_channel(c, lock->channel, lock->channel_len);

    if (!ch) {
        ch = calloc(1, sizeof *ch + lock->channel_len);
        if (!ch)
            return -1;
        ch->len = lock->channel_len;
        memcpy(ch->name, lock->channel, ch->len);
        HASH_ADD(hh, c->channels, name, ch->len, ch);
    }
    op->wnext = NULL;
    op->wprev = ch->tail;
    if (ch->tail)
        ch->tail->wnext = op;
    else
        ch->head = op;
    ch->tail = op;
    op->chan = ch;
    stats_waiters(&c->count, 1);
    channel_sync(c, ch);
    return ch->state == CH_ACTIVE;
}

void waiters_leave(struct lw_client *c, struct op *op)
{
    struct channel *ch = op->chan;

    if (op->state == OPS_WAITING && c->wheel)
        lw_wheel_cancel(c->wheel, &op->ct.timer);
    if (op->wprev)
        op->wprev->wnext = op->wnext;
    else
        ch->head = op->wnext;
    if (op->wnext)
        op->wnext->wprev = op->wprev;
    else
        ch->tail = op->wprev;
    op->chan = NULL;
    op->wnext = op->wprev = NULL;
    stats_waiters(&c->count, -1);
    channel_sync(c, ch);
}

/* Every waiter tries again.  The attempts are sent after the walk: a send
 * that fails completes its op, which leaves (and may free) the channel. */
static void wake_all(struct channel *ch)
{
    struct op *batch = NULL, *op;

    for (op = ch->head; op; op = op->wnext) {
        if (op->state == OPS_INFLIGHT) {
            op->woken = 1;
        } else if (op->state == OPS_WAITING) {
            struct lw_wheel *wheel = op->lock->client->wheel;

            lw_wheel_cancel(wheel, &op->ct.timer);
            op->state = OPS_INFLIGHT; /* taken: not woken twice */
            op->wake_next = batch;
            batch = op;
        }
    }
    while ((op = batch)) {
        batch = op->wake_next;
        op_attempt(op);
    }
}

void waiters_on_event(void *arg, int event, const char *name, size_t len)
{
    struct lw_client *c = arg;
    struct channel *ch, *tmp;

    if (event == LW_PS_UP) { /* channels not subscribed may be now */
        HASH_ITER(hh, c->channels, ch, tmp)
        channel_sync(c, ch);
        return;
    }
    if (!(ch = find_channel(c, name, len)))
        return;
    if (event == LW_PS_SUBSCRIBED && ch->state == CH_SUBSCRIBING) {
        ch->state = CH_ACTIVE;
        wake_all(ch); /* unlocks before the subscription went unheard */
    } else if (event == LW_PS_UNSUBSCRIBED && ch->state == CH_UNSUBSCRIBING) {
        ch->state = CH_IDLE;
    } else if (event == LW_PS_MESSAGE && ch->state == CH_ACTIVE) {
        wake_all(ch);
    } else if (event == LW_PS_LOST) {
        ch->state = CH_IDLE; /* subscribed again below, where it lives now */
    }
    if ((ch = find_channel(c, name, len)))
        channel_sync(c, ch);
}

/* Fail the waiting acquires (engine thread, closing), or, once the engine
 * is gone (c->wheel NULL), free what is left. */
void waiters_shutdown(struct lw_client *c)
{
    struct channel *ch, *tmp;

    HASH_ITER(hh, c->channels, ch, tmp)
    {
        struct op *op = ch->head, *next;

        for (; op; op = next) {
            next = op->wnext;
            if (op->state == OPS_WAITING)
                op_complete(op, LW_ESHUTDOWN, 0); /* may free ch: the last op does */
        }
    }
    if (!c->wheel) {
        HASH_ITER(hh, c->channels, ch, tmp)
        {
            HASH_DEL(c->channels, ch);
            free(ch);
        }
    }
}
