/*
 * bench/lwbench_run.c - one sizing run: a client acquires N watchdog locks,
 * holds them while the watchdog renews them, and is measured.
 *
 * Acquiring: at most ACQUIRE_WINDOW acquires outstanding.  A burst of all
 * N would queue the first locks' renewals behind the rest of the acquires
 * for longer than a short lease.
 *
 * Holding: the measured window is a whole number of renewal periods
 * (lease/3) when the duration allows, so that every lock is renewed the
 * same number of times in it whatever the phases the acquiring left.
 * Over the window: renewals confirmed per second, the lag histogram's
 * p50/p99/max, the engine thread's CPU (found from the first acquire's
 * callback, which runs on it), Redis's CPU (INFO).  Memory per lock is the
 * process's RSS growth over the acquiring.  Lost locks are counted from
 * on_lost over the whole run.
 *
 * With --clients N the locks are split between N clients, each with its
 * own engine thread and connections, as N processes would be: the short
 * renewal batches of many small clients are measured.  Their counters
 * are summed (the lag histograms too), the engine CPU is their threads'
 * sum.
 *
 * Then the ceiling, on the run's locks (lwbench_ceiling.c), and the keys
 * are deleted.  With several clients the locks carry several owner
 * fields, so the ceiling writes them again under the first client's.
 *
 * With --kind permit the run holds permits instead (lwbench_permit.c):
 * each semaphore's permits taken in one acquire, the acquires spread over
 * a renewal period (see acquire_permits()), the same measurements
 * (the client's counters count permits with locks), the permits' own
 * ceiling.
 *
 * A run holds when every lock was acquired, none was lost, and renewals
 * kept up: lag p99 under lease/6, half the slack a renewal has before the
 * lease runs out.  Past what the Redis can renew, the client's admission
 * refuses acquires (LW_EOVERLOAD, counted apart): the run then holds when
 * every lock was acquired or refused so, and the locks it holds are the
 * client's measured capacity at this lease.  Refusals are no failure: a
 * client asked for too much that keeps what it holds is what the library
 * promises.
 *
 * Acquires wait for admission: each may wait ADMISSION_WAIT_LEASES leases
 * (at most 20 s): the client holds it back while renewals are behind, and
 * sends it once they have caught up for a renewal period, a period that
 * doubles each time the client closes again soon after opening
 * (core/admission.c).  An application whose acquires are refused asks
 * again, and its held set grows at each opening until the Redis is full;
 * a run that gave up at the first wait of a lease measured only what the
 * first openings let in (1.5 s lease: 132,000 locks held in three runs of
 * four, whose Redis renewed 168,000 in the fourth).  Nor is four leases
 * enough: the admission's quiet wait doubles up to 16 renewal periods
 * (5.3 leases), and a run whose admission closed a fourth time gave up
 * before that opening with its Redis 0.83 busy.  Eight leases outlast
 * the longest quiet wait and the backlog's clearing before it.  Once an
 * acquire has waited that long in vain, the Redis is full: the rest are
 * not asked for (counted as skipped), so that a run asked for twice what
 * the Redis can renew ends in seconds, without a storm of refusals taking
 * CPU from the Redis and the engine.  The ceiling is then flooded on the locks asked
 * for, not on those never asked for: Redis's cost per key grows with the
 * keys it keeps, and the ceiling is that of the held set.
 *
 * Renewals per second: the renewals sent in each second of the hold, for
 * how evenly a burst's renewals spread (max over mean).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel/lock.h>
#include <leasewheel/multi.h>
#include <leasewheel/semaphore.h>
#include <leasewheel/wheel.h>

#include "cli_util.h"
#include "lwbench.h"

#define ACQUIRE_WINDOW 1000u
#define ADMISSION_WAIT_LEASES 8u               /* see above: past the longest quiet wait */
#define STALL_LIMIT_NS (60ull * 1000000000ull) /* no acquire done for this long */

struct run_ctx;

/* One client of the run: its engine thread, found from the first acquire
 * callback, which runs on it. */
struct run_client {
    struct run_ctx *x;
    struct lw_client *c;
    _Atomic int engine_tid;
};

struct run_ctx {
    _Atomic uint32_t acquired, failed, refused, done, skipped;
    uint32_t per;     /* --kind multi: names to a set; else 1 */
    _Atomic int full; /* an acquire waited its whole wait for admission */
    _Atomic uint64_t lost;
    _Atomic int first_err;
    char first_said[LW_REPLY_ERROR_MAX]; /* Redis's words for it, if any:
                                            written by the callback that
                                            set first_err, read once all
                                            are done */
    unsigned nclients;
    struct run_client clients[LWB_MAX_CLIENTS];
};

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct run_ctx *x = arg;

    (void)name, (void)len, (void)owner, (void)reason;
    atomic_fetch_add(&x->lost, 1);
}

/* The first error of the run's acquires, with Redis's words for it. */
static void note_error(struct run_ctx *x, int err)
{
    int none = 0;

    if (atomic_compare_exchange_strong(&x->first_err, &none, err))
        snprintf(x->first_said, sizeof x->first_said, "%s", lw_reply_error());
}

static void on_acquired(int err, int64_t value, void *arg)
{
    struct run_client *rc = arg;
    struct run_ctx *x = rc->x;
    int none = 0;

    (void)value;
    atomic_compare_exchange_strong(&rc->engine_tid, &none, (int)syscall(SYS_gettid));
    none = 0;
    if (err == LW_EOVERLOAD) {
        atomic_fetch_add(&x->refused, 1);
        atomic_store(&x->full, 1);
    } else if (err) {
        atomic_fetch_add(&x->failed, 1);
        note_error(x, err);
    } else {
        atomic_fetch_add(&x->acquired, 1);
    }
    atomic_fetch_add(&x->done, 1);
}

void client_config(const struct opts *o, struct lw_client_config *cfg)
{
    lw_client_config_init(cfg);
    cfg->watchdog_timeout_ms = o->lease_ms;
    cfg->tick_ms = o->tick_ms;
    cfg->slots = o->slots;
    cfg->renew_batch = o->batch;
    cfg->renew_batches_inflight = o->inflight;
    cfg->username = o->url.username[0] ? o->url.username : NULL;
    cfg->password = o->url.password[0] ? o->url.password : NULL;
    cfg->db = o->url.db;
    cfg->tls = o->tls;
    cfg->log = o->verbose ? lwbench_log : NULL;
    if (o->url.sentinels.n) {
        cfg->sentinels = o->url.sentinels.ptr;
        cfg->nsentinels = o->url.sentinels.n;
        cfg->sentinel_master = o->url.master;
        cfg->sentinel_username = o->sentinel_username;
        cfg->sentinel_password = o->sentinel_password;
        cfg->sentinel_tls_own = o->plain_sentinels; /* sentinel_tls: off */
    }
}

static int new_client(const struct opts *o, const struct target *t, struct run_ctx *x,
                      struct lw_client **c)
{
    struct lw_client_config cfg;

    client_config(o, &cfg);
    cfg.host = t->host;
    cfg.port = t->port;
    cfg.tls = t->tls; /* o->tls, or a private TLS server's CA */
    if (t->cluster) {
        cfg.cluster_seeds = t->seeds.ptr;
        cfg.cluster_nseeds = t->seeds.n;
    }
    cfg.on_lost = on_lost;
    cfg.lost_arg = x;
    return lw_client_new(&cfg, c);
}

/* Wait while `window` acquires are out; 0, 1 interrupted (SIGINT,
 * SIGTERM: looked for every 10 ms), or -1 when stuck. */
static int acquire_slot(struct run_ctx *x, const struct target *t, uint32_t issued,
                        uint32_t window)
{
    uint64_t since = lw_clock_now();
    uint32_t seen = atomic_load(&x->done);

    for (unsigned k = 1; issued - atomic_load(&x->done) >= window; k++) {
        struct timespec ts = {0, 100000};

        if (k % 100 == 0 && nap(t, 0))
            return 1;
        nanosleep(&ts, NULL);
        if (atomic_load(&x->done) != seen)
            seen = atomic_load(&x->done), since = lw_clock_now();
        else if (lw_clock_now() - since > STALL_LIMIT_NS)
            return -1;
    }
    return 0;
}

static void acquire_progress(const struct run_ctx *x, uint32_t locks, uint64_t start,
                             uint64_t *last)
{
    uint64_t now = lw_clock_now();

    if (now - *last < 1000000000u)
        return;
    *last = now;
    progress("acquiring %u/%u (%.0f/s), refused %u, lost %llu", atomic_load(&x->acquired),
             locks, atomic_load(&x->done) / ((double)(now - start) / 1e9),
             atomic_load(&x->refused), (unsigned long long)atomic_load(&x->lost));
}

/* The client lock i of n belongs to: the locks split in equal runs. */
static struct run_client *client_of(struct run_ctx *x, uint32_t i, uint32_t n)
{
    return &x->clients[(uint64_t)i * x->nclients / n];
}

/* Issue the acquires and wait for them all.  0, 1 interrupted, -1 stuck. */
static int acquire_all(struct lw_lock **locks, uint32_t n, struct run_ctx *x,
                       const struct target *t, uint64_t admission_wait_ms)
{
    uint64_t start = lw_clock_now(), last = start;
    int slot;

    for (uint32_t i = 0; i < n; i++) {
        struct run_client *rc = client_of(x, i, n);

        if (atomic_load(&x->full)) { /* the Redis is full: ask for no more */
            atomic_store(&x->skipped, n - i);
            n = i;
            break;
        }
        if ((slot = acquire_slot(x, t, i, ACQUIRE_WINDOW)))
            return slot;
        if (lw_acquire_async(locks[i], 1, admission_wait_ms, 0, on_acquired, rc))
            on_acquired(LW_ENOMEM, 0, rc);
        acquire_progress(x, n, start, &last);
        if ((i & 1023u) == 0 && nap(t, 0))
            return 1;
    }
    for (int s = 0; s < 600 && atomic_load(&x->done) < n; s++) {
        if (nap(t, 0.1))
            return 1;
        acquire_progress(x, n, start, &last);
    }
    return atomic_load(&x->done) < n ? -1 : 0;
}

/* --kind multi: a set's acquire ended (x->done counts the sets; acquired
 * the names, per to a set). */
static void on_set_acquired(int err, int64_t value, void *arg)
{
    struct run_client *rc = arg;
    struct run_ctx *x = rc->x;

    on_acquired(err, value, arg);
    if (!err)
        atomic_fetch_add(&x->acquired, x->per - 1);
}

/* As acquire_all(), a set per call. */
static int acquire_sets(struct lw_multi **sets, uint32_t n, struct run_ctx *x,
                        const struct target *t)
{
    uint64_t start = lw_clock_now(), last = start;
    uint32_t window = ACQUIRE_WINDOW / x->per ? ACQUIRE_WINDOW / x->per : 1;
    int slot;

    for (uint32_t j = 0; j < n; j++) {
        struct run_client *rc = client_of(x, j, n);

        if ((slot = acquire_slot(x, t, j, window)))
            return slot;
        if (lw_multi_acquire_async(sets[j], 1, 0, 0, NULL, on_set_acquired, rc))
            on_set_acquired(LW_ENOMEM, 0, rc);
        acquire_progress(x, n * x->per, start, &last);
        if ((j & 255u) == 0 && nap(t, 0))
            return 1;
    }
    for (int s = 0; s < 600 && atomic_load(&x->done) < n; s++) {
        if (nap(t, 0.1))
            return 1;
        acquire_progress(x, n * x->per, start, &last);
    }
    return atomic_load(&x->done) < n ? -1 : 0;
}

/* --kind permit: a semaphore's acquire of all its permits ended; value is
 * how many (x->done counts the calls). */
static void on_permits(int err, int64_t value, void *arg)
{
    struct run_client *rc = arg;
    struct run_ctx *x = rc->x;
    int none = 0;

    atomic_compare_exchange_strong(&rc->engine_tid, &none, (int)syscall(SYS_gettid));
    none = 0;
    if (err) {
        atomic_fetch_add(&x->failed, 1);
        note_error(x, err);
    } else {
        atomic_fetch_add(&x->acquired, (uint32_t)value);
    }
    atomic_fetch_add(&x->done, 1);
}

/* Until start + j/n of a renewal period (lease/3): 0, or 1 interrupted. */
static int pace(const struct target *t, uint64_t start, uint32_t lease_ms, uint32_t j,
                uint32_t n)
{
    uint64_t due = start + (uint64_t)lease_ms * 1000000u / 3u * j / n, now;

    while ((now = lw_clock_now()) < due)
        if (nap(t, (double)(due - now) / 1e9))
            return 1;
    return 0;
}

/*
 * Every semaphore's permits in one acquire each, at most ACQUIRE_WINDOW
 * permits outstanding, the acquires spread over one renewal period.  A
 * semaphore's 100 permits are taken in one call, so that all of them
 * would otherwise be taken within a fraction of a second (locks, one per
 * call, take seconds): their renewals would then all fall due in the
 * same few ticks, every period, a burst no deployment whose permits are
 * taken at different moments sends.  0, 1 interrupted, -1 stuck.
 */
static int acquire_permits(const struct permit_handles *ph, uint32_t lease_ms,
                           struct run_ctx *x, const struct target *t)
{
    uint32_t window = ACQUIRE_WINDOW / ph->per ? ACQUIRE_WINDOW / ph->per : 1;
    uint64_t start = lw_clock_now(), last = start;
    int slot;

    for (uint32_t j = 0; j < ph->nsems; j++) {
        struct run_client *rc = client_of(x, j, ph->nsems);

        if (pace(t, start, lease_ms, j, ph->nsems))
            return 1;
        if ((slot = acquire_slot(x, t, j, window)))
            return slot;
        if (lw_permit_acquire_async(ph->sems[j], permits_of(ph, j), 0, 0, &ph->ids[j * ph->per],
                                    on_permits, rc))
            on_permits(LW_ENOMEM, 0, rc);
        acquire_progress(x, ph->permits, start, &last);
        if ((j & 63u) == 0 && nap(t, 0))
            return 1;
    }
    for (int s = 0; s < 600 && atomic_load(&x->done) < ph->nsems; s++) {
        if (nap(t, 0.1))
            return 1;
        acquire_progress(x, ph->permits, start, &last);
    }
    return atomic_load(&x->done) < ph->nsems ? -1 : 0;
}

static int make_handles(const struct opts *o, struct run_ctx *x, const struct target *t,
                        unsigned step, struct lw_lock **locks, uint32_t n, char *prefix,
                        size_t plen)
{
    int (*const make[])(struct lw_client *, const void *, size_t, struct lw_lock **) = {
        [LWB_KIND_LOCK] = lw_lock_new,
        [LWB_KIND_READ] = lw_read_lock_new,
        [LWB_KIND_WRITE] = lw_write_lock_new,
        [LWB_KIND_FAIR] = lw_fair_lock_new,
        [LWB_KIND_MULTI] = lw_lock_new,
    };
    /* A multi-lock's names share a client: the sets split in runs. */
    uint32_t per = o->kind == LWB_KIND_MULTI ? o->names_per_lock : 1;
    char name[LWB_NAME_MAX];

    snprintf(prefix, plen, "%s:r%u", t->prefix, step);
    for (uint32_t i = 0; i < n; i++) {
        key_name(name, sizeof name, prefix, i);
        if (make[o->kind](client_of(x, i / per, n / per)->c, name, strlen(name), &locks[i]))
            return -1;
    }
    return 0;
}

/* --kind multi: a multi-lock over each run of per handles (n / per of
 * them, into sets).  0, or -1 out of memory. */
static int make_sets(struct lw_lock **locks, uint32_t n, uint32_t per, struct lw_multi **sets)
{
    for (uint32_t j = 0; j < n / per; j++)
        if (lw_multi_new(&locks[j * per], per, &sets[j]))
            return -1;
    return 0;
}

static void free_sets(struct lw_multi **sets, uint32_t n)
{
    for (uint32_t j = 0; sets && j < n; j++)
        lw_multi_free(sets[j]);
    free(sets);
}

/* A snapshot at one end of the window. */
struct sample {
    uint64_t at_ns;
    double engine_cpu, redis_cpu;
    struct lw_client_stats st;
    struct master_counters masters[LWB_MAX_MASTERS]; /* cluster */
};

/* The clients' counters summed into *sum (those lwbench reads; the worst
 * lag the worst of them). */
static void stats_sum(struct run_ctx *x, struct lw_client_stats *sum)
{
    struct lw_client_stats st;

    memset(sum, 0, sizeof *sum);
    for (unsigned i = 0; i < x->nclients; i++) {
        lw_client_get_stats(x->clients[i].c, &st);
        sum->locks_held += st.locks_held;
        sum->renewals_sent += st.renewals_sent;
        sum->renewals_confirmed += st.renewals_confirmed;
        sum->renew_batches += st.renew_batches;
        sum->overloads += st.overloads;
        if (st.worst_renewal_lag_ns > sum->worst_renewal_lag_ns)
            sum->worst_renewal_lag_ns = st.worst_renewal_lag_ns;
        for (unsigned b = 0; b < LW_LAG_BUCKETS; b++)
            sum->renewal_lag[b] += st.renewal_lag[b];
    }
}

/* The engine threads' CPU seconds, summed; -1 when one cannot be read. */
static double engines_cpu_s(struct run_ctx *x)
{
    double sum = 0;

    for (unsigned i = 0; i < x->nclients; i++) {
        int tid = atomic_load(&x->clients[i].engine_tid);
        double s = tid ? thread_cpu_s(tid) : 0; /* 0: it had no lock */

        if (s < 0)
            return -1;
        sum += s;
    }
    return sum;
}

static void take_sample(struct run_ctx *x, const struct target *t, struct sample *s)
{
    s->at_ns = lw_clock_now();
    stats_sum(x, &s->st);
    s->engine_cpu = engines_cpu_s(x);
    s->redis_cpu = target_cpu_s(t);
    for (unsigned i = 0; t->cluster && i < t->nmasters; i++)
        cluster_counters(t, i, &s->masters[i]);
}

static double rate(double a, double b, double seconds)
{
    return a >= 0 && b >= 0 ? (b - a) / seconds : -1;
}

/* Each master's share of the window (INFO counters at both ends). */
static void measure_masters(const struct target *t, const struct sample *a,
                            const struct sample *b, struct run_result *r)
{
    double s = (double)(b->at_ns - a->at_ns) / 1e9;

    r->nmasters = t->nmasters;
    for (unsigned i = 0; i < t->nmasters; i++) {
        struct master_result *m = &r->masters[i];

        m->renewals_per_s = rate(a->masters[i].pexpire, b->masters[i].pexpire, s);
        m->calls_per_s = rate(a->masters[i].evalsha, b->masters[i].evalsha, s);
        m->redis_cpu_pct = rate(a->masters[i].cpu_s, b->masters[i].cpu_s, s);
        if (m->redis_cpu_pct >= 0)
            m->redis_cpu_pct *= 100;
    }
}

/* How many of the run's locks each master serves. */
static void count_masters(const struct target *t, const char *prefix, uint32_t locks,
                          struct run_result *r)
{
    char name[LWB_NAME_MAX];

    for (uint32_t i = 0; i < locks; i++) {
        key_name(name, sizeof name, prefix, i);
        r->masters[cluster_master_of(t, name)].locks++;
    }
}

static double pct(double a, double b, double seconds)
{
    return a >= 0 && b >= 0 ? 100.0 * (b - a) / seconds : -1;
}

/* Fill r's window measurements from the samples at its two ends. */
static void measure(const struct sample *a, struct sample *b, struct run_result *r)
{
    double s = (double)(b->at_ns - a->at_ns) / 1e9;
    uint64_t batches = b->st.renew_batches - a->st.renew_batches;

    r->window_s = s;
    r->achieved = (double)(b->st.renewals_confirmed - a->st.renewals_confirmed) / s;
    r->keys_per_call = batches ? (double)(b->st.renewals_sent - a->st.renewals_sent) /
                                     (double)batches
                               : 0;
    r->engine_cpu_pct = pct(a->engine_cpu, b->engine_cpu, s);
    r->redis_cpu_pct = pct(a->redis_cpu, b->redis_cpu, s);
    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        b->st.renewal_lag[i] -= a->st.renewal_lag[i];
    r->lag_p50_ns = lw_stats_lag_ns(&b->st, 0.5);
    r->lag_p99_ns = lw_stats_lag_ns(&b->st, 0.99);
    r->lag_max_ns = lw_stats_lag_ns(&b->st, 1.0);
    /* A worst that came in the window is its max, exactly; one that came
     * while acquiring is not the window's (the progress lines say it). */
    r->lag_worst_ns = b->st.worst_renewal_lag_ns;
    if (b->st.worst_renewal_lag_ns > a->st.worst_renewal_lag_ns)
        r->lag_max_ns = b->st.worst_renewal_lag_ns;
}

/* The window: whole renewal periods when the duration holds one. */
static double window_s(const struct opts *o)
{
    double period = o->lease_ms / 3000.0;

    return o->duration_s >= period ? period * (double)(uint64_t)(o->duration_s / period)
                                   : o->duration_s;
}

/* Hold for the window, a progress line a second, and the renewals sent
 * in each whole second into r.  1 when interrupted. */
static int hold(const struct target *t, struct run_ctx *x, double seconds, uint64_t start_ns,
                struct run_result *r)
{
    struct lw_client_stats prev, now;
    uint64_t prev_ns = lw_clock_now();

    stats_sum(x, &prev);
    for (;;) {
        double left = seconds - (double)(lw_clock_now() - start_ns) / 1e9;

        if (left <= 0)
            return 0;
        if (nap(t, left < 1 ? left : 1))
            return 1;
        stats_sum(x, &now);
        if (left >= 1 && r->nper_s < SERIES_MAX)
            r->per_s[r->nper_s++] = (double)(now.renewals_sent - prev.renewals_sent) /
                                    ((double)(lw_clock_now() - prev_ns) / 1e9);
        prev_ns = lw_clock_now();
        progress("holding %llu locks: %llu renewals in the last second, worst lag since the "
                 "start %.1f ms, "
                 "lost %llu, %.0f s left",
                 (unsigned long long)now.locks_held,
                 (unsigned long long)(now.renewals_confirmed - prev.renewals_confirmed),
                 (double)now.worst_renewal_lag_ns / 1e6,
                 (unsigned long long)atomic_load(&x->lost), left > 1 ? left - 1 : 0);
        prev = now;
    }
}

static void free_handles(struct lw_lock **locks, uint32_t n)
{
    for (uint32_t i = 0; locks && i < n; i++)
        lw_lock_free(locks[i]);
    free(locks);
}

/* How long an acquire waits for admission (see the head comment). */
static uint64_t admission_wait_ms(uint64_t lease_ms)
{
    uint64_t wait = ADMISSION_WAIT_LEASES * lease_ms;

    return wait < 20000 ? wait : 20000;
}

/* Acquire, hold and measure into r; the clients are the caller's. */
static int acquire_and_hold(const struct opts *o, struct target *t, struct lw_lock **locks,
                            struct lw_multi **sets, const struct permit_handles *ph,
                            struct run_ctx *x, struct run_result *r, char *why, size_t n)
{
    struct sample a, b;
    double rss0 = cli_rss_bytes();
    uint64_t t0 = lw_clock_now();
    int rc = ph     ? acquire_permits(ph, o->lease_ms, x, t)
             : sets ? acquire_sets(sets, r->locks / x->per, x, t)
                    : acquire_all(locks, r->locks, x, t, admission_wait_ms(o->lease_ms));

    if (rc < 0) {
        snprintf(why, n, "acquiring stalled (%u of %u done)", atomic_load(&x->done), r->locks);
        return -1;
    }
    r->acquire_s = (double)(lw_clock_now() - t0) / 1e9;
    r->acquired = atomic_load(&x->acquired);
    r->bytes_per_lock = r->acquired ? (cli_rss_bytes() - rss0) / r->acquired : 0;
    r->window_planned_s = window_s(o);
    if (rc == 1) { /* SIGINT or SIGTERM while acquiring: no hold measured */
        r->interrupted = 1;
        r->lost = atomic_load(&x->lost);
        return 0;
    }
    if (r->acquired == 0) {
        char last[LW_REPLY_ERROR_MAX + 16];
        int have_last = lw_client_last_error(x->clients[0].c, last, sizeof last) && last[0];

        /* And why: Redis's words when it refused, else why the connection
         * failed (TLS, ...), when the client knows. */
        if (x->first_said[0])
            snprintf(last, sizeof last, "Redis: %s", x->first_said);
        have_last = have_last || x->first_said[0];
        snprintf(why, n, "no lock acquired: %s%s%s%s", lw_strerror(atomic_load(&x->first_err)),
                 have_last ? " (" : "", have_last ? last : "", have_last ? ")" : "");
        return -1;
    }
    take_sample(x, t, &a);
    r->interrupted = hold(t, x, r->window_planned_s, a.at_ns, r);
    take_sample(x, t, &b);
    /* Lost by then: a terminal's Ctrl-C stops a private redis-server too,
     * and what that loses afterwards is not the run's. */
    r->lost = atomic_load(&x->lost);
    measure(&a, &b, r);
    r->overloads = b.st.overloads;
    if (t->cluster)
        measure_masters(t, &a, &b, r);
    return 0;
}

/* The run's clients, o->clients of them: 0, or an LW_E* code (those made
 * are in x, for free_clients()). */
static int new_clients(const struct opts *o, const struct target *t, struct run_ctx *x)
{
    int rc;

    for (x->nclients = 0; x->nclients < o->clients; x->nclients++) {
        struct run_client *c = &x->clients[x->nclients];

        c->x = x;
        if ((rc = new_client(o, t, x, &c->c)))
            return rc;
    }
    return 0;
}

static void free_clients(struct run_ctx *x)
{
    for (unsigned i = 0; i < x->nclients; i++)
        lw_client_free(x->clients[i].c);
}

/* Whether the run held: everything acquired, none lost, lag p99 under
 * lease/6. */
static int held(const struct opts *o, int rc, const struct run_result *r, uint32_t count)
{
    return rc == 0 && !r->interrupted && r->acquired == count && r->lost == 0 &&
           r->lag_p99_ns <= (uint64_t)o->lease_ms * 1000000u / 6;
}

/* Before a given Redis's first flood (--ceiling): the rest of the notice
 * lwbench gave (FLOOD_NOTICE_NS), counted down a second at a time.  0, or
 * 1 interrupted (no flood then). */
static int flood_notice(struct target *t)
{
    uint64_t now;

    while (t->warned_at && (now = lw_clock_now()) - t->warned_at < FLOOD_NOTICE_NS) {
        double left = (double)(t->warned_at + FLOOD_NOTICE_NS - now) / 1e9;

        progress("the ceiling floods %s in %.0f s (Ctrl-C stops lwbench, which deletes its "
                 "keys)",
                 t->cluster ? "every master" : "this Redis", ceil(left));
        if (nap(t, left < 1 ? left : 1))
            return 1;
    }
    t->warned_at = 0; /* given: later floods go at once */
    return 0;
}

/* Whether to leave the run's keys: on a private server when SIGINT or
 * SIGTERM stopped lwbench.  The server is stopped next, its keys with
 * it, and a terminal's Ctrl-C, which reaches the whole foreground process
 * group, may have stopped it already: the DELs would fail.  A Redis
 * lwbench did not start has them deleted whatever stopped the run. */
static int keep_keys(const struct target *t)
{
    return stop_signal() && t->private_server;
}

/* --kind permit's run: `permits` of them over semaphores, as sizing_run()
 * for locks. */
static int permit_run(const struct opts *o, struct target *t, uint32_t permits, unsigned step,
                      struct run_result *r, char *why, size_t n)
{
    struct run_ctx *x = calloc(1, sizeof *x);
    struct permit_handles ph = {.permits = permits, .per = o->per_semaphore};
    struct lw_client *clients[LWB_MAX_CLIENTS];
    int rc = -1, erc = 0;

    memset(r, 0, sizeof *r);
    r->locks = permits;
    r->needed = permits / (o->lease_ms / 3000.0);
    snprintf(ph.prefix, sizeof ph.prefix, "%s:p%u", t->prefix, step);
    if (!x || (erc = new_clients(o, t, x))) {
        snprintf(why, n, "client: %s", x ? lw_strerror(erc) : "out of memory");
    } else {
        for (unsigned i = 0; i < x->nclients; i++)
            clients[i] = x->clients[i].c;
        if ((erc = permit_semaphores(&ph, clients, x->nclients)))
            snprintf(why, n, "making %u semaphores: %s%s%s%s", ph.nsems, lw_strerror(erc),
                     lw_reply_error()[0] ? " (Redis: " : "", lw_reply_error(),
                     lw_reply_error()[0] ? ")" : "");
        else
            rc = acquire_and_hold(o, t, NULL, NULL, &ph, x, r, why, n);
    }
    if (x)
        free_clients(x); /* renewals stop; the permits stay, for the ceiling */
    if (x && !r->interrupted)
        r->lost = atomic_load(&x->lost);
    r->held = held(o, rc, r, permits);
    if (rc == 0 && !r->interrupted && !o->no_ceiling && !stop_signal() &&
        !flood_notice(t)) {
        rc = permit_ceiling(o, t, &ph, &r->ceiling, why, n);
        r->ceiling_measured = rc == 0 && !stop_signal();
    }
    if (ph.nsems && keep_keys(t)) {
        progress("stopped: the private redis-server's keys go with it");
    } else if (ph.nsems && (progress("deleting the run's keys"), permit_delete(t, &ph)) &&
               rc == 0) {
        snprintf(why, n, "could not delete the run's keys");
        rc = -1;
    }
    permit_handles_free(&ph);
    free(x);
    return rc;
}

static int lock_run(const struct opts *o, struct target *t, uint32_t locks, unsigned step,
                    struct run_result *r, char *why, size_t n)
{
    struct run_ctx *x = calloc(1, sizeof *x);
    uint32_t per = o->kind == LWB_KIND_MULTI ? o->names_per_lock : 1;
    struct lw_lock **handles = calloc(locks, sizeof *handles);
    struct lw_multi **sets =
        o->kind == LWB_KIND_MULTI ? calloc(locks / per + 1, sizeof *sets) : NULL;
    char prefix[LWB_PREFIX_MAX + 16], field[LW_CLIENT_ID_MAX + 24] = "", id[LW_CLIENT_ID_MAX + 1] = "";
    int rc = -1, erc = 0;

    memset(r, 0, sizeof *r);
    locks -= locks % per; /* whole sets */
    if (x)
        x->per = per;
    r->locks = locks;
    r->needed = locks / (o->lease_ms / 3000.0);
    if (!x || !handles || (erc = new_clients(o, t, x))) {
        snprintf(why, n, "client: %s", x && handles ? lw_strerror(erc) : "out of memory");
    } else if (make_handles(o, x, t, step, handles, locks, prefix, sizeof prefix) ||
               (o->kind == LWB_KIND_MULTI && (!sets || make_sets(handles, locks, per, sets)))) {
        snprintf(why, n, "out of memory making %u lock handles", locks);
    } else {
        rc = acquire_and_hold(o, t, handles, o->kind == LWB_KIND_MULTI ? sets : NULL, NULL, x, r,
                              why, n);
    }
    if (x && x->nclients) { /* owner 1 of the first client */
        snprintf(id, sizeof id, "%s", lw_client_id(x->clients[0].c));
        snprintf(field, sizeof field, "%s:1", id);
    }
    if (x)
        free_clients(x); /* renewals stop; the locks stay, for the ceiling */
    free_sets(sets, locks / per);
    free_handles(handles, locks);
    if (x && !r->interrupted)
        r->lost = atomic_load(&x->lost);
    r->refused = x ? atomic_load(&x->refused) : 0;
    r->skipped = x ? atomic_load(&x->skipped) : 0;
    r->held = rc == 0 && !r->interrupted && r->acquired + r->refused + r->skipped == locks &&
              r->lost == 0 &&
              r->lag_p99_ns <= (uint64_t)o->lease_ms * 1000000u / 6;
    if (rc == 0 && !r->interrupted && !o->no_ceiling && !stop_signal() &&
        !flood_notice(t)) {
        /* Several clients: several owner fields; written again as one. */
        uint32_t asked = locks - r->skipped; /* see the head comment */
        struct flood_keys k = {prefix, field, asked,
                               r->lost || r->acquired < asked || o->clients > 1, id, o->kind};

        if (t->cluster) {
            count_masters(t, prefix, locks, r);
            rc = cluster_ceiling(o, t, &k, r, why, n);
        } else {
            rc = measure_ceiling(o, t, &k, &r->ceiling, why, n);
        }
        r->ceiling_measured = rc == 0 && !stop_signal();
    }
    if (field[0] && keep_keys(t)) {
        progress("stopped: the private redis-server's keys go with it");
    } else if (field[0] &&
               (progress("deleting the run's keys"),
                target_delete(t, prefix, locks, o->kind == LWB_KIND_READ)) &&
               rc == 0) {
        snprintf(why, n, "could not delete the run's keys");
        rc = -1;
    }
    free(x);
    return rc;
}

int sizing_run(const struct opts *o, struct target *t, uint32_t count, unsigned step,
               struct run_result *r, char *why, size_t n)
{
    if (o->kind == LWB_KIND_PERMIT)
        return permit_run(o, t, count, step, r, why, n);
    return lock_run(o, t, count, step, r, why, n);
}
