/*
 * core/client_private.h - the types the parts of core/ share: the client,
 * lock handles, calls in progress (ops), and the timers core/ puts on the
 * wheel.  What one file alone uses stays in it (the watchdog's entries in
 * watchdog.c); each file's calls for the others are in a header named for
 * it (refs.h, publish.h, owner.h, ops.h for lock.c's, replicas.h,
 * waiters.h, holds.h, watchdog.h; scripts.h for scripts.c's scripts),
 * which its callers include: docs/design.md, "Who calls whom in core/",
 * says which go which way, and why.
 *
 * Threads.  Application threads only format commands and hand ops over;
 * every structure below that is marked "engine thread" is touched by the
 * engine thread alone, so none of it needs a lock.
 */
#ifndef LW_CORE_CLIENT_PRIVATE_H
#define LW_CORE_CLIENT_PRIVATE_H

#include <stdatomic.h>
#include <stdint.h>

#include <leasewheel/lock.h>
#include <leasewheel/semaphore.h>
#include <leasewheel/wheel.h>

#include "channel.h"
#include "engine.h"
#include "kind.h"
#include "stats.h"
#include "pubsub.h"
#include "queue.h"
#include "redis_clock.h"
#include "scripts.h" /* lock.c, semaphore.c and multi.c send them */
#include "timer.h"
#include "waiters.h"

struct lw_client;

struct entry;
struct lease_hold;
struct batch;
struct ack_wait;

/* A first acquire waiting for replicas (replicas.c), in its op (a lock's
 * struct op, a semaphore's struct sem_op): where the acquire ran, and
 * what ends the wait.  acked() gets 0 (acknowledged), LW_EREPLICAS (too
 * few replicas, an error, a WAIT that ran elsewhere: give it back),
 * LW_ENOTSUP (the server has no WAIT: give it back) or LW_ESHUTDOWN.
 * Engine thread. */
struct replica_ack {
    struct lw_qnode qnode; /* with the other acquires of its WAIT */
    uint64_t conn;         /* the connection the acquire ran on */
    uint64_t seq;          /* its write's sequence number there */
    void (*acked)(struct replica_ack *ack, int err);
};

/* A cluster node's renewal batching (one Redis: node 0's): the renew and
 * drop batches of each kind being filled for it, the renewal calls sent
 * to it (metrics.c reads them on the engine thread), and its clock as
 * its renewals' answers tell it (redis_clock.h). */
struct node_batches {
    struct batch *open[KIND_COUNT][2];
    uint64_t renew_calls;
    struct redis_clock clock;
};

/* Admission (admission.c): first acquires of watchdog locks held back
 * while the renewals are behind.  Engine thread. */
struct admission {
    struct op *head, *tail; /* held back, oldest first (op->admit_next) */
    uint64_t close_ns;      /* a renewal backlog over this closes it */
    uint64_t open_ns;       /* under this for quiet_ns, it opens again */
    uint64_t quiet_ns;
    uint64_t quiet_since_ns;       /* the backlog under open_ns since, or 0 */
    uint64_t opened_ns;            /* it last opened then (0: never closed) */
    unsigned strikes;              /* closed again soon after opening: the quiet
                                      wait is quiet_ns << strikes */
    struct core_timer ct;          /* every tick while closed */
    const struct admit_rule *rule; /* what to do with held-back ops: the
                                      acquire path's (admission.h) */
    int closed;
    uint64_t refused; /* refused in this closing, for the log */
};

/* A kind's lease terms (client.c sets them at start): its lease (the
 * watchdog's, but a place's: fair_place_ms), also as a script argument,
 * and the clock-skew allowance its valid_until is less when its kind is
 * judged by the clients' clocks (permit_clock_skew_ms, at most a quarter
 * of the lease).  The watchdog, way_fair.c and semaphore.c read them. */
struct lease_terms {
    uint64_t lease_ms;
    char lease_str[24];
    size_t lease_len;
    uint64_t skew_ms;
};

/* The program's callbacks for a lease at risk, safe again or lost
 * (report.c calls them; client.c sets them from the config at start).
 * The first generation hears of locks by owner, the second of every kind
 * of lease (struct lw_lease). */
struct lease_callbacks {
    lw_lost_fn *on_lost;
    void *lost_arg;
    lw_risk_fn *on_risk;
    void *risk_arg;
    lw_lease_lost_fn *on_lease_lost;
    void *lease_lost_arg;
    lw_lease_risk_fn *on_lease_risk;
    void *lease_risk_arg;
};

/* The watchdog's (watchdog.c): its entries, its queues and the batches
 * it sends.  client.c sets the two limits from the config and makes args
 * before the engine starts, and asks for a flush off a tick (flush_task);
 * the kinds (kind.c) format a batch into args; metrics.c reads nodes;
 * refs.c frees nodes and args.  Engine thread, but for client.c's start. */
struct watchdog_state {
    uint32_t renew_batch;         /* renew_batch: entries per call at most */
    uint32_t batches_max;         /* renew_batches_inflight, per master */
    struct entry *entries;        /* by name; each heads a chain of owners */
    struct lw_queue renew;        /* due renewals waiting for a batch slot
                                     (entry.renew_node) */
    struct lw_queue drops;        /* lost leases whose field is to be removed
                                     (entry.drop_node) */
    uint32_t batches_inflight;    /* renewal and drop calls unanswered */
    struct node_batches *nodes;   /* by node; one Redis: 0 */
    unsigned nodes_cap;           /* nodes has room for */
    struct batch_args *args;      /* a batch's arguments, while formatting */
    int flushing;                 /* inside watchdog_flush() */
    uint64_t first_renewals;      /* new watchdog locks so far */
    struct lw_request flush_task; /* a flush asked for off a tick */
    int flush_pending;            /* flush_task is submitted */
};

/* Lease locks held, as far as this client knows (holds.c).  Engine
 * thread. */
struct holds_state {
    struct lease_hold *table; /* by owner, kind and name */
    uint64_t unsure_swept_ns; /* dead unsure marks dropped then */
};

/* The client.  What lock.c, semaphore.c and multi.c read is at the top
 * level; what one module owns is in its group (terms, callbacks, wd,
 * holds, admit), which says who else touches it. */
struct lw_client {
    _Atomic uint32_t refs;    /* lw_client_free() to come, plus one per handle */
    _Atomic int freed;        /* lw_client_free() has been called */
    struct lw_engine *engine; /* NULL once freed */
    struct lw_wheel *wheel;   /* the engine's */
    char id[LW_CLIENT_ID_MAX + 1];
    size_t id_len;
    uint64_t tick_ns;
    uint64_t lease_ms;  /* watchdog_timeout_ms */
    char lease_str[24]; /* the same, as a script argument */
    size_t lease_len;
    struct lease_terms terms[KIND_COUNT]; /* each kind's lease */
    uint64_t fair_wait_ms;                /* fair_wait_ms */
    struct lease_callbacks callbacks;
    uint64_t max_hold_ms; /* max_hold_ms: 0 none */
    int embedded;         /* on the caller's loop (config.loop) */
    int sharded_pubsub;   /* enum lw_sharded_mode */
    uint32_t replicas;    /* acquire_replicas: 0 off */
    uint32_t replicas_timeout_ms;
    struct client_counters count;

    /* Engine thread only. */
    struct lw_pubsub *pubsub;      /* unlock messages (adapters/pubsub.h) */
    int cluster;                   /* the engine is a cluster client */
    int sentinel;                  /* the engine finds its master by Sentinel:
                                      a switch is a failover, unsettled is
                                      not failed */
    struct watchdog_state wd;      /* watchdog.c */
    struct wait_channel *channels; /* with waiters, by name (channel.c) */
    struct multi_set *multi_sets;  /* multi-locks' watchdog holds, by
                                      handle and owner (multi.c) */
    struct holds_state holds;      /* holds.c */
    int closing;                   /* lw_client_free() has begun */
    int in_callback;               /* depth of done and on_lost calls running */
    struct lw_slist acks;          /* struct ack_wait: WAITs sent or to send
                                      (replicas.c) */
    struct admission admit;        /* admission.c */
};

struct lw_lock {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op in progress */
    char *channel;         /* redisson_lock__channel:{name} */
    size_t channel_len;
    char *token_key; /* redisson_lock_token:{name} */
    size_t token_len;
    _Atomic int fenced; /* first acquires draw a fencing token
                           (lw_lock_set_fenced()) */
    /* A fair lock's: redisson_lock_queue:{name},
     * redisson_lock_timeout:{name}, leasewheel_lock_place:{name}; NULL
     * for the other kinds. */
    char *fair_keys[3];
    size_t fair_lens[3];
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

/* A call in progress, from the API call until its completion: an op of
 * one of these kinds.  OP_UNDO: an acquire whose reply came too late, or
 * that too few replicas acknowledged, releasing the hold it took (the
 * unlock script), to end in undo_err (LW_ETIMEDOUT, LW_EREPLICAS).
 * OP_TRIM: an acquire sent again that ran more than once, giving back the
 * surplus holds (the unlock script, one at a time) before it is handed
 * over. */
enum op_kind { OP_ACQUIRE,
               OP_UNLOCK,
               OP_FORCE,
               OP_IS_LOCKED,
               OP_IS_HELD,
               OP_COUNT,
               OP_TTL,
               OP_UNDO,
               OP_TRIM,
               OP_STATUS }; /* lw_name_status: arg is the struct to fill */
/* An op's fields, by feature.  lock.c owns the op and its states; each
 * group says who else reads or writes it. */
struct op {
    /* The call: what was asked, and the command that asks it. */
    struct lw_request req; /* the command: formatted once, re-sent */
    struct lw_lock *lock;
    uint64_t owner;
    uint8_t kind; /* enum op_kind */

    /* The outcome (op_complete()), and who is told: the callback, or a
     * caller blocked on `completed`. */
    lw_done_fn *done;
    void *arg;
    int64_t value;
    int err;
    uint8_t blocking; /* a caller waits on `completed` */
    _Atomic uint32_t completed;
    char *said; /* Redis's error reply, for lw_reply_error() (reply.h) */

    /* An acquire's terms (its wait's deadline is in w). */
    uint64_t lease_ms;    /* 0 for the watchdog */
    uint64_t start_ns;    /* when the call began */
    uint64_t max_hold_ms; /* its watchdog lock's cap, 0: none */
    uint64_t *until_out;  /* lw_acquire_until*(): the hold's sure end */

    /* An acquire waiting for its lock (waiters.c; way_fair.c for a fair
     * lock's): its state (enum wait_state), its retry time and deadline,
     * its place in its channel's line; engine thread. */
    struct waiter w;
    uint8_t queued; /* a fair lock's waiter: it has a place in the queue
                       in Redis (way_fair.c) */

    /* The hand-over between an unlock and a waiter (lock.c). */
    struct op *handoff; /* an unlock: the waiter it hands the lock to;
                           that waiter: the unlock (either NULL once the
                           other is done) */
    /* A waiting acquire: a hand-over to it failed unanswered.  It may have
     * run, and then a hold more than its owner had is that hand-over's. */
    uint8_t handoff_unknown;

    /* OP_UNDO and OP_TRIM (lock.c). */
    int undo_err;  /* OP_UNDO: the error it ends in */
    uint32_t trim; /* OP_TRIM: surplus holds still to give back */

    /* A first acquire waiting for replicas (replicas.c; lock.c reads
     * ack_holds and ack_from_ns when it is acknowledged); engine thread. */
    struct replica_ack ack;
    uint64_t ack_from_ns; /* when the acquire's lease began, at the earliest */
    uint32_t ack_holds;   /* the hold count it hands over */

    /* A first acquire held back by admission (admission.c). */
    struct op *admit_next;
};

#endif
