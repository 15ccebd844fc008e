/*
 * core/way_elect.c - an election's lock: its row of the ways (way.h).
 *
 * The hash `name` is a plain lock's (Redisson's RLock: field "<client
 * id>:<owner>", value the holds), and an elected one also holds the term
 * and the value (scripts.h's ELECT_TERM_FIELD, ELECT_VALUE_FIELD).  A
 * campaign is the lock's acquire that, when it takes the lock, draws the
 * term from the name's fencing counter and writes both (SCRIPT_ELECT); it
 * answers in the lock's three shapes, so lock.c reads it unchanged, its
 * token being the term.  A resign is the lock's unlock that also says so
 * on the election's channel, leasewheel_election:{name} (SCRIPT_RESIGN);
 * a proclaim and the leader's read are an election's own
 * (SCRIPT_PROCLAIM, SCRIPT_LEADER).
 *
 * Two rows.  A queued election's (way_elect_queued, the default) waits
 * in the fair lock's queue in Redis, first come first served across
 * every client, with a place that is a lease (way_fair.c's queue): a
 * candidate that dies drops out within a place lease.  Its campaign and
 * resign are the fair lock's acquire and unlock with the election's
 * writes (SCRIPT_ELECT_FAIR, SCRIPT_RESIGN_FAIR).  An unqueued one's
 * (way_elect) waits in this client's line for the name (way.c), woken by
 * Redisson's unlock message on the lock's channel.  Both are formatted
 * for each attempt: the scripts carry the publish command, which follows
 * the pub/sub mode.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "lock_op.h"
#include "publish.h"
#include "scripts.h"
#include "way.h"

static int format(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    /* Read on the engine thread only: every kind that publishes is
     * formatted there (lock.c's prepare_op()). */
    const char *publish = op->call.kind == OP_LEADER ? "" : client_publish_command(lock->client);
    const char *channel = lock->companion_keys[0];
    size_t clen = lock->companion_lens[0], plen = strlen(publish);
    char lease[24], term[24];

    switch (op->call.kind) {
    case OP_ACQUIRE:
        way_lease_arg(op, lease);
        return request_evalsha(
            &op->call.req, SCRIPT_ELECT, 3, 7,
            (const char *[]){lock->name, lock->token_key, channel, lease, field, op->payload,
                             publish},
            (size_t[]){lock->len, lock->token_len, clen, strlen(lease), flen, op->payload_len,
                       plen});
    case OP_UNLOCK:
    case OP_UNDO:
    case OP_TRIM:
        return request_evalsha(&op->call.req, SCRIPT_RESIGN, 3, 5,
                               (const char *[]){lock->name, lock->channel, channel, field, publish},
                               (size_t[]){lock->len, lock->channel_len, clen, flen, plen});
    case OP_PROCLAIM:
        snprintf(term, sizeof term, "%llu", (unsigned long long)op->term);
        return request_evalsha(
            &op->call.req, SCRIPT_PROCLAIM, 2, 6,
            (const char *[]){lock->name, channel, field, term, op->payload, publish},
            (size_t[]){lock->len, clen, flen, strlen(term), op->payload_len, plen});
    case OP_LEADER:
        return request_evalsha(&op->call.req, SCRIPT_LEADER, 1, 1, (const char *[]){lock->name},
                               (size_t[]){lock->len});
    case OP_FORCE:
        return request_evalsha(&op->call.req, SCRIPT_FORCE, 2, 3,
                               (const char *[]){lock->name, lock->channel, publish},
                               (size_t[]){lock->len, lock->channel_len, plen});
    default: return 1;
    }
}

/* A queued election's campaign and resign (the rest is format()'s). */
static int format_queued(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    const char *channel = lock->companion_keys[0];
    size_t clen = lock->companion_lens[0];

    switch (op->call.kind) {
    case OP_ACQUIRE:
        return way_queue_acquire(op, field, flen, SCRIPT_ELECT_FAIR, channel, clen, op->payload,
                                 op->payload_len);
    case OP_UNLOCK:
    case OP_UNDO:
    case OP_TRIM:
        return way_queue_unlock(op, field, flen, SCRIPT_RESIGN_FAIR, channel, clen);
    case OP_FORCE: return way_queue_force(op); /* and the queue's head woken */
    default: return format(op, field, flen);
    }
}

/* Its channel, beside the lock's: elected, proclaimed, resigned. */
static const char *const companions[LOCK_COMPANIONS] = {ELECTION_PREFIX};
/* A queued one's, and then the fair lock's queue, give-up times and
 * places. */
static const char *const queued_companions[LOCK_COMPANIONS] = {
    ELECTION_PREFIX, FAIR_QUEUE_PREFIX, FAIR_TIMEOUT_PREFIX, FAIR_PLACE_PREFIX};

const struct lock_way way_elect = {
    .channel_prefix = CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format,
    .join = way_line_join,
    .leave = way_line_leave,
    .queues = 1,
    .per_attempt = 1,
    .kind = KIND_LOCK,
    .fences = 1,
    .forgets_forced = 1,
    .companions = companions,
};

const struct lock_way way_elect_queued = {
    .channel_prefix = CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format_queued,
    .join = way_queue_join,
    .leave = way_queue_leave,
    .per_attempt = 1,
    .kind = KIND_FAIR,
    .fences = 1,
    .forgets_forced = 1,
    .companions = queued_companions,
    .queue_at = 1,
};
