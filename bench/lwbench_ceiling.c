/*
 * bench/lwbench_ceiling.c - how fast this Redis and this process can renew
 * these locks at all: the ceiling a watchdog run is held against.
 *
 * Measured right after the run's hold, on the run's own lock hashes, with
 * the client's own owner field, so that the key count, the names and the
 * fields Redis works on are those of the run.  (On a few thousand short
 * keys that stay in cache the flood is much faster than on a million.)
 * The client is gone by then: nothing else renews.  The flood uses the
 * watchdog's renew script of the run's kind (--kind: locks and write
 * holds SCRIPT_RENEW_OWNERS, read holds SCRIPT_RENEW_READ with each
 * hold's timeout key), formatted as the watchdog formats it:
 *
 *   batched  opts.batch keys per EVALSHA, opts.inflight calls unanswered
 *            (the watchdog's shape and cap), over every lock of the run;
 *   single   one key per EVALSHA, SINGLE_WINDOW calls unanswered (what a
 *            watchdog without batching could do at best), over the first
 *            SINGLE_KEYS_MAX locks;
 *
 * both in a scattered order of the locks (flood_order(), lwbench_order.c),
 * as the watchdog's renewals come due.  A flood is measured in its steady
 * state, after a warm-up, for FLOOD_SECONDS.  Its requests are formatted once and re-sent, so it
 * bounds from above a watchdog that formats each batch as it goes.  Locks
 * the run lost are made again first, or the flood would renew fewer keys
 * than the run held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/lock.h>

#include "scripts.h"
#include "lwbench.h"
#include "pipeline.h"

#define FLOOD_SECONDS 2.0
#define WARMUP_SECONDS 0.5
#define LEASE "30000" /* long enough that no key expires meanwhile */

/* The owner the flood renews, after the client id: the run's owner 1,
 * and a write hold's field suffix (kind_write.c). */
static const char *flood_owner(const struct flood_keys *k)
{
    return k->kind == LWB_KIND_WRITE ? "1:write" : "1";
}

/* Lock i's name, and with a read hold its one timeout key: Redisson's
 * "{name}:<field>:rwlock_timeout:1" ("name:..." when the name has a '{'),
 * as kind_read.c names it. */
static void lock_keys(const struct flood_keys *k, uint32_t i, char *name, size_t nlen,
                      char *timeout, size_t tlen)
{
    key_name(name, nlen, k->prefix, i);
    if (k->kind == LWB_KIND_READ)
        snprintf(timeout, tlen, strchr(name, '{') ? "%s:%s:1:rwlock_timeout:1" : "{%s}:%s:1:rwlock_timeout:1",
                 name, k->id);
}

/* The commands that write lock i again as the run held it (the lease is
 * set by the flood's first renewal): into reqs, 1 or 2 of them; how many,
 * or -1. */
static int remake_lock(const struct flood_keys *k, uint32_t i, struct request *reqs)
{
    char name[LWB_NAME_MAX], timeout[512], field[LW_CLIENT_ID_MAX + 16];

    lock_keys(k, i, name, sizeof name, timeout, sizeof timeout);
    snprintf(field, sizeof field, "%s:%s", k->id, flood_owner(k));
    if (k->kind == LWB_KIND_LOCK || k->kind == LWB_KIND_FAIR ||
        k->kind == LWB_KIND_MULTI) /* the same hash and field */
        return request_command(&reqs[0], 4, (const char *[]){"HSET", name, field, "1"},
                               NULL)
                   ? -1
                   : 1;
    if (request_command(&reqs[0], 6,
                        (const char *[]){"HSET", name, "mode",
                                         k->kind == LWB_KIND_READ ? "read" : "write", field,
                                         "1"},
                        NULL))
        return -1;
    if (k->kind == LWB_KIND_WRITE)
        return 1;
    /* SETRANGE, not SET: the pipeline takes integer replies (the value
     * is "1" either way, as Redisson's). */
    return request_command(&reqs[1], 4, (const char *[]){"SETRANGE", timeout, "0", "1"},
                           NULL)
               ? -1
               : 2;
}

/* Write every lock again as the run held it: some were lost, or other
 * clients' holds are there. */
static int remake_locks(struct engine *e, const struct flood_keys *k)
{
    uint32_t max = 2 * k->count, n = 0;
    struct request *reqs = calloc(max, sizeof *reqs);
    struct pipeline p = {.e = e, .reqs = reqs, .window = SINGLE_WINDOW};
    int rc = reqs ? 0 : -1, made;

    for (uint32_t i = 0; rc == 0 && i < k->count; i++) {
        if ((made = remake_lock(k, i, reqs + n)) < 0)
            rc = -1;
        else
            n += (uint32_t)made;
    }
    p.n = n;
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, max);
    return rc;
}

/* Scratch for formatting one call of batch locks. */
struct call_args {
    const char **argv;
    char (*names)[LWB_NAME_MAX];
    char (*timeouts)[512];
};

/* One renew call of the kind's script, as the watchdog formats it
 * (kind_lock.c, kind_write.c: SCRIPT_RENEW_OWNERS, KEYS the names, ARGV
 * the lease, the client id, an owner per name; kind_read.c:
 * SCRIPT_RENEW_READ, KEYS each name and its timeout key, ARGV the lease,
 * the client id, per name the owner and the hold count 1) over the locks
 * first.. (mod keys). */
static int format_call(const struct flood_keys *k, uint32_t keys, uint64_t first,
                       uint32_t batch, struct call_args *c, struct request *req)
{
    int read = k->kind == LWB_KIND_READ;
    uint32_t nkeys = read ? 2 * batch : batch, per = read ? 2 : 1;
    const char **argv = c->argv;

    for (uint32_t i = 0; i < batch; i++) {
        lock_keys(k, flood_order(first + i, keys), c->names[i], sizeof c->names[i],
                  c->timeouts[i], sizeof c->timeouts[i]);
        argv[per * i] = c->names[i];
        if (read)
            argv[per * i + 1] = c->timeouts[i];
        argv[nkeys + 2 + per * i] = flood_owner(k);
        if (read)
            argv[nkeys + 3 + per * i] = "1";
    }
    argv[nkeys] = LEASE;
    argv[nkeys + 1] = k->id;
    return request_evalsha(req, read ? SCRIPT_RENEW_READ : SCRIPT_RENEW_OWNERS, (int)nkeys,
                           (int)(2 * nkeys + 2), argv, NULL);
}

/* ncalls renew calls of batch locks each, over `keys` locks in turn. */
static struct request *format_renewals(const struct flood_keys *k, uint32_t keys,
                                       uint32_t batch, uint32_t ncalls)
{
    struct request *reqs = calloc(ncalls, sizeof *reqs);
    struct call_args c = {calloc(4u * batch + 2u, sizeof *c.argv), calloc(batch, sizeof *c.names),
                          calloc(batch, sizeof *c.timeouts)};
    int rc = reqs && c.argv && c.names && c.timeouts ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < ncalls; i++)
        rc = format_call(k, keys, (uint64_t)i * batch, batch, &c, &reqs[i]);
    free(c.names);
    free(c.timeouts);
    free(c.argv);
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
static double flood(struct engine *e, struct target *t, const struct flood_keys *k,
                    uint32_t keys, uint32_t batch, uint32_t window, double *redis_cpu,
                    char *why, size_t n)
{
    uint32_t ncalls = (keys + batch - 1) / batch;
    struct pipeline p = {.e = e, .window = window, .ones = batch, .zeros_ok = 1, .stamped = 1};
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
    if (stop_signal()) { /* SIGINT, SIGTERM: stopped, not measured */
        pipe_stop(&p);
        pipe_free_reqs(p.reqs, p.n);
        return FLOOD_STOPPED;
    }
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
    struct engine *e = NULL;
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
    if (out->batched < 0) {
        rc = out->batched == FLOOD_STOPPED ? 0 : -1;
        goto out;
    }
    progress("ceiling: single-key flood, %u calls in flight", SINGLE_WINDOW);
    if ((out->single = flood(e, t, k, single_keys, 1, SINGLE_WINDOW, &single_cpu, why, n)) < 0) {
        rc = out->single == FLOOD_STOPPED ? 0 : -1;
        goto out;
    }
    rc = 0;
out:
    engine_free(e);
    return rc;
}
