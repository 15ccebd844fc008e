/*
 * The hashed timing wheel.
 *
 * Geometry.  One level: `slots` buckets (a power of two, so that a tick maps
 * to its bucket with a mask), each a circular doubly-linked list with a
 * sentinel.  Tick k ends at start + k * tick_ns.  A timer's deadline is
 * rounded UP to a tick boundary: it is due at tick
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
 * Why one level and not a hierarchy (the kernel's timer.c): the watchdog's
 * deadlines all fall within one lease, so almost every timer is in its
 * first revolution and a bucket is visited only when due.  A hierarchy would
 * cascade every renewal once or twice for nothing.
 *
 * State machine (the `state` word, one CAS per transition that can race):
 *
 *   IDLE/FIRED --schedule (owner)--------> SCHEDULED
 *   IDLE/FIRED --schedule_remote---------> PENDING     (on the submit queue)
 *   PENDING   --owner drains------------> SCHEDULED   (CAS; linked in bucket)
 *   PENDING   --cancel (any thread)-----> CANCELLED   (owner releases at drain)
 *   SCHEDULED --advance, due------------> FIRED       (CAS; on the due list)
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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpsc.h"

#define container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

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
    struct lw_list *buckets;
    uint64_t mask;
    uint64_t tick_ns;
    uint64_t start_ns;
    uint64_t tick;       /* every tick <= this has been processed */
    uint32_t drain_max;
    lw_timer_release_fn *release;
    void *release_arg;
    struct counters stats;

    /* Written by other threads: each on a cache line of its own. */
    alignas(64) struct lw_mpsc submits;
    alignas(64) struct lw_mpsc cancels;
};

static void count(_Atomic uint64_t *counter, uint64_t delta)
{
    /* Only the owner writes: a load and a store, no locked instruction. */
    atomic_store_explicit(counter,
                          atomic_load_explicit(counter, memory_order_relaxed) + delta,
                          memory_order_relaxed);
}

static uint64_t read_counter(const _Atomic uint64_t *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

static bool cas_state(struct lw_timer *t, uint32_t *expected, uint32_t desired)
{
    return atomic_compare_exchange_strong_explicit(&t->state, expected, desired,
                                                   memory_order_acq_rel,
                                                   memory_order_acquire);
}

static void set_state(struct lw_timer *t, uint32_t state)
{
    atomic_store_explicit(&t->state, state, memory_order_release);
}

static uint32_t get_state(const struct lw_timer *t)
{
    return atomic_load_explicit(&t->state, memory_order_acquire);
}

static bool is_free_state(uint32_t state)
{
    return state == LW_TIMER_IDLE || state == LW_TIMER_FIRED;
}

/* ---- buckets ---- */

static void list_init(struct lw_list *head)
{
    head->next = head;
    head->prev = head;
}

static void bucket_link(struct lw_wheel *w, struct lw_timer *t)
{
    struct lw_list *head = &w->buckets[t->expires & w->mask];
    struct lw_list *node = &t->link;

    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
    count(&w->stats.pending, 1);
}

/* Unlink and mark unlinked (next == NULL), for the cancel-queue drain. */
static void bucket_unlink(struct lw_wheel *w, struct lw_timer *t)
{
    struct lw_list *node = &t->link;

    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->next = NULL;
    node->prev = NULL;
    count(&w->stats.pending, (uint64_t)-1);
}

static bool is_linked(const struct lw_timer *t)
{
    return t->link.next != NULL;
}

/* The tick a deadline is due at: rounded up, and never one already done. */
static uint64_t tick_of(const struct lw_wheel *w, uint64_t deadline)
{
    uint64_t since = deadline > w->start_ns ? deadline - w->start_ns : 0;
    uint64_t k = since / w->tick_ns;

    if (k * w->tick_ns < since)
        k++;
    return k > w->tick ? k : w->tick + 1;
}

static void list_append(struct lw_timer_list *list, struct lw_timer *t)
{
    t->link.next = NULL;
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

uint64_t lw_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void lw_timer_init(struct lw_timer *timer)
{
    memset(timer, 0, sizeof *timer);
    atomic_init(&timer->state, LW_TIMER_IDLE);
    atomic_init(&timer->qnode.next, NULL);
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
    w->buckets = malloc(sizeof *w->buckets * slots);
    if (!w->buckets) {
        free(w);
        return LW_ENOMEM;
    }
    for (uint32_t i = 0; i < slots; i++)
        list_init(&w->buckets[i]);
    w->mask = slots - 1;
    w->tick_ns = cfg->tick_ns;
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
    /* Cancelled timers may still be linked: unlink them before the sweep. */
    while ((node = lw_mpsc_pop(&w->cancels))) {
        struct lw_timer *t = container_of(node, struct lw_timer, qnode);

        if (is_linked(t))
            bucket_unlink(w, t);
        release_timer(w, t);
    }
    while ((node = lw_mpsc_pop(&w->submits)))
        release_timer(w, container_of(node, struct lw_timer, qnode));
    for (uint64_t i = 0; i <= w->mask; i++) {
        struct lw_list *head = &w->buckets[i];

        while (head->next != head) {
            struct lw_timer *t = (struct lw_timer *)head->next;

            bucket_unlink(w, t);
            release_timer(w, t);
        }
    }
    free(w->buckets);
    free(w);
}

/* ---- public: schedule and cancel ---- */

int lw_wheel_schedule(struct lw_wheel *w, struct lw_timer *t, uint64_t deadline_ns)
{
    if (!w || !t)
        return LW_EINVAL;
    if (!is_free_state(atomic_load_explicit(&t->state, memory_order_relaxed)))
        return LW_EBUSY;
    t->deadline = deadline_ns;
    t->expires = tick_of(w, deadline_ns);
    /* Release: our earlier reads of qnode happen before a remote cancel's
     * push writes it. */
    set_state(t, LW_TIMER_SCHEDULED);
    bucket_link(w, t);
    count(&w->stats.scheduled, 1);
    return 0;
}

int lw_wheel_schedule_remote(struct lw_wheel *w, struct lw_timer *t, uint64_t deadline_ns)
{
    uint32_t state;

    if (!w || !t)
        return LW_EINVAL;
    state = atomic_load_explicit(&t->state, memory_order_relaxed);
    do {
        if (!is_free_state(state))
            return LW_EBUSY;
    } while (!cas_state(t, &state, LW_TIMER_PENDING));
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
                count(&w->stats.cancelled, 1);
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
        struct lw_timer *t = container_of(node, struct lw_timer, qnode);

        if (is_linked(t))
            bucket_unlink(w, t);
        count(&w->stats.cancelled, 1);
        release_timer(w, t);
    }
}

static void drain_submits(struct lw_wheel *w)
{
    struct lw_mpsc_node *node;
    uint32_t n = 0;

    while (n++ < w->drain_max && (node = lw_mpsc_pop(&w->submits))) {
        struct lw_timer *t = container_of(node, struct lw_timer, qnode);
        uint32_t expected = LW_TIMER_PENDING;

        if (cas_state(t, &expected, LW_TIMER_SCHEDULED)) {
            t->expires = tick_of(w, t->deadline);
            bucket_link(w, t);
            count(&w->stats.scheduled, 1);
        } else {
            /* Cancelled while queued. */
            count(&w->stats.cancelled, 1);
            release_timer(w, t);
        }
    }
}

/* Move every timer of one bucket that is due by tick `k` to `due`. */
static void expire_bucket(struct lw_wheel *w, uint64_t bucket, uint64_t k,
                          struct lw_timer_list *due)
{
    struct lw_list *head = &w->buckets[bucket];
    struct lw_list *node = head->next;

    while (node != head) {
        struct lw_timer *t = (struct lw_timer *)node;
        uint32_t expected = LW_TIMER_SCHEDULED;

        node = node->next;
        if (t->expires > k)
            continue; /* a later revolution */
        bucket_unlink(w, t);
        if (cas_state(t, &expected, LW_TIMER_FIRED))
            list_append(due, t);
        /* else: cancelled from another thread; the cancel queue releases it */
    }
}

static void count_max(_Atomic uint64_t *counter, uint64_t value)
{
    if (value > read_counter(counter))
        atomic_store_explicit(counter, value, memory_order_relaxed);
}

/* How late this advance is: now against the end of the oldest tick due. */
static uint64_t lag_of(const struct lw_wheel *w, uint64_t now, uint64_t first_tick)
{
    uint64_t tick_end = w->start_ns + first_tick * w->tick_ns;

    return now > tick_end ? now - tick_end : 0;
}

int lw_wheel_advance(struct lw_wheel *w, uint64_t now_ns, struct lw_timer_list *due)
{
    size_t before;
    uint64_t target;

    if (!w || !due)
        return LW_EINVAL;
    before = due->count;
    drain_cancels(w);
    drain_submits(w);

    target = now_ns > w->start_ns ? (now_ns - w->start_ns) / w->tick_ns : 0;
    if (target <= w->tick)
        return 0;
    count_max(&w->stats.worst_lag_ns, lag_of(w, now_ns, w->tick + 1));
    if (target - w->tick > w->mask) {
        /* A revolution or more behind: one pass over every bucket, starting
         * with the oldest tick, does it all. */
        for (uint64_t i = 1; i <= w->mask + 1; i++)
            expire_bucket(w, (w->tick + i) & w->mask, target, due);
    } else {
        for (uint64_t k = w->tick + 1; k <= target; k++)
            expire_bucket(w, k & w->mask, k, due);
    }
    count(&w->stats.tick, target - w->tick);
    w->tick = target;
    count(&w->stats.expired, due->count - before);
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
    out->pending = read_counter(&w->stats.pending);
    out->scheduled = read_counter(&w->stats.scheduled);
    out->expired = read_counter(&w->stats.expired);
    out->cancelled = read_counter(&w->stats.cancelled);
    out->worst_lag_ns = read_counter(&w->stats.worst_lag_ns);
    out->tick = read_counter(&w->stats.tick);
}
