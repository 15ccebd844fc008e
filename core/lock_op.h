/*
 * core/lock_op.h - lock.c's handle and op, and its calls for the files
 * that hold them: the ways (way_*.c) format an op's command and keep its
 * line; multi.c keeps its locks' handles.
 */
#ifndef LW_CORE_LOCK_OP_H
#define LW_CORE_LOCK_OP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "call.h"

struct lw_client;
struct lock_way;
struct lease_set;

/* The most companion keys a way names (a queued election's four). */
#define LOCK_COMPANIONS 4

struct lw_lock {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op in progress */
    char *channel;         /* redisson_lock__channel:{name} */
    size_t channel_len;
    char *token_key; /* redisson_lock_token:{name} */
    size_t token_len;
    _Atomic int fenced; /* first acquires draw a fencing token
                           (lw_lock_set_fenced()) */
    /* The keys its way names beyond the channel and the token key
     * (way.h's `companions`): a fair lock's redisson_lock_queue:{name},
     * redisson_lock_timeout:{name}, leasewheel_lock_place:{name}; an
     * election's leasewheel_election:{name} first, then a queued one's
     * fair keys; NULL past them. */
    char *companion_keys[LOCK_COMPANIONS];
    size_t companion_lens[LOCK_COMPANIONS];
    unsigned slot;                /* the cluster slot of name and both keys */
    uint8_t kind;                 /* enum lease_kind_id */
    const struct lock_way *way;   /* how it is asked for (way.h) */
    _Atomic uint64_t max_hold_ms; /* lw_lock_set_max_hold(); 0: the client's */
    size_t len;
    char name[];
};

/* The key a script's first acquire of lock draws its fencing token from:
 * the name's counter when the handle is fenced, else the lock's own name,
 * which tells the script to draw none (scripts.c, LUA_TOKEN).  Its length
 * into *len. */
static inline const char *lock_token_key(const struct lw_lock *lock, size_t *len)
{
    if (atomic_load_explicit(&lock->fenced, memory_order_relaxed)) {
        *len = lock->token_len;
        return lock->token_key;
    }
    *len = lock->len;
    return lock->name;
}

/* A lock call's kind (call.kind).  OP_UNDO: an acquire whose reply came
 * too late, or that too few replicas acknowledged, releasing the hold it
 * took (the unlock script), to end in call.undo_err (LW_ETIMEDOUT,
 * LW_EREPLICAS).  OP_TRIM: an acquire sent again that ran more than once,
 * giving back the surplus holds (the unlock script, one at a time) before
 * it is handed over. */
enum op_kind { OP_ACQUIRE,
               OP_UNLOCK,
               OP_FORCE,
               OP_IS_LOCKED,
               OP_IS_HELD,
               OP_COUNT,
               OP_TTL,
               OP_UNDO,
               OP_TRIM,
               OP_STATUS,   /* lw_name_status: call.arg is the struct to fill */
               OP_PROCLAIM, /* an election's: value, in term (1, or 0: not
                               the leader of that term) */
               OP_LEADER }; /* an election's read: call.arg is the
                               struct lw_leader to fill */

/* A lock call: the call (call.h), and what only a lock's has. */
struct op {
    struct call call;
    struct lw_lock *lock;
    /* A fair lock's waiter: it has a place in the queue in Redis
     * (way_fair.c); join_asked: an attempt of it asked to join the queue,
     * and may have, answered or not (way.c). */
    uint8_t queued, join_asked;
    /* The hand-over between an unlock and a waiter (lock.c): an unlock's
     * waiter it hands the lock to; that waiter's unlock (either NULL once
     * the other is done). */
    struct op *handoff;
    /* A waiting acquire: a hand-over to it failed unanswered.  It may have
     * run, and then a hold more than its owner had is that hand-over's. */
    uint8_t handoff_unknown;
    uint32_t trim;      /* OP_TRIM: surplus holds still to give back */
    uint32_t ack_holds; /* the hold count a first acquire hands over once
                           its replicas acknowledged it */
    /* An election's calls (election.c, way_elect.c): the value a campaign
     * or a proclaim writes (the op's own copy), the term a proclaim is
     * for, and the set a campaign's lease joins once elected (the
     * leader's belief, watchdog.h). */
    char *payload;
    size_t payload_len;
    uint64_t term;
    struct lease_set *set;
    void *out; /* OP_LEADER: the struct lw_leader to fill */
};

/* A lock handle's references (multi.c keeps its locks'): the last
 * unref frees it. */
void lock_ref(struct lw_lock *lock);
void lock_unref(struct lw_lock *lock);

/* A handle asked for by way (way.h), fenced when `fenced` (election.c's:
 * every campaign draws its term from the counter). */
int lock_new_way(struct lw_client *c, const void *name, size_t len, const struct lock_way *way,
                 int fenced, struct lw_lock **out);

/* A call of kind on lock for an election (election.c): what the public
 * lock calls do, with an election's extras in the op (the value, the
 * term, the set, arg for OP_LEADER).  Blocking when done is NULL (the
 * result into *value); else async. */
struct lock_run_args {
    uint64_t owner;
    uint64_t wait_ms;
    const void *value;
    size_t value_len;
    uint64_t term;
    struct lease_set *set;
    uint64_t *until_ns;
    void *out;
    lw_done_fn *done;
    void *arg;
};
int lock_run(struct lw_lock *lock, int kind, const struct lock_run_args *a, int64_t *value);

#endif
