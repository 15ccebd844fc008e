/*
 * bench/lwbench_report.c - lwbench's results: a table on stdout, JSON and a
 * gnuplot plot in files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwbench.h"
#include "tool_util.h"

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

/* --kind permit: what the table's "locks" are. */
static void print_kind(const struct opts *o)
{
    if (o->kind == LWB_KIND_PERMIT)
        printf("kind permit: the \"locks\" are permits, %u to a semaphore; the ceiling floods "
               "the permit renewal script\n",
               o->per_semaphore);
    if (o->kind == LWB_KIND_MULTI)
        printf("kind multi: the \"locks\" are names, %u to a multi-lock taken at once; the "
               "ceiling floods the lock renewal script\n",
               o->names_per_lock);
}

/* What the run holds, for the table's first line. */
static const char *what_held(const struct opts *o)
{
    static const char *const held[] = {"locks",
                                       "read holds of read-write locks",
                                       "write holds of read-write locks",
                                       "permits",
                                       "fair locks",
                                       "locks of multi-locks"};

    return held[o->kind];
}

static void print_config(const struct opts *o, const struct target *t)
{
    if (t->cluster) {
        printf("lwbench: %s, lease %u ms (renewed every %.0f ms), tick %u ms, %u slots, "
               "batch %u, %u calls in flight; Redis Cluster of %u masters%s%s\n",
               what_held(o), o->lease_ms, o->lease_ms / 3.0, o->tick_ms, o->slots, o->batch, o->inflight,
               t->nmasters, t->private_server ? " (private, 1 replica each)" : "",
               o->tls.enable ? " over TLS" : "");
        if (o->clients > 1)
            printf("%u clients split the locks; engine: their threads' CPU summed\n",
                   o->clients);
        return;
    }
    printf("lwbench: %s, lease %u ms (renewed every %.0f ms), tick %u ms, %u slots, "
           "batch %u, %u calls in flight; Redis %s:%d%s%s\n",
           what_held(o), o->lease_ms, o->lease_ms / 3.0, o->tick_ms, o->slots, o->batch, o->inflight,
           t->host, t->port, t->private_server ? " (private)" : "",
           o->tls.enable ? " over TLS" : "");
    if (o->clients > 1)
        printf("%u clients, each with its own engine thread and connections, split the locks;"
               " engine: their threads' CPU summed\n",
               o->clients);
    print_kind(o);
}

static void print_row(const struct run_result *r)
{
    const struct ceiling *c = &r->ceiling;

    /* held: "int" when SIGINT or SIGTERM cut the run short (a note says
     * what it measured); the CPUs "-" where INFO or /proc did not answer. */
    printf("%9u %4s %6llu %10.0f %10.0f %6.1f %6.1f %6.1f", r->locks,
           r->interrupted ? "int"
           : r->held      ? "yes"
                          : "NO",
           (unsigned long long)r->lost, r->needed, r->achieved, ms(r->lag_p50_ns),
           ms(r->lag_p99_ns), ms(r->lag_max_ns));
    if (r->engine_cpu_pct >= 0)
        printf(" %6.0f", r->engine_cpu_pct);
    else
        printf(" %6s", "-");
    if (r->redis_cpu_pct >= 0)
        printf(" %4.1f", r->redis_cpu_pct / 100);
    else
        printf(" %4s", "-");
    if (!r->ceiling_measured) /* not measured: no figure, no ratio */
        printf(" %9s %9s %6s %6s\n", "-", "-", "-", "-");
    else
        printf(" %9.0f %9.0f %6.3f %6.2f\n", c->batched, c->single,
               ratio(r->achieved, c->batched), ratio(r->achieved, c->single));
}

/* The run whose ceiling estimates the capacity: of those whose ceiling
 * was measured, the one that held the most locks (its key count is the
 * nearest the capacity that held; a run that did not hold had its lost
 * locks made again, and a run far past capacity leaves Redis busy), else
 * the one that asked for the most.  NULL when no ceiling was measured. */
static const struct run_result *largest_run(const struct run_result *runs, unsigned n)
{
    const struct run_result *best = NULL;

    for (unsigned i = 0; i < n; i++) {
        const struct run_result *r = &runs[i];

        if (!r->ceiling_measured)
            continue;
        if (!best || (r->held && !best->held) ||
            (r->held == best->held &&
             (r->held ? r->acquired > best->acquired : r->locks > best->locks)))
            best = r;
    }
    return best;
}

/*
 * What the runs say of this lease's capacity, and the figure to plan for.
 * The plan never exceeds what held: 70% of the measured capacity when a
 * limit was found (a count that did not hold, or admission's refusals),
 * else what held (a count below the limit proves no more); and never 70%
 * of the ceiling's estimate either, which the client does not reach at
 * short leases (1.5 s: 104,085 held against an estimate of 195,973).
 */
struct capacity {
    const struct run_result *big; /* the ceiling's run, or NULL */
    double estimate;              /* ceiling x lease/3 (big's) */
    uint32_t held;                /* the most locks a run held, 0: none */
    uint32_t not_held;            /* the fewest a run did not hold, 0: none */
    int refused;                  /* admission refused some in a run that held: a limit */
    double plan;                  /* locks, or -1: no figure */
    enum { PLAN_NONE,
           PLAN_MEASURED,
           PLAN_HELD,
           PLAN_ESTIMATE } basis;
};

static void capacity_of(const struct opts *o, const struct run_result *runs, unsigned n,
                        struct capacity *c)
{
    double share;

    *c = (struct capacity){.big = largest_run(runs, n), .plan = -1, .basis = PLAN_NONE};
    if (c->big)
        c->estimate = c->big->ceiling.batched * o->lease_ms / 3000.0;
    for (unsigned i = 0; i < n; i++) {
        const struct run_result *r = &runs[i];

        if (r->interrupted)
            continue;
        if (r->held) { /* the most held, and whether admission drew a line */
            c->held = r->acquired > c->held ? r->acquired : c->held;
            c->refused |= r->refused != 0;
        } else if (!c->not_held || r->locks < c->not_held) {
            c->not_held = r->locks;
        }
    }
    if (!c->held)
        return;
    if (c->refused || c->not_held) {
        c->plan = LWB_PLANNING_SHARE * c->held;
        c->basis = PLAN_MEASURED;
    } else if (c->big) {
        c->plan = c->held;
        c->basis = PLAN_HELD;
    } else {
        return; /* no limit and no ceiling: nothing says how much room */
    }
    share = LWB_PLANNING_SHARE * c->estimate;
    if (c->big && share < c->plan) {
        c->plan = share;
        c->basis = PLAN_ESTIMATE;
    }
}

/* The capacity lines under the table: the ceiling's estimate, what held
 * (a limit, or not), and the plan; or why there is none. */
static void print_capacity(const struct opts *o, const struct capacity *c)
{
    double pct = LWB_PLANNING_SHARE * 100;

    if (c->big)
        printf("capacity estimate at this lease: %.0f locks at the ceiling (ceiling x lease/3,"
               " %u-lock run)\n",
               c->estimate, c->big->locks);
    else
        printf("ceiling: not measured (%s): no ratio, no capacity estimate\n",
               o->no_ceiling_given ? "a Redis lwbench did not start: --ceiling floods it"
               : o->no_ceiling     ? "--no-ceiling"
                                   : "interrupted");
    if (c->held && c->refused)
        printf("measured capacity at this lease: %u locks held (admission refused more)\n",
               c->held);
    else if (c->held && c->not_held)
        printf("measured capacity at this lease: %u locks held (%u did not hold)\n", c->held,
               c->not_held);
    else if (c->held)
        printf("held %u locks at this lease: no limit reached (--sweep finds it)\n", c->held);
    else if (c->not_held)
        printf("did not hold %u locks at this lease (--sweep finds how many hold)\n",
               c->not_held);
    switch (c->basis) {
    case PLAN_MEASURED:
        printf("plan for at most %.0f (%.0f%% of the measured capacity, docs/tuning.md)\n",
               c->plan, pct);
        break;
    case PLAN_HELD:
        printf("plan for at most %.0f (what held; the limit was not reached: %.0f%% of the "
               "estimate is %.0f)\n",
               c->plan, pct, LWB_PLANNING_SHARE * c->estimate);
        break;
    case PLAN_ESTIMATE:
        printf("plan for at most %.0f (%.0f%% of the estimate, under what held, "
               "docs/tuning.md)\n",
               c->plan, pct);
        break;
    default:
        if (c->held)
            printf("no plan figure: no limit reached and no ceiling measured\n");
    }
}

/* The renewals sent per second over the hold: mean and max. */
static void series_stats(const struct run_result *r, double *mean, double *max)
{
    double sum = 0;

    *mean = *max = 0;
    for (unsigned i = 0; i < r->nper_s; i++) {
        sum += r->per_s[i];
        if (r->per_s[i] > *max)
            *max = r->per_s[i];
    }
    if (r->nper_s)
        *mean = sum / r->nper_s;
}

/* The capacity estimate at this lease: the ceiling x lease/3. */
static double estimate(const struct opts *o, const struct run_result *r)
{
    return r->ceiling.batched * o->lease_ms / 3000.0;
}

/* A run SIGINT or SIGTERM cut short: what its row holds. */
static void print_interrupted(const struct run_result *r)
{
    if (r->window_s > 0)
        printf("%u locks: interrupted %.1f s into a hold of %.1f s: renewed/s, lag, lost and CPU "
               "are over that part; held \"int\": not judged; no ceiling\n",
               r->locks, r->window_s, r->window_planned_s);
    else
        printf("%u locks: interrupted while acquiring, %u acquired in %.1f s, %llu lost: no hold "
               "measured, held \"int\": not judged; no ceiling\n",
               r->locks, r->acquired, r->acquire_s, (unsigned long long)r->lost);
}

/* A run's refusals, its measured capacity, and how evenly it renewed. */
static void print_run_notes(const struct opts *o, const struct run_result *r)
{
    double mean, max;

    if (r->interrupted)
        print_interrupted(r);
    series_stats(r, &mean, &max);
    if (r->nper_s)
        printf("%u locks: renewals sent per second over the hold: mean %.0f, max %.0f "
               "(max/mean %.2f, %u one-second windows)\n",
               r->locks, mean, max, ratio(max, mean), r->nper_s);
    if (r->lag_worst_ns > r->lag_max_ns)
        printf("%u locks: lagmax is the measured hold's; the worst since the start, acquiring "
               "included, was %.1f ms (the progress lines' figure)\n",
               r->locks, ms(r->lag_worst_ns));
    if (!r->refused)
        return;
    printf("%u locks asked for: %u held, %u refused (LW_EOVERLOAD: renewals behind, admission "
           "closed %llu times; %u more not asked for), %llu lost\n",
           r->locks, r->acquired, r->refused, (unsigned long long)r->overloads, r->skipped,
           (unsigned long long)r->lost);
    if (r->ceiling_measured)
        printf("  measured capacity at this lease: %u locks held; ceiling x lease/3 estimate "
               "%.0f (held/estimate %.2f)\n",
               r->acquired, estimate(o, r), ratio(r->acquired, estimate(o, r)));
    else
        printf("  measured capacity at this lease: %u locks held\n", r->acquired);
}

/* Cluster: each master's share of run r, and the keys per call. */
static void print_masters(const struct run_result *r, const struct target *t)
{
    printf("\n%u locks on %u masters: %.1f keys per renewal call (renewals sent / calls)\n",
           r->locks, r->nmasters, r->keys_per_call);
    printf("%-24s %9s %10s %9s %9s %10s %9s %5s\n", "master", "locks", "renewed/s", "calls/s",
           "keys/call", "ceiling/s", "1-key/s", "redis");
    for (unsigned i = 0; i < r->nmasters; i++) {
        const struct master_result *m = &r->masters[i];
        char addr[300];

        snprintf(addr, sizeof addr, "%s:%d", t->masters[i].host, t->masters[i].port);
        printf("%-24s %9u %10.0f %9.0f %9.1f %10.0f %9.0f %5.2f\n", addr, m->locks,
               m->renewals_per_s, m->calls_per_s, ratio(m->renewals_per_s, m->calls_per_s),
               m->ceiling, m->single, m->redis_cpu_pct / 100);
    }
    printf("%-24s %9u %10.0f %9s %9.1f %10.0f %9.0f %5.2f\n", "cluster", r->locks, r->achieved,
           "", r->keys_per_call, r->ceiling.batched, r->ceiling.single, r->redis_cpu_pct / 100);
}

void report_table(const struct opts *o, const struct target *t, const struct run_result *runs,
                  unsigned nruns, uint32_t largest_held)
{
    const struct run_result *mem = &runs[0], *big;
    struct capacity cap;

    capacity_of(o, runs, nruns, &cap);
    big = cap.big;
    for (unsigned i = 1; i < nruns; i++) /* memory: the most locks' figure */
        if (runs[i].acquired > mem->acquired)
            mem = &runs[i];
    print_config(o, t);
    printf("\n%9s %4s %6s %10s %10s %6s %6s %6s %6s %4s %9s %9s %6s %6s\n", "locks", "held",
           "lost", "needed/s", "renewed/s", "lag50", "lag99", "lagmax", "engine", "redis",
           "ceiling/s", "1-key/s", "/ceil", "/1-key");
    printf("%9s %4s %6s %10s %10s %6s %6s %6s %6s %4s %9s %9s %6s %6s\n", "", "", "", "", "",
           "ms", "ms", "ms", "%core", "core", "", "", "", "");
    for (unsigned i = 0; i < nruns; i++)
        print_row(&runs[i]);
    printf("\n");
    for (unsigned i = 0; i < nruns; i++)
        print_run_notes(o, &runs[i]);
    for (unsigned i = 0; t->cluster && i < nruns; i++)
        print_masters(&runs[i], t);
    if (!big)
        printf("\nengine: the engine thread; memory: %.0f bytes of client RSS per lock.\n",
               mem->bytes_per_lock);
    else if (t->cluster)
        printf("\nceiling: the renew script flooded on the run's own locks on every master at"
               " once, %u keys per\ncall, %u calls in flight per master, the masters' rates"
               " summed; 1-key: one key per call,\n%u in flight per master.  renewed/s and"
               " calls/s per master: its PEXPIREs and EVALSHAs\n(INFO commandstats); redis: the"
               " masters' CPU, in cores.  engine: the engine thread;\nmemory: %.0f bytes of"
               " client RSS per lock.\n",
               o->batch, o->inflight, SINGLE_WINDOW,
               mem->bytes_per_lock);
    else
        printf("\nceiling: the renew script flooded on the run's own locks, %u keys per call,"
               " %u calls in flight;\n1-key: one key per EVALSHA, %u in flight.  engine:"
               " the engine thread; memory: %.0f bytes of client RSS per lock.\n",
               o->batch, o->inflight, SINGLE_WINDOW, mem->bytes_per_lock);
    if (o->sweep)
        printf("largest lock count held: %u (none lost, lag p99 under lease/6)\n",
               largest_held);
    print_capacity(o, &cap);
}

/* ", \"name\": " and the value in fmt, or null where there is none
 * (not measured): never a 0 that reads as a measurement. */
static void json_field(FILE *f, const char *name, const char *fmt, int have, double value)
{
    fprintf(f, ", \"%s\": ", name);
    if (have)
        fprintf(f, fmt, value);
    else
        fputs("null", f);
}

/* Cluster: "cluster": {...} inside a run's object. */
static void json_masters(FILE *f, const struct run_result *r, const struct target *t)
{
    fprintf(f, ",\n     \"cluster\": {\"keys_per_renewal_call\": %.2f", r->keys_per_call);
    json_field(f, "ceiling_keys_per_s", "%.1f", r->ceiling_measured, r->ceiling.batched);
    fputs(", \"masters\": [\n", f);
    for (unsigned i = 0; i < r->nmasters; i++) {
        const struct master_result *m = &r->masters[i];

        fprintf(f, "       {\"addr\": \"%s:%d\", \"locks\": %u, \"renewals_per_s\": %.1f, "
                   "\"calls_per_s\": %.1f, \"keys_per_call\": %.2f, \"redis_cpu_pct\": %.2f",
                t->masters[i].host, t->masters[i].port, m->locks, m->renewals_per_s,
                m->calls_per_s, ratio(m->renewals_per_s, m->calls_per_s), m->redis_cpu_pct);
        json_field(f, "ceiling_keys_per_s", "%.1f", r->ceiling_measured, m->ceiling);
        json_field(f, "single_key_keys_per_s", "%.1f", r->ceiling_measured, m->single);
        fprintf(f, "}%s\n", i + 1 == r->nmasters ? "" : ",");
    }
    fprintf(f, "     ]}");
}

/* ,"refused": ..., the measured capacity and the renewals per second. */
static void json_refusals(FILE *f, const struct opts *o, const struct run_result *r)
{
    double mean, max;

    series_stats(r, &mean, &max);
    fprintf(f,
            ",\n     \"refused\": %u, \"skipped\": %u, \"overloads\": %llu, \"held_locks\": %u",
            r->refused, r->skipped, (unsigned long long)r->overloads, r->acquired);
    /* Measured only when admission refused some; estimated from a ceiling. */
    json_field(f, "measured_capacity_locks", "%.0f", r->refused != 0, r->acquired);
    json_field(f, "capacity_estimate_locks", "%.0f", r->ceiling_measured, estimate(o, r));
    json_field(f, "renewals_per_s_max_over_mean", "%.3f", r->nper_s != 0, ratio(max, mean));
    fputs(", \"renewals_per_s\": [", f);
    for (unsigned i = 0; i < r->nper_s; i++)
        fprintf(f, "%s%.0f", i ? ", " : "", r->per_s[i]);
    fprintf(f, "]");
}

static void json_run(FILE *f, const struct opts *o, const struct run_result *r,
                     const struct target *t, int last)
{
    const struct ceiling *c = &r->ceiling;

    fprintf(f,
            "    {\"locks\": %u, \"acquired\": %u, \"held\": %s, \"interrupted\": %s, "
            "\"lost\": %llu,\n"
            "     \"acquire_s\": %.3f, \"window_s\": %.3f,\n"
            "     \"renewals_needed_per_s\": %.1f, \"renewals_achieved_per_s\": %.1f,\n"
            "     \"lag_p50_ms\": %.3f, \"lag_p99_ms\": %.3f, \"lag_max_ms\": %.3f, "
            "\"lag_worst_since_start_ms\": %.3f,\n"
            "     \"engine_cpu_pct\": %.2f, \"redis_cpu_pct\": %.2f, "
            "\"client_bytes_per_lock\": %.1f, \"keys_per_call\": %.2f",
            r->locks, r->acquired, r->held ? "true" : "false",
            r->interrupted ? "true" : "false", (unsigned long long)r->lost, r->acquire_s,
            r->window_s, r->needed, r->achieved, ms(r->lag_p50_ns), ms(r->lag_p99_ns),
            ms(r->lag_max_ns), ms(r->lag_worst_ns), r->engine_cpu_pct, r->redis_cpu_pct,
            r->bytes_per_lock, r->keys_per_call);
    /* --no-ceiling: no ceiling, and no ratio to one. */
    json_field(f, "ceiling_keys_per_s", "%.1f", r->ceiling_measured, c->batched);
    json_field(f, "single_key_keys_per_s", "%.1f", r->ceiling_measured, c->single);
    json_field(f, "ceiling_redis_cpu_pct", "%.2f", r->ceiling_measured, c->redis_cpu_pct);
    json_field(f, "achieved_over_ceiling", "%.4f", r->ceiling_measured, ratio(r->achieved, c->batched));
    json_field(f, "achieved_over_single_key", "%.4f", r->ceiling_measured,
               ratio(r->achieved, c->single));
    json_refusals(f, o, r);
    if (t->cluster)
        json_masters(f, r, t);
    fprintf(f, "}%s\n", last ? "" : ",");
}

int report_json(FILE *f, const char *path, const struct opts *o, const struct target *t,
                const struct run_result *runs, unsigned nruns, uint32_t largest_held)
{
    static const char *const plan_basis[] = {"null", "\"measured\"", "\"held\"",
                                             "\"estimate\""};
    struct capacity cap;

    fprintf(f, "{\n  \"version\": \"%s\",\n", lw_version());
    fprintf(f,
            "  \"config\": {\"lease_ms\": %u, \"tick_ms\": %u, \"slots\": %u, \"batch\": %u, "
            "\"inflight\": %u, \"duration_s\": %.1f, \"redis\": \"%s:%d\", "
            "\"private_server\": %s, \"sweep\": %s, \"single_key_inflight\": %u%s%s%s},\n",
            o->lease_ms, o->tick_ms, o->slots, o->batch, o->inflight, o->duration_s, t->host,
            t->port, t->private_server ? "true" : "false", o->sweep ? "true" : "false",
            SINGLE_WINDOW, t->cluster ? ", \"cluster\": true" : "",
            o->tls.enable ? ", \"tls\": true" : "",
            o->no_ceiling ? ", \"ceiling_measured\": false" : "");
    fprintf(f, "  \"clients\": %u,\n  \"kind\": \"%s\",\n", o->clients, lwb_kind_name(o->kind));
    if (o->kind == LWB_KIND_PERMIT)
        fprintf(f, "  \"per_semaphore\": %u,\n", o->per_semaphore);
    if (o->kind == LWB_KIND_MULTI)
        fprintf(f, "  \"names_per_lock\": %u,\n", o->names_per_lock);
    capacity_of(o, runs, nruns, &cap);
    fprintf(f, "  \"largest_held\": %u,\n", largest_held);
    /* What the table's capacity lines say: null where there is nothing. */
    fprintf(f, "  \"capacity\": {\"held_locks\": %u", cap.held);
    json_field(f, "measured_capacity_locks", "%.0f", cap.refused || cap.not_held, cap.held);
    json_field(f, "smallest_not_held", "%.0f", cap.not_held != 0, cap.not_held);
    json_field(f, "estimate_locks", "%.0f", cap.big != NULL, cap.estimate);
    json_field(f, "plan_locks", "%.0f", cap.basis != PLAN_NONE, cap.plan);
    fprintf(f, ", \"plan_basis\": %s},\n", plan_basis[cap.basis]);
    /* SIGINT or SIGTERM stopped lwbench: the runs are those measured. */
    if (stop_signal())
        fprintf(f, "  \"interrupted\": \"%s\",\n", sig_name(stop_signal()));
    else
        fprintf(f, "  \"interrupted\": null,\n");
    fprintf(f, "  \"runs\": [\n");
    for (unsigned i = 0; i < nruns; i++)
        json_run(f, o, &runs[i], t, i + 1 == nruns);
    fprintf(f, "  ]\n}\n");
    return tool_json_close("lwbench", path, f);
}

static int by_held(const void *a, const void *b)
{
    const struct run_result *x = a, *y = b;

    return (x->acquired > y->acquired) - (x->acquired < y->acquired);
}

/* "%.1f" of v, or gnuplot's NaN (a point not drawn) where v is none. */
static const char *or_nan(char *buf, size_t n, int have, double v)
{
    if (!have)
        return "NaN";
    snprintf(buf, n, "%.1f", v);
    return buf;
}

/*
 * Lag (left axis, ms, log) and renewals/s (right axis) against the locks
 * held, with each run's ceiling: the runs that held, each at the count it
 * held (a run at capacity at what admission let in, not what it asked
 * for), so that the last point is the last that held; the measured
 * capacity and the plan marked as vertical lines.  The runs that did not
 * hold (or were interrupted) are not drawn: the title counts them.
 */
int report_plot(const char *path, const struct opts *o, const struct run_result *runs,
                unsigned nruns)
{
    struct run_result *held = malloc(nruns * sizeof *held);
    struct capacity cap;
    unsigned n = 0;
    char ceil[32];
    FILE *g;

    for (unsigned i = 0; held && i < nruns; i++)
        if (runs[i].held && !runs[i].interrupted)
            held[n++] = runs[i];
    if (held && n == 0) {
        fprintf(stderr, "lwbench: --plot %s: no run held, nothing drawn\n", path);
        free(held);
        return 0;
    }
    if (!held || !(g = popen("gnuplot", "w"))) {
        free(held);
        return -1;
    }
    capacity_of(o, runs, nruns, &cap);
    qsort(held, n, sizeof *held, by_held);
    fprintf(g, "$runs << EOD\n");
    for (unsigned i = 0; i < n; i++)
        fprintf(g, "%u %.3f %.3f %.3f %.1f %.1f %s\n", held[i].acquired,
                ms(held[i].lag_p50_ns) + 0.001, ms(held[i].lag_p99_ns) + 0.001,
                ms(held[i].lag_max_ns) + 0.001, held[i].acquired / (o->lease_ms / 3000.0),
                held[i].achieved,
                or_nan(ceil, sizeof ceil, held[i].ceiling_measured, held[i].ceiling.batched));
    fprintf(g, "EOD\n");
    fprintf(g, "set terminal pngcairo size 1000,600 noenhanced\n"
               "set output '%s'\n"
               "set title \"lwbench: lease %u ms, tick %u ms, batch %u, %u in flight\\nruns that "
               "held: %u (not drawn: %u that did not hold or were interrupted)\"\n"
               "set xlabel 'locks held'\nset logscale x\nset logscale y\n"
               "set ylabel 'renewal lag (ms)'\nset y2label 'renewals/s'\n"
               "set y2tics\nset ytics nomirror\nset key left top\nset grid\n",
            path, o->lease_ms, o->tick_ms, o->batch, o->inflight, n, nruns - n);
    if (cap.refused || cap.not_held)
        fprintf(g,
                "set arrow from %u, graph 0 to %u, graph 1 nohead dashtype 2 lc rgb 'red'\n"
                "set label 'measured capacity %u' at %u, graph 0.97 right offset -0.5,0 "
                "tc rgb 'red'\n",
                cap.held, cap.held, cap.held, cap.held);
    if (cap.basis != PLAN_NONE)
        fprintf(g,
                "set arrow from %.0f, graph 0 to %.0f, graph 1 nohead dashtype 3 "
                "lc rgb 'dark-green'\n"
                "set label 'plan %.0f' at %.0f, graph 0.92 right offset -0.5,0 "
                "tc rgb 'dark-green'\n",
                cap.plan, cap.plan, cap.plan, cap.plan);
    fprintf(g, "plot $runs using 1:2 with linespoints title 'lag p50',"
               " $runs using 1:3 with linespoints title 'lag p99',"
               " $runs using 1:4 with linespoints title 'lag max',"
               " %u * 1.0 with lines dashtype 2 title 'tick',"
               " $runs using 1:5 axes x1y2 with lines title 'renewals/s needed',"
               " $runs using 1:6 axes x1y2 with linespoints title 'renewals/s achieved',"
               " $runs using 1:7 axes x1y2 with linespoints dashtype 3 title 'ceiling'\n",
            o->tick_ms);
    free(held);
    return pclose(g) == 0 ? 0 : -1;
}
