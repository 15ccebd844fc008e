/*
 * core/redis_clock.c - Redis's clock, watched against ours (redis_clock.h
 * says why).
 */
#include "redis_clock.h"

/* The most a clock may gain on ours over elapsed_ns: the drift every
 * lease allows (1% and 2 ms: lease_valid_until()). */
static uint64_t allowed_ns(uint64_t elapsed_ns)
{
    return elapsed_ns + elapsed_ns / 100 + 2000000u;
}

uint64_t redis_clock_sample(struct redis_clock *rc, uint64_t conn, int64_t redis_us,
                            uint64_t sent_ns, uint64_t recv_ns)
{
    uint64_t ahead = 0;

    /* The first script ran after sent_ns of its call, the second before
     * recv_ns of its: Redis's clock can have moved at most that much. */
    if (rc->conn == conn && redis_us > rc->redis_us && recv_ns > rc->sent_ns) {
        uint64_t moved = (uint64_t)(redis_us - rc->redis_us) * 1000u;
        uint64_t most = allowed_ns(recv_ns - rc->sent_ns);

        if (moved > most)
            ahead = moved - most;
    }
    rc->conn = conn;
    rc->redis_us = redis_us;
    rc->sent_ns = sent_ns;
    return ahead;
}
