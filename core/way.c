/*
 * core/way.c - what the ways of asking for a lock share (way.h): the
 * lease argument of an acquire, and this client's line for a name.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "lock_op.h"
#include "waiters.h"
#include "way.h"

void way_lease_arg(const struct op *op, char *buf)
{
    const struct lw_client *c = op->lock->client;

    if (op->call.lease_ms)
        snprintf(buf, 24, "%llu", (unsigned long long)op->call.lease_ms);
    else
        memcpy(buf, c->lease_str, c->lease_len + 1);
}

int way_line_join(struct lw_client *c, struct op *op)
{
    return waiters_join(c, &op->call.w, op->lock->channel, op->lock->channel_len);
}

/* Without the lock, the turn passes on; with it, the readers behind a
 * reader share it, and after a write the next looks again a lease from
 * now, should that lock end unsaid (a hand-over, or a message, comes
 * first otherwise). */
void way_line_leave(struct lw_client *c, struct op *op, int acquired)
{
    uint64_t lease_ms = op->call.lease_ms ? op->call.lease_ms : c->lease_ms;

    if (!op->call.w.link.chan)
        return;
    if (!acquired)
        waiters_leave(c, &op->call.w, WAIT_PASS, 0);
    else
        waiters_leave(c, &op->call.w, op->lock->way->shares ? 0 : -1,
                      lw_clock_now() + lease_ms * 1000000u + c->tick_ns);
}
