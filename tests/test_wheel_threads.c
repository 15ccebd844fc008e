/*
 * The timing wheel across threads: cancel racing expiry, and producers
 * scheduling and cancelling against the owner.  Every loop is bounded in
 * count and in time; run under ThreadSanitizer by the test command.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/wheel.h>

#include "xorshift.h"

#define SECOND 1000000000ull

static struct lw_wheel *new_wheel(uint64_t tick_ns, uint64_t start_ns,
                                  lw_timer_release_fn *release, void *arg)
{
    struct lw_wheel_config cfg;
    struct lw_wheel *w = NULL;

    lw_wheel_config_init(&cfg);
    cfg.tick_ns = tick_ns;
    cfg.slots = 64;
    cfg.start_ns = start_ns;
    cfg.release = release;
    cfg.release_arg = arg;
    cr_assert_eq(lw_wheel_new(&cfg, &w), 0);
    return w;
}

/* ---- cancel racing expiry ---- */

enum { RACE_ROUNDS = 120, RACE_BATCH = 1000 };

struct race {
    struct lw_wheel *wheel;
    struct lw_timer timers[RACE_BATCH];
    char fired[RACE_BATCH];
    char cancel_won[RACE_BATCH];
    char released[RACE_BATCH];
    _Atomic int go;   /* round the canceller may start */
    _Atomic int done; /* round the canceller has finished */
};

static void race_release(struct lw_timer *t, void *arg)
{
    struct race *r = arg;

    r->released[t - r->timers]++;
}

static void *race_canceller(void *arg)
{
    struct race *r = arg;
    uint64_t give_up = lw_clock_now() + 120 * SECOND;

    for (int round = 1; round <= RACE_ROUNDS; round++) {
        while (atomic_load_explicit(&r->go, memory_order_acquire) < round) {
            if (lw_clock_now() > give_up)
                return NULL;
        }
        /* From the far end, so that the two sides meet in the middle. */
        for (int i = RACE_BATCH - 1; i >= 0; i--)
            r->cancel_won[i] =
                lw_wheel_cancel_remote(r->wheel, &r->timers[i]) == LW_CANCEL_DEFERRED;
        atomic_store_explicit(&r->done, round, memory_order_release);
    }
    return NULL;
}

Test(wheel_threads, cancel_races_expiry_exactly_one_wins, .timeout = 180)
{
    static struct race r;
    pthread_t thread;
    uint64_t tick = 1000000, now = SECOND, give_up = lw_clock_now() + 120 * SECOND;
    long fired_total = 0, cancelled_total = 0;

    r.wheel = new_wheel(tick, SECOND, race_release, &r);
    cr_assert_eq(pthread_create(&thread, NULL, race_canceller, &r), 0);
    for (int round = 1; round <= RACE_ROUNDS; round++) {
        struct lw_timer_list due = {0};
        struct lw_timer *t;

        memset(r.fired, 0, sizeof r.fired);
        memset(r.released, 0, sizeof r.released);
        for (int i = 0; i < RACE_BATCH; i++)
            cr_assert_eq(lw_wheel_schedule(r.wheel, &r.timers[i], now + tick), 0);
        atomic_store_explicit(&r.go, round, memory_order_release);
        now += tick;
        lw_wheel_advance(r.wheel, now, &due); /* races the canceller */
        while ((t = lw_timer_list_pop(&due)))
            r.fired[t - r.timers]++;
        while (atomic_load_explicit(&r.done, memory_order_acquire) < round)
            cr_assert_lt(lw_clock_now(), give_up, "canceller stuck");
        lw_wheel_advance(r.wheel, now, &due); /* drains the cancel queue */
        cr_assert_eq(due.count, 0);
        for (int i = 0; i < RACE_BATCH; i++) {
            cr_assert_eq(r.fired[i] + r.cancel_won[i], 1,
                         "round %d timer %d: fired %d, cancel won %d", round, i,
                         r.fired[i], r.cancel_won[i]);
            cr_assert_eq(r.released[i], r.cancel_won[i]);
            fired_total += r.fired[i];
            cancelled_total += r.cancel_won[i];
        }
    }
    pthread_join(thread, NULL);
    cr_log_info("%d races: expiry won %ld, cancel won %ld", RACE_ROUNDS * RACE_BATCH,
                fired_total, cancelled_total);
    cr_assert_eq(fired_total + cancelled_total, RACE_ROUNDS * RACE_BATCH);
    lw_wheel_free(r.wheel);
}

/* ---- producers against the owner ---- */

enum { PRODUCERS = 2, OPS_PER_PRODUCER = 1000000, POOL = 4096 };

struct job {
    struct lw_timer timer;
    _Atomic int busy;  /* 1 from schedule until the owner hands it back */
    int owner_fired;   /* owner thread only */
    int owner_released;
    long producer_scheduled; /* its producer only */
};

struct producer {
    pthread_t thread;
    struct lw_wheel *wheel;
    struct job *jobs;
    uint64_t tick_ns;
    long ops, scheduled, cancel_wins; /* read by others after `finished` */
    int timed_out;
    _Atomic int finished;
};

struct owner_tally {
    long fired, released;
};

static void give_back(struct job *job)
{
    atomic_store_explicit(&job->busy, 0, memory_order_release);
}

static void owner_release(struct lw_timer *t, void *arg)
{
    struct job *job = (struct job *)t;
    struct owner_tally *tally = arg;

    cr_assert_eq(atomic_load(&job->busy), 1, "released a timer that was not held");
    job->owner_released++;
    tally->released++;
    give_back(job);
}

static void produce_ops(struct producer *p)
{
    struct xorshift rng = xorshift_seed((uint64_t)(uintptr_t)p);
    uint64_t give_up = lw_clock_now() + 150 * SECOND;
    size_t next = 0;

    while (p->ops < OPS_PER_PRODUCER) {
        struct job *job = &p->jobs[next];

        next = (next + 1) % POOL;
        if (next == 0 && lw_clock_now() > give_up) {
            p->timed_out = 1;
            return;
        }
        if (xorshift_below(&rng, 2) == 0) {
            /* Cancel one of ours, wherever it is: queued, in a bucket,
             * firing, fired, or idle. */
            struct job *victim = &p->jobs[xorshift_below(&rng, POOL)];

            if (lw_wheel_cancel_remote(p->wheel, &victim->timer) == LW_CANCEL_DEFERRED)
                p->cancel_wins++;
            p->ops++;
            continue;
        }
        if (atomic_load_explicit(&job->busy, memory_order_acquire)) {
            if (next == 0)
                sched_yield(); /* a whole pass found nothing free */
            continue;
        }
        atomic_store_explicit(&job->busy, 1, memory_order_relaxed);
        if (lw_wheel_schedule_remote(p->wheel, &job->timer,
                                     lw_clock_now() + xorshift_below(&rng, 4 * p->tick_ns))) {
            p->timed_out = 1; /* reported as a failure by the owner */
            return;
        }
        job->producer_scheduled++;
        p->scheduled++;
        p->ops++;
    }
}

static void *produce(void *arg)
{
    struct producer *p = arg;

    produce_ops(p);
    atomic_store_explicit(&p->finished, 1, memory_order_release);
    return NULL;
}

static bool producers_finished(struct producer *producers, long *scheduled)
{
    *scheduled = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        if (!atomic_load_explicit(&producers[i].finished, memory_order_acquire))
            return false;
        *scheduled += producers[i].scheduled;
    }
    return true;
}

static void owner_take_due(struct lw_wheel *w, struct owner_tally *tally)
{
    struct lw_timer_list due = {0};
    struct lw_timer *t;

    lw_wheel_advance(w, lw_clock_now(), &due);
    while ((t = lw_timer_list_pop(&due))) {
        struct job *job = (struct job *)t;

        cr_assert_eq(atomic_load(&job->busy), 1, "fired a timer that was not held");
        job->owner_fired++;
        tally->fired++;
        give_back(job);
    }
}

Test(wheel_threads, two_producers_every_timer_accounted_once, .timeout = 240)
{
    static struct job jobs[PRODUCERS][POOL];
    static struct producer producers[PRODUCERS];
    struct owner_tally tally = {0};
    uint64_t tick = 200000; /* 200 us */
    struct lw_wheel *w = new_wheel(tick, 0, owner_release, &tally);
    uint64_t give_up = lw_clock_now() + 200 * SECOND;
    long scheduled = 0, cancel_wins = 0;

    for (int i = 0; i < PRODUCERS; i++) {
        producers[i].wheel = w;
        producers[i].jobs = jobs[i];
        producers[i].tick_ns = tick;
        cr_assert_eq(pthread_create(&producers[i].thread, NULL, produce, &producers[i]), 0);
    }
    /* Owner: advance until the producers are done and every timer is back. */
    while (!producers_finished(producers, &scheduled) ||
           tally.fired + tally.released < scheduled) {
        cr_assert_lt(lw_clock_now(), give_up, "owner gave up: %ld fired, %ld released",
                     tally.fired, tally.released);
        owner_take_due(w, &tally);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(producers[i].thread, NULL);
        cr_assert_not(producers[i].timed_out, "producer %d timed out", i);
        cancel_wins += producers[i].cancel_wins;
    }

    cr_log_info("%ld schedules: %ld fired, %ld cancelled", scheduled, tally.fired,
                tally.released);
    cr_assert_eq(tally.fired + tally.released, scheduled);
    cr_assert_eq(tally.released, cancel_wins, "every winning cancel released once");
    for (int i = 0; i < PRODUCERS; i++)
        for (int j = 0; j < POOL; j++)
            cr_assert_eq(jobs[i][j].producer_scheduled,
                         jobs[i][j].owner_fired + jobs[i][j].owner_released,
                         "producer %d job %d", i, j);

    struct lw_wheel_stats st;
    lw_wheel_get_stats(w, &st);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.expired, (uint64_t)tally.fired);
    cr_assert_eq(st.cancelled, (uint64_t)tally.released);
    lw_wheel_free(w);
}
