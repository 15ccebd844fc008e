/*
 * bench/lwhot.c - contended ("hot") locks: T threads loop on one lock name,
 * acquire (lw_lock_acquire: the watchdog) -> one increment of a shared
 * counter -> lw_unlock, for a fixed time; how many hand-overs a second the
 * lock makes, how long each acquire waited, and how fairly the threads
 * got it.
 *
 *   lwhot [--threads LIST] [--mode shared|each|both|rw|fair] [--duration-s S]
 *         [--warmup-s S] [--lease-ms MS] [--redis HOST:PORT] [--json FILE]
 *
 * Public API only (it links the shared library, as a user's program does).
 * Three modes: "shared", T threads sharing one lw_client, each with its own
 * lw_lock handle on the name (the owner is the thread, the default); and
 * "each", one lw_client per thread; and "rw" (not in "both"), a read-write
 * lock of one shared client: thread 0 takes the write lock, the T-1 others
 * the read lock, each reader adding to the counter atomically (readers
 * share) and the writer with a load and a store; the writer's own waits
 * are reported apart (is it starved by the readers?); and "fair" (not in
 * "both"), a fair lock, one client per thread as a fleet of processes
 * has, each waiter served in its queue's turn.  For each T and
 * mode, one run: a
 * warm-up, then the measured window, then the threads are told to stop and
 * joined (within DRAIN_S, or the program gives up: exit 2).
 *
 * What a run reports (every time is CLOCK_MONOTONIC):
 *   handoffs/s   acquires that returned inside the window, all threads,
 *                over the window's length; "vs 1 thread": against the
 *                same mode's 1-thread run of the same invocation, the
 *                baseline that saw the same machine
 *   wait         from calling lw_lock_acquire() to its return; every wait
 *                that overlaps the window is kept (those that returned in
 *                it, and those still waiting at its end, timed until they
 *                return after it), so a thread starved throughout still
 *                shows up; p50, p99, p99.9 and max, exact (every wait is
 *                kept and sorted).  A thread starved from the warm-up on
 *                waits until the stop lets it in: its wait is then about
 *                warm-up + window, a bound set by the run, not the lock
 *   fewest/most  acquires per thread inside the window, and fewest/most
 *                (1: even; 0: some thread never got it)
 *   CPU          over the window, % of a core: this process (the threads
 *                and the clients' engine threads), Redis (used_cpu_sys +
 *                used_cpu_user, INFO cpu), and everyone else on the
 *                machine (/proc/stat's busy time less those two; less
 *                this process only with --redis, whose server may be
 *                elsewhere): the load the run shared the cores with
 *   load         /proc/loadavg's 1-minute figure when the run started
 *                (JSON only; it includes the previous runs)
 * and checks, over every acquire of the run (warm-up and drain too): the
 * counter, incremented under the lock as a separate load and store, ends
 * equal to the number of acquires, and no two threads were ever inside at
 * once; no lock was lost (on_lost); no call failed.  A failed check makes
 * the exit status 1.
 *
 * Progress goes to stderr, the table to stdout.  Exit status: 0 every
 * check held, 1 one did not, 2 a failure (Redis unreachable, threads that
 * would not stop, no memory), 64 bad usage.  SIGINT or SIGTERM end the run
 * in progress early (its rows are still printed) and skip the rest.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel/lock.h>

#include "cli_util.h"
#include "redis_server.h"
#include "tool_util.h"

#define MAX_THREADS 64u
#define MAX_RUNS 64u
#define DRAIN_S 15 /* the longest the threads may take to stop after the window */

static const char usage_text[] =
    "usage: lwhot [options]\n"
    "T threads loop on one lock name: acquire (the watchdog) -> one increment of a\n"
    "shared counter -> unlock.  Reports hand-overs a second, the acquire's wait\n"
    "(p50, p99, p99.9, max) and the fewest and most acquires a thread got, and\n"
    "checks that the counter equals the acquires and that no lock was lost.\n"
    "\n"
    "  --threads LIST    thread counts, comma-separated (default 1,2,4,8,16; at\n"
    "                    most 64 each)\n"
    "  --mode MODE       shared: the threads share one client (each its own\n"
    "                    handle); each: one client per thread; both (default);\n"
    "                    rw: a read-write lock of one shared client, thread 1\n"
    "                    writing and the others reading (--threads 16: 15\n"
    "                    readers, 1 writer), the writer's waits reported apart;\n"
    "                    fair: a fair lock (Redisson's RFairLock), one client per\n"
    "                    thread as processes would have, served in its queue's order\n"
    "  --duration-s S    the measured window of each run (default 5)\n"
    "  --warmup-s S      looping before the window, not measured (default 1)\n"
    "  --lease-ms MS     the watchdog's lease (default: the library's, 30000)\n"
    "  -r, --redis HOST:PORT\n"
    "                    a running Redis (keys under lwhot:<pid>:... only, deleted\n"
    "                    afterwards); default: a private redis-server on a free\n"
    "                    loopback port, stopped afterwards\n"
    "  --json FILE       the results as JSON too\n"
    "  -h, --help\n"
    "\n"
    "Exit status: 0 every check held, 1 one did not, 2 failure, 64 usage.\n";

enum mode { MODE_SHARED = 1,
            MODE_EACH = 2,
            MODE_RW = 4,
            MODE_FAIR = 8 };

/* A client per thread, as a fleet of processes has. */
static int client_each(enum mode m)
{
    return m == MODE_EACH || m == MODE_FAIR;
}

struct opts {
    uint32_t threads[MAX_RUNS];
    unsigned nthreads;
    int modes; /* MODE_SHARED | MODE_EACH, or MODE_RW, or MODE_FAIR */
    double duration_s, warmup_s;
    uint32_t lease_ms; /* 0: the library's */
    const char *redis, *json;
    char host[256];
    int port;
};

struct run;

struct worker {
    pthread_t tid;
    struct run *run;
    struct lw_lock *lock;
    uint64_t *waits; /* ns, those overlapping the window */
    size_t nwaits, cap;
    uint64_t in_window; /* acquires that returned inside the window */
    uint64_t total;     /* every acquire */
    int err;            /* the first failed call's code, 0 */
    int reader;         /* MODE_RW: holds the read lock (thread 0 writes) */
};

struct run {
    /* set before the threads start */
    uint64_t begin_ns, end_ns; /* the window */
    pthread_barrier_t go;
    /* shared while they run */
    atomic_int stop;
    atomic_uint_fast64_t counter; /* incremented under the lock */
    atomic_int inside;            /* lock or write lock holders inside */
    atomic_int readers_inside;    /* MODE_RW: read lock holders inside */
    atomic_uint_fast64_t overlaps, lost, errors;
    /* the results */
    unsigned threads;
    enum mode mode;
    double window_s, handoffs_s, load;
    double self_cpu, redis_cpu, others_cpu; /* % of a core over the window; -1: unknown */
    uint64_t acquires, acquires_total, counter_end, nwaits;
    uint64_t p50, p99, p999, max; /* ns */
    uint64_t fewest, most;
    uint64_t writer_acquires, writer_p50, writer_p99, writer_max; /* MODE_RW, ns */
    int still_locked, interrupted, first_err;
    int ok;
};

static sigset_t stop_signals;

/* Sleep until CLOCK_MONOTONIC reaches t; 1 when SIGINT or SIGTERM came. */
static int sleep_until(uint64_t t)
{
    for (;;) {
        uint64_t now = cli_now_ns();
        struct timespec ts;

        if (now >= t)
            return 0;
        ts.tv_sec = (time_t)((t - now) / 1000000000u);
        ts.tv_nsec = (long)((t - now) % 1000000000u);
        if (sigtimedwait(&stop_signals, NULL, &ts) > 0)
            return 1;
    }
}

/* The machine's busy CPU seconds, all cores (/proc/stat: everything but
 * idle and iowait); -1 when it cannot say. */
static double machine_busy_s(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int k = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    long hz = sysconf(_SC_CLK_TCK);

    if (f)
        fclose(f);
    if (k < 4 || hz <= 0)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
}

static double loadavg1(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;

    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* CPU seconds at one instant: this process, Redis, the whole machine. */
struct cpu_sample {
    double self, redis, machine;
};

static void cpu_sample(redisContext *rc, struct cpu_sample *c)
{
    c->redis = cli_redis_cpu_s(rc);
    c->machine = machine_busy_s();
    c->self = cli_process_cpu_s();
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct run *run = arg;

    (void)owner;
    atomic_fetch_add(&run->lost, 1);
    fprintf(stderr, "lwhot: lock %.*s lost: %s\n", (int)len, name, lw_lost_reason_name(reason));
}

static void worker_fail(struct worker *w, const char *what, int rc)
{
    if (!w->err) {
        w->err = rc;
        fprintf(stderr, "lwhot: %s: %s\n", what, lw_strerror(rc));
    }
    atomic_fetch_add(&w->run->errors, 1);
}

static int keep_wait(struct worker *w, uint64_t ns)
{
    if (w->nwaits == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        uint64_t *p = realloc(w->waits, cap * sizeof *p);

        if (!p)
            return -1;
        w->waits = p;
        w->cap = cap;
    }
    w->waits[w->nwaits++] = ns;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;

    pthread_barrier_wait(&run->go);
    while (!atomic_load_explicit(&run->stop, memory_order_relaxed)) {
        uint64_t t0 = cli_now_ns(), t1, c;
        int rc = lw_lock_acquire(w->lock, NULL);

        t1 = cli_now_ns();
        if (rc) {
            worker_fail(w, "lw_lock_acquire", rc);
            break;
        }
        if (w->reader) {
            /* Readers share: an atomic add, and no writer inside. */
            atomic_fetch_add(&run->readers_inside, 1);
            if (atomic_load(&run->inside) != 0)
                atomic_fetch_add(&run->overlaps, 1);
            atomic_fetch_add(&run->counter, 1);
            atomic_fetch_sub(&run->readers_inside, 1);
        } else {
            /* The critical section: a load and a store, not one atomic
             * add, so that anyone else inside at once (a reader's add
             * too) would lose an increment. */
            if (atomic_fetch_add(&run->inside, 1) != 0 || atomic_load(&run->readers_inside))
                atomic_fetch_add(&run->overlaps, 1);
            c = atomic_load_explicit(&run->counter, memory_order_relaxed);
            atomic_store_explicit(&run->counter, c + 1, memory_order_relaxed);
            atomic_fetch_sub(&run->inside, 1);
        }
        w->total++;
        if (t1 >= run->begin_ns && t1 < run->end_ns)
            w->in_window++;
        if (t1 > run->begin_ns && t0 < run->end_ns && keep_wait(w, t1 - t0)) {
            worker_fail(w, "keeping the waits", LW_ENOMEM);
            lw_unlock(w->lock);
            break;
        }
        if ((rc = lw_unlock(w->lock)) != 0) {
            worker_fail(w, "lw_unlock", rc);
            break;
        }
    }
    return NULL;
}

/* MODE_RW: the writer's (thread 0's) waits apart; -1 without memory. */
static int summarize_writer(struct run *run, const struct worker *w)
{
    uint64_t *mine = malloc((w->nwaits ? w->nwaits : 1) * sizeof *mine);

    if (!mine)
        return -1;
    memcpy(mine, w->waits, w->nwaits * sizeof *mine);
    qsort(mine, w->nwaits, sizeof *mine, cli_cmp_u64);
    run->writer_acquires = w->in_window;
    run->writer_p50 = cli_quantile(mine, w->nwaits, 0.50);
    run->writer_p99 = cli_quantile(mine, w->nwaits, 0.99);
    run->writer_max = w->nwaits ? mine[w->nwaits - 1] : 0;
    free(mine);
    return 0;
}

/* The workers' figures into run; -1 when the waits cannot be merged. */
static int summarize(struct run *run, struct worker *w, unsigned n)
{
    uint64_t *all;
    size_t k = 0, total = 0;

    run->fewest = UINT64_MAX;
    for (unsigned i = 0; i < n; i++) {
        run->acquires += w[i].in_window;
        run->acquires_total += w[i].total;
        total += w[i].nwaits;
        run->fewest = w[i].in_window < run->fewest ? w[i].in_window : run->fewest;
        run->most = w[i].in_window > run->most ? w[i].in_window : run->most;
        if (w[i].err && !run->first_err)
            run->first_err = w[i].err;
    }
    if (run->mode == MODE_RW && summarize_writer(run, &w[0]))
        return -1;
    if (!(all = malloc((total ? total : 1) * sizeof *all)))
        return -1;
    for (unsigned i = 0; i < n; i++) {
        memcpy(all + k, w[i].waits, w[i].nwaits * sizeof *all);
        k += w[i].nwaits;
    }
    qsort(all, total, sizeof *all, cli_cmp_u64);
    run->nwaits = total;
    run->p50 = cli_quantile(all, total, 0.50);
    run->p99 = cli_quantile(all, total, 0.99);
    run->p999 = cli_quantile(all, total, 0.999);
    run->max = total ? all[total - 1] : 0;
    free(all);
    run->handoffs_s = (double)run->acquires / run->window_s;
    return 0;
}

/* Join every thread, within DRAIN_S after the stop; -1 when one would not. */
static int join_all(struct worker *w, unsigned n)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += DRAIN_S;
    for (unsigned i = 0; i < n; i++)
        if (pthread_timedjoin_np(w[i].tid, NULL, &deadline))
            return -1;
    return 0;
}

/* A fresh run: its name (a lock name of its own, in name[n]), counters 0. */
static void run_init(struct run *run, unsigned index, unsigned threads, enum mode mode,
                     char *name, size_t n)
{
    snprintf(name, n, "lwhot:%d:%08lx:%u", (int)getpid(),
             (unsigned long)(cli_now_ns() & 0xffffffffu), index);
    run->threads = threads;
    run->mode = mode;
    run->load = loadavg1();
    atomic_init(&run->stop, 0);
    atomic_init(&run->counter, 0);
    atomic_init(&run->inside, 0);
    atomic_init(&run->readers_inside, 0);
    atomic_init(&run->overlaps, 0);
    atomic_init(&run->lost, 0);
    atomic_init(&run->errors, 0);
}

/* The run's clients (one shared, or one per thread) and a handle per
 * thread on name; every client connected before the clock starts.  0, or
 * -1 (said). */
static int open_clients(const struct opts *o, struct run *run, const char *name,
                        struct lw_client **clients, struct worker *w)
{
    int each = client_each(run->mode), err;
    unsigned nclients = each ? run->threads : 1;
    struct lw_client_config cfg;

    lw_client_config_init(&cfg);
    cfg.host = o->host;
    cfg.port = o->port;
    if (o->lease_ms)
        cfg.watchdog_timeout_ms = o->lease_ms;
    cfg.on_lost = on_lost;
    cfg.lost_arg = run;
    for (unsigned i = 0; i < nclients; i++)
        if ((err = lw_client_new(&cfg, &clients[i])) != 0) {
            fprintf(stderr, "lwhot: lw_client_new: %s\n", lw_strerror(err));
            return -1;
        }
    for (unsigned i = 0; i < run->threads; i++) {
        struct lw_client *c = clients[each ? i : 0];

        w[i].run = run;
        w[i].reader = run->mode == MODE_RW && i > 0;
        if (run->mode == MODE_FAIR)
            err = lw_fair_lock_new(c, name, strlen(name), &w[i].lock);
        else if (run->mode != MODE_RW)
            err = lw_lock_new(c, name, strlen(name), &w[i].lock);
        else if (w[i].reader)
            err = lw_read_lock_new(c, name, strlen(name), &w[i].lock);
        else
            err = lw_write_lock_new(c, name, strlen(name), &w[i].lock);
        if (err) {
            fprintf(stderr, "lwhot: making a lock handle: %s\n", lw_strerror(err));
            return -1;
        }
    }
    for (unsigned i = 0; i < nclients; i++)
        if ((err = lw_is_locked(w[each ? i : 0].lock)) != 0) {
            char last[300];

            lw_client_last_error(clients[i], last, sizeof last);
            fprintf(stderr, "lwhot: Redis at %s:%d: %s%s%s\n", o->host, o->port,
                    err > 0 ? "the fresh lock name is held" : lw_strerror(err),
                    last[0] ? ": " : "", last);
            return -1;
        }
    return 0;
}

/* The threads, started and waiting at the barrier: 0; -1 when the barrier
 * could not be made (none started); 2 when a thread could not be started
 * (said; those started wait at the barrier for good: the caller exits). */
static int start_threads(struct run *run, struct worker *w)
{
    if (pthread_barrier_init(&run->go, NULL, run->threads + 1))
        return -1;
    for (unsigned i = 0; i < run->threads; i++)
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
            fprintf(stderr, "lwhot: pthread_create failed\n");
            return 2;
        }
    return 0;
}

/* The CPU over the window from its two samples, in % of a core. */
static void cpu_figures(const struct opts *o, struct run *run, const struct cpu_sample *c0,
                        const struct cpu_sample *c1)
{
    run->self_cpu = 100 * (c1->self - c0->self) / run->window_s;
    run->redis_cpu = c0->redis >= 0 && c1->redis >= 0
                         ? 100 * (c1->redis - c0->redis) / run->window_s
                         : -1;
    /* Everyone else on the machine: busy less this process, less Redis
     * when it is the private one (a given Redis may be elsewhere). */
    run->others_cpu = -1;
    if (c0->machine >= 0 && c1->machine >= 0 && (o->redis || run->redis_cpu >= 0))
        run->others_cpu = 100 * (c1->machine - c0->machine) / run->window_s - run->self_cpu -
                          (o->redis ? 0 : run->redis_cpu);
}

/* Let the threads go: the warm-up, then the window between two CPU
 * samples; stop and join them.  0, or 2 when one would not stop (said). */
static int measure(const struct opts *o, redisContext *rc, struct run *run, struct worker *w)
{
    struct cpu_sample c0, c1;
    uint64_t cut;

    run->begin_ns = cli_now_ns() + (uint64_t)(o->warmup_s * 1e9);
    run->end_ns = run->begin_ns + (uint64_t)(o->duration_s * 1e9);
    pthread_barrier_wait(&run->go);
    if (sleep_until(run->begin_ns))
        run->interrupted = 1;
    cpu_sample(rc, &c0);
    if (!run->interrupted && sleep_until(run->end_ns))
        run->interrupted = 1;
    cpu_sample(rc, &c1);
    cut = run->interrupted ? cli_now_ns() : run->end_ns;
    atomic_store(&run->stop, 1);
    if (join_all(w, run->threads)) {
        fprintf(stderr, "lwhot: the threads did not stop within %d s of the end\n", DRAIN_S);
        return 2;
    }
    pthread_barrier_destroy(&run->go);
    /* Interrupted: the window ends at the signal (the threads counted
     * what returned before the stop, a few acquires more at most). */
    run->window_s = cut > run->begin_ns ? (double)(cut - run->begin_ns) / 1e9 : 1e-9;
    cpu_figures(o, run, &c0, &c1);
    return 0;
}

/* The handles and clients freed, the run's keys deleted. */
static void close_run(redisContext *rc, const char *name, struct lw_client **clients,
                      unsigned nclients, struct worker *w, unsigned threads)
{
    for (unsigned i = 0; i < threads; i++) {
        lw_lock_free(w[i].lock);
        free(w[i].waits);
    }
    for (unsigned i = 0; i < nclients; i++)
        lw_client_free(clients[i]);
    if (rc) {
        redisReply *r = redisCommand(rc, "DEL %s redisson_lock_token:{%s}", name, name);

        if (r)
            freeReplyObject(r);
    }
}

/*
 * One run of `threads` threads in `mode` on a fresh lock name.  0 (run
 * filled in, checks in run->ok), or 2: a failure (said), after which the
 * program must exit at once (threads may still be running).
 */
static int run_one(const struct opts *o, redisContext *rc, unsigned index, unsigned threads,
                   enum mode mode, struct run *run)
{
    unsigned nclients = client_each(mode) ? threads : 1;
    struct lw_client *clients[MAX_THREADS] = {0};
    struct worker w[MAX_THREADS];
    char name[128];
    int failed, started;

    memset(w, 0, sizeof w);
    run_init(run, index, threads, mode, name, sizeof name);
    failed = open_clients(o, run, name, clients, w) != 0;
    if (!failed && (started = start_threads(run, w)) != 0) {
        if (started == 2)
            return 2; /* they wait at the barrier for good: the caller exits */
        failed = 1;
    }
    if (!failed) {
        if (measure(o, rc, run, w))
            return 2;
        run->still_locked = lw_is_locked(w[0].lock);
        if (run->still_locked == 0 && mode == MODE_RW && threads > 1)
            run->still_locked = lw_is_locked(w[1].lock); /* the read lock */
        if (summarize(run, w, threads)) {
            fprintf(stderr, "lwhot: out of memory\n");
            failed = 1;
        }
    }
    close_run(rc, name, clients, nclients, w, threads);
    if (failed)
        return 2;
    run->counter_end = atomic_load(&run->counter);
    run->ok = run->counter_end == run->acquires_total && !atomic_load(&run->overlaps) &&
              !atomic_load(&run->lost) && !atomic_load(&run->errors) && run->still_locked == 0;
    return 0;
}

static const char *fmt_pct(char *buf, size_t n, double pct)
{
    if (pct < 0)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%.0f%%", pct);
    return buf;
}

static const char *mode_name(enum mode m)
{
    return m == MODE_SHARED ? "shared" : m == MODE_EACH ? "each"
                                     : m == MODE_RW     ? "rw"
                                                        : "fair";
}

/* MODE_RW's runs: the writer's waits, apart from the table's (which are
 * every thread's, mostly the readers'). */
static void print_writers(const struct run *runs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        char a[32], b[32], c[32], k[32];

        if (r->mode != MODE_RW)
            continue;
        printf("\nrw, %u threads (1 writer, %u readers, one client): the writer acquired %s "
               "times in the window, waiting p50 %s, p99 %s, max %s\n",
               r->threads, r->threads - 1, cli_fmt_count(k, sizeof k, r->writer_acquires),
               cli_fmt_ms(a, sizeof a, r->writer_p50), cli_fmt_ms(b, sizeof b, r->writer_p99),
               cli_fmt_ms(c, sizeof c, r->writer_max));
    }
}

/* What failed in a run, or "ok". */
static const char *fmt_checks(char *buf, size_t n, const struct run *r)
{
    struct tool_checks c;

    tool_checks_init(&c, buf, n);
    if (r->counter_end != r->acquires_total)
        tool_checks_add(&c, "counter %" PRIu64 " != %" PRIu64 " acquires", r->counter_end,
                        r->acquires_total);
    if (atomic_load(&r->overlaps))
        tool_checks_add(&c, "%" PRIuFAST64 " overlaps", atomic_load(&r->overlaps));
    if (atomic_load(&r->lost))
        tool_checks_add(&c, "%" PRIuFAST64 " lost", atomic_load(&r->lost));
    if (atomic_load(&r->errors))
        tool_checks_add(&c, "%" PRIuFAST64 " calls failed (%s)", atomic_load(&r->errors),
                        lw_strerror(r->first_err));
    if (r->still_locked)
        tool_checks_add(&c, "%s", r->still_locked > 0 ? "left locked" : "lw_is_locked failed");
    return tool_checks_end(&c);
}

/* handoffs/s against the same mode's 1-thread run of this invocation (the
 * baseline every row is compared with: it saw the same machine); -1 when
 * there is none. */
static double vs_one(const struct run *runs, unsigned n, const struct run *r)
{
    for (unsigned i = 0; i < n; i++)
        if (runs[i].threads == 1 && runs[i].mode == r->mode && runs[i].handoffs_s > 0)
            return r->handoffs_s / runs[i].handoffs_s;
    return -1;
}

static void print_table(const struct opts *o, const struct run *runs, unsigned n)
{
    printf("| threads | clients | handoffs/s | vs 1 thread | wait p50 | wait p99 | wait p99.9 | wait max | "
           "fewest / most per thread | fewest/most | CPU: lwhot | Redis | others | checks |\n"
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int pass = 0; pass < 4; pass++) {
        /* Grouped by mode, in the order the threads were asked for. */
        enum mode m = pass == 0 ? MODE_SHARED : pass == 1 ? MODE_EACH
                                            : pass == 2   ? MODE_RW
                                                          : MODE_FAIR;

        if (!(o->modes & m))
            continue;
        for (unsigned i = 0; i < n; i++) {
            const struct run *r = &runs[i];
            char hs[32], a[32], b[32], c[32], d[32], f[32], mo[32], chk[256], fm[80], rat[16];
            char cs[16], cr[16], co[16], v1[16];
            double ratio = vs_one(runs, n, r);

            if (r->mode != m)
                continue;
            if (r->threads > 1) {
                snprintf(fm, sizeof fm, "%s / %s", cli_fmt_count(f, sizeof f, r->fewest),
                         cli_fmt_count(mo, sizeof mo, r->most));
                snprintf(rat, sizeof rat, "%.3f",
                         r->most ? (double)r->fewest / (double)r->most : 0.0);
            } else {
                snprintf(fm, sizeof fm, "—");
                snprintf(rat, sizeof rat, "—");
            }
            if (ratio < 0)
                snprintf(v1, sizeof v1, "—");
            else
                snprintf(v1, sizeof v1, "%.2f", ratio);
            printf("| %u | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%s |\n",
                   r->threads,
                   client_each(m) ? (r->threads > 1 ? (m == MODE_FAIR ? "1 each, fair" : "1 each")
                                                    : (m == MODE_FAIR ? "1, fair" : "1"))
                                  : (m == MODE_RW ? "1 shared, rw" : "1 shared"),
                   cli_fmt_count(hs, sizeof hs, (uint64_t)(r->handoffs_s + 0.5)), v1,
                   cli_fmt_ms(a, sizeof a, r->p50), cli_fmt_ms(b, sizeof b, r->p99),
                   cli_fmt_ms(c, sizeof c, r->p999), cli_fmt_ms(d, sizeof d, r->max), fm, rat,
                   fmt_pct(cs, sizeof cs, r->self_cpu), fmt_pct(cr, sizeof cr, r->redis_cpu),
                   fmt_pct(co, sizeof co, r->others_cpu), fmt_checks(chk, sizeof chk, r),
                   r->interrupted ? " (interrupted)" : "");
        }
    }
}

static int write_json(const struct opts *o, const struct run *runs, unsigned n)
{
    FILE *f = tool_json_open("lwhot", o->json);

    if (!f)
        return -1;
    fprintf(f,
            "{\n  \"tool\": \"lwhot\",\n  \"redis\": \"%s\",\n  \"lease_ms\": %u,\n"
            "  \"duration_s\": %g,\n  \"warmup_s\": %g,\n  \"runs\": [\n",
            o->redis ? o->redis : "private", o->lease_ms ? o->lease_ms : LW_DEFAULT_WATCHDOG_TIMEOUT_MS,
            o->duration_s, o->warmup_s);
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        char chk[256];

        fprintf(f,
                "    {\"threads\": %u, \"mode\": \"%s\", \"clients\": %u, \"window_s\": %.3f, "
                "\"acquires\": %" PRIu64 ", \"handoffs_per_s\": %.1f, \"vs_one_thread\": %.3f, "
                "\"waits\": %" PRIu64 ", \"wait_p50_ms\": %.3f, \"wait_p99_ms\": %.3f, "
                "\"wait_p999_ms\": %.3f, \"wait_max_ms\": %.3f, "
                "\"fewest\": %" PRIu64 ", \"most\": %" PRIu64 ", "
                "\"acquires_total\": %" PRIu64 ", \"counter\": %" PRIu64 ", "
                "\"overlaps\": %" PRIuFAST64 ", \"lost\": %" PRIuFAST64 ", \"errors\": %" PRIuFAST64
                ", \"self_cpu_pct\": %.1f, \"redis_cpu_pct\": %.1f, \"others_cpu_pct\": %.1f, "
                "\"writer_acquires\": %" PRIu64 ", \"writer_wait_p50_ms\": %.3f, "
                "\"writer_wait_p99_ms\": %.3f, \"writer_wait_max_ms\": %.3f, "
                "\"loadavg1\": %.2f, \"interrupted\": %s, "
                "\"ok\": %s, \"checks\": \"%s\"}%s\n",
                r->threads, mode_name(r->mode), client_each(r->mode) ? r->threads : 1,
                r->window_s, r->acquires, r->handoffs_s, vs_one(runs, n, r), r->nwaits, (double)r->p50 / 1e6,
                (double)r->p99 / 1e6, (double)r->p999 / 1e6, (double)r->max / 1e6, r->fewest,
                r->most, r->acquires_total, r->counter_end, atomic_load(&r->overlaps),
                atomic_load(&r->lost), atomic_load(&r->errors), r->self_cpu, r->redis_cpu,
                r->others_cpu, r->writer_acquires, (double)r->writer_p50 / 1e6,
                (double)r->writer_p99 / 1e6, (double)r->writer_max / 1e6, r->load,
                r->interrupted ? "true" : "false", r->ok ? "true" : "false",
                fmt_checks(chk, sizeof chk, r), i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return tool_json_close("lwhot", o->json, f);
}

/* "1,2,4": each in 1..MAX_THREADS; 0, or -1. */
static int parse_threads(const char *s, struct opts *o)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    o->nthreads = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->nthreads * 2 >= MAX_RUNS ||
            cli_parse_u32(tok, 1, MAX_THREADS, &o->threads[o->nthreads]))
            return -1;
        o->nthreads++;
    }
    return o->nthreads ? 0 : -1;
}

enum { O_THREADS = 256,
       O_MODE,
       O_DURATION,
       O_WARMUP,
       O_LEASE,
       O_JSON,
       O_REDIS = 'r' };

static const struct option long_opts[] = {
    {"threads", required_argument, NULL, O_THREADS},
    {"mode", required_argument, NULL, O_MODE},
    {"duration-s", required_argument, NULL, O_DURATION},
    {"warmup-s", required_argument, NULL, O_WARMUP},
    {"lease-ms", required_argument, NULL, O_LEASE},
    {"redis", required_argument, NULL, O_REDIS},
    {"json", required_argument, NULL, O_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* 0 to run, 1 help shown, 64 bad usage (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    int opt;

    memset(o, 0, sizeof *o);
    parse_threads("1,2,4,8,16", o);
    o->modes = MODE_SHARED | MODE_EACH;
    o->duration_s = 5;
    o->warmup_s = 1;
    opterr = 0; /* our own messages, one line each */
    while ((opt = getopt_long(argc, argv, ":r:h", long_opts, NULL)) != -1) {
        switch (opt) {
        case O_THREADS:
            if (parse_threads(optarg, o))
                return tool_usage_error("lwhot", "--threads: '%s' is not a list of counts 1..64 "
                                                 "(at most 32 of them)",
                                        optarg);
            break;
        case O_MODE:
            if (!strcmp(optarg, "shared"))
                o->modes = MODE_SHARED;
            else if (!strcmp(optarg, "each"))
                o->modes = MODE_EACH;
            else if (!strcmp(optarg, "both"))
                o->modes = MODE_SHARED | MODE_EACH;
            else if (!strcmp(optarg, "rw"))
                o->modes = MODE_RW;
            else if (!strcmp(optarg, "fair"))
                o->modes = MODE_FAIR;
            else
                return tool_usage_error(
                    "lwhot", "--mode: '%s' is not shared, each, both, rw or fair", optarg);
            break;
        case O_DURATION:
            if (cli_parse_seconds(optarg, 0.1, 3600, &o->duration_s))
                return tool_usage_error("lwhot", "--duration-s: '%s' is not 0.1..3600 seconds", optarg);
            break;
        case O_WARMUP:
            if (cli_parse_seconds(optarg, 0, 600, &o->warmup_s))
                return tool_usage_error("lwhot", "--warmup-s: '%s' is not 0..600 seconds", optarg);
            break;
        case O_LEASE:
            if (cli_parse_u32(optarg, LW_MIN_LEASE_MS, LW_MAX_LEASE_MS, &o->lease_ms))
                return tool_usage_error("lwhot", "--lease-ms: '%s' is out of range", optarg);
            break;
        case O_REDIS:
            if (cli_parse_host_port(optarg, o->host, sizeof o->host, &o->port))
                return tool_usage_error("lwhot", "--redis: '%s' is not HOST:PORT", optarg);
            o->redis = optarg;
            break;
        case O_JSON: o->json = optarg; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default: return tool_bad_option("lwhot", opt, argv);
        }
    }
    if (optind < argc)
        return tool_usage_error("lwhot", "unexpected argument '%s'", argv[optind]);
    return 0;
}

/* The Redis to run on, the given one or a private redis-server, and a
 * plain connection to it in *rc; SIGINT and SIGTERM blocked in every
 * thread (they inherit it), taken by sleep_until(): after the server
 * started, which must not inherit it.  0, or 2 (said). */
static int open_redis(struct opts *o, struct redis_server *server, redisContext **rc)
{
    if (!o->redis) {
        if (redis_server_start(server, NULL)) {
            fprintf(stderr, "lwhot: could not start a private redis-server (is it installed?)\n");
            return 2;
        }
        snprintf(o->host, sizeof o->host, "127.0.0.1");
        o->port = server->port;
    }
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    if (!(*rc = cli_connect(o->host, o->port))) {
        fprintf(stderr, "lwhot: Redis at %s:%d does not answer\n", o->host, o->port);
        if (server->pid)
            redis_server_stop(server);
        return 2;
    }
    return 0;
}

/* Every run asked for, by thread count then mode, until a signal; how
 * many were made.  A failed run exits at once: threads may still be in
 * the library. */
static unsigned run_all(const struct opts *o, redisContext *rc, struct redis_server *server,
                        struct run *runs)
{
    unsigned n = 0;
    int stop = 0;

    for (unsigned i = 0; i < o->nthreads && !stop; i++)
        for (int m = MODE_SHARED; m <= MODE_FAIR && !stop; m <<= 1) {
            struct run *r = &runs[n];
            char hs[32], p99[32], mx[32], chk[256];

            if (!(o->modes & m))
                continue;
            fprintf(stderr, "lwhot: %u thread%s, %s...\n", o->threads[i],
                    o->threads[i] > 1 ? "s" : "",
                    m == MODE_SHARED ? "one shared client"
                    : m == MODE_EACH ? "a client each"
                    : m == MODE_RW   ? "one shared client, 1 writing, the others reading"
                                     : "a client each, a fair lock");
            if (run_one(o, rc, n, o->threads[i], (enum mode)m, r)) {
                fflush(stdout);
                if (server->pid)
                    redis_server_stop(server);
                _exit(2); /* threads may still be in the library */
            }
            n++;
            stop = r->interrupted;
            fprintf(stderr, "lwhot:   %s handoffs/s, wait p99 %s, max %s: %s\n",
                    cli_fmt_count(hs, sizeof hs, (uint64_t)(r->handoffs_s + 0.5)),
                    cli_fmt_ms(p99, sizeof p99, r->p99), cli_fmt_ms(mx, sizeof mx, r->max),
                    fmt_checks(chk, sizeof chk, r));
        }
    return n;
}

int main(int argc, char **argv)
{
    static struct run runs[MAX_RUNS];
    struct redis_server server = {0};
    struct opts o;
    redisContext *rc = NULL;
    unsigned n;
    char load[128] = "?";
    int status;

    if ((status = parse_args(argc, argv, &o)) != 0)
        return status == 1 ? 0 : status;
    if (open_redis(&o, &server, &rc))
        return 2;
    cli_load_average(load, sizeof load);
    printf("lwhot: Redis %s:%d (%s), watchdog lease %u ms, %g s measured after %g s of "
           "warm-up per run; load average at the start: %s\n\n",
           o.host, o.port, o.redis ? "given" : "private redis-server",
           o.lease_ms ? o.lease_ms : LW_DEFAULT_WATCHDOG_TIMEOUT_MS, o.duration_s, o.warmup_s,
           load);
    fflush(stdout);
    n = run_all(&o, rc, &server, runs);
    print_table(&o, runs, n);
    print_writers(runs, n);
    status = 0;
    for (unsigned i = 0; i < n; i++)
        if (!runs[i].ok)
            status = 1;
    cli_load_average(load, sizeof load);
    printf("\n%s; load average at the end: %s\n",
           status ? "CHECKS FAILED (see the checks column)"
                  : "checks: in every run the counter equals the acquires, no two threads were "
                    "inside at once, no lock was lost, no call failed",
           load);
    if (o.json && write_json(&o, runs, n))
        status = 2;
    if (rc)
        redisFree(rc);
    if (server.pid)
        redis_server_stop(&server);
    return status;
}
