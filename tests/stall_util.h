/*
 * tests/stall_util.h - how long this process went without running: a
 * thread sleeps 10 ms at a time and keeps the longest wake-up past that.
 * A fault test under load whose locks ran out of lease says with it
 * whether the process itself was held off the CPU meanwhile (the lease
 * is all a lock has against a holder that does not run).
 */
#ifndef LW_TESTS_STALL_UTIL_H
#define LW_TESTS_STALL_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "time_util.h"

struct stall_watch {
    pthread_t thread;
    _Atomic int stop;
    _Atomic uint64_t worst_ms; /* the longest sleep of 10 ms, less 10 */
};

static void *stall_watch_loop(void *arg)
{
    struct stall_watch *w = arg;

    /* Bounded: at most 10 minutes of 10 ms rounds. */
    for (int round = 0; round < 60000 && !atomic_load(&w->stop); round++) {
        uint64_t t0 = now_ms(), late;

        sleep_ms(10);
        late = now_ms() - t0 - 10;
        if (late > atomic_load(&w->worst_ms))
            atomic_store(&w->worst_ms, late);
    }
    return NULL;
}

static inline int stall_watch_start(struct stall_watch *w)
{
    atomic_store(&w->stop, 0);
    atomic_store(&w->worst_ms, 0);
    return pthread_create(&w->thread, NULL, stall_watch_loop, w);
}

/* Stop the watch: the longest stall it saw, in ms. */
static inline uint64_t stall_watch_stop(struct stall_watch *w)
{
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    return atomic_load(&w->worst_ms);
}

#endif
