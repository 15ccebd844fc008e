/*
 * Benchmarks of the timing wheel against two baselines, in one binary and
 * one run: a pointer-based binary heap (heap.c, libuv's shape) and libev's
 * own timers (ev_timer_start/ev_timer_stop on its 4-heap).
 *
 * Shapes (see the design brief): N timers are pending, deadlines spread
 * uniformly over a 30 s lease, and
 *   schedule  - schedule BATCH timers that a random pick left idle
 *   cancel    - cancel BATCH random pending timers
 *   pair      - "churn": cancel a random pending timer and schedule it again
 *               with a fresh deadline (an unlock, then a lock elsewhere)
 *   expire    - all N due within 4 ticks: advance through them
 *   renew     - the watchdog's steady state: each due timer is scheduled
 *               again at +lease/3
 *   xthread   - another thread schedules; the owner takes them in
 * Every case reports ns_per_op: measured time / operations.  Each case is
 * written once against `struct impl`; called with a static const impl the
 * compiler makes the calls direct.  One xorshift seed feeds all three.
 */
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/wheel.h>

#include "heap.h"
#include "shim.h"
#include "xorshift.h"

#define BATCH 1024
#define LEASE_NS 30000000000ull /* 30 s */
#define TICK_NS 100000000ull    /* 100 ms */
#define SLOTS 512
#define SEED 0x1ea5e5eedull

/* ---- the three implementations behind one face ---- */

struct population {
    size_t n;
    uint64_t now; /* frozen for churn; moves forward for expire and renew */
    void *impl_state;
    size_t fired;        /* timers handled by the last expire */
    uint64_t advance_ns; /* wheel only: time inside lw_wheel_advance */
};

struct impl {
    void (*open)(struct population *p, size_t capacity);
    void (*close)(struct population *p);
    void (*schedule)(struct population *p, size_t i, uint64_t deadline);
    void (*cancel)(struct population *p, size_t i);
    /* Handle everything due by p->now; with `period`, schedule each again
     * at its deadline + period.  Counts into p->fired. */
    void (*expire)(struct population *p, uint64_t period);
};

/* Allocation failure in a benchmark is not worth a code path. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (!p)
        abort();
    return p;
}

static struct lw_wheel *bench_wheel_new(uint64_t start_ns)
{
    struct lw_wheel_config cfg;
    struct lw_wheel *wheel;

    lw_wheel_config_init(&cfg);
    cfg.tick_ns = TICK_NS;
    cfg.slots = SLOTS;
    cfg.start_ns = start_ns;
    if (lw_wheel_new(&cfg, &wheel))
        abort();
    return wheel;
}

/* wheel */

struct wheel_state {
    struct lw_wheel *wheel;
    struct lw_timer *timers;
};

static void wheel_open(struct population *p, size_t capacity)
{
    struct wheel_state *s = xcalloc(1, sizeof *s);

    s->wheel = bench_wheel_new(p->now);
    s->timers = xcalloc(capacity, sizeof *s->timers);
    p->impl_state = s;
}

static void wheel_close(struct population *p)
{
    struct wheel_state *s = p->impl_state;

    lw_wheel_free(s->wheel);
    free(s->timers);
    free(s);
}

static void wheel_schedule(struct population *p, size_t i, uint64_t deadline)
{
    struct wheel_state *s = p->impl_state;

    lw_wheel_schedule(s->wheel, &s->timers[i], deadline);
}

static void wheel_cancel(struct population *p, size_t i)
{
    struct wheel_state *s = p->impl_state;

    lw_wheel_cancel(s->wheel, &s->timers[i]);
}

static void wheel_expire(struct population *p, uint64_t period)
{
    struct wheel_state *s = p->impl_state;
    struct lw_timer_list due = {0};
    struct lw_timer *t;
    uint64_t t0 = lw_clock_now();

    lw_wheel_advance(s->wheel, p->now, &due);
    p->advance_ns += lw_clock_now() - t0;
    p->fired += due.count;
    while ((t = lw_timer_list_pop(&due)))
        if (period)
            lw_wheel_schedule(s->wheel, t, lw_timer_deadline(t) + period);
}

static const struct impl wheel_impl = {
    wheel_open, wheel_close, wheel_schedule, wheel_cancel, wheel_expire,
};

/* binary heap */

struct heap_state {
    struct heap heap;
    struct heap_timer *timers;
};

static void heap_open(struct population *p, size_t capacity)
{
    struct heap_state *s = xcalloc(1, sizeof *s);

    s->timers = xcalloc(capacity, sizeof *s->timers);
    p->impl_state = s;
}

static void heap_close(struct population *p)
{
    struct heap_state *s = p->impl_state;

    free(s->timers);
    free(s);
}

static void heap_impl_schedule(struct population *p, size_t i, uint64_t deadline)
{
    struct heap_state *s = p->impl_state;

    heap_schedule(&s->heap, &s->timers[i], deadline);
}

static void heap_impl_cancel(struct population *p, size_t i)
{
    struct heap_state *s = p->impl_state;

    heap_cancel(&s->heap, &s->timers[i]);
}

static void heap_expire(struct population *p, uint64_t period)
{
    struct heap_state *s = p->impl_state;
    struct heap_timer *t;

    while ((t = heap_pop_due(&s->heap, p->now))) {
        p->fired++;
        if (period)
            heap_schedule(&s->heap, t, t->deadline + period);
    }
}

static const struct impl heap_impl = {
    heap_open, heap_close, heap_impl_schedule, heap_impl_cancel, heap_expire,
};

/* libev: deadlines become `after` relative to the loop's frozen clock; p->now
 * is that clock's origin.  Only schedule, cancel, pair and expire: libev's
 * clock cannot be moved by hand, so expire starts timers already due. */

struct ev_state {
    struct ev_loop *loop;
    ev_timer *timers;
    struct population *p;
};

static void ev_fired(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct ev_state *s = ev_userdata(loop);

    (void)w;
    (void)revents;
    s->p->fired++;
}

static void ev_open(struct population *p, size_t capacity)
{
    struct ev_state *s = xcalloc(1, sizeof *s);

    s->loop = ev_loop_new(EVFLAG_AUTO);
    s->timers = xcalloc(capacity, sizeof *s->timers);
    if (!s->loop)
        abort();
    for (size_t i = 0; i < capacity; i++)
        ev_timer_init(&s->timers[i], ev_fired, 0., 0.);
    s->p = p;
    ev_set_userdata(s->loop, s);
    p->impl_state = s;
}

static void ev_close(struct population *p)
{
    struct ev_state *s = p->impl_state;

    for (size_t i = 0; i < p->n; i++)
        ev_timer_stop(s->loop, &s->timers[i]);
    ev_loop_destroy(s->loop);
    free(s->timers);
    free(s);
}

static void ev_schedule(struct population *p, size_t i, uint64_t deadline)
{
    struct ev_state *s = p->impl_state;
    ev_timer *w = &s->timers[i];

    ev_timer_set(w, ((double)deadline - (double)p->now) * 1e-9, 0.);
    ev_timer_start(s->loop, w);
}

static void ev_cancel(struct population *p, size_t i)
{
    struct ev_state *s = p->impl_state;

    ev_timer_stop(s->loop, &s->timers[i]);
}

static void ev_expire(struct population *p, uint64_t period)
{
    struct ev_state *s = p->impl_state;

    (void)period;
    ev_run(s->loop, EVRUN_NOWAIT);
}

static const struct impl ev_impl = {
    ev_open, ev_close, ev_schedule, ev_cancel, ev_expire,
};

/* ---- helpers ---- */

#define ALWAYS_INLINE static inline __attribute__((always_inline))

struct tally {
    uint64_t ns, ops;
};

static double per_op(uint64_t ns, uint64_t ops)
{
    return ops ? (double)ns / (double)ops : 0;
}

static void report(struct lwb_state *st, const struct tally *t)
{
    lwb_set_items(st, (int64_t)t->ops);
    lwb_counter(st, "ns_per_op", per_op(t->ns, t->ops));
}

/* The wheel's expire and renew also say how much of ns_per_op is the
 * advance itself; the rest is taking the timers off the due list. */
static void report_advance(struct lwb_state *st, const struct population *p,
                           const struct tally *t)
{
    if (p->advance_ns)
        lwb_counter(st, "advance_ns", per_op(p->advance_ns, t->ops));
}

static void iteration_done(struct lwb_state *st, struct tally *t, uint64_t ns, uint64_t ops)
{
    lwb_set_iteration_time(st, (double)ns * 1e-9);
    t->ns += ns;
    t->ops += ops;
}

static uint64_t fresh_deadline(struct population *p, struct xorshift *rng)
{
    return p->now + 1 + xorshift_below(rng, LEASE_NS);
}

/* An empty population of n timers, its clock at now. */
ALWAYS_INLINE void open_population(const struct impl *im, struct population *p, size_t n)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->now = lw_clock_now();
    im->open(p, n);
}

/* N pending timers, deadlines spread over the lease. */
ALWAYS_INLINE void populate(const struct impl *im, struct population *p, size_t n,
                            struct xorshift *rng)
{
    open_population(im, p, n);
    for (size_t i = 0; i < n; i++)
        im->schedule(p, i, fresh_deadline(p, rng));
}

/* BATCH distinct random indices below n (all of them when n <= BATCH). */
static size_t pick_distinct(size_t *picked, uint32_t *stamp, uint32_t round, size_t n,
                            struct xorshift *rng)
{
    size_t k = 0;

    if (n <= BATCH) {
        for (; k < n; k++)
            picked[k] = k;
        return k;
    }
    while (k < BATCH) {
        size_t i = xorshift_below(rng, n);

        if (stamp[i] != round) {
            stamp[i] = round;
            picked[k++] = i;
        }
    }
    return k;
}

/* ---- schedule, cancel, pair ---- */

enum churn_shape { SHAPE_SCHEDULE, SHAPE_CANCEL, SHAPE_PAIR };

ALWAYS_INLINE void run_churn(struct lwb_state *st, const struct impl *im,
                             enum churn_shape shape)
{
    size_t n = (size_t)lwb_arg(st, 0);
    struct xorshift rng = xorshift_seed(SEED);
    struct population p;
    struct tally tally = {0};
    size_t picked[BATCH];
    uint32_t *stamp = xcalloc(n, sizeof *stamp);
    uint32_t round = 0;

    populate(im, &p, n, &rng);
    while (lwb_keep_running(st)) {
        size_t k = 0;
        uint64_t t0, t1;

        if (shape != SHAPE_PAIR) {
            k = pick_distinct(picked, stamp, ++round, n, &rng);
            if (shape == SHAPE_SCHEDULE)
                for (size_t j = 0; j < k; j++)
                    im->cancel(&p, picked[j]);
        }
        t0 = lw_clock_now();
        switch (shape) {
        case SHAPE_SCHEDULE:
            for (size_t j = 0; j < k; j++)
                im->schedule(&p, picked[j], fresh_deadline(&p, &rng));
            break;
        case SHAPE_CANCEL:
            for (size_t j = 0; j < k; j++)
                im->cancel(&p, picked[j]);
            break;
        case SHAPE_PAIR:
            for (k = 0; k < BATCH; k++) {
                size_t i = xorshift_below(&rng, n);

                im->cancel(&p, i);
                im->schedule(&p, i, fresh_deadline(&p, &rng));
            }
            break;
        }
        t1 = lw_clock_now();
        if (shape == SHAPE_CANCEL)
            for (size_t j = 0; j < k; j++)
                im->schedule(&p, picked[j], fresh_deadline(&p, &rng));
        iteration_done(st, &tally, t1 - t0, k);
    }
    report(st, &tally);
    im->close(&p);
    free(stamp);
}

/* ---- expire: N timers due within 4 ticks ---- */

ALWAYS_INLINE void run_expire(struct lwb_state *st, const struct impl *im, bool ev)
{
    size_t n = (size_t)lwb_arg(st, 0);
    struct xorshift rng = xorshift_seed(SEED);
    struct population p;
    struct tally tally = {0};

    open_population(im, &p, n);
    while (lwb_keep_running(st)) {
        uint64_t t0, t1;

        /* libev's clock stands still between runs: start them already due. */
        for (size_t i = 0; i < n; i++)
            im->schedule(&p, i, ev ? p.now - 1 - xorshift_below(&rng, 4 * TICK_NS)
                                   : p.now + 1 + xorshift_below(&rng, 4 * TICK_NS));
        if (!ev)
            p.now += 4 * TICK_NS;
        p.fired = 0;
        t0 = lw_clock_now();
        im->expire(&p, 0);
        t1 = lw_clock_now();
        if (p.fired != n) {
            lwb_error(st, "not every timer expired");
            break;
        }
        iteration_done(st, &tally, t1 - t0, n);
    }
    report(st, &tally);
    report_advance(st, &p, &tally);
    im->close(&p);
}

/* ---- renew: each due timer again at +lease/3, one tick at a time ---- */

ALWAYS_INLINE void run_renew(struct lwb_state *st, const struct impl *im)
{
    enum { TICKS_PER_ITERATION = 10 };
    size_t n = (size_t)lwb_arg(st, 0);
    uint64_t period = LEASE_NS / 3;
    struct xorshift rng = xorshift_seed(SEED);
    struct population p;
    struct tally tally = {0};

    open_population(im, &p, n);
    for (size_t i = 0; i < n; i++)
        im->schedule(&p, i, p.now + 1 + xorshift_below(&rng, period));
    while (lwb_keep_running(st)) {
        uint64_t t0 = lw_clock_now(), t1;

        p.fired = 0;
        for (int k = 0; k < TICKS_PER_ITERATION; k++) {
            p.now += TICK_NS;
            im->expire(&p, period);
        }
        t1 = lw_clock_now();
        iteration_done(st, &tally, t1 - t0, p.fired);
    }
    report(st, &tally);
    report_advance(st, &p, &tally);
    im->close(&p);
}

/* ---- xthread: a producer thread schedules, the owner takes them in ---- */

struct xthread {
    struct lw_wheel *wheel;
    struct lw_timer *timers; /* BATCH of them, for the producer */
    struct heap heap;        /* the baseline: a heap behind a mutex */
    struct heap_timer *heap_timers;
    pthread_mutex_t lock;
    bool use_heap;
    uint64_t now;
    _Atomic uint64_t go, done; /* iteration numbers */
    uint64_t push_ns;          /* producer's time for the last batch */
    _Atomic bool stop;
};

static void *xthread_producer(void *arg)
{
    struct xthread *x = arg;
    struct xorshift rng = xorshift_seed(SEED);
    uint64_t seen = 0;

    for (;;) {
        uint64_t go, t0;

        while ((go = atomic_load_explicit(&x->go, memory_order_acquire)) == seen)
            if (atomic_load_explicit(&x->stop, memory_order_relaxed))
                return NULL;
        seen = go;
        t0 = lw_clock_now();
        for (size_t i = 0; i < BATCH; i++) {
            uint64_t deadline = x->now + 1 + xorshift_below(&rng, LEASE_NS);

            if (x->use_heap) {
                pthread_mutex_lock(&x->lock);
                heap_schedule(&x->heap, &x->heap_timers[i], deadline);
                pthread_mutex_unlock(&x->lock);
            } else {
                lw_wheel_schedule_remote(x->wheel, &x->timers[i], deadline);
            }
        }
        x->push_ns = lw_clock_now() - t0;
        atomic_store_explicit(&x->done, seen, memory_order_release);
    }
}

static void run_xthread(struct lwb_state *st, bool use_heap)
{
    size_t n = (size_t)lwb_arg(st, 0);
    struct xorshift rng = xorshift_seed(SEED ^ 1);
    struct xthread x = {.use_heap = use_heap};
    struct lw_timer *pending = xcalloc(n, sizeof *pending);
    struct heap_timer *heap_pending = xcalloc(n, sizeof *heap_pending);
    struct tally tally = {0};
    uint64_t owner_ns = 0, producer_ns = 0, iteration = 0;
    pthread_t thread;

    x.now = lw_clock_now();
    x.wheel = bench_wheel_new(x.now);
    x.timers = xcalloc(BATCH, sizeof *x.timers);
    x.heap_timers = xcalloc(BATCH, sizeof *x.heap_timers);
    pthread_mutex_init(&x.lock, NULL);
    for (size_t i = 0; i < n; i++) {
        uint64_t deadline = x.now + 1 + xorshift_below(&rng, LEASE_NS);

        if (use_heap)
            heap_schedule(&x.heap, &heap_pending[i], deadline);
        else
            lw_wheel_schedule(x.wheel, &pending[i], deadline);
    }
    pthread_create(&thread, NULL, xthread_producer, &x);

    while (lwb_keep_running(st)) {
        struct lw_timer_list due = {0};
        uint64_t t0, take_ns;

        atomic_store_explicit(&x.go, ++iteration, memory_order_release);
        while (atomic_load_explicit(&x.done, memory_order_acquire) != iteration)
            ;
        /* The owner takes the batch in (the heap baseline has nothing to
         * take: the producer already paid under the lock). */
        t0 = lw_clock_now();
        if (!use_heap)
            lw_wheel_advance(x.wheel, x.now, &due);
        take_ns = lw_clock_now() - t0;
        owner_ns += take_ns;
        producer_ns += x.push_ns;
        iteration_done(st, &tally, x.push_ns + take_ns, BATCH);
        /* Reset, unmeasured. */
        for (size_t i = 0; i < BATCH; i++) {
            if (use_heap)
                heap_cancel(&x.heap, &x.heap_timers[i]);
            else
                lw_wheel_cancel(x.wheel, &x.timers[i]);
        }
    }
    atomic_store(&x.stop, true);
    pthread_join(thread, NULL);
    report(st, &tally);
    lwb_counter(st, "producer_ns", per_op(producer_ns, tally.ops));
    lwb_counter(st, "owner_ns", per_op(owner_ns, tally.ops));
    lw_wheel_free(x.wheel);
    pthread_mutex_destroy(&x.lock);
    free(x.timers);
    free(x.heap_timers);
    free(pending);
    free(heap_pending);
}

/* ---- registration ---- */

#define CHURN_CASES(impl_name, impl)                                                   \
    static void bm_schedule_##impl_name(struct lwb_state *st)                          \
    {                                                                                  \
        run_churn(st, &impl, SHAPE_SCHEDULE);                                          \
    }                                                                                  \
    static void bm_cancel_##impl_name(struct lwb_state *st)                            \
    {                                                                                  \
        run_churn(st, &impl, SHAPE_CANCEL);                                            \
    }                                                                                  \
    static void bm_pair_##impl_name(struct lwb_state *st)                              \
    {                                                                                  \
        run_churn(st, &impl, SHAPE_PAIR);                                              \
    }

CHURN_CASES(wheel, wheel_impl)
CHURN_CASES(heap, heap_impl)
CHURN_CASES(libev, ev_impl)

static void bm_expire_wheel(struct lwb_state *st) { run_expire(st, &wheel_impl, false); }
static void bm_expire_heap(struct lwb_state *st) { run_expire(st, &heap_impl, false); }
static void bm_expire_libev(struct lwb_state *st) { run_expire(st, &ev_impl, true); }
static void bm_renew_wheel(struct lwb_state *st) { run_renew(st, &wheel_impl); }
static void bm_renew_heap(struct lwb_state *st) { run_renew(st, &heap_impl); }
static void bm_xthread_wheel(struct lwb_state *st) { run_xthread(st, false); }
static void bm_xthread_heap(struct lwb_state *st) { run_xthread(st, true); }

int main(int argc, char **argv)
{
    static const int64_t sizes[] = {1000, 100000, 1000000};
    static const struct {
        const char *name;
        lwb_fn *fn;
    } cases[] = {
        {"schedule/wheel", bm_schedule_wheel}, {"schedule/heap", bm_schedule_heap},
        {"schedule/libev", bm_schedule_libev}, {"cancel/wheel", bm_cancel_wheel},
        {"cancel/heap", bm_cancel_heap},       {"cancel/libev", bm_cancel_libev},
        {"pair/wheel", bm_pair_wheel},         {"pair/heap", bm_pair_heap},
        {"pair/libev", bm_pair_libev},         {"expire/wheel", bm_expire_wheel},
        {"expire/heap", bm_expire_heap},       {"expire/libev", bm_expire_libev},
        {"renew/wheel", bm_renew_wheel},       {"renew/heap", bm_renew_heap},
        {"xthread/wheel", bm_xthread_wheel},   {"xthread/heap", bm_xthread_heap},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        lwb_register(cases[i].name, cases[i].fn, sizes, 3, LWB_MANUAL_TIME, 0.3);
    return lwb_run(argc, argv);
}
