/*
 * xorshift64* - a cheap, repeatable generator: benchmarks and tests, and
 * the jitter of the engine's reconnect back-off.
 * The same seed gives the same sequence to the wheel and to its baselines.
 */
#ifndef LW_XORSHIFT_H
#define LW_XORSHIFT_H

#include <stdint.h>

struct xorshift {
    uint64_t s;
};

static inline struct xorshift xorshift_seed(uint64_t seed)
{
    struct xorshift x = {seed ? seed : 0x9e3779b97f4a7c15ull};

    return x;
}

static inline uint64_t xorshift_next(struct xorshift *x)
{
    x->s ^= x->s >> 12;
    x->s ^= x->s << 25;
    x->s ^= x->s >> 27;
    return x->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n) for 0 < n <= 2^32 (multiply-shift, no division). */
static inline uint64_t xorshift_below(struct xorshift *x, uint64_t n)
{
    return ((xorshift_next(x) >> 32) * n) >> 32;
}

#endif
