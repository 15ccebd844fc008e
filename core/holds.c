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
 *
 * A watchdog acquire that failed unanswered (its connection lost, its
 * reply timed out) may have run all the same: then a hold is in Redis that
 * the caller was told it does not have and nothing renews, a lease lock
 * of its own.  Its record is marked unsure (no count: maybe none).  Should
 * the same owner acquire the lock again within that lease, Redis adds to
 * that hold and answers with one more than the caller holds: the reply
 * takes the mark (holds_take_unsure()) and gives the surplus back.  Left
 * there, the caller's unlock would leave the hold behind, renewed by the
 * watchdog for nobody, and every acquire after it a re-entry with the same
 * fencing token.
 *
 * Engine thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "client_base.h"
#include "lock_op.h"
#include "holds.h"

struct lease_hold {
    UT_hash_handle hh;
    uint64_t until_ns;        /* its lease surely ends by then */
    uint64_t unsure_until_ns; /* 0, or until then an acquire that failed
                                 unanswered may have left a hold */
    uint32_t holds;           /* 0: only an unsure mark */
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

    HASH_FIND(hh, c->holds.table, key, len, h);
    return h;
}

static void drop(struct lw_client *c, struct lease_hold *h)
{
    HASH_DEL(c->holds.table, h);
    free(h);
}

/* The record of (lock, owner), made when there is none; NULL without
 * memory. */
static struct lease_hold *get(struct lw_client *c, const struct lw_lock *lock, uint64_t owner)
{
    struct lease_hold *h = find(c, lock, owner);

    if (!h && (h = calloc(1, sizeof *h + sizeof owner + 1 + lock->len))) {
        h->key_len = make_key(h->key, lock, owner);
        HASH_ADD(hh, c->holds.table, key, h->key_len, h);
    }
    return h;
}

void holds_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    uint32_t holds, uint64_t until_ns)
{
    struct lease_hold *h = get(c, lock, owner);

    if (!h)
        return; /* then its acquires are sent, never queued: still safe */
    h->holds = holds;
    if (until_ns > h->until_ns)
        h->until_ns = until_ns;
}

/* Drop the records that are only an unsure mark past its time: marks of
 * names the owner never acquired again.  At most once a lease, so that a
 * burst of unanswered acquires (a connection lost with thousands in
 * flight) costs one pass. */
static void sweep_unsure(struct lw_client *c, uint64_t now_ns)
{
    struct lease_hold *h, *tmp;

    if (now_ns < c->holds.unsure_swept_ns + c->lease_ms * 1000000u)
        return;
    c->holds.unsure_swept_ns = now_ns;
    HASH_ITER(hh, c->holds.table, h, tmp) {
        if (!h->holds && h->unsure_until_ns <= now_ns)
            drop(c, h);
    }
}

void holds_unsure(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                  uint64_t until_ns)
{
    struct lease_hold *h;

    sweep_unsure(c, lw_clock_now());
    h = get(c, lock, owner);

    if (!h)
        return; /* a surplus hold, if any, stays: as before the mark */
    if (until_ns > h->unsure_until_ns)
        h->unsure_until_ns = until_ns;
}

int holds_take_unsure(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                      uint64_t now_ns)
{
    struct lease_hold *h = find(c, lock, owner);
    int unsure;

    if (!h || !h->unsure_until_ns)
        return 0;
    unsure = now_ns < h->unsure_until_ns;
    h->unsure_until_ns = 0;
    if (!h->holds)
        drop(c, h);
    return unsure;
}

void holds_released(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    int64_t holds_left)
{
    struct lease_hold *h = find(c, lock, owner);

    if (!h || !h->holds)
        return; /* none with a lease of its own: an unsure mark stays */
    if (holds_left > 0)
        h->holds = (uint32_t)holds_left;
    else if (h->unsure_until_ns)
        h->holds = 0;
    else
        drop(c, h);
}

int holds_has(struct lw_client *c, const struct lw_lock *lock, uint64_t owner, uint64_t now_ns)
{
    struct lease_hold *h = find(c, lock, owner);

    if (!h || !h->holds)
        return 0; /* an unsure mark is no hold the client knows of */
    if (now_ns >= h->until_ns) {
        if (h->unsure_until_ns)
            h->holds = 0; /* its lease has run out; the mark stays */
        else
            drop(c, h);
        return 0;
    }
    return 1;
}

void holds_shutdown(struct lw_client *c)
{
    struct lease_hold *h, *tmp;

    HASH_ITER(hh, c->holds.table, h, tmp) {
        drop(c, h);
    }
}
