/*
 * bench/lwbench_cluster.c - lwbench --cluster: the cluster it runs on, what
 * each master does, and the cluster's ceiling.
 *
 * The cluster is a private one (tests/fixtures/redis_cluster.h: 3 masters
 * and 3 replicas on loopback, stopped afterwards; with --tls every node
 * serves TLS only, with a throwaway CA, as the private redis-server does)
 * or a given one (seeds, or -r's HOST:PORT).  Its masters and slot map are read once, with CLUSTER
 * SLOTS, at the start: lwbench does not reshard, so they hold for the run.
 *
 * Per master, over the run's window: renewals/s are the PEXPIREs the renew
 * script ran there (INFO commandstats counts the commands a script calls;
 * a renewal is one PEXPIRE, nothing else lwbench does then PEXPIREs), and
 * calls/s its EVALSHAs.  Their ratio is that master's keys per call.
 *
 * The ceiling is measured like the single-node one (lwbench_ceiling.c): a
 * pipelined flood of batch-key renew calls on the run's own lock hashes,
 * opts.inflight calls out, but one flood per master at once, each over the
 * locks whose slot that master serves, on a connection of its own; the
 * per-master rates summed are the cluster's.  The 1-key ceiling likewise:
 * one key per call, SINGLE_WINDOW calls out on each master at once.  The calls carry keys of many
 * slots, so they declare none: keys and fields go in ARGV, as the
 * watchdog's cluster renewals do (a script that declares no keys may touch
 * any key its node serves).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/lock.h>
#include <leasewheel/wheel.h>

#include "engine.h"
#include "lwbench.h"
#include "pipeline.h"

#define FLOOD_SECONDS 2.0
#define WARMUP_SECONDS 0.5
#define LEASE "30000" /* long enough that no key expires meanwhile */

/* ARGV: lease ms, then name and field pairs.  1 renewed, 0 not ours, -1
 * not served here (pcall's error table: the key is not this node's). */
static const char *const renew_script[] = {
    "local renewed = {} "
    "for i = 2, #ARGV, 2 do "
    "  local held = redis.pcall('hexists', ARGV[i], ARGV[i + 1]) "
    "  if type(held) == 'table' then "
    "    renewed[#renewed + 1] = -1 "
    "  elseif held == 1 then "
    "    redis.call('pexpire', ARGV[i], ARGV[1]) "
    "    renewed[#renewed + 1] = 1 "
    "  else "
    "    renewed[#renewed + 1] = 0 "
    "  end "
    "end "
    "return renewed",
};

/* ---- Topology ---- */

static int add_master(struct target *t, const char *host, int port)
{
    for (unsigned i = 0; i < t->nmasters; i++)
        if (t->masters[i].port == port && !strcmp(t->masters[i].host, host))
            return (int)i;
    if (t->nmasters == LWB_MAX_MASTERS)
        return -1;
    snprintf(t->masters[t->nmasters].host, sizeof t->masters[0].host, "%s", host);
    t->masters[t->nmasters].port = port;
    return (int)t->nmasters++;
}

/* CLUSTER SLOTS of the node at seed_host into t's masters and slot map. */
static int read_slots(struct target *t, const char *seed_host, const redisReply *r, char *why,
                      size_t n)
{
    unsigned covered = 0;

    for (size_t k = 0; k < r->elements; k++) {
        redisReply *e = r->element[k], *m;
        const char *host;
        int idx;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            (m = e->element[2])->type != REDIS_REPLY_ARRAY || m->elements < 2)
            continue;
        /* An empty or "?" address means "where you asked" (as the spec). */
        host = m->element[0]->type == REDIS_REPLY_STRING && m->element[0]->len > 0 &&
                       strcmp(m->element[0]->str, "?")
                   ? m->element[0]->str
                   : seed_host;
        if ((idx = add_master(t, host, (int)m->element[1]->integer)) < 0) {
            snprintf(why, n, "more than %d masters", LWB_MAX_MASTERS);
            return -1;
        }
        for (long long s = e->element[0]->integer;
             s <= e->element[1]->integer && s < REDIS_CLUSTER_SLOTS; s++, covered++)
            t->slot_master[s] = (uint8_t)idx;
    }
    if (covered != REDIS_CLUSTER_SLOTS) {
        snprintf(why, n, "the cluster serves %u of %d slots", covered, REDIS_CLUSTER_SLOTS);
        return -1;
    }
    return 0;
}

/* A seed's CLUSTER SLOTS, read on the engine thread into the target. */
struct slots_ctx {
    struct target *t;
    const char *seed, *host;
    char *why;
    size_t n;
    int rc; /* 1 not read yet, 0 read, -1 read but unusable */
};

static void on_slots(const redisReply *r, void *arg)
{
    struct slots_ctx *x = arg;

    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(x->why, x->n, "%s: CLUSTER SLOTS: %s (not a cluster?)", x->seed, r->str);
    } else if (r->type == REDIS_REPLY_ARRAY) {
        x->t->nmasters = 0;
        x->rc = read_slots(x->t, x->host, r, x->why, x->n);
    }
}

/* The slot map from the first seed that answers. */
static int read_topology(struct target *t, char *why, size_t n)
{
    snprintf(why, n, "no seed answered CLUSTER SLOTS");
    for (unsigned i = 0; i < t->seeds.n; i++) {
        char host[REDIS_URL_HOST_MAX], last[256];
        struct slots_ctx x = {t, t->seeds.addr[i], host, why, n, 1};
        struct engine *e = NULL;
        int port, rc;

        if (redis_addr_split(t->seeds.addr[i], host, sizeof host, &port) ||
            target_node(t, host, port, &e)) {
            engine_free(e);
            continue;
        }
        rc = node_call(e, on_slots, &x, 2, (const char *[]){"CLUSTER", "SLOTS"});
        if (rc && rc != LW_EREDIS && engine_last_error(e, last, sizeof last) && last[0])
            snprintf(why, n, "no seed answered CLUSTER SLOTS (%s)", last);
        engine_free(e);
        if (x.rc != 1)
            return x.rc;
    }
    return -1;
}

/* The fixture's node timeout (1 s) makes its failovers quick for the
 * tests; lwbench's floods keep every core of a small machine busy, and a
 * master starved for a second would be failed over in the middle of a
 * measurement.  Nothing here tests failover: 15 s. */
static void calm_private_cluster(struct redis_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++)
        freeReplyObject(
            redis_cluster_command(c, i, "CONFIG SET cluster-node-timeout %s", "15000"));
}

int cluster_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    struct fixture_tls ft;
    char sub[200];

    t->cluster = 1;
    if (o->seeds.n) {
        t->seeds = o->seeds;
    } else if (o->redis) {
        t->seeds.n = 0;
        if (redis_seeds_add(&t->seeds, o->url.host, o->url.port, sub, sizeof sub))
            return snprintf(why, n, "%s", sub), -1;
    } else {
        if (o->tls.enable && target_private_tls(t, &ft, why, n))
            return -1;
        progress("starting a private cluster: 3 masters, 3 replicas%s",
                 o->tls.enable ? ", TLS only" : "");
        if (redis_cluster_start_tls(&t->private_cluster, 3, 1, o->tls.enable ? &ft : NULL)) {
            snprintf(why, n, "could not start a private Redis Cluster (is redis-server "
                             "installed?)");
            return -1;
        }
        t->private_server = 1;
        calm_private_cluster(&t->private_cluster);
        for (int i = 0; i < t->private_cluster.nnodes; i++)
            redis_seeds_add(&t->seeds, "127.0.0.1", t->private_cluster.node[i].port, sub,
                            sizeof sub);
    }
    for (unsigned i = 0; i < t->seeds.n; i++)
        t->seeds.ptr[i] = t->seeds.addr[i];
    if (read_topology(t, why, n))
        return TARGET_UNAVAILABLE;
    snprintf(t->host, sizeof t->host, "%s", t->masters[0].host);
    t->port = t->masters[0].port;
    return 0;
}

void cluster_close(struct target *t)
{
    if (t->private_cluster.nnodes)
        redis_cluster_stop(&t->private_cluster);
    t->private_cluster.nnodes = 0;
}

unsigned cluster_master_of(const struct target *t, const char *name)
{
    return t->slot_master[keyslot(name, strlen(name))];
}

/* ---- Counters ---- */

static double info_count(const char *info, const char *name)
{
    const char *at = strstr(info, name);

    return at ? strtod(at + strlen(name), NULL) : 0;
}

static void on_commandstats(const redisReply *r, void *arg)
{
    struct master_counters *c = arg;

    if (r->type == REDIS_REPLY_STRING) {
        /* A command never called has no line: 0 so far. */
        c->pexpire = info_count(r->str, "cmdstat_pexpire:calls=");
        c->evalsha = info_count(r->str, "cmdstat_evalsha:calls=");
    }
}

static void on_cpu(const redisReply *r, void *arg)
{
    struct master_counters *c = arg;

    if (r->type == REDIS_REPLY_STRING && strstr(r->str, "used_cpu_user:"))
        c->cpu_s = info_count(r->str, "used_cpu_sys:") + info_count(r->str, "used_cpu_user:");
}

void cluster_counters(const struct target *t, unsigned i, struct master_counters *c)
{
    struct engine *e = NULL;

    c->pexpire = c->evalsha = c->cpu_s = -1;
    if (target_node(t, t->masters[i].host, t->masters[i].port, &e) == 0) {
        node_call(e, on_commandstats, c, 2, (const char *[]){"INFO", "commandstats"});
        node_call(e, on_cpu, c, 2, (const char *[]){"INFO", "cpu"});
    }
    engine_free(e);
}

/* ---- The ceiling ---- */

/* One master's flood: its engine, its locks (indices into the run's). */
struct flood {
    struct engine *e;
    struct pipeline p;
    uint32_t *idx, nidx;
    uint64_t d0, d1;
    struct master_counters c0, c1;
};

/* Per master, the indices of the run's locks it serves. */
static int group_keys(const struct target *t, const struct flood_keys *k, struct flood *f)
{
    char name[LWB_NAME_MAX];

    for (unsigned m = 0; m < t->nmasters; m++)
        if (!(f[m].idx = malloc((size_t)k->count * sizeof *f[m].idx)))
            return -1;
    for (uint32_t i = 0; i < k->count; i++) {
        struct flood *g;

        key_name(name, sizeof name, k->prefix, i);
        g = &f[cluster_master_of(t, name)];
        g->idx[g->nidx++] = i;
    }
    return 0;
}

/* HSET name field 1 for f's locks: the run's lost locks made again. */
static int remake(struct flood *f, const struct flood_keys *k)
{
    struct request *reqs = calloc(f->nidx, sizeof *reqs);
    struct pipeline p = {.e = f->e, .reqs = reqs, .n = f->nidx, .window = SINGLE_WINDOW};
    char name[LWB_NAME_MAX];
    int rc = reqs ? 0 : -1;

    for (uint32_t i = 0; rc == 0 && i < f->nidx; i++) {
        key_name(name, sizeof name, k->prefix, f->idx[i]);
        rc = request_command(&reqs[i], 4, (const char *[]){"HSET", name, k->field, "1"},
                             NULL);
    }
    if (rc == 0 && (pipe_run(&p) < 0 || atomic_load(&p.failed)))
        rc = -1;
    pipe_free_reqs(reqs, f->nidx);
    return rc;
}

/* f's flood: calls of batch keys over its first `keys` locks in turn
 * (scattered: flood_order()), more
 * calls than the window so that none is re-sent while on the wire. */
static int format_flood(struct flood *f, const struct flood_keys *k, uint32_t keys,
                        uint32_t batch, uint32_t window)
{
    uint32_t ncalls = (keys + batch - 1) / batch;
    const char **argv = calloc(2u * batch + 1u, sizeof *argv);
    char(*names)[LWB_NAME_MAX] = calloc(batch, sizeof *names);
    int rc = argv && names ? 0 : -1;

    f->p = (struct pipeline){.e = f->e, .window = window, .ones = batch, .zeros_ok = 1};
    f->p.n = ncalls > 2 * window + 2 ? ncalls : 2 * window + 2;
    if (!(f->p.reqs = calloc(f->p.n, sizeof *f->p.reqs)))
        rc = -1;
    if (argv)
        argv[0] = LEASE;
    for (uint32_t c = 0; rc == 0 && c < f->p.n; c++) {
        for (uint32_t i = 0; i < batch; i++) {
            key_name(names[i], sizeof names[i], k->prefix,
                     f->idx[flood_order((uint64_t)c * batch + i, keys)]);
            argv[1 + 2 * i] = names[i];
            argv[2 + 2 * i] = k->field;
        }
        rc = request_evalsha(&f->p.reqs[c], 0, 0, (int)(2 * batch + 1), argv, NULL);
    }
    free(names);
    free(argv);
    return rc;
}

/* Every master's flood formatted: batch keys per call, window calls out,
 * over at most max_keys of its locks each. */
static int format_floods(const struct target *t, struct flood *f, const struct flood_keys *k,
                         uint32_t max_keys, uint32_t batch, uint32_t window)
{
    for (unsigned m = 0; m < t->nmasters; m++) {
        pipe_free_reqs(f[m].p.reqs, f[m].p.n);
        f[m].p.reqs = NULL;
        if (f[m].nidx &&
            format_flood(&f[m], k, f[m].nidx < max_keys ? f[m].nidx : max_keys, batch, window))
            return -1;
    }
    return 0;
}

static void free_floods(struct flood *f, unsigned n)
{
    for (unsigned m = 0; m < n; m++) {
        engine_free(f[m].e);
        pipe_free_reqs(f[m].p.reqs, f[m].p.n);
        free(f[m].idx);
    }
}

/* What the floods of run_floods() measured. */
struct flood_rates {
    double per_master[LWB_MAX_MASTERS]; /* keys/s */
    double total;                       /* keys/s, summed */
    double redis_cpu_pct;               /* the masters', summed; -1 unknown */
};

/* Start every master's flood, measure them together, stop them: 0, 1
 * stopped by a signal (not measured), or -1 (why). */
static int run_floods(struct target *t, struct flood *f, uint32_t batch, struct flood_rates *out,
                      char *why, size_t n)
{
    uint64_t t0, t1;
    double secs, cores = 0;
    int rc = 0;

    for (unsigned m = 0; m < t->nmasters; m++)
        if (f[m].nidx)
            pipe_start(&f[m].p);
    nap(t, WARMUP_SECONDS);
    for (unsigned m = 0; m < t->nmasters; m++)
        cluster_counters(t, m, &f[m].c0), f[m].d0 = atomic_load(&f[m].p.done);
    t0 = lw_clock_now();
    nap(t, FLOOD_SECONDS);
    t1 = lw_clock_now();
    if (stop_signal()) { /* SIGINT, SIGTERM: stopped, not measured */
        for (unsigned m = 0; m < t->nmasters; m++)
            if (f[m].nidx)
                pipe_stop(&f[m].p);
        return 1;
    }
    for (unsigned m = 0; m < t->nmasters; m++)
        f[m].d1 = atomic_load(&f[m].p.done), cluster_counters(t, m, &f[m].c1);
    secs = (double)(t1 - t0) / 1e9;
    out->total = 0;
    for (unsigned m = 0; m < t->nmasters; m++) {
        if (f[m].nidx && (pipe_stop(&f[m].p) || atomic_load(&f[m].p.failed))) {
            char sub[160];

            snprintf(why, n, "ceiling on %s:%d: %s", t->masters[m].host, t->masters[m].port,
                     pipe_why(&f[m].p, sub, sizeof sub));
            rc = -1;
        }
        out->per_master[m] = (double)(f[m].d1 - f[m].d0) * batch / secs;
        out->total += out->per_master[m];
        if (f[m].c0.cpu_s >= 0 && f[m].c1.cpu_s >= 0 && cores >= 0)
            cores += (f[m].c1.cpu_s - f[m].c0.cpu_s) / secs;
        else
            cores = -1;
    }
    out->redis_cpu_pct = cores >= 0 ? 100 * cores : -1;
    return rc;
}

/* The batched floods, then the single-key ones (one key per call,
 * SINGLE_WINDOW calls out per master, over at most SINGLE_KEYS_MAX locks
 * in all, as on one node). */
static int measure_floods(const struct opts *o, struct target *t, struct flood *f,
                          const struct flood_keys *k, struct run_result *r, char *why, size_t n)
{
    struct flood_rates batched, single;
    int rc;

    if (format_floods(t, f, k, UINT32_MAX, o->batch, o->inflight))
        return snprintf(why, n, "out of memory formatting the flood"), -1;
    progress("ceiling: renew flood on %u masters at once, %u keys per call, %u calls in flight "
             "each",
             t->nmasters, o->batch, o->inflight);
    if ((rc = run_floods(t, f, o->batch, &batched, why, n)))
        return rc < 0 ? -1 : 0; /* stopped: the caller sees stop_signal() */
    if (format_floods(t, f, k, SINGLE_KEYS_MAX / t->nmasters, 1, SINGLE_WINDOW))
        return snprintf(why, n, "out of memory formatting the flood"), -1;
    progress("ceiling: single-key flood on %u masters at once, %u calls in flight each",
             t->nmasters, SINGLE_WINDOW);
    if ((rc = run_floods(t, f, 1, &single, why, n)))
        return rc < 0 ? -1 : 0;
    for (unsigned m = 0; m < t->nmasters; m++) {
        r->masters[m].ceiling = batched.per_master[m];
        r->masters[m].single = single.per_master[m];
    }
    r->ceiling.batched = batched.total;
    r->ceiling.single = single.total;
    r->ceiling.redis_cpu_pct = batched.redis_cpu_pct;
    return 0;
}

int cluster_ceiling(const struct opts *o, struct target *t, const struct flood_keys *k,
                    struct run_result *r, char *why, size_t n)
{
    struct flood f[LWB_MAX_MASTERS] = {0};
    int rc = -1;

    if (group_keys(t, k, f)) {
        snprintf(why, n, "ceiling: out of memory");
        goto out;
    }
    for (unsigned m = 0; m < t->nmasters; m++) {
        if (!f[m].nidx)
            continue;
        if (target_engine(t, t->masters[m].host, t->masters[m].port, renew_script, 1,
                          SINGLE_WINDOW, &f[m].e)) {
            snprintf(why, n, "ceiling: could not start an engine on %s:%d",
                     t->masters[m].host, t->masters[m].port);
            goto out;
        }
        if (k->remake && (progress("ceiling: making the lost locks again"), remake(&f[m], k))) {
            snprintf(why, n, "ceiling: could not make the lost locks again");
            goto out;
        }
    }
    rc = measure_floods(o, t, f, k, r, why, n);
out:
    free_floods(f, t->nmasters);
    return rc;
}

/* ---- Deleting ---- */

int cluster_delete(const struct target *t, const char *p, uint32_t count, int read_holds)
{
    struct deleter d[LWB_MAX_MASTERS];
    char name[LWB_NAME_MAX];
    int bad = 0;

    for (unsigned m = 0; m < t->nmasters; m++)
        if (deleter_open(&d[m], t, t->masters[m].host, t->masters[m].port))
            bad = -1;
        else
            d[m].read_holds = read_holds;
    for (uint32_t i = 0; !bad && i < count; i++) {
        unsigned m;

        key_name(name, sizeof name, p, i);
        m = cluster_master_of(t, name);
        deleter_add(&d[m], p, i);
        bad = d[m].bad;
    }
    for (unsigned m = 0; m < t->nmasters; m++)
        if (deleter_close(&d[m]))
            bad = -1;
    return bad;
}
