/*
 * bench/lwbench_ceiling.c - how fast this Redis and this process can renew
 * these locks at all: the ceiling a watchdog run is held against.
 *
 * Measured right after the run's hold, on the run's own lock hashes, with
 * the client's own owner field, so that the key count, the names and the
 * fields Redis works on are those of the run.  (On a few thousand short
 * keys that stay in cache the flood is much faster than on a million.)
 * The client is gone by then: nothing else renews.  The flood uses the
 * watchdog's renew script, formatted as the watchdog formats it:
 *
 *   batched  opts.batch keys per EVALSHA, opts.inflight calls unanswered
 *            (the watchdog's shape and cap), over every lock of the run;
 *   single   one key per EVALSHA, SINGLE_WINDOW calls unanswered (what a
 *            watchdog without batching could do at best), over the first
 *            SINGLE_KEYS_MAX locks.
 *
 * A flood is measured in its steady state, after a warm-up, for
 * FLOOD_SECONDS.  Its requests are formatted once and re-sent, so it
 * bounds from above a watchdog that formats each batch as it goes.  Locks
 * the run lost are made again first, or the flood would renew fewer keys
 * than the run held.
 */
#include <stdio.h>
#include <stdlib.h>

#include <leasewheel/lock.h>

#include "client_private.h"
#include "lwbench.h"
#include "pipeline.h"

#define FLOOD_SECONDS 2.0
#define WARMUP_SECONDS 0.5
#define LEASE "30000"            /* long enough that no key expires meanwhile */

/* HSET each key field 1: the locks as the run held them (the lease is set
 * by the flood's first renewal). */
static int remake_locks(struct lw_engine *e, const struct flood_keys *k)
{
    struct lw_request *reqs = calloc(k->count, sizeof *reqs);
    struct pipeline p = {.e = e, .reqs = reqs, .n = k->count, .window = SINGLE_WINDOW};
    char name[128];
    int rc = reqs ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < k->count; i++) {
        key_name(name, sizeof name, k->prefix, i);
        rc = lw_request_command(&reqs[i], 4, (const char *[]){"HSET", name, k->field, "1"},
                                NULL);
    }
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, k->count);
    return rc;
}

/* ncalls renew calls of batch keys each, over `keys` keys in turn: keys,
 * then the lease, then the fields. */
static struct lw_request *format_renewals(const struct flood_keys *k, uint32_t keys,
                                          uint32_t batch, uint32_t ncalls)
{
    struct lw_request *reqs = calloc(ncalls, sizeof *reqs);
    const char **argv = calloc(2u * batch + 1u, sizeof *argv);
    char (*names)[128] = calloc(batch, sizeof *names);
    int rc = reqs && argv && names ? 0 : -1;

    for (uint32_t c = 0; rc == 0 && c < ncalls; c++) {
        for (uint32_t i = 0; i < batch; i++) {
            key_name(names[i], sizeof names[i], k->prefix,
                     (uint32_t)(((uint64_t)c * batch + i) % keys));
            argv[i] = names[i];
            argv[batch + 1 + i] = k->field;
        }
        argv[batch] = LEASE;
        rc = lw_request_evalsha(&reqs[c], SCRIPT_RENEW, (int)batch, (int)(2 * batch + 1), argv,
                                NULL);
    }
    free(names);
    free(argv);
    if (rc) {
        pipe_free_reqs(reqs, ncalls);
        return NULL;
    }
    return reqs;
}

/* Keys renewed per second by a flood of batch-key calls over `keys` keys,
 * window unanswered; *redis_cpu gets Redis's CPU % meanwhile.  -1 when
 * the flood failed.  There are more calls than the window, so that no
 * call is re-sent while it is still on the wire. */
static double flood(struct lw_engine *e, struct target *t, const struct flood_keys *k,
                    uint32_t keys, uint32_t batch, uint32_t window, double *redis_cpu,
                    char *why, size_t n)
{
    uint32_t ncalls = (keys + batch - 1) / batch;
    struct pipeline p = {.e = e, .window = window, .ones = batch, .zeros_ok = 1};
    uint64_t d0, d1, t0, t1;
    double cpu0, cpu1;

    p.n = ncalls > 2 * window + 2 ? ncalls : 2 * window + 2;
    if (!(p.reqs = format_renewals(k, keys, batch, p.n))) {
        snprintf(why, n, "out of memory formatting the flood");
        return -1;
    }
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

int measure_ceiling(const struct opts *o, struct target *t, const struct flood_keys *k,
                    struct ceiling *out, char *why, size_t n)
{
    uint32_t single_keys = k->count < SINGLE_KEYS_MAX ? k->count : SINGLE_KEYS_MAX;
    struct lw_engine *e = NULL;
    double single_cpu;
    int rc = -1;

    if (target_engine(t, t->host, t->port, lw_lock_scripts, SCRIPT_COUNT, SINGLE_WINDOW, &e)) {
        snprintf(why, n, "ceiling: could not start an engine");
        return -1;
    }
    if (k->remake && (progress("ceiling: making the lost locks again"), remake_locks(e, k))) {
        snprintf(why, n, "ceiling: could not make the lost locks again");
        goto out;
    }
    progress("ceiling: renew flood, %u keys per call, %u calls in flight", o->batch,
             o->inflight);
    out->batched = flood(e, t, k, k->count, o->batch, o->inflight, &out->redis_cpu_pct, why, n);
    if (out->batched < 0)
        goto out;
    progress("ceiling: single-key flood, %u calls in flight", SINGLE_WINDOW);
    if ((out->single = flood(e, t, k, single_keys, 1, SINGLE_WINDOW, &single_cpu, why, n)) < 0)
        goto out;
    rc = 0;
out:
    lw_engine_free(e);
    return rc;
}
