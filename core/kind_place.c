/*
 * core/kind_place.c - a waiter's place in a fair lock's queue (lock.c,
 * way_fair.c) as a lease kind.
 *
 * The queue is Redisson's RFairLock's: the list redisson_lock_queue:{name}
 * of the waiters' fields, and their give-up times in the sorted set
 * redisson_lock_timeout:{name} (epoch ms).  A dead Redisson waiter keeps
 * its place until its give-up time, up to the lock's wait (5 minutes by
 * default) times its place in line; everyone behind waits for it.  A
 * leasewheel waiter's place has a lease of its own besides: its score in
 * leasewheel_lock_place:{name}, Redis's TIME + fair_place_ms, which our
 * scripts read when they drop the queue's stale head.  This kind renews
 * it while the waiter lives, so a dead one drops out within a place
 * lease.
 *
 * A batch entry, with the names in KEYS: the give-up times, the places
 * and the queue (all built from the name, Redisson's prefixName rule);
 * then the owner as its argument.  In a cluster node's batch: the name
 * only, the script builds the keys.  Once a call (put_call): the lock's
 * wait.  Per waiter the script answers 1 while the waiter is in the queue
 * (scripts.c, keep(): its place moved to Redis's TIME + the place lease,
 * its give-up time raised to what its position in line needs, so that
 * the acquires ahead, each lowering it by the wait as Redisson's rule
 * has it, cannot make a live waiter stale), 0 once it is gone (dropped as
 * stale, or its give-up time passed): lost, and the waiter goes on from
 * the queue's tail at its next look.  A lost place is not dropped: it is
 * gone already, or its score ends it.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "entry.h"
#include "owner.h"
#include "scripts.h"
#include "tag.h"

/* "<prefix>:{name}", or "<prefix>:name" when the name has a '{' of its
 * own, into the batch's keys. */
static void put_prefixed(struct batch_args *a, const char *prefix, size_t prefix_len,
                         const struct entry *e)
{
    size_t brace = tag_brace(e->name, e->len);
    const char *parts[4] = {prefix, "{", e->name, "}"};
    size_t lens[4] = {prefix_len, brace, e->len, brace};

    batch_key_cat(a, parts, lens, 4);
}

static void put_place(const struct lw_client *c, const struct entry *e, int node,
                      struct batch_args *a)
{
    char owner[OWNER_MAX];

    (void)c;
    if (node) {
        batch_key(a, e->name, e->len);
    } else {
        put_prefixed(a, FAIR_TIMEOUT_PREFIX ":", sizeof FAIR_TIMEOUT_PREFIX ":" - 1, e);
        put_prefixed(a, FAIR_PLACE_PREFIX ":", sizeof FAIR_PLACE_PREFIX ":" - 1, e);
        put_prefixed(a, FAIR_QUEUE_PREFIX ":", sizeof FAIR_QUEUE_PREFIX ":" - 1, e);
    }
    batch_arg_copy(a, owner, owner_digits(e->owner, owner));
}

/* The lock's wait, which each place in line adds to a give-up time. */
static void put_place_call(const struct lw_client *c, struct batch_args *a)
{
    char v[24];

    batch_copy(a, &a->call, v,
               (size_t)snprintf(v, sizeof v, "%llu", (unsigned long long)c->fair_wait_ms));
}

const struct lease_kind lw_kind_place = {
    .noun = "place",
    .label = "place",
    .renew = SCRIPT_RENEW_PLACE,
    .renew_node = SCRIPT_RENEW_PLACE_NODE,
    .drop = SCRIPT_NONE,
    .drop_node = SCRIPT_NONE,
    .put = put_place,
    .put_call = put_place_call,
    .renewed = kind_renewed_integer,
    .client_clocks = 1, /* Redisson's clients prune by their own */
    .not_held = 1,
};
