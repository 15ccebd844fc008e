/*
 * core/watchdog.c - renewing the leases of the locks held with lease 0.
 *
 * An entry per (name, owner, kind) sits on the engine's wheel.  Its timer means
 * one of three things, by the entry's state:
 *
 *   SCHEDULED  the next renewal: due lease/3 after the lease the last
 *              confirmed renewal (or the acquire) set began; the timer
 *              stands a tick before that (see schedule_renewal());
 *   RETRY      a renewal failed once, or fell due while the last hold's
 *              unlock was out: look again at the next tick;
 *   QUEUED,    a renewal is waiting for a batch slot, or on the wire;
 *   SENT       the timer stands at give_up_at() instead: a tick before
 *              valid_until, so that an entry whose lease runs out
 *              unconfirmed is reported lost *before* valid_until (the
 *              wheel fires up to a tick late), whatever the connection is
 *              doing.
 *
 * At risk.  The same timer, while a renewal waits or is on the wire,
 * stands at the earlier of give_up_at() and risk_at(): the moment the lease
 * the client can prove falls under half the lease, but never before the
 * renewal has gone unconfirmed for two ticks after it fell due.  There the
 * lock turns at risk (on_risk, at once, with the time it has left), and
 * the timer moves on to give_up_at().  The next confirmed renewal makes it
 * safe again (on_risk, 0); a loss ends it.  A renewal confirmed on time
 * comes before risk_at at any lease: a third of the lease after the last,
 * against a half less the drift (a margin of a sixth of the lease less 2
 * ms, which a lease of a few ticks does not have: the two ticks are its
 * margin).  So on a healthy link nothing more happens than before: no
 * timer more, one flag tested per confirmation.
 *
 * Held too long.  An entry with a maximum hold (max_hold_ms) is given up
 * at cap_at: every timer it sets stands no later than that.  It is lost as
 * LW_LOST_HELD_TOO_LONG, not renewed again, and its field stays in Redis to
 * the end of its lease: that lease is the holder's time to stop, before
 * anyone else can get in.
 *
 * valid_until = lease start + lease - drift: the lease start is the
 * earliest moment the lease the command set can have begun
 * (request_lease_from()): the command's last write, for every kind.
 * Every lease is timed by Redis's clock: a TTL (a lock's PEXPIRE), or an
 * expiry the script computes from Redis's TIME (a permit's score, a
 * place), and the script ran after the write, however late that was.
 * Redis's clock may run a little faster than ours (drift: 1% of the
 * lease plus 2 ms, Redlock's allowance); a step of it is noticed
 * (redis_clock.h: redis_clock_stepped()).  In a fleet mixed
 * with Redisson's clients, which judge a permit's score and a waiter's
 * times by their own clocks, valid_until is less the allowance for their
 * skew, when one is set (permit_clock_skew_ms).  A confirmation that comes when its lease
 * is as good as over renews nothing: the entry is lost at once.  Until valid_until the
 * key cannot have expired, so nobody else can hold the lock: reporting a
 * loss by then is what lets on_lost stop the owner before anyone else can
 * get in.  A loss reported later (the engine thread was held up) is counted
 * in lost_late and worst_lost_late_ns.
 *
 * Entries are of several kinds (kind.h: a lock, a read hold, a write
 * hold of a read-write lock), and everything here is the same for all of
 * them but what goes on the wire: a batch holds entries of one kind, and
 * its kind says which script renews it, what each entry puts in it and
 * how each entry's answer reads.
 *
 * Each tick's due entries join a FIFO; watchdog_flush() cuts it into
 * batches of up to renew_batch entries (one open batch per kind, sent when
 * full and at the end of the flush), one EVALSHA each, sent back to back
 * while fewer than renew_batches_inflight are unanswered.  Leases lost for
 * errors or expiry have their hold removed ("dropped") the same way, in
 * batches of their own behind the renewals, within the same cap (a kind
 * may have no drop: its lease ends it).  A renewal batch's reply holds a 1
 * or a 0 per entry.  A failed batch (timeout, lost connection) fails only
 * its own entries: each retries at the next tick, and a second failure in
 * a row loses it.
 *
 * In a cluster the due entries are grouped by the node serving their slot
 * as well, one call per node and kind with the names in ARGV; a name the
 * node no longer serves comes back as -1 and is re-sent alone, routed by
 * its slot.  A call that fails because the cluster is moving
 * fails nobody (unsettled()): its entries retry at the next tick.  After a
 * failover, the entries of the slots concerned are asked at once
 * (watchdog_failover()), and a 0 then is LW_LOST_FAILOVER.
 *
 * Entries are found by name (uthash) then by owner and kind along a short
 * chain: force-unlock finds every owner of a name at once.  An entry leaves the
 * map as soon as it is unlocked or lost (`dead`), but its memory waits
 * until neither the FIFO nor a batch on the wire points at it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "client_base.h"
#include "lock_op.h"
#include "container.h"
#include "entry.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "queue.h"
#include "report.h"
#include "watchdog.h"

struct batch {
    struct request req;
    struct lw_client *client;
    uint32_t n;
    uint8_t kind; /* its entries' (enum lease_kind_id) */
    int node;     /* cluster: the node it goes to; -1 routed by
                     the slot of its one entry (or one Redis) */
    struct entry *entries[];
};

/* e's lease: its kind's (the watchdog's, but a place's). */
static uint64_t lease_ns(const struct lw_client *c, const struct entry *e)
{
    return c->terms[e->kind].lease_ms * 1000000u;
}

uint64_t lease_valid_until(uint64_t lease_ms, uint64_t from_ns)
{
    uint64_t lease = lease_ms * 1000000u;

    return from_ns + lease - (lease / 100 + 2000000u);
}

/* e's lease surely lasts until then, renewed by a command whose lease
 * counts from from_ns: less the mixed fleet's allowance for a kind whose
 * expiry Redisson's clients judge by their clocks (permits, places). */
static uint64_t entry_valid_until(const struct lw_client *c, const struct entry *e,
                                  uint64_t from_ns)
{
    uint64_t until = lease_valid_until(c->terms[e->kind].lease_ms, from_ns);

    return lw_kinds[e->kind]->client_clocks ? until - c->terms[e->kind].skew_ms * 1000000u : until;
}

/* The last moment to notice that e's lease is running out: a timer set
 * then fires by valid_until at the latest. */
static uint64_t give_up_at(const struct lw_client *c, const struct entry *e)
{
    return e->valid_until_ns - c->tick_ns;
}

/* When the lease e can prove falls under half the lease, but not before
 * its renewal has gone unconfirmed for two ticks after it fell due (nor
 * after giving up). */
static uint64_t risk_at(const struct lw_client *c, const struct entry *e)
{
    uint64_t half = e->valid_until_ns - lease_ns(c, e) / 2;
    uint64_t late = e->due_ns + 2 * c->tick_ns;

    if (late > give_up_at(c, e))
        late = give_up_at(c, e);
    return half > late ? half : late;
}

/* at, or e's cap if that comes first: no timer of e's stands later. */
static uint64_t capped(const struct entry *e, uint64_t at)
{
    return at < e->cap_at_ns ? at : e->cap_at_ns;
}

/* While a renewal waits or is on the wire: look again at risk_at (unless
 * at risk already), at the cap, or at give_up_at(), whichever comes first. */
static uint64_t next_check(const struct lw_client *c, const struct entry *e)
{
    uint64_t at = give_up_at(c, e);

    if (!e->at_risk && risk_at(c, e) < at)
        at = risk_at(c, e);
    return capped(e, at);
}

/* Tell the holder and the log (report.c) that e is at risk (1) or safe
 * again (0), with what is left of its proven lease. */
static void tell_risk(struct lw_client *c, struct entry *e, int at_risk, uint64_t now_ns)
{
    uint64_t left = e->valid_until_ns > now_ns ? (e->valid_until_ns - now_ns) / 1000000u : 0;

    report_risk(c, e, at_risk, left);
}

/* e turns at risk, when not already (force: at once, whatever its lease:
 * after a failover, until the new master has answered). */
static void note_risk(struct lw_client *c, struct entry *e, uint64_t now_ns, int force)
{
    if (e->at_risk || (!force && now_ns < risk_at(c, e)))
        return;
    e->at_risk = 1;
    stats_went_at_risk(&c->count, e->kind);
    tell_risk(c, e, 1, now_ns);
}

/* The entry after e in its name's chain, another owner's, or NULL. */
static struct entry *next_owner(const struct entry *e)
{
    return lw_item_of(lw_qnode_next(&e->owner_node), struct entry, owner_node);
}

/* lock's entry for owner (of the lock's kind: an owner may hold a read
 * and a write lease of one name), or NULL; *head the name's chain. */
static struct entry *find_kind(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                               uint8_t kind, struct entry **head)
{
    struct entry *e;

    *head = NULL;
    HASH_FIND(hh, c->wd.entries, lock->name, lock->len, *head);
    for (e = *head; e; e = next_owner(e))
        if (e->owner == owner && e->kind == kind)
            return e;
    return NULL;
}

static struct entry *find_slot(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                               struct entry **head)
{
    return find_kind(c, lock, owner, lock->kind, head);
}

/* Take e out of the map (the chain's head may change). */
static void unmap(struct lw_client *c, struct entry *e)
{
    struct entry *head = NULL, *rest;

    HASH_FIND(hh, c->wd.entries, e->name, e->len, head);
    if (head == e) {
        HASH_DEL(c->wd.entries, e);
        rest = lw_item_of(lw_qnode_detach(&e->owner_node), struct entry, owner_node);
        if (rest)
            HASH_ADD(hh, c->wd.entries, name[0], rest->len, rest);
    } else {
        lw_qnode_remove_after(&head->owner_node, &e->owner_node);
    }
}

/* Free e if nothing points at it any more. */
static void release_if_unused(struct entry *e)
{
    if (e->dead && e->state != ENTRY_QUEUED && e->state != ENTRY_SENT && !e->dropping &&
        lw_timer_get_state(&e->ct.timer) != LW_TIMER_FIRED)
        free(e);
}

/* ---- Sets of leases lost as one (multi-locks) ---- */

static struct set_ref *set_ref_of(struct lw_qnode *n)
{
    return lw_item_of(n, struct set_ref, qnode);
}

/* r's set no longer counts its entry: its belief falls to 0, and its
 * owner may let it go (hold). */
static void set_left(struct set_ref *r)
{
    struct lease_set *s = r->set;

    atomic_store_explicit(&s->sure_until_ns, 0, memory_order_release);
    s->members--;
    free(r);
    if (s->hold)
        s->hold(s, -1);
}

/* Free the refs of a list taken off an entry (lw_slist_take()). */
static void free_sets(struct lw_slist sets)
{
    struct set_ref *r;

    while ((r = set_ref_of(lw_slist_pop(&sets))))
        set_left(r);
}

/* e's proven end, to every set it is in (a lease of one: an election's
 * belief). */
static void publish_sure(const struct entry *e)
{
    for (struct lw_qnode *n = lw_slist_first(&e->sets); n; n = lw_qnode_next(n))
        atomic_store_explicit(&set_ref_of(n)->set->sure_until_ns, e->valid_until_ns,
                              memory_order_release);
}

int watchdog_set_join(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                      struct lease_set *s)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head);
    struct set_ref *r;

    if (!found || !(r = malloc(sizeof *r)))
        return -1;
    r->set = s;
    lw_slist_push(&found->sets, &r->qnode);
    /* A set no lease points at starts again: an election's serves each
     * of its terms, and a term lost must not silence the next one's loss
     * (a multi-lock's set is new for each acquire). */
    if (s->members++ == 0)
        s->lost = 0;
    if (s->hold)
        s->hold(s, 1);
    atomic_store_explicit(&s->sure_until_ns, found->valid_until_ns, memory_order_release);
    return 0;
}

void watchdog_set_leave(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                        struct lease_set *s)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head);
    struct lw_qnode *n;

    if (!found)
        return;
    for (n = lw_slist_first(&found->sets); n; n = lw_qnode_next(n)) {
        if (set_ref_of(n)->set == s) {
            lw_slist_remove(&found->sets, n);
            set_left(set_ref_of(n));
            return;
        }
    }
}

/* Out of the map, timer stopped, no longer counted as held (nor at
 * risk).  A hold that ended (ended: unlocked or lost, not shut down) counts
 * in the hold-time histogram. */
static void stop_watching(struct lw_client *c, struct entry *e, int ended)
{
    unmap(c, e);
    e->dead = 1;
    free_sets(lw_slist_take(&e->sets));
    if (c->wheel)
        lw_wheel_cancel(c->wheel, &e->ct.timer);
    stats_held(&c->count, e->kind, -1);
    if (e->at_risk)
        stats_left_risk(&c->count, e->kind, 0);
    if (ended && !lw_kinds[e->kind]->not_held) {
        uint64_t now = lw_clock_now();

        stats_hold_ended(&c->count, now > e->held_since_ns ? now - e->held_since_ns : 0);
    }
}

/* Stop watching e quietly (unlocked, forced: ended; or shutting down);
 * freed when unused. */
static void retire(struct lw_client *c, struct entry *e, int ended)
{
    stop_watching(c, e, ended);
    release_if_unused(e);
}

/* The next renewal falls due at at_ns: its lag is counted from then. */
static void set_timer(struct lw_client *c, struct entry *e, uint64_t at_ns)
{
    e->due_ns = at_ns;
    lw_wheel_cancel(c->wheel, &e->ct.timer);
    lw_wheel_schedule(c->wheel, &e->ct.timer, capped(e, at_ns));
}

/*
 * The renewal after one whose lease counts from from_ns: due lease/3 later.  The wheel
 * hands a timer back at the end of the tick its deadline falls in, up to a
 * tick late; and since renewals go out at tick ends, lease/3 later (a whole
 * number of ticks, as a rule) falls just past one, so every renewal would
 * wait a whole tick.  Setting the timer a tick early makes it fire in the
 * tick before its due time instead: renewals go out on time or up to one
 * tick early, and their lag is only queueing.
 */
static uint64_t renewal_grid_ns(const struct lw_client *c, const struct entry *e);

static void schedule_renewal(struct lw_client *c, struct entry *e, uint64_t from_ns)
{
    uint64_t due = from_ns + lease_ns(c, e) / 3, grid = renewal_grid_ns(c, e);

    if (grid > c->tick_ns) /* down to the grid (see there); a tick is the wheel's */
        due -= due % grid;

    lw_wheel_cancel(c->wheel, &e->ct.timer);
    lw_wheel_schedule(c->wheel, &e->ct.timer, capped(e, due - c->tick_ns));
    e->due_ns = due;
}

/* Look at e again at the next tick, or when giving up if that is sooner. */
static void retry_next_tick(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    uint64_t at = now_ns + c->tick_ns;

    e->state = ENTRY_RETRY;
    set_timer(c, e, at < give_up_at(c, e) ? at : give_up_at(c, e));
}

/* Best effort: remove our field from a lock we no longer renew, so that
 * our own later queries, and other clients, do not wait out its lease.
 * Drops go out in batches, through the renewals' in-flight cap and after
 * them: losing many locks at once must not bury Redis in calls. */
static void queue_drop(struct lw_client *c, struct entry *e)
{
    e->dropping = 1;
    lw_queue_push(&c->wd.drops, &e->drop_node);
}

/* How long after valid_until a loss is reported (0: in time). */
static uint64_t loss_late_ns(const struct entry *e)
{
    uint64_t now = lw_clock_now();

    return now > e->valid_until_ns ? now - e->valid_until_ns : 0;
}

/* e is lost for reason: on_lost, then its field dropped, but for a lock
 * not ours any more (nothing to drop), held too long (its lease is the
 * holder's time to stop: it must run out, not be cut short), or of a kind
 * that has no drop. */
static void lose(struct lw_client *c, struct entry *e, int reason)
{
    struct lw_slist sets = lw_slist_take(&e->sets);
    struct set_ref *first = set_ref_of(lw_slist_first(&sets)), *r;
    const void *multi = first ? first->set->multi : NULL;
    struct lw_qnode *n;
    int said = 0;

    for (n = lw_slist_first(&sets); n; n = lw_qnode_next(n))
        said |= set_ref_of(n)->set->lost;
    stats_lost(&c->count, e->kind, reason, loss_late_ns(e));
    stop_watching(c, e, 1);
    /* The owner first: the drop is only tidying up.  A lease of a set is
     * the set's: reported once, then the set's owner lets the rest go. */
    if (!said)
        report_lost(c, e, reason, multi);
    for (n = lw_slist_first(&sets); n; n = lw_qnode_next(n)) {
        r = set_ref_of(n);
        if (!r->set->lost) {
            r->set->lost = 1;
            r->set->on_lost(c, r->set, e->name, e->len);
        }
    }
    free_sets(sets);
    if (reason != LW_LOST_NOT_OWNER && reason != LW_LOST_HELD_TOO_LONG && !c->closing &&
        lw_kinds[e->kind]->drop != SCRIPT_NONE)
        queue_drop(c, e);
    release_if_unused(e);
}

static void entry_timer_fired(struct lw_client *c, struct core_timer *t, uint64_t now_ns);

static struct entry *new_entry(const char *name, size_t len, const void *extra,
                               size_t extra_len);
static void start_entry(struct lw_client *c, struct entry *e, struct entry *head,
                        uint64_t from_ns, uint64_t max_hold_ms);

/*
 * Smooth renewals.  Locks acquired in a burst would come due in the same
 * burst every lease/3, however the Redis copes with it.  So a new lock's
 * first renewal comes early by a share of the period: the n-th first
 * acquire's share is the fractional part of n times the golden ratio (a
 * Weyl sequence), which any run of consecutive n spreads evenly over
 * [0, 1).  Each renewal after it falls due lease/3 after the one before was
 * sent (rounded down to the grid, as every one: renewal_grid_ns()), so the
 * lock keeps its phase: a burst's renewals stay spread over the period
 * from then on.  No renewal comes later than without it.  The
 * cost: a lock's first period is shorter, by half a period on average, so
 * each first acquire costs half a renewal more on average (a lock held
 * for less than lease/3 is renewed once with a probability of its hold
 * over lease/3, instead of never).
 *
 * In runs: WATCHDOG_PHASE_RUN new locks in a row share one share, the
 * runs spread as the locks were.  Locks made one after another lie one
 * after another in memory (their entries, as Redis's keys), and a burst
 * spread lock by lock had every renewal walk to an entry far from the
 * last: a cache miss at each of its steps (the wheel's timer, the FIFO,
 * the batch, the reply), which took the engine from 280 to 500 ns a
 * renewal (lwbench, 200000 locks made in a burst, 3 s lease, A B runs on
 * a quiet machine); in runs of 32 a renewal call walks a few runs of
 * neighbours, 260-370 ns.  32 keeps even a burst of 2000 spread within
 * a fifth of the mean over tenths of the period.
 */
uint64_t watchdog_first_early_ns(uint64_t seq, uint64_t period_ns)
{
    uint64_t share = (seq * 0x9E3779B97F4A7C15ull) >> 32; /* of 2^32: 2^64 / phi */

    /* period * share / 2^32, in two halves that cannot overflow */
    return (period_ns >> 32) * share + (((period_ns & 0xFFFFFFFFu) * share) >> 32);
}

/*
 * The grid renewals are rounded down to: a sixteenth of the period, at
 * most 100 ms, in whole ticks.  Spread to the tick, a light load had every
 * tick renew a few locks in part-filled calls, each tick a write and a
 * read of its own (lwbench, 30000 locks at a 3 s lease: 1.3-1.5 times the
 * engine's CPU per renewal); a grid point gathers a sixteenth of the locks
 * into full calls, and any second still holds many grid points.  Every
 * renewal is rounded, not only the first: a lock whose first renewal fell
 * off the grid (its acquire's reply came after it) stayed off it, and
 * such stragglers filled calls of a few keys each.  The cost: renewals
 * come early by half a grid step on average, at most 1/32 more renewals.
 */
static uint64_t renewal_grid_ns(const struct lw_client *c, const struct entry *e)
{
    uint64_t period = lease_ns(c, e) / 3, grid = period / 16;

    if (grid > 100000000u)
        grid = 100000000u;
    return grid > c->tick_ns ? grid - grid % c->tick_ns : c->tick_ns;
}

/* A new lock's first renewal, early by its share of the period (and
 * rounded down to the grid, as every renewal). */
static void schedule_first_renewal(struct lw_client *c, struct entry *e, uint64_t from_ns)
{
    uint64_t run = c->wd.first_renewals++ / WATCHDOG_PHASE_RUN;
    uint64_t early = watchdog_first_early_ns(run, lease_ns(c, e) / 3);

    schedule_renewal(c, e, from_ns - early);
}

int watchdog_renews(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    struct entry *head;

    return find_slot(c, lock, owner, &head) != NULL;
}

uint32_t watchdog_holds(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head);

    return found ? found->holds : 0;
}

void watchdog_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                       uint32_t holds, uint64_t from_ns, int watch, uint64_t max_hold_ms)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head), *e;

    if (found) {
        found->holds = holds;
        return; /* reentrant: the entry renews it already */
    }
    if (!watch || c->closing || !(e = new_entry(lock->name, lock->len, NULL, 0)))
        return; /* not renewed: it expires after one lease */
    e->kind = lock->kind;
    e->owner = owner;
    e->holds = holds;
    e->slot = (uint16_t)lock->slot;
    start_entry(c, e, head, from_ns, max_hold_ms);
}

/* ---- A fair lock's waiters' places: an entry each, named by the lock,
 * owned by the waiter (kind_place.c) ---- */

void watchdog_place_taken(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                          uint64_t from_ns)
{
    struct entry *head, *found = find_kind(c, lock, owner, KIND_PLACE, &head), *e;

    if (found || c->closing || !(e = new_entry(lock->name, lock->len, NULL, 0)))
        return; /* renewed already; or left to its lease */
    e->kind = KIND_PLACE;
    e->owner = owner;
    e->holds = 1;
    e->slot = (uint16_t)lock->slot;
    start_entry(c, e, head, from_ns, 0);
}

void watchdog_place_left(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    struct entry *head, *found = find_kind(c, lock, owner, KIND_PLACE, &head);

    if (found)
        retire(c, found, 1);
}

/* A zeroed entry named name, extra bytes after the name's NUL. */
static struct entry *new_entry(const char *name, size_t len, const void *extra,
                               size_t extra_len)
{
    struct entry *e = calloc(1, sizeof *e + len + 1 + extra_len);

    if (e) {
        e->ct.fire = entry_timer_fired;
        e->len = (uint32_t)len;
        memcpy(e->name, name, len);
        if (extra_len)
            memcpy(e->name + len + 1, extra, extra_len);
    }
    return e;
}

/* Start renewing e (its kind, owner, holds and slot set), acquired by a
 * command whose lease counts from from_ns; head: its name's chain, or
 * NULL. */
static void start_entry(struct lw_client *c, struct entry *e, struct entry *head,
                        uint64_t from_ns, uint64_t max_hold_ms)
{
    e->valid_until_ns = entry_valid_until(c, e, from_ns);
    e->held_since_ns = from_ns;
    e->cap_at_ns = max_hold_ms ? from_ns + max_hold_ms * 1000000u : UINT64_MAX;
    e->state = ENTRY_SCHEDULED;
    schedule_first_renewal(c, e, from_ns);
    if (head) {
        lw_qnode_insert_after(&head->owner_node, &e->owner_node);
    } else {
        HASH_ADD(hh, c->wd.entries, name[0], e->len, e);
    }
    stats_held(&c->count, e->kind, 1);
}

void watchdog_unlock_begin(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head);

    /* Still held after this unlock: keep renewing.  The last hold: no
     * renewal may follow the unlock onto the wire. */
    if (found && found->holds <= 1)
        found->unlocking++;
}

void watchdog_unlock_end(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                         int64_t holds_left)
{
    struct entry *head, *found = find_slot(c, lock, owner, &head), *e;

    if (!found)
        return;
    e = found;
    if (e->unlocking)
        e->unlocking--;
    if (holds_left == UNLOCK_UNKNOWN)
        return; /* renewing resumes; a renewal finds out if it did run */
    if (holds_left <= 0)
        retire(c, e, 1); /* released, or not ours any more: stop quietly */
    else
        e->holds = (uint32_t)holds_left;
}

void watchdog_forget(struct lw_client *c, const struct lw_lock *lock)
{
    for (;;) {
        struct entry *head = NULL;

        HASH_FIND(hh, c->wd.entries, lock->name, lock->len, head);
        if (!head)
            return;
        retire(c, head, 1);
    }
}

/* ---- Permits (semaphore.c): an entry per permit, named by its semaphore,
 * owned by the permit's tag, its 16 bytes after the name's NUL ---- */

static struct entry *find_permit(struct lw_client *c, const char *name, size_t len,
                                 const uint8_t *id, struct entry **head)
{
    uint64_t tag = permit_tag(id);
    struct entry *e;

    *head = NULL;
    HASH_FIND(hh, c->wd.entries, name, len, *head);
    for (e = *head; e; e = next_owner(e))
        if (e->kind == KIND_PERMIT && e->owner == tag &&
            memcmp(e->name + e->len + 1, id, PERMIT_ID_LEN) == 0)
            return e;
    return NULL;
}

void watchdog_permit_acquired(struct lw_client *c, const char *name, size_t len, unsigned slot,
                              const uint8_t *id, uint64_t from_ns)
{
    struct entry *head, *e = find_permit(c, name, len, id, &head);

    if (e || c->closing || !(e = new_entry(name, len, id, PERMIT_ID_LEN)))
        return; /* not renewed: it expires after one lease */
    e->kind = KIND_PERMIT;
    e->owner = permit_tag(id);
    e->holds = 1;
    e->slot = (uint16_t)slot;
    start_entry(c, e, head, from_ns, c->max_hold_ms);
}

void watchdog_permit_release_begin(struct lw_client *c, const char *name, size_t len,
                                   const uint8_t *id)
{
    struct entry *head, *e = find_permit(c, name, len, id, &head);

    if (e) /* no renewal may follow the release onto the wire */
        e->unlocking++;
}

void watchdog_permit_release_end(struct lw_client *c, const char *name, size_t len,
                                 const uint8_t *id, int gone)
{
    struct entry *head, *e = find_permit(c, name, len, id, &head);

    if (!e)
        return;
    if (e->unlocking)
        e->unlocking--;
    if (gone)
        retire(c, e, 1);
}

static void enqueue(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    if (now_ns >= give_up_at(c, e)) {
        lose(c, e, LW_LOST_EXPIRED);
        return;
    }
    note_risk(c, e, now_ns, 0); /* a retry, or a renewal late to the queue */
    e->state = ENTRY_QUEUED;
    lw_queue_push(&c->wd.renew, &e->renew_node);
    lw_wheel_schedule(c->wheel, &e->ct.timer, next_check(c, e));
}

/* A renewal fell due while the last hold's unlock is on the wire: look
 * again at the next tick, unless the lease is over. */
static void hold_back(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    if (now_ns >= give_up_at(c, e)) {
        lose(c, e, LW_LOST_EXPIRED);
        return;
    }
    retry_next_tick(c, e, now_ns);
}

/* While a renewal waits or is on the wire: give up, or turn at risk and
 * look again at the next check. */
static void check_pending(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    if (now_ns >= give_up_at(c, e)) {
        lose(c, e, LW_LOST_EXPIRED);
        return;
    }
    note_risk(c, e, now_ns, 0);
    lw_wheel_schedule(c->wheel, &e->ct.timer, next_check(c, e));
}

/* An entry's timer: a renewal fell due, its cap came, or (a renewal
 * waiting or on the wire) risk_at() or give_up_at() came. */
static void entry_timer_fired(struct lw_client *c, struct core_timer *t, uint64_t now_ns)
{
    struct entry *e = lw_container_of(t, struct entry, ct);

    if (e->dead) {
        release_if_unused(e);
        return;
    }
    if (now_ns >= e->cap_at_ns) {
        lose(c, e, LW_LOST_HELD_TOO_LONG);
        return;
    }
    switch (e->state) {
    case ENTRY_SCHEDULED:
    case ENTRY_RETRY:
        if (e->unlocking)
            hold_back(c, e, now_ns);
        else
            enqueue(c, e, now_ns);
        break;
    default: /* QUEUED or SENT */
        check_pending(c, e, now_ns);
        break;
    }
}

static void renewal_failed(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    stats_renewal_failed(&c->count, e->kind);
    if (++e->failures >= 2) {
        lose(c, e, LW_LOST_ERRORS);
        return;
    }
    retry_next_tick(c, e, now_ns);
}

/* A renewal confirmed a lease counted from from_ns (its stamp, or its
 * write: request_lease_from()).  One that waited in this client long
 * enough may prove less than half a lease, or nothing any more: it stays
 * at risk, or is lost now rather than renewed. */
static void renewal_confirmed(struct lw_client *c, struct entry *e, uint64_t from_ns,
                              uint64_t now_ns)
{
    stats_renewal_confirmed(&c->count, e->kind);
    e->failures = 0;
    e->valid_until_ns = entry_valid_until(c, e, from_ns);
    publish_sure(e);
    e->state = ENTRY_SCHEDULED;
    if (now_ns >= give_up_at(c, e)) {
        lose(c, e, LW_LOST_EXPIRED);
        return;
    }
    if (e->recheck_after) { /* the old master answered: ask the new one */
        e->recheck_after = 0;
        lw_wheel_cancel(c->wheel, &e->ct.timer);
        enqueue(c, e, now_ns);
        return;
    }
    e->failover_check = 0;
    if (e->at_risk && now_ns < risk_at(c, e)) {
        e->at_risk = 0;
        stats_left_risk(&c->count, e->kind, 1);
        tell_risk(c, e, 0, now_ns);
    } else {
        note_risk(c, e, now_ns, 0);
    }
    schedule_renewal(c, e, from_ns);
}

static void send_alone(struct lw_client *c, struct entry *e, uint64_t now_ns);

/* One entry's answer, as its kind reads it: 1 renewed, 0 gone or not
 * ours, -1 (a node batch) not served by that node any more. */
static void settle(struct lw_client *c, struct entry *e, const redisReply *r,
                   uint64_t from_ns, uint64_t now_ns)
{
    int v = lw_kinds[e->kind]->renewed(r);

    if (v == 1)
        renewal_confirmed(c, e, from_ns, now_ns);
    else if (v == -1)
        send_alone(c, e, now_ns);
    else
        lose(c, e, e->failover_check ? LW_LOST_FAILOVER : LW_LOST_NOT_OWNER);
}

/* A reply whose error says the cluster is moving (redirects, failover,
 * loading): node-routed calls get them as they are.  NOREPLICAS is a
 * master with min-replicas-to-write that has lost its replicas: in
 * Sentinel mode, most likely one being failed over. */
static int moving_reply(const redisReply *r)
{
    static const char *const prefix[] = {"MOVED ", "ASK ", "TRYAGAIN",
                                         "CLUSTERDOWN", "LOADING", "READONLY",
                                         "MASTERDOWN", "NOREPLICAS"};

    if (r->type != REDIS_REPLY_ERROR)
        return 0;
    for (size_t i = 0; i < sizeof prefix / sizeof *prefix; i++)
        if (strncmp(r->str, prefix[i], strlen(prefix[i])) == 0)
            return 1;
    return 0;
}

/* In a cluster, or in Sentinel mode, a call that failed because the
 * topology is moving, or its node went away, is no renewal failure: the
 * entry retries at the next tick, regrouped by the new map.  Such a lock
 * is lost only by a 0 or by its lease running out, never by a failover's
 * seconds of errors. */
static int unsettled(const struct lw_client *c, int err, const redisReply *reply)
{
    if (!c->cluster && !c->sentinel)
        return 0;
    if (err)
        return err == LW_EUNSETTLED || err == LW_ECONNLOST || err == LW_ECONNREFUSED ||
               err == LW_ETIMEDOUT;
    return moving_reply(reply);
}

/*
 * Redis's clock at node stepped ahead of ours by at least ahead_ns (or
 * slewed that much faster than the drift allows): every lease there ends
 * that much sooner than proven.  Each is taken down by it, turns at risk
 * and is renewed at once; one the step may have ended is left to its
 * timer, set for now, which finds it lost (the map is being walked:
 * nothing is lost here).  A renewal on the wire is not: this answer was
 * the first to carry the step, and every call written after it runs
 * after the step, and proves a whole lease.
 */
static void stepped_down(struct lw_client *c, struct entry *e, uint64_t ahead_ns, uint64_t now_ns)
{
    if (e->state == ENTRY_SENT)
        return;
    e->valid_until_ns = e->valid_until_ns > now_ns + ahead_ns ? e->valid_until_ns - ahead_ns
                                                              : now_ns;
    publish_sure(e);
    lw_wheel_cancel(c->wheel, &e->ct.timer);
    if (now_ns >= give_up_at(c, e)) {
        lw_wheel_schedule(c->wheel, &e->ct.timer, now_ns);
        return;
    }
    note_risk(c, e, now_ns, 1);
    if ((e->state == ENTRY_SCHEDULED || e->state == ENTRY_RETRY) && !e->unlocking)
        enqueue(c, e, now_ns);
    else
        lw_wheel_schedule(c->wheel, &e->ct.timer, next_check(c, e));
}

static void redis_clock_stepped(struct lw_client *c, int node, uint64_t ahead_ns)
{
    uint64_t now = lw_clock_now();
    struct entry *head, *tmp, *e;

    report_redis_clock(c, node, ahead_ns / 1000000u);
    HASH_ITER(hh, c->wd.entries, head, tmp) {
        for (e = head; e; e = next_owner(e))
            if (!c->cluster || engine_slot_node(c->engine, e->slot) == node)
                stepped_down(c, e, ahead_ns, now);
    }
}

static int node_room(struct lw_client *c, unsigned node);

/* A renewal's answer ends with Redis's clock when its script ran
 * (scripts.c, stamped()): held against ours, on the node that answered
 * (a node batch's, or the one its connection serves). */
static void watch_redis_clock(struct lw_client *c, const struct batch *b,
                              const struct request *req, const redisReply *time,
                              uint64_t now_ns)
{
    int node = b->node >= 0 ? b->node
               : c->cluster ? engine_conn_node(c->engine, req->sent_conn)
                            : 0;
    uint64_t ahead;

    if (time->type != REDIS_REPLY_INTEGER || node < 0 || node_room(c, (unsigned)node))
        return;
    ahead = redis_clock_sample(&c->wd.nodes[node].clock, req->sent_conn, time->integer,
                               req->sent_ns, now_ns);
    if (ahead)
        redis_clock_stepped(c, node, ahead);
}

static void on_batch_reply(struct request *req, const redisReply *reply, int err,
                           void *arg)
{
    struct batch *b = arg;
    struct lw_client *c = b->client;
    /* An answer per entry, then Redis's clock. */
    int ok = !err && reply->type == REDIS_REPLY_ARRAY && reply->elements == b->n + 1;
    int moving = !ok && unsettled(c, err, reply);
    uint64_t from_ns = ok ? request_lease_from(req) : 0, now = lw_clock_now();

    int was_flushing = c->wd.flushing;

    if (ok && !c->closing)
        watch_redis_clock(c, b, req, reply->element[b->n], now);
    /* A renewal re-sent on its own (send_alone()) may fail at once: that
     * must not start a flush in the middle of this loop. */
    c->wd.flushing = 1;
    c->wd.batches_inflight--;
    for (uint32_t i = 0; i < b->n; i++) {
        struct entry *e = b->entries[i];

        e->state = ENTRY_SCHEDULED; /* the batch lets go of it: freeable */
        if (e->dead || c->closing)
            release_if_unused(e);
        else if (moving)
            retry_next_tick(c, e, now);
        else if (!ok)
            renewal_failed(c, e, now);
        else
            settle(c, e, reply->element[i], from_ns, now);
    }
    c->wd.flushing = was_flushing;
    request_clear(req);
    free(b);
    if (!c->closing && !c->wd.flushing)
        watchdog_flush(c);
}

/* The renew FIFO's first entry, taken off it; NULL: none. */
static struct entry *pop_renew(struct lw_client *c)
{
    return lw_item_of(lw_queue_pop(&c->wd.renew), struct entry, renew_node);
}

/* The next entry of the renew FIFO to send, freeing dead ones and holding
 * back those being unlocked on the way. */
static struct entry *pop_due(struct lw_client *c, uint64_t now_ns)
{
    struct entry *e;

    while ((e = pop_renew(c))) {
        e->state = ENTRY_SCHEDULED; /* out of the FIFO */
        if (e->dead)
            release_if_unused(e);
        else if (e->unlocking)
            hold_back(c, e, now_ns);
        else
            return e;
    }
    return NULL;
}

static struct batch *new_batch(uint32_t n, int node, uint8_t kind)
{
    struct batch *b = malloc(sizeof(struct batch) + n * sizeof(struct entry *));

    if (b) {
        b->n = 0;
        b->node = node;
        b->kind = kind;
    }
    return b;
}

/* b's call of script into c->wd.args: its entries' keys (as its kind puts
 * them), the call's own argument (arg) and the client id (and a renewal's
 * shared arguments, kind->put_call), its entries' arguments (an owner
 * each, the scripts building the field "<id>:<owner>": the id once a
 * call, not in every field).  The argument count, or -1 (no memory). */
static int format_batch(struct lw_client *c, const struct batch *b, int script,
                        const char *arg, size_t arg_len)
{
    const struct lease_kind *kind = lw_kinds[b->kind];

    batch_args_clear(c->wd.args);
    for (uint32_t i = 0; i < b->n; i++)
        kind->put(c, b->entries[i], b->node >= 0, c->wd.args);
    batch_call(c->wd.args, arg, arg_len);
    batch_call(c->wd.args, c->id, c->id_len);
    if (kind->put_call && (script == kind->renew || script == kind->renew_node))
        kind->put_call(c, c->wd.args);
    return batch_assemble(c->wd.args);
}

/* One call of script for b, formatted by format_batch(): the last thing
 * done with b (a failed write completes it at once).  A node batch
 * declares no keys (its names are in ARGV) and goes to its node; any other
 * goes by the slot of its first key, which in a cluster is its only
 * entry's. */
static void submit_batch(struct lw_client *c, struct batch *b, int script, const char *arg,
                         size_t arg_len, request_fn *done)
{
    int nargs = format_batch(c, b, script, arg, arg_len);
    int nkeys = b->node >= 0 ? 0 : (int)c->wd.args->keys.n;

    b->client = c;
    request_init(&b->req);
    c->wd.batches_inflight++;
    if (nargs < 0 || request_evalsha(&b->req, script, nkeys, nargs, c->wd.args->argv,
                                     c->wd.args->lens) != 0) {
        done(&b->req, NULL, LW_ENOMEM, b);
        return;
    }
    if (script == lw_kinds[b->kind]->renew || script == lw_kinds[b->kind]->renew_node)
        request_urgent(&b->req); /* held locks before locks to take */
    if (b->node >= 0)
        request_route_node(&b->req, (unsigned)b->node);
    else
        request_route_slot(&b->req, b->entries[0]->slot);
    if (engine_submit(c->engine, &b->req, done, b) != 0)
        done(&b->req, NULL, LW_ENOMEM, b);
}

/* Room for node in c->wd.nodes: 0, or -1 (no memory). */
static int node_room(struct lw_client *c, unsigned node)
{
    unsigned cap = node + 8;
    struct node_batches *grown;

    if (node < c->wd.nodes_cap)
        return 0;
    if (!(grown = realloc(c->wd.nodes, cap * sizeof *grown)))
        return -1;
    memset(grown + c->wd.nodes_cap, 0, (cap - c->wd.nodes_cap) * sizeof *grown);
    c->wd.nodes = grown;
    c->wd.nodes_cap = cap;
    return 0;
}

/* A cluster's renewal call, counted on the node it goes to: a node batch's
 * own, or for one sent alone the node serving its slot now (a redirect
 * may take it on: it stays counted there, as the first node's call). */
static void count_node_call(struct lw_client *c, const struct batch *b)
{
    int node = b->node;

    if (!c->cluster)
        return;
    if (node < 0)
        node = engine_slot_node(c->engine, b->entries[0]->slot);
    if (node >= 0 && node_room(c, (unsigned)node) == 0)
        c->wd.nodes[node].renew_calls++;
}

static void send_renew_batch(struct lw_client *c, struct batch *b)
{
    const struct lease_kind *kind = lw_kinds[b->kind];

    stats_batch_sent(&c->count, b->kind, b->n);
    count_node_call(c, b);
    submit_batch(c, b, b->node >= 0 ? kind->renew_node : kind->renew,
                 c->terms[b->kind].lease_str, c->terms[b->kind].lease_len,
                 on_batch_reply);
}

/* A renewal its node batch's node no longer serves: on its own, routed by
 * its slot, so that the engine follows MOVED and ASK for it. */
static void send_alone(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    struct batch *b = new_batch(1, -1, e->kind);

    if (!b) {
        retry_next_tick(c, e, now_ns);
        return;
    }
    b->entries[b->n++] = e;
    e->state = ENTRY_SENT;
    send_renew_batch(c, b);
}

/* Pop a due entry into batch b: sent, its lag counted. */
static void add_renewal(struct lw_client *c, struct batch *b, struct entry *e, uint64_t now_ns)
{
    b->entries[b->n++] = e;
    e->state = ENTRY_SENT;
    stats_renewal_lag(&c->count, now_ns > e->due_ns ? now_ns - e->due_ns : 0);
}

static void on_drop_reply(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct batch *b = arg;
    struct lw_client *c = b->client;

    (void)reply;
    (void)err; /* best effort: the lease ends a field left behind anyway */
    c->wd.batches_inflight--;
    for (uint32_t i = 0; i < b->n; i++) {
        b->entries[i]->dropping = 0;
        release_if_unused(b->entries[i]);
    }
    request_clear(req);
    free(b);
    if (!c->closing && !c->wd.flushing)
        watchdog_flush(c);
}

static void send_drop_batch(struct lw_client *c, struct batch *b)
{
    const struct lease_kind *kind = lw_kinds[b->kind];
    const char *publish = client_publish_command(c);

    submit_batch(c, b, b->node >= 0 ? kind->drop_node : kind->drop, publish, strlen(publish),
                 on_drop_reply);
}

static struct entry *pop_drop(struct lw_client *c)
{
    return lw_item_of(lw_queue_pop(&c->wd.drops), struct entry, drop_node);
}

/* ---- Batches: by node, then by kind ----
 *
 * Each tick's due entries go into open batches, one per node, kind and
 * purpose (renew or drop), each sent when full and at the end of the
 * flush: a batch holds entries of one kind (one script), and a tick's
 * entries of every kind still go out in full batches.  One Redis is node
 * 0, its batches declaring their names as KEYS (routed by slot: the
 * engine has one node).  In a cluster the entries are grouped by the
 * node serving their slot: a script's declared keys must share a slot, and
 * grouping a tick's due renewals by slot gives a key or two per call once
 * locks spread over 16384 slots, so node batches go with scripts that take
 * the names in ARGV. */

enum { OPEN_RENEW,
       OPEN_DROP };

/* The open batch of purpose and kind for node, made on first use; NULL:
 * no memory. */
static struct batch *open_batch(struct lw_client *c, int purpose, uint8_t kind, unsigned node)
{
    struct batch **open;

    if (node_room(c, node))
        return NULL;
    open = &c->wd.nodes[node].open[kind][purpose];
    if (!*open)
        *open = new_batch(c->wd.renew_batch, c->cluster ? (int)node : -1, kind);
    return *open;
}

static void send_open(struct lw_client *c, int purpose, uint8_t kind, unsigned node)
{
    struct batch *b = c->wd.nodes[node].open[kind][purpose];

    c->wd.nodes[node].open[kind][purpose] = NULL;
    if (purpose == OPEN_RENEW)
        send_renew_batch(c, b);
    else
        send_drop_batch(c, b);
}

/* Send every batch still open: at most one per node, kind and purpose, so
 * a flush may pass the in-flight cap by that many. */
static void send_all_open(struct lw_client *c)
{
    for (int purpose = 0; purpose < 2; purpose++)
        for (unsigned node = 0; node < c->wd.nodes_cap; node++)
            for (uint8_t kind = 0; kind < KIND_COUNT; kind++)
                if (c->wd.nodes[node].open[kind][purpose])
                    send_open(c, purpose, kind, node);
}

/* e into its node's open batch of purpose; a batch filled is sent.  0, or
 * -1 when the node is not known (or no memory). */
static int add_to_node(struct lw_client *c, int purpose, struct entry *e, uint64_t now_ns)
{
    int node = c->cluster ? engine_slot_node(c->engine, e->slot) : 0;
    struct batch *b;

    if (node < 0 || !(b = open_batch(c, purpose, e->kind, (unsigned)node)))
        return -1;
    if (purpose == OPEN_RENEW)
        add_renewal(c, b, e, now_ns);
    else
        b->entries[b->n++] = e;
    if (b->n == c->wd.renew_batch)
        send_open(c, purpose, e->kind, (unsigned)node);
    return 0;
}

/* The in-flight cap counts per master, as the engine's max_inflight does:
 * every master has its own pipeline and round trip, and a cap shared by
 * three left each a third of the calls one Redis gets (lwbench: the lag
 * climbed past a third of the cluster's ceiling with 64, and stayed at a
 * millisecond with 64 per master).  Renewals go first; drops only fill
 * what in-flight room is left. */
static void flush_batches(struct lw_client *c, uint64_t now_ns)
{
    uint64_t masters = c->cluster ? engine_master_count(c->engine) : 1;
    uint64_t max = (uint64_t)c->wd.batches_max * masters;
    struct entry *e;

    while (!c->closing && c->wd.batches_inflight < max && (e = pop_due(c, now_ns)))
        if (add_to_node(c, OPEN_RENEW, e, now_ns))
            retry_next_tick(c, e, now_ns); /* the map will say; not a failure */
    while (!c->closing && lw_queue_empty(&c->wd.renew) && c->wd.batches_inflight < max &&
           (e = pop_drop(c)))
        if (add_to_node(c, OPEN_DROP, e, now_ns)) {
            e->dropping = 0; /* best effort: the lease ends it */
            release_if_unused(e);
        }
    send_all_open(c);
}

void watchdog_flush(struct lw_client *c)
{
    /* A batch whose write fails completes inside submit_batch(): it must
     * not start a flush of its own, or failures would nest. */
    c->wd.flushing = 1;
    flush_batches(c, lw_clock_now());
    c->wd.flushing = 0;
}

/*
 * A failover: the new master of e's slot was the old one's replica, and
 * replication is asynchronous, so what the old master acknowledged last may
 * not be there.  Ask at once (a renewal is the question: 1 still ours, 0
 * lost to the failover).  A renewal on the wire was answered, or will be,
 * by the old master: ask again once it is back.  One being unlocked is
 * settled by its unlock.  Nothing is lost here (the map is being walked):
 * an entry past giving up is left to its own timer.
 */
static void check_after_failover(struct lw_client *c, struct entry *e, uint64_t now_ns)
{
    e->failover_check = 1;
    if (e->state == ENTRY_SENT)
        e->recheck_after = 1;
    if (now_ns < give_up_at(c, e))
        note_risk(c, e, now_ns, 1); /* until the new master answers */
    if ((e->state != ENTRY_SCHEDULED && e->state != ENTRY_RETRY) || e->unlocking ||
        now_ns >= give_up_at(c, e))
        return;
    lw_wheel_cancel(c->wheel, &e->ct.timer);
    enqueue(c, e, now_ns);
}

void watchdog_failover(struct lw_client *c, const uint8_t *slots)
{
    uint64_t now = lw_clock_now();
    struct entry *head, *tmp, *e;

    HASH_ITER(hh, c->wd.entries, head, tmp) {
        for (e = head; e; e = next_owner(e))
            if (slots[e->slot / 8] & (1u << (e->slot % 8)))
                check_after_failover(c, e, now);
    }
}

uint64_t watchdog_backlog_ns(const struct lw_client *c, uint64_t now_ns)
{
    const struct entry *e = lw_item_of(lw_queue_peek(&c->wd.renew), struct entry, renew_node);

    return e && now_ns > e->due_ns ? now_ns - e->due_ns : 0;
}

/* Stop renewing (engine thread, closing); or, once the engine is gone
 * (c->wheel NULL), free what is left. */
void watchdog_shutdown(struct lw_client *c)
{
    struct entry *e, *tmp;

    while ((e = pop_renew(c))) { /* the FIFO lets go of them */
        e->state = ENTRY_SCHEDULED;
        if (e->dead)
            release_if_unused(e); /* the live ones go below */
    }
    while ((e = pop_drop(c))) { /* never sent: let go of them */
        e->dropping = 0;
        release_if_unused(e);
    }
    HASH_ITER(hh, c->wd.entries, e, tmp) {
        while (next_owner(e))
            retire(c, next_owner(e), 0);
        retire(c, e, 0);
    }
}
