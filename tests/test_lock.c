/*
 * tests/test_lock.c - the lock calls against a real redis-server: results,
 * reentrancy, the wire format, fencing tokens, waiting, bad input.
 */
#include <pthread.h>
#include <stdlib.h>

#include "lock_util.h"

REDIS_TEST(lock, reentrant_counts_and_wire_format)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "orders");
    char field[128];
    uint64_t t1 = 0, t2 = 0;
    redisReply *r;

    cr_assert_eq(lw_is_locked(l), 0);
    cr_assert_eq(lw_lock(l, &t1), 0);
    cr_assert_eq(lw_lock(l, &t2), 0);
    cr_assert_eq(t1, 1);
    cr_assert_eq(t2, t1, "a reentrant acquire sees the same token");
    cr_assert_eq(lw_hold_count(l), 2);
    cr_assert_eq(lw_is_held(l), 1);
    cr_assert_eq(lw_is_locked(l), 1);

    /* Redisson's layout: a hash with one field <id>:<thread>, the count. */
    snprintf(field, sizeof field, "%s:%llu", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    r = redis_server_command(&srv, "HGETALL orders");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_assert_str_eq(r->element[0]->str, field);
    cr_assert_str_eq(r->element[1]->str, "2");
    freeReplyObject(r);
    cr_assert_gt(redis_int("PTTL %s", "orders"), 29000);
    cr_assert_eq(redis_int("GET %s", "{orders}:token"), 1);

    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 1);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 0);
    cr_assert_eq(lw_is_locked(l), 0);
    cr_assert_eq(redis_int("EXISTS %s", "orders"), 0);
    cr_assert_eq(lw_unlock(l), LW_ENOTOWNER);

    /* The next first acquire gets a larger token. */
    cr_assert_eq(lw_lock(l, &t2), 0);
    cr_assert_eq(t2, 2);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}
