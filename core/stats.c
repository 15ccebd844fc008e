/*
 * core/stats.c - the client's counters read out, and the renewal lag
 * histogram's buckets.
 */
#include <stddef.h>
#include <string.h>

#include "client_base.h"

static void get_stats(const struct lw_client *c, struct lw_client_stats *out)
{
    const struct client_counters *k = &c->count;

    out->locks_held = count_get(&k->locks_held);
    out->renewals_sent = count_get(&k->renewals_sent);
    out->renewals_confirmed = count_get(&k->renewals_confirmed);
    out->renewals_failed = count_get(&k->renewals_failed);
    out->renew_batches = count_get(&k->renew_batches);
    out->lost_not_owner = count_get(&k->lost_not_owner);
    out->lost_errors = count_get(&k->lost_errors);
    out->lost_expired = count_get(&k->lost_expired);
    out->worst_renewal_lag_ns = count_get(&k->worst_lag_ns);
    out->waiters = count_get(&k->waiters);
    out->subscriptions = count_get(&k->subscriptions);
    out->lost_late = count_get(&k->lost_late);
    out->worst_lost_late_ns = count_get(&k->worst_lost_late_ns);
    out->acquired_too_late = count_get(&k->acquired_too_late);
    out->worst_tick_late_ns = 0;
    if (c->wheel) {
        struct lw_wheel_stats ws;

        lw_wheel_get_stats(c->wheel, &ws);
        out->worst_tick_late_ns = ws.worst_lag_ns;
    }
    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        out->renewal_lag[i] = count_get(&k->lag[i]);
    out->lost_failover = count_get(&k->lost_failover);
    out->failovers = count_get(&k->failovers);
    out->replicas_refused = count_get(&k->replicas_refused);
    out->topology_refreshes = out->redirects = out->unsettled = 0;
    out->requests_taken_late = out->reconnects = out->tls_handshakes = out->tls_resumed = 0;
    out->at_risk = count_get(&k->at_risk);
    out->went_at_risk = count_get(&k->went_at_risk);
    out->recovered = count_get(&k->recovered);
    out->lost_held_too_long = count_get(&k->lost_held_too_long);
    out->acquires = count_get(&k->acquires);
    out->holds_ended = count_get(&k->holds_ended);
    out->overloaded = count_get(&k->overloaded);
    out->overloads = count_get(&k->overloads);
    out->overload_refused = count_get(&k->overload_refused);
    out->renewal_backlog_ns = count_get(&k->backlog_ns);
    out->redis_clock_jumps = count_get(&k->redis_clock_jumps);
    out->election_terms = count_get(&k->election_terms);
    out->election_vacancies = count_get(&k->election_vacancies);
    out->election_observers = count_get(&k->election_observers);
    out->host_sleeps = 0;
    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++) {
        out->acquire_wait[i] = count_get(&k->acquire_wait[i]);
        out->hold_time[i] = count_get(&k->hold_time[i]);
    }
    if (c->engine) {
        struct engine_stats es;

        engine_get_stats(c->engine, &es);
        out->topology_refreshes = es.topology_refreshes;
        out->redirects = es.redirects;
        out->unsettled = es.unsettled;
        out->requests_taken_late = es.taken_late;
        out->reconnects = es.reconnects;
        out->tls_handshakes = es.tls_handshakes;
        out->tls_resumed = es.tls_resumed;
        out->host_sleeps = es.host_sleeps;
    }
}

void lw_client_get_stats_size(const struct lw_client *c, struct lw_client_stats *out,
                              size_t size)
{
    struct lw_client_stats all;

    if (!c || !out)
        return;
    get_stats(c, &all);
    memcpy(out, &all, size < sizeof all ? size : sizeof all);
    if (size > sizeof all) /* a newer header's counters: this library has none */
        memset((char *)out + sizeof all, 0, size - sizeof all);
}

/* Log-linear buckets of microseconds: 8 exact ones, then 8 per doubling. */
#define LAG_SUB 8u
#define LAG_MAX_US ((1ull << 35) - 1)

unsigned lag_bucket(uint64_t lag_ns)
{
    uint64_t us = lag_ns / 1000u;
    unsigned top;

    if (us < LAG_SUB)
        return (unsigned)us;
    if (us > LAG_MAX_US)
        us = LAG_MAX_US;
    top = 63u - (unsigned)__builtin_clzll(us); /* 3 and up */
    return LAG_SUB + (top - 3u) * LAG_SUB + (unsigned)((us >> (top - 3u)) & (LAG_SUB - 1));
}

uint64_t lw_lag_bucket_floor_ns(unsigned bucket)
{
    unsigned top, sub;

    if (bucket < LAG_SUB)
        return bucket * 1000ull;
    top = (bucket - LAG_SUB) / LAG_SUB + 3u;
    sub = (bucket - LAG_SUB) % LAG_SUB;
    return ((uint64_t)(LAG_SUB + sub) << (top - 3u)) * 1000ull;
}

uint64_t lw_stats_lag_ns(const struct lw_client_stats *s, double q)
{
    uint64_t total = 0, seen = 0, rank;
    unsigned i, last = 0;

    for (i = 0; i < LW_LAG_BUCKETS; i++)
        if (s->renewal_lag[i]) {
            total += s->renewal_lag[i];
            last = i;
        }
    if (total == 0)
        return 0;
    q = q < 0 ? 0 : q > 1 ? 1
                          : q;
    rank = (uint64_t)(q * (double)total + 0.5);
    rank = rank < 1 ? 1 : rank;
    for (i = 0; i < last; i++)
        if ((seen += s->renewal_lag[i]) >= rank)
            break;
    return lw_lag_bucket_floor_ns(i + 1);
}

void stats_lost(struct client_counters *k, unsigned kind, int reason, uint64_t late_ns)
{
    static const size_t counter[] = {
        [LW_LOST_NOT_OWNER] = offsetof(struct client_counters, lost_not_owner),
        [LW_LOST_ERRORS] = offsetof(struct client_counters, lost_errors),
        [LW_LOST_EXPIRED] = offsetof(struct client_counters, lost_expired),
        [LW_LOST_FAILOVER] = offsetof(struct client_counters, lost_failover),
        [LW_LOST_HELD_TOO_LONG] = offsetof(struct client_counters, lost_held_too_long),
    };

    if (stats_held_kind(kind))
        count_add((_Atomic uint64_t *)((char *)k + counter[reason]), 1);
    count_add(&k->kind[kind].lost[reason], 1);
    if (late_ns == 0)
        return;
    count_add(&k->lost_late, 1);
    count_max(&k->worst_lost_late_ns, late_ns);
}

const char *lw_log_level_name(int level)
{
    switch (level) {
    case LW_LOG_ERROR: return "error";
    case LW_LOG_WARN: return "warn";
    case LW_LOG_INFO: return "info";
    default: return "unknown";
    }
}

const char *lw_lost_reason_name(int reason)
{
    switch (reason) {
    case LW_LOST_NOT_OWNER: return "not owner";
    case LW_LOST_ERRORS: return "errors";
    case LW_LOST_EXPIRED: return "expired";
    case LW_LOST_FAILOVER: return "failover";
    case LW_LOST_HELD_TOO_LONG: return "held too long";
    default: return "unknown";
    }
}
