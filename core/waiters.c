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
 * The waiters of a name form its queue, oldest first, and take turns:
 *
 *   - no barging inside the client: an acquire for a name on which this
 *     client has waiters already queues behind them without trying (unless
 *     its owner holds the lock: a reentrant acquire must not wait for
 *     waiters who wait for it);
 *   - one wake-up, not a herd: a message on the channel, or a confirmed
 *     (re)subscription, gives the head of the line its turn, and only
 *     the head: the first waiter, or, when it reads, every reader ahead of
 *     the first writer in line, whose attempts go out together; a waiter
 *     whose attempt is on the wire is marked `woken` and tries again when
 *     it fails;
 *   - the turn passes on: a first waiter that leaves without the lock (its
 *     time up, an error, the client stopping) gives the next its turn, so
 *     no wake-up is lost; one that got it leaves the next a retry timer a
 *     lease away, in case that lock ends without a word (a lease running
 *     out);
 *   - readers share: a reader that got the lock gives the turn to the
 *     readers now at the head (those that came while the others' attempts
 *     were out);
 *   - writers first inside the client: a reader never passes a writer
 *     waiting ahead of it, so while a writer of this client waits for a
 *     name, the client's new reads of it queue behind (a re-entrant read
 *     of an owner that reads it already passes, as any re-entry);
 *   - a hand-over: an unlock by this client of a lock whose first waiter
 *     waits (waiters_handoff()) moves the lock to that waiter in the same
 *     script (lock.c): the waiter never has to hear of the unlock.
 *
 * What a message says.  A lock's unlock publishes Redisson's 0; a
 * read-write lock's channel carries 0 when its last reader left (the name
 * is free) and 1 when a writer left (free, or still read by that writer:
 * a downgrade).  Read by the rule above, both wake the same waiters, so
 * the payload is not needed here: a 1 wakes the client's readers ahead of
 * its first waiting writer, or that writer when it heads the line; a 0
 * its oldest waiter, with the readers beside it when that one reads.  A
 * writer behind readers is not woken with them: their attempts go first on
 * the wire (one node, one connection, line order) and take the lock, so
 * its own could only fail; it gets its turn at their unlock.
 *
 * Only the first waiter keeps a timer at the holder's PTTL (expiries,
 * downgrades and a reader leaving others behind publish nothing); the
 * others' stand at their deadlines.  Messages lost while a subscription
 * was gone are made up for by the wake-up of the resubscription, and,
 * failing that, by the first waiter's timer.  Across clients nothing
 * changes: the lock stays unfair between them, as Redisson's RLock is.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "client_private.h"
#include "ops.h"
#include "waiters.h"

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

static struct channel *channel_of(struct lw_client *c, const struct lw_lock *lock)
{
    return find_channel(c, lock->channel, lock->channel_len);
}

/* Stand op's timer at at_ns, or its deadline when that comes first. */
static void arm(struct lw_client *c, struct op *op, uint64_t at_ns)
{
    lw_wheel_cancel(c->wheel, &op->ct.timer);
    if (op->wait_deadline_ns < at_ns)
        at_ns = op->wait_deadline_ns;
    if (at_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, at_ns);
}

static int reads(const struct op *op)
{
    return op->lock->kind == KIND_READ;
}

/* Mark op to try again now (appended to the batch *tail ends), or when
 * its attempt on the wire fails; one on its way to a hand-over waits for
 * that. */
static void take_turn(struct lw_client *c, struct op *op, struct op ***tail)
{
    if (op->state == OPS_INFLIGHT) {
        op->woken = 1;
    } else if (op->state == OPS_WAITING) {
        lw_wheel_cancel(c->wheel, &op->ct.timer);
        op->state = OPS_INFLIGHT; /* taken: not woken twice */
        op->wake_next = NULL;
        **tail = op;
        *tail = &op->wake_next;
    }
}

/*
 * The turn of the head of the line: the first waiter, or, when it reads,
 * every reader ahead of the first writer in line, at once (readers share;
 * those behind a writer stay behind it).  Their attempts go out in line
 * order and are the last thing done: an attempt may complete its op, and
 * free the channel; all are marked in flight before the first goes, so
 * that no completion in between wakes one twice.
 */
static void wake_turn(struct lw_client *c, struct channel *ch)
{
    struct op *op = ch->head, *batch = NULL, **tail = &batch, *next;

    if (!op || c->closing)
        return;
    if (!reads(op))
        take_turn(c, op, &tail);
    for (; op && reads(op); op = op->wnext)
        take_turn(c, op, &tail);
    for (; batch; batch = next) {
        next = batch->wake_next;
        batch->wake_next = NULL;
        op_attempt(batch);
    }
}

/* op, last in line. */
static void append(struct lw_client *c, struct channel *ch, struct op *op)
{
    op->wnext = NULL;
    op->wprev = ch->tail;
    if (ch->tail)
        ch->tail->wnext = op;
    else
        ch->head = op;
    ch->tail = op;
    op->chan = ch;
    stats_waiters(&c->count, 1);
}

int waiters_join(struct lw_client *c, struct op *op)
{
    const struct lw_lock *lock = op->lock;
    struct channel *ch = channel_of(c, lock);

    if (!ch) {
        ch = calloc(1, sizeof *ch + lock->channel_len);
        if (!ch)
            return -1;
        ch->len = lock->channel_len;
        memcpy(ch->name, lock->channel, ch->len);
        HASH_ADD(hh, c->channels, name, ch->len, ch);
    }
    append(c, ch, op);
    channel_sync(c, ch);
    return ch->state == CH_ACTIVE && ch->head == op;
}

int waiters_queue(struct lw_client *c, struct op *op)
{
    struct channel *ch = channel_of(c, op->lock);

    if (!ch || !ch->head)
        return 0;
    append(c, ch, op);
    op->state = OPS_WAITING;
    arm(c, op, UINT64_MAX); /* its deadline, if any */
    return 1;
}

int waiters_first(const struct op *op)
{
    return op->chan && op->chan->head == op;
}

void waiters_leave(struct lw_client *c, struct op *op, int acquired)
{
    struct channel *ch = op->chan;
    int was_first = ch->head == op;
    struct op *next;

    if ((op->state == OPS_WAITING || op->state == OPS_HANDOFF) && c->wheel)
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
    next = ch->head;
    if (was_first && next && acquired && reads(op) && reads(next) && c->wheel) {
        wake_turn(c, ch); /* readers share: the readers now first get in too */
    } else if (was_first && next && acquired && next->state == OPS_WAITING && c->wheel) {
        /* Its turn comes with that lock's unlock (a hand-over, or a
         * message); should that lock end unsaid (its lease run out), a try
         * a lease from now. */
        uint64_t lease_ms = op->lease_ms ? op->lease_ms : c->lease_ms;

        arm(c, next, lw_clock_now() + lease_ms * 1000000u + c->tick_ns);
    } else if (was_first && next && !acquired && c->wheel) {
        wake_turn(c, ch); /* the turn passes on */
    }
    if ((ch = channel_of(c, op->lock)))
        channel_sync(c, ch);
}

struct op *waiters_handoff(struct lw_client *c, const struct lw_lock *lock)
{
    struct channel *ch = channel_of(c, lock);
    struct op *op = ch ? ch->head : NULL;

    if (!op || op->state != OPS_WAITING || c->replicas || c->closing ||
        lw_clock_now() >= op->wait_deadline_ns)
        return NULL;
    lw_wheel_cancel(c->wheel, &op->ct.timer);
    op->state = OPS_HANDOFF;
    return op;
}

void waiters_unreserve(struct lw_client *c, struct op *op)
{
    op->state = OPS_INFLIGHT;
    if (c->closing)
        op_complete(op, LW_ESHUTDOWN, 0);
    else if (lw_clock_now() >= op->wait_deadline_ns)
        op_complete(op, LW_ELOCKED, 0);
    else
        op_attempt(op); /* the lock may be free, or held on: it asks */
}

void waiters_on_event(void *arg, int event, const char *name, size_t len, const char *msg,
                      size_t msg_len)
{
    struct lw_client *c = arg;
    struct channel *ch, *tmp;

    (void)msg; /* a 0 and a 1 wake the same waiters: see the head comment */
    (void)msg_len;
    if (event == LW_PS_UP) { /* channels not subscribed may be now */
        HASH_ITER(hh, c->channels, ch, tmp)
            channel_sync(c, ch);
        return;
    }
    if (!(ch = find_channel(c, name, len)))
        return;
    if (event == LW_PS_SUBSCRIBED && ch->state == CH_SUBSCRIBING) {
        ch->state = CH_ACTIVE;
        wake_turn(c, ch); /* unlocks before the subscription went unheard */
    } else if (event == LW_PS_UNSUBSCRIBED && ch->state == CH_UNSUBSCRIBING) {
        ch->state = CH_IDLE;
    } else if (event == LW_PS_MESSAGE && ch->state == CH_ACTIVE) {
        wake_turn(c, ch);
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

    HASH_ITER(hh, c->channels, ch, tmp) {
        struct op *op = ch->head, *next;

        for (; op; op = next) {
            next = op->wnext;
            if (op->state == OPS_WAITING || op->state == OPS_HANDOFF)
                op_complete(op, LW_ESHUTDOWN, 0); /* may free ch: the last op does */
        }
    }
    if (!c->wheel) {
        HASH_ITER(hh, c->channels, ch, tmp) {
            HASH_DEL(c->channels, ch);
            free(ch);
        }
    }
}
