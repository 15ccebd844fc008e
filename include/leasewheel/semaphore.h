/*
 * leasewheel/semaphore.h - semaphores whose permits expire: "at most N of
 * these at once, across all our machines".  Added in 0.4.
 *
 * A semaphore (struct lw_semaphore) is a named count of permits on the
 * client's Redis.  An acquire takes one permit, or n at once (all or
 * none), for a lease: the permit expires at the end of it unless it is
 * released first.  A permit is a value (struct lw_permit: 16 random
 * bytes), not tied to a thread: one thread may acquire it and another
 * release it.
 *
 * Why only expiring permits.  A permit that never expires is lost for
 * good when its holder dies without releasing it (a crash, a kill, a
 * machine gone): the count is short by one for ever, and nobody can tell
 * which holder was dead.  So every permit here has a lease, and a
 * permit nobody released comes back when its lease ends.
 *
 * Wire format (compatible with Redisson's RPermitExpirableSemaphore, whose
 * clients and ours share a semaphore): the string at the name holds the
 * count of available permits (it may go negative after a negative add);
 * the sorted set "{<name>}:timeout" ("<name>:timeout" when the name has a
 * '{') holds the acquired permits, member = the permit's 16 bytes, score =
 * its expiry in epoch milliseconds: Redis's clock when the acquire ran +
 * its lease for ours (the script reads TIME), the acquiring client's
 * clock + its lease for a Redisson client's (922337203685477: never,
 * which only Redisson's clients set); the channel
 * "redisson_sc:{<name>}" carries the number of permits available after a
 * release or a reclaim.  Expiry is lazy: every acquire first moves the
 * expired permits back to the count (and publishes), as Redisson's do, so
 * each side reclaims the other's dead permits.
 *
 * Clocks.  leasewheel's scripts score and reclaim permits by Redis's
 * clock, so no leasewheel client's clock enters a permit's lease.
 * Redisson's clients score and reclaim by their own: in a semaphore
 * shared with them, one whose clock runs ahead of Redis's reclaims
 * permits early; permit_clock_skew_ms (lw_client_config) is the
 * allowance for that.
 *
 * The permit watchdog.  A permit acquired with lease 0 gets the client's
 * watchdog lease (watchdog_timeout_ms) and is renewed every third of it,
 * in the same batches as the locks: each renewal first reclaims the
 * semaphore's expired permits (by Redis's clock), then moves the
 * permit's expiry to Redis's now + lease only if it is still there and
 * not expired.  A permit found gone (released by someone else, or reclaimed
 * after a stall) is lost: on_lost says so (name: the semaphore's, owner:
 * lw_permit_owner() of the permit, reason LW_LOST_NOT_OWNER), and so does
 * on_lease_lost with the kind LW_LEASE_PERMIT and the permit's whole id
 * (struct lw_lease's permit), and it is never added back.  Renewals that
 * fail, a lease running out, max_hold_ms, on_risk: as for locks.
 * valid_until is a lock's, less permit_clock_skew_ms (lw_client_config;
 * 0 by default): a permit is reported lost before a Redisson client whose
 * clock runs that much ahead of Redis's may reclaim it.
 * Renewed permits count with the watchdog's locks in the client's stats
 * (locks_held, renewals_*, lost_*); the metrics split them by kind
 * (kind="permit": leasewheel_leases_held and the other leases_* families).
 *
 * Waiting.  An acquire that finds too few permits waits on the channel,
 * whose messages carry a count (the permits available after a release or
 * a reclaim): a message carrying k wakes this client's oldest waiters that
 * k permits serve, all at once, a waiter wanting n counting as n (the
 * oldest tries even when it wants more than k); a waiter that gets its
 * permits and sees some left over wakes the next ones they serve.  The
 * oldest also tries again at the nearest expiry among the acquired
 * permits (expiry publishes nothing).  Within a client waiting is first
 * come, first served (no waiter passes one that wants more); between
 * clients there is no order.  A wait that ends covers reaching Redis as
 * a lock's does (leasewheel/lock.h, "A wait covers reaching Redis"): a
 * permit's copy sent again carries the same ids, and takes no more.
 *
 * A semaphore that does not exist (its count was never set) fails an
 * acquire at once with LW_ENOSEM, instead of waiting for ever as
 * Redisson's does: create it with lw_semaphore_try_set() or
 * lw_semaphore_set().
 *
 * Threads: as for locks (<leasewheel/lock.h>): every function is
 * thread-safe; blocking calls return LW_EDEADLK on the engine thread.
 */
#ifndef LEASEWHEEL_SEMAPHORE_H
#define LEASEWHEEL_SEMAPHORE_H

#include <stddef.h>
#include <stdint.h>

#include <leasewheel/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lw_semaphore;

#define LW_PERMIT_ID_LEN 16u         /* bytes of a permit's id */
#define LW_PERMIT_HEX_LEN 32u        /* its hex form, without the NUL */
#define LW_MAX_PERMITS_AT_ONCE 1000u /* n of one acquire or release */

/* A permit: its id as the 16 bytes stored in Redis. */
struct lw_permit {
    uint8_t id[LW_PERMIT_ID_LEN];
};

/* lw_permit_hex - the id as 32 lowercase hex characters and a NUL into
 * out (LW_PERMIT_HEX_LEN + 1 bytes), as Redisson shows permit ids.
 * Returns out. */
LW_API char *lw_permit_hex(const struct lw_permit *permit, char *out);

/* lw_permit_from_hex - parse 32 hex characters (either case; a Redisson
 * permit id).  Returns 0, LW_EINVAL (NULL, or not 32 hex characters). */
LW_API int lw_permit_from_hex(const char *hex, struct lw_permit *out);

/* lw_permit_owner - the value on_lost and on_risk pass as `owner` for
 * this permit (with the semaphore's name as `name`): its first 8 bytes,
 * big-endian. */
LW_API uint64_t lw_permit_owner(const struct lw_permit *permit);

/*
 * lw_semaphore_new - a handle for the semaphore named by the len bytes at
 * name.  Nothing is sent.  Returns 0 and sets *out, or LW_EINVAL (NULL,
 * len 0), LW_ERANGE (len over LW_LOCK_NAME_MAX), LW_ENOMEM, LW_ESHUTDOWN.
 */
LW_API int lw_semaphore_new(struct lw_client *client, const void *name, size_t len,
                            struct lw_semaphore **out);

/* lw_semaphore_free - drop the handle (calls pending keep it alive until
 * they end); permits acquired through it are not released.  NULL
 * ignored. */
LW_API void lw_semaphore_free(struct lw_semaphore *sem);

/*
 * Set-up and queries, blocking.  Each returns 0 (or what is said) or a
 * negative LW_E* code: LW_EINVAL (NULL), LW_ENOSEM (the semaphore does not
 * exist), LW_EWRONGTYPE (the keys hold something else: another type, a
 * string that is no count), LW_EREPLY (Redis refused the command
 * otherwise; lw_reply_error() has its words), transport errors,
 * LW_ESHUTDOWN, LW_EDEADLK (on the engine thread).
 */

/* lw_semaphore_try_set - create it with `permits` available, only if it
 * does not exist.  Returns 1 when created, 0 when it existed (untouched). */
LW_API int lw_semaphore_try_set(struct lw_semaphore *sem, int64_t permits);

/* lw_semaphore_set - make available + acquired = permits (creating it with
 * `permits` when absent).  Permits acquired stay acquired: the available
 * count may go negative, and then acquires wait until enough are
 * released.  Expired permits are reclaimed first. */
LW_API int lw_semaphore_set(struct lw_semaphore *sem, int64_t permits);

/* lw_semaphore_add - add delta (may be negative) to the available count,
 * creating the semaphore at delta when absent.  *available (may be NULL)
 * gets the count after. */
LW_API int lw_semaphore_add(struct lw_semaphore *sem, int64_t delta, int64_t *available);

/* lw_semaphore_available - *out gets the available count, after
 * reclaiming expired permits. */
LW_API int lw_semaphore_available(struct lw_semaphore *sem, int64_t *out);

/* lw_semaphore_acquired - *out gets the number of permits acquired and
 * not expired (expired ones are reclaimed first). */
LW_API int lw_semaphore_acquired(struct lw_semaphore *sem, int64_t *out);

/*
 * lw_permit_acquire - acquire n permits (1..LW_MAX_PERMITS_AT_ONCE), all
 * or none, waiting at most wait_ms (0: try once; LW_WAIT_FOREVER), each
 * for lease_ms (at least 3 ticks and LW_MIN_LEASE_MS, at most
 * LW_MAX_LEASE_MS), or with lease_ms 0 held until released: the watchdog
 * renews each permit (see "The permit watchdog" above).  permits[0..n-1]
 * receive their ids.  Returns 0, or LW_ELOCKED (too few permits free all
 * the wait; the connection's error when Redis could not be reached as it
 * ended), LW_ENOSEM (the semaphore does not exist: at once, without
 * waiting), LW_EINVAL (NULL, n 0), LW_ERANGE (n or lease too large),
 * LW_ELEASE, LW_ETIMEDOUT (answered too late to be of use: the permits
 * were given back), LW_EREPLICAS and LW_ENOTSUP (acquire_replicas set:
 * too few replicas acknowledged the acquire, or the server has no WAIT;
 * the permits were given back, as a lock's acquire gives its hold back),
 * LW_EWRONGTYPE, LW_EREPLY, transport errors, LW_ESHUTDOWN, LW_EDEADLK.
 */
LW_API int lw_permit_acquire(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                             uint64_t lease_ms, struct lw_permit *permits);

/*
 * lw_permit_release - release n permits (1..LW_MAX_PERMITS_AT_ONCE), all
 * or none, from any thread.  Returns 0, or LW_ENOPERMIT when any of them
 * is unknown, released already or expired (an expired one has been, or is
 * now, given back to the count by the expiry: never twice); then none is
 * released.  Other errors as for the acquire.
 */
LW_API int lw_permit_release(struct lw_semaphore *sem, const struct lw_permit *permits,
                             unsigned n);

/*
 * Asynchronous twins: done(err, value, arg) runs once on the engine
 * thread, unless the call itself returns an error (then never).  The
 * acquire writes the ids into permits[0..n-1], which must stay valid until
 * done runs; value is n.  The release copies the ids; value is n.
 */
LW_API int lw_permit_acquire_async(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                                   uint64_t lease_ms, struct lw_permit *permits,
                                   lw_done_fn *done, void *arg);
LW_API int lw_permit_release_async(struct lw_semaphore *sem, const struct lw_permit *permits,
                                   unsigned n, lw_done_fn *done, void *arg);

/*
 * lw_permit_acquire_until, lw_permit_acquire_until_async - as
 * lw_permit_acquire() and its async twin, telling how long the permits
 * are sure: on success (before done runs) *until_ns gets the moment, on
 * lw_clock_now()'s clock, until which no client can have reclaimed them:
 * the acquire's last write (its permits' expiry is Redis's clock when it
 * ran + the lease) plus the lease, less the drift and the mixed fleet's
 * allowance (permit_clock_skew_ms, at most a quarter of the lease).  Every acquire is answered with at
 * least a tick of it left (else LW_ETIMEDOUT, the permits given back).  A
 * fixed lease's holder must be done by then; a watchdog permit's moves on
 * with each renewal (on_risk, on_lost).  until_ns NULL: LW_EINVAL; the
 * async call's must stay valid until done has run.  Added in 0.4.
 */
LW_API int lw_permit_acquire_until(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                                   uint64_t lease_ms, struct lw_permit *permits,
                                   uint64_t *until_ns);
LW_API int lw_permit_acquire_until_async(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                                         uint64_t lease_ms, struct lw_permit *permits,
                                         uint64_t *until_ns, lw_done_fn *done, void *arg);

#ifdef __cplusplus
}
#endif

#endif
