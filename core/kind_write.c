/*
 * core/kind_write.c - the write hold of a read-write lock (Redisson's
 * RedissonWriteLock) as a lease kind.  Its hash is the lock's name, as for
 * a lock, with a `mode` field, and its hold the field
 * "<client id>:<owner>:write": renewed by the locks' own scripts (Redisson's
 * write locks are renewed by its RLock watchdog the same way), with that
 * field (sent as "<owner>:write", the script putting "<client id>:" in
 * front).  A lost write hold is not dropped: the write lock's release must
 * turn `mode` back to read when the owner still reads, which the locks'
 * drop does not know; its lease ends it.
 */
#include <string.h>

#include "client_base.h"
#include "entry.h"
#include "owner.h"
#include "scripts.h"

#define WRITE_SUFFIX ":write"

static void put_write(const struct lw_client *c, const struct entry *e, int node,
                      struct batch_args *a)
{
    char owner[OWNER_MAX + sizeof WRITE_SUFFIX];
    size_t len = owner_digits(e->owner, owner);

    (void)c;
    (void)node;
    memcpy(owner + len, WRITE_SUFFIX, sizeof WRITE_SUFFIX - 1);
    batch_key(a, e->name, e->len);
    batch_arg_copy(a, owner, len + sizeof WRITE_SUFFIX - 1);
}

const struct lease_kind lw_kind_write = {
    .noun = "write lock",
    .label = "write",
    .renew = SCRIPT_RENEW_OWNERS,
    .renew_node = SCRIPT_RENEW_OWNERS_NODE,
    .drop = SCRIPT_NONE,
    .drop_node = SCRIPT_NONE,
    .put = put_write,
    .renewed = kind_renewed_integer,
};
