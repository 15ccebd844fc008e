/*
 * core/way_fair.c - a fair lock, asked for as Redisson's RFairLock is:
 * its row of the ways (way.h), and its acquires waiting for their turn
 * in Redis's queue.
 *
 * The scripts (scripts.c, SCRIPT_FAIR_*) keep Redisson's keys: the lock's
 * hash (an RLock's), the queue redisson_lock_queue:{name} and the give-up
 * times redisson_lock_timeout:{name}; ours add the places
 * leasewheel_lock_place:{name}.  Each first drops the queue's stale head
 * by Redis's TIME, which it reads itself: no client's clock enters the
 * queue's times (a place's, a give-up time), and a place's lease counts
 * from the command's last write.  An acquire is formatted again for each
 * attempt: whether it may still join the queue depends on its deadline.
 *
 * A fair lock's line is not this client's but Redis's: the queue, which
 * every client of the name, Redisson's too, joins at its tail and leaves
 * at its head.  So
 * unlike a lock's waiters, who keep a line of their own in the client and
 * share the name's channel, each acquire here waits alone (waiters.c,
 * with its op's row, as any lock's waiter):
 *
 *   - on a channel of its own, redisson_lock__channel:{name}:<field>,
 *     on which an unlock, a force-unlock, a waiter leaving the head or a
 *     stale head dropped publishes only when it is that waiter's turn
 *     (scripts.c, LUA_FAIR's wake()): a message, or a confirmed
 *     subscription, gives it its turn, and the script says whether it is
 *     first and the lock free;
 *   - with a place that is a lease: the watchdog renews it (kind_place.c)
 *     from the first answer "in the queue" until the acquire ends, so
 *     that a waiter that dies drops out within a place lease;
 *   - with a timer at the answer's "look again" (the lock's PTTL when it
 *     heads the queue, or when the head before it can be dropped), for
 *     the turns nobody announces: a lease running out, a head that died;
 *   - leaving the queue when it gives up (SCRIPT_FAIR_LEAVE, as
 *     Redisson's acquireFailed), so that nobody waits for it; the leave
 *     is a call of its own, sent after the acquire has ended.
 *
 * That waiting, and the acquire's arguments, are way.c's (way_queue_*):
 * a queued election waits the same way.
 */
#include "client_base.h"
#include "lock_op.h"
#include "scripts.h"
#include "way.h"

/* A fair lock's command (scripts.c, SCRIPT_FAIR_*): its acquire, its
 * unlock (an undo's and a trim's too) and force-unlock, each dropping the
 * queue's stale head by Redis's clock and waking the head when the lock
 * is free; 1 for a plain command, the caller's. */
static int format_fair(struct op *op, const char *field, size_t flen)
{
    switch (op->call.kind) {
    case OP_ACQUIRE: return way_queue_acquire(op, field, flen, SCRIPT_FAIR_LOCK, NULL, 0, NULL, 0);
    case OP_UNLOCK:
    case OP_UNDO:
    case OP_TRIM: return way_queue_unlock(op, field, flen, SCRIPT_FAIR_UNLOCK, NULL, 0);
    case OP_FORCE: return way_queue_force(op);
    default: return 1;
    }
}

/* Redisson's RFairLock's queue and give-up times, and the waiters'
 * places, ours (lock->companion_keys, in this order). */
static const char *const companions[LOCK_COMPANIONS] = {FAIR_QUEUE_PREFIX, FAIR_TIMEOUT_PREFIX,
                                                        FAIR_PLACE_PREFIX};

const struct lock_way way_fair = {
    .channel_prefix = CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format_fair,
    .join = way_queue_join,
    .leave = way_queue_leave,
    .per_attempt = 1,
    .kind = KIND_FAIR,
    .fences = 1,
    .companions = companions,
};
