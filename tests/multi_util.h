/*
 * tests/multi_util.h - two multi-locks over the same names (given in
 * other orders, on two clients: as two processes) looping side by side,
 * each holding its set a random moment: shared by test_multi.c (one
 * Redis) and test_cluster_multi.c (three masters).
 */
#ifndef LW_TESTS_MULTI_UTIL_H
#define LW_TESTS_MULTI_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "time_util.h"

struct set_looper {
    struct lw_multi *m;
    int loops;
    uint64_t wait_ms;
    _Atomic int *inside;
    int failed, done, overlaps;
    unsigned seed;
};

static inline void *loop_sets(void *arg)
{
    struct set_looper *l = arg;

    for (int i = 0; i < l->loops; i++) {
        if (lw_multi_acquire(l->m, 1, l->wait_ms, 0, NULL)) {
            l->failed++;
            continue;
        }
        if (atomic_fetch_add(l->inside, 1) != 0)
            l->overlaps++;
        if (rand_r(&l->seed) % 4 == 0)
            sleep_ms(rand_r(&l->seed) % 2);
        atomic_fetch_sub(l->inside, 1);
        l->done += lw_multi_unlock_owner(l->m, 1) == 0;
    }
    return NULL;
}

/* a and b loop `loops` times each at once: every acquire gets its set
 * within wait_ms, and the two are never inside together. */
static inline void loop_both(struct lw_multi *a, struct lw_multi *b, int loops, uint64_t wait_ms)
{
    _Atomic int inside = 0;
    struct set_looper la = {a, loops, wait_ms, &inside, 0, 0, 0, 1};
    struct set_looper lb = {b, loops, wait_ms, &inside, 0, 0, 0, 2};
    pthread_t ta, tb;

    cr_assert_eq(pthread_create(&ta, NULL, loop_sets, &la), 0);
    cr_assert_eq(pthread_create(&tb, NULL, loop_sets, &lb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_assert_eq(la.failed + lb.failed, 0, "%d and %d acquires ran out of time", la.failed,
                 lb.failed);
    cr_assert_eq(la.done + lb.done, 2 * loops);
    cr_assert_eq(la.overlaps + lb.overlaps, 0);
}

#endif
