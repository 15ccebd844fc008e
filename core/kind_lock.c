/*
 * core/kind_lock.c - a plain lock (Redisson's RLock) as a lease kind: its
 * hash at the name, its hold the field "<client id>:<owner>".  A batch
 * entry is the name (a key) and the field (an argument); the reply, 1
 * renewed or 0 not ours (-1 from a node batch: not served there).  The
 * field goes as the owner alone, the script putting the client id (an
 * argument of the call) in front.  A lost
 * lock's field is dropped, and "0" published on its lock channel when that
 * frees it.  A fair lock held (Redisson's RFairLock, lock.c) is the same
 * hash and field, renewed and dropped the same way, under a kind of its
 * own so that it is counted and reported as a fair lock (its drop wakes
 * no waiter of the queue: the lease of the lost lock would have run out
 * anyway, and the head's next look finds it free).  So is a leader's
 * term under a lock delay (election.c), renewed with the lease and the
 * delay (client.c's kind_leases()) and never dropped.
 */
#include "client_base.h"
#include "lock_op.h"
#include "entry.h"
#include "owner.h"
#include "scripts.h"

static void put_lock(const struct lw_client *c, const struct entry *e, int node,
                     struct batch_args *a)
{
    char owner[OWNER_MAX];

    (void)c;
    (void)node; /* the same entry either way */
    batch_key(a, e->name, e->len);
    batch_arg_copy(a, owner, owner_digits(e->owner, owner));
}

/* A hold that is a field of the name's hash: a lock's, a fair lock's, a
 * term's; dropped when lost by the scripts given, or not (SCRIPT_NONE). */
#define HASH_FIELD_KIND(noun_, label_, drop_, drop_node_)             \
    {                                                                 \
        .noun = noun_, .label = label_, .renew = SCRIPT_RENEW_OWNERS, \
        .renew_node = SCRIPT_RENEW_OWNERS_NODE, .drop = drop_,        \
        .drop_node = drop_node_, .put = put_lock,                     \
        .renewed = kind_renewed_integer,                              \
    }

const struct lease_kind lw_kind_lock =
    HASH_FIELD_KIND("lock", "lock", SCRIPT_DROP, SCRIPT_DROP_NODE);
const struct lease_kind lw_kind_fair =
    HASH_FIELD_KIND("fair lock", "fair", SCRIPT_DROP, SCRIPT_DROP_NODE);
/* A leader's term under a lock delay is not dropped when lost: the
 * delay is what keeps the name after a leader that may still be at work
 * (its leadership lost, not given up), and a drop would end it. */
const struct lease_kind lw_kind_term = HASH_FIELD_KIND("term", "term", SCRIPT_NONE, SCRIPT_NONE);
