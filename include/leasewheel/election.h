/*
 * leasewheel/election.h - leader election on a Redis lock.
 *
 * Leadership of a name is its lock: Redisson's RLock hash on the name,
 * field "<client id>:<owner>", renewed by the watchdog as any lock.  The
 * term and the leader's value are written into the same hash by the same
 * script that takes it (fields leasewheel:term and leasewheel:value, which
 * no Redisson owner can take), so that whatever removes the lock (a
 * resign, its lease running out, Redisson's forceUnlock, DEL) removes
 * them with it.  A Redisson RLock or RFencedLock on the name contends with
 * candidates as with any lock.
 *
 * Terms.  Each election draws the next term from the name's fencing
 * counter (redisson_lock_token:{name}, RFencedLock's): strictly
 * increasing for the name, the leader's fencing token.  A counter that is
 * missing, never made or lost with Redis's data, is made at Redis's clock
 * in microseconds: terms rise across a Redis that restarted empty, unless
 * its clock stepped back past the last term given.  What a term promises
 * when Redis loses data is what a lock does: a leader elected on a Redis
 * that lost the lock may overlap the one that held it (docs/guide/
 * election.md).
 *
 * The leader's belief is the watchdog's: lw_election_sure_until() says,
 * on any thread and without a lock, until when this candidate surely
 * leads; check it before each side effect (Curator's hasLeadership()).
 * A leadership lost is told as any lock's (lw_client_config's on_lost,
 * on_lease_lost), and sure_until falls to 0.  Resign stops nothing
 * itself: stop the work first, then resign (client-go's
 * ReleaseOnCancel).  A candidate that lost its term and campaigns again
 * wins a new term, never the lost one.
 *
 * Lock delay (Chubby's, Consul's): with lw_client_config's
 * election_lock_delay_ms, a term of that client that ends without a
 * resign (its leader lost, dead or cut off) keeps the name that long past
 * the leader's lease, so that its work has that long to stop before
 * anyone else leads; its lease is of the kind LW_LEASE_TERM.  A resign
 * hands over at once.
 *
 * Threads.  Every call may be made from any thread but the engine's
 * (blocking ones), as the lock calls.  Added in 0.5.
 */
#ifndef LEASEWHEEL_ELECTION_H
#define LEASEWHEEL_ELECTION_H

#include <stddef.h>
#include <stdint.h>

#include <leasewheel/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest value a leader may write. */
#define LW_ELECTION_VALUE_MAX 4096

struct lw_election;

/* Who leads a name, read in one script (lw_election_leader()). */
struct lw_leader {
    int held;                              /* 1: somebody holds the name; 0: vacant */
    uint64_t term;                         /* the term (0 when the holder was not elected: a
                                              Redisson RLock, a plain lock) */
    char leader[LW_CLIENT_ID_MAX + 24];    /* the holder's field,
                                              "<client id>:<owner>", NUL-ended */
    char value[LW_ELECTION_VALUE_MAX + 1]; /* the leader's value, NUL-ended */
    size_t value_len;
    int64_t ttl_ms;         /* the lease left when read (PTTL) */
    uint64_t sure_until_ns; /* held: no other leader can exist before this
                               (lw_clock_now()'s ns) unless this one resigns
                               first (a resign hands over at once, and says
                               so on the channel; so does the library for a
                               campaign whose answer came too late): the
                               read's last write + ttl_ms - the drift
                               allowance; 0 vacant */
};

/* What an observer is told (lw_election_observe()). */
enum lw_observed {
    LW_OBSERVED_VACANT = 0,  /* nobody leads */
    LW_OBSERVED_LEADER = 1,  /* *leader leads, and nobody else before its
                                sure_until_ns unless it resigns first */
    LW_OBSERVED_UNKNOWN = 2, /* the belief ran out and the name cannot be
                                read (Redis unreachable) */
};

/* An observer's callback, on the engine thread: state, and the leader
 * read (held 0 but for LW_OBSERVED_LEADER).  It may not block on the
 * client. */
typedef void lw_observe_fn(int state, const struct lw_leader *leader, void *arg);

/*
 * lw_election_new - a candidate for leadership of name (len bytes, as a
 * lock's name), on client c, with an owner of its own: one handle is one
 * candidate, whatever thread calls.  LW_EINVAL, LW_ERANGE, LW_ENOMEM,
 * LW_ESHUTDOWN.
 */
LW_API int lw_election_new(struct lw_client *c, const void *name, size_t len,
                           struct lw_election **out);

/*
 * lw_election_set_queued - where a campaign waits while another leads:
 * in the fair lock's queue in Redis (1, the default: Redisson's RFairLock
 * queue, first come, first served across every client; a candidate that
 * dies drops out within its place's lease), or in this client's line for
 * the name only (0: a candidate of another client, or a Redisson RLock,
 * may get in first).  Before the handle's first campaign or observe:
 * LW_EBUSY after.  LW_EINVAL, LW_ENOMEM.
 */
LW_API int lw_election_set_queued(struct lw_election *e, int queued);

/* lw_election_free - drop the handle (a leader it is stays leader until
 * its lease runs out: resign first). */
LW_API void lw_election_free(struct lw_election *e);

/*
 * lw_election_campaign - lead, waiting up to wait_ms (LW_WAIT_FOREVER, 0:
 * try once) while another holds the name, in the fair lock's queue unless
 * lw_election_set_queued() said otherwise; value (len bytes, at most
 * LW_ELECTION_VALUE_MAX) is written with the lock, and the term into
 * *term (may be NULL).  The watchdog renews the leadership until
 * lw_election_resign(), or until it is lost.  A leader campaigning again
 * keeps its term and value.  LW_ELOCKED when the wait ran out, and the
 * lock calls' errors (LW_EWRONGKIND: the name is a read-write lock's).
 */
LW_API int lw_election_campaign(struct lw_election *e, const void *value, size_t len,
                                uint64_t wait_ms, uint64_t *term);
/* The same, asynchronous: done gets the error and the term. */
LW_API int lw_election_campaign_async(struct lw_election *e, const void *value, size_t len,
                                      uint64_t wait_ms, lw_done_fn *done, void *arg);

/*
 * lw_election_proclaim - a new value, only while this candidate still
 * leads in the term it was elected for (etcd's Proclaim): 0, or
 * LW_ENOTOWNER when it does not (nothing written).
 */
LW_API int lw_election_proclaim(struct lw_election *e, const void *value, size_t len);

/*
 * lw_election_resign - stop leading (the next candidate may lead within a
 * round trip): 0, or LW_ENOTOWNER when this candidate did not lead.  Stop
 * the work that leadership guards first.
 */
LW_API int lw_election_resign(struct lw_election *e);

/* lw_election_leader - who leads the name now, in one read, into *out. */
LW_API int lw_election_leader(struct lw_election *e, struct lw_leader *out);

/*
 * lw_election_sure_until - until when this candidate surely leads, in
 * lw_clock_now()'s nanoseconds (the watchdog's proof: its last confirmed
 * renewal's lease), 0 when it does not lead.  Any thread, no lock: read
 * it before each side effect of leading.
 */
LW_API uint64_t lw_election_sure_until(const struct lw_election *e);

/*
 * lw_election_observe - watch who leads: fn is told at once and at every
 * change of state, term, leader or value, in order of terms.  The name is
 * read again when a message on the election's channel says something
 * changed (a hint: one lost, a reconnect, is caught by the next read), at
 * each leader's sure_until_ns, and every third of the watchdog's lease
 * while vacant; a read whose term is lower than one already told is
 * dropped.  Once the belief in a leader has run out and the name cannot
 * be read, it says LW_OBSERVED_UNKNOWN: it never names a leader past its
 * belief.  One observer per handle: LW_EBUSY when it observes already.
 */
LW_API int lw_election_observe(struct lw_election *e, lw_observe_fn *fn, void *arg);
/* lw_election_unobserve - stop: once it returns, fn is not called (on the
 * engine thread, from fn itself, too).  LW_EINVAL when not observing. */
LW_API int lw_election_unobserve(struct lw_election *e);

/* lw_election_term - the term this candidate was last elected for (0:
 * never), whether or not it still leads. */
LW_API uint64_t lw_election_term(const struct lw_election *e);

#ifdef __cplusplus
}
#endif

#endif
