/* wheel/counter.h - statistics counters: one writer, any readers. */
#ifndef LW_WHEEL_COUNTER_H
#define LW_WHEEL_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

/* Add to a counter only the engine thread writes: a relaxed load and
 * store, no locked instruction.  Readers see some recent value. */
static inline void count_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void count_set(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t count_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Raise a one-writer counter to v if v is larger (a worst-case gauge). */
static inline void count_max(_Atomic uint64_t *c, uint64_t v)
{
    if (v > count_get(c))
        count_set(c, v);
}

#endif
