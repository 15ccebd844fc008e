/*
 * core/waiters.c - acquires waiting for an unlock, on the lock's channel.
 *
 * The channel and its line are channel.c's (one subscription per name
 * with waiters, shared by them, and its state); this file says who in the
 * line is woken, and when (the class `lock_waiters` below).
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

#include "channel.h"
#include "client_private.h"
#include "container.h"
#include "ops.h"
#include "waiters.h"

static const struct channel_class lock_waiters;

static struct op *op_of(struct wait_link *l)
{
    return l ? lw_container_of(l, struct op, wait) : NULL;
}

static struct wait_channel *channel_of(struct lw_client *c, const struct lw_lock *lock)
{
    return channel_find(c, lock->channel, lock->channel_len);
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
static void take_turn(struct lw_client *c, struct op *op, struct wait_link ***tail)
{
    if (op->state == OPS_INFLIGHT) {
        op->woken = 1;
    } else if (op->state == OPS_WAITING) {
        lw_wheel_cancel(c->wheel, &op->ct.timer);
        op->state = OPS_INFLIGHT; /* taken: not woken twice */
        op->wait.wake_next = NULL;
        **tail = &op->wait;
        *tail = &op->wait.wake_next;
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
static void wake_turn(struct lw_client *c, struct wait_channel *ch)
{
    struct op *op = op_of(ch->head);
    struct wait_link *batch = NULL, **tail = &batch, *next;

    if (!op || c->closing)
        return;
    if (!reads(op))
        take_turn(c, op, &tail);
    for (; op && reads(op); op = op_of(op->wait.next))
        take_turn(c, op, &tail);
    for (; batch; batch = next) {
        next = batch->wake_next;
        batch->wake_next = NULL;
        op_attempt(op_of(batch));
    }
}

int waiters_join(struct lw_client *c, struct op *op)
{
    const struct lw_lock *lock = op->lock;
    int live = channel_join(c, &lock_waiters, lock->channel, lock->channel_len, &op->wait);

    if (live >= 0)
        stats_waiters(&c->count, 1);
    return live;
}

int waiters_queue(struct lw_client *c, struct op *op)
{
    struct wait_channel *ch = channel_of(c, op->lock);

    if (!ch || !ch->head)
        return 0;
    channel_append(ch, &op->wait);
    stats_waiters(&c->count, 1);
    op->state = OPS_WAITING;
    arm(c, op, UINT64_MAX); /* its deadline, if any */
    return 1;
}

int waiters_first(const struct op *op)
{
    return op->wait.chan && op->wait.chan->head == &op->wait;
}

void waiters_leave(struct lw_client *c, struct op *op, int acquired)
{
    struct wait_channel *ch = op->wait.chan;
    int was_first;
    struct op *next;

    if ((op->state == OPS_WAITING || op->state == OPS_HANDOFF) && c->wheel)
        lw_wheel_cancel(c->wheel, &op->ct.timer);
    was_first = channel_remove(&op->wait);
    stats_waiters(&c->count, -1);
    next = op_of(ch->head);
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
    channel_settle(c, op->lock->channel, op->lock->channel_len);
}

struct op *waiters_handoff(struct lw_client *c, const struct lw_lock *lock)
{
    struct wait_channel *ch = channel_of(c, lock);
    struct op *op = ch ? op_of(ch->head) : NULL;

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

/* The class of lock channels (channel.h): a confirmed subscription and a
 * message, whatever it says, give the head of the line its turn. */
static void on_live(struct lw_client *c, struct wait_channel *ch)
{
    wake_turn(c, ch); /* unlocks before the subscription went unheard */
}

static void on_message(struct lw_client *c, struct wait_channel *ch, const char *msg,
                       size_t len)
{
    (void)msg; /* a 0 and a 1 wake the same waiters: see the head comment */
    (void)len;
    wake_turn(c, ch);
}

/* The client stops: a waiting acquire fails (it may free the channel). */
static void on_stop(struct lw_client *c, struct wait_link *l)
{
    struct op *op = op_of(l);

    (void)c;
    if (op->state == OPS_WAITING || op->state == OPS_HANDOFF)
        op_complete(op, LW_ESHUTDOWN, 0);
}

static const struct channel_class lock_waiters = {on_live, on_message, on_stop};
