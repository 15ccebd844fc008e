/*
 * bench/lwbench_permit.c - --kind permit: the run holds permits of
 * semaphores (Redisson's RPermitExpirableSemaphore, <leasewheel/
 * semaphore.h>) instead of locks, renewed by the same watchdog as a kind
 * of its own.
 *
 * The permits are spread over semaphores of --per-semaphore each
 * ("<prefix>:{<j>}", with the zset "<prefix>:{<j>}:timeout" of their ids),
 * so that a renewal's reclaim (ZRANGEBYSCORE over the semaphore's zset)
 * works on a zset of realistic size, not on one zset of every permit.
 *
 * The ceiling.  As for locks (lwbench_ceiling.c): the watchdog's renewal
 * script flooded on the run's own permits once the client is gone, in the
 * layout the watchdog sends to one Redis (SCRIPT_RENEW_PERMIT_NODE: the
 * names in ARGV, then the lease, the client id and the publish command,
 * and per permit its id), batched and one permit per call.  The permits
 * are scored again first (ZADD), far enough ahead that none expires
 * during the floods: the run's scores ran out with the client.  A request
 * is formatted once and re-sent; the script scores each permit Redis's
 * TIME + the lease, so a re-sent renewal moves its score, as the
 * watchdog's next renewal would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leasewheel/semaphore.h>

#include "scripts.h"
#include "lwbench.h"
#include "pipeline.h"

#define FLOOD_SECONDS 2.0
#define WARMUP_SECONDS 0.5
#define LEASE_MS 30000 /* no permit expires during the floods */
#define SCORE_AHEAD_MS 60000

uint32_t permits_of(const struct permit_handles *ph, uint32_t j)
{
    uint32_t from = j * ph->per;

    return ph->permits - from < ph->per ? ph->permits - from : ph->per;
}

int permit_semaphores(struct permit_handles *ph, struct lw_client *const *clients,
                      unsigned nclients)
{
    char name[LWB_NAME_MAX];
    int rc;

    ph->nsems = (ph->permits + ph->per - 1) / ph->per;
    ph->sems = calloc(ph->nsems, sizeof *ph->sems);
    ph->ids = calloc(ph->permits, sizeof *ph->ids);
    if (!ph->sems || !ph->ids)
        return LW_ENOMEM;
    for (uint32_t j = 0; j < ph->nsems; j++) {
        struct lw_client *c = clients[(uint64_t)j * nclients / ph->nsems];

        key_name(name, sizeof name, ph->prefix, j);
        if ((rc = lw_semaphore_new(c, name, strlen(name), &ph->sems[j])) ||
            (rc = lw_semaphore_try_set(ph->sems[j], permits_of(ph, j))) < 0)
            return rc;
    }
    return 0;
}

void permit_handles_free(struct permit_handles *ph)
{
    for (uint32_t j = 0; ph->sems && j < ph->nsems; j++)
        lw_semaphore_free(ph->sems[j]);
    free(ph->sems);
    free(ph->ids);
    ph->sems = NULL;
    ph->ids = NULL;
}

static int64_t epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The zset of semaphore j's permits into buf: "<name>:timeout", as
 * Redisson names it for a name with a hash tag (lwbench's have one),
 * "{<name>}:timeout" for one without. */
static void timeout_key(const struct permit_handles *ph, uint32_t j, char *buf, size_t n)
{
    char name[LWB_NAME_MAX];

    key_name(name, sizeof name, ph->prefix, j);
    snprintf(buf, n, strchr(name, '{') ? "%s:timeout" : "{%s}:timeout", name);
}

/* Every permit scored SCORE_AHEAD_MS from now: one ZADD per semaphore. */
static int rescore(struct engine *e, const struct permit_handles *ph)
{
    struct request *reqs = calloc(ph->nsems, sizeof *reqs);
    const char **argv = calloc(2u + 2u * ph->per, sizeof *argv);
    size_t *lens = calloc(2u + 2u * ph->per, sizeof *lens);
    struct pipeline p = {.e = e, .reqs = reqs, .n = ph->nsems, .window = SINGLE_WINDOW};
    char key[LWB_NAME_MAX + 16], score[24];
    int rc = reqs && argv && lens ? 0 : -1;

    snprintf(score, sizeof score, "%lld", (long long)(epoch_ms() + SCORE_AHEAD_MS));
    for (uint32_t j = 0; rc == 0 && j < ph->nsems; j++) {
        uint32_t k = permits_of(ph, j);

        timeout_key(ph, j, key, sizeof key);
        argv[0] = "ZADD", lens[0] = 4;
        argv[1] = key, lens[1] = strlen(key);
        for (uint32_t i = 0; i < k; i++) {
            argv[2 + 2 * i] = score, lens[2 + 2 * i] = strlen(score);
            argv[3 + 2 * i] = (const char *)ph->ids[j * ph->per + i].id;
            lens[3 + 2 * i] = LW_PERMIT_ID_LEN;
        }
        rc = request_command(&reqs[j], (int)(2 + 2 * k), argv, lens);
    }
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, ph->nsems);
    free(argv);
    free(lens);
    return rc;
}

/* One call renewing `batch` permits from permit `first` on (in turn over
 * `count`): names, lease, client id, publish, then an id each. */
static int format_call(struct request *req, const struct permit_handles *ph, uint64_t first,
                       uint32_t batch, uint32_t count)
{
    const char **argv = calloc(3u + 2u * batch, sizeof *argv);
    size_t *lens = calloc(3u + 2u * batch, sizeof *lens);
    char(*names)[LWB_NAME_MAX] = calloc(batch, sizeof *names);
    static const char lease[] = "30000";
    int rc = argv && lens && names ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < batch; i++) {
        uint32_t at = (uint32_t)((first + i) % count);

        key_name(names[i], sizeof names[i], ph->prefix, at / ph->per);
        argv[i] = names[i], lens[i] = strlen(names[i]);
        argv[batch + 3 + i] = (const char *)ph->ids[at].id;
        lens[batch + 3 + i] = LW_PERMIT_ID_LEN;
    }
    argv[batch] = lease, lens[batch] = sizeof lease - 1;
    argv[batch + 1] = "lwbench", lens[batch + 1] = 7;
    argv[batch + 2] = "publish", lens[batch + 2] = 7;
    if (rc == 0)
        rc = request_evalsha(req, SCRIPT_RENEW_PERMIT_NODE, 0, (int)(3 + 2 * batch), argv,
                             lens);
    free(argv);
    free(lens);
    free(names);
    return rc;
}

/* ncalls requests over `count` permits in turn, `batch` a call. */
static struct request *format_renewals(const struct permit_handles *ph, uint32_t count,
                                       uint32_t batch, uint32_t ncalls)
{
    struct request *reqs = calloc(ncalls, sizeof *reqs);
    int rc = reqs ? 0 : -1;

    for (uint32_t c = 0; rc == 0 && c < ncalls; c++)
        rc = format_call(&reqs[c], ph, (uint64_t)c * batch, batch, count);
    if (rc) {
        pipe_free_reqs(reqs, ncalls);
        return NULL;
    }
    return reqs;
}

/* Permits renewed per second by a flood of batch-permit calls over the
 * first `count` permits, window unanswered (as lwbench_ceiling.c's). */
static double flood(struct engine *e, struct target *t, const struct permit_handles *ph,
                    uint32_t count, uint32_t batch, uint32_t window, double *redis_cpu,
                    char *why, size_t n)
{
    uint32_t ncalls = (count + batch - 1) / batch;
    struct pipeline p = {.e = e, .window = window, .ones = batch, .zeros_ok = 1, .stamped = 1};
    uint64_t d0, d1, t0, t1;
    double cpu0, cpu1;

    /* Two passes at least (their expiries differ), whole ones. */
    p.n = 2 * ncalls;
    while (p.n < 2 * window + 2)
        p.n += 2 * ncalls;
    if (!(p.reqs = format_renewals(ph, count, batch, p.n))) {
        snprintf(why, n, "out of memory formatting the permit flood");
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

int permit_ceiling(const struct opts *o, struct target *t, const struct permit_handles *ph,
                   struct ceiling *out, char *why, size_t n)
{
    uint32_t single = ph->permits < SINGLE_KEYS_MAX ? ph->permits : SINGLE_KEYS_MAX;
    struct engine *e = NULL;
    double single_cpu;
    int rc = -1;

    if (target_engine(t, t->host, t->port, lw_lock_scripts, SCRIPT_COUNT, SINGLE_WINDOW, &e)) {
        snprintf(why, n, "ceiling: could not start an engine");
        return -1;
    }
    progress("ceiling: scoring the permits again");
    if (rescore(e, ph)) {
        snprintf(why, n, "ceiling: could not score the permits again");
        goto out;
    }
    progress("ceiling: permit renew flood, %u permits per call, %u calls in flight", o->batch,
             o->inflight);
    out->batched = flood(e, t, ph, ph->permits, o->batch, o->inflight, &out->redis_cpu_pct,
                         why, n);
    if (out->batched < 0) {
        rc = out->batched == FLOOD_STOPPED ? 0 : -1;
        goto out;
    }
    progress("ceiling: single-permit flood, %u calls in flight", SINGLE_WINDOW);
    if ((out->single = flood(e, t, ph, single, 1, SINGLE_WINDOW, &single_cpu, why, n)) < 0) {
        rc = out->single == FLOOD_STOPPED ? 0 : -1;
        goto out;
    }
    rc = 0;
out:
    engine_free(e);
    return rc;
}

int permit_delete(const struct target *t, const struct permit_handles *ph)
{
    struct request *reqs = calloc(ph->nsems, sizeof *reqs);
    struct engine *e = NULL;
    struct pipeline p = {.reqs = reqs, .n = ph->nsems, .window = SINGLE_WINDOW};
    char name[LWB_NAME_MAX], key[LWB_NAME_MAX + 16];
    int rc = reqs ? 0 : -1;

    for (uint32_t j = 0; rc == 0 && j < ph->nsems; j++) {
        key_name(name, sizeof name, ph->prefix, j);
        timeout_key(ph, j, key, sizeof key);
        rc = request_command(&reqs[j], 3, (const char *[]){"DEL", name, key}, NULL);
    }
    if (rc == 0 && target_engine(t, t->host, t->port, lw_lock_scripts, SCRIPT_COUNT,
                                 SINGLE_WINDOW, &e))
        rc = -1;
    p.e = e;
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    engine_free(e);
    pipe_free_reqs(reqs, ph->nsems);
    return rc;
}
