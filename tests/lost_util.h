/*
 * tests/lost_util.h - losses as on_lost reports them, for the cluster and
 * Sentinel tests (on_lost runs on the engine thread: atomics).
 */
#ifndef LW_TESTS_LOST_UTIL_H
#define LW_TESTS_LOST_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
