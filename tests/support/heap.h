/*
 * A pointer-based binary min-heap of timers, the shape libuv uses: each
 * node links to its parent and children, and the path to the next free
 * position is spelled by the bits of the element count.  It is the
 * benchmark's baseline for the wheel, with the same operations: schedule,
 * cancel, and take everything due.
 */
#ifndef LW_TESTS_HEAP_H
#define LW_TESTS_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct heap_timer {
    struct heap_timer *left, *right, *parent;
    uint64_t deadline;
    int in_heap;
};

struct heap {
    struct heap_timer *min;
    size_t count;
};

void heap_schedule(struct heap *h, struct heap_timer *t, uint64_t deadline);
/* Returns 1 when it was in the heap. */
int heap_cancel(struct heap *h, struct heap_timer *t);
/* The earliest timer if it is due by `now` (taken out), else NULL. */
struct heap_timer *heap_pop_due(struct heap *h, uint64_t now);

#endif
