/*
 * tests/time_util.h - sleeping and bounded polling for the tests'
 * threads (CLOCK_MONOTONIC, through lw_clock_now()).
 */
#ifndef LW_TESTS_TIME_UTIL_H
#define LW_TESTS_TIME_UTIL_H

#include <stdint.h>
#include <time.h>

#include <leasewheel.h>

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static inline uint64_t now_ms(void)
{
    return lw_clock_now() / 1000000u;
}

/* Poll `cond` every 5 ms for at most ms; whether it came true (the last
 * evaluation's: cond may have effects, an acquire or a failover, so it is
 * evaluated once per round). */
#define wait_until(cond, ms)                                                     \
    __extension__({                                                              \
        uint64_t until_ = now_ms() + (ms);                                       \
        int ok_;                                                                 \
        while (!(ok_ = !!(cond)) && now_ms() < until_)                           \
            sleep_ms(5);                                                         \
        ok_;                                                                     \
    })

#endif
