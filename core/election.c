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
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/election.h>

#include "client_base.h"
#include "container.h"
#include "lock_op.h"
#include "owner.h"
#include "watchdog.h"
#include "way.h"

struct lw_election {
    struct lw_lock *lock;
    _Atomic uint32_t refs; /* the handle, plus one while its lease is in
                              the set (the watchdog's entry may outlive
                              the handle) */
    uint64_t owner;        /* this candidate's, its own */
    _Atomic uint64_t term; /* the term last elected for; 0: never */
    struct lease_set set;  /* its lease once elected (engine thread; the
                              watchdog writes set.sure_until_ns) */
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
 * ids): the handle's address, its top bit set. */
static uint64_t candidate_owner(const struct lw_election *e)
{
    return (uint64_t)(uintptr_t)e | (1ull << 63);
}

/* The set's loss is the lock's, told already (the client's on_lost):
 * the belief falls to 0 with it (watchdog.c). */
static void leadership_lost(struct lw_client *c, struct lease_set *s, const char *name,
                            size_t len)
{
    (void)c;
    (void)s;
    (void)name;
    (void)len;
}

int lw_election_new(struct lw_client *c, const void *name, size_t len, struct lw_election **out)
{
    struct lw_election *e;
    int rc;

    if (!out)
        return LW_EINVAL;
    if (!(e = calloc(1, sizeof *e)))
        return LW_ENOMEM;
    if ((rc = lock_new_way(c, name, len, &way_elect, 1, &e->lock))) {
        free(e);
        return rc;
    }
    atomic_init(&e->refs, 1);
    e->owner = candidate_owner(e);
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
    if (lw_election_sure_until(e))
        lw_election_resign(e);
    election_unref(e);
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
    a.owner = e->owner;
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
    a.owner = e->owner;
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
    a.owner = e->owner;
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
    a.owner = e->owner;
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
