/*
 * leasewheel/wheel.h - an intrusive hashed timing wheel.
 *
 * A wheel is a ring of `slots` buckets that turns one bucket every `tick`
 * nanoseconds.  A timer due at tick k sits in bucket k mod slots; a timer
 * further away than one revolution simply stays in its bucket until the
 * revolution in which it is due (Varghese & Lauck, scheme 6; Netty's
 * HashedWheelTimer).  Scheduling and cancelling are O(1); advancing costs
 * O(timers in the buckets passed).
 *
 * Time.  All times are nanoseconds on lw_clock_now()'s clock: one that
 * never steps and goes on while the host sleeps (CLOCK_BOOTTIME on Linux),
 * so that a timer due during a suspend is due at once on waking.
 * Tick k ends at start + k * tick, so ticks never drift.  A timer due at
 * `deadline` belongs to the first tick that ends at or after it, and is
 * handed back by the first lw_wheel_advance() whose `now` reaches the end of
 * that tick: never before its deadline, and at most one tick after it when
 * the owner advances at every tick boundary (lw_wheel_next_tick()).
 *
 * Threads.  A wheel has one owner thread: the one that advances it.  Only the
 * owner may call the functions marked "owner".  Functions marked "any
 * thread" are safe from any thread at any time, concurrently with the owner
 * and with each other.
 *
 * Memory.  The wheel never allocates per timer: struct lw_timer is embedded
 * in the caller's own struct (container_of).  The wheel holds a timer from a
 * successful schedule until one of these hands it back:
 *   - lw_wheel_advance() puts it on the due list (it fired);
 *   - lw_wheel_cancel() returns LW_CANCEL_DONE (owner cancel; yours at once);
 *   - the release callback runs for it on the owner thread, after a cancel
 *     that returned LW_CANCEL_DEFERRED (any-thread cancel);
 *   - lw_wheel_free() releases it.
 * Until then the timer's memory must not be freed, moved or reused.
 *
 * One user at a time.  A timer that is IDLE belongs to whoever holds it; only
 * that one thread may schedule it.  lw_wheel_schedule*() refuse a timer that
 * is not IDLE with LW_EBUSY, but two threads scheduling the same idle timer
 * at the same moment is a race in the caller, as with any other object.
 * Cancels are different: any number of threads may cancel a timer at any
 * time, and exactly one cancel or the expiry wins.
 */
#ifndef LEASEWHEEL_WHEEL_H
#define LEASEWHEEL_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#include <leasewheel/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A node of an intrusive doubly-linked list (the wheel's buckets). */
struct lw_list {
    struct lw_list *next;
    struct lw_list *prev;
};

/*
 * A node of an intrusive multi-producer single-consumer queue.  `next` is
 * shared between threads, but only ever read and written with atomic
 * builtins, inside the library (wheel/mpsc.h): a plain type here keeps the
 * header valid C++ (which has no _Atomic before C++23).
 */
struct lw_mpsc_node {
    struct lw_mpsc_node *next;
};

/*
 * A timer.  Embed it in your own struct and zero it (or lw_timer_init())
 * before its first use.  The fields are the wheel's: read them only through
 * the functions below.  48 bytes on 64-bit targets.
 */
struct lw_timer {
    struct lw_list link;       /* bucket, or due list (prev: a prefetch hint);
                                  owner thread only */
    struct lw_mpsc_node qnode; /* submission or cancel queue */
    uint64_t deadline;         /* as given to schedule, ns */
    uint64_t expires;          /* tick index it is due at; owner only */
    uint32_t state;            /* enum lw_timer_state; shared between
                                  threads, accessed only atomically */
};

/* Where a timer is.  Only the owner sees a stable value. */
enum lw_timer_state {
    LW_TIMER_IDLE = 0,      /* not in a wheel: initialised, or released */
    LW_TIMER_PENDING = 1,   /* scheduled from another thread, not yet drained */
    LW_TIMER_SCHEDULED = 2, /* in a bucket */
    LW_TIMER_CANCELLED = 3, /* cancelled, waiting for the owner to release it */
    LW_TIMER_FIRED = 4,     /* on a due list; lw_timer_list_pop() makes it IDLE */
};

/* What a cancel did (return values of lw_wheel_cancel*()). */
enum lw_cancel_result {
    LW_CANCEL_LOST = 0,     /* not cancelled: it fired, or was never scheduled */
    LW_CANCEL_DONE = 1,     /* cancelled and unlinked: the memory is yours now */
    LW_CANCEL_DEFERRED = 2, /* cancelled: memory is yours after its release callback */
};

/* A list of timers handed back by lw_wheel_advance(): zero-initialise it. */
struct lw_timer_list {
    struct lw_timer *first;
    struct lw_timer *last;
    size_t count;
};

struct lw_wheel;

/*
 * Called on the owner thread, inside lw_wheel_advance() or lw_wheel_free(),
 * for each timer whose cancel returned LW_CANCEL_DEFERRED (and by
 * lw_wheel_free() for each timer still held).  When it runs the wheel has
 * forgotten the timer: free it, reuse it, schedule it again.
 */
typedef void lw_timer_release_fn(struct lw_timer *timer, void *arg);

#define LW_WHEEL_DEFAULT_TICK_NS 100000000ull /* 100 ms */
#define LW_WHEEL_DEFAULT_SLOTS 512u
#define LW_WHEEL_DEFAULT_DRAIN_MAX 100000u
#define LW_WHEEL_MIN_TICK_NS 1000ull          /* 1 us */
#define LW_WHEEL_MAX_TICK_NS 3600000000000ull /* 1 hour */
#define LW_WHEEL_MAX_SLOTS (1u << 16)

struct lw_wheel_config {
    uint64_t tick_ns;             /* LW_WHEEL_MIN_TICK_NS..LW_WHEEL_MAX_TICK_NS */
    uint32_t slots;               /* 1..LW_WHEEL_MAX_SLOTS, rounded up to a power of two;
                                     each costs 128 bytes (8 lanes of list heads) */
    uint32_t drain_max;           /* queued schedules and cancels taken per advance, >= 1 */
    uint64_t start_ns;            /* tick 0 ends here; 0 means lw_clock_now() */
    lw_timer_release_fn *release; /* may be NULL */
    void *release_arg;
};

/* A snapshot of a wheel's counters.  Totals count since lw_wheel_new(). */
struct lw_wheel_stats {
    uint64_t pending;      /* timers in buckets now */
    uint64_t scheduled;    /* timers put into buckets (owner or drained) */
    uint64_t expired;      /* timers handed back by advance */
    uint64_t cancelled;    /* cancels that won, counted when unlinked */
    uint64_t worst_lag_ns; /* worst (now - end of tick) seen by advance */
    uint64_t tick;         /* ticks processed so far */
};

/*
 * lw_clock_now - the library's clock, in nanoseconds: CLOCK_BOOTTIME on
 * Linux, which like CLOCK_MONOTONIC never steps with the wall clock but,
 * unlike it, counts the time the host was suspended (CLOCK_MONOTONIC
 * elsewhere).  Every time the library takes or gives (valid_until,
 * until_ns, the wheel's deadlines) is on it.  Any thread.  Since 0.5;
 * CLOCK_MONOTONIC before, which is the same while the host never sleeps.
 */
LW_API uint64_t lw_clock_now(void);

/* lw_timer_init - make a timer IDLE.  Same as zeroing it. */
LW_API void lw_timer_init(struct lw_timer *timer);

/* lw_timer_deadline - the deadline last given to schedule, in ns.  Read it
 * on the thread that holds the timer (the owner, once it has fired). */
LW_API uint64_t lw_timer_deadline(const struct lw_timer *timer);

/* lw_timer_get_state - enum lw_timer_state.  Any thread (a snapshot). */
LW_API int lw_timer_get_state(const struct lw_timer *timer);

/* lw_wheel_config_init - fill cfg with the defaults. */
LW_API void lw_wheel_config_init(struct lw_wheel_config *cfg);

/*
 * lw_wheel_new - create a wheel.
 * Returns 0 and sets *out, or LW_EINVAL (NULL argument, zero tick, zero
 * slots, zero drain_max), LW_ERANGE (tick or slots beyond the limits above),
 * LW_ENOMEM.  The calling thread need not be the owner.
 */
LW_API int lw_wheel_new(const struct lw_wheel_config *cfg, struct lw_wheel **out);

/*
 * lw_wheel_free - destroy a wheel.  Owner, with no other thread using the
 * wheel any more.  Every timer still held (in buckets or queues) is set
 * IDLE and passed to the release callback.  NULL is ignored.
 */
LW_API void lw_wheel_free(struct lw_wheel *wheel);

/*
 * lw_wheel_schedule - owner: put an IDLE timer into its bucket.
 * A deadline already past fires at the next tick.  Returns 0, LW_EINVAL
 * (NULL), LW_EBUSY (the timer is not IDLE: held by a wheel, or still on a
 * due list), or LW_ESHUTDOWN (called from a release callback run by
 * lw_wheel_free()).
 */
LW_API int lw_wheel_schedule(struct lw_wheel *wheel, struct lw_timer *timer,
                             uint64_t deadline_ns);

/*
 * lw_wheel_schedule_remote - any thread: queue an IDLE timer for the owner,
 * which puts it into its bucket at its next advance.  One CAS on the timer
 * and one atomic exchange on the queue; never blocks.  Returns as
 * lw_wheel_schedule().
 */
LW_API int lw_wheel_schedule_remote(struct lw_wheel *wheel, struct lw_timer *timer,
                                    uint64_t deadline_ns);

/*
 * lw_wheel_cancel - owner: stop a timer.  Returns LW_CANCEL_DONE when it
 * was in a bucket (unlinked now: the memory is yours), LW_CANCEL_DEFERRED
 * when it was still queued by schedule_remote (released at the next
 * advance), LW_CANCEL_LOST when it was not scheduled (already fired,
 * already cancelled, idle), or LW_EINVAL.
 */
LW_API int lw_wheel_cancel(struct lw_wheel *wheel, struct lw_timer *timer);

/*
 * lw_wheel_cancel_remote - any thread: stop a timer.  Exactly one of this
 * cancel and the timer's expiry wins.  Returns LW_CANCEL_DEFERRED when the
 * cancel won (the owner unlinks the timer at its next advance and then
 * calls the release callback; until then the memory stays the wheel's),
 * LW_CANCEL_LOST when it fired first or was not scheduled, or LW_EINVAL.
 */
LW_API int lw_wheel_cancel_remote(struct lw_wheel *wheel, struct lw_timer *timer);

/*
 * lw_wheel_advance - owner: move the wheel to `now_ns`.
 * First takes up to drain_max queued cancels and schedules from other
 * threads, then processes every tick that has ended by now_ns.  Timers due
 * are appended to *due in tick order (in no particular order within a tick)
 * with state FIRED; take them off with lw_timer_list_pop() before scheduling
 * them again.  Returns the number appended, or LW_EINVAL.
 */
LW_API int lw_wheel_advance(struct lw_wheel *wheel, uint64_t now_ns,
                            struct lw_timer_list *due);

/* lw_wheel_next_tick - owner: when the next tick ends (ns); arm for it. */
LW_API uint64_t lw_wheel_next_tick(const struct lw_wheel *wheel);

/* lw_wheel_tick_ns, lw_wheel_slots - the effective geometry.  Any thread. */
LW_API uint64_t lw_wheel_tick_ns(const struct lw_wheel *wheel);
LW_API uint32_t lw_wheel_slots(const struct lw_wheel *wheel);

/* lw_wheel_get_stats - snapshot the counters.  Any thread. */
LW_API void lw_wheel_get_stats(const struct lw_wheel *wheel, struct lw_wheel_stats *out);

/*
 * lw_timer_list_pop - take the first timer off a due list (owner), or NULL
 * when empty.  The timer is IDLE again: yours to free, reuse or schedule.
 */
static inline struct lw_timer *lw_timer_list_pop(struct lw_timer_list *list)
{
    struct lw_timer *first = list->first;

    if (first) {
        if (first->link.prev) /* a timer a few places on: fetch it early */
            __builtin_prefetch(first->link.prev);
        list->first = (struct lw_timer *)first->link.next;
        if (!list->first)
            list->last = NULL;
        first->link.next = NULL;
        first->link.prev = NULL;
        list->count--;
        /* The one atomic access outside wheel/: a GCC/Clang builtin, which C and
         * C++ both accept on a plain uint32_t (docs/design.md, "struct
         * lw_timer: 48 bytes").  A plain store on x86-64. */
        __atomic_store_n(&first->state, (uint32_t)LW_TIMER_IDLE, __ATOMIC_RELEASE);
    }
    return first;
}

#ifdef __cplusplus
}
#endif

#endif
