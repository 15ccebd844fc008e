/*
 * core/holds.c - the locks with a lease of their own (not the watchdog's)
 * that this client's owners hold, as far as it knows: for the waiters'
 * queue (waiters.c), which must never put an owner's reentrant acquire
 * behind waiters that wait for that very owner.  The watchdog knows its
 * own locks (watchdog_renews()); these are the others.
 *
 * A record is made by an acquire, changed by an unlock's reply, and dead
 * once its lease has run out (a lease lock ends by itself): an old record
 * only makes an acquire be sent instead of queued, never the reverse.
 * Engine thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "client_private.h"
#include "holds.h"

struct lease_hold {
    UT_hash_handle hh;
    uint64_t until_ns; /* its lease surely ends by then */
    uint32_t holds;
    size_t key_len;
    char key[]; /* the owner (8 bytes), the lock's kind (1), its name */
};

/* The record's key for (lock, owner), in buf (KEY_MAX): a read and a write
 * hold of one name and owner are two records. */
#define KEY_MAX (sizeof(uint64_t) + 1 + LW_LOCK_NAME_MAX)
static size_t make_key(char *buf, const struct lw_lock *lock, uint64_t owner)
{
    memcpy(buf, &owner, sizeof owner);
    buf[sizeof owner] = (char)lock->kind;
    memcpy(buf + sizeof owner + 1, lock->name, lock->len);
    return sizeof owner + 1 + lock->len;
}

static struct lease_hold *find(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    char key[KEY_MAX];
    size_t len = make_key(key, lock, owner);
    struct lease_hold *h = NULL;

    HASH_FIND(hh, c->lease_holds, key, len, h);
    return h;
}

static void drop(struct lw_client *c, struct lease_hold *h)
{
    HASH_DEL(c->lease_holds, h);
    free(h);
}

void holds_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    uint32_t holds, uint64_t until_ns)
{
    struct lease_hold *h = find(c, lock, owner);

    if (!h) {
        if (!(h = calloc(1, sizeof *h + sizeof owner + 1 + lock->len)))
            return; /* then its acquires are sent, never queued: still safe */
        h->key_len = make_key(h->key, lock, owner);
        HASH_ADD(hh, c->lease_holds, key, h->key_len, h);
    }
    h->holds = holds;
    if (until_ns > h->until_ns)
        h->until_ns = until_ns;
}

void holds_released(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    int64_t holds_left)
{
    struct lease_hold *h = find(c, lock, owner);

    if (!h)
        return;
    if (holds_left > 0)
        h->holds = (uint32_t)holds_left;
    else
        drop(c, h);
}

int holds_has(struct lw_client *c, const struct lw_lock *lock, uint64_t owner, uint64_t now_ns)
{
    struct lease_hold *h = find(c, lock, owner);

    if (h && now_ns >= h->until_ns) {
        drop(c, h); /* its lease has run out */
        h = NULL;
    }
    return h != NULL;
}

void holds_shutdown(struct lw_client *c)
{
    struct lease_hold *h, *tmp;

    HASH_ITER(hh, c->lease_holds, h, tmp) {
        drop(c, h);
    }
}
