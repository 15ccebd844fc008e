/*
 * tests/test_election_wire.c - leader election's scripts on a real Redis:
 * what a candidate, a leader and an observer send (core/scripts.c,
 * SCRIPT_ELECT, SCRIPT_RESIGN, SCRIPT_PROCLAIM, SCRIPT_LEADER), and a
 * Redisson RLock's acquire (tests/redisson_lock.h, verbatim) on the same
 * name: leadership is that lock.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "engine_util.h"
#include "redisson_lock.h"
#include "scripts.h"

#define NAME "leader"
#define COUNTER "redisson_lock_token:{leader}"
#define LOCK_CHANNEL "redisson_lock__channel:{leader}"
#define CHANNEL "leasewheel_election:{leader}"

static redisContext *connect_server(void)
{
    redisContext *rc = redisConnect("127.0.0.1", srv.port);

    cr_assert(rc && !rc->err, "no connection to the fixture's Redis");
    return rc;
}

/* EVAL script with KEYS then ARGV (n each, NULL-terminated lists). */
static redisReply *eval(redisContext *rc, int script, const char *const *keys,
                        const char *const *args)
{
    const char *argv[16];
    char nkeys[8];
    int argc = 0, k = 0;

    argv[argc++] = "EVAL";
    argv[argc++] = lw_lock_scripts[script];
    argv[argc++] = nkeys;
    for (; keys[k]; k++)
        argv[argc++] = keys[k];
    for (int i = 0; args[i]; i++)
        argv[argc++] = args[i];
    snprintf(nkeys, sizeof nkeys, "%d", k);
    return redisCommandArgv(rc, argc, argv, NULL);
}

static redisReply *elect(redisContext *rc, const char *field, const char *value)
{
    return eval(rc, SCRIPT_ELECT, (const char *[]){NAME, COUNTER, CHANNEL, NULL},
                (const char *[]){"30000", field, value, "publish", NULL});
}

static long long resign(redisContext *rc, const char *field)
{
    redisReply *r = eval(rc, SCRIPT_RESIGN, (const char *[]){NAME, LOCK_CHANNEL, CHANNEL, NULL},
                         (const char *[]){field, "publish", NULL});
    long long v;

    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", r && r->str ? r->str : "no reply");
    v = r->integer;
    freeReplyObject(r);
    return v;
}

/* An election's answer, freed: {term, holds}; the term into *term. */
static long long elected(redisReply *r, long long *term)
{
    long long holds;

    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "%s",
              r && r->str ? r->str : "not {term, holds}");
    *term = r->element[0]->integer;
    holds = r->element[1]->integer;
    freeReplyObject(r);
    return holds;
}

static char *hget(redisContext *rc, const char *field)
{
    redisReply *r = redisCommand(rc, "HGET %s %s", NAME, field);
    char *v = r && r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;

    freeReplyObject(r);
    return v;
}

REDIS_TEST(election_wire, a_term_is_drawn_and_written_with_the_value)
{
    redisContext *rc = connect_server();
    long long term = 0, again = 0;
    char *t, *v;

    cr_assert_eq(elected(elect(rc, "c1:1", "host-a:8080"), &term), 1);
    cr_assert_gt(term, 1000000000000000ll, "a counter made now is Redis's clock in us");
    t = hget(rc, ELECT_TERM_FIELD);
    v = hget(rc, ELECT_VALUE_FIELD);
    cr_assert(t && atoll(t) == term);
    cr_assert_str_eq(v, "host-a:8080");
    free(t);
    free(v);
    /* The leader asking again re-enters: the same term, a second hold. */
    cr_assert_eq(elected(elect(rc, "c1:1", "ignored"), &again), 2);
    cr_assert_eq(again, term);
    cr_assert_eq(resign(rc, "c1:1"), 1);
    cr_assert_eq(resign(rc, "c1:1"), 0);
    cr_assert_eq(resign(rc, "c1:1"), -1, "nothing left to resign");
    redisFree(rc);
}

REDIS_TEST(election_wire, a_candidate_waits_and_the_next_term_is_higher)
{
    redisContext *rc = connect_server();
    long long first = 0, next = 0;
    redisReply *r;

    elected(elect(rc, "c1:1", "a"), &first);
    r = elect(rc, "c2:7", "b");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer > 29000,
              "another candidate is told the leader's PTTL");
    freeReplyObject(r);
    cr_assert_eq(resign(rc, "c2:7"), -1, "a candidate cannot resign for the leader");
    cr_assert_eq(resign(rc, "c1:1"), 0);
    cr_assert_eq(elected(elect(rc, "c2:7", "b"), &next), 1);
    cr_assert_eq(next, first + 1);
    redisFree(rc);
}

REDIS_TEST(election_wire, terms_rise_across_a_redis_that_lost_its_data)
{
    redisContext *rc = connect_server();
    long long before = 0, after = 0;

    elected(elect(rc, "c1:1", "a"), &before);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    cr_assert_eq(elected(elect(rc, "c2:1", "b"), &after), 1);
    cr_assert_gt(after, before, "a counter made again starts above every term given");
    redisFree(rc);
}

REDIS_TEST(election_wire, proclaim_only_in_the_term_held)
{
    redisContext *rc = connect_server();
    long long term = 0;
    char ts[32], old[32], *v;
    redisReply *r;

    elected(elect(rc, "c1:1", "v1"), &term);
    snprintf(ts, sizeof ts, "%lld", term);
    snprintf(old, sizeof old, "%lld", term - 1);
    r = eval(rc, SCRIPT_PROCLAIM, (const char *[]){NAME, CHANNEL, NULL},
             (const char *[]){"c1:1", old, "stale", "publish", NULL});
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0, "another term's proclaim");
    freeReplyObject(r);
    r = eval(rc, SCRIPT_PROCLAIM, (const char *[]){NAME, CHANNEL, NULL},
             (const char *[]){"c2:1", ts, "usurper", "publish", NULL});
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0, "not the leader's");
    freeReplyObject(r);
    r = eval(rc, SCRIPT_PROCLAIM, (const char *[]){NAME, CHANNEL, NULL},
             (const char *[]){"c1:1", ts, "v2", "publish", NULL});
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    v = hget(rc, ELECT_VALUE_FIELD);
    cr_assert_str_eq(v, "v2");
    free(v);
    cr_assert_eq(resign(rc, "c1:1"), 0);
    r = eval(rc, SCRIPT_PROCLAIM, (const char *[]){NAME, CHANNEL, NULL},
             (const char *[]){"c1:1", ts, "v3", "publish", NULL});
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0, "after resigning");
    freeReplyObject(r);
    redisFree(rc);
}

REDIS_TEST(election_wire, the_leader_read_is_one_answer)
{
    redisContext *rc = connect_server();
    long long term = 0;
    redisReply *r = eval(rc, SCRIPT_LEADER, (const char *[]){NAME, NULL}, (const char *[]){NULL});

    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 0, "vacant");
    freeReplyObject(r);
    elected(elect(rc, "c1:1", "host-a"), &term);
    r = eval(rc, SCRIPT_LEADER, (const char *[]){NAME, NULL}, (const char *[]){NULL});
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 4);
    cr_assert_eq(r->element[0]->integer, term);
    cr_assert_str_eq(r->element[1]->str, "c1:1");
    cr_assert_str_eq(r->element[2]->str, "host-a");
    cr_assert(r->element[3]->integer > 29000 && r->element[3]->integer <= 30000);
    freeReplyObject(r);
    redisFree(rc);
}

/* Leadership is Redisson's RLock: a leader excludes an RLock on the name,
 * an RLock excludes candidates, and the leader reads as a holder without
 * a term. */
REDIS_TEST(election_wire, a_redisson_rlock_and_candidates_exclude_each_other)
{
    redisContext *rc = connect_server();
    long long term = 0;
    redisReply *r;

    r = redisCommand(rc, "SCRIPT LOAD %s", RS_LOCK_TRY);
    cr_assert(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, RS_LOCK_TRY_SHA));
    freeReplyObject(r);
    elected(elect(rc, "c1:1", "a"), &term);
    r = redisCommand(rc, "EVALSHA %s 1 %s 30000 %s", RS_LOCK_TRY_SHA, NAME, "uuid-1:42");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0, "the RLock waits");
    freeReplyObject(r);
    cr_assert_eq(resign(rc, "c1:1"), 0);
    r = redisCommand(rc, "EVALSHA %s 1 %s 30000 %s", RS_LOCK_TRY_SHA, NAME, "uuid-1:42");
    cr_assert(r && r->type == REDIS_REPLY_NIL, "the RLock got it");
    freeReplyObject(r);
    r = elect(rc, "c1:1", "a");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0, "%s",
              r && r->str ? r->str : "a candidate waits for the RLock");
    freeReplyObject(r);
    r = eval(rc, SCRIPT_LEADER, (const char *[]){NAME, NULL}, (const char *[]){NULL});
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 4);
    cr_assert_eq(r->element[0]->integer, 0, "no term: not elected");
    cr_assert_str_eq(r->element[1]->str, "uuid-1:42");
    freeReplyObject(r);
    redisFree(rc);
}

/* A plain lock of ours on an elected name waits, as on any lock: the
 * term and value fields are not another kind of hash. */
REDIS_TEST(election_wire, a_plain_lock_waits_for_a_leader)
{
    redisContext *rc = connect_server();
    long long term = 0;
    redisReply *r;

    elected(elect(rc, "c1:1", "a"), &term);
    r = eval(rc, SCRIPT_LOCK, (const char *[]){NAME, NAME, NULL},
             (const char *[]){"30000", "c2:1", NULL});
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0, "%s",
              r && r->str ? r->str : "a lock's acquire is told the PTTL");
    freeReplyObject(r);
    freeReplyObject(redisCommand(rc, "HSET other f v"));
    r = eval(rc, SCRIPT_LOCK, (const char *[]){"other", "other", NULL},
             (const char *[]){"30000", "c2:1", NULL});
    cr_assert(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "WRONGTYPE"),
              "a hash that is no lock is still refused");
    freeReplyObject(r);
    redisFree(rc);
}

/* A lost leader's field dropped by the watchdog (SCRIPT_DROP, and a
 * cluster node's SCRIPT_DROP_NODE) takes the term and the value with it:
 * the name is free for the next candidate at once. */
REDIS_TEST(election_wire, a_dropped_leader_leaves_nothing)
{
    redisContext *rc = connect_server();
    long long term = 0;
    redisReply *r;

    for (int node = 0; node < 2; node++) {
        elected(elect(rc, "c1:5", "a"), &term);
        if (node)
            r = eval(rc, SCRIPT_DROP_NODE, (const char *[]){NULL},
                     (const char *[]){NAME, "publish", "c1", "5", NULL});
        else
            r = eval(rc, SCRIPT_DROP, (const char *[]){NAME, NULL},
                     (const char *[]){"publish", "c1", "5", NULL});
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "%s",
                  r && r->str ? r->str : "one field dropped");
        freeReplyObject(r);
        r = redisCommand(rc, "EXISTS %s", NAME);
        cr_assert(r && r->integer == 0, "the term and the value went with the leader");
        freeReplyObject(r);
    }
    redisFree(rc);
}
