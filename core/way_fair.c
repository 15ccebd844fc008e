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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "lock_op.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "waiters.h"
#include "watchdog.h"
#include "way.h"

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
    return lock->channel_len + 1 + client_field(c, op->call.owner, buf + lock->channel_len + 1);
}

/* An acquire of a fair lock was answered "in the queue": its place is
 * kept from now on (the watchdog renews it, counted from the command's
 * last write), and it listens on its own channel. */
static int join(struct lw_client *c, struct op *op)
{
    uint64_t from_ns = request_lease_from(&op->call.req);
    char name[OWN_CHANNEL_MAX];

    if (!op->queued) {
        op->queued = 1;
        watchdog_place_taken(c, op->lock, op->call.owner, from_ns);
    }
    return waiters_join(c, &op->call.w, name, own_channel(c, op, name));
}

/* ---- Leaving the queue ---- */

static void on_left(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)reply;
    (void)err; /* best effort: the place's lease ends it otherwise */
    (void)arg;
    request_clear(req);
    free(req);
}

/* SCRIPT_FAIR_LEAVE for op's owner, on its own: the give-up times behind
 * it move up by the wait (Redisson's rule), and the next is woken when it
 * headed the queue and the lock is free. */
static void leave_queue(struct lw_client *c, const struct op *op)
{
    const struct lw_lock *lock = op->lock;
    struct request *req = calloc(1, sizeof *req);
    char field[FIELD_MAX], wait[24];
    size_t flen = client_field(c, op->call.owner, field);
    const char *publish = client_publish_command(c);
    size_t wlen = (size_t)snprintf(wait, sizeof wait, "%llu", (unsigned long long)c->fair_wait_ms);

    if (!req)
        return;
    /* The command holds all it needs: nothing points at op or its lock. */
    if (request_evalsha(req, SCRIPT_FAIR_LEAVE, 4, 8,
                        (const char *[]){lock->name, lock->companion_keys[0], lock->companion_keys[1],
                                         lock->companion_keys[2], field, wait, lock->channel,
                                         publish},
                        (size_t[]){lock->len, lock->companion_lens[0], lock->companion_lens[1],
                                   lock->companion_lens[2], flen, wlen, lock->channel_len,
                                   strlen(publish)}) != 0) {
        on_left(req, NULL, LW_ENOMEM, NULL);
        return;
    }
    request_route_slot(req, lock->slot);
    if (engine_submit(c->engine, req, on_left, NULL) != 0)
        on_left(req, NULL, LW_ESHUTDOWN, NULL);
}

/* op ends, with the lock (acquired) or not: it stops listening, its
 * place is no longer kept, and one it gives up leaves the queue in Redis
 * (a call of its own, after op is gone; best effort: the place's lease
 * ends it otherwise). */
static void leave(struct lw_client *c, struct op *op, int acquired)
{
    if (op->call.w.link.chan)
        waiters_leave(c, &op->call.w, WAIT_PASS, 0); /* alone on its channel */
    if (!op->queued)
        return;
    op->queued = 0;
    if (c->wheel)
        watchdog_place_left(c, op->lock, op->call.owner);
    if (!acquired && !c->closing)
        leave_queue(c, op);
}

/* ---- Its commands ---- */

/* A fair lock's acquire: the lock, the queue, the give-up times, the
 * places, the token key; the lease, the field, the wait the queue counts
 * with, the lock's channel (a waiter's is it and its field), the publish
 * command, whether to join the queue (a try without wait does not; nor
 * does an attempt past its deadline), the place's lease. */
static int format_fair_acquire(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    const struct lw_client *c = lock->client;
    const char *publish = client_publish_command(c), *token;
    char lease[24], wait[24];
    size_t tlen;

    way_lease_arg(op, lease);
    snprintf(wait, sizeof wait, "%llu", (unsigned long long)c->fair_wait_ms);
    token = lock_token_key(lock, &tlen);
    request_clear(&op->call.req);
    return request_evalsha(
        &op->call.req, SCRIPT_FAIR_LOCK, 5, 12,
        (const char *[]){lock->name, lock->companion_keys[0], lock->companion_keys[1], lock->companion_keys[2],
                         token, lease, field, wait, lock->channel, publish,
                         lw_clock_now() < op->call.w.deadline_ns ? "1" : "0",
                         c->terms[KIND_PLACE].lease_str},
        (size_t[]){lock->len, lock->companion_lens[0], lock->companion_lens[1], lock->companion_lens[2], tlen,
                   strlen(lease), flen, strlen(wait), lock->channel_len, strlen(publish), 1,
                   c->terms[KIND_PLACE].lease_len});
}

/* A fair lock's command (scripts.c, SCRIPT_FAIR_*): its acquire, its
 * unlock (an undo's and a trim's too) and force-unlock, each dropping the
 * queue's stale head by Redis's clock and waking the head when the lock
 * is free; 1 for a plain command, the caller's. */
static int format_fair(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    const char *publish = client_publish_command(lock->client);

    switch (op->call.kind) {
    case OP_ACQUIRE: return format_fair_acquire(op, field, flen);
    case OP_UNLOCK:
    case OP_UNDO:
    case OP_TRIM:
        return request_evalsha(
            &op->call.req, SCRIPT_FAIR_UNLOCK, 4, 7,
            (const char *[]){lock->name, lock->companion_keys[0], lock->companion_keys[1],
                             lock->companion_keys[2], field, publish, lock->channel},
            (size_t[]){lock->len, lock->companion_lens[0], lock->companion_lens[1], lock->companion_lens[2],
                       flen, strlen(publish), lock->channel_len});
    case OP_FORCE:
        return request_evalsha(
            &op->call.req, SCRIPT_FAIR_FORCE, 4, 6,
            (const char *[]){lock->name, lock->companion_keys[0], lock->companion_keys[1],
                             lock->companion_keys[2], publish, lock->channel},
            (size_t[]){lock->len, lock->companion_lens[0], lock->companion_lens[1], lock->companion_lens[2],
                       strlen(publish), lock->channel_len});
    default: return 1;
    }
}

/* Redisson's RFairLock's queue and give-up times, and the waiters'
 * places, ours (lock->companion_keys, in this order). */
static const char *const companions[3] = {FAIR_QUEUE_PREFIX, FAIR_TIMEOUT_PREFIX,
                                          FAIR_PLACE_PREFIX};

const struct lock_way way_fair = {
    .channel_prefix = CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format_fair,
    .join = join,
    .leave = leave,
    .per_attempt = 1,
    .kind = KIND_FAIR,
    .fences = 1,
    .companions = companions,
};
