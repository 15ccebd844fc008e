/*
 * core/permit_waiters.c - acquires waiting for permits, on the
 * semaphore's channel ("redisson_sc:{name}").
 *
 * The same scheme as waiters.c for locks, without hand-overs: one record
 * per channel with waiters, following its subscription
 * (IDLE -> SUBSCRIBING -> ACTIVE -> UNSUBSCRIBING -> IDLE), and the
 * waiters of a name in a line, oldest first.  What a message says is read:
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
 *     takes its own last answer's; the others' stand at their deadlines.
 *
 * So a release of k permits costs k attempts for k waiters, whatever the
 * line, and the next waiter asks only when permits are left for it or its
 * expiry comes.
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
static void wake_fitting(struct lw_client *c, struct sem_channel *ch, int64_t avail,
                         int head_anyway, int mark)
{
    struct sem_op *op = ch->head, *batch = NULL, **tail = &batch, *next;

    if (c->closing)
        return;
    for (; op; op = op->wnext) {
        if ((int64_t)op->n > avail && !(head_anyway && op == ch->head))
            break;
        avail -= op->n;
        if (op->state == SOPS_INFLIGHT && mark) {
            op->woken = 1;
        } else if (op->state == SOPS_WAITING) {
            lw_wheel_cancel(c->wheel, &op->ct.timer);
            op->state = SOPS_INFLIGHT;
            op->wake_next = NULL;
            *tail = op;
            tail = &op->wake_next;
        }
    }
    for (; batch; batch = next) {
        next = batch->wake_next;
        batch->wake_next = NULL;
        sem_attempt(batch);
    }
}

/* A new first waiter left waiting (too few permits left for it) keeps
 * the first's timer: at the nearest expiry its last attempt was answered
 * (an expiry publishes nothing). */
static void first_timer(struct lw_client *c, struct sem_op *op)
{
    if (op->state != SOPS_WAITING || c->closing)
        return;
    lw_wheel_cancel(c->wheel, &op->ct.timer);
    if (op->expiry_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, op->expiry_ns);
}

/* The head of the line alone tries now (or again, when in flight). */
static void wake_first(struct lw_client *c, struct sem_channel *ch)
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
static void on_message(struct lw_client *c, struct sem_channel *ch, const char *msg,
                       size_t len)
{
    int64_t k = message_count(msg, len);

    if (k < 0)
        wake_first(c, ch); /* not a count: the head asks */
    else if (k > 0)
        wake_fitting(c, ch, k, 1, 1);
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
    op->expiry_ns = 0; /* never answered: should it come first, it asks */
    if (op->wait_deadline_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &op->ct.timer, op->wait_deadline_ns);
    return 1;
}

int permit_waiters_first(const struct sem_op *op)
{
    return op->chan && op->chan->head == op;
}

void permit_waiters_leave(struct lw_client *c, struct sem_op *op, int64_t left)
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
    if (was_first && ch->head && c->wheel && left < 0)
        wake_first(c, ch); /* the turn passes on */
    else if (was_first && ch->head && c->wheel)
        wake_fitting(c, ch, left, 0, 0); /* the permits it left over */
    if ((ch = channel_of(c, op->sem)) && was_first && ch->head && c->wheel)
        first_timer(c, ch->head);
    if ((ch = channel_of(c, op->sem)))
        channel_sync(c, ch);
}

void permit_waiters_on_event(void *arg, int event, const char *name, size_t len,
                             const char *msg, size_t msg_len)
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
        on_message(c, ch, msg, msg_len);
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
