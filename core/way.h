/*
 * core/way.h - the ways a lock handle is asked for, as a table: what
 * varies between a plain lock, a read lock, a write lock and a fair lock
 * on the acquire side, as kind.h says what varies in renewal.
 *
 * lock.c keeps one op, one set of states, one reading of replies, the
 * replicas' WAIT, the belief rule (a hold counts from its command's
 * last write), re-sent and unanswered acquires, and the hand-over for every
 * lock handle.  What differs is what goes on the wire and where a refused
 * acquire waits, and that is what a way says:
 *
 *   format       the command of an op (its kind: acquire, unlock, undo,
 *                trim, force-unlock, a query), with the owner's hash
 *                field; 1 when that op is a plain command the way does
 *                not change (lock.c's: EXISTS, HEXISTS, HGET, PTTL, the
 *                status script);
 *   join, leave  the line a refused acquire waits in: this client's line
 *                for the name (waiters.c, on the name's channel), or a
 *                fair lock's place in Redis's queue, alone on a channel of
 *                its own;
 *   and what the handle's keys and fields are called, and a few flags.
 *
 * Every way's acquire answers in one of three shapes, which lock.c reads:
 *   {token, holds}   taken (holds: the owner's count, 1 for a first hold);
 *   pttl             held by another: look again in pttl ms unless woken
 *                    (-1: no expiry known);
 *   {why}            refused: -1 the name holds another kind, -3 a reader
 *                    asking to write (no upgrade).
 *
 * A way is one file (way_lock.c, way_rw.c for the two halves of a
 * read-write lock, way_fair.c) holding its row, set in the handle when it
 * is made (lock->way): the row is the handle's identity, so lock.c and
 * multi.c ask the row's fields (its lease kind, fencing, a plain lock's
 * extras, its multi-lock mode, its companion keys), never which kind it
 * is.  way.c holds what the rows share.
 */
#ifndef LW_CORE_WAY_H
#define LW_CORE_WAY_H

#include <stddef.h>
#include <stdint.h>

struct lw_client;
struct lw_lock;
struct op;

struct lock_way {
    /* Its channel's prefix (Redisson's lock channel, or a read-write
     * lock's). */
    const char *channel_prefix;
    /* Appended to the owner's hash field: ":write" for a write lock. */
    const char *field_suffix;
    /* Format op's command into op->req; field (flen bytes) is its
     * owner's.  0, a negative LW_E* code, or 1 for a plain command. */
    int (*format)(struct op *op, const char *field, size_t flen);
    /* A refused acquire joins its line: 1 to try again now (a release
     * may have gone unheard), 0 to wait, -1 out of memory. */
    int (*join)(struct lw_client *c, struct op *op);
    /* op leaves its line, if it is in one, with the lock (acquired) or
     * not. */
    void (*leave)(struct lw_client *c, struct op *op, int acquired);
    uint8_t queues;      /* a new acquire queues behind this client's waiters
                            for the name, without trying */
    uint8_t per_attempt; /* its acquire is formatted again, on the engine
                            thread, for each attempt (a fair lock's: may
                            it still join the queue?) */
    uint8_t shares;      /* holders share it (a read): waiters behind a reader
                            that got in try too */
    /* The lease kind its holds are renewed as (kind.h). */
    uint8_t kind;
    /* Its first acquires may draw a fencing token (lw_lock_set_fenced();
     * a read shares its hold, so it has none). */
    uint8_t fences;
    /* A plain lock's extras (lock.c): an unlock hands the lock to this
     * client's first waiter for the name; lw_unlock_after() may leave a
     * minimum hold; a force-unlock frees every hold of the name, so the
     * watchdog forgets them before the reply (the others, a read-write
     * lock's half freeing only its own mode, when the reply says so). */
    uint8_t hands_over;
    uint8_t min_hold;
    uint8_t forgets_forced;
    /* Its mode in a multi-lock's script ('l' a lock, 'w' a write lock;
     * 0: not in a multi-lock). */
    char multi_mode;
    /* The prefixes of its companion keys beyond the channel and the token
     * key (a fair lock's queue, give-up times and places), or NULL. */
    const char *const *companions;
    /* Where a queued way's fair keys (queue, give-up times, places) begin
     * among its companions: 0 for a fair lock, 1 for a queued election
     * (its channel first). */
    uint8_t queue_at;
};

/* The rows. */
extern const struct lock_way way_lock, way_read, way_write, way_fair, way_elect, way_elect_queued;

/* way.c: what the rows share. */
/* The lease op's acquire asks for, as a script argument, into buf (24
 * bytes): its own, or the watchdog's. */
void way_lease_arg(const struct op *op, char *buf);
/* This client's line for op's name, on the name's channel (waiters.c):
 * join and leave, for the ways whose line it is. */
int way_line_join(struct lw_client *c, struct op *op);
void way_line_leave(struct lw_client *c, struct op *op, int acquired);

/* Redis's queue for op's name, for the ways that wait in it
 * (a fair lock, a queued election): join and leave, and the acquire's
 * command, SCRIPT_FAIR_LOCK's keys and arguments for script, with one
 * more key and one more argument when more_key is not NULL. */
int way_queue_join(struct lw_client *c, struct op *op);
/* Its keys among lock's companions (queue_at), into q and ql: 0 the
 * queue, 1 the give-up times, 2 the places. */
void way_queue_keys(const struct lw_lock *lock, const char *q[3], size_t ql[3]);
void way_queue_leave(struct lw_client *c, struct op *op, int acquired);
int way_queue_acquire(struct op *op, const char *field, size_t flen, int script,
                      const char *more_key, size_t more_key_len, const char *more_arg,
                      size_t more_arg_len);
/* An unlock's command, SCRIPT_FAIR_UNLOCK's keys and arguments for
 * script, with one more key when more_key is not NULL. */
int way_queue_unlock(struct op *op, const char *field, size_t flen, int script,
                     const char *more_key, size_t more_key_len);
/* A force-unlock's command: the lock deleted, the queue's head woken. */
int way_queue_force(struct op *op);

#endif
