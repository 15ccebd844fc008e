/*
 * The benchmark's baseline heap must be right, or the ratios against it
 * mean nothing: random schedules and cancels, then everything comes out in
 * deadline order and nothing cancelled comes out.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "heap.h"
#include "xorshift.h"

Test(heap, pops_in_deadline_order_after_random_cancels)
{
    enum { N = 20000 };
    struct heap_timer *timers = calloc(N, sizeof *timers);
    struct heap h = {0};
    struct xorshift rng = xorshift_seed(11);
    struct heap_timer *t;
    uint64_t last = 0;
    size_t left = 0, popped = 0;

    for (int i = 0; i < N; i++)
        heap_schedule(&h, &timers[i], xorshift_below(&rng, 1000000));
    for (int i = 0; i < N; i++) {
        size_t j = xorshift_below(&rng, N);

        if (xorshift_below(&rng, 2)) {
            heap_cancel(&h, &timers[j]);
        } else {
            heap_cancel(&h, &timers[j]);
            heap_schedule(&h, &timers[j], xorshift_below(&rng, 1000000));
        }
    }
    for (int i = 0; i < N; i++)
        left += timers[i].in_heap;
    cr_assert_eq(h.count, left);
    while ((t = heap_pop_due(&h, UINT64_MAX))) {
        cr_assert_geq(t->deadline, last, "out of order");
        cr_assert_not(t->in_heap);
        last = t->deadline;
        popped++;
    }
    cr_assert_eq(popped, left);
    cr_assert_eq(h.count, 0);
    cr_assert_null(h.min);
    free(timers);
}
