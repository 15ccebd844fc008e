/*
 * core/way_lock.c - a plain lock, asked for as Redisson's RLock is: its
 * row of the ways (way.h).
 *
 * The hash `name`, field "<client id>:<owner>", value the owner's hold
 * count; when the handle is fenced, the fencing token's counter beside
 * it (RedissonFencedLock's); the
 * channel redisson_lock__channel:{name}, on which an unlock publishes 0.
 * Beyond Redisson: an unlock of this client's hands the lock to its first
 * waiter in the same script (SCRIPT_HANDOFF: lock.c chooses the waiter),
 * and lw_unlock_after() leaves a last hold to expire no sooner than asked
 * (SCRIPT_MIN_HOLD).  A refused acquire waits in this client's line for
 * the name (way.c).
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "lock_op.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "way.h"

/* The hand-over script: this owner's hold released, the lock given to
 * op->handoff's owner with its lease. */
static int format_handoff(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    const struct op *w = op->handoff;
    char wfield[FIELD_MAX], lease[24];
    size_t wlen = client_field(lock->client, w->call.owner, wfield), tlen;
    const char *token = lock_token_key(w->lock, &tlen); /* the waiter's handle's */

    way_lease_arg(w, lease);
    return request_evalsha(&op->call.req, SCRIPT_HANDOFF, 2, 5,
                           (const char *[]){lock->name, token, field, wfield, lease},
                           (size_t[]){lock->len, tlen, flen, wlen, strlen(lease)});
}

static int format(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    const char *publish = NULL, *token;
    char lease[24];
    size_t tlen;

    switch (op->call.kind) {
    case OP_ACQUIRE:
        way_lease_arg(op, lease);
        token = lock_token_key(lock, &tlen);
        return request_evalsha(&op->call.req, SCRIPT_LOCK, 2, 4,
                               (const char *[]){lock->name, token, lease, field},
                               (size_t[]){lock->len, tlen, strlen(lease), flen});
    case OP_UNLOCK:
        if (op->handoff) /* to the first waiter, with its lease */
            return format_handoff(op, field, flen);
        if (op->call.lease_ms) { /* lw_unlock_after */
            way_lease_arg(op, lease);
            return request_evalsha(&op->call.req, SCRIPT_MIN_HOLD, 1, 3,
                                   (const char *[]){lock->name, field, lease},
                                   (size_t[]){lock->len, flen, strlen(lease)});
        }
        /* fall through */
    case OP_UNDO:
    case OP_TRIM:
        publish = client_publish_command(lock->client);
        return request_evalsha(&op->call.req, SCRIPT_UNLOCK, 2, 4,
                               (const char *[]){lock->name, lock->channel, field, publish},
                               (size_t[]){lock->len, lock->channel_len, flen,
                                          strlen(publish)});
    case OP_FORCE:
        publish = client_publish_command(lock->client);
        return request_evalsha(&op->call.req, SCRIPT_FORCE, 2, 3,
                               (const char *[]){lock->name, lock->channel, publish},
                               (size_t[]){lock->len, lock->channel_len, strlen(publish)});
    default: return 1;
    }
}

const struct lock_way way_lock = {
    .channel_prefix = CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format,
    .join = way_line_join,
    .leave = way_line_leave,
    .queues = 1,
    .kind = KIND_LOCK,
    .fences = 1,
    .hands_over = 1,
    .min_hold = 1,
    .forgets_forced = 1,
    .multi_mode = 'l',
};
