/*
 * tests/test_cluster_multi.c - multi-locks across a cluster's three
 * masters: the names grouped by slot, the groups taken in one order, each
 * all or none; a set refused on its last master leaves nothing on the
 * others; two clients looping over the same names in opposite orders both
 * finish, never inside together.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "engine.h"
#include "multi_util.h"
#include "cluster_util.h"
#include "redis_cluster.h"
#include "time_util.h"

static struct redis_cluster cl;
static int owner_of[REDIS_CLUSTER_SLOTS]; /* slot -> master, by CLUSTER SLOTS */

static void setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
    cluster_slot_owners(&cl, 0, owner_of);
}

static void teardown(void)
{
    redis_cluster_stop(&cl);
}

static struct lw_client *client_as(const char *id)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    cluster_client_config(&cfg, &cl, 0);
    cfg.client_id = id;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* Four names over the three masters ("ms<i>", the first found for each
 * master, then one more), in *names (each 16 bytes). */
static void names_on_every_master(char names[4][16])
{
    int found = 0, have[3] = {0};

    for (int i = 0; found < 4 && i < 10000; i++) {
        char n[16];
        int m;

        snprintf(n, sizeof n, "ms%d", i);
        m = owner_of[keyslot(n, strlen(n))];
        if (m < 0 || m > 2 || (have[m] && found < 3))
            continue;
        have[m] = 1;
        memcpy(names[found++], n, sizeof n);
    }
    cr_assert_eq(found, 4);
}

static struct lw_multi *multi_of(struct lw_client *c, char names[4][16], int reversed)
{
    struct lw_lock *locks[4];
    struct lw_multi *m = NULL;

    for (int i = 0; i < 4; i++) {
        const char *n = names[reversed ? 3 - i : i];

        cr_assert_eq(lw_lock_new(c, n, strlen(n), &locks[i]), 0);
    }
    cr_assert_eq(lw_multi_new(locks, 4, &m), 0);
    for (int i = 0; i < 4; i++)
        lw_lock_free(locks[i]);
    return m;
}

static long long exists(const char *name)
{
    int node = owner_of[keyslot(name, strlen(name))];
    redisReply *r = redis_cluster_command(&cl, node, "EXISTS %s", name);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return v;
}

/* A name on one master held by another client: the set over all three
 * masters is refused, and no other name is left held; once free, it is
 * taken whole. */
Test(cluster_multi, refused_on_one_master_leaves_nothing_on_the_others, .init = setup,
     .fini = teardown, .timeout = 120)
{
    char names[4][16];
    struct lw_client *c, *other;
    struct lw_multi *m;
    struct lw_lock *held;
    uint64_t tokens[4];

    names_on_every_master(names);
    c = client_as("lw-1");
    other = client_as("lw-2");
    m = multi_of(c, names, 0);
    cr_assert_eq(lw_lock_new(other, names[2], strlen(names[2]), &held), 0);
    cr_assert_eq(lw_acquire(held, 1, 0, 0, NULL), 0);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, tokens), LW_ELOCKED);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(exists(names[i]), i == 2, "%s", names[i]);
    cr_assert_eq(lw_unlock_owner(held, 1), 0);
    cr_assert_eq(lw_multi_acquire(m, 1, 0, 0, tokens), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(exists(names[i]), 1, "%s", names[i]);
    cr_assert_eq(lw_multi_unlock_owner(m, 1), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(exists(names[i]), 0, "%s", names[i]);
    lw_multi_free(m);
    lw_lock_free(held);
    cr_assert_eq(lw_client_free(other), 0);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Two clients (as two processes), each looping 1000 times over the same
 * four names on three masters, given in opposite orders: every acquire
 * gets its set within its wait, and the two are never inside at once. */
Test(cluster_multi, opposite_orders_across_three_masters_both_finish, .init = setup,
     .fini = teardown, .timeout = 240)
{
    char names[4][16];
    struct lw_client *ca, *cb;
    struct lw_multi *a, *b;

    names_on_every_master(names);
    ca = client_as("lw-a");
    cb = client_as("lw-b");
    a = multi_of(ca, names, 0);
    b = multi_of(cb, names, 1);
    loop_both(a, b, 1000, 10000);
    lw_multi_free(a);
    lw_multi_free(b);
    cr_assert_eq(lw_client_free(ca), 0);
    cr_assert_eq(lw_client_free(cb), 0);
}
