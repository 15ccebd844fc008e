/*
 * The hashed timing wheel.
 *
 * Geometry.  One level: `slots` buckets (a power of two, so that a tick maps
 * to its bucket with a mask), each made of LANES circular doubly-linked
 * lists with sentinels (see Lanes, below).  Tick k ends at
 * start + k * tick_ns.  A timer's deadline is rounded UP to a tick
 * boundary: it is due at tick
 *
 *     expires = ceil((deadline - start) / tick_ns)
 *
 * and lives in bucket (expires & mask).  With the defaults (100 ms, 512
 * slots) one revolution spans 51.2 s, so a 30 s watchdog lease and its 10 s
 * renewals are all in their first revolution.  Granularity is one tick: a
 * timer fires in the advance that first passes the end of its tick, so it is
 * never early and - when the owner advances on time - at most a tick late.
 *
 * Rounds.  A deadline more than one revolution away shares a bucket with
 * nearer ones.  Netty stores "remaining rounds" and decrements it on every
 * pass; we store the absolute tick instead and compare it with the tick
 * being processed: the same visits, one fewer write to each far timer per
 * revolution, and no state to fix up when a timer is moved.
 *
 * Lanes.  Each bucket is LANES separate lists, filled in turn.  Walking a
 * bucket is pointer chasing: with one list, every timer costs a full memory
 * round trip when the wheel is larger than the cache.  The walk advances all
 * lanes in step with plain loads, so LANES misses are in flight at once; the
 * CASes come afterwards, on a small batch of timers already in L1 (a locked
 * instruction waits for every earlier load and store, so one per timer in
 * the walk would put the misses back in single file).  Cancel needs no
 * lane: the lists are doubly linked.
 *
 * Why one level and not a hierarchy (the kernel's timer.c): the watchdog's
 * deadlines all fall within one lease, so almost every timer is in its
 * first revolution and a bucket is visited only when due.  A hierarchy would
 * cascade every renewal once or twice for nothing.
 *
 * State machine (the `state` word, one CAS per transition that can race):
 *
 *   IDLE      --schedule (owner)--------> SCHEDULED
 *   IDLE      --schedule_remote---------> PENDING     (CAS; on the submit queue)
 *   PENDING   --owner drains------------> SCHEDULED   (CAS; linked in bucket)
 *   PENDING   --cancel (any thread)-----> CANCELLED   (owner releases at drain)
 *   SCHEDULED --advance, due------------> FIRED       (CAS; on the due list)
 *   FIRED     --lw_timer_list_pop-------> IDLE
 *   SCHEDULED --cancel (owner)----------> IDLE        (CAS; unlinked at once)
 *   SCHEDULED --cancel_remote-----------> CANCELLED   (CAS; pushed on the
 *                                                      cancel queue)
 *   CANCELLED --owner drains cancels----> IDLE        (unlinked, released)
 *
 * Firing and cancelling both leave SCHEDULED by CAS, so exactly one wins.
 * Only the owner touches buckets; other threads touch only `state`, and
 * `qnode` while they push.  See docs/design.md for the memory-order argument.
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container.h"
#include "counter.h"
#include "mpsc.h"
#include "queue.h"

enum {
    LANES = 8,       /* lists per bucket, walked in step */
    FIRE_BATCH = 64, /* timers collected before their CASes */
    POP_AHEAD = 8    /* due-list hint distance, see appender_add() */
};

_Static_assert(offsetof(struct lw_timer, link) == 0,
               "the due list casts link.next back to the timer");

/* Counters written by the owner only, read by anyone: relaxed atomics. */
struct counters {
    _Atomic uint64_t pending;
    _Atomic uint64_t scheduled;
    _Atomic uint64_t expired;
    _Atomic uint64_t cancelled;
    _Atomic uint64_t worst_lag_ns;
    _Atomic uint64_t tick;
};

struct lw_wheel {
    /* Owner-only, read on every schedule and advance. */
    struct lw_list *lanes; /* slots * LANES list heads; bucket b is lanes[b * LANES..] */
    uint64_t mask;
    uint32_t next_lane;
    uint64_t tick_ns;
    uint64_t tick_inverse; /* floor((2^64 - 1) / tick_ns): divide by multiplying */
    uint64_t start_ns;
    uint64_t tick; /* every tick <= this has been processed */
    uint32_t drain_max;
    _Atomic bool closing; /* lw_wheel_free is running: refuse schedules */
    lw_timer_release_fn *release;
    void *release_arg;
    struct counters stats;

    /* Written by other threads: each on a cache line of its own. */
    alignas(64) struct lw_mpsc submits;
    alignas(64) struct lw_mpsc cancels;
};

/*
 * The state word is a plain uint32_t in the public header (C++ has no
 * _Atomic), so every access goes through these, with GCC/Clang __atomic
 * builtins: defined on plain objects, the same code as C11 atomics, and
 * the one mechanism lw_timer_list_pop() can use inline in C and C++ alike.
 * Viewing the field through an _Atomic pointer instead would rely on
 * _Atomic uint32_t sharing uint32_t's size and alignment, which C11 does
 * not promise.
 */
_Static_assert(sizeof(struct lw_timer) == 48 || sizeof(void *) != 8,
               "struct lw_timer is 48 bytes on 64-bit targets (docs/design.md)");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && sizeof(int) == sizeof(uint32_t),
               "the state word is accessed with lock-free atomic builtins");

static bool cas_state(struct lw_timer *t, uint32_t *expected, uint32_t desired)
{
    return __atomic_compare_exchange_n(&t->state, expected, desired, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void set_state(struct lw_timer *t, uint32_t state)
{
    __atomic_store_n(&t->state, state, __ATOMIC_RELEASE);
}

static uint32_t get_state(const struct lw_timer *t)
{
    return __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
}

/* The owner's own check: see lw_wheel_schedule(). */
static uint32_t get_state_relaxed(const struct lw_timer *t)
{
    return __atomic_load_n(&t->state, __ATOMIC_RELAXED);
}

/* ---- buckets ---- */

static void bucket_link(struct lw_wheel *w, struct lw_timer *t)
{
    uint64_t lane = (t->expires & w->mask) * LANES + (w->next_lane++ & (LANES - 1));

    lw_list_insert_tail(&w->lanes[lane], &t->link);
    count_add(&w->stats.pending, 1);
}

/* Unlink and mark unlinked (is_linked() false), for the cancel-queue
 * drain: a cancel needs no lane, the lists being doubly linked. */
static void bucket_unlink(struct lw_wheel *w, struct lw_timer *t)
{
    lw_list_remove(&t->link);
    count_add(&w->stats.pending, (uint64_t)-1);
}

static bool is_linked(const struct lw_timer *t)
{
    return lw_list_linked(&t->link);
}

__extension__ typedef unsigned __int128 u128;

/*
 * since / tick_ns without a divide instruction (a 64-bit divide costs
 * 40-90 cycles on common x86 cores, and schedule needs one per call).  The
 * reciprocal underestimates the quotient by at most 2; the loop corrects.
 */
static uint64_t ticks_in(const struct lw_wheel *w, uint64_t since, uint64_t *rest)
{
    uint64_t q = (uint64_t)(((u128)since * w->tick_inverse) >> 64);
    uint64_t r = since - q * w->tick_ns;

    while (r >= w->tick_ns) {
        q++;
        r -= w->tick_ns;
    }
    *rest = r;
    return q;
}

/* The tick a deadline is due at: rounded up, and never one already done. */
static uint64_t tick_of(const struct lw_wheel *w, uint64_t deadline)
{
    uint64_t since = deadline > w->start_ns ? deadline - w->start_ns : 0;
    uint64_t rest, k = ticks_in(w, since, &rest);

    if (rest)
        k++;
    return k > w->tick ? k : w->tick + 1;
}

/*
 * Appends one advance's fired timers to the caller's due list.  Popping a
 * long due list is pointer chasing through timers the walk touched long
 * ago; so each timer's unused link.prev is pointed at the one POP_AHEAD
 * places after it, and lw_timer_list_pop() prefetches it.  The store lands
 * in a line touched POP_AHEAD appends ago, still in L1.
 */
struct appender {
    struct lw_timer_list *list;
    struct lw_timer *recent[POP_AHEAD]; /* the last POP_AHEAD appended */
    uint32_t appended;
};

/* t must be unlinked, with both links NULL.  The due list is the public
 * struct lw_timer_list, popped by lw_timer_list_pop() inline in the
 * public header, and link.prev holds the hint: its links are written
 * here, not by queue.h, whose FIFO is private and has no hint. */
static void appender_add(struct appender *app, struct lw_timer *t)
{
    struct lw_timer_list *list = app->list;
    struct lw_timer **behind = &app->recent[app->appended++ % POP_AHEAD];

    if (*behind)
        (*behind)->link.prev = &t->link;
    *behind = t;
    if (list->last)
        list->last->link.next = &t->link;
    else
        list->first = t;
    list->last = t;
    list->count++;
}

/* ---- release ---- */

static void release_timer(struct lw_wheel *w, struct lw_timer *t)
{
    set_state(t, LW_TIMER_IDLE);
    if (w->release)
        w->release(t, w->release_arg);
}

/* ---- public: timers ---- */

/* A lease's clock must count the time the host slept: a lease that ran
 * out in Redis meanwhile is over for its holder too (wheel.h, "Time"). */
#ifdef CLOCK_BOOTTIME
#define WHEEL_CLOCK CLOCK_BOOTTIME
#else
#define WHEEL_CLOCK CLOCK_MONOTONIC
#endif

uint64_t lw_clock_now(void)
{
    struct timespec ts;

    clock_gettime(WHEEL_CLOCK, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void lw_timer_init(struct lw_timer *timer)
{
    /* IDLE and an unlinked qnode are all zeros; nobody else may be using
     * the timer yet, so plain stores do. */
    memset(timer, 0, sizeof *timer);
}

uint64_t lw_timer_deadline(const struct lw_timer *timer)
{
    return timer->deadline;
}

int lw_timer_get_state(const struct lw_timer *timer)
{
    return (int)get_state(timer);
}

/* ---- public: life cycle ---- */

void lw_wheel_config_init(struct lw_wheel_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->tick_ns = LW_WHEEL_DEFAULT_TICK_NS;
    cfg->slots = LW_WHEEL_DEFAULT_SLOTS;
    cfg->drain_max = LW_WHEEL_DEFAULT_DRAIN_MAX;
}

static int check_config(const struct lw_wheel_config *cfg)
{
    if (cfg->tick_ns == 0 || cfg->slots == 0 || cfg->drain_max == 0)
        return LW_EINVAL;
    if (cfg->tick_ns < LW_WHEEL_MIN_TICK_NS || cfg->tick_ns > LW_WHEEL_MAX_TICK_NS ||
        cfg->slots > LW_WHEEL_MAX_SLOTS)
        return LW_ERANGE;
    return 0;
}

static uint32_t round_up_pow2(uint32_t n)
{
    uint32_t p = 1;

    while (p < n)
        p <<= 1;
    return p;
}

int lw_wheel_new(const struct lw_wheel_config *cfg, struct lw_wheel **out)
{
    struct lw_wheel *w;
    uint32_t slots;
    int err;

    if (!cfg || !out)
        return LW_EINVAL;
    err = check_config(cfg);
    if (err)
        return err;

    w = aligned_alloc(alignof(struct lw_wheel), sizeof *w);
    if (!w)
        return LW_ENOMEM;
    memset(w, 0, sizeof *w);
    slots = round_up_pow2(cfg->slots);
    w->lanes = malloc(sizeof *w->lanes * slots * LANES);
    if (!w->lanes) {
        free(w);
        return LW_ENOMEM;
    }
    for (uint64_t i = 0; i < (uint64_t)slots * LANES; i++)
        lw_list_init(&w->lanes[i]);
    w->mask = slots - 1;
    w->tick_ns = cfg->tick_ns;
    w->tick_inverse = UINT64_MAX / cfg->tick_ns;
    w->start_ns = cfg->start_ns ? cfg->start_ns : lw_clock_now();
    w->drain_max = cfg->drain_max;
    w->release = cfg->release;
    w->release_arg = cfg->release_arg;
    lw_mpsc_init(&w->submits);
    lw_mpsc_init(&w->cancels);
    *out = w;
    return 0;
}

void lw_wheel_free(struct lw_wheel *w)
{
    struct lw_mpsc_node *node;

    if (!w)
        return;
    /* From here on schedules are refused, so a release callback cannot put
     * a timer back into the wheel being taken apart. */
    atomic_store_explicit(&w->closing, true, memory_order_relaxed);
    /* Cancelled timers may still be linked: unlink them before the sweep. */
    while ((node = lw_mpsc_pop(&w->cancels))) {
        struct lw_timer *t = lw_container_of(node, struct lw_timer, qnode);

        if (is_linked(t))
            bucket_unlink(w, t);
        release_timer(w, t);
    }
    while ((node = lw_mpsc_pop(&w->submits)))
        release_timer(w, lw_container_of(node, struct lw_timer, qnode));
    for (uint64_t i = 0; i < (w->mask + 1) * LANES; i++) {
        struct lw_list *head = &w->lanes[i];

        while (!lw_list_empty(head)) {
            struct lw_timer *t = lw_container_of(lw_list_first(head), struct lw_timer, link);

            bucket_unlink(w, t);
            release_timer(w, t);
        }
    }
    free(w->lanes);
    free(w);
}

/* ---- public: schedule and cancel ---- */

int lw_wheel_schedule(struct lw_wheel *w, struct lw_timer *t, uint64_t deadline_ns)
{
    if (!w || !t)
        return LW_EINVAL;
    if (atomic_load_explicit(&w->closing, memory_order_relaxed))
        return LW_ESHUTDOWN;
    /* A plain check, not a CAS: a timer has one user at a time (see the
     * header), and a locked instruction here would cost every schedule a
     * wait for the stores before it. */
    if (get_state_relaxed(t) != LW_TIMER_IDLE)
        return LW_EBUSY;
    t->deadline = deadline_ns;
    t->expires = tick_of(w, deadline_ns);
    /* Release: our earlier reads of qnode happen before a remote cancel's
     * push writes it. */
    set_state(t, LW_TIMER_SCHEDULED);
    bucket_link(w, t);
    count_add(&w->stats.scheduled, 1);
    return 0;
}

int lw_wheel_schedule_remote(struct lw_wheel *w, struct lw_timer *t, uint64_t deadline_ns)
{
    uint32_t state;

    if (!w || !t)
        return LW_EINVAL;
    if (atomic_load_explicit(&w->closing, memory_order_relaxed))
        return LW_ESHUTDOWN;
    state = LW_TIMER_IDLE;
    if (!cas_state(t, &state, LW_TIMER_PENDING))
        return LW_EBUSY;
    /* PENDING: nobody but us writes the timer until the owner pops it, and
     * the push's release store publishes the deadline to the owner. */
    t->deadline = deadline_ns;
    lw_mpsc_push(&w->submits, &t->qnode);
    return 0;
}

int lw_wheel_cancel(struct lw_wheel *w, struct lw_timer *t)
{
    uint32_t state;

    if (!w || !t)
        return LW_EINVAL;
    state = get_state(t);
    for (;;) {
        if (state == LW_TIMER_SCHEDULED) {
            if (cas_state(t, &state, LW_TIMER_IDLE)) {
                bucket_unlink(w, t);
                count_add(&w->stats.cancelled, 1);
                return LW_CANCEL_DONE;
            }
        } else if (state == LW_TIMER_PENDING) {
            if (cas_state(t, &state, LW_TIMER_CANCELLED))
                return LW_CANCEL_DEFERRED;
        } else {
            return LW_CANCEL_LOST;
        }
    }
}

int lw_wheel_cancel_remote(struct lw_wheel *w, struct lw_timer *t)
{
    uint32_t state;

    if (!w || !t)
        return LW_EINVAL;
    state = get_state(t);
    for (;;) {
        if (state == LW_TIMER_SCHEDULED) {
            if (cas_state(t, &state, LW_TIMER_CANCELLED)) {
                /* It is in a bucket: the owner must unlink it. */
                lw_mpsc_push(&w->cancels, &t->qnode);
                return LW_CANCEL_DEFERRED;
            }
        } else if (state == LW_TIMER_PENDING) {
            /* Still on the submit queue: the owner releases it there. */
            if (cas_state(t, &state, LW_TIMER_CANCELLED))
                return LW_CANCEL_DEFERRED;
        } else {
            return LW_CANCEL_LOST;
        }
    }
}

/* ---- advance ---- */

static void drain_cancels(struct lw_wheel *w)
{
    struct lw_mpsc_node *node;
    uint32_t n = 0;

    while (n++ < w->drain_max && (node = lw_mpsc_pop(&w->cancels))) {
        struct lw_timer *t = lw_container_of(node, struct lw_timer, qnode);

        if (is_linked(t))
            bucket_unlink(w, t);
        count_add(&w->stats.cancelled, 1);
        release_timer(w, t);
    }
}

static void drain_submits(struct lw_wheel *w)
{
    struct lw_mpsc_node *node;
    uint32_t n = 0;

    while (n++ < w->drain_max && (node = lw_mpsc_pop(&w->submits))) {
        struct lw_timer *t = lw_container_of(node, struct lw_timer, qnode);
        uint32_t expected = LW_TIMER_PENDING;

        if (cas_state(t, &expected, LW_TIMER_SCHEDULED)) {
            t->expires = tick_of(w, t->deadline);
            bucket_link(w, t);
            count_add(&w->stats.scheduled, 1);
        } else if (expected == LW_TIMER_CANCELLED) {
            count_add(&w->stats.cancelled, 1);
            release_timer(w, t);
        }
        /* else: the timer was also scheduled by its owner thread, against
         * the one-user rule; it is in a bucket already, leave it there. */
    }
}

/* Hand back a batch of timers taken out of a bucket, unless a cancel won. */
static void fire_batch(struct lw_timer **batch, size_t n, struct appender *due)
{
    for (size_t i = 0; i < n; i++) {
        struct lw_timer *t = batch[i];
        uint32_t expected = LW_TIMER_SCHEDULED;

        lw_list_mark_unlinked(&t->link); /* left out by the walk: see is_linked() */
        if (cas_state(t, &expected, LW_TIMER_FIRED))
            appender_add(due, t);
        /* else: cancelled from another thread; the cancel queue releases it */
    }
}

/*
 * Move every timer of one bucket that is due by tick `k` to `due`.
 *
 * Each lane is rebuilt from the timers that stay (a later revolution) as
 * the walk passes them, instead of unlinking the due ones: unlinking would
 * store into each timer's successor before the walk has loaded it, and the
 * next CAS would wait for that store to miss all the way to memory.
 */
static void expire_bucket(struct lw_wheel *w, uint64_t bucket, uint64_t k,
                          struct appender *due)
{
    struct lw_list *heads = &w->lanes[bucket * LANES];
    struct lw_list *cursor[LANES], *kept[LANES];
    struct lw_timer *batch[FIRE_BATCH];
    size_t n = 0, removed = 0;
    bool walking = true;

    for (int l = 0; l < LANES; l++) {
        cursor[l] = heads[l].next;
        kept[l] = &heads[l];
    }
    while (walking) {
        walking = false;
        /* One step in every lane: the loads do not depend on each other. */
        for (int l = 0; l < LANES; l++) {
            struct lw_list *node = cursor[l];

            if (node == &heads[l])
                continue;
            walking = true;
            cursor[l] = node->next;
            if (((struct lw_timer *)node)->expires > k) {
                lw_list_join(kept[l], node); /* a later revolution: it stays */
                kept[l] = node;
            } else {
                batch[n++] = (struct lw_timer *)node;
            }
        }
        if (n > FIRE_BATCH - LANES || !walking) {
            fire_batch(batch, n, due);
            removed += n;
            n = 0;
        }
    }
    for (int l = 0; l < LANES; l++)
        lw_list_join(kept[l], &heads[l]);
    count_add(&w->stats.pending, (uint64_t)0 - removed);
}

/* How late this advance is: now against the end of the oldest tick due. */
static uint64_t lag_of(const struct lw_wheel *w, uint64_t now, uint64_t first_tick)
{
    uint64_t tick_end = w->start_ns + first_tick * w->tick_ns;

    return now > tick_end ? now - tick_end : 0;
}

int lw_wheel_advance(struct lw_wheel *w, uint64_t now_ns, struct lw_timer_list *due)
{
    struct appender app = {.list = due};
    size_t before;
    uint64_t target, rest;

    if (!w || !due)
        return LW_EINVAL;
    before = due->count;
    drain_cancels(w);
    drain_submits(w);

    target = now_ns > w->start_ns ? ticks_in(w, now_ns - w->start_ns, &rest) : 0;
    if (target <= w->tick)
        return 0;
    count_max(&w->stats.worst_lag_ns, lag_of(w, now_ns, w->tick + 1));
    if (target - w->tick > w->mask) {
        /* A revolution or more behind: one pass over every bucket, starting
         * with the oldest tick, does it all. */
        for (uint64_t i = 1; i <= w->mask + 1; i++)
            expire_bucket(w, (w->tick + i) & w->mask, target, &app);
    } else {
        for (uint64_t k = w->tick + 1; k <= target; k++)
            expire_bucket(w, k & w->mask, k, &app);
    }
    count_add(&w->stats.tick, target - w->tick);
    w->tick = target;
    count_add(&w->stats.expired, due->count - before);
    return (int)(due->count - before);
}

/* ---- public: queries ---- */

uint64_t lw_wheel_next_tick(const struct lw_wheel *w)
{
    return w->start_ns + (w->tick + 1) * w->tick_ns;
}

uint64_t lw_wheel_tick_ns(const struct lw_wheel *w)
{
    return w->tick_ns;
}

uint32_t lw_wheel_slots(const struct lw_wheel *w)
{
    return (uint32_t)(w->mask + 1);
}

void lw_wheel_get_stats(const struct lw_wheel *w, struct lw_wheel_stats *out)
{
    out->pending = count_get(&w->stats.pending);
    out->scheduled = count_get(&w->stats.scheduled);
    out->expired = count_get(&w->stats.expired);
    out->cancelled = count_get(&w->stats.cancelled);
    out->worst_lag_ns = count_get(&w->stats.worst_lag_ns);
    out->tick = count_get(&w->stats.tick);
}
