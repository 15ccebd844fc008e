/*
 * core/timer.h - a wheel timer of core/ and what to do when it fires, set
 * by its owner (a waiting acquire's retry or deadline, waiters.c; an
 * entry's renewal or give-up, watchdog.c; admission's tick), so that the
 * client's tick hook need not know what it belongs to.
 */
#ifndef LW_CORE_TIMER_H
#define LW_CORE_TIMER_H

#include <stdint.h>

#include <leasewheel/wheel.h>

struct lw_client;

struct core_timer {
    struct lw_timer timer; /* first: the wheel hands back this */
    void (*fire)(struct lw_client *c, struct core_timer *t, uint64_t now_ns);
};

#endif
