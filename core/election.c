/*
 * core/election.c - leader election (<leasewheel/election.h>): a
 * candidate is a lock handle asked for by way_elect (way_elect.c), fenced
 * (its terms are the name's fencing tokens), with an owner of its own.
 *
 * Every call is a lock call (lock_run(), lock.c): a campaign is the
 * lock's acquire, which waits in this client's line for the name as any
 * lock's; a resign its unlock; a proclaim and the leader's read calls of
 * the election's own kinds.  The leader's belief is a lease set of one
 * (watchdog.h) that the campaign's lease joins once elected: the watchdog
 * writes its proven end there at each renewal, and 0 once it is gone,
 * which lw_election_sure_until() reads without a lock.
 *
 * An observer lives on the engine thread: it reads the name (OP_LEADER,
 * async), tells its callback what changed, and reads again when a message
 * comes on the election's channel (it waits in that channel's line,
 * channel.c, with a class of its own), at the leader's sure_until, or a
 * third of the lease after a vacancy; a read that fails after the belief
 * ran out says "unknown".
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/election.h>

#include "channel.h"
#include "client_base.h"
#include "container.h"
#include "lock_op.h"
#include "owner.h"
#include "watchdog.h"
#include "way.h"

struct lw_election {
    struct lw_lock *lock;
    _Atomic uint32_t refs;  /* the handle, plus one while its lease is in
                               the set (the watchdog's entry may outlive
                               the handle) */
    _Atomic uint64_t owner; /* this candidate's, its own: a new one after
                               each term lost (leadership_lost()) */
    unsigned losses;        /* terms lost (engine thread) */
    _Atomic uint64_t term;  /* the term last elected for; 0: never */
    struct lease_set set;   /* its lease once elected (engine thread; the
                               watchdog writes set.sure_until_ns) */
    struct observer {       /* engine thread, but fn and arg, set first */
        lw_observe_fn *fn;
        void *arg;
        uint8_t on;            /* observing */
        uint8_t reading;       /* a read is out */
        uint8_t again;         /* a hint came while reading: read again */
        int told;              /* the state last told, -1 none */
        struct lw_leader last; /* the leader last told */
        struct lw_leader read; /* the read's answer */
        uint64_t seen_term;    /* the highest term told */
        struct wait_link link; /* in the election channel's line */
        struct core_timer ct;  /* the next read */
    } obs;
};

static void election_unref(struct lw_election *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        lock_unref(e->lock);
        free(e);
    }
}

/* The watchdog's entry joins or leaves the set (engine thread). */
static void set_hold(struct lease_set *s, int delta)
{
    struct lw_election *e = lw_container_of(s, struct lw_election, set);

    if (delta > 0)
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    else
        election_unref(e);
}

/* An owner no thread of this process has (lw_owner_self()'s are thread
 * ids): the handle's address, its top bit set, and the count of terms
 * it lost in the bits above a user-space address (48). */
static uint64_t candidate_owner(const struct lw_election *e, unsigned losses)
{
    return ((uint64_t)(uintptr_t)e ^ ((uint64_t)(losses & 0x7fff) << 48)) | (1ull << 63);
}

static uint64_t owner_of(const struct lw_election *e)
{
    return atomic_load_explicit(&e->owner, memory_order_acquire);
}

/* The set's loss is the lock's, told already (the client's on_lost):
 * the belief falls to 0 with it (watchdog.c).  The candidate takes a new
 * owner: the lost term's field may still be in Redis (a lock delay
 * keeps it, or an expiry not yet due), and a campaign by its old owner
 * would re-enter that term, the one a deposed leader's work may still
 * carry, instead of waiting for a new one. */
static void leadership_lost(struct lw_client *c, struct lease_set *s, const char *name,
                            size_t len)
{
    struct lw_election *e = lw_container_of(s, struct lw_election, set);

    (void)c;
    (void)name;
    (void)len;
    atomic_store_explicit(&e->owner, candidate_owner(e, ++e->losses), memory_order_release);
}

/* A candidate's lock, asked for by way: fenced (its tokens are terms),
 * and held as a term (KIND_TERM) when the client has a lock delay, so
 * that Redis keeps the name that long past a lost leader's lease. */
static int candidate_lock(struct lw_client *c, const void *name, size_t len,
                          const struct lock_way *way, struct lw_lock **out)
{
    int rc = lock_new_way(c, name, len, way, 1, out);

    if (!rc && c->lock_delay_ms)
        (*out)->kind = KIND_TERM;
    return rc;
}

int lw_election_new(struct lw_client *c, const void *name, size_t len, struct lw_election **out)
{
    struct lw_election *e;
    int rc;

    if (!out)
        return LW_EINVAL;
    if (!(e = calloc(1, sizeof *e)))
        return LW_ENOMEM;
    if ((rc = candidate_lock(c, name, len, &way_elect_queued, &e->lock))) {
        free(e);
        return rc;
    }
    atomic_init(&e->refs, 1);
    atomic_init(&e->owner, candidate_owner(e, 0));
    e->set.on_lost = leadership_lost;
    e->set.hold = set_hold;
    *out = e;
    return 0;
}

void lw_election_free(struct lw_election *e)
{
    if (!e)
        return;
    /* A leader freed resigns: nothing else would end its leadership but
     * its lease lost.  Should that fail (or be refused, on the engine
     * thread), the lease's entry keeps the election's memory until it
     * ends. */
    if (e->obs.fn)
        lw_election_unobserve(e);
    if (lw_election_sure_until(e))
        lw_election_resign(e);
    election_unref(e);
}

int lw_election_set_queued(struct lw_election *e, int queued)
{
    const struct lock_way *way = queued ? &way_elect_queued : &way_elect;
    struct lw_lock *lock;
    int rc;

    if (!e)
        return LW_EINVAL;
    if (e->lock->way == way)
        return 0;
    /* Nothing out on the handle yet: its lock may change ways. */
    if (atomic_load_explicit(&e->term, memory_order_relaxed) || e->obs.fn ||
        atomic_load_explicit(&e->refs, memory_order_acquire) > 1)
        return LW_EBUSY;
    if ((rc = candidate_lock(e->lock->client, e->lock->name, e->lock->len, way, &lock)))
        return rc;
    lock_unref(e->lock);
    e->lock = lock;
    return 0;
}

static int check_value(const struct lw_election *e, const void *value, size_t len)
{
    if (!e || (!value && len))
        return LW_EINVAL;
    return len > LW_ELECTION_VALUE_MAX ? LW_ERANGE : 0;
}

int lw_election_campaign(struct lw_election *e, const void *value, size_t len,
                         uint64_t wait_ms, uint64_t *term)
{
    struct lock_run_args a = {.wait_ms = wait_ms, .value = value ? value : "", .value_len = len};
    int64_t got = 0;
    int rc = check_value(e, value, len);

    if (rc)
        return rc;
    a.owner = owner_of(e);
    a.set = &e->set;
    if ((rc = lock_run(e->lock, OP_ACQUIRE, &a, &got)))
        return rc;
    atomic_store_explicit(&e->term, (uint64_t)got, memory_order_relaxed);
    if (term)
        *term = (uint64_t)got;
    return 0;
}

/* An async campaign's end: the term kept, then the caller told. */
struct campaign {
    struct lw_election *e;
    lw_done_fn *done;
    void *arg;
};

static void campaigned(int err, int64_t term, void *arg)
{
    struct campaign *cp = arg;

    if (!err)
        atomic_store_explicit(&cp->e->term, (uint64_t)term, memory_order_relaxed);
    if (cp->done)
        cp->done(err, term, cp->arg);
    election_unref(cp->e);
    free(cp);
}

int lw_election_campaign_async(struct lw_election *e, const void *value, size_t len,
                               uint64_t wait_ms, lw_done_fn *done, void *arg)
{
    struct lock_run_args a = {.wait_ms = wait_ms, .value = value ? value : "", .value_len = len};
    struct campaign *cp;
    int rc = check_value(e, value, len);

    if (rc)
        return rc;
    if (!(cp = malloc(sizeof *cp)))
        return LW_ENOMEM;
    cp->e = e;
    cp->done = done;
    cp->arg = arg;
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    a.owner = owner_of(e);
    a.set = &e->set;
    a.done = campaigned;
    a.arg = cp;
    if ((rc = lock_run(e->lock, OP_ACQUIRE, &a, NULL))) {
        election_unref(e);
        free(cp);
    }
    return rc;
}

int lw_election_proclaim(struct lw_election *e, const void *value, size_t len)
{
    struct lock_run_args a = {.value = value ? value : "", .value_len = len};
    int64_t proclaimed = 0;
    int rc = check_value(e, value, len);

    if (rc)
        return rc;
    a.owner = owner_of(e);
    a.term = atomic_load_explicit(&e->term, memory_order_relaxed);
    if ((rc = lock_run(e->lock, OP_PROCLAIM, &a, &proclaimed)))
        return rc;
    return proclaimed == 1 ? 0 : LW_ENOTOWNER;
}

int lw_election_resign(struct lw_election *e)
{
    struct lock_run_args a = {0};
    int64_t left = 0;
    int rc;

    if (!e)
        return LW_EINVAL;
    a.owner = owner_of(e);
    /* Every hold: a leader that campaigned again holds more than one. */
    do
        rc = lock_run(e->lock, OP_UNLOCK, &a, &left);
    while (rc == 0 && left > 0);
    return rc;
}

int lw_election_leader(struct lw_election *e, struct lw_leader *out)
{
    struct lock_run_args a = {0};

    if (!e || !out)
        return LW_EINVAL;
    a.out = out;
    return lock_run(e->lock, OP_LEADER, &a, NULL);
}

uint64_t lw_election_sure_until(const struct lw_election *e)
{
    return e ? atomic_load_explicit(&e->set.sure_until_ns, memory_order_acquire) : 0;
}

uint64_t lw_election_term(const struct lw_election *e)
{
    return e ? atomic_load_explicit(&e->term, memory_order_relaxed) : 0;
}

/* ---- Observing (engine thread) ---- */

static void observe_read(struct lw_election *e);

static struct lw_election *observer_of(struct observer *o)
{
    return lw_container_of(o, struct lw_election, obs);
}

/* Tell the callback state, when it changed (or the leader did). */
static void tell(struct lw_election *e, int state, const struct lw_leader *l)
{
    struct observer *o = &e->obs;
    struct lw_client *c = e->lock->client;

    if (state == o->told &&
        (state != LW_OBSERVED_LEADER ||
         (l->term == o->last.term && !strcmp(l->leader, o->last.leader) &&
          l->value_len == o->last.value_len &&
          !memcmp(l->value, o->last.value, l->value_len)))) {
        o->last.sure_until_ns = l->sure_until_ns;
        return;
    }
    if (state == LW_OBSERVED_VACANT && o->told == LW_OBSERVED_LEADER)
        stats_vacancy(&c->count);
    o->told = state;
    o->last = *l;
    if (state == LW_OBSERVED_LEADER && l->term > o->seen_term)
        o->seen_term = l->term;
    c->in_callback++;
    o->fn(state, l, o->arg);
    c->in_callback--;
}

/* The next read at at_ns. */
static void read_at(struct lw_election *e, uint64_t at_ns)
{
    struct lw_client *c = e->lock->client;

    lw_wheel_cancel(c->wheel, &e->obs.ct.timer);
    lw_wheel_schedule(c->wheel, &e->obs.ct.timer, at_ns);
}

static void observed(int err, int64_t value, void *arg)
{
    struct lw_election *e = arg;
    struct observer *o = &e->obs;
    struct lw_client *c = e->lock->client;
    uint64_t now = lw_clock_now();
    struct lw_leader *l = &o->read;

    (void)value;
    o->reading = 0;
    if (!o->on || c->closing) {
        election_unref(e);
        return;
    }
    if (err) { /* the belief may still hold; past it, nobody can say */
        if (o->told != LW_OBSERVED_LEADER || now >= o->last.sure_until_ns) {
            struct lw_leader none = {0};

            tell(e, LW_OBSERVED_UNKNOWN, &none);
        }
        read_at(e, now + 10 * c->tick_ns);
    } else if (!l->held) {
        tell(e, LW_OBSERVED_VACANT, l);
        read_at(e, now + c->lease_ms * 1000000u / 3);
    } else if (l->term && l->term < o->seen_term && o->told != LW_OBSERVED_UNKNOWN) {
        read_at(e, now + c->tick_ns); /* an older term, read late: drop it */
    } else {
        tell(e, LW_OBSERVED_LEADER, l);
        read_at(e, l->sure_until_ns > now ? l->sure_until_ns : now + c->tick_ns);
    }
    if (o->again) {
        o->again = 0;
        observe_read(e);
    }
    election_unref(e);
}

/* Read the name, unless a read is out (then once more after it). */
static void observe_read(struct lw_election *e)
{
    struct lock_run_args a = {0};
    struct observer *o = &e->obs;

    if (o->reading) {
        o->again = 1;
        return;
    }
    a.out = &o->read;
    a.done = observed;
    a.arg = e;
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    o->reading = 1;
    if (lock_run(e->lock, OP_LEADER, &a, NULL)) {
        o->reading = 0;
        election_unref(e);
        read_at(e, lw_clock_now() + 10 * e->lock->client->tick_ns);
    }
}

static void observe_timer_fired(struct lw_client *c, struct core_timer *t, uint64_t now_ns)
{
    struct lw_election *e = lw_container_of(t, struct lw_election, obs.ct);

    (void)c;
    (void)now_ns;
    if (e->obs.on)
        observe_read(e);
}

/* The election channel's events: every one is a hint to read. */
static struct observer *observer_at(struct wait_link *l)
{
    return lw_container_of(l, struct observer, link);
}

static void hint_all(struct wait_channel *ch)
{
    struct wait_link *l = channel_first(ch), *next;

    /* A read may complete at once (a failed write), and its callback
     * unobserve: the next link is taken first. */
    for (; l; l = next) {
        next = channel_next(l);
        observe_read(observer_of(observer_at(l)));
    }
}

static void on_live(struct lw_client *c, struct wait_channel *ch)
{
    (void)c;
    hint_all(ch); /* a change before the subscription went unheard */
}

static void on_message(struct lw_client *c, struct wait_channel *ch, const char *msg, size_t len)
{
    (void)c;
    (void)msg;
    (void)len;
    hint_all(ch);
}

static void stop_observing(struct lw_client *c, struct lw_election *e)
{
    struct observer *o = &e->obs;

    if (!o->on)
        return;
    o->on = 0;
    stats_observers(&c->count, -1);
    if (c->wheel)
        lw_wheel_cancel(c->wheel, &o->ct.timer);
    if (o->link.chan) {
        channel_remove(&o->link);
        channel_settle(c, e->lock->companion_keys[0], e->lock->companion_lens[0]);
    }
    election_unref(e); /* the observing's */
}

static void on_stop(struct lw_client *c, struct wait_link *l)
{
    stop_observing(c, observer_of(observer_at(l)));
}

static const struct channel_class observing = {on_live, on_message, on_stop};

static void start_observing(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct lw_election *e = arg;
    struct lw_client *c = e->lock->client;

    (void)req;
    (void)reply;
    if (err || c->closing)
        return;
    e->obs.on = 1;
    e->obs.told = -1;
    stats_observers(&c->count, 1);
    e->obs.ct.fire = observe_timer_fired;
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    if (channel_join(c, &observing, e->lock->companion_keys[0], e->lock->companion_lens[0],
                     &e->obs.link) < 0)
        e->obs.link.chan = NULL;
    observe_read(e); /* at once, and again when the subscription is live */
}

static void end_observing(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct lw_election *e = arg;

    (void)req;
    (void)reply;
    (void)err;
    stop_observing(e->lock->client, e);
}

/* Run fn on the engine thread and wait: at once when on it already. */
static int on_engine(struct lw_election *e, request_fn *fn)
{
    struct lw_client *c = e->lock->client;
    struct request task;
    int rc;

    if (atomic_load_explicit(&c->freed, memory_order_acquire))
        return LW_ESHUTDOWN;
    if (engine_on_thread(c->engine)) {
        fn(NULL, NULL, 0, e);
        return 0;
    }
    memset(&task, 0, sizeof task);
    request_task(&task);
    rc = engine_call(c->engine, &task, fn, e);
    request_clear(&task);
    return rc;
}

int lw_election_observe(struct lw_election *e, lw_observe_fn *fn, void *arg)
{
    int rc;

    if (!e || !fn)
        return LW_EINVAL;
    if (e->obs.fn)
        return LW_EBUSY;
    e->obs.fn = fn;
    e->obs.arg = arg;
    if ((rc = on_engine(e, start_observing)))
        e->obs.fn = NULL;
    return rc;
}

int lw_election_unobserve(struct lw_election *e)
{
    int rc;

    if (!e || !e->obs.fn)
        return LW_EINVAL;
    rc = on_engine(e, end_observing);
    e->obs.fn = NULL;
    return rc;
}
