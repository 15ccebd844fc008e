/*
 * bench/lwbench_ceiling.c - how fast this Redis and this process can renew
 * locks at all: the ceiling a watchdog run is held against.
 *
 * Lock hashes are made under the run's prefix, then flooded with the
 * watchdog's own renew script, formatted as the watchdog formats it:
 *
 *   batched  opts.batch keys per EVALSHA, opts.inflight calls unanswered
 *            (the watchdog's shape and cap);
 *   single   one key per EVALSHA, SINGLE_WINDOW calls unanswered (what a
 *            watchdog without batching could do at best).
 *
 * A flood is measured in its steady state, after a warm-up, for
 * FLOOD_SECONDS; the requests are formatted once and re-sent, so this is
 * an upper bound for a watchdog that formats each batch as it goes.
 */
#include <stdio.h>
#include <stdlib.h>

#include <leasewheel/lock.h>

#include "client_private.h"
#include "lwbench.h"
#include "pipeline.h"

#define FLOOD_SECONDS 2.0
#define WARMUP_SECONDS 0.5
#define FIELD "lwbench-ceiling:1"
#define LEASE "30000"

/* Enough keys that the flood re-sends no key while it is still in flight,
 * in both shapes. */
static uint32_t ceiling_keys(const struct opts *o)
{
    uint64_t batched = 2ull * o->batch * (o->inflight + 1u);
    uint64_t keys = batched > 4u * SINGLE_WINDOW ? batched : 4u * SINGLE_WINDOW;

    return (uint32_t)(keys > 2000000u ? 2000000u : keys);
}

static int new_engine(const struct target *t, uint32_t max_inflight, struct lw_engine **e)
{
    struct lw_engine_config cfg;

    lw_engine_config_init(&cfg);
    cfg.host = t->host;
    cfg.port = t->port;
    cfg.scripts = lw_lock_scripts;
    cfg.nscripts = SCRIPT_COUNT;
    cfg.max_inflight = max_inflight;
    cfg.command_timeout_ms = 60000; /* a busy shared machine is not a failure */
    return lw_engine_new(&cfg, e);
}

/* HSET each key FIELD 1: a lock held by FIELD, with no expiry yet. */
static int make_locks(struct lw_engine *e, const struct target *t, uint32_t keys)
{
    struct lw_request *reqs = calloc(keys, sizeof *reqs);
    struct pipeline p = {.e = e, .reqs = reqs, .n = keys, .window = SINGLE_WINDOW};
    char name[128];
    int rc = reqs ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < keys; i++) {
        key_name(name, sizeof name, t->prefix, i);
        rc = lw_request_command(&reqs[i], 4, (const char *[]){"HSET", name, FIELD, "1"}, NULL);
    }
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, keys);
    return rc;
}

/* keys / batch renew calls: keys, then the lease, then the fields. */
static struct lw_request *format_renewals(const struct target *t, uint32_t keys, uint32_t batch,
                                          uint32_t *ncalls)
{
    uint32_t n = keys / batch;
    struct lw_request *reqs = calloc(n, sizeof *reqs);
    const char **argv = calloc(2u * batch + 1u, sizeof *argv);
    char (*names)[128] = calloc(batch, sizeof *names);
    int rc = reqs && argv && names ? 0 : -1;

    for (uint32_t c = 0; rc == 0 && c < n; c++) {
        for (uint32_t i = 0; i < batch; i++) {
            key_name(names[i], sizeof names[i], t->prefix, c * batch + i);
            argv[i] = names[i];
            argv[batch + 1 + i] = FIELD;
        }
        argv[batch] = LEASE;
        rc = lw_request_evalsha(&reqs[c], SCRIPT_RENEW, (int)batch, (int)(2 * batch + 1), argv,
                                NULL);
    }
    free(names);
    free(argv);
    if (rc) {
        pipe_free_reqs(reqs, n);
        return NULL;
    }
    *ncalls = n;
    return reqs;
}

/* Keys renewed per second by a flood of batch-key calls, window out;
 * *redis_cpu gets Redis's CPU % meanwhile.  -1 when the flood failed. */
static double flood(struct lw_engine *e, struct target *t, uint32_t keys, uint32_t batch,
                    uint32_t window, double *redis_cpu, char *why, size_t n)
{
    struct pipeline p = {.e = e, .window = window, .ones = batch};
    uint64_t d0, d1, t0, t1;
    double cpu0, cpu1;

    if (!(p.reqs = format_renewals(t, keys, batch, &p.n))) {
        snprintf(why, n, "out of memory formatting the flood");
        return -1;
    }
    if (p.window >= p.n)
        p.window = p.n - 1; /* see ceiling_keys(): only past its cap */
    pipe_start(&p);
    nap(t, WARMUP_SECONDS);
    cpu0 = target_cpu_s(t);
    d0 = atomic_load(&p.done), t0 = lw_clock_now();
    nap(t, FLOOD_SECONDS);
    d1 = atomic_load(&p.done), t1 = lw_clock_now();
    cpu1 = target_cpu_s(t);
    if (pipe_stop(&p) || atomic_load(&p.failed)) {
        pipe_why(&p, why, n);
        pipe_free_reqs(p.reqs, p.n);
        return -1;
    }
    pipe_free_reqs(p.reqs, p.n);
    *redis_cpu = cpu0 >= 0 && cpu1 >= 0 ? 100.0 * (cpu1 - cpu0) / ((double)(t1 - t0) / 1e9) : -1;
    return (double)(d1 - d0) * batch / ((double)(t1 - t0) / 1e9);
}

int measure_ceiling(const struct opts *o, struct target *t, struct ceiling *out, char *why,
                    size_t n)
{
    uint32_t keys = ceiling_keys(o);
    struct lw_engine *e = NULL;
    double single_cpu;
    int rc = -1;

    progress("ceiling: making %u lock hashes", keys);
    if (new_engine(t, SINGLE_WINDOW, &e) || make_locks(e, t, keys)) {
        snprintf(why, n, "could not make the ceiling's lock hashes on %s:%d", t->host, t->port);
        goto out;
    }
    progress("ceiling: batched flood (%u keys per call, %u calls in flight)", o->batch,
             o->inflight);
    if ((out->batched = flood(e, t, keys, o->batch, o->inflight, &out->redis_cpu_pct, why,
                              n)) < 0)
        goto out;
    progress("ceiling: single-key flood (%u calls in flight)", SINGLE_WINDOW);
    if ((out->single = flood(e, t, keys, 1, SINGLE_WINDOW, &single_cpu, why, n)) < 0)
        goto out;
    rc = 0;
out:
    lw_engine_free(e);
    if (target_delete(t, t->prefix, keys) && rc == 0) {
        snprintf(why, n, "could not delete the ceiling's keys");
        rc = -1;
    }
    return rc;
}
