/*
 * core/waiters.c - acquires waiting on a channel for their turn: a lock's
 * unlock, a read-write lock's, a semaphore's permits, a fair lock's turn
 * in Redis's queue.  One waiting, for every kind that waits.
 *
 * The channel and its line are channel.c's (one subscription per channel
 * with waiters, shared by them, and its state); this file says who in the
 * line is woken, and when.  What varies between the kinds is a row each
 * acquire path hands over (struct wait_rule, waiters.h: how to send its
 * attempt again, how to end it, whether messages carry counts) and what
 * each waiter takes of its name (`want`): WAIT_ALL for a lock or a write,
 * 0 for a read (readers share), n for n permits.  From these alone:
 *
 *   - no barging inside the client: an acquire for a name on which this
 *     client has waiters already queues behind them without trying
 *     (waiters_queue(); lock.c lets a reentrant acquire pass, for it must
 *     not wait for waiters who wait for it);
 *   - a wake-up reaches the waiters, oldest first, that what is free
 *     serves, all at once, and no one passes a waiter that wants more
 *     (take_turns()).  A lock's message frees nothing countable, so it wakes
 *     the head alone, or, when the head reads, every reader ahead of the
 *     first writer: their attempts go out together in line order (one
 *     node, one connection), and a writer behind them could only fail.
 *     A semaphore's message carries a count (Redisson's: the permits
 *     available after a release or a reclaim, the total after a set, the
 *     number added or released by an add or a release of several): five
 *     waiters of one permit and a "3" send three attempts, not one after
 *     another.  The head tries even when it wants more than the count,
 *     which may be only part of what is free; a "0" wakes no one, and a
 *     message that is no count wakes the head;
 *   - a waiter whose attempt is on the wire is not sent twice: it is
 *     marked `woken` and tries once more if that attempt fails (it may
 *     have been answered before the release);
 *   - the turn passes on: a first waiter that leaves without (its time
 *     up, an error, the client stopping) gives the next its turn, so no
 *     wake-up is lost.  One that got in says what it left free: the
 *     readers behind a reader (they share), the permits behind an
 *     acquire of permits, nothing behind a write;
 *   - only the first waiter keeps a timer where its answer said to look
 *     again (the holder's PTTL, the nearest permit's expiry: expiries,
 *     downgrades and a reader leaving others behind publish nothing); the
 *     others' stand at their deadlines.  A waiter that becomes first
 *     without being woken takes its own last answer's time (a count's
 *     nearest expiry) or the leaver's word (a lock: its lease from now,
 *     in case that lock ends unsaid);
 *   - a confirmed (re)subscription gives the head its turn: messages while
 *     the subscription was gone were lost.
 *
 * A fair lock's waiter is the same waiter alone on a channel of its own
 * (way_fair.c): its line is Redis's queue, and whoever leaves that
 * queue's head publishes to the next waiter only.  A hand-over (an unlock
 * of this client moving the lock to its first waiter in one script) is
 * lock.c's, with waiters_head().  Across clients nothing changes: a lock
 * stays unfair between them, as Redisson's RLock is.
 */
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "container.h"
#include "queue.h"
#include "waiters.h"

static const struct channel_class waiting;

static struct waiter *waiter_of(struct wait_link *l)
{
    return l ? lw_container_of(l, struct waiter, link) : NULL;
}

uint64_t waiters_deadline(uint64_t wait_ms)
{
    uint64_t now = lw_clock_now();

    if (wait_ms == LW_WAIT_FOREVER || wait_ms > (UINT64_MAX - now) / 1000000u)
        return UINT64_MAX;
    return now + wait_ms * 1000000u;
}

void waiters_set_wait(struct waiter *w, uint64_t wait_ms)
{
    w->deadline_ns = waiters_deadline(wait_ms);
    w->reach = wait_ms != 0 && w->deadline_ns != UINT64_MAX;
}

void waiters_reach(struct waiter *w, struct request *req)
{
    if (w->reach)
        w->tried_ns = lw_clock_now();
    request_wait_until(req, w->reach ? w->deadline_ns : 0);
}

/* err says Redis could not be reached, or did not answer. */
static int unreachable(int err)
{
    switch (err) {
    case LW_ECONNREFUSED:
    case LW_ECONNECT:
    case LW_ECONNLOST:
    case LW_ETIMEDOUT:
    case LW_EUNSETTLED: return 1;
    default: return 0;
    }
}

int waiters_retry(const struct lw_client *c, const struct waiter *w,
                  const struct request *req, int err)
{
    uint64_t now;

    if (!w->reach || c->closing || !unreachable(err))
        return 0;
    now = lw_clock_now();
    return now < w->deadline_ns && (req->sent_conn || now - w->tried_ns >= c->tick_ns);
}

int waiters_timed_out(struct lw_client *c)
{
    int err = c->engine ? engine_status(c->engine) : 0;

    return err ? err : LW_ELOCKED;
}

void waiters_arm(struct lw_client *c, struct waiter *w, uint64_t at_ns)
{
    lw_wheel_cancel(c->wheel, &w->ct.timer);
    if (w->deadline_ns < at_ns)
        at_ns = w->deadline_ns;
    if (at_ns != UINT64_MAX)
        lw_wheel_schedule(c->wheel, &w->ct.timer, at_ns);
}

/*
 * Give waiters from the head of the line their turn while what they want
 * fits in `room`: a waiting one is marked in flight and joins the batch
 * returned, one in flight counts too (its attempt may take it) and, when
 * `mark`, tries once more should that attempt fail.  The first that does
 * not fit stops it; with `head_anyway` the head takes its turn even so.
 */
static struct lw_queue take_turns(struct lw_client *c, struct wait_channel *ch, int64_t room,
                                  int head_anyway, int mark)
{
    struct waiter *w = waiter_of(channel_first(ch));
    struct lw_queue batch = {0};

    if (c->closing || !c->wheel)
        return batch;
    for (; w; w = waiter_of(channel_next(&w->link))) {
        if (w->want > room && !(head_anyway && &w->link == channel_first(ch)))
            break;
        room -= w->want;
        if (w->state == WAIT_INFLIGHT && mark) {
            w->woken = 1;
        } else if (w->state == WAIT_WAITING) {
            lw_wheel_cancel(c->wheel, &w->ct.timer);
            w->state = WAIT_INFLIGHT; /* taken: not woken twice */
            lw_queue_push(&batch, &w->link.wake);
        }
    }
    return batch;
}

/* The batch's attempts, in line order: the last thing done, for an
 * attempt may complete its op (and free the channel); all were marked in
 * flight first, so no completion in between wakes one twice. */
static void send(struct lw_queue batch)
{
    struct waiter *w;

    while ((w = lw_item_of(lw_queue_pop(&batch), struct waiter, link.wake)))
        w->rule->attempt(w);
}

static void wake(struct lw_client *c, struct wait_channel *ch, int64_t room, int head_anyway,
                 int mark)
{
    send(take_turns(c, ch, room, head_anyway, mark));
}

/* The head of the line's turn (the readers beside it, when it reads). */
static void wake_head(struct lw_client *c, struct wait_channel *ch)
{
    wake(c, ch, 0, 1, 1);
}

int waiters_join(struct lw_client *c, struct waiter *w, const char *name, size_t len)
{
    int live = channel_join(c, &waiting, name, len, &w->link);

    if (live >= 0)
        stats_waiters(&c->count, 1);
    return live;
}

int waiters_queue(struct lw_client *c, struct waiter *w, const char *name, size_t len)
{
    struct wait_channel *ch = channel_find(c, name, len);

    if (!ch || !channel_first(ch))
        return 0;
    channel_append(ch, &w->link);
    stats_waiters(&c->count, 1);
    w->state = WAIT_WAITING;
    w->look_ns = 0;                /* never answered */
    waiters_arm(c, w, UINT64_MAX); /* its deadline, if any */
    return 1;
}

int waiters_first(const struct waiter *w)
{
    return w->link.chan && channel_first(w->link.chan) == &w->link;
}

struct waiter *waiters_head(struct lw_client *c, const char *name, size_t len)
{
    struct wait_channel *ch = channel_find(c, name, len);

    return ch ? waiter_of(channel_first(ch)) : NULL;
}

void waiters_leave(struct lw_client *c, struct waiter *w, int64_t left, uint64_t look_ns)
{
    struct wait_channel *ch = w->link.chan;
    struct lw_queue batch = {0};
    struct waiter *head;
    int was_first;

    if ((w->state == WAIT_WAITING || w->state == WAIT_HANDOFF) && c->wheel)
        lw_wheel_cancel(c->wheel, &w->ct.timer);
    was_first = channel_remove(&w->link);
    stats_waiters(&c->count, -1);
    if (was_first && left == WAIT_PASS)
        batch = take_turns(c, ch, 0, 1, 1); /* the turn passes on */
    else if (was_first)
        batch = take_turns(c, ch, left, 0, !w->rule->counts); /* what it left free */
    head = waiter_of(channel_first(ch));
    if (was_first && head && head->state == WAIT_WAITING && !c->closing && c->wheel)
        waiters_arm(c, head, head->look_ns ? head->look_ns : look_ns);
    channel_settle(c, ch->name, ch->len); /* frees ch when none is left */
    send(batch);
}

/* ---- The channels' class (channel.h): one for every kind ---- */

static void on_live(struct lw_client *c, struct wait_channel *ch)
{
    wake_head(c, ch); /* releases before the subscription went unheard */
}

/* The count a message carries, or -1 when it is no count. */
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

static void on_message(struct lw_client *c, struct wait_channel *ch, const char *msg,
                       size_t len)
{
    struct waiter *head = waiter_of(channel_first(ch));
    int64_t k = head && head->rule->counts ? message_count(msg, len) : -1;

    if (k < 0)
        wake_head(c, ch); /* a lock's 0 or 1, or no count: the head asks */
    else if (k > 0)
        wake(c, ch, k, 1, 1);
}

/* The client stops: a waiting acquire fails (it may free the channel). */
static void on_stop(struct lw_client *c, struct wait_link *l)
{
    struct waiter *w = waiter_of(l);

    (void)c;
    if (w->state == WAIT_WAITING || w->state == WAIT_HANDOFF)
        w->rule->end(w, LW_ESHUTDOWN);
}

static const struct channel_class waiting = {on_live, on_message, on_stop};
