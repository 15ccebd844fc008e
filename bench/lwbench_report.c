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

/* The capacity the largest run's ceiling implies, and the share of it to
 * plan for; or why there is none. */
static void print_capacity(const struct opts *o, const struct run_result *big)
{
    double at_ceiling;

    if (!big) {
        printf("ceiling: not measured (%s): no ratio, no capacity estimate\n",
               o->no_ceiling ? "--no-ceiling" : "interrupted");
        return;
    }
    at_ceiling = big->ceiling.batched * o->lease_ms / 3000.0;
    printf("capacity estimate at this lease: %.0f locks at the ceiling (ceiling x lease/3,"
           " %u-lock run);\nplan for at most %.0f (%.0f%% of it, docs/tuning.md)\n",
           at_ceiling, big->locks, at_ceiling * LWB_PLANNING_SHARE, LWB_PLANNING_SHARE * 100);
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
           "closed %llu times; %u more not asked for), %llu lost\n"
           "  measured capacity at this lease: %u locks held; ceiling x lease/3 estimate %.0f "
           "(held/estimate %.2f)\n",
           r->locks, r->acquired, r->refused, (unsigned long long)r->overloads, r->skipped,
           (unsigned long long)r->lost, r->acquired, estimate(o, r),
           ratio(r->acquired, estimate(o, r)));
}

/* The run with the most locks whose ceiling was measured: its ceiling is
 * the one nearest capacity.  NULL when none was. */
static const struct run_result *largest_run(const struct run_result *runs, unsigned n)
{
    const struct run_result *best = NULL;

    for (unsigned i = 0; i < n; i++)
        if (runs[i].ceiling_measured && (!best || runs[i].locks > best->locks))
            best = &runs[i];
    return best;
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
    const struct run_result *big = largest_run(runs, nruns), *mem = &runs[0];

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
    print_capacity(o, big);
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
    fprintf(f, "  \"largest_held\": %u,\n", largest_held);
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

static int by_locks(const void *a, const void *b)
{
    const struct run_result *x = a, *y = b;

    return (x->locks > y->locks) - (x->locks < y->locks);
}

/* Lag (left axis, ms, log) and renewals/s (right axis) against the lock
 * count, with each run's ceiling. */
int report_plot(const char *path, const struct opts *o, const struct run_result *runs,
                unsigned nruns)
{
    struct run_result *sorted = malloc(nruns * sizeof *sorted);
    FILE *g = sorted ? popen("gnuplot", "w") : NULL;

    if (!g) {
        free(sorted);
        return -1;
    }
    memcpy(sorted, runs, nruns * sizeof *sorted);
    qsort(sorted, nruns, sizeof *sorted, by_locks);
    fprintf(g, "$runs << EOD\n");
    for (unsigned i = 0; i < nruns; i++)
        fprintf(g, "%u %.3f %.3f %.3f %.1f %.1f %.1f\n", sorted[i].locks,
                ms(sorted[i].lag_p50_ns) + 0.001, ms(sorted[i].lag_p99_ns) + 0.001,
                ms(sorted[i].lag_max_ns) + 0.001, sorted[i].needed, sorted[i].achieved,
                sorted[i].ceiling.batched);
    fprintf(g, "EOD\n");
    fprintf(g, "set terminal pngcairo size 1000,600 noenhanced\n"
               "set output '%s'\n"
               "set title 'lwbench: lease %u ms, tick %u ms, batch %u, %u in flight'\n"
               "set xlabel 'locks'\nset logscale x\nset logscale y\n"
               "set ylabel 'renewal lag (ms)'\nset y2label 'renewals/s'\n"
               "set y2tics\nset ytics nomirror\nset key left top\nset grid\n"
               "plot $runs using 1:2 with linespoints title 'lag p50',"
               " $runs using 1:3 with linespoints title 'lag p99',"
               " $runs using 1:4 with linespoints title 'lag max',"
               " %u * 1.0 with lines dashtype 2 title 'tick',"
               " $runs using 1:5 axes x1y2 with lines title 'renewals/s needed',"
               " $runs using 1:6 axes x1y2 with linespoints title 'renewals/s achieved',"
               " $runs using 1:7 axes x1y2 with linespoints dashtype 3 title 'ceiling'\n",
            path, o->lease_ms, o->tick_ms, o->batch, o->inflight, o->tick_ms);
    free(sorted);
    return pclose(g) == 0 ? 0 : -1;
}
