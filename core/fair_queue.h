/*
 * core/fair_queue.h - fair_queue.c's calls: acquires of a fair lock
 * waiting for their turn in the lock's queue in Redis, each on a channel
 * of its own.
 */
#ifndef LW_CORE_FAIR_QUEUE_H
#define LW_CORE_FAIR_QUEUE_H

#include <stdint.h>

struct lw_client;
struct op;

/* An acquire of a fair lock was answered "in the queue" by a command whose
 * place counts from from_ns: its place is kept from now on (the watchdog
 * renews it), and it listens on its own channel.  1 when the channel is
 * live already (ask again now: its turn may have come unheard), 0 to
 * wait, -1 out of memory. */
int fair_wait(struct lw_client *c, struct op *op, uint64_t from_ns);
/* op ends, with the lock (acquired) or not: it stops listening, its
 * place is no longer kept, and one it gives up leaves the queue in Redis
 * (a call of its own, after op is gone; best effort: the place's lease
 * ends it otherwise). */
void fair_leave(struct lw_client *c, struct op *op, int acquired);
/* Whether op holds a place in its lock's queue. */
int fair_queued(const struct op *op);

#endif
