/*
 * core/redis_clock.h - Redis's clock, watched against ours.
 *
 * Redis expires a key when its own wall clock passes the key's expiry.
 * A step forward of that clock (an operator's `date`, a VM restored, NTP
 * stepping a clock that was far behind) ends every lease on the node
 * early, by the step: no client can prevent it.  But a client can notice
 * it.  Every renewal script answers, after its entries, Redis's TIME when
 * it ran (scripts.c, stamped()); between two answers on one connection,
 * Redis's clock can have moved only as much as ours did between the
 * first call's write and the second's answer, give or take the drift
 * the leases allow (1% and 2 ms, lease_valid_until()).  Anything more is
 * a step, by at least the excess: the watchdog then takes it off every
 * lease on that node, reports them at risk, and renews them at once
 * (watchdog.c, redis_clock_stepped()); a lease the step may
 * have ended is lost.  A step back makes keys live longer, which puts
 * nobody else inside: it is only noted as the new baseline.
 *
 * One sample per node (struct node_batches): a new connection starts a
 * new baseline, for a reconnect may reach another server (a failover, a
 * restart).  Engine thread.
 */
#ifndef LW_CORE_REDIS_CLOCK_H
#define LW_CORE_REDIS_CLOCK_H

#include <stdint.h>

struct redis_clock {
    uint64_t conn;    /* the connection of the last sample; 0: none yet */
    int64_t redis_us; /* Redis's TIME in it, in microseconds */
    uint64_t sent_ns; /* its call was last written then (lw_clock_now()) */
};

/*
 * redis_clock_sample - a renewal written at sent_ns and answered at
 * recv_ns on connection conn carried Redis's TIME redis_us (the script
 * ran in between).  Returns by how much Redis's clock has run ahead of
 * ours since the last sample on that connection beyond what the drift
 * allows, in ns (0: in step, or no sample to compare with), and keeps
 * this one as the next baseline.
 */
uint64_t redis_clock_sample(struct redis_clock *rc, uint64_t conn, int64_t redis_us,
                            uint64_t sent_ns, uint64_t recv_ns);

#endif
