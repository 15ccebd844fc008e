/*
 * leasewheel/multi.h - several names held at once, or none: a transfer
 * between two accounts, a job that touches three shards.
 *
 * A multi-lock (struct lw_multi) is made over lock handles of one client:
 * plain locks (lw_lock_new()) and write locks of read-write locks
 * (lw_write_lock_new()), each name once.  Its acquire leaves either every
 * name held by the owner, or none: no hold is left behind.
 *
 * On the wire every name is what its own handle would make of it (the
 * lock's hash, field "<client id>:<owner>", a hold count, the lease and
 * the fencing token), so Redisson's RLock, or RReadWriteLock's write
 * lock, on any one of the names contends with the set, and a name the
 * owner holds already is re-entered (its count goes up by one).
 *
 * How it is taken.  The names are put in one order for every client,
 * slot first, then the name's bytes.  On one Redis (and through
 * Sentinel), one script takes them all or none: one round trip.  In a
 * cluster the names are grouped by slot, each group taken all or none by
 * one script on its master, the groups one after another in that order.
 * A group refused gives the groups taken back, then waits for the name
 * that refused it (on its channel, as that lock's own waiters do, or
 * until its holder's lease runs out), and starts again from the first.
 * Two multi-locks over the same names never hold part each and wait for
 * each other: the first group, and in it every name, is taken whole.
 * Redisson's RedissonMultiLock takes the locks one by one (N round trips,
 * in the order given), and two of its multi-locks over the same names in
 * other orders can keep refusing each other until their waits run out.
 *
 * Renewed and lost as one.  With lease 0 each name is renewed by the
 * watchdog in the usual batches.  If any one is lost, the set is: the
 * callbacks hear of it once, with the name that went (on_lost, and
 * on_lease_lost with struct lw_lease's `multi` set to the handle), and
 * the set's holds on the other names are released, so that a holder that
 * believes it holds the set really does.  With a lease of its own, every
 * name ends with it.
 *
 * Limits: 1..LW_MULTI_MAX names (LW_ERANGE), one client, no name twice,
 * no other kind of handle (LW_EINVAL); not with acquire_replicas
 * (LW_ENOTSUP).
 *
 * Added in 0.4.
 */
#ifndef LEASEWHEEL_MULTI_H
#define LEASEWHEEL_MULTI_H

#include <leasewheel/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LW_MULTI_MAX 64u

struct lw_multi;

/*
 * lw_multi_new - a multi-lock over the n handles at locks (their order
 * does not matter).  It keeps them alive: the caller may free its own
 * handles afterwards.  Returns 0, LW_EINVAL (a NULL, a handle of another
 * client or kind, a name twice), LW_ERANGE (n), LW_ENOTSUP
 * (acquire_replicas), LW_ENOMEM, LW_ESHUTDOWN.
 */
LW_API int lw_multi_new(struct lw_lock *const *locks, size_t n, struct lw_multi **out);

/* lw_multi_free - free the handle.  Holds taken through it stay until
 * released or expired. */
LW_API void lw_multi_free(struct lw_multi *m);

/*
 * lw_multi_acquire - every name for owner, waiting up to wait_ms
 * (LW_WAIT_FOREVER, or 0 to try once) with a lease of lease_ms (0: the
 * watchdog).  tokens, when not NULL, gets each name's fencing token, in
 * the order the handles were given.  A wait that ends covers reaching
 * Redis as a lock's does (leasewheel/lock.h).  Returns 0 with all held,
 * or with none: LW_ELOCKED (a name stayed held; the connection's error
 * when Redis could not be reached as the wait ended), LW_EWRONGKIND (a name is the
 * other kind of lock), LW_EDEADLK (owner reads a name it asks to write,
 * or a call from the engine thread), LW_ETIMEDOUT (taken too late to be
 * of use: given back), the connection's errors, and the arguments' as
 * lw_acquire().
 */
LW_API int lw_multi_acquire(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                            uint64_t lease_ms, uint64_t *tokens);

/* lw_multi_acquire_until - as lw_multi_acquire(), and on success
 * *until_ns (lw_clock_now()'s clock) gets until when every name is sure to
 * be held without a renewal: the earliest of the groups' leases, counted
 * from before its command was written, less the drift allowance. */
LW_API int lw_multi_acquire_until(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                                  uint64_t lease_ms, uint64_t *tokens, uint64_t *until_ns);

/* lw_multi_lock - every name for the calling thread, waiting for ever,
 * renewed by the watchdog. */
LW_API int lw_multi_lock(struct lw_multi *m);

/* lw_multi_try_lock - every name for the calling thread, waiting up to
 * wait_ms, with lease_ms (0: the watchdog). */
LW_API int lw_multi_try_lock(struct lw_multi *m, uint64_t wait_ms, uint64_t lease_ms);

/*
 * lw_multi_unlock_owner - one hold of every name released for owner.
 * Returns 0, or LW_ENOTOWNER when owner held some name not (that name is
 * left alone, the others are released), or the connection's errors.
 */
LW_API int lw_multi_unlock_owner(struct lw_multi *m, uint64_t owner);

/* lw_multi_unlock - as lw_multi_unlock_owner() for the calling thread. */
LW_API int lw_multi_unlock(struct lw_multi *m);

/* Asynchronous twins: done(err, 0, arg) on the engine thread, unless the
 * call itself fails.  tokens and until_ns must stay valid until done
 * runs. */
LW_API int lw_multi_acquire_async(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                                  uint64_t lease_ms, uint64_t *tokens, lw_done_fn *done,
                                  void *arg);
LW_API int lw_multi_acquire_until_async(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                                        uint64_t lease_ms, uint64_t *tokens, uint64_t *until_ns,
                                        lw_done_fn *done, void *arg);
LW_API int lw_multi_unlock_async(struct lw_multi *m, uint64_t owner, lw_done_fn *done,
                                 void *arg);

#ifdef __cplusplus
}
#endif

#endif
