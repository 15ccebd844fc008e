/*
 * core/admission.c - held locks first: past what its Redis can renew, the
 * client sends no more first acquires of watchdog locks.
 *
 * Why.  A Redis renews only so many keys a second.  Past that, renewals
 * wait to be sent; every lock acquired then adds renewals and makes them
 * wait longer, and the locks already held start to run out of lease and
 * are lost (each loss's drop adding load).  Asking for too much should
 * cost the extra acquires, never the locks already held.
 *
 * The signal.  The renewal backlog: how long the oldest due renewal not
 * yet sent has waited (the head of the watchdog's FIFO; O(1)), read after
 * every tick's flush.  It is the one measure of "cannot keep up" that
 * needs no model of Redis: a backlog only grows when renewals fall due
 * faster than calls come back.  A healthy client has none, renewals going
 * out on time or early, so any lasting backlog is queueing.  And since a
 * lock's next renewal falls due lease/3 after its last was *sent*, a
 * backlog L stretches every lock's period to lease/3 + L: the load a held
 * set asks of Redis falls as L grows, and it settles where the Redis keeps
 * up, L = held / capacity - lease/3.  So a client whose held locks stay
 * put settles at a backlog; only new locks push it further.
 *
 * The bounds.  A lock turns at risk when its proven lease falls under
 * half the lease, a backlog of about lease/6; it is lost at about 2/3 of
 * the lease.  Admission closes at a backlog of lease/30, a fifth of the
 * way to at risk, because the signal comes late: acquires go on while the
 * backlog builds up to the bound, and the locks they add must still fit
 * (with renewals smoothed, each new lock asks its 3/lease renewals a
 * second at once, so the backlog grows with the square of the time since
 * the held set passed the Redis's capacity, and what is admitted past it
 * grows with the square root of the bound).  It opens again once the
 * backlog has stayed under lease/120 for a whole renewal period (lease/3):
 * by then every lock held has been renewed with room to spare, so the
 * held set fits, and the client does not flap (a mere dip under the bound
 * would let in another wave of acquires on top of a held set that is
 * already all the Redis can carry).  A client that closes again soon
 * after it opened (within 8 renewal periods) waits twice as long before it
 * opens the next time, up to 16 periods: a Redis whose capacity comes and
 * goes (a shared machine, another load on it) would otherwise have the
 * held set ratchet up to its best moments, each opening letting in what
 * only a quiet moment could carry.  Both bounds are at least a tick or
 * two: the backlog is read once a tick, and a renewal retried at the next
 * tick lags one.
 *
 * While closed, a timer runs every tick (a tick without due timers would
 * not call the hook), and held-back acquires whose wait is over fail with
 * LW_EOVERLOAD.  While no connection is up there is no admission: what
 * waits then is waiting for the connection, and calls fail with its error.
 */
#include <stdio.h>

#include "client_base.h"
#include "admission.h"
#include "call.h"
#include "watchdog.h"

#define ADMIT_MAX_STRIKES 4u /* the quiet wait doubles up to 16 periods */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The timer only makes the tick hook run while closed; admission_check()
 * does the work. */
static void admission_timer_fired(struct lw_client *c, struct core_timer *t, uint64_t now_ns)
{
    (void)c;
    (void)t;
    (void)now_ns;
}

void admission_init(struct lw_client *c)
{
    uint64_t lease = c->lease_ms * 1000000u;

    c->admit.close_ns = max_u64(lease / 30, 2 * c->tick_ns);
    c->admit.open_ns = max_u64(lease / 120, c->tick_ns);
    c->admit.quiet_ns = lease / 3;
    c->admit.ct.fire = admission_timer_fired;
}

static void refuse(struct lw_client *c, struct call *call)
{
    stats_overload_refused(&c->count);
    c->admit.refused++;
    c->admit.rule->end(call, LW_EOVERLOAD);
}

static void hold_back(struct admission *a, struct call *call)
{
    lw_queue_push(&a->held, &call->admit_node);
}

/* The next call of a taken list of held-back calls, or NULL. */
static struct call *next_held(struct lw_queue *held)
{
    struct lw_qnode *n = lw_queue_pop(held);

    return n ? lw_item_of(n, struct call, admit_node) : NULL;
}

int admission_holds(struct lw_client *c, struct call *call, const struct admit_rule *rule)
{
    if (!c->admit.closed || c->closing)
        return 0;
    c->admit.rule = rule; /* one acquire path gives ops; the same row each time */
    if (lw_clock_now() >= call->w.deadline_ns)
        refuse(c, call);
    else
        hold_back(&c->admit, call);
    return 1;
}

static struct logger *logger(struct lw_client *c)
{
    return c->engine ? engine_logger(c->engine) : NULL;
}

static void close_admission(struct lw_client *c, uint64_t backlog_ns)
{
    struct lw_client_stats st = {0};

    c->admit.closed = 1;
    c->admit.refused = 0;
    /* Closed again soon after it opened: wait longer before the next. */
    if (c->admit.opened_ns && lw_clock_now() - c->admit.opened_ns < 8 * c->admit.quiet_ns)
        c->admit.strikes += c->admit.strikes < ADMIT_MAX_STRIKES;
    else
        c->admit.strikes = 0;
    stats_overloaded(&c->count, 1);
    st.locks_held = count_get(&c->count.locks_held);
    log_say(logger(c), LOG_OVERLOAD, LOG_WARN,
            "renewals %llu ms behind (over %llu ms): the Redis cannot renew more locks now; "
            "first acquires held back until they catch up (%llu locks held)",
            (unsigned long long)(backlog_ns / 1000000u),
            (unsigned long long)(c->admit.close_ns / 1000000u),
            (unsigned long long)st.locks_held);
}

/* Open again: what was held back goes on, oldest first. */
static void open_admission(struct lw_client *c, uint64_t backlog_ns)
{
    struct lw_queue held = lw_queue_take(&c->admit.held);
    struct call *call;

    c->admit.closed = 0;
    c->admit.opened_ns = lw_clock_now();
    stats_overloaded(&c->count, 0);
    log_say(logger(c), LOG_OVERLOAD, LOG_INFO,
            "renewals caught up (%llu ms behind, under %llu ms for %llu ms): first acquires "
            "admitted again (%llu refused meanwhile)",
            (unsigned long long)(backlog_ns / 1000000u),
            (unsigned long long)(c->admit.open_ns / 1000000u),
            (unsigned long long)((c->admit.quiet_ns << c->admit.strikes) / 1000000u),
            (unsigned long long)c->admit.refused);
    if (c->wheel)
        lw_wheel_cancel(c->wheel, &c->admit.ct.timer);
    while ((call = next_held(&held)))
        c->admit.rule->admitted(call);
}

/* Held-back acquires whose wait is over fail; the others stay, in order
 * (a callback may hold back new ones meanwhile: they queue behind). */
static void expire_held(struct lw_client *c, uint64_t now_ns)
{
    struct lw_queue held = lw_queue_take(&c->admit.held);
    struct call *call;

    while ((call = next_held(&held))) {
        if (now_ns >= call->w.deadline_ns)
            refuse(c, call);
        else
            hold_back(&c->admit, call);
    }
}

void admission_check(struct lw_client *c, uint64_t now_ns)
{
    uint64_t backlog = 0;

    if (c->closing)
        return;
    if (engine_status(c->engine) == 0)
        backlog = watchdog_backlog_ns(c, now_ns);
    stats_backlog(&c->count, backlog);
    if (backlog >= c->admit.open_ns)
        c->admit.quiet_since_ns = 0;
    else if (!c->admit.quiet_since_ns)
        c->admit.quiet_since_ns = now_ns;
    if (!c->admit.closed && backlog > c->admit.close_ns)
        close_admission(c, backlog);
    else if (c->admit.closed && c->admit.quiet_since_ns &&
             now_ns - c->admit.quiet_since_ns >= c->admit.quiet_ns << c->admit.strikes)
        open_admission(c, backlog);
    if (!c->admit.closed)
        return;
    expire_held(c, now_ns);
    if (lw_timer_get_state(&c->admit.ct.timer) == LW_TIMER_IDLE)
        lw_wheel_schedule(c->wheel, &c->admit.ct.timer, now_ns + c->tick_ns);
}

void admission_shutdown(struct lw_client *c)
{
    struct lw_queue held = lw_queue_take(&c->admit.held);
    struct call *call;

    if (c->wheel)
        lw_wheel_cancel(c->wheel, &c->admit.ct.timer);
    while ((call = next_held(&held)))
        c->admit.rule->end(call, LW_ESHUTDOWN);
}
