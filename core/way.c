/*
 * core/way.c - what the ways of asking for a lock share (way.h): the
 * lease argument of an acquire, this client's line for a name, and
 * Redis's queue for it (a fair lock's and a queued election's: how a
 * waiter waits there is way_fair.c's header comment).
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

void way_lease_arg(const struct op *op, char *buf)
{
    const struct lease_terms *t = &op->lock->client->terms[op->lock->kind];

    if (op->call.lease_ms)
        snprintf(buf, 24, "%llu", (unsigned long long)op->call.lease_ms);
    else
        memcpy(buf, t->lease_str, t->lease_len + 1);
}

int way_line_join(struct lw_client *c, struct op *op)
{
    return waiters_join(c, &op->call.w, op->lock->channel, op->lock->channel_len);
}

/* Without the lock, the turn passes on; with it, the readers behind a
 * reader share it, and after a write the next looks again a lease from
 * now, should that lock end unsaid (a hand-over, or a message, comes
 * first otherwise). */
void way_line_leave(struct lw_client *c, struct op *op, int acquired)
{
    uint64_t lease_ms = op->call.lease_ms ? op->call.lease_ms : c->lease_ms;

    if (!op->call.w.link.chan)
        return;
    if (!acquired)
        waiters_leave(c, &op->call.w, WAIT_PASS, 0);
    else
        waiters_leave(c, &op->call.w, op->lock->way->shares ? 0 : -1,
                      lw_clock_now() + lease_ms * 1000000u + c->tick_ns);
}

/* ---- Redis's queue for a name ---- */

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

/* The fair queue's keys among lock's companions (way.h's queue_at): 0
 * the queue, 1 the give-up times, 2 the places. */
void way_queue_keys(const struct lw_lock *lock, const char *q[3], size_t ql[3])
{
    for (int i = 0; i < 3; i++) {
        q[i] = lock->companion_keys[lock->way->queue_at + i];
        ql[i] = lock->companion_lens[lock->way->queue_at + i];
    }
}

/* An acquire of a fair lock was answered "in the queue": its place is
 * kept from now on (the watchdog renews it, counted from the command's
 * last write), and it listens on its own channel. */
int way_queue_join(struct lw_client *c, struct op *op)
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
    const char *publish = client_publish_command(c), *q[3];
    size_t wlen = (size_t)snprintf(wait, sizeof wait, "%llu", (unsigned long long)c->fair_wait_ms);
    size_t ql[3];

    if (!req)
        return;
    way_queue_keys(lock, q, ql);
    /* The command holds all it needs: nothing points at op or its lock. */
    if (request_evalsha(req, SCRIPT_FAIR_LEAVE, 4, 8,
                        (const char *[]){lock->name, q[0], q[1], q[2], field, wait, lock->channel,
                                         publish},
                        (size_t[]){lock->len, ql[0], ql[1], ql[2], flen, wlen, lock->channel_len,
                                   strlen(publish)}) != 0) {
        on_left(req, NULL, LW_ENOMEM, NULL);
        return;
    }
    request_route_slot(req, lock->slot);
    /* Behind the acquire, on its connection (the side lane when replicas
     * acknowledge acquires): Redis runs the leave after it, and before the
     * owner's next acquire, which takes that lane too. */
    req->lane = op->call.req.lane;
    if (engine_submit(c->engine, req, on_left, NULL) != 0)
        on_left(req, NULL, LW_ESHUTDOWN, NULL);
}

/* op ends, with the lock (acquired) or not: it stops listening, its
 * place is no longer kept, and one it gives up leaves the queue in Redis
 * (a call of its own, after op is gone; best effort: the place's lease
 * ends it otherwise).  So does one that asked to join and never heard
 * it had: its answer came after its wait was over (Redis paused,
 * stopped, a link holding the bytes), or never.  The script may have
 * put it in the queue all the same, with a place nobody renews, and
 * with no leave everyone behind it would wait out that place's lease;
 * the leave, on the same connection, runs after it. */
void way_queue_leave(struct lw_client *c, struct op *op, int acquired)
{
    /* Queued implies asked: only an attempt that asked is answered so. */
    int asked = op->join_asked;

    if (op->call.w.link.chan)
        waiters_leave(c, &op->call.w, WAIT_PASS, 0); /* alone on its channel */
    if (op->queued && c->wheel)
        watchdog_place_left(c, op->lock, op->call.owner);
    op->queued = op->join_asked = 0;
    if (asked && !acquired && !c->closing)
        leave_queue(c, op);
}

/* ---- Its commands ---- */

/* A fair lock's acquire: the lock, the queue, the give-up times, the
 * places, the token key (and more_key); the lease, the field, the wait
 * the queue counts with, the lock's channel (a waiter's is it and its
 * field), the publish command, whether to join the queue (a try without
 * wait does not; nor does an attempt past its deadline), the place's
 * lease (and more_arg). */
int way_queue_acquire(struct op *op, const char *field, size_t flen, int script,
                      const char *more_key, size_t more_key_len, const char *more_arg,
                      size_t more_arg_len)
{
    const struct lw_lock *lock = op->lock;
    const struct lw_client *c = lock->client;
    const char *publish = client_publish_command(c), *s[14];
    const char *join = lw_clock_now() < op->call.w.deadline_ns ? "1" : "0";
    char lease[24], wait[24];
    size_t len[14], tlen, n = 0, keys;

    way_lease_arg(op, lease);
    snprintf(wait, sizeof wait, "%llu", (unsigned long long)c->fair_wait_ms);
    s[n] = lock->name, len[n++] = lock->len;
    way_queue_keys(lock, s + n, len + n);
    n += 3;
    s[n] = lock_token_key(lock, &tlen), len[n++] = tlen;
    if (more_key)
        s[n] = more_key, len[n++] = more_key_len;
    keys = n;
    s[n] = lease, len[n++] = strlen(lease);
    s[n] = field, len[n++] = flen;
    s[n] = wait, len[n++] = strlen(wait);
    s[n] = lock->channel, len[n++] = lock->channel_len;
    s[n] = publish, len[n++] = strlen(publish);
    s[n] = join, len[n++] = 1;
    op->join_asked |= join[0] == '1';
    s[n] = c->terms[KIND_PLACE].lease_str, len[n++] = c->terms[KIND_PLACE].lease_len;
    if (more_key)
        s[n] = more_arg, len[n++] = more_arg_len;
    request_clear(&op->call.req);
    return request_evalsha(&op->call.req, script, (int)keys, (int)n, s, len);
}

/* An unlock of a name with a queue (script: SCRIPT_FAIR_UNLOCK's keys
 * and arguments, with one more key when more_key is not NULL): the
 * lock, the queue, the give-up times, the places (and more_key); the
 * field, the publish command, the lock's channel. */
int way_queue_unlock(struct op *op, const char *field, size_t flen, int script,
                     const char *more_key, size_t more_key_len)
{
    const struct lw_lock *lock = op->lock;
    const char *publish = client_publish_command(lock->client), *s[8];
    size_t len[8], n = 0, keys;

    s[n] = lock->name, len[n++] = lock->len;
    way_queue_keys(lock, s + n, len + n);
    n += 3;
    if (more_key)
        s[n] = more_key, len[n++] = more_key_len;
    keys = n;
    s[n] = field, len[n++] = flen;
    s[n] = publish, len[n++] = strlen(publish);
    s[n] = lock->channel, len[n++] = lock->channel_len;
    return request_evalsha(&op->call.req, script, (int)keys, (int)n, s, len);
}

/* A force-unlock of a name with a queue (SCRIPT_FAIR_FORCE): the lock
 * deleted, and the queue's head woken. */
int way_queue_force(struct op *op)
{
    const struct lw_lock *lock = op->lock;
    const char *publish = client_publish_command(lock->client), *q[3];
    size_t ql[3];

    way_queue_keys(lock, q, ql);
    return request_evalsha(
        &op->call.req, SCRIPT_FAIR_FORCE, 4, 6,
        (const char *[]){lock->name, q[0], q[1], q[2], publish, lock->channel},
        (size_t[]){lock->len, ql[0], ql[1], ql[2], strlen(publish), lock->channel_len});
}
