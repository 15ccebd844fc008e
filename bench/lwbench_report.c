/*
 * bench/lwbench_report.c - lwbench's results: a table on stdout, JSON and a
 * gnuplot plot in files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwbench.h"

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static void print_config(const struct opts *o, const struct target *t)
{
    printf("lwbench: lease %u ms (renewed every %.0f ms), tick %u ms, %u slots, "
           "batch %u, %u calls in flight; Redis %s:%d%s\n",
           o->lease_ms, o->lease_ms / 3.0, o->tick_ms, o->slots, o->batch, o->inflight,
           t->host, t->port, t->server.pid ? " (private)" : "");
}

static void print_ceiling(const struct opts *o, const struct ceiling *c)
{
    printf("ceiling, this run: renew script %u keys/call, %u in flight: %.0f keys/s "
           "(Redis CPU %.0f%%);\n"
           "                   1 key/call (single-key EVALSHA), %u in flight: %.0f keys/s; "
           "batched/single %.2f\n",
           o->batch, o->inflight, c->batched, c->redis_cpu_pct, SINGLE_WINDOW, c->single,
           ratio(c->batched, c->single));
}

static void print_row(const struct ceiling *c, const struct run_result *r)
{
    printf("%9u %4s %6llu %10.0f %10.0f %6.3f %6.3f %8.2f %8.2f %8.2f %6.1f %6.1f %6.0f %5.1f\n",
           r->locks, r->held ? "yes" : "NO", (unsigned long long)r->lost, r->needed,
           r->achieved, ratio(r->achieved, c->batched), ratio(r->achieved, c->single),
           ms(r->lag_p50_ns), ms(r->lag_p99_ns), ms(r->lag_max_ns), r->engine_cpu_pct,
           r->redis_cpu_pct, r->bytes_per_lock, r->keys_per_call);
}

void report_table(const struct opts *o, const struct target *t, const struct ceiling *c,
                  const struct run_result *runs, unsigned nruns, uint32_t largest_held)
{
    print_config(o, t);
    print_ceiling(o, c);
    printf("\n%9s %4s %6s %10s %10s %6s %6s %8s %8s %8s %6s %6s %6s %5s\n", "locks", "held",
           "lost", "needed/s", "renewed/s", "/ceil", "/1key", "lag p50", "p99", "max",
           "eng%", "redis%", "B/lock", "keys");
    printf("%9s %4s %6s %10s %10s %6s %6s %8s %8s %8s %6s %6s %6s %5s\n", "", "", "", "", "",
           "", "", "ms", "ms", "ms", "core", "core", "", "/call");
    for (unsigned i = 0; i < nruns; i++)
        print_row(c, &runs[i]);
    if (o->sweep)
        printf("\nlargest lock count held: %u (lag p99 under lease/6, none lost)\n",
               largest_held);
    printf("capacity estimate at this lease: %.0f locks (batched ceiling x lease/3)\n",
           c->batched * o->lease_ms / 3000.0);
}

static void json_run(FILE *f, const struct ceiling *c, const struct run_result *r, int last)
{
    fprintf(f,
            "    {\"locks\": %u, \"acquired\": %u, \"held\": %s, \"interrupted\": %s, "
            "\"lost\": %llu,\n"
            "     \"acquire_s\": %.3f, \"window_s\": %.3f,\n"
            "     \"renewals_needed_per_s\": %.1f, \"renewals_achieved_per_s\": %.1f,\n"
            "     \"achieved_over_ceiling\": %.4f, \"achieved_over_single_key\": %.4f,\n"
            "     \"lag_p50_ms\": %.3f, \"lag_p99_ms\": %.3f, \"lag_max_ms\": %.3f,\n"
            "     \"engine_cpu_pct\": %.2f, \"redis_cpu_pct\": %.2f, "
            "\"client_bytes_per_lock\": %.1f, \"keys_per_call\": %.2f}%s\n",
            r->locks, r->acquired, r->held ? "true" : "false",
            r->interrupted ? "true" : "false", (unsigned long long)r->lost, r->acquire_s,
            r->window_s, r->needed, r->achieved, ratio(r->achieved, c->batched),
            ratio(r->achieved, c->single), ms(r->lag_p50_ns), ms(r->lag_p99_ns),
            ms(r->lag_max_ns), r->engine_cpu_pct, r->redis_cpu_pct, r->bytes_per_lock,
            r->keys_per_call, last ? "" : ",");
}

int report_json(const char *path, const struct opts *o, const struct target *t,
                const struct ceiling *c, const struct run_result *runs, unsigned nruns,
                uint32_t largest_held)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    fprintf(f,
            "{\n  \"config\": {\"lease_ms\": %u, \"tick_ms\": %u, \"slots\": %u, \"batch\": %u, "
            "\"inflight\": %u, \"duration_s\": %.1f, \"redis\": \"%s:%d\", "
            "\"private_server\": %s, \"sweep\": %s},\n",
            o->lease_ms, o->tick_ms, o->slots, o->batch, o->inflight, o->duration_s, t->host,
            t->port, t->server.pid ? "true" : "false", o->sweep ? "true" : "false");
    fprintf(f,
            "  \"ceiling\": {\"batched_keys_per_s\": %.1f, \"single_key_keys_per_s\": %.1f, "
            "\"batched_over_single\": %.4f, \"single_key_inflight\": %u, "
            "\"redis_cpu_pct\": %.2f},\n",
            c->batched, c->single, ratio(c->batched, c->single), SINGLE_WINDOW,
            c->redis_cpu_pct);
    fprintf(f, "  \"largest_held\": %u,\n  \"runs\": [\n", largest_held);
    for (unsigned i = 0; i < nruns; i++)
        json_run(f, c, &runs[i], i + 1 == nruns);
    fprintf(f, "  ]\n}\n");
    return fclose(f) ? -1 : 0;
}

static int by_locks(const void *a, const void *b)
{
    const struct run_result *x = a, *y = b;

    return (x->locks > y->locks) - (x->locks < y->locks);
}

/* Lag (left axis, ms, log) and renewals/s (right axis) against the lock
 * count, the ceiling drawn across. */
int report_plot(const char *path, const struct opts *o, const struct ceiling *c,
                const struct run_result *runs, unsigned nruns)
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
        fprintf(g, "%u %.3f %.3f %.3f %.1f %.1f %d\n", sorted[i].locks,
                ms(sorted[i].lag_p50_ns) + 0.001, ms(sorted[i].lag_p99_ns) + 0.001,
                ms(sorted[i].lag_max_ns) + 0.001, sorted[i].needed, sorted[i].achieved,
                sorted[i].held);
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
               " %.1f axes x1y2 with lines dashtype 3 title 'ceiling'\n",
            path, o->lease_ms, o->tick_ms, o->batch, o->inflight, o->tick_ms, c->batched);
    free(sorted);
    return pclose(g) == 0 ? 0 : -1;
}
