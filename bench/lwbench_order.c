/*
 * bench/lwbench_order.c - the order a flood renews the locks in
 * (flood_order()), for the single Redis's ceiling (lwbench_ceiling.c) and
 * a cluster's (lwbench_cluster.c).  A leaf: it calls nothing of lwbench's.
 */
#include <stdint.h>

#include "lwbench.h"
#include "watchdog.h"

/*
 * Scattered, as a watchdog's renewals are.  lwbench makes its locks one
 * after another, so that they lie in Redis's memory in the order of their
 * numbers; a flood in that order walks memory almost in sequence, which a
 * watchdog never does (its renewals come due in the order the locks were
 * taken, spread further by the first renewal's golden-ratio share, given
 * to runs of WATCHDOG_PHASE_RUN locks: core/watchdog.c), and in a
 * watchdog's order each key costs Redis more (a quarter fewer keys a
 * second, lock by lock: docs/benchmarks.md).  The flood's j-th run is run
 * j * stride (mod runs), stride coprime to the runs and near runs/phi:
 * every lock once per pass, runs far apart.
 */
static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;

        a = b;
        b = r;
    }
    return a;
}

static uint32_t scatter(uint64_t j, uint32_t n)
{
    uint64_t stride;

    if (n < 2)
        return 0;
    stride = (uint64_t)((double)n * 0.6180339887) | 1u;
    while (gcd_u64(stride, n) != 1)
        stride += 2;
    return (uint32_t)(j % n * (stride % n) % n);
}

/* The runs of WATCHDOG_PHASE_RUN locks scattered, each run in order (the
 * watchdog gives a run of new locks one phase); a last part-run in
 * order. */
uint32_t flood_order(uint64_t j, uint32_t keys)
{
    uint32_t runs = keys / WATCHDOG_PHASE_RUN, at = (uint32_t)(j % keys);

    if (at >= runs * WATCHDOG_PHASE_RUN)
        return at;
    return scatter(at / WATCHDOG_PHASE_RUN, runs) * WATCHDOG_PHASE_RUN +
           at % WATCHDOG_PHASE_RUN;
}
