/*
 * core/kind_permit.c - a permit of a semaphore (Redisson's
 * RPermitExpirableSemaphore, core/semaphore.c) as a lease kind.
 *
 * A permit is a member of the zset "{name}:timeout" scored with its
 * expiry in epoch ms.  Its entry is named by the semaphore, its owner is
 * the permit's tag (lw_permit_owner(): what on_lost and on_risk report),
 * and the permit's 16 bytes follow the name's NUL in the entry.
 *
 * A batch entry, with the names in KEYS: the semaphore's name and its
 * timeout key; then the id as its argument.  In a cluster node's batch:
 * the name only, the script builds the timeout key and the channel.  What
 * every permit of a call shares goes once a call (put_call): the publish
 * command.  The script reads Redis's TIME once (the lease is the call's
 * first argument), reclaims each semaphore's expired permits once a call
 * (as every Redisson script does, publishing the count), then moves each
 * id's score to Redis's TIME + the lease only if it is still there and
 * not expired: an id gone (released by someone, or reclaimed after a
 * stall) answers 0, is lost, and is never added back.  No client's clock
 * enters the score, so the lease counts from the call's last write, as a
 * lock's.  A lost permit is not dropped: its score ends it.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "entry.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "tag.h"
#include "watchdog.h"

static void put_permit(const struct lw_client *c, const struct entry *e, int node,
                       struct batch_args *a)
{
    size_t brace = tag_brace(e->name, e->len);
    const char *parts[4] = {"{", e->name, "}", ":timeout"};
    size_t lens[4] = {brace, e->len, brace, 8};

    (void)c;
    batch_key(a, e->name, e->len);
    if (!node)
        batch_key_cat(a, parts, lens, 4);
    batch_arg(a, e->name + e->len + 1, PERMIT_ID_LEN);
}

/* What the reclaims of a call publish with. */
static void put_permit_call(const struct lw_client *c, struct batch_args *a)
{
    const char *publish = client_publish_command(c);

    batch_call(a, publish, strlen(publish));
}

const struct lease_kind lw_kind_permit = {
    .noun = "permit",
    .label = "permit",
    .renew = SCRIPT_RENEW_PERMIT,
    .renew_node = SCRIPT_RENEW_PERMIT_NODE,
    .drop = SCRIPT_NONE,
    .drop_node = SCRIPT_NONE,
    .put = put_permit,
    .put_call = put_permit_call,
    .renewed = kind_renewed_integer,
    .client_clocks = 1, /* Redisson's clients reclaim by their own */
};
