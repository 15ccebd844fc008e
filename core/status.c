/*
 * core/status.c - what a name holds, decoded (lw_name_status).
 *
 * SCRIPT_STATUS (scripts.c) reads the name in one step and replies with
 * the raw material: the key's TYPE and PTTL, and a hash's fields or a
 * semaphore's count and permits, and a fair lock's queue.  Here that
 * reply becomes a struct lw_name_status: which of Redisson's kinds it is
 * (a hash's "mode" field tells a read-write lock from a plain one; a
 * string holding a number is a semaphore's count; a hash of another
 * shape, or a string that is no count, is neither: LW_NAME_OTHER), and
 * who holds it.  Only the first LW_STATUS_HOLDERS holders are kept;
 * nholders counts them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "reply.h"
#include "status.h"
#include "scripts.h"

/* A bulk string's or an integer's value; 0 for anything else. */
static int64_t number_of(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return 0;
}

static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < ' ' || (unsigned char)s[i] > '~')
            return 0;
    return 1;
}

/* A holder's id as stored, or as hex when it is not printable (a permit's
 * 16 raw bytes); cut to fit. */
static void copy_id(char *out, const redisReply *r)
{
    size_t max = LW_STATUS_ID_MAX, n = r->type == REDIS_REPLY_STRING ? r->len : 0;

    if (printable(r->str, n)) {
        n = n < max ? n : max;
        memcpy(out, r->str, n);
        out[n] = 0;
        return;
    }
    out[0] = 0;
    for (size_t i = 0; i < n && 2 * i + 2 <= max; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)r->str[i]);
}

static void add_holder(struct lw_name_status *out, const redisReply *id, int64_t count,
                       int64_t ttl_ms)
{
    struct lw_name_holder *h;

    if (out->nholders++ >= LW_STATUS_HOLDERS)
        return;
    h = &out->holders[out->nholders - 1];
    copy_id(h->id, id);
    h->count = count;
    h->ttl_ms = ttl_ms;
}

/* Whether a string is a count, as a semaphore's is: an integer, all of
 * it (Redis's INCRBY takes nothing else). */
static int is_count(const redisReply *r)
{
    char *end;

    if (r->type != REDIS_REPLY_STRING || r->len == 0)
        return 0;
    (void)strtoll(r->str, &end, 10);
    return end == r->str + r->len;
}

/* A holder's field, as Redisson's and ours are: "<id>:<owner>" (and
 * ":write" for a writer) holding a count of holds, digits only (the
 * scripts' '^%d+$'). */
static int holder_shaped(const redisReply *f, const redisReply *v)
{
    if (!memchr(f->str, ':', f->len) || v->len == 0)
        return 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->str[i] < '0' || v->str[i] > '9')
            return 0;
    return 1;
}

/* A hash: a lock (one holder's field), or a read-write lock by its
 * "mode" (read or write; every other field a holder's).  Any other hash
 * is an application's, not a lock (LW_NAME_OTHER), as the acquires'
 * must_be_lock() (scripts.c) refuses it. */
static int decode_hash(const redisReply *fields, struct lw_name_status *out)
{
    int shaped = 1, rw = 0;
    size_t elected = 0; /* an election's term and value fields, beside the
                           holder's (scripts.h): a lock still */

    if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2)
        return LW_EREPLY;
    out->kind = LW_NAME_LOCK;
    for (size_t i = 0; i < fields->elements; i += 2) {
        const redisReply *f = fields->element[i], *v = fields->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            return LW_EREPLY;
        if (!strcmp(f->str, ELECT_TERM_FIELD)) {
            elected += 2;
            out->term = (uint64_t)number_of(v);
        } else if (!strcmp(f->str, ELECT_VALUE_FIELD)) {
            elected += 2;
            snprintf(out->value, sizeof out->value, "%.*s",
                     (int)(v->len < LW_STATUS_VALUE_MAX ? v->len : LW_STATUS_VALUE_MAX), v->str);
        } else if (strcmp(f->str, "mode") == 0) {
            rw = 1;
            out->kind = strcmp(v->str, "write") == 0 ? LW_NAME_WRITE : LW_NAME_READ;
            shaped &= !strcmp(v->str, "write") || !strcmp(v->str, "read");
        } else {
            shaped &= holder_shaped(f, v);
            add_holder(out, f, number_of(v), out->ttl_ms);
        }
    }
    if (!shaped || (!rw && fields->elements - elected != 2) || (rw && elected)) {
        out->kind = LW_NAME_OTHER;
        out->nholders = 0;
        memset(out->holders, 0, sizeof out->holders);
    }
    return 0;
}

/* A string beside its zset of permits: a permit semaphore.  A string
 * that is no count is not one: another value (LW_NAME_OTHER). */
static int decode_permits(const redisReply *count, const redisReply *permits,
                          struct lw_name_status *out)
{
    if (permits->type != REDIS_REPLY_ARRAY || permits->elements % 2)
        return LW_EREPLY;
    if (!is_count(count)) {
        out->kind = LW_NAME_OTHER;
        return 0;
    }
    out->kind = LW_NAME_PERMITS;
    out->permits = number_of(count);
    for (size_t i = 0; i < permits->elements; i += 2)
        add_holder(out, permits->element[i], 1, number_of(permits->element[i + 1]));
    return 0;
}

/* A fair lock's queue, {field, ms to give up, ms to the place's end or
 * "none", ...}, in order. */
static int decode_waiters(const redisReply *w, struct lw_name_status *out)
{
    if (w->type != REDIS_REPLY_ARRAY || w->elements % 3)
        return LW_EREPLY;
    for (size_t i = 0; i < w->elements; i += 3) {
        struct lw_name_waiter *v;
        const redisReply *place = w->element[i + 2];

        if (out->nwaiters++ >= LW_STATUS_WAITERS)
            continue;
        v = &out->waiters[out->nwaiters - 1];
        copy_id(v->id, w->element[i]);
        v->give_up_ms = number_of(w->element[i + 1]);
        v->place_ms = place->type == REDIS_REPLY_STRING && strcmp(place->str, "none") == 0
                          ? INT64_MIN
                          : number_of(place);
    }
    return 0;
}

/* What the name's key holds: the reply's elements before the waiters. */
static int decode_key(const redisReply *reply, size_t n, struct lw_name_status *out)
{
    const redisReply *type = reply->element[0];

    if (type->type != REDIS_REPLY_STRING)
        return LW_EREPLY;
    snprintf(out->type, sizeof out->type, "%s", type->str);
    if (strcmp(type->str, "none") == 0) {
        out->type[0] = 0;
        return 0; /* LW_NAME_FREE */
    }
    if (n < 2)
        return LW_EREPLY;
    out->ttl_ms = number_of(reply->element[1]);
    if (strcmp(type->str, "hash") == 0 && n == 3)
        return decode_hash(reply->element[2], out);
    if (strcmp(type->str, "string") == 0 && n == 4)
        return decode_permits(reply->element[2], reply->element[3], out);
    out->kind = LW_NAME_OTHER;
    return 0;
}

int status_decode(const redisReply *reply, struct lw_name_status *out)
{
    int rc;

    memset(out, 0, sizeof *out);
    out->ttl_ms = -2;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2)
        return LW_EREPLY;
    if ((rc = decode_key(reply, reply->elements - 1, out)))
        return rc;
    return decode_waiters(reply->element[reply->elements - 1], out);
}

/* SCRIPT_LEADER's reply: {} vacant, {-1} a read-write lock's name, or
 * {term, leader's field, value, PTTL}. */
int leader_decode(const redisReply *reply, struct lw_leader *out)
{
    const redisReply *const *el = (const redisReply *const *)reply->element;

    memset(out, 0, sizeof *out);
    out->ttl_ms = -2;
    if (reply->type != REDIS_REPLY_ARRAY)
        return LW_EREPLY;
    if (reply->elements == 0) /* vacant */
        return 0;
    if (reply->elements == 1)
        return reply_integer(el[0]) == -1 ? LW_EWRONGKIND : LW_EREPLY;
    if (reply->elements != 4 || el[1]->type != REDIS_REPLY_STRING ||
        el[2]->type != REDIS_REPLY_STRING || el[1]->len >= sizeof out->leader ||
        el[2]->len > LW_ELECTION_VALUE_MAX)
        return LW_EREPLY;
    out->held = 1;
    out->term = (uint64_t)reply_integer(el[0]);
    memcpy(out->leader, el[1]->str, el[1]->len);
    memcpy(out->value, el[2]->str, el[2]->len);
    out->value_len = el[2]->len;
    out->ttl_ms = reply_integer(el[3]);
    return 0;
}
