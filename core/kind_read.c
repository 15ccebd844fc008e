/*
 * core/kind_read.c - the read holds of a read-write lock (Redisson's
 * RedissonReadLock) as a lease kind.
 *
 * An owner's read holds are the field "<client id>:<owner>" of the lock's
 * hash (the hold count), and one key per hold i = 1..count,
 * "{name}:<field>:rwlock_timeout:<i>" ("name:<field>:..." when the name has
 * a '{'), each with that hold's lease.  Any reader's release sets the
 * hash's TTL to the longest TTL among all those keys, and deletes the hash
 * when none is alive: so renewing a read hold renews each of its own keys,
 * and the hash to max(PTTL, lease) (never shorter: another reader may hold
 * a longer lease), and never another field's keys (as Redisson's
 * ReadLockTask since 4.4).
 *
 * A batch entry, with the names in KEYS: the name and its timeout keys
 * 1..holds (every key the script touches is declared), then the owner and
 * the hold count as arguments (the script builds the field from the
 * client id and the owner).  In a cluster node's batch (no keys declared:
 * names of many slots): the name, then the owner and the count;
 * the script builds the timeout keys' names.  The reply: 1 renewed, 0 the
 * field is gone (lost), -1 not served by that node.  A lost read hold is
 * not dropped: its keys end with their lease.
 *
 * What a hold costs Redis: HEXISTS of its field, a PEXPIRE per timeout
 * key, and the hash's max(PTTL, lease) once per name per call, as one
 * PEXPIRE GT where the server has it (scripts.c's stretch()): three
 * calls for a hold of one, where PTTL and PEXPIRE per hold made four.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "entry.h"
#include "owner.h"
#include "scripts.h"
#include "tag.h"

#define TIMEOUT_INFIX ":rwlock_timeout:"

static void put_timeout_keys(const struct entry *e, const char *field, size_t field_len,
                             struct batch_args *a)
{
    size_t brace = tag_brace(e->name, e->len);
    const char *parts[7] = {"{", e->name, "}", ":", field, TIMEOUT_INFIX, NULL};
    size_t lens[7] = {brace, e->len, brace, 1, field_len, sizeof TIMEOUT_INFIX - 1, 0};
    char index[12];

    for (uint32_t i = 1; i <= e->holds; i++) {
        lens[6] = (size_t)snprintf(index, sizeof index, "%u", i);
        parts[6] = index;
        batch_key_cat(a, parts, lens, 7);
    }
}

static void put_read(const struct lw_client *c, const struct entry *e, int node,
                     struct batch_args *a)
{
    char field[FIELD_MAX], holds[12];
    size_t len = client_field(c, e->owner, field);
    size_t id_len = c->id_len + 1; /* the owner follows "<id>:" */

    batch_key(a, e->name, e->len);
    if (!node)
        put_timeout_keys(e, field, len, a);
    batch_arg_copy(a, field + id_len, len - id_len);
    batch_arg_copy(a, holds, (size_t)snprintf(holds, sizeof holds, "%u", e->holds));
}

const struct lease_kind lw_kind_read = {
    .noun = "read lock",
    .label = "read",
    .renew = SCRIPT_RENEW_READ,
    .renew_node = SCRIPT_RENEW_READ_NODE,
    .drop = SCRIPT_NONE,
    .drop_node = SCRIPT_NONE,
    .put = put_read,
    .renewed = kind_renewed_integer,
};
