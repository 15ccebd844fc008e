/*
 * tests/lost_util.h - losses as on_lost reports them (on_lost runs on the
 * engine thread: atomics), and sets of watchdog locks held by the test
 * thread: for the cluster and Sentinel tests.  Include after
 * <criterion/criterion.h>.
 */
#ifndef LW_TESTS_LOST_UTIL_H
#define LW_TESTS_LOST_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <leasewheel.h>

struct lost_log {
    _Atomic int count;
    _Atomic int by_reason[5];  /* by LW_LOST_* (1..4); 0: any other */
    _Atomic uint64_t last_ns;  /* lw_clock_now() of the latest */
};

/* An on_lost callback; arg is a struct lost_log. */
static inline void record_lost(const char *name, size_t len, uint64_t owner, int reason,
                               void *arg)
{
    struct lost_log *log = arg;

    (void)name;
    (void)len;
    (void)owner;
    atomic_fetch_add(&log->by_reason[reason >= 1 && reason <= 4 ? reason : 0], 1);
    atomic_store(&log->last_ns, lw_clock_now());
    atomic_fetch_add(&log->count, 1);
}


#define HELD_MAX 300

/* Watchdog locks the test thread holds, with their names. */
struct held {
    struct lw_lock *lock[HELD_MAX];
    char name[HELD_MAX][24];
    int n;
};

/* n (<= HELD_MAX) watchdog locks of c named prefix<i>, acquired. */
static inline void acquire_all(struct lw_client *c, struct held *h, const char *prefix, int n)
{
    cr_assert_leq(n, HELD_MAX);
    h->n = n;
    for (int i = 0; i < n; i++) {
        snprintf(h->name[i], sizeof h->name[i], "%s%d", prefix, i);
        cr_assert_eq(lw_lock_new(c, h->name[i], strlen(h->name[i]), &h->lock[i]), 0);
        cr_assert_eq(lw_lock_acquire(h->lock[i], NULL), 0, "%s", h->name[i]);
    }
}

/* Unlock (each must succeed when expect_ok) and free them all. */
static inline void release_all(struct held *h, int expect_ok)
{
    for (int i = 0; i < h->n; i++) {
        int rc = lw_unlock(h->lock[i]);

        if (expect_ok)
            cr_expect_eq(rc, 0, "%s: %s", h->name[i], lw_strerror(rc));
        lw_lock_free(h->lock[i]);
    }
}

#endif
