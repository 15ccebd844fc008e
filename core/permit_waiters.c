/*
 * core/permit_waiters.c - acquires waiting for permits, on the
 * semaphore's channel ("redisson_sc:{name}").
 *
 * The same scheme as waiters.c for locks, without hand-overs: one record
 * per channel with waiters, following its subscription
 * (IDLE -> SUBSCRIBING -> ACTIVE -> UNSUBSCRIBING -> IDLE), and the
 * waiters of a name in a line, oldest first:
 *
 *   - an acquire for a name this client already waits on queues behind
 *     the waiters without trying (no barging inside the client: a stream
 *     of single-permit acquires cannot starve a waiter that wants three);
 *   - a message (a release or a reclaim published the count), or a
 *     confirmed (re)subscription, sends the first waiter's attempt; one
 *     whose attempt is on the wire is marked woken and tries again when it
 *     fails;
 *   - whoever leaves the head of the line, with permits or without, wakes
 *     the next: with permits left over it gets them at once, without, its
 *     attempt answers the nearest expiry, where it sets its timer.  So a
 *     message carrying k permits serves up to k waiters, one attempt
 *     after another, each waking the next, and never more attempts than
 *     waiters served plus one;
 *   - only the first waiter keeps a timer at the nearest expiry its
 *     attempt was answered (an expiry publishes nothing: the next acquire
 *     reclaims it); the others' stand at their deadlines.
 *
 * The router (adapters/pubsub.h) reports a message without its payload,
 * which is why the count a message carries is not read: the line above
 * gets the same waiters served.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "semaphore_private.h"

enum sem_channel_state { SCH_IDLE,
                         SCH_SUBSCRIBING,
                         SCH_ACTIVE,
                         SCH_UNSUBSCRIBING };

struct sem_channel {
    UT_hash_handle hh;
    struct sem_op *head, *tail;
    int state; /* enum sem_channel_state */
    size_t len;
    char name[];
};

static struct sem_channel *find_channel(struct lw_client *c, const char *name, size_t len)
{
    struct sem_channel *ch = NULL;

    HASH_FIND(hh, c->sem_channels, name, len, ch);
    return ch;
}

static struct sem_channel *channel_of(struct lw_client *c, const struct lw_semaphore *sem)
{
    return find_channel(c, sem->channel, sem->channel_len);
}

/* Move ch towards what its waiters need.  ch may be freed. */
static void channel_sync(struct lw_client *c, struct sem_channel *ch)
{
    if (ch->state == SCH_IDLE && ch->head && c->pubsub) {
        if (lw_pubsub_subscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = SCH_SUBSCRIBING;
    } else if (ch->state == SCH_ACTIVE && !ch->head) {
        if (c->pubsub && lw_pubsub_unsubscribe(c->pubsub, ch->name, ch->len) == 0)
            ch->state = SCH_UNSUBSCRIBING;
        else
            ch->state = SCH_IDLE;
    }
    if (ch->state == SCH_IDLE && !ch->head) {
        HASH_DEL(c->sem_channels, ch);
        free(ch);
    }
}

/* The first waiter tries now, or again when its attempt on the wire
 * fails.  The attempt is the last thing done: it may free the channel. */
static void wake_first(struct lw_client *c, struct sem_channel *ch)
{
    struct sem_op *op = ch->head;

    if (!op || c->closing)
        return;
    if (op->state == SOPS_INFLIGHT) {
        op->woken = 1;
    } else if (op->state == SOPS_WAITING) {
        lw_wheel_cancel(c->wheel, &op->ct.timer);
        op->state = SOPS_INFLIGHT;
        sem_attempt(op);
    }
}

static void append(struct sem_channel *ch, struct sem_op *op)
{
    op->wnext = NULL;
    op->wprev = ch->tail;
    if (ch->tail)
        ch->tail->wnext = op;
    else
        ch->head = op;
    ch->tail = op;
    op->chan = ch;
}

int permit_waiters_join(struct lw_client *c, struct sem_op *op)
{
    const struct lw_semaphore *sem = op->sem;
    struct sem_channel *ch = channel_of(c, sem);

    if (!ch) {
        ch = calloc(1, sizeof *ch + sem->channel_len);
        if (!ch)
            return -1;
        ch->len = sem->channel_len;
        memcpy(ch->name, sem->channel, ch->len);
        HASH_ADD(hh, c->sem_channels, name, ch->len, ch);
    }
    append(ch, op);
    channel_sync(c, ch);
    return ch->state == SCH_ACTIVE && ch->head == op;
}

int permit_waiters_queue(struct lw_client *c, struct sem_op *op)
{
    struct sem_channel *ch = channel_of(c, op->sem);

    if (!ch || !ch->head)
        return 0;
    append(ch, op);
    op->state = SOPS_WAITING;
    if (op->wait_deadline_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, op->wait_deadline_ns);
    return 1;
}

int permit_waiters_first(const struct sem_op *op)
{
    return op->chan && op->chan->head == op;
}

void permit_waiters_leave(struct lw_client *c, struct sem_op *op)
{
    struct sem_channel *ch = op->chan;
    int was_first = ch->head == op;

    if (op->state == SOPS_WAITING && c->wheel)
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
    if (was_first && ch->head && c->wheel)
        wake_first(c, ch); /* the turn passes on */
    if ((ch = channel_of(c, op->sem)))
        channel_sync(c, ch);
}

void permit_waiters_on_event(void *arg, int event, const char *name, size_t len)
{
    struct lw_client *c = arg;
    struct sem_channel *ch, *tmp;

    if (event == LW_PS_UP) {
        HASH_ITER(hh, c->sem_channels, ch, tmp)
            channel_sync(c, ch);
        return;
    }
    if (!(ch = find_channel(c, name, len)))
        return;
    if (event == LW_PS_SUBSCRIBED && ch->state == SCH_SUBSCRIBING) {
        ch->state = SCH_ACTIVE;
        wake_first(c, ch); /* releases before the subscription went unheard */
    } else if (event == LW_PS_UNSUBSCRIBED && ch->state == SCH_UNSUBSCRIBING) {
        ch->state = SCH_IDLE;
    } else if (event == LW_PS_MESSAGE && ch->state == SCH_ACTIVE) {
        wake_first(c, ch);
    } else if (event == LW_PS_LOST) {
        ch->state = SCH_IDLE;
    }
    if ((ch = find_channel(c, name, len)))
        channel_sync(c, ch);
}

void permit_waiters_shutdown(struct lw_client *c)
{
    struct sem_channel *ch, *tmp;

    HASH_ITER(hh, c->sem_channels, ch, tmp) {
        struct sem_op *op = ch->head, *next;

        for (; op; op = next) {
            next = op->wnext;
            if (op->state == SOPS_WAITING)
                sem_complete(op, LW_ESHUTDOWN, 0); /* may free ch */
        }
    }
    if (!c->wheel) {
        HASH_ITER(hh, c->sem_channels, ch, tmp) {
            HASH_DEL(c->sem_channels, ch);
            free(ch);
        }
    }
}
