/*
 * core/metrics.c - lw_client_format_metrics(): the client's counters and
 * gauges, and the engine's, as Prometheus's text exposition format 0.0.4.
 *
 * What it reads is what lw_client_get_stats() reads (relaxed loads of
 * counters the engine thread writes), plus, in a cluster, each master's
 * share of the engine's counters and the watchdog's renewal calls to it:
 * those are the engine thread's own, read there by a task (directly when
 * called on that thread).  Nothing is added to the paths that count but an
 * increment per renewal call to a node: the cost is the text, whatever the
 * number of locks held.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"

/* The text as snprintf() writes it: what fits in len, and the length the
 * whole needs (pos). */
struct out {
    char *buf;
    size_t len, pos;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    if (o->pos < o->len)
        n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
    else
        n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->pos += (size_t)n;
}

/* A family's # HELP and # TYPE lines. */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP leasewheel_%s %s\n# TYPE leasewheel_%s %s\n", name, help, name, type);
}

/* A family of one sample, without labels. */
static void one(struct out *o, const char *name, const char *type, const char *help,
                uint64_t v)
{
    family(o, name, type, help);
    put(o, "leasewheel_%s %" PRIu64 "\n", name, v);
}

/* A gauge of nanoseconds, in seconds (exactly: nine decimals). */
static void seconds(struct out *o, const char *name, const char *help, uint64_t ns)
{
    family(o, name, "gauge", help);
    put(o, "leasewheel_%s %" PRIu64 ".%09" PRIu64 "\n", name, ns / 1000000000u,
        ns % 1000000000u);
}

/* The histograms' le bounds: 1-2-5 from 100 us to 10000 s (2.8 h). */
static const uint64_t le_us[] = {
    100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
    1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000, 200000000,
    500000000, 1000000000, 2000000000, 5000000000, 10000000000};
#define NLE (sizeof le_us / sizeof le_us[0])

/* Microseconds as seconds, without trailing zeros: "0.0001", "10". */
static void us_text(char *buf, size_t len, uint64_t us)
{
    int n = snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);

    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = 0;
    if (n > 0 && buf[n - 1] == '.')
        buf[--n] = 0;
}

/* Bucket i's upper edge in ns; the last bucket has none (it takes all
 * above). */
static uint64_t bucket_top_ns(unsigned i)
{
    return i + 1 < LW_LAG_BUCKETS ? lw_lag_bucket_floor_ns(i + 1) : UINT64_MAX;
}

/*
 * A histogram of the library's log-linear buckets b (lw_lag_bucket_floor_ns())
 * at the bounds le_us: each le counts the buckets that end at or below it,
 * so an observation within a bucket's width (12.5%) above a bound is
 * counted at the next.  _count is the buckets' total, as +Inf is.
 */
static void histogram(struct out *o, const char *name, const char *help, const uint64_t *b,
                      double sum_s)
{
    uint64_t cum = 0;
    unsigned i = 0;
    char le[32];

    family(o, name, "histogram", help);
    for (size_t k = 0; k < NLE; k++) {
        while (i < LW_LAG_BUCKETS && bucket_top_ns(i) <= le_us[k] * 1000u)
            cum += b[i++];
        us_text(le, sizeof le, le_us[k]);
        put(o, "leasewheel_%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, le, cum);
    }
    while (i < LW_LAG_BUCKETS)
        cum += b[i++];
    put(o, "leasewheel_%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
    put(o, "leasewheel_%s_sum %.6f\n", name, sum_s);
    put(o, "leasewheel_%s_count %" PRIu64 "\n", name, cum);
}

/* The renewal lag's sum, which nothing counts: each bucket's midpoint
 * (the last one's: halfway to 2^35 us). */
static double midpoint_sum_s(const uint64_t *b)
{
    double sum = 0;

    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++) {
        uint64_t lo = lw_lag_bucket_floor_ns(i);
        uint64_t hi = i + 1 < LW_LAG_BUCKETS ? lw_lag_bucket_floor_ns(i + 1)
                                             : (1ull << 35) * 1000u;

        if (b[i])
            sum += (double)b[i] * ((double)lo + (double)(hi - lo) / 2);
    }
    return sum / 1e9;
}

/* --- a cluster's masters -------------------------------------------------- */

struct node_figures {
    char addr[264]; /* "host:port" (or a unix socket's path) */
    struct engine_stats st;
    uint64_t renew_calls; /* the watchdog's, to this node */
};

struct nodes {
    const struct lw_client *c;
    struct engine *engine;
    struct node_figures *v; /* the nodes with a link that has sent */
    unsigned n;
    unsigned masters;
};

/* Engine thread: every node that has sent something, with its address. */
static void read_nodes(struct nodes *ns)
{
    unsigned count = engine_node_count(ns->engine);

    ns->masters = engine_master_count(ns->engine);
    if (!count || !(ns->v = calloc(count, sizeof *ns->v)))
        return;
    for (unsigned i = 0; i < count; i++) {
        struct node_figures *f = &ns->v[ns->n];
        const char *host;
        int port;

        if (engine_node_stats(ns->engine, i, &f->st) || f->st.sent == 0 ||
            engine_node_addr(ns->engine, i, &host, &port))
            continue;
        f->renew_calls = i < ns->c->wd.nodes_cap ? ns->c->wd.nodes[i].renew_calls : 0;
        if (port)
            snprintf(f->addr, sizeof f->addr, "%s:%d", host, port);
        else
            snprintf(f->addr, sizeof f->addr, "%s", host);
        ns->n++;
    }
}

static void read_nodes_task(struct request *req, const redisReply *reply, int err,
                            void *arg)
{
    (void)req;
    (void)reply;
    if (!err)
        read_nodes(arg);
}

/* The nodes' figures, read on the engine thread: here when on it, else by
 * a task, waited for (LW_ESHUTDOWN: none). */
static void get_nodes(const struct lw_client *c, struct nodes *ns)
{
    struct request task;

    ns->c = c;
    ns->engine = c->engine;
    if (engine_on_thread(c->engine)) {
        read_nodes(ns);
        return;
    }
    request_init(&task);
    request_task(&task);
    (void)engine_call(c->engine, &task, read_nodes_task, ns);
}

/* A label value, escaped as the format asks. */
static void put_label(struct out *o, const char *s)
{
    for (; *s; s++)
        if (*s == '\\' || *s == '"')
            put(o, "\\%c", *s);
        else if (*s == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *s);
}

/* One per-node family: field's value (an offset in struct node_figures)
 * for every node. */
static void per_node(struct out *o, const struct nodes *ns, const char *name,
                     const char *type, const char *help, size_t field)
{
    family(o, name, type, help);
    for (unsigned i = 0; i < ns->n; i++) {
        put(o, "leasewheel_%s{node=\"", name);
        put_label(o, ns->v[i].addr);
        put(o, "\"} %" PRIu64 "\n", *(const uint64_t *)((const char *)&ns->v[i] + field));
    }
}

static void cluster_metrics(struct out *o, const struct nodes *ns)
{
    one(o, "cluster_masters", "gauge", "Masters serving slots by the current slot map.",
        ns->masters);
#define NODE(name, type, help, field) \
    per_node(o, ns, name, type, help, offsetof(struct node_figures, field))
    NODE("node_commands_sent_total", "counter",
         "Commands written to the node, set-up commands included.", st.sent);
    NODE("node_replies_total", "counter", "Replies read from the node.", st.replies);
    NODE("node_error_replies_total", "counter", "Redis error replies from the node.",
         st.error_replies);
    NODE("node_redirects_total", "counter", "MOVED and ASK replies from the node, followed.",
         st.redirects);
    NODE("node_reconnects_total", "counter",
         "Connections to the node made again after one was set up.", st.reconnects);
    NODE("node_commands_inflight", "gauge", "Commands on the wire to the node now.",
         st.inflight);
    NODE("node_requests_waiting", "gauge", "Requests waiting to be written to the node now.",
         st.waiting);
    NODE("node_renew_calls_total", "counter",
         "Renewal calls (batches of renewals) sent to the node.", renew_calls);
#undef NODE
}

/* --- the client's and the engine's ------------------------------------------ */

static void lock_metrics(struct out *o, const struct lw_client_stats *s)
{
    one(o, "locks_held", "gauge", "Watchdog locks held now.", s->locks_held);
    one(o, "locks_at_risk", "gauge",
        "Watchdog locks at risk now: less than half their lease proven.", s->at_risk);
    one(o, "locks_went_at_risk_total", "counter", "Times a lock became at risk.",
        s->went_at_risk);
    one(o, "locks_recovered_total", "counter",
        "Times an at-risk lock was safe again (a renewal confirmed).", s->recovered);
    family(o, "locks_lost_total", "counter", "Watchdog locks lost, by reason.");
    put(o, "leasewheel_locks_lost_total{reason=\"not_owner\"} %" PRIu64 "\n"
           "leasewheel_locks_lost_total{reason=\"errors\"} %" PRIu64 "\n"
           "leasewheel_locks_lost_total{reason=\"expired\"} %" PRIu64 "\n"
           "leasewheel_locks_lost_total{reason=\"failover\"} %" PRIu64 "\n"
           "leasewheel_locks_lost_total{reason=\"held_too_long\"} %" PRIu64 "\n",
        s->lost_not_owner, s->lost_errors, s->lost_expired, s->lost_failover,
        s->lost_held_too_long);
    one(o, "locks_lost_late_total", "counter",
        "Losses reported after the lock's proven lease ended (the engine thread was held up).",
        s->lost_late);
    seconds(o, "worst_lost_late_seconds", "The latest a loss was reported, past its proven lease.",
            s->worst_lost_late_ns);
    family(o, "renewals_total", "counter",
           "Lock renewals: sent in renewal calls, confirmed, failed (their call failed).");
    put(o, "leasewheel_renewals_total{result=\"sent\"} %" PRIu64 "\n"
           "leasewheel_renewals_total{result=\"confirmed\"} %" PRIu64 "\n"
           "leasewheel_renewals_total{result=\"failed\"} %" PRIu64 "\n",
        s->renewals_sent, s->renewals_confirmed, s->renewals_failed);
    one(o, "renew_calls_total", "counter", "Renewal calls (batches of renewals) sent.",
        s->renew_batches);
    seconds(o, "worst_renewal_lag_seconds",
            "The worst delay of a renewal's sending after it fell due.",
            s->worst_renewal_lag_ns);
    seconds(o, "worst_tick_late_seconds",
            "The latest the wheel's tick ran: how long the engine thread was held up at worst.",
            s->worst_tick_late_ns);
    one(o, "waiters", "gauge", "Acquires waiting now (locks and semaphores).", s->waiters);
    one(o, "subscriptions", "gauge", "Channels with waiters now (locks and semaphores).", s->subscriptions);
    family(o, "acquires_given_back_total", "counter",
           "Acquires that took the lock but gave it back: the reply came with less than a "
           "tick of lease left (too_late), or too few replicas acknowledged it.");
    put(o, "leasewheel_acquires_given_back_total{reason=\"too_late\"} %" PRIu64 "\n"
           "leasewheel_acquires_given_back_total{reason=\"replicas\"} %" PRIu64 "\n",
        s->acquired_too_late, s->replicas_refused);
    one(o, "overloaded", "gauge",
        "1 while first acquires are held back: the renewals are behind (admission).",
        s->overloaded);
    one(o, "overloads_total", "counter", "Times first acquires began to be held back.",
        s->overloads);
    one(o, "acquires_refused_overload_total", "counter",
        "First acquires that failed with LW_EOVERLOAD: held back their whole wait.",
        s->overload_refused);
    seconds(o, "renewal_backlog_seconds",
            "How long the oldest due renewal not yet sent had waited, at the last look.",
            s->renewal_backlog_ns);
}

/* --- by kind of lease --------------------------------------------------- */

/* The reasons' label values, by LW_LOST_*. */
static const char *const reason_label[STATS_REASONS] = {
    [LW_LOST_NOT_OWNER] = "not_owner",
    [LW_LOST_ERRORS] = "errors",
    [LW_LOST_EXPIRED] = "expired",
    [LW_LOST_FAILOVER] = "failover",
    [LW_LOST_HELD_TOO_LONG] = "held_too_long",
};

/* One family with a kind label: field (an offset in struct
 * kind_counters) for every kind. */
static void per_kind(struct out *o, const struct client_counters *k, const char *name,
                     const char *type, const char *help, size_t field)
{
    family(o, name, type, help);
    for (unsigned i = 0; i < STATS_KINDS; i++)
        put(o, "leasewheel_%s{kind=\"%s\"} %" PRIu64 "\n", name, lw_kinds[i]->label,
            count_get((const _Atomic uint64_t *)((const char *)&k->kind[i] + field)));
}

/*
 * The watchdog's figures split by kind of lease (kind="lock", "read",
 * "write", "permit"), in families of their own: the lock families above
 * stay as they were, the totals over every kind, so that no dashboard
 * built on them changes.  Each kind is read a moment apart from the
 * totals: under traffic their sum may differ from them by what happened
 * in between.
 */
static void kind_metrics(struct out *o, const struct client_counters *k)
{
#define KIND(name, type, help, field) \
    per_kind(o, k, name, type, help, offsetof(struct kind_counters, field))
    KIND("leases_held", "gauge",
         "Watchdog leases held now, by kind (locks_held sums all but the fair locks' waiters' places).", held);
    KIND("leases_at_risk", "gauge",
         "Watchdog leases at risk now, by kind: less than half their lease proven.", at_risk);
    KIND("leases_went_at_risk_total", "counter", "Times a lease became at risk, by kind.",
         went_at_risk);
    KIND("leases_recovered_total", "counter",
         "Times an at-risk lease was safe again, by kind.", recovered);
#undef KIND
    family(o, "leases_lost_total", "counter",
           "Watchdog leases lost, by kind and reason (locks_lost_total sums all but places).");
    for (unsigned i = 0; i < STATS_KINDS; i++)
        for (int r = LW_LOST_NOT_OWNER; r < STATS_REASONS; r++)
            put(o, "leasewheel_leases_lost_total{kind=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
                lw_kinds[i]->label, reason_label[r], count_get(&k->kind[i].lost[r]));
    family(o, "lease_renewals_total", "counter",
           "Renewals by kind of lease: sent in renewal calls, confirmed, failed "
           "(renewals_total is their sum).");
    for (unsigned i = 0; i < STATS_KINDS; i++) {
        const struct kind_counters *kc = &k->kind[i];
        const char *label = lw_kinds[i]->label;

        put(o,
            "leasewheel_lease_renewals_total{kind=\"%s\",result=\"sent\"} %" PRIu64 "\n"
            "leasewheel_lease_renewals_total{kind=\"%s\",result=\"confirmed\"} %" PRIu64 "\n"
            "leasewheel_lease_renewals_total{kind=\"%s\",result=\"failed\"} %" PRIu64 "\n",
            label, count_get(&kc->renewals_sent), label, count_get(&kc->renewals_confirmed),
            label, count_get(&kc->renewals_failed));
    }
}

static void engine_metrics(struct out *o, const struct lw_client_stats *s,
                           const struct engine_stats *e)
{
    one(o, "commands_sent_total", "counter", "Commands written, set-up commands included.",
        e->sent);
    one(o, "replies_total", "counter", "Replies read.", e->replies);
    one(o, "error_replies_total", "counter", "Redis error replies read.", e->error_replies);
    one(o, "requests_failed_total", "counter",
        "Requests that ended in an error of the library's (timeout, connection lost, ...).",
        e->failed);
    one(o, "timeouts_total", "counter", "Requests failed with a timeout.", e->timeouts);
    one(o, "reconnects_total", "counter",
        "Command connections made again after one was set up.", s->reconnects);
    one(o, "script_reloads_total", "counter", "NOSCRIPT replies that loaded a script again.",
        e->script_reloads);
    one(o, "commands_inflight", "gauge", "Commands on the wire now.", e->inflight);
    one(o, "commands_inflight_max", "gauge", "The most commands ever on the wire at once.",
        e->inflight_max);
    one(o, "requests_waiting", "gauge", "Requests held by the client, not yet written.",
        e->waiting);
    one(o, "requests_taken_late_total", "counter",
        "Calls found queued a tick late, their wake-up missed.", s->requests_taken_late);
    one(o, "tls_handshakes_total", "counter", "TLS handshakes of command connections.",
        s->tls_handshakes);
    one(o, "tls_resumed_total", "counter", "TLS handshakes that resumed a session.",
        s->tls_resumed);
    one(o, "topology_refreshes_total", "counter", "Cluster slot maps read.",
        s->topology_refreshes);
    one(o, "redirects_total", "counter", "Cluster MOVED and ASK replies followed.",
        s->redirects);
    one(o, "unsettled_total", "counter",
        "Replies that said the cluster was moving (TRYAGAIN, CLUSTERDOWN, ...), retried.",
        s->unsettled);
    one(o, "failovers_total", "counter",
        "Master changes seen (cluster: per shard; Sentinel: switches of master).",
        s->failovers);
    one(o, "master_switches_total", "counter", "Sentinel: switches to another master seen.",
        e->switches);
    one(o, "redis_clock_jumps_total", "counter",
        "Times a Redis's clock stepped ahead of this client's: its leases put at risk.",
        s->redis_clock_jumps);
    one(o, "host_sleeps_total", "counter",
        "Times the host was found to have slept: leases that ended meanwhile lost on waking.",
        s->host_sleeps);
    one(o, "election_terms_total", "counter", "Terms this client's candidates were elected for.",
        s->election_terms);
    one(o, "election_vacancies_total", "counter",
        "Vacancies this client's observers were told: nobody led after a leader.",
        s->election_vacancies);
    one(o, "election_observers", "gauge", "Observers of elections watching now.",
        s->election_observers);
}

static void histograms(struct out *o, const struct lw_client *c, const struct lw_client_stats *s)
{
    histogram(o, "renewal_lag_seconds",
              "Renewals by their delay after they fell due (0: on time). "
              "The sum is an estimate: each bucket's midpoint.",
              s->renewal_lag, midpoint_sum_s(s->renewal_lag));
    histogram(o, "acquire_wait_seconds",
              "Acquires that succeeded (re-entries too), by how long the call took.",
              s->acquire_wait, (double)count_get(&c->count.acquire_wait_us) / 1e6);
    histogram(o, "hold_time_seconds",
              "Watchdog locks unlocked or lost, by how long they were held.", s->hold_time,
              (double)count_get(&c->count.hold_time_us) / 1e6);
}

int lw_client_format_metrics(const struct lw_client *c, char *buf, size_t len)
{
    struct out o = {.buf = buf, .len = len};
    struct lw_client_stats s;
    struct engine_stats e;
    struct nodes ns = {0};

    if (!c || (!buf && len))
        return LW_EINVAL;
    if (len)
        buf[0] = 0;
    /* The nodes first: the totals, read after, are never below their sum. */
    if (c->engine && c->cluster)
        get_nodes(c, &ns);
    lw_client_get_stats(c, &s);
    memset(&e, 0, sizeof e);
    if (c->engine)
        engine_get_stats(c->engine, &e);
    lock_metrics(&o, &s);
    kind_metrics(&o, &c->count);
    histograms(&o, c, &s);
    engine_metrics(&o, &s, &e);
    if (c->cluster && c->engine)
        cluster_metrics(&o, &ns);
    free(ns.v);
    return o.pos > INT_MAX ? INT_MAX : (int)o.pos;
}
