/*
 * tests/rw_util.h - what the read-write lock tests share: a connection to
 * the fixture, Redisson's read lock and read unlock run as a Redisson
 * process runs them (redisson_rw.h, verbatim, each script's SHA1 checked
 * at SCRIPT LOAD), and the library's read and write handles.  Include
 * after lock_util.h (the fixture, srv).
 */
#ifndef LW_TESTS_RW_UTIL_H
#define LW_TESTS_RW_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"
#include "redisson_rw.h"

static inline redisContext *connect_srv(void)
{
    redisContext *rc = fixture_connect_at(srv.port, srv.unix_path, NULL, 2000);

    cr_assert(rc && !rc->err, "no connection to the fixture");
    return rc;
}

/* SCRIPT LOAD script, which must hash to sha: Redisson's, verbatim. */
static inline void load_checked(redisContext *rc, const char *script, const char *sha)
{
    redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", script);

    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, sha, "a Redisson script is not verbatim");
    freeReplyObject(r);
}

/* Redisson's names for name: prefixName ("<prefix>:{name}", or
 * "<prefix>:name" when it has a '{') and suffixName ("{name}:<suffix>",
 * or "name:<suffix>"). */
static inline void rs_prefix_name(char *buf, size_t n, const char *prefix, const char *name)
{
    snprintf(buf, n, strchr(name, '{') ? "%s:%s" : "%s:{%s}", prefix, name);
}

static inline void rs_suffix_name(char *buf, size_t n, const char *name, const char *suffix)
{
    snprintf(buf, n, strchr(name, '{') ? "%s:%s" : "{%s}:%s", name, suffix);
}

/* Redisson's read tryLock for field with lease_ms: 1 acquired (nil), 0
 * not (the PTTL of the hash another holds). */
static inline int redisson_read_lock(redisContext *rc, const char *name, const char *field,
                                     int lease_ms)
{
    char suffix[220], prefix[300], write_field[220];
    redisReply *r;
    int got;

    snprintf(suffix, sizeof suffix, "%s:rwlock_timeout", field);
    rs_suffix_name(prefix, sizeof prefix, name, suffix);
    snprintf(write_field, sizeof write_field, "%s:write", field);
    r = redisCommand(rc, "EVALSHA %s 2 %s %s %d %s %s", RS_READ_LOCK_SHA, name, prefix,
                     lease_ms, field, write_field);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "Redisson's read lock failed");
    got = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    return got;
}

/* Redisson's read unlock for field: 0 still locked, 1 freed, -1 nil (not
 * held).  The unlock latch's request id is made up, as any caller's. */
static inline long long redisson_read_unlock(redisContext *rc, const char *name,
                                             const char *field)
{
    char suffix[220], prefix[300], channel[300], tag[300], latch[300], id[40];
    redisReply *r;
    long long v;

    snprintf(suffix, sizeof suffix, "%s:rwlock_timeout", field);
    rs_suffix_name(prefix, sizeof prefix, name, suffix);
    rs_prefix_name(channel, sizeof channel, "redisson_rwlock", name);
    snprintf(tag, sizeof tag, strchr(name, '{') ? "%s" : "{%s}", name); /* the prefix's stem */
    snprintf(id, sizeof id, "%032x", (unsigned)rand());
    rs_prefix_name(latch, sizeof latch, "redisson_unlock_latch", name);
    snprintf(latch + strlen(latch), sizeof latch - strlen(latch), ":%s", id);
    r = redisCommand(rc, "EVALSHA %s 5 %s %s %s %s %s 0 %s publish 30000", RS_READ_UNLOCK_SHA,
                     name, channel, prefix, tag, latch, field);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "Redisson's read unlock failed");
    v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

static inline struct lw_lock *read_lock(struct lw_client *c, const char *name)
{
    struct lw_lock *l = NULL;

    cr_assert_eq(lw_read_lock_new(c, name, strlen(name), &l), 0);
    return l;
}

static inline struct lw_lock *write_lock(struct lw_client *c, const char *name)
{
    struct lw_lock *l = NULL;

    cr_assert_eq(lw_write_lock_new(c, name, strlen(name), &l), 0);
    return l;
}

/* Our reader's field: "<client id>:<owner>", the owner this thread. */
static inline void own_field(struct lw_client *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%llu", lw_client_id(c), (unsigned long long)lw_owner_self());
}

#endif
