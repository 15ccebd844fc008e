/*
 * core/way_rw.c - the two halves of a read-write lock, asked for as
 * Redisson's RReadWriteLock is (RedissonReadLock, RedissonWriteLock):
 * their rows of the ways (way.h).
 *
 * One hash `name` for both: `mode` "read" or "write", a field per holder
 * ("<client id>:<owner>", a writer's with ":write"), and for each read
 * hold a timeout key {name}:<field>:rwlock_timeout:<n> whose expiry the
 * hash's follows; the channel redisson_rwlock:{name}, on which the last
 * reader out publishes 0 and a writer 1.  Readers share, so waiters
 * behind a reader that got in try too; a refused acquire waits in this
 * client's line for the name (way.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "lock_op.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "tag.h"
#include "way.h"

/* "{name}" (tag.h), then, with field,
 * ":<field>:rwlock_timeout": the prefix of a reader's timeout keys, by
 * Redisson's suffixName rule.  Into buf (LW_LOCK_NAME_MAX + FIELD_MAX +
 * 20); its length. */
static size_t timeout_prefix(const struct lw_lock *lock, const char *field, size_t flen,
                             char *buf)
{
    size_t n = tag_name(buf, lock->name, lock->len);

    if (field) {
        n += (size_t)sprintf(buf + n, ":%.*s:rwlock_timeout", (int)flen, field);
    }
    return n;
}

/* A read lock's acquire and release (the read-write lock's scripts). */
static int format_read(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    char lease[24], wfield[FIELD_MAX + 8], tag[LW_LOCK_NAME_MAX + 3];
    char *prefix = malloc(LW_LOCK_NAME_MAX + FIELD_MAX + 24);
    size_t plen, tlen = timeout_prefix(lock, NULL, 0, tag);
    const char *publish;
    int rc;

    if (!prefix)
        return LW_ENOMEM;
    plen = timeout_prefix(lock, field, flen, prefix);
    if (op->call.kind == OP_ACQUIRE) {
        way_lease_arg(op, lease);
        memcpy(wfield, field, flen);
        memcpy(wfield + flen, ":write", 6);
        rc = request_evalsha(&op->call.req, SCRIPT_READ_LOCK, 2, 5,
                             (const char *[]){lock->name, prefix, lease, field, wfield},
                             (size_t[]){lock->len, plen, strlen(lease), flen, flen + 6});
    } else {
        publish = client_publish_command(lock->client);
        rc = request_evalsha(
            &op->call.req, SCRIPT_READ_UNLOCK, 4, 6,
            (const char *[]){lock->name, lock->channel, prefix, tag, field, publish},
            (size_t[]){lock->len, lock->channel_len, plen, tlen, flen, strlen(publish)});
    }
    free(prefix);
    return rc;
}

/* A read-write lock's command (op->lock a read or a write lock), field
 * its owner's field ("...:write" for the write lock). */
static int format_rw(struct op *op, const char *field, size_t flen)
{
    const struct lw_lock *lock = op->lock;
    int write = lock->way == &way_write;
    const char *mode = write ? "write" : "read", *publish, *token;
    char lease[24];
    size_t tlen;

    switch (op->call.kind) {
    case OP_ACQUIRE:
        if (!write)
            return format_read(op, field, flen);
        way_lease_arg(op, lease);
        token = lock_token_key(lock, &tlen);
        return request_evalsha(&op->call.req, SCRIPT_WRITE_LOCK, 2, 5,
                               (const char *[]){lock->name, token, lease, field, field},
                               (size_t[]){lock->len, tlen, strlen(lease), flen, flen - 6});
    case OP_UNLOCK:
    case OP_UNDO:
    case OP_TRIM:
        if (!write)
            return format_read(op, field, flen);
        publish = client_publish_command(lock->client);
        return request_evalsha(&op->call.req, SCRIPT_WRITE_UNLOCK, 2, 4,
                               (const char *[]){lock->name, lock->channel, field, publish},
                               (size_t[]){lock->len, lock->channel_len, flen,
                                          strlen(publish)});
    case OP_FORCE:
        publish = client_publish_command(lock->client);
        return request_evalsha(
            &op->call.req, SCRIPT_RW_FORCE, 2, 5,
            (const char *[]){lock->name, lock->channel, mode, publish, write ? "1" : "0"},
            (size_t[]){lock->len, lock->channel_len, strlen(mode), strlen(publish), 1});
    case OP_IS_LOCKED:
        return request_evalsha(&op->call.req, SCRIPT_RW_IS_LOCKED, 1, 2,
                               (const char *[]){lock->name, mode},
                               (size_t[]){lock->len, strlen(mode)});
    default:
        return 1; /* a plain command: the caller's */
    }
}

const struct lock_way way_read = {
    .channel_prefix = RW_CHANNEL_PREFIX,
    .field_suffix = "",
    .format = format_rw,
    .join = way_line_join,
    .leave = way_line_leave,
    .queues = 1,
    .shares = 1,
    .kind = KIND_READ,
};

const struct lock_way way_write = {
    .channel_prefix = RW_CHANNEL_PREFIX,
    .field_suffix = ":write",
    .format = format_rw,
    .join = way_line_join,
    .leave = way_line_leave,
    .queues = 1,
    .kind = KIND_WRITE,
    .fences = 1,
    .multi_mode = 'w',
};
