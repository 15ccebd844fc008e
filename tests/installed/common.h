/*
 * common.h - what use.c and use.cc share, in the subset of C11 and C++11
 * both accept: CHECK, and a standalone wheel's schedule, advance and pop.
 */
#ifndef LW_TESTS_INSTALLED_COMMON_H
#define LW_TESTS_INSTALLED_COMMON_H

#include <stdio.h>

#include <leasewheel.h>

/* Returns 1 from the calling function when cond is false. */
#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

static inline int wheel_roundtrip(void)
{
    struct lw_wheel_config wc;
    struct lw_wheel *w = 0;
    struct lw_timer t;
    struct lw_timer_list due = {0, 0, 0};

    lw_wheel_config_init(&wc);
    wc.start_ns = 1000;
    CHECK(lw_wheel_new(&wc, &w) == 0);
    lw_timer_init(&t);
    CHECK(lw_wheel_schedule(w, &t, 1000 + wc.tick_ns) == 0);
    CHECK(lw_wheel_advance(w, 1000 + 2 * wc.tick_ns, &due) == 1);
    CHECK(lw_timer_list_pop(&due) == &t);
    lw_wheel_free(w);
    return 0;
}

#endif
