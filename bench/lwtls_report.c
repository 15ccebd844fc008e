/*
 * bench/lwtls_report.c - lwtls's figures as they are reported: the spreads
 * of times, the two tables (stdout) and the JSON (--json), the checks'
 * line (see lwtls.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"
#include "scripts.h" /* SCRIPT_COUNT: the set-up's SCRIPT LOADs */
#include "lwtls.h"
#include "tool_util.h"

/* Sort v[n] and take its spread. */
struct spread spread_of(uint64_t *v, unsigned n)
{
    struct spread s = {n, 0, 0, 0};

    qsort(v, n, sizeof *v, cli_cmp_u64);
    s.p50 = cli_quantile(v, n, 0.50);
    s.p99 = cli_quantile(v, n, 0.99);
    s.max = n ? v[n - 1] : 0;
    return s;
}

static const char *fmt_cpu(char *buf, size_t n, double s)
{
    if (s < 0)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%.0f ms", s * 1e3);
    return buf;
}

/* One of a spread's quantiles, "—" when it is empty. */
static const char *fmt_q(char *buf, size_t n, const struct spread *sp, uint64_t ns)
{
    if (!sp->n) {
        snprintf(buf, n, "—");
        return buf;
    }
    return cli_fmt_ms(buf, n, ns);
}

/* A spread's "all" column: its max when every client got there. */
static const char *fmt_all(char *buf, size_t n, const struct spread *sp, unsigned of)
{
    if (sp->n == of)
        return cli_fmt_ms(buf, n, sp->max);
    snprintf(buf, n, "%u of %u", sp->n, of);
    return buf;
}

static const char *fmt_checks(char *buf, size_t n, const struct storm_result *r,
                              int interrupted_run)
{
    struct tool_checks c;

    tool_checks_init(&c, buf, n);
    if (r->lost)
        tool_checks_add(&c, "%" PRIu64 " locks lost", r->lost);
    if (r->gone > 0)
        tool_checks_add(&c, "%lld gone from Redis", r->gone);
    if (r->gone < 0)
        tool_checks_add(&c, "Redis not asked");
    if (r->acquire_failed)
        tool_checks_add(&c, "%" PRIu64 " acquires failed", r->acquire_failed);
    if (r->up.n < r->clients || r->renew.n < r->clients)
        tool_checks_add(&c, "not every client back");
    if (r->held_end != (uint64_t)r->clients * r->locks)
        tool_checks_add(&c, "%" PRIu64 " of %" PRIu64 " locks held at the end", r->held_end,
                        (uint64_t)r->clients * r->locks);
    if (interrupted_run)
        tool_checks_add(&c, "interrupted");
    return tool_checks_end(&c);
}

static const char *setup_label(enum run_kind k, int again)
{
    if (k == RUN_TCP)
        return again ? "again" : "new";
    return again ? "again (a reconnect)" : "new (full handshake)";
}

void print_setup(const struct opts *o, const struct run *runs, unsigned n)
{
    printf("Connection set-up: from the connect to the set-up's PING answered (TCP, TLS, "
           "%u SCRIPT LOADs, PING), %u samples each\n\n",
           (unsigned)SCRIPT_COUNT, o->samples);
    printf("| run | connection | samples | p50 | p99 | max | resumed | refused |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];

        if (!r->done_setup)
            continue;
        for (int again = 0; again < 2; again++) {
            const struct spread *s = again ? &r->again : &r->fresh;
            char a[32], b[32], c[32], res[32], ref[32];

            if (r->kind == RUN_TCP || !again) {
                snprintf(res, sizeof res, "—");
                snprintf(ref, sizeof ref, "—");
            } else {
                snprintf(res, sizeof res, "%u of %u", r->resumed, s->n);
                snprintf(ref, sizeof ref, "%u", r->refused);
            }
            printf("| %s | %s | %u | %s | %s | %s | %s | %s |\n", run_names[r->kind],
                   setup_label(r->kind, again), s->n, cli_fmt_ms(a, sizeof a, s->p50),
                   cli_fmt_ms(b, sizeof b, s->p99), cli_fmt_ms(c, sizeof c, s->max), res, ref);
        }
    }
    printf("\n");
}

void print_storm(const struct opts *o, const struct run *runs, unsigned n)
{
    printf("Reconnect storm: %u clients (2 connections each), %u watchdog locks each, lease "
           "%u ms; every connection killed at once; times from the kill, per client\n\n",
           o->clients, o->locks, o->lease_ms);
    printf("| run | cold start | killed | connected again p50 | p99 | all | renewing again p50 "
           "| p99 | all | reconnect handshakes: resumed / full | failed attempts | at risk | "
           "longest iteration | CPU: lwtls | Redis | checks |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        const struct storm_result *s = &r->storm;
        char cold[32], a[32], b[32], c[32], d[32], e[32], f[32], hs[64], it[32], cs[32],
            cr[32], chk[256];

        if (!r->done_storm)
            continue;
        if (r->kind == RUN_TCP)
            snprintf(hs, sizeof hs, "—");
        else
            snprintf(hs, sizeof hs, "%" PRIu64 " / %" PRIu64, s->resumed,
                     s->handshakes - s->resumed);
        printf("| %s | %s | %lld + %lld | %s | %s | %s | %s | %s | %s | %s | %" PRIu64
               " | %" PRIu64 " | %s | %s | %s | %s |\n",
               run_names[r->kind], cli_fmt_ms(cold, sizeof cold, s->cold_ns), s->killed_normal,
               s->killed_pubsub, fmt_q(a, sizeof a, &s->up, s->up.p50),
               fmt_q(b, sizeof b, &s->up, s->up.p99), fmt_all(c, sizeof c, &s->up, s->clients),
               fmt_q(d, sizeof d, &s->renew, s->renew.p50), fmt_q(e, sizeof e, &s->renew, s->renew.p99),
               fmt_all(f, sizeof f, &s->renew, s->clients),
               hs, s->failed_attempts, s->went_at_risk,
               cli_fmt_ms(it, sizeof it, s->longest_iteration_ns), fmt_cpu(cs, sizeof cs, s->self_cpu_s),
               fmt_cpu(cr, sizeof cr, s->redis_cpu_s), fmt_checks(chk, sizeof chk, s, r->interrupted));
    }
}

static void json_spread(FILE *f, const char *name, const struct spread *s)
{
    fprintf(f, "\"%s\": {\"n\": %u, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}", name,
            s->n, (double)s->p50 / 1e6, (double)s->p99 / 1e6, (double)s->max / 1e6);
}

/* A run's set-up figures, as the JSON's "setup". */
static void json_setup(FILE *f, const struct run *r)
{
    fprintf(f, ", \"setup\": {");
    json_spread(f, "new", &r->fresh);
    fprintf(f, ", ");
    json_spread(f, "again", &r->again);
    fprintf(f, ", \"again_resumed\": %u, \"again_refused\": %u}", r->resumed, r->refused);
}

/* A run's storm, as the JSON's "storm". */
static void json_storm(FILE *f, const struct run *r)
{
    const struct storm_result *s = &r->storm;
    char chk[256];

    fprintf(f,
            ", \"storm\": {\"clients\": %u, \"locks_each\": %u, \"cold_start_ms\": %.3f, "
            "\"killed_normal\": %lld, \"killed_pubsub\": %lld, ",
            s->clients, s->locks, (double)s->cold_ns / 1e6, s->killed_normal, s->killed_pubsub);
    json_spread(f, "connected_again", &s->up);
    fprintf(f, ", ");
    json_spread(f, "renewing_again", &s->renew);
    fprintf(f,
            ", \"all_renewing_ms\": %.3f, \"reconnects\": %" PRIu64
            ", \"tls_handshakes\": %" PRIu64 ", \"tls_resumed\": %" PRIu64
            ", \"failed_attempts\": %" PRIu64 ", \"went_at_risk\": %" PRIu64
            ", \"lost\": %" PRIu64 ", \"gone_from_redis\": %lld"
            ", \"acquire_failed\": %" PRIu64 ", \"held_end\": %" PRIu64
            ", \"longest_iteration_ms\": %.3f, \"self_cpu_s\": %.3f, \"redis_cpu_s\": %.3f, "
            "\"ok\": %s, \"checks\": \"%s\"}",
            (double)s->all_renewing_ns / 1e6, s->reconnects, s->handshakes, s->resumed,
            s->failed_attempts, s->went_at_risk, s->lost, s->gone, s->acquire_failed, s->held_end,
            (double)s->longest_iteration_ns / 1e6, s->self_cpu_s, s->redis_cpu_s,
            s->ok ? "true" : "false", fmt_checks(chk, sizeof chk, s, r->interrupted));
}

int write_json(const struct opts *o, const struct run *runs, unsigned n)
{
    FILE *f = tool_json_open("lwtls", o->json);

    if (!f)
        return -1;
    fprintf(f,
            "{\n  \"tool\": \"lwtls\",\n  \"tls\": \"%s\",\n  \"samples\": %u,\n"
            "  \"clients\": %u,\n  \"locks\": %u,\n  \"lease_ms\": %u,\n"
            "  \"reconnect_min_ms\": %u,\n  \"runs\": [\n",
            o->server_auth ? "server-auth" : "mutual", o->samples, o->clients, o->locks,
            o->lease_ms, o->reconnect_min_ms);
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];

        fprintf(f, "    {\"run\": \"%s\"", run_names[r->kind]);
        if (r->done_setup)
            json_setup(f, r);
        if (r->done_storm)
            json_storm(f, r);
        fprintf(f, ", \"interrupted\": %s}%s\n", r->interrupted ? "true" : "false",
                i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return tool_json_close("lwtls", o->json, f);
}
