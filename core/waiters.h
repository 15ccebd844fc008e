/*
 * core/waiters.h - waiters.c's calls: acquires waiting on a lock's
 * channel, in line.
 */
#ifndef LW_CORE_WAITERS_H
#define LW_CORE_WAITERS_H

#include <stddef.h>

struct lw_client;
struct lw_lock;
struct op;

/* An acquire that found the lock held joins its name's queue: 1 when the
 * channel is live and it is first in line (try again now: an unlock may
 * have gone unheard), 0 to wait, -1 out of memory. */
int waiters_join(struct lw_client *c, struct op *op);
/* A new acquire, when its name has waiters here: queued behind them
 * without trying (1), or 0 when there are none (try it). */
int waiters_queue(struct lw_client *c, struct op *op);
/* op is first in its name's queue. */
int waiters_first(const struct op *op);
/* op leaves the queue, with the lock (acquired) or not: the turn passes
 * on. */
void waiters_leave(struct lw_client *c, struct op *op, int acquired);
/* The first waiter of lock's name, reserved for a hand-over (OPS_HANDOFF),
 * or NULL when there is none that waits now (or replicas must
 * acknowledge acquires: a hand-over goes without WAIT). */
struct op *waiters_handoff(struct lw_client *c, const struct lw_lock *lock);
/* The hand-over did not happen: op tries for itself (or its time is up). */
void waiters_unreserve(struct lw_client *c, struct op *op);

#endif
