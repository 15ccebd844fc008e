/*
 * core/stats.h - the client's counters, behind lw_client_get_stats().
 *
 * The engine thread alone writes them, with relaxed loads and stores and
 * no locked instruction (counter.h); any thread reads them.  Every update
 * goes through a helper here, so that each counter is written one way.
 */
#ifndef LW_CORE_STATS_H
#define LW_CORE_STATS_H

#include <stdint.h>

#include <leasewheel/lock.h>

#include "counter.h"

/* The kinds of lease counted apart (enum lw_lease_kind), and the reasons
 * of loss (LW_LOST_*, from 1). */
#define STATS_KINDS (LW_LEASE_TERM + 1)

/* Whether a lease of kind is a hold, counted in the lock totals besides
 * its kind's (locks_held, at_risk, the losses): a fair lock's waiter's
 * place is not. */
static inline int stats_held_kind(unsigned kind)
{
    return kind != LW_LEASE_PLACE;
}
#define STATS_REASONS (LW_LOST_HELD_TOO_LONG + 1)

/* One kind's share of the watchdog's counters below (the metrics' kind
 * label): each is also counted in the client's totals, which
 * lw_client_get_stats() reads. */
struct kind_counters {
    _Atomic uint64_t held, at_risk, went_at_risk, recovered;
    _Atomic uint64_t renewals_sent, renewals_confirmed, renewals_failed;
    _Atomic uint64_t lost[STATS_REASONS]; /* by reason; [0] unused */
};

struct client_counters {
    _Atomic uint64_t locks_held, renewals_sent, renewals_confirmed, renewals_failed;
    _Atomic uint64_t renew_batches, lost_not_owner, lost_errors, lost_expired;
    _Atomic uint64_t worst_lag_ns, waiters, subscriptions, lost_late, worst_lost_late_ns,
        acquired_too_late;
    _Atomic uint64_t lost_failover, failovers, replicas_refused;
    _Atomic uint64_t lag[LW_LAG_BUCKETS];
    _Atomic uint64_t at_risk, went_at_risk, recovered, lost_held_too_long;
    _Atomic uint64_t acquires, holds_ended;
    _Atomic uint64_t acquire_wait[LW_LAG_BUCKETS];
    _Atomic uint64_t hold_time[LW_LAG_BUCKETS];
    /* Not in lw_client_stats: the exact sums of the two histograms above,
     * in microseconds (lw_client_format_metrics()'s _sum). */
    _Atomic uint64_t acquire_wait_us, hold_time_us;
    _Atomic uint64_t overloaded, overloads, overload_refused, backlog_ns;
    _Atomic uint64_t redis_clock_jumps;
    _Atomic uint64_t election_terms, election_vacancies, election_observers;
    struct kind_counters kind[STATS_KINDS];
};

/* The renewal lag histogram's bucket for lag_ns (lw_lag_bucket_floor_ns()). */
unsigned lag_bucket(uint64_t lag_ns);

/* A watchdog lease of kind lost for reason (LW_LOST_*), reported late_ns
 * after its valid_until (0: in time). */
void stats_lost(struct client_counters *k, unsigned kind, int reason, uint64_t late_ns);

/* A watchdog lease of kind became at risk. */
static inline void stats_went_at_risk(struct client_counters *k, unsigned kind)
{
    if (stats_held_kind(kind)) {
        count_add(&k->went_at_risk, 1);
        count_add(&k->at_risk, 1);
    }
    count_add(&k->kind[kind].went_at_risk, 1);
    count_add(&k->kind[kind].at_risk, 1);
}

/* An at-risk lease of kind was safe again (recovered) or left the
 * watchdog. */
static inline void stats_left_risk(struct client_counters *k, unsigned kind, int recovered)
{
    int held = stats_held_kind(kind);

    if (held)
        count_add(&k->at_risk, (uint64_t)-1);
    count_add(&k->kind[kind].at_risk, (uint64_t)-1);
    if (recovered) {
        if (held)
            count_add(&k->recovered, 1);
        count_add(&k->kind[kind].recovered, 1);
    }
}

/* An acquire succeeded after the call had taken wait_ns. */
static inline void stats_acquired(struct client_counters *k, uint64_t wait_ns)
{
    count_add(&k->acquires, 1);
    count_add(&k->acquire_wait[lag_bucket(wait_ns)], 1);
    count_add(&k->acquire_wait_us, wait_ns / 1000u);
}

/* A watchdog lock held for held_ns was unlocked or lost. */
static inline void stats_hold_ended(struct client_counters *k, uint64_t held_ns)
{
    count_add(&k->holds_ended, 1);
    count_add(&k->hold_time[lag_bucket(held_ns)], 1);
    count_add(&k->hold_time_us, held_ns / 1000u);
}

/* The watchdog holds one lease of kind more (+1) or fewer (-1). */
static inline void stats_held(struct client_counters *k, unsigned kind, int delta)
{
    if (stats_held_kind(kind))
        count_add(&k->locks_held, (uint64_t)(int64_t)delta);
    count_add(&k->kind[kind].held, (uint64_t)(int64_t)delta);
}

/* A renewal goes into a batch lag_ns after it fell due. */
static inline void stats_renewal_lag(struct client_counters *k, uint64_t lag_ns)
{
    count_max(&k->worst_lag_ns, lag_ns);
    count_add(&k->lag[lag_bucket(lag_ns)], 1);
}

/* A batch of n renewals of kind is sent. */
static inline void stats_batch_sent(struct client_counters *k, unsigned kind, uint32_t n)
{
    count_add(&k->renew_batches, 1);
    count_add(&k->renewals_sent, n);
    count_add(&k->kind[kind].renewals_sent, n);
}

static inline void stats_renewal_confirmed(struct client_counters *k, unsigned kind)
{
    count_add(&k->renewals_confirmed, 1);
    count_add(&k->kind[kind].renewals_confirmed, 1);
}

static inline void stats_renewal_failed(struct client_counters *k, unsigned kind)
{
    count_add(&k->renewals_failed, 1);
    count_add(&k->kind[kind].renewals_failed, 1);
}

/* An acquire's reply came too late, and its hold is given back. */
static inline void stats_acquired_too_late(struct client_counters *k)
{
    count_add(&k->acquired_too_late, 1);
}

/* A first acquire was not acknowledged by enough replicas: given back. */
static inline void stats_replicas_refused(struct client_counters *k)
{
    count_add(&k->replicas_refused, 1);
}

/* A Redis's clock was seen ahead of ours (redis_clock.h). */
static inline void stats_redis_clock_jump(struct client_counters *k)
{
    count_add(&k->redis_clock_jumps, 1);
}

/* An election's candidate was elected (election.c, lock.c). */
static inline void stats_elected(struct client_counters *k)
{
    count_add(&k->election_terms, 1);
}

/* An observer was told a vacancy after a leader. */
static inline void stats_vacancy(struct client_counters *k)
{
    count_add(&k->election_vacancies, 1);
}

/* One observer more (+1) or fewer (-1) watches. */
static inline void stats_observers(struct client_counters *k, int delta)
{
    count_add(&k->election_observers, (uint64_t)(int64_t)delta);
}

/* A topology change in which n shards failed over. */
static inline void stats_failovers(struct client_counters *k, unsigned n)
{
    if (n)
        count_add(&k->failovers, n);
}

/* One acquire more (+1) or fewer (-1) waits on a channel. */
static inline void stats_waiters(struct client_counters *k, int delta)
{
    count_add(&k->waiters, (uint64_t)(int64_t)delta);
}

/* n channel records (subscribed or on their way) exist. */
static inline void stats_subscriptions(struct client_counters *k, uint64_t n)
{
    count_set(&k->subscriptions, n);
}

/* Admission: first acquires held back from now on (on 1), or no longer
 * (0). */
static inline void stats_overloaded(struct client_counters *k, int on)
{
    count_set(&k->overloaded, on ? 1 : 0);
    if (on)
        count_add(&k->overloads, 1);
}

/* A first acquire failed with LW_EOVERLOAD. */
static inline void stats_overload_refused(struct client_counters *k)
{
    count_add(&k->overload_refused, 1);
}

/* The renewal backlog at the last look. */
static inline void stats_backlog(struct client_counters *k, uint64_t backlog_ns)
{
    count_set(&k->backlog_ns, backlog_ns);
}

#endif
