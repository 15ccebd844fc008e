/*
 * core/watchdog.h - watchdog.c's calls: the watchdog's entries started,
 * held back and stopped by the lock calls, flushed and stopped by the
 * client.
 */
#ifndef LW_CORE_WATCHDOG_H
#define LW_CORE_WATCHDOG_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <leasewheel/semaphore.h>

struct lw_client;
struct lw_lock;

/* A lease of lease_ms that started no earlier than from_ns
 * (request_lease_from(): the command's stamp, or its last write) lasts
 * at least until then (less a clock-drift allowance). */
uint64_t lease_valid_until(uint64_t lease_ms, uint64_t from_ns);
/* Whether the watchdog renews (name, owner) already. */
int watchdog_renews(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);

/* watchdog_holds - the hold count of owner's watchdog lock, 0 when it
 * has none. */
uint32_t watchdog_holds(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);
/* An acquire succeeded, its lease counted from from_ns
 * (request_lease_from()): note the hold count; with watch, start
 * renewing, to be given up max_hold_ms after from_ns (0: never). */
void watchdog_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                       uint32_t holds, uint64_t from_ns, int watch, uint64_t max_hold_ms);
/* An unlock is about to be sent: hold renewals back if it is the last hold.
 * Its reply: the holds left (0: released), -1 (not the owner's), or
 * UNLOCK_UNKNOWN (failed: it may not have run; renewing resumes). */
#define UNLOCK_UNKNOWN INT64_MIN
void watchdog_unlock_begin(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);
void watchdog_unlock_end(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                         int64_t holds_left);
void watchdog_forget(struct lw_client *c, const struct lw_lock *lock);
void watchdog_flush(struct lw_client *c);
void watchdog_shutdown(struct lw_client *c);
/* Cluster: slots failed over (a bitmap): re-check their locks at once. */
void watchdog_failover(struct lw_client *c, const uint8_t *slots);

/* How early the first renewal of the seq-th new lock comes: its share of
 * the renewal period, in [0, period_ns). */
uint64_t watchdog_first_early_ns(uint64_t seq, uint64_t period_ns);
/* New locks take their share in runs of this many: the seq passed above
 * is a new lock's number over it (watchdog.c says why; lwbench's ceiling
 * floods in the same runs). */
#define WATCHDOG_PHASE_RUN 32u
/* How long the oldest due renewal not yet sent has waited (0: none
 * waits). */
uint64_t watchdog_backlog_ns(const struct lw_client *c, uint64_t now_ns);

/* A fair lock's waiter (lock.c) took its place in the queue by a command
 * whose place counts from from_ns (its stamp): the watchdog renews the
 * place (kind_place.c) until it is left (acquired, or given up). */
void watchdog_place_taken(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                          uint64_t from_ns);
void watchdog_place_left(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);

/*
 * A set of watchdog leases held and lost as one: a multi-lock's hold
 * (multi.c) of one owner.  When one of its leases is lost, the loss is
 * reported once, with the set (struct lw_lease's multi), and on_lost
 * tells the set's owner (who releases the rest); a lease of a set already
 * lost is not reported again.  multi.c owns the set; the watchdog's
 * entries point at it from watchdog_set_join() until watchdog_set_leave()
 * or their end.
 */
struct lease_set {
    const void *multi; /* struct lw_multi *, for the callbacks */
    uint32_t members;  /* entries that point at it */
    uint8_t lost;      /* one of its leases was lost */
    /* After the report, once: the lease named so was lost. */
    void (*on_lost)(struct lw_client *c, struct lease_set *s, const char *name, size_t len);
    /* An entry joins (+1) or leaves (-1) it (NULL: not asked): the set's
     * owner keeps its memory while entries point at it (an election's,
     * which its handle may outlive). */
    void (*hold)(struct lease_set *s, int delta);
    /* A set of one lease (an election's): that lease's proven end
     * (valid_until, lw_clock_now()'s ns), written at every change, 0 once
     * it left; read on any thread. */
    _Atomic uint64_t sure_until_ns;
};
/* (name, owner)'s watchdog lease joins or leaves s.  Joining writes its
 * proven end to s->sure_until_ns, as every renewal then does; leaving
 * writes 0.  0, or -1 when it has
 * none (not renewed by the watchdog), or out of memory. */
int watchdog_set_join(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                      struct lease_set *s);
void watchdog_set_leave(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                        struct lease_set *s);

/* Permits (semaphore.c), renewed with lease 0: an entry per permit, named
 * by its semaphore, owned by its tag (permit_tag()), its id's 16 bytes
 * after the name's NUL.  Acquired by a command whose lease counts from
 * from_ns (its stamp: request_lease_from()); a release
 * about to be sent holds renewals back (begin) until it is answered (end:
 * gone 1 when the permit is no longer there, released or not; 0 when the
 * release may not have run: renewing resumes). */
void watchdog_permit_acquired(struct lw_client *c, const char *name, size_t len, unsigned slot,
                              const uint8_t *id, uint64_t from_ns);
void watchdog_permit_release_begin(struct lw_client *c, const char *name, size_t len,
                                   const uint8_t *id);
void watchdog_permit_release_end(struct lw_client *c, const char *name, size_t len,
                                 const uint8_t *id, int gone);

/* The tag of a permit's 16 bytes (lw_permit_owner()): its first 8,
 * big-endian; the watchdog's owner for it. */
#define PERMIT_ID_LEN LW_PERMIT_ID_LEN
static inline uint64_t permit_tag(const uint8_t *id)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | id[i];
    return v;
}

#endif
