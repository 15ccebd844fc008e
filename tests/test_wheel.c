/*
 * The timing wheel on one thread: configuration, ordering and lateness,
 * rounds, cancel on both sides of the drain, rescheduling from the batch.
 * Time is synthetic: the tests pass `now` themselves.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <leasewheel/wheel.h>

#include "xorshift.h"

#define START 1000000000ull /* 1 s: any fixed origin */
#define TICK 1000000ull     /* 1 ms */

struct item {
    struct lw_timer timer;
    int fired;
    int released;
};

static int released_total;

static void on_release(struct lw_timer *timer, void *arg)
{
    (void)arg;
    ((struct item *)timer)->released++;
    released_total++;
}

static struct lw_wheel *make_wheel(uint32_t slots)
{
    struct lw_wheel_config cfg;
    struct lw_wheel *w = NULL;

    lw_wheel_config_init(&cfg);
    cfg.tick_ns = TICK;
    cfg.slots = slots;
    cfg.start_ns = START;
    cfg.release = on_release;
    released_total = 0;
    cr_assert_eq(lw_wheel_new(&cfg, &w), 0);
    return w;
}

/* Advance to `now`, mark what fired, return how many did. */
static int advance(struct lw_wheel *w, uint64_t now)
{
    struct lw_timer_list due = {0};
    struct lw_timer *t;
    int n = lw_wheel_advance(w, now, &due);

    cr_assert_geq(n, 0);
    cr_assert_eq((size_t)n, due.count);
    while (due.first) {
        cr_assert_eq(lw_timer_get_state(due.first), LW_TIMER_FIRED);
        t = lw_timer_list_pop(&due);
        cr_assert_eq(lw_timer_get_state(t), LW_TIMER_IDLE, "popped means idle");
        cr_assert_leq(lw_timer_deadline(t), now, "fired before its deadline");
        ((struct item *)t)->fired++;
    }
    return n;
}

Test(wheel, timer_fits_in_48_bytes)
{
    cr_assert_leq(sizeof(struct lw_timer), 48);
}

Test(wheel, bad_config_is_refused)
{
    struct lw_wheel_config cfg;
    struct lw_wheel *w = NULL;

    lw_wheel_config_init(&cfg);
    cr_assert_eq(lw_wheel_new(NULL, &w), LW_EINVAL);
    cr_assert_eq(lw_wheel_new(&cfg, NULL), LW_EINVAL);

    cfg.tick_ns = 0;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_EINVAL);
    cfg.tick_ns = LW_WHEEL_MIN_TICK_NS - 1;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_ERANGE);
    cfg.tick_ns = LW_WHEEL_MAX_TICK_NS + 1;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_ERANGE);

    lw_wheel_config_init(&cfg);
    cfg.slots = 0;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_EINVAL);
    cfg.slots = LW_WHEEL_MAX_SLOTS + 1;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_ERANGE);
    cfg.slots = UINT32_MAX;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_ERANGE);

    lw_wheel_config_init(&cfg);
    cfg.drain_max = 0;
    cr_assert_eq(lw_wheel_new(&cfg, &w), LW_EINVAL);
    cr_assert_null(w, "nothing is returned on error");
}

Test(wheel, slots_round_up_to_a_power_of_two)
{
    static const uint32_t asked[] = {1, 2, 3, 500, 512, 513, LW_WHEEL_MAX_SLOTS};
    static const uint32_t got[] = {1, 2, 4, 512, 512, 1024, LW_WHEEL_MAX_SLOTS};

    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        struct lw_wheel *w = make_wheel(asked[i]);

        cr_assert_eq(lw_wheel_slots(w), got[i], "slots %u", asked[i]);
        cr_assert_eq(lw_wheel_tick_ns(w), TICK);
        lw_wheel_free(w);
    }
}

Test(wheel, null_arguments_and_double_schedule)
{
    struct lw_wheel *w = make_wheel(8);
    struct item it = {0};
    struct lw_timer *t = &it.timer;
    struct lw_timer_list due = {0};

    cr_assert_eq(lw_wheel_schedule(NULL, t, START), LW_EINVAL);
    cr_assert_eq(lw_wheel_schedule(w, NULL, START), LW_EINVAL);
    cr_assert_eq(lw_wheel_schedule_remote(NULL, t, START), LW_EINVAL);
    cr_assert_eq(lw_wheel_schedule_remote(w, NULL, START), LW_EINVAL);
    cr_assert_eq(lw_wheel_cancel(NULL, t), LW_EINVAL);
    cr_assert_eq(lw_wheel_cancel(w, NULL), LW_EINVAL);
    cr_assert_eq(lw_wheel_cancel_remote(NULL, t), LW_EINVAL);
    cr_assert_eq(lw_wheel_cancel_remote(w, NULL), LW_EINVAL);
    cr_assert_eq(lw_wheel_advance(NULL, START, &due), LW_EINVAL);
    cr_assert_eq(lw_wheel_advance(w, START, NULL), LW_EINVAL);

    cr_assert_eq(lw_wheel_cancel(w, t), LW_CANCEL_LOST, "idle timer");
    cr_assert_eq(lw_wheel_schedule(w, t, START + TICK), 0);
    cr_assert_eq(lw_wheel_schedule(w, t, START + TICK), LW_EBUSY);
    cr_assert_eq(lw_wheel_schedule_remote(w, t, START + TICK), LW_EBUSY);
    cr_assert_eq(lw_wheel_cancel(w, t), LW_CANCEL_DONE);
    cr_assert_eq(lw_wheel_cancel(w, t), LW_CANCEL_LOST, "cancelled twice");
    cr_assert_eq(lw_wheel_schedule_remote(w, t, START + TICK), 0);
    cr_assert_eq(lw_wheel_schedule(w, t, START + TICK), LW_EBUSY, "still queued");
    cr_assert_eq(lw_wheel_cancel_remote(w, t), LW_CANCEL_DEFERRED);
    lw_wheel_free(w);
}

Test(wheel, error_messages)
{
    /* Every code from LW_OK down to the last one has its own message. */
    for (int c = LW_OK; c >= LW_EPROTO; c--) {
        cr_assert_str_neq(lw_strerror(c), "unknown error", "%d", c);
        cr_assert_str_neq(lw_errname(c), "LW_UNKNOWN", "%d", c);
        for (int d = LW_OK; d > c; d--)
            cr_assert_str_neq(lw_strerror(c), lw_strerror(d));
    }
    cr_assert_str_eq(lw_strerror(LW_EPROTO - 1), "unknown error");
    cr_assert_str_eq(lw_errname(LW_EBUSY), "LW_EBUSY");
    cr_assert_str_eq(lw_strerror(-1000), "unknown error");
    cr_assert_str_eq(lw_strerror(7), "unknown error");
    cr_assert_str_eq(lw_errname(-1000), "LW_UNKNOWN");
}

/*
 * Random deadlines over three revolutions, the owner advancing exactly at
 * each tick boundary: every timer fires once, never early, less than one
 * tick late, and in tick order.
 */
Test(wheel, ordering_and_lateness_when_on_time)
{
    enum { N = 20000, SLOTS = 64 };
    struct lw_wheel *w = make_wheel(SLOTS);
    struct item *items = calloc(N, sizeof *items);
    struct xorshift rng = xorshift_seed(42);
    uint64_t horizon = 3 * SLOTS * TICK, last_deadline_tick = 0;
    int fired = 0;

    for (int i = 0; i < N; i++) {
        uint64_t deadline = START + 1 + xorshift_below(&rng, horizon);

        cr_assert_eq(lw_wheel_schedule(w, &items[i].timer, deadline), 0);
    }
    while (fired < N) {
        uint64_t now = lw_wheel_next_tick(w);
        struct lw_timer_list due = {0};
        struct lw_timer *t;

        cr_assert_leq(now, START + horizon + TICK, "ran past every deadline");
        fired += lw_wheel_advance(w, now, &due);
        while ((t = lw_timer_list_pop(&due))) {
            uint64_t deadline = lw_timer_deadline(t);
            uint64_t deadline_tick = (deadline - START + TICK - 1) / TICK;

            cr_assert_leq(deadline, now, "early");
            cr_assert_lt(now - deadline, TICK, "more than a tick late");
            cr_assert_geq(deadline_tick, last_deadline_tick, "out of tick order");
            last_deadline_tick = deadline_tick;
            ((struct item *)t)->fired++;
        }
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(items[i].fired, 1, "timer %d fired %d times", i, items[i].fired);

    struct lw_wheel_stats st;
    lw_wheel_get_stats(w, &st);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.scheduled, N);
    cr_assert_eq(st.expired, N);
    cr_assert_lt(st.worst_lag_ns, 1, "advanced exactly on the boundary");
    lw_wheel_free(w);
    free(items);
}

/* Irregular, sometimes late advances: never early, and nothing is lost. */
Test(wheel, never_early_with_irregular_advances)
{
    enum { N = 20000 };
    struct lw_wheel *w = make_wheel(32);
    struct item *items = calloc(N, sizeof *items);
    struct xorshift rng = xorshift_seed(7);
    uint64_t now = START;
    int fired = 0;

    for (int i = 0; i < N; i++)
        lw_wheel_schedule(w, &items[i].timer, START + xorshift_below(&rng, 500 * TICK));
    for (int steps = 0; fired < N; steps++) {
        cr_assert_lt(steps, 100000);
        now += xorshift_below(&rng, 3 * TICK); /* sometimes 0, sometimes 2+ ticks */
        fired += advance(w, now);
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(items[i].fired, 1);
    lw_wheel_free(w);
    free(items);
}

/* A deadline a thousand revolutions out fires then, not on an earlier pass. */
Test(wheel, long_delays_use_rounds)
{
    struct lw_wheel *w = make_wheel(8);
    struct item far = {0}, near = {0};
    uint64_t far_deadline = START + 8000 * TICK + TICK / 2;

    cr_assert_eq(lw_wheel_schedule(w, &far.timer, far_deadline), 0);
    cr_assert_eq(lw_wheel_schedule(w, &near.timer, START + 3 * TICK), 0);
    for (uint64_t k = 1; k <= 8000; k++)
        advance(w, START + k * TICK);
    cr_assert_eq(near.fired, 1);
    cr_assert_eq(far.fired, 0, "fired a revolution early");
    advance(w, START + 8001 * TICK);
    cr_assert_eq(far.fired, 1);
    lw_wheel_free(w);
}

/* Falling more than a revolution behind: one advance catches up. */
Test(wheel, catch_up_after_a_long_stall)
{
    enum { N = 1000 };
    struct lw_wheel *w = make_wheel(16);
    struct item *items = calloc(N, sizeof *items);

    for (int i = 0; i < N; i++)
        lw_wheel_schedule(w, &items[i].timer, START + (uint64_t)(i + 1) * TICK);
    /* 100 ticks at once: timers 1..100 are due, the rest are not. */
    cr_assert_eq(advance(w, START + 100 * TICK), 100);
    for (int i = 0; i < N; i++)
        cr_assert_eq(items[i].fired, i < 100, "timer %d", i);
    cr_assert_eq(advance(w, START + 2000 * TICK), N - 100);

    struct lw_wheel_stats st;
    lw_wheel_get_stats(w, &st);
    cr_assert_geq(st.worst_lag_ns, 98 * TICK);
    cr_assert_eq(st.tick, 2000);
    lw_wheel_free(w);
    free(items);
}

Test(wheel, past_deadlines_fire_at_the_next_tick)
{
    struct lw_wheel *w = make_wheel(8);
    struct item before_start = {0}, past = {0};

    advance(w, START + 10 * TICK);
    cr_assert_eq(lw_wheel_schedule(w, &before_start.timer, 1), 0);
    cr_assert_eq(lw_wheel_schedule(w, &past.timer, START + 2 * TICK), 0);
    cr_assert_eq(advance(w, START + 10 * TICK + TICK - 1), 0, "tick 11 not over");
    cr_assert_eq(advance(w, START + 11 * TICK), 2);
    lw_wheel_free(w);
}

Test(wheel, owner_cancel_is_immediate)
{
    struct lw_wheel *w = make_wheel(8);
    struct item a = {0}, b = {0};

    lw_wheel_schedule(w, &a.timer, START + 2 * TICK);
    lw_wheel_schedule(w, &b.timer, START + 2 * TICK);
    cr_assert_eq(lw_wheel_cancel(w, &a.timer), LW_CANCEL_DONE);
    cr_assert_eq(lw_timer_get_state(&a.timer), LW_TIMER_IDLE);
    /* Yours at once: scrub it, as a free() would. */
    memset(&a, 0xa5, sizeof a);
    lw_timer_init(&a.timer);
    a.fired = a.released = 0;
    cr_assert_eq(advance(w, START + 5 * TICK), 1);
    cr_assert_eq(a.fired, 0);
    cr_assert_eq(b.fired, 1);
    cr_assert_eq(a.released, 0, "an owner cancel needs no release");

    struct lw_wheel_stats st;
    lw_wheel_get_stats(w, &st);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.pending, 0);
    lw_wheel_free(w);
}

/* Remote schedule, cancelled before the owner drained it (both cancels). */
Test(wheel, cancel_before_drain)
{
    struct lw_wheel *w = make_wheel(8);
    struct item a = {0}, b = {0};

    cr_assert_eq(lw_wheel_schedule_remote(w, &a.timer, START + TICK), 0);
    cr_assert_eq(lw_wheel_schedule_remote(w, &b.timer, START + TICK), 0);
    cr_assert_eq(lw_timer_get_state(&a.timer), LW_TIMER_PENDING);
    cr_assert_eq(lw_wheel_cancel_remote(w, &a.timer), LW_CANCEL_DEFERRED);
    cr_assert_eq(lw_wheel_cancel(w, &b.timer), LW_CANCEL_DEFERRED);
    cr_assert_eq(lw_wheel_cancel_remote(w, &a.timer), LW_CANCEL_LOST, "twice");
    cr_assert_eq(a.released + b.released, 0, "not before the drain");
    cr_assert_eq(advance(w, START + 5 * TICK), 0);
    cr_assert_eq(a.released, 1);
    cr_assert_eq(b.released, 1);
    cr_assert_eq(a.fired + b.fired, 0);
    cr_assert_eq(lw_timer_get_state(&a.timer), LW_TIMER_IDLE);
    lw_wheel_free(w);
    cr_assert_eq(a.released + b.released, 2, "free releases nothing twice");
}

/* Remote schedule, drained into a bucket, then cancelled from "another
 * thread": released at the next advance, never fired. */
Test(wheel, cancel_after_drain)
{
    struct lw_wheel *w = make_wheel(8);
    struct item a = {0}, b = {0};

    lw_wheel_schedule_remote(w, &a.timer, START + 3 * TICK);
    lw_wheel_schedule_remote(w, &b.timer, START + 3 * TICK);
    advance(w, START + TICK);
    cr_assert_eq(lw_timer_get_state(&a.timer), LW_TIMER_SCHEDULED);
    cr_assert_eq(lw_wheel_cancel_remote(w, &a.timer), LW_CANCEL_DEFERRED);
    cr_assert_eq(lw_timer_get_state(&a.timer), LW_TIMER_CANCELLED);
    cr_assert_eq(lw_wheel_cancel(w, &a.timer), LW_CANCEL_LOST, "already cancelled");
    cr_assert_eq(lw_wheel_schedule(w, &a.timer, START), LW_EBUSY, "not released yet");
    cr_assert_eq(advance(w, START + 5 * TICK), 1);
    cr_assert_eq(a.fired, 0);
    cr_assert_eq(a.released, 1);
    cr_assert_eq(b.fired, 1);
    cr_assert_eq(lw_wheel_cancel_remote(w, &b.timer), LW_CANCEL_LOST, "it fired");
    lw_wheel_free(w);
}

/* A cancel queued but not drained before its tick is walked: not fired,
 * released once. */
Test(wheel, cancelled_in_bucket_walk_is_released_once)
{
    struct lw_wheel_config cfg;
    struct lw_wheel *w = NULL;
    struct item items[3] = {{{{0}}}};

    lw_wheel_config_init(&cfg);
    cfg.tick_ns = TICK;
    cfg.slots = 8;
    cfg.start_ns = START;
    cfg.drain_max = 1; /* one queued cancel per advance */
    cfg.release = on_release;
    released_total = 0;
    cr_assert_eq(lw_wheel_new(&cfg, &w), 0);
    for (int i = 0; i < 3; i++)
        lw_wheel_schedule(w, &items[i].timer, START + TICK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(lw_wheel_cancel_remote(w, &items[i].timer), LW_CANCEL_DEFERRED);
    cr_assert_eq(advance(w, START + TICK), 0);
    cr_assert_eq(released_total, 1, "drain_max bounds the drain");
    advance(w, START + 2 * TICK);
    advance(w, START + 3 * TICK);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(items[i].released, 1);
        cr_assert_eq(items[i].fired, 0);
    }
    lw_wheel_free(w);
}

/* The watchdog's shape: every fired timer is rescheduled from inside the
 * batch, at its own phase. */
Test(wheel, reschedule_from_the_batch)
{
    enum { N = 5000, PERIOD = 10 * TICK, CYCLES = 20 };
    struct lw_wheel *w = make_wheel(16);
    struct item *items = calloc(N, sizeof *items);
    struct xorshift rng = xorshift_seed(3);
    uint64_t now = START;

    for (int i = 0; i < N; i++)
        lw_wheel_schedule(w, &items[i].timer, START + 1 + xorshift_below(&rng, PERIOD));
    while (now < START + CYCLES * PERIOD) {
        struct lw_timer_list due = {0};
        struct lw_timer *t;

        now = lw_wheel_next_tick(w);
        lw_wheel_advance(w, now, &due);
        while ((t = lw_timer_list_pop(&due))) {
            ((struct item *)t)->fired++;
            cr_assert_eq(lw_wheel_schedule(w, t, lw_timer_deadline(t) + PERIOD), 0);
        }
    }
    for (int i = 0; i < N; i++)
        cr_assert(items[i].fired == CYCLES || items[i].fired == CYCLES - 1,
                  "timer %d fired %d times", i, items[i].fired);

    struct lw_wheel_stats st;
    lw_wheel_get_stats(w, &st);
    cr_assert_eq(st.pending, N);
    lw_wheel_free(w);
    free(items);
}

/* Freeing the wheel hands back every timer it holds, wherever it is. */
Test(wheel, free_releases_everything_held)
{
    struct lw_wheel *w = make_wheel(8);
    struct item items[4] = {{{{0}}}};

    lw_wheel_schedule(w, &items[0].timer, START + TICK);      /* bucket */
    lw_wheel_schedule_remote(w, &items[1].timer, START + TICK); /* submit queue */
    lw_wheel_schedule(w, &items[2].timer, START + TICK);
    lw_wheel_cancel_remote(w, &items[2].timer);                 /* cancel queue */
    lw_wheel_schedule(w, &items[3].timer, START + 1000 * TICK); /* later round */
    lw_wheel_free(w);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(items[i].released, 1, "timer %d", i);
        cr_assert_eq(lw_timer_get_state(&items[i].timer), LW_TIMER_IDLE);
    }
}

/* A fired timer is the owner's while it is on the due list: nobody may
 * schedule it until it is popped. */
Test(wheel, fired_timer_is_not_schedulable_until_popped)
{
    struct lw_wheel *w = make_wheel(8);
    struct item a = {0};
    struct lw_timer_list due = {0};

    lw_wheel_schedule(w, &a.timer, START + TICK);
    cr_assert_eq(lw_wheel_advance(w, START + TICK, &due), 1);
    cr_assert_eq(lw_wheel_schedule(w, &a.timer, START + 5 * TICK), LW_EBUSY);
    cr_assert_eq(lw_wheel_schedule_remote(w, &a.timer, START + 5 * TICK), LW_EBUSY);
    cr_assert_eq(lw_wheel_cancel_remote(w, &a.timer), LW_CANCEL_LOST);
    cr_assert_eq(lw_timer_list_pop(&due), &a.timer);
    cr_assert_eq(lw_wheel_schedule_remote(w, &a.timer, START + 5 * TICK), 0);
    lw_wheel_free(w);
}

static struct lw_wheel *freeing;
static int reschedule_result;

static void reschedule_on_release(struct lw_timer *timer, void *arg)
{
    (void)arg;
    reschedule_result = lw_wheel_schedule(freeing, timer, START + TICK);
    if (reschedule_result == LW_ESHUTDOWN)
        reschedule_result = lw_wheel_schedule_remote(freeing, timer, START + TICK);
}

/* A release callback run by lw_wheel_free cannot put the timer back. */
Test(wheel, free_refuses_schedules_from_release_callbacks)
{
    struct lw_wheel_config cfg;
    struct lw_timer t;

    lw_wheel_config_init(&cfg);
    cfg.release = reschedule_on_release;
    cr_assert_eq(lw_wheel_new(&cfg, &freeing), 0);
    lw_timer_init(&t);
    cr_assert_eq(lw_wheel_schedule(freeing, &t, lw_clock_now() + 1000000000ull), 0);
    lw_wheel_free(freeing);
    cr_assert_eq(reschedule_result, LW_ESHUTDOWN);
    cr_assert_eq(lw_timer_get_state(&t), LW_TIMER_IDLE);
}
