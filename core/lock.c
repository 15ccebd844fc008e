/*
 * core/lock.c - lock handles and the calls on them.
 *
 * Every call is an op.  The calling thread checks its arguments and
 * formats its command; the engine thread does the rest: sends it, reads
 * the reply, and for an acquire that finds the lock taken, waits on the
 * lock's channel (waiters.c) and tries again.  A blocking call is the same
 * op on the caller's stack plus a wait on its completion word; an async
 * call's op is on the heap and freed after its callback.
 *
 * Unlock and force-unlock first pass through the engine thread as a task,
 * to stop the watchdog there before their command is queued: so no renewal
 * can follow the unlock on the wire.  Their command is formatted there too,
 * with the publish command the pub/sub mode in force calls for.  An unlock's reply then settles the
 * entry (watchdog_unlock_end()).
 *
 * Rule for the engine thread: engine_submit() there may complete the
 * request at once (a failed write), so it is always the last thing done
 * with an op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "call.h"
#include "admission.h"
#include "container.h"
#include "holds.h"
#include "lock_op.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "refs.h"
#include "reply.h"
#include "replicas.h"
#include "status.h"
#include "tag.h"
#include "waiters.h"
#include "watchdog.h"
#include "way.h"

void lock_ref(struct lw_lock *lock)
{
    atomic_fetch_add_explicit(&lock->refs, 1, memory_order_relaxed);
}

void lock_unref(struct lw_lock *lock)
{
    if (atomic_fetch_sub_explicit(&lock->refs, 1, memory_order_acq_rel) == 1) {
        client_unref(lock->client);
        free(lock->channel);
        free(lock->token_key);
        for (int i = 0; i < LOCK_COMPANIONS; i++)
            free(lock->companion_keys[i]);
        free(lock);
    }
}

/*
 * A companion key of the lock, named as Redisson's RedissonObject.prefixName
 * names it: "prefix:{name}", the name's own hash tag rules kept (tag.h),
 * so a script may touch both in a cluster.  In a new buffer.
 */
static char *prefix_name(const char *prefix, const char *name, size_t len, size_t *out_len)
{
    char pre[64]; /* the prefixes are constants of a few dozen bytes */

    if ((size_t)snprintf(pre, sizeof pre, "%s:", prefix) >= sizeof pre)
        return NULL;
    return tag_key(pre, name, len, "", out_len);
}

/* The companion keys the lock's way names beyond its channel and token
 * key (a fair lock's queue, give-up times and places; an election's
 * channel): 0, or -1 (no memory). */
static int companion_keys(struct lw_lock *lock)
{
    for (int i = 0; lock->way->companions && i < LOCK_COMPANIONS && lock->way->companions[i]; i++)
        if (!(lock->companion_keys[i] = prefix_name(lock->way->companions[i], lock->name, lock->len,
                                                    &lock->companion_lens[i])))
            return -1;
    return 0;
}

/* A handle asked for by way (way.h): a lock, the read or the write lock
 * of a read-write lock, a fair lock, an election's.  Read-write locks
 * have their own channel, Redisson's redisson_rwlock:{name}; a fenced
 * write lock's tokens come from the name's counter, as a lock's. */
int lock_new_way(struct lw_client *c, const void *name, size_t len, const struct lock_way *way,
                 int fenced, struct lw_lock **out)
{
    struct lw_lock *lock;

    if (!c || !name || !out || len == 0)
        return LW_EINVAL;
    if (len > LW_LOCK_NAME_MAX)
        return LW_ERANGE;
    lock = calloc(1, sizeof *lock + len + 1);
    if (!lock)
        return LW_ENOMEM;
    if (client_ref(c)) {
        free(lock);
        return LW_ESHUTDOWN;
    }
    lock->client = c;
    lock->len = len;
    memcpy(lock->name, name, len);
    atomic_init(&lock->refs, 1);
    lock->slot = keyslot(name, len);
    lock->kind = way->kind;
    lock->way = way;
    atomic_init(&lock->fenced, fenced);
    lock->channel = prefix_name(lock->way->channel_prefix, name, len, &lock->channel_len);
    lock->token_key = prefix_name(TOKEN_PREFIX, name, len, &lock->token_len);
    if (!lock->channel || !lock->token_key || companion_keys(lock)) {
        lock_unref(lock);
        return LW_ENOMEM;
    }
    *out = lock;
    return 0;
}

int lw_lock_new(struct lw_client *c, const void *name, size_t len, struct lw_lock **out)
{
    return lock_new_way(c, name, len, &way_lock, 0, out);
}

int lw_read_lock_new(struct lw_client *c, const void *name, size_t len, struct lw_lock **out)
{
    return lock_new_way(c, name, len, &way_read, 0, out);
}

int lw_write_lock_new(struct lw_client *c, const void *name, size_t len, struct lw_lock **out)
{
    return lock_new_way(c, name, len, &way_write, 0, out);
}

int lw_fair_lock_new(struct lw_client *c, const void *name, size_t len, struct lw_lock **out)
{
    return lock_new_way(c, name, len, &way_fair, 0, out);
}

int lw_lock_set_max_hold(struct lw_lock *lock, uint64_t max_hold_ms)
{
    if (!lock)
        return LW_EINVAL;
    if (max_hold_ms > LW_MAX_LEASE_MS * 1000ull)
        return LW_ERANGE;
    atomic_store_explicit(&lock->max_hold_ms, max_hold_ms, memory_order_relaxed);
    return 0;
}

int lw_lock_set_fenced(struct lw_lock *lock, int fenced)
{
    if (!lock || !lock->way->fences || (fenced != 0 && fenced != 1))
        return LW_EINVAL;
    atomic_store_explicit(&lock->fenced, fenced, memory_order_relaxed);
    return 0;
}

void lw_lock_free(struct lw_lock *lock)
{
    if (lock)
        lock_unref(lock);
}

/* ---- Ending an op (engine thread) ---- */

static struct op *op_of(struct call *call)
{
    return lw_container_of(call, struct op, call);
}

static void op_complete(struct op *op, int err, int64_t value)
{
    call_complete(&op->call, err, value);
}

static void op_attempt(struct op *op)
{
    call_attempt(&op->call);
}

/* op leaves the line it waits in, if any (its way's: this client's for
 * the name, or a fair lock's queue), with the lock (acquired) or not. */
static void leave_line(struct lw_client *c, struct op *op, int acquired)
{
    op->lock->way->leave(c, op, acquired);
}

/* What a lock call owns beyond the call: an election's copy of its value
 * (call.h's `discard`; `ending` lets it go too). */
static void discard(struct call *call)
{
    struct op *op = op_of(call);

    free(op->payload);
    op->payload = NULL;
}

/* Before a lock call ends (call.h's `ending`): its peer of a hand-over
 * goes on without it, it leaves its line, an acquire's time is counted. */
static void ending(struct call *call, int err)
{
    struct op *op = op_of(call);

    if (op->handoff) {
        op->handoff->handoff = NULL;
        op->handoff = NULL;
    }
    leave_line(call->client, op, !err);
    if (call->kind == OP_ACQUIRE && !err)
        stats_acquired(&call->client->count, lw_clock_now() - call->start_ns);
    discard(call);
}

/* A lock call's kind, and whether its attempts wait for Redis (an
 * acquire's; its undo and trim as every request). */
static void set_kind(struct op *op, int kind)
{
    op->call.kind = (uint8_t)kind;
    op->call.waits = kind == OP_ACQUIRE;
}

static int format_op(struct op *op);

/* An acquire formatted for each attempt (a fair lock's: whether it may
 * still join the queue). */
static int format_attempt(struct call *call)
{
    struct op *op = op_of(call);

    return call->kind == OP_ACQUIRE && op->lock->way->per_attempt ? format_op(op) : 0;
}

/* ---- Waiting (waiters.c) ---- */

static struct op *waiting_op(struct waiter *w)
{
    return w ? lw_container_of(w, struct op, call.w) : NULL;
}

/* A new acquire queues behind this client's waiters for its name, if
 * there are any (1; no barging inside the client), or may try (0). */
static int queue_behind(struct lw_client *c, struct op *op)
{
    return waiters_queue(c, &op->call.w, op->lock->channel, op->lock->channel_len);
}

/* The first waiter of lock's name, reserved for a hand-over
 * (WAIT_HANDOFF), or NULL when there is none that waits now (or replicas
 * must acknowledge acquires: a hand-over goes without WAIT). */
static struct op *reserve_waiter(struct lw_client *c, const struct lw_lock *lock)
{
    struct op *op = waiting_op(waiters_head(c, lock->channel, lock->channel_len));

    if (!op || op->call.w.state != WAIT_WAITING || c->replicas || c->closing ||
        lw_clock_now() >= op->call.w.deadline_ns)
        return NULL;
    lw_wheel_cancel(c->wheel, &op->call.w.ct.timer);
    op->call.w.state = WAIT_HANDOFF;
    return op;
}

/* The hand-over did not happen: op tries for itself (or its time is up). */
static void unreserve_waiter(struct lw_client *c, struct op *op)
{
    op->call.w.state = WAIT_INFLIGHT;
    if (c->closing)
        op_complete(op, LW_ESHUTDOWN, 0);
    else if (lw_clock_now() >= op->call.w.deadline_ns)
        op_complete(op, waiters_timed_out(c), 0);
    else
        op_attempt(op); /* the lock may be free, or held on: it asks */
}

/* ---- Replies (engine thread) ---- */

/* The lock is someone else's; pttl is what the holder has left (a fair
 * lock: op is in its queue, and pttl when to look again unless woken). */
static void acquire_held(struct lw_client *c, struct op *op, int64_t pttl)
{
    uint64_t now = lw_clock_now();
    int live;

    if (now >= op->call.w.deadline_ns) {
        op_complete(op, waiters_timed_out(c), 0);
        return;
    }
    if (c->closing) {
        op_complete(op, LW_ESHUTDOWN, 0);
        return;
    }
    /* The first time: listen on the lock's channel (a fair lock's waiter:
     * on its own, its place in the queue kept).  If it was listened to
     * already, an unlock between our attempt and now went unheard: try once
     * more.  Otherwise the subscription's confirmation wakes us. */
    if (!op->call.w.link.chan && (live = op->lock->way->join(c, op)) != 0) {
        if (live < 0)
            op_complete(op, LW_ENOMEM, 0);
        else
            op_attempt(op);
        return;
    }
    if (op->call.w.woken) { /* an unlock came while this attempt was out */
        op_attempt(op);
        return;
    }
    /* Only the first in line tries again when the holder's lease runs
     * out; the others wait their turn, or their deadline.  A fair lock's
     * waiter is alone in its line: it looks again when the script said. */
    op->call.w.state = WAIT_WAITING;
    waiters_arm(c, &op->call.w,
                waiters_first(&op->call.w) ? holder_retry_at(now, pttl, op->call.w.deadline_ns)
                                           : UINT64_MAX);
}

/* Until when an acquire's hold, its lease counting from from_ns, is sure.
 * A reply that came when less than a tick of it is left came too late
 * (call_too_late()): Redis ran it late (paused, stopped, slow), and the
 * key may expire before the caller could use it or a renewal be
 * confirmed.  A hold the watchdog renews already is not at stake. */
static uint64_t sure_until(struct lw_client *c, const struct op *op, uint64_t from_ns)
{
    if (watchdog_renews(c, op->lock, op->call.owner))
        return UINT64_MAX;
    return lease_valid_until(call_lease_ms(&op->call), from_ns);
}

/* Give back the hold an acquire took (the unlock script: it touches only
 * our field), then end the op in err: LW_ETIMEDOUT for a late acquire,
 * LW_EREPLICAS for one too few replicas acknowledged.  Should the unlock
 * fail, the hold expires with its lease: nothing renews it.  The unlock
 * takes the main lane: it waits for no replica. */
static void undo_acquire(struct call *call, int err)
{
    struct op *op = op_of(call);

    /* It holds the lock until the undo: its unlock says when. */
    leave_line(call->client, op, 1);
    request_clear(&op->call.req);
    set_kind(op, OP_UNDO);
    op->call.undo_err = err;
    op->call.req.lane = LW_LANE_MAIN;
    if (format_op(op))
        op_complete(op, err, 0);
    else
        op_attempt(op);
}

/* The acquire's reply is good: hand the lock over, unless it came too
 * late to be of use. */
static void acquire_done(struct lw_client *c, struct op *op, uint32_t holds, uint64_t from_ns)
{
    if (call_undo_if_late(&op->call, sure_until(c, op, from_ns)))
        return;
    watchdog_acquired(c, op->lock, op->call.owner, holds, from_ns, op->call.lease_ms == 0,
                      op->call.max_hold_ms);
    /* An election's first hold: its lease joins the set the leader's
     * belief is read from (watchdog.h). */
    if (op->set && holds == 1 && op->call.lease_ms == 0) {
        watchdog_set_join(c, op->lock, op->call.owner, op->set);
        stats_elected(&c->count);
    }
    if (op->call.until_out) /* the caller's, before done runs */
        *op->call.until_out = lease_valid_until(call_lease_ms(&op->call), from_ns);
    if (op->call.lease_ms) /* its lease ends by itself: at the latest this */
        holds_acquired(c, op->lock, op->call.owner, holds,
                       call_lease_end(&op->call));
    op_complete(op, 0, op->call.value);
}

/* Its replicas acknowledged a first acquire (call.h's `acked`). */
static void acquire_acked(struct call *call)
{
    struct op *op = op_of(call);

    acquire_done(call->client, op, op->ack_holds, call->from_ns);
}

/* Hand the acquire over, after its replicas acknowledged it when it is
 * the owner's first hold. */
static void acquire_got(struct lw_client *c, struct op *op, uint32_t holds, int first,
                        uint64_t from_ns)
{
    if (c->replicas && first && !call_too_late(&op->call, sure_until(c, op, from_ns))) {
        op->ack_holds = holds;
        op->call.from_ns = from_ns;
        call_wait_replicas(&op->call);
    } else {
        acquire_done(c, op, holds, from_ns);
    }
}

/*
 * An acquire sent again (cluster: its connection was lost, or the cluster
 * was moving) may have run more than once, each copy adding a hold, as may
 * a waiter's after a hand-over to it that failed unanswered (that
 * hand-over's hold), or the owner's acquire before this one, which failed
 * unanswered (holds.c's unsure mark): it is the first acquire still, not a
 * re-entry, when the owner held none before.  The holds beyond the one it
 * took are given back, when we know how many the owner had: its watchdog
 * lock's count, or none (an acquire with a lease of its own keeps no
 * count, nor does one of an owner that holds the lock with a lease too:
 * their surplus, if any, stays).
 */
static uint32_t surplus_holds(struct lw_client *c, const struct op *op, uint32_t holds)
{
    uint32_t expect;

    if (op->call.lease_ms || holds_has(c, op->lock, op->call.owner, lw_clock_now()))
        return 0;
    expect = watchdog_holds(c, op->lock, op->call.owner) + 1;
    return holds > expect ? holds - expect : 0;
}

/* Give back one surplus hold (the unlock script, on the acquire's lane
 * and slot: a WAIT after it covers the acquire too). */
static void trim_hold(struct op *op)
{
    request_clear(&op->call.req);
    set_kind(op, OP_TRIM);
    if (format_op(op))
        op_complete(op, LW_ENOMEM, 0); /* what it holds expires with its lease */
    else
        op_attempt(op);
}

/* A surplus hold given back: the holds left.  None, or not known (an
 * error, a lost connection: a trim sent again may have run twice), and
 * the acquire is not handed over; what is left of it, if anything,
 * expires with its lease. */
static void trim_reply(struct lw_client *c, struct op *op, const redisReply *reply)
{
    int64_t left = reply && reply->type != REDIS_REPLY_ERROR ? reply_integer(reply) : 0;

    if (left < 1) {
        op_complete(op, LW_EUNSETTLED, 0);
        return;
    }
    if (--op->trim && left > 1) {
        trim_hold(op);
        return;
    }
    set_kind(op, OP_ACQUIRE);
    acquire_got(c, op, (uint32_t)left, 1, op->call.from_ns);
}

/* An acquire the script refused: {-1} the name holds a lock of another
 * kind; {-3} a write lock asked by an owner that reads it, which would
 * wait on itself (no upgrade): LW_EDEADLK, unless it was only a try. */
static void acquire_refused(struct lw_client *c, struct op *op, int64_t why)
{
    int err = LW_EREPLY;

    if (why == -1)
        err = LW_EWRONGKIND;
    else if (why == -3)
        err = lw_clock_now() < op->call.w.deadline_ns ? LW_EDEADLK : LW_ELOCKED;
    (void)c;
    op_complete(op, err, 0); /* leaves the name's queue, if in it */
}

/* A watchdog acquire ended unanswered once written, or the undo or trim
 * after one that was answered: it may have left a hold that nobody
 * renews, for a lease from now (Redis may run a request later than the
 * client gives up on it: two), or for as long as the owner's entry is
 * renewed when it held the lock already. */
static void acquire_unanswered(struct lw_client *c, const struct op *op)
{
    uint64_t until = watchdog_renews(c, op->lock, op->call.owner)
                         ? UINT64_MAX
                         : lw_clock_now() + 2 * c->lease_ms * 1000000u;

    if (op->call.lease_ms || (op->call.kind == OP_ACQUIRE && !op->call.req.sent_conn))
        return; /* a lease of its own ends it; never written, never run */
    holds_unsure(c, op->lock, op->call.owner, until);
}

static void acquire_reply(struct lw_client *c, struct op *op, const redisReply *reply)
{
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_INTEGER &&
        reply->element[1]->type == REDIS_REPLY_INTEGER) {
        uint64_t from_ns = request_lease_from(&op->call.req);
        uint32_t holds = (uint32_t)reply->element[1]->integer;
        /* An earlier acquire of the owner's that may have run unanswered
         * counts as this one sent before. */
        int unsure = !op->call.lease_ms && holds_take_unsure(c, op->lock, op->call.owner, lw_clock_now());
        int resent = op->call.req.unsettled != 0 || op->handoff_unknown || unsure;

        op->call.value = reply->element[0]->integer;
        if (resent && (op->trim = surplus_holds(c, op, holds))) {
            op->call.from_ns = from_ns;
            trim_hold(op);
            return;
        }
        /* A first acquire waits for the replicas; a re-entry never does:
         * it adds to a hold that waited already. */
        acquire_got(c, op, holds,
                    holds == 1 || (resent && !watchdog_renews(c, op->lock, op->call.owner)), from_ns);
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        acquire_held(c, op, reply->integer);
    } else if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1) {
        acquire_refused(c, op, reply_integer(reply->element[0]));
    } else {
        op_complete(op, LW_EREPLY, 0);
    }
}

/* Whether op's owner holds its lock already (re-entering). */
static int reentry(struct lw_client *c, const struct op *op)
{
    return watchdog_renews(c, op->lock, op->call.owner) ||
           holds_has(c, op->lock, op->call.owner, lw_clock_now());
}

/* A held-back acquire admitted goes on as any other, but for admission
 * (a fair lock's never queues in the client: its line is Redis's). */
static void acquire_admitted(struct call *call)
{
    struct op *op = op_of(call);

    if (reentry(call->client, op) || !op->lock->way->queues || !queue_behind(call->client, op))
        op_attempt(op);
}

/* An acquire's first step, on the engine thread: behind this client's
 * waiters for the name, if it has any, unless its owner holds the lock
 * (re-entering: the waiters wait for it); else sent.  A first acquire of
 * a watchdog lock may be held back first, while the renewals are behind
 * (admission.c). */
static void acquire_begin(struct lw_client *c, struct op *op)
{
    int again = reentry(c, op);

    if (!again && op->call.lease_ms == 0 && call_held_back(&op->call))
        return;
    if (again || !op->lock->way->queues || !queue_behind(c, op))
        op_attempt(op);
}

/* An unlock's (or force-unlock's) first step, on the engine thread: the
 * watchdog holds back the lock's renewals, the command is formatted here,
 * where the publish command is known, and an unlock of a lock this
 * client's waiters queue for hands it to the first of them. */
static void release_begin(struct lw_client *c, struct op *op)
{
    /* Not an unlock that leaves the lock to expire (lease_ms set): the
     * lock stays taken until then, nothing to hand over.  Nor a read-write
     * lock's: readers share it. */
    if (op->call.kind == OP_UNLOCK && !op->call.lease_ms && op->lock->way->hands_over &&
        (op->handoff = reserve_waiter(c, op->lock)))
        op->handoff->handoff = op;
    if (format_op(op)) {
        if (op->handoff)
            unreserve_waiter(c, op->handoff);
        op_complete(op, LW_ENOMEM, 0);
        return;
    }
    if (op->call.kind == OP_UNLOCK)
        watchdog_unlock_begin(c, op->lock, op->call.owner);
    else if (op->lock->way->forgets_forced)
        watchdog_forget(c, op->lock);
    /* A read-write lock's force-unlock frees it only in its own mode: its
     * entries are forgotten when the reply says it did (forget_forced()). */
    op_attempt(op);
}

/* The waiter w got the lock by a hand-over written at from_ns: token, and its
 * hold count (1, or more when it held it already). */
static void handed_over(struct lw_client *c, struct op *w, int64_t token, int64_t holds,
                        uint64_t from_ns)
{
    w->call.w.state = WAIT_INFLIGHT;
    w->call.value = token;
    acquire_got(c, w, holds > 0 ? (uint32_t)holds : 1, holds <= 1, from_ns);
}

/* The hand-over script's reply (scripts.c, SCRIPT_HANDOFF), by its shape:
 *   {holds}             holds left: a partial unlock, nothing handed over;
 *   {0, token, 1}       handed over: the waiter holds it once, with token;
 *   {-1}                the releaser held none: nothing changed;
 *   {-2, token, holds}  the releaser holds none but the waiter does: a
 *                       resent hand-over that ran when first sent (handed
 *                       over, when the request was resent), or the waiter's
 *                       owner holding it another way (not handed over).
 * Failed, or no array: status INT64_MIN, it may or may not have run. */
struct handoff_result {
    int64_t status;       /* the first element; INT64_MIN: failed */
    int handed;           /* the waiter got the lock by this call */
    int64_t token, holds; /* the waiter's, when handed */
    int64_t left;         /* the releaser's holds left; -1: it held none */
};

static struct handoff_result handoff_decode(const redisReply *reply, int err, int resent)
{
    const redisReply *const *e = reply && !err && reply->type == REDIS_REPLY_ARRAY &&
                                         reply->elements >= 1
                                     ? (const redisReply *const *)reply->element
                                     : NULL;
    struct handoff_result r = {.status = e ? reply_integer(e[0]) : INT64_MIN};

    r.handed = r.status == 0 || (r.status == -2 && resent);
    r.token = r.handed && reply->elements >= 3 ? reply_integer(e[1]) : 0;
    r.holds = r.handed && reply->elements >= 3 ? reply_integer(e[2]) : 0;
    r.left = r.handed ? 0 : r.status < 0 ? -1
                                         : r.status;
    return r;
}

/* An unlock sent as the hand-over (format_handoff()): request.script is
 * a script's index + 1 (0: a plain command), and this one's reply has
 * handoff_decode()'s shapes, not a plain unlock's integer. */
static int sent_as_handoff(const struct op *op)
{
    return op->call.kind == OP_UNLOCK && op->call.req.script == SCRIPT_HANDOFF + 1;
}

/* An unlock that was to hand over, its reply decoded.  Without a waiter
 * any more (it went, the client is closing), only the unlock counts.  The
 * waiter is completed before the unlock: it carries the lock on, and its
 * thread wakes while the unlocking one is still being told; but the
 * unlocker's hold is settled (watchdog, lease holds) before the waiter's
 * begins, for the waiter may be the same owner. */
static void handoff_reply(struct lw_client *c, struct op *op, const redisReply *reply,
                          int err)
{
    struct op *w = op->handoff;
    struct handoff_result r = handoff_decode(reply, err, op->call.req.unsettled);
    uint64_t from_ns = request_lease_from(&op->call.req);

    op->handoff = NULL;
    if (w)
        w->handoff = NULL;
    if (r.status == INT64_MIN) { /* failed: it may or may not have run */
        watchdog_unlock_end(c, op->lock, op->call.owner, UNLOCK_UNKNOWN);
        if (w) /* its next acquire may find the lock its own already */
            w->handoff_unknown = 1;
    } else {
        watchdog_unlock_end(c, op->lock, op->call.owner, r.left);
        holds_released(c, op->lock, op->call.owner, r.left);
    }
    if (w && r.handed)
        handed_over(c, w, r.token, r.holds, from_ns);
    if (r.status == INT64_MIN)
        op_complete(op, err ? err : reply_error(reply, &op->call.said), 0);
    else
        op_complete(op, r.left < 0 ? LW_ENOTOWNER : 0, r.left < 0 ? 0 : r.left);
    if (w && !r.handed)
        unreserve_waiter(c, w);
}

/* A lock call's first step (call.h's `begin`). */
static void begin(struct call *call)
{
    struct op *op = op_of(call);
    int rc;

    if (call->kind == OP_ACQUIRE)
        acquire_begin(call->client, op);
    else if (call->kind != OP_PROCLAIM)
        release_begin(call->client, op);
    else if ((rc = format_op(op))) /* it publishes: formatted here */
        op_complete(op, rc, 0);
    else
        op_attempt(op);
}

/* A lock call's answer (call.h's `reply`): reply, or none (err). */
static void on_reply(struct call *call, const redisReply *reply, int err)
{
    struct op *op = op_of(call);
    struct lw_client *c = call->client;

    if (sent_as_handoff(op)) {
        handoff_reply(c, op, reply, err);
        return;
    }
    if (op->call.kind == OP_UNDO) { /* done or not, the acquire failed */
        if (err)
            acquire_unanswered(c, op);
        op_complete(op, op->call.undo_err, 0);
        return;
    }
    if (op->call.kind == OP_TRIM) {
        if (err)
            acquire_unanswered(c, op);
        trim_reply(c, op, err ? NULL : reply);
        return;
    }
    if (err || reply->type == REDIS_REPLY_ERROR) {
        if (op->call.kind == OP_UNLOCK) /* it may or may not have run */
            watchdog_unlock_end(c, op->lock, op->call.owner, UNLOCK_UNKNOWN);
        else if (op->call.kind == OP_ACQUIRE && err)
            acquire_unanswered(c, op);
        /* Redis could not be reached, or did not answer, and the wait
         * goes on: again (an attempt that may have run counts as sent
         * before: acquire_unanswered()'s mark). */
        if (op->call.kind == OP_ACQUIRE && call_retry(call, err)) {
            op_attempt(op);
            return;
        }
        op_complete(op, err ? err : reply_error(reply, &op->call.said), 0);
        return;
    }
    if (op->call.kind == OP_STATUS) {
        op_complete(op, status_decode(reply, op->call.arg), 0);
    } else if (op->call.kind == OP_LEADER) {
        struct lw_leader *l = op->out;
        int rc = leader_decode(reply, l);

        /* No other leader before its lease, counted from the read's last
         * write, runs out (the belief rule). */
        if (rc == 0 && l->held && l->ttl_ms > 0)
            l->sure_until_ns =
                lease_valid_until((uint64_t)l->ttl_ms, request_lease_from(&op->call.req));
        op_complete(op, rc, 0);
    } else if (op->call.kind == OP_ACQUIRE) {
        acquire_reply(c, op, reply);
    } else if (op->call.kind == OP_UNLOCK) {
        int64_t left = reply_integer(reply);

        watchdog_unlock_end(c, op->lock, op->call.owner, left);
        holds_released(c, op->lock, op->call.owner, left);
        op_complete(op, left < 0 ? LW_ENOTOWNER : 0, left < 0 ? 0 : left);
    } else {
        if (op->call.kind == OP_FORCE && !op->lock->way->forgets_forced &&
            reply_integer(reply) == 1)
            watchdog_forget(c, op->lock); /* every hold of the name is gone */
        op_complete(op, 0, reply_integer(reply));
    }
}

/* The lock calls' row (call.h). */
static void ref_lock(struct call *call)
{
    lock_ref(op_of(call)->lock);
}

static void unref_lock(struct call *call)
{
    lock_unref(op_of(call)->lock);
}

static const struct call_class lock_calls = {
    .ref = ref_lock,
    .unref = unref_lock,
    .begin = begin,
    .format = format_attempt,
    .reply = on_reply,
    .admitted = acquire_admitted,
    .acked = acquire_acked,
    .undo = undo_acquire,
    .ending = ending,
    .discard = discard,
};

/* ---- Starting an op (calling thread) ---- */

/* lw_name_status's command: the name and Redisson's suffixName(name,
 * "timeout"), "{name}:timeout" (tag.h: a permit semaphore's zset), and a fair lock's queue,
 * give-up times and places (prefixName): all in the name's slot. */
static int format_status(struct op *op)
{
    const char *const *fair = way_fair.companions;
    const struct lw_lock *lock = op->lock;
    size_t lens[5] = {lock->len};
    char *keys[5] = {NULL, tag_key("", lock->name, lock->len, ":timeout", &lens[1])};
    int rc = LW_ENOMEM;

    for (int i = 0; i < 3; i++)
        keys[2 + i] = prefix_name(fair[i], lock->name, lock->len, &lens[2 + i]);
    if (keys[1] && keys[2] && keys[3] && keys[4]) {
        keys[0] = (char *)lock->name;
        rc = request_evalsha(&op->call.req, SCRIPT_STATUS, 5, 5, (const char **)keys, lens);
    }
    for (int i = 1; i < 5; i++)
        free(keys[i]);
    return rc;
}

/* Format the op's command.  Its lock and kind are set.  Only the kinds
 * that publish read the publish command, which follows pub/sub state the
 * engine thread writes: they are formatted there (unlock and force-unlock
 * in their task step, an undo and a trim from a reply), while an acquire
 * or a query is formatted on the caller's thread. */
static int format_command(struct op *op)
{
    const struct lw_lock *lock = op->lock;
    char field[FIELD_MAX + 8];
    size_t flen = client_field(lock->client, op->call.owner, field);
    const char *cmd[3] = {NULL, lock->name, field};
    size_t lens[3] = {0, lock->len, flen};
    int rc;

    memcpy(field + flen, lock->way->field_suffix, strlen(lock->way->field_suffix) + 1);
    lens[2] = flen += strlen(lock->way->field_suffix);
    if ((rc = lock->way->format(op, field, flen)) != 1)
        return rc;
    switch (op->call.kind) {
    case OP_STATUS: return format_status(op);
    case OP_IS_LOCKED: cmd[0] = "EXISTS"; break;
    case OP_IS_HELD: cmd[0] = "HEXISTS"; break;
    case OP_COUNT: cmd[0] = "HGET"; break;
    default: cmd[0] = "PTTL"; break;
    }
    lens[0] = strlen(cmd[0]);
    return request_command(&op->call.req, op->call.kind == OP_IS_LOCKED || op->call.kind == OP_TTL ? 2 : 3,
                           cmd, lens);
}

/* Format the op's command, routed by its lock's slot: every key a lock's
 * command touches is in that slot. */
static int format_op(struct op *op)
{
    int rc = format_command(op);

    if (rc == 0)
        request_route_slot(&op->call.req, op->lock->slot);
    if (rc == 0 && op->call.kind == OP_ACQUIRE)
        request_settle(&op->call.req); /* Sentinel: not at once after a switch */
    return rc;
}

/* Check and format; the op's fields besides these are zero. */
static int prepare_op(struct op *op, struct lw_lock *lock, int kind, uint64_t owner,
                      uint64_t wait_ms, uint64_t lease_ms)
{
    int rc;

    if (!lock)
        return LW_EINVAL;
    if (kind == OP_ACQUIRE && (rc = call_check_lease(lock->client, lease_ms)))
        return rc;
    op->lock = lock;
    call_init(&op->call, &lock_calls, lock->client, kind, lock->way->shares ? 0 : WAIT_ALL);
    set_kind(op, kind);
    op->call.owner = owner;
    op->call.lease_ms = lease_ms;
    if (kind == OP_ACQUIRE) {
        uint64_t cap = atomic_load_explicit(&lock->max_hold_ms, memory_order_relaxed);

        waiters_set_wait(&op->call.w, wait_ms);
        op->call.start_ns = lw_clock_now();
        op->call.max_hold_ms = cap ? cap : lock->client->max_hold_ms;
    }
    /* A first step on the engine thread (begin()): an acquire may queue
     * behind this client's waiters; an unlock stops the watchdog, and may
     * hand the lock over. */
    op->call.task =
        kind == OP_ACQUIRE || kind == OP_UNLOCK || kind == OP_FORCE || kind == OP_PROCLAIM;
    /* Acquires that replicas must acknowledge go over the side lane, where
     * their WAIT follows them (replicas.c). */
    if (kind == OP_ACQUIRE && lock->client->replicas)
        op->call.req.lane = LW_LANE_SIDE;
    /* Unlock and force-unlock publish: formatted on the engine thread, in
     * their task step, where the pub/sub mode is known.  So does a fair
     * lock's acquire (it wakes the queue's head), which also says whether
     * it may still join the queue: formatted at each (format_attempt()). */
    if (kind == OP_UNLOCK || kind == OP_FORCE || kind == OP_PROCLAIM ||
        (kind == OP_ACQUIRE && lock->way->per_attempt))
        return 0;
    return format_op(op);
}

/* Set up op (zeroed but for its caller's fields) and run it (call.h). */
static int run_op(struct op *op, struct lw_lock *lock, int kind, uint64_t owner,
                  uint64_t wait_ms, uint64_t lease_ms, int64_t *value)
{
    /* Refused before it is set up (as every call: call_gate()), for a
     * fair lock's command reads the engine's pub/sub state, gone once the
     * client is freed. */
    int rc = lock ? call_gate(lock->client, op->call.blocking) : LW_EINVAL;

    if (rc == 0)
        rc = prepare_op(op, lock, kind, owner, wait_ms, lease_ms);
    if (rc) {
        discard(&op->call); /* its class may not be set yet */
        call_discard(&op->call);
        return rc;
    }
    return call_run(&op->call, value);
}

int lock_run(struct lw_lock *lock, int kind, const struct lock_run_args *a, int64_t *value)
{
    struct op stack, *op = a->done ? calloc(1, sizeof *op) : &stack;

    if (!op)
        return LW_ENOMEM;
    if (!a->done)
        memset(op, 0, sizeof *op);
    op->call.heap = a->done != NULL;
    op->call.blocking = a->done == NULL;
    op->call.done = a->done;
    op->call.arg = a->arg;
    op->out = a->out;
    op->call.until_out = a->until_ns;
    op->term = a->term;
    op->set = a->set;
    if (a->value && !(op->payload = malloc(a->value_len ? a->value_len : 1))) {
        call_discard(&op->call);
        return LW_ENOMEM;
    }
    if (a->value)
        memcpy(op->payload, a->value, a->value_len);
    op->payload_len = a->value_len;
    return run_op(op, lock, kind, a->owner, a->wait_ms, 0, value);
}

/* A blocking call; until_ns (an acquire's, or NULL) gets the hold's sure
 * end. */
static int run_blocking_until(struct lw_lock *lock, int kind, uint64_t owner, uint64_t wait_ms,
                              uint64_t lease_ms, int64_t *value, uint64_t *until_ns)
{
    struct op op;

    memset(&op, 0, sizeof op); /* {0} would set an atomic pointer from an int */
    op.call.blocking = 1;
    op.call.until_out = until_ns;
    return run_op(&op, lock, kind, owner, wait_ms, lease_ms, value);
}

static int run_blocking(struct lw_lock *lock, int kind, uint64_t owner, uint64_t wait_ms,
                        uint64_t lease_ms, int64_t *value)
{
    return run_blocking_until(lock, kind, owner, wait_ms, lease_ms, value, NULL);
}

static int run_async_until(struct lw_lock *lock, int kind, uint64_t owner, uint64_t wait_ms,
                           uint64_t lease_ms, uint64_t *until_ns, lw_done_fn *done, void *arg)
{
    struct op *op = calloc(1, sizeof *op);

    if (!op)
        return LW_ENOMEM;
    op->call.heap = 1;
    op->call.done = done;
    op->call.arg = arg;
    op->call.until_out = until_ns;
    return run_op(op, lock, kind, owner, wait_ms, lease_ms, NULL);
}

static int run_async(struct lw_lock *lock, int kind, uint64_t owner, uint64_t wait_ms,
                     uint64_t lease_ms, lw_done_fn *done, void *arg)
{
    return run_async_until(lock, kind, owner, wait_ms, lease_ms, NULL, done, arg);
}

/* ---- The API ---- */

int lw_acquire(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms, uint64_t lease_ms,
               uint64_t *token)
{
    int64_t value = 0;
    int rc = run_blocking(lock, OP_ACQUIRE, owner, wait_ms, lease_ms, &value);

    if (rc == 0 && token)
        *token = (uint64_t)value;
    return rc;
}

int lw_acquire_until(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms, uint64_t lease_ms,
                     uint64_t *token, uint64_t *until_ns)
{
    int64_t value = 0;
    int rc;

    if (!until_ns)
        return LW_EINVAL;
    rc = run_blocking_until(lock, OP_ACQUIRE, owner, wait_ms, lease_ms, &value, until_ns);
    if (rc == 0 && token)
        *token = (uint64_t)value;
    return rc;
}

int lw_lock_acquire(struct lw_lock *lock, uint64_t *token)
{
    return lw_acquire(lock, lw_owner_self(), LW_WAIT_FOREVER, 0, token);
}

int lw_lock_lease(struct lw_lock *lock, uint64_t lease_ms, uint64_t *token)
{
    if (lease_ms == 0)
        return LW_EINVAL;
    return lw_acquire(lock, lw_owner_self(), LW_WAIT_FOREVER, lease_ms, token);
}

int lw_trylock(struct lw_lock *lock, uint64_t wait_ms, uint64_t lease_ms, uint64_t *token)
{
    return lw_acquire(lock, lw_owner_self(), wait_ms, lease_ms, token);
}

int lw_unlock_owner(struct lw_lock *lock, uint64_t owner)
{
    return run_blocking(lock, OP_UNLOCK, owner, 0, 0, NULL);
}

int lw_unlock_after(struct lw_lock *lock, uint64_t owner, uint64_t after_ms)
{
    if (after_ms == 0 || after_ms > LW_MAX_LEASE_MS)
        return LW_ERANGE;
    /* A read-write lock's release has Redisson's script, which frees a
     * last hold at once: no minimum hold for it. */
    if (lock && !lock->way->min_hold)
        return LW_EINVAL;
    /* An unlock whose lease_ms says how long the last hold leaves it. */
    return run_blocking(lock, OP_UNLOCK, owner, 0, after_ms, NULL);
}

int lw_name_status(struct lw_lock *lock, struct lw_name_status *out)
{
    struct op op;

    if (!out)
        return LW_EINVAL;
    memset(&op, 0, sizeof op);
    op.call.blocking = 1;
    op.call.arg = out; /* the struct to fill (status_decode()) */
    return run_op(&op, lock, OP_STATUS, 0, 0, 0, NULL);
}

int lw_unlock(struct lw_lock *lock)
{
    return lw_unlock_owner(lock, lw_owner_self());
}

/* A blocking query whose answer is a small count or flag. */
static int query(struct lw_lock *lock, int kind)
{
    int64_t value = 0;
    int rc = run_blocking(lock, kind, lw_owner_self(), 0, 0, &value);

    return rc ? rc : (int)value;
}

int lw_force_unlock(struct lw_lock *lock)
{
    return query(lock, OP_FORCE);
}

int lw_is_locked(struct lw_lock *lock)
{
    return query(lock, OP_IS_LOCKED);
}

int lw_is_held(struct lw_lock *lock)
{
    return query(lock, OP_IS_HELD);
}

int lw_hold_count(struct lw_lock *lock)
{
    return query(lock, OP_COUNT);
}

int lw_remaining_ttl(struct lw_lock *lock, int64_t *ttl_ms)
{
    int64_t value = 0;
    int rc;

    if (!ttl_ms)
        return LW_EINVAL;
    rc = run_blocking(lock, OP_TTL, 0, 0, 0, &value);
    if (rc == 0)
        *ttl_ms = value;
    return rc;
}

int lw_acquire_async(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms,
                     uint64_t lease_ms, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_ACQUIRE, owner, wait_ms, lease_ms, done, arg);
}

int lw_acquire_until_async(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms,
                           uint64_t lease_ms, uint64_t *until_ns, lw_done_fn *done, void *arg)
{
    if (!until_ns)
        return LW_EINVAL;
    return run_async_until(lock, OP_ACQUIRE, owner, wait_ms, lease_ms, until_ns, done, arg);
}

int lw_unlock_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_UNLOCK, owner, 0, 0, done, arg);
}

int lw_force_unlock_async(struct lw_lock *lock, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_FORCE, 0, 0, 0, done, arg);
}

int lw_is_locked_async(struct lw_lock *lock, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_IS_LOCKED, 0, 0, 0, done, arg);
}

int lw_is_held_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_IS_HELD, owner, 0, 0, done, arg);
}

int lw_hold_count_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_COUNT, owner, 0, 0, done, arg);
}

int lw_remaining_ttl_async(struct lw_lock *lock, lw_done_fn *done, void *arg)
{
    return run_async(lock, OP_TTL, 0, 0, 0, done, arg);
}
