/*
 * core/fair_queue.c - a fair lock's acquire, waiting for its turn in
 * Redis's queue.
 *
 * A fair lock's line is not this client's but Redis's: Redisson's
 * RFairLock queue (redisson_lock_queue:{name}), which every client of the
 * name, Redisson's too, joins at its tail and leaves at its head.  So
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
 */
#include <stdlib.h>
#include <string.h>

#include "client_private.h"
#include "fair_queue.h"
#include "owner.h"
#include "publish.h"
#include "watchdog.h"

/* Room for a waiter's channel: the lock's channel (its prefix, the name
 * and two braces), a ':' and the field. */
#define OWN_CHANNEL_MAX (sizeof CHANNEL_PREFIX + LW_LOCK_NAME_MAX + 3 + FIELD_MAX)

/* op's channel, "<lock's channel>:<client id>:<owner>", into buf
 * (OWN_CHANNEL_MAX); its length. */
static size_t own_channel(const struct lw_client *c, const struct op *op, char *buf)
{
    const struct lw_lock *lock = op->lock;

    memcpy(buf, lock->channel, lock->channel_len);
    buf[lock->channel_len] = ':';
    return lock->channel_len + 1 + client_field(c, op->owner, buf + lock->channel_len + 1);
}

int fair_wait(struct lw_client *c, struct op *op, uint64_t from_ns)
{
    char name[OWN_CHANNEL_MAX];

    if (!op->queued) {
        op->queued = 1;
        watchdog_place_taken(c, op->lock, op->owner, from_ns);
    }
    return waiters_join(c, &op->w, name, own_channel(c, op, name));
}

int fair_queued(const struct op *op)
{
    return op->queued;
}

/* ---- Leaving the queue ---- */

static void on_left(struct lw_request *req, const redisReply *reply, int err, void *arg)
{
    (void)reply;
    (void)err; /* best effort: the place's lease ends it otherwise */
    (void)arg;
    lw_request_clear(req);
    free(req);
}

/* SCRIPT_FAIR_LEAVE for op's owner, on its own: the give-up times behind
 * it move up by the wait (Redisson's rule), and the next is woken when it
 * headed the queue and the lock is free. */
static void leave_queue(struct lw_client *c, const struct op *op)
{
    const struct lw_lock *lock = op->lock;
    struct lw_request *req = calloc(1, sizeof *req);
    char field[FIELD_MAX], wait[24];
    size_t flen = client_field(c, op->owner, field);
    const char *publish = client_publish_command(c);
    size_t wlen = (size_t)snprintf(wait, sizeof wait, "%llu", (unsigned long long)c->fair_wait_ms);

    if (!req)
        return;
    /* The command holds all it needs: nothing points at op or its lock. */
    if (lw_request_evalsha(req, SCRIPT_FAIR_LEAVE, 4, 8,
                           (const char *[]){lock->name, lock->fair_keys[0], lock->fair_keys[1],
                                            lock->fair_keys[2], field, wait, lock->channel,
                                            publish},
                           (size_t[]){lock->len, lock->fair_lens[0], lock->fair_lens[1],
                                      lock->fair_lens[2], flen, wlen, lock->channel_len,
                                      strlen(publish)}) != 0) {
        on_left(req, NULL, LW_ENOMEM, NULL);
        return;
    }
    lw_request_route_slot(req, lock->slot);
    if (lw_engine_submit(c->engine, req, on_left, NULL) != 0)
        on_left(req, NULL, LW_ESHUTDOWN, NULL);
}

void fair_leave(struct lw_client *c, struct op *op, int acquired)
{
    if (op->w.link.chan)
        waiters_leave(c, &op->w, WAIT_PASS, 0); /* alone on its channel */
    if (!op->queued)
        return;
    op->queued = 0;
    if (c->wheel)
        watchdog_place_left(c, op->lock, op->owner);
    if (!acquired && !c->closing)
        leave_queue(c, op);
}
