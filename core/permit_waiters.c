/*
 * core/permit_waiters.c - acquires waiting for permits, on the
 * semaphore's channel ("redisson_sc:{name}").
 *
 * The same scheme as waiters.c for locks, without hand-overs: the
 * channel and its line are channel.c's (one subscription per name with
 * waiters, their line oldest first); this file says who in the line is
 * woken, and when (the class `permit_waiters`).  What a message says is
 * read:
 * it carries a count, the permits available after a release or a reclaim
 * (Redisson's and ours), the new total after a set, the number added by
 * an add or released by Redisson's release of several.
 *
 *   - an acquire for a name this client already waits on queues behind
 *     the waiters without trying (no barging inside the client: a stream
 *     of single-permit acquires cannot starve a waiter that wants three);
 *   - a message carrying k wakes, at once, the oldest waiters that k
 *     permits serve, a waiter wanting n counting as n: five waiters of one
 *     permit and a "3" send three attempts together, not one after
 *     another.  The first that does not fit stops it (no one passes a
 *     waiter that wants more), but the head tries even when it wants more
 *     than k: a count may be only part of what is free (an add, a release
 *     of several).  A "0" wakes no one; a message that is no count wakes
 *     the head.  A waiter whose attempt is on the wire counts as served,
 *     and tries once more if that attempt fails (it may have been answered
 *     before the permits came);
 *   - a waiter that got its permits and leaves the head of the line knows
 *     from its reply how many are left: the waiters behind that those
 *     serve try now (those already on the wire counted first).  One that
 *     leaves without (its time up, an error) passes the turn to the next.
 *     A confirmed (re)subscription wakes the head, for releases before it
 *     went unheard;
 *   - only the first waiter keeps a timer at the nearest expiry its
 *     attempt was answered (an expiry publishes nothing: the next acquire
 *     reclaims it), and a waiter that becomes first without being woken
 *     takes its own last answer's (or, never answered, the leaver's); the
 *     others' stand at their deadlines.
 *
 * So a release of k permits costs k attempts for k waiters, whatever the
 * line, and the next waiter asks only when permits are left for it or its
 * expiry comes (or once, to learn it, when neither it nor the waiter
 * before it was ever answered: first_timer()).
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "channel.h"
#include "container.h"
#include "semaphore_private.h"

static const struct channel_class permit_waiters;

static struct sem_op *op_of(struct wait_link *l)
{
    return l ? lw_container_of(l, struct sem_op, wait) : NULL;
}

static struct wait_channel *channel_of(struct lw_client *c, const struct lw_semaphore *sem)
{
    return channel_find(c, sem->channel, sem->channel_len);
}

/*
 * Wake waiters from the head of the line while their permits fit in
 * `avail`, all at once: a waiting one sends its attempt, one in flight
 * counts too (its attempt may take them) and, when `mark`, tries once
 * more should that attempt fail (it may have been answered before the
 * permits came).  The first that does not fit stops it: no one passes a
 * waiter that wants more.  With `head_anyway` the head takes its turn
 * even so.  The attempts go out in line order once all are marked in
 * flight, the last thing done: an attempt may complete its op (and free
 * the channel), and no completion in between wakes one twice.
 */
static void wake_fitting(struct lw_client *c, struct wait_channel *ch, int64_t avail,
                         int head_anyway, int mark)
{
    struct sem_op *op = op_of(ch->head);
    struct wait_link *batch = NULL, **tail = &batch, *next;

    if (c->closing)
        return;
    for (; op; op = op_of(op->wait.next)) {
        if ((int64_t)op->n > avail && !(head_anyway && &op->wait == ch->head))
            break;
        avail -= op->n;
        if (op->state == SOPS_INFLIGHT && mark) {
            op->woken = 1;
        } else if (op->state == SOPS_WAITING) {
            lw_wheel_cancel(c->wheel, &op->ct.timer);
            op->state = SOPS_INFLIGHT;
            op->wait.wake_next = NULL;
            *tail = &op->wait;
            tail = &op->wait.wake_next;
        }
    }
    for (; batch; batch = next) {
        next = batch->wake_next;
        batch->wake_next = NULL;
        sem_attempt(op_of(batch));
    }
}

/* A new first waiter left waiting (too few permits left for it) keeps
 * the first's timer: at the nearest expiry its last attempt was answered
 * (an expiry publishes nothing), or, never answered (it queued without
 * trying), the one the waiter before it was answered (none either: it
 * asks at the next tick); its deadline at the latest. */
static void first_timer(struct lw_client *c, struct sem_op *op, const struct sem_op *before)
{
    uint64_t at = op->expiry_ns ? op->expiry_ns : before->expiry_ns;

    if (op->state != SOPS_WAITING || c->closing)
        return;
    lw_wheel_cancel(c->wheel, &op->ct.timer);
    if (at > op->wait_deadline_ns)
        at = op->wait_deadline_ns;
    if (at != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, at);
}

/* The head of the line alone tries now (or again, when in flight). */
static void wake_first(struct lw_client *c, struct wait_channel *ch)
{
    wake_fitting(c, ch, 0, 1, 1);
}

/* The count a message carries (Redisson's: the permits available after a
 * release or a reclaim, the total after a set, the number added or
 * released by an add or a release of several), or -1 when it is no count. */
static int64_t message_count(const char *msg, size_t len)
{
    char buf[24];
    char *end;
    long long v;

    if (!msg || len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, msg, len);
    buf[len] = '\0';
    v = strtoll(buf, &end, 10);
    return *end || v < 0 ? -1 : (int64_t)v;
}

/* A message carrying k wakes the k oldest waiters' worth (one wanting n
 * counts as n) at once; the head tries even when it wants more than k,
 * for k may be part of what is free (a release of several, an add). */
static void on_message(struct lw_client *c, struct wait_channel *ch, const char *msg,
                       size_t len)
{
    int64_t k = message_count(msg, len);

    if (k < 0)
        wake_first(c, ch); /* not a count: the head asks */
    else if (k > 0)
        wake_fitting(c, ch, k, 1, 1);
}

int permit_waiters_join(struct lw_client *c, struct sem_op *op)
{
    const struct lw_semaphore *sem = op->sem;

    return channel_join(c, &permit_waiters, sem->channel, sem->channel_len, &op->wait);
}

int permit_waiters_queue(struct lw_client *c, struct sem_op *op)
{
    struct wait_channel *ch = channel_of(c, op->sem);

    if (!ch || !ch->head)
        return 0;
    channel_append(ch, &op->wait);
    op->state = SOPS_WAITING;
    op->expiry_ns = 0; /* never answered (first_timer()) */
    if (op->wait_deadline_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, op->wait_deadline_ns);
    return 1;
}

int permit_waiters_first(const struct sem_op *op)
{
    return op->wait.chan && op->wait.chan->head == &op->wait;
}

void permit_waiters_leave(struct lw_client *c, struct sem_op *op, int64_t left)
{
    struct wait_channel *ch = op->wait.chan;
    int was_first;

    if (op->state == SOPS_WAITING && c->wheel)
        lw_wheel_cancel(c->wheel, &op->ct.timer);
    was_first = channel_remove(&op->wait);
    if (was_first && ch->head && c->wheel && left < 0)
        wake_first(c, ch); /* the turn passes on */
    else if (was_first && ch->head && c->wheel)
        wake_fitting(c, ch, left, 0, 0); /* the permits it left over */
    if ((ch = channel_of(c, op->sem)) && was_first && ch->head && c->wheel)
        first_timer(c, op_of(ch->head), op);
    channel_settle(c, op->sem->channel, op->sem->channel_len);
}

/* The class of semaphore channels (channel.h). */
static void on_live(struct lw_client *c, struct wait_channel *ch)
{
    wake_first(c, ch); /* releases before the subscription went unheard */
}

/* The client stops: a waiting acquire fails (it may free the channel). */
static void on_stop(struct lw_client *c, struct wait_link *l)
{
    struct sem_op *op = op_of(l);

    (void)c;
    if (op->state == SOPS_WAITING)
        sem_complete(op, LW_ESHUTDOWN, 0);
}

static const struct channel_class permit_waiters = {on_live, on_message, on_stop};
