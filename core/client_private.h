/*
 * core/client_private.h - what the parts of core/ share: the client, lock
 * handles, calls in progress (ops), watchdog entries, the timers both put
 * on the wheel, and each file's calls into the others (docs/design.md,
 * "Who calls whom in core/", says which go which way, and why).
 *
 * Threads.  Application threads only format commands and hand ops over;
 * every structure below that is marked "engine thread" is touched by the
 * engine thread alone, so none of it needs a lock.
 */
#ifndef LW_CORE_CLIENT_PRIVATE_H
#define LW_CORE_CLIENT_PRIVATE_H

#include <stdatomic.h>
#include <stdint.h>

#include <uthash.h>

#include <leasewheel/lock.h>
#include <leasewheel/wheel.h>

#include "engine.h"
#include "stats.h"
#include "pubsub.h"

/* The scripts, in the engine's order (lw_request_evalsha()'s `script`). */
enum script_id {
    SCRIPT_LOCK,       /* KEYS name, token key; ARGV lease ms, field */
    SCRIPT_UNLOCK,     /* KEYS name, channel;   ARGV field, publish command */
    SCRIPT_FORCE,      /* KEYS name, channel;   ARGV publish command */
    SCRIPT_RENEW,      /* KEYS names...;        ARGV lease ms, fields... */
    SCRIPT_DROP,       /* KEYS names...;        ARGV publish command, fields... */
    SCRIPT_RENEW_NODE, /* no KEYS; ARGV names..., lease ms, fields... */
    SCRIPT_DROP_NODE,  /* no KEYS; ARGV names..., publish command, fields... */
    SCRIPT_HANDOFF,    /* KEYS name, token key; ARGV field, waiter's field, lease ms */
    SCRIPT_COUNT
};
extern const char *const lw_lock_scripts[SCRIPT_COUNT];

/* Companion keys' prefixes, named as Redisson names them (lock.c's
 * prefix_name()). */
#define CHANNEL_PREFIX "redisson_lock__channel"
#define TOKEN_PREFIX "redisson_lock_token"

struct lw_client;

/* A wheel timer of core/ and what to do when it fires, set by its owner
 * (lock.c: a waiting acquire's retry; watchdog.c: an entry's renewal or
 * give-up), so that the tick hook need not know what it belongs to. */
struct core_timer {
    struct lw_timer timer; /* first: the wheel hands back this */
    void (*fire)(struct lw_client *c, struct core_timer *t, uint64_t now_ns);
};

struct entry;
struct channel;
struct lease_hold;
struct batch;
struct ack_wait;

/* A cluster node's renewal batching: the renew and drop batches being
 * filled for it, and the renewal calls sent to it (metrics.c reads them on
 * the engine thread). */
struct node_batches {
    struct batch *open[2];
    uint64_t renew_calls;
};

/* Admission (admission.c): first acquires of watchdog locks held back
 * while the renewals are behind.  Engine thread. */
struct admission {
    struct op *head, *tail; /* held back, oldest first (op->admit_next) */
    uint64_t close_ns;      /* a renewal backlog over this closes it */
    uint64_t open_ns;       /* under this for quiet_ns, it opens again */
    uint64_t quiet_ns;
    uint64_t quiet_since_ns; /* the backlog under open_ns since, or 0 */
    uint64_t opened_ns;      /* it last opened then (0: never closed) */
    unsigned strikes;        /* closed again soon after opening: the quiet
                                wait is quiet_ns << strikes */
    struct core_timer ct;    /* every tick while closed */
    int closed;
    uint64_t refused; /* refused in this closing, for the log */
};

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
    uint32_t renew_batch;
    uint32_t batches_max;
    lw_lost_fn *on_lost;
    void *lost_arg;
    lw_risk_fn *on_risk;
    void *risk_arg;
    uint64_t max_hold_ms; /* max_hold_ms: 0 none */
    int embedded;         /* on the caller's loop (config.loop) */
    int sharded_pubsub;   /* enum lw_sharded_mode */
    uint32_t replicas;    /* acquire_replicas: 0 off */
    uint32_t replicas_timeout_ms;
    struct client_counters count;

    /* Engine thread only. */
    struct lw_pubsub *pubsub;       /* unlock messages (adapters/pubsub.h) */
    int cluster;                    /* the engine is a cluster client */
    int sentinel;                   /* the engine finds its master by Sentinel:
                                       a switch is a failover, unsettled is
                                       not failed */
    struct lw_request flush_task;   /* a watchdog flush asked for off a tick */
    int flush_pending;              /* flush_task is submitted */
    struct node_batches *nodes;     /* cluster: by node (watchdog.c) */
    unsigned nodes_cap;             /* nodes has room for */
    struct entry *entries;          /* by name; each heads a chain of owners */
    struct channel *channels;       /* by channel name */
    struct lease_hold *lease_holds; /* holds.c */
    struct entry *renew_head;       /* due renewals waiting for a batch slot */
    struct entry *renew_tail;
    struct entry *drop_head; /* lost locks whose field is to be removed */
    struct entry *drop_tail;
    uint32_t batches_inflight; /* renewal and drop calls unanswered */
    const char **scratch_argv; /* a batch's arguments, while formatting */
    size_t *scratch_lens;
    char *scratch_fields;
    int closing;           /* lw_client_free() has begun */
    int in_callback;       /* depth of done and on_lost calls running */
    int flushing;          /* inside watchdog_flush() */
    struct ack_wait *acks; /* WAITs sent or to send (replicas.c) */
    struct admission admit;
    uint64_t first_renewals; /* new watchdog locks so far (watchdog.c) */
};

struct lw_lock {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op in progress */
    char *channel;         /* redisson_lock__channel:{name} */
    size_t channel_len;
    char *token_key; /* redisson_lock_token:{name} */
    size_t token_len;
    unsigned slot;                /* the cluster slot of name and both keys */
    _Atomic uint64_t max_hold_ms; /* lw_lock_set_max_hold(); 0: the client's */
    size_t len;
    char name[];
};

/* A call in progress, from the API call until its completion. */
/* OP_UNDO: an acquire whose reply came too late, or that too few replicas
 * acknowledged, releasing the hold it took (the unlock script), to end in
 * undo_err (LW_ETIMEDOUT, LW_EREPLICAS).  OP_TRIM: an acquire sent again
 * that ran more than once, giving back the surplus holds (the unlock
 * script, one at a time) before it is handed over. */
enum op_kind { OP_ACQUIRE,
               OP_UNLOCK,
               OP_FORCE,
               OP_IS_LOCKED,
               OP_IS_HELD,
               OP_COUNT,
               OP_TTL,
               OP_UNDO,
               OP_TRIM };
enum op_state { OPS_NEW,
                OPS_INFLIGHT,
                OPS_WAITING,
                OPS_HANDOFF }; /* a waiter an unlock of this client's is
                                  handing the lock to (op->handoff) */

struct op {
    struct lw_request req; /* the command: formatted once, re-sent */
    struct core_timer ct;  /* a waiting acquire's retry time */
    struct lw_lock *lock;
    struct op *wnext, *wprev; /* channel waiters; engine thread */
    struct op *handoff;       /* an unlock: the waiter it hands the lock to;
                                 that waiter: the unlock (either NULL once
                                 the other is done) */
    struct channel *chan;     /* the channel it waits on, or NULL */
    uint64_t owner;
    uint64_t lease_ms;         /* acquire: 0 for the watchdog */
    uint64_t wait_deadline_ns; /* acquire: UINT64_MAX waits forever */
    uint64_t start_ns;         /* acquire: when the call began */
    uint64_t max_hold_ms;      /* acquire: its watchdog lock's cap, 0: none */
    lw_done_fn *done;
    void *arg;
    int64_t value;
    int err;
    uint8_t kind;
    uint8_t state;    /* enum op_state */
    uint8_t woken;    /* an unlock came while an attempt was out */
    uint8_t blocking; /* a caller waits on `completed` */
    _Atomic uint32_t completed;
    int undo_err;  /* OP_UNDO: the error it ends in */
    uint32_t trim; /* OP_TRIM: surplus holds still to give back */
    /* A waiting acquire: a hand-over to it failed unanswered.  It may have
     * run, and then a hold more than its owner had is that hand-over's. */
    uint8_t handoff_unknown;
    /* A first acquire waiting for replicas (replicas.c); engine thread. */
    struct op *ack_next;   /* its WAIT's acquires */
    uint64_t ack_conn;     /* the connection the acquire ran on */
    uint64_t ack_seq;      /* its write's sequence number there */
    uint64_t ack_sent_ns;  /* when the acquire was sent */
    uint32_t ack_holds;    /* the hold count it hands over */
    struct op *admit_next; /* held back by admission.c */
};

/* A watchdog lock: one per (name, owner) held with lease 0. */
enum entry_state {
    ENTRY_SCHEDULED, /* timer: the next renewal */
    ENTRY_RETRY,     /* timer: the retry after a failed renewal */
    ENTRY_QUEUED,    /* due, waiting for a batch slot; timer: give up */
    ENTRY_SENT,      /* in a batch on the wire; timer: give up */
};

struct entry {
    struct core_timer ct;
    UT_hash_handle hh;        /* in client->entries when the chain's head */
    struct entry *next_owner; /* same name, another owner */
    struct entry *renew_next; /* the renew queue */
    struct entry *drop_next;  /* the drop queue */
    uint64_t owner;
    uint64_t valid_until_ns; /* the lease surely lasts until then */
    uint64_t due_ns;         /* when the next renewal falls due */
    uint64_t held_since_ns;  /* the first acquire was sent then */
    uint64_t cap_at_ns;      /* given up then (max hold); UINT64_MAX: never */
    uint32_t holds;          /* the hold count in Redis, as we know it */
    uint8_t state;           /* enum entry_state */
    uint8_t failures;        /* renewal failures in a row */
    uint8_t dead;            /* out of the map; freed when unreferenced */
    uint8_t unlocking;       /* last-hold unlocks on the wire: no renewals */
    uint8_t dropping;        /* in the drop queue or a drop call */
    uint8_t failover_check;  /* cluster: its slot failed over; the next
                                reply says whether the new master has it */
    uint8_t recheck_after;   /* a renewal was on the wire at the failover:
                                its answer came from the old master */
    uint8_t at_risk;         /* on_risk said so; no renewal confirmed since */
    uint16_t slot;           /* cluster slot of the name */
    uint32_t len;
    char name[];
};

/* client.c */
/* A handle keeps the client's memory (not its engine) alive. */
int client_ref(struct lw_client *c);
void client_unref(struct lw_client *c);

/* The command unlock scripts publish with: "publish", or "spublish" in
 * sharded pub/sub mode.  Engine thread. */
const char *client_publish_command(const struct lw_client *c);

/* owner.c: the field "<client id>:<owner>" that names a hold. */
/* 0, or why the configured id (NULL: none) cannot start a field. */
int check_client_id(const char *id);
/* The field for owner into buf (FIELD_MAX bytes); its length. */
size_t client_field(const struct lw_client *c, uint64_t owner, char *buf);
#define FIELD_MAX (LW_CLIENT_ID_MAX + 22)

/* lock.c */
/* When a waiter retries, told the holder has pttl ms left (-1: no TTL). */
uint64_t holder_retry_at(uint64_t now_ns, int64_t pttl, uint64_t deadline_ns);
void op_attempt(struct op *op);
void op_complete(struct op *op, int err, int64_t value);
/* A first acquire's WAIT is over: err 0 (acknowledged: the lock is the
 * caller's), LW_EREPLICAS (give it back) or LW_ESHUTDOWN. */
void acquire_acked(struct op *op, int err);

/* replicas.c: first acquires acknowledged by replicas (WAIT). */
/* The acquire op (its reply read, token in op->value) waits for
 * c->replicas replicas; acquire_acked() tells how it went. */
void replicas_wait(struct lw_client *c, struct op *op, uint64_t sent_ns);
/* Closing: acquires whose WAIT is not yet sent end in LW_ESHUTDOWN. */
void replicas_shutdown(struct lw_client *c);

/* waiters.c: acquires waiting on a lock's channel, in line. */
/* An acquire that found the lock held joins its name's queue: 1 when the
 * channel is live and it is first in line (try again now: an unlock may
 * have gone unheard), 0 to wait, -1 out of memory. */
int waiters_join(struct lw_client *c, struct op *op);
/* A new acquire, when its name has waiters here: queued behind them
 * without trying (1), or 0 when there are none (try it). */
int waiters_queue(struct lw_client *c, struct op *op);
/* op is first in its name's queue. */
int waiters_first(const struct op *op);
/* op leaves the queue, with the lock (acquired) or not: the turn passes
 * on. */
void waiters_leave(struct lw_client *c, struct op *op, int acquired);
/* The first waiter of lock's name, reserved for a hand-over (OPS_HANDOFF),
 * or NULL when there is none that waits now (or replicas must
 * acknowledge acquires: a hand-over goes without WAIT). */
struct op *waiters_handoff(struct lw_client *c, const struct lw_lock *lock);
/* The hand-over did not happen: op tries for itself (or its time is up). */
void waiters_unreserve(struct lw_client *c, struct op *op);
void waiters_on_event(void *arg, int event, const char *channel, size_t len);
void waiters_shutdown(struct lw_client *c);

/* holds.c: lease locks (not the watchdog's) this client's owners hold. */
void holds_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    uint32_t holds, uint64_t until_ns);
void holds_released(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    int64_t holds_left);
int holds_has(struct lw_client *c, const struct lw_lock *lock, uint64_t owner, uint64_t now_ns);
void holds_shutdown(struct lw_client *c);

/* admission.c: held locks first. */
/* The bounds, from the lease and the tick (lw_client_new()). */
void admission_init(struct lw_client *c);
/* A first acquire of a watchdog lock, at its start: 0 to go on and send
 * it; 1 when admission took it (held back until admitted, then
 * acquire_admitted(); or failed with LW_EOVERLOAD, its wait being over). */
int admission_holds(struct lw_client *c, struct op *op);
/* Every tick with due timers: read the renewal backlog, close or open. */
void admission_check(struct lw_client *c, uint64_t now_ns);
/* Closing: what is held back fails with LW_ESHUTDOWN. */
void admission_shutdown(struct lw_client *c);

/* lock.c: a held-back acquire admitted: it goes on as from its start. */
void acquire_admitted(struct op *op);

/* watchdog.c */
/* How early the first renewal of the seq-th new lock comes: its share of
 * the renewal period, in [0, period_ns). */
uint64_t watchdog_first_early_ns(uint64_t seq, uint64_t period_ns);
/* How long the oldest due renewal not yet sent has waited (0: none
 * waits). */
uint64_t watchdog_backlog_ns(const struct lw_client *c, uint64_t now_ns);
/* A lease of lease_ms set by a command sent at sent_ns lasts at least
 * until then (less a clock-drift allowance). */
uint64_t lease_valid_until(uint64_t lease_ms, uint64_t sent_ns);
/* Whether the watchdog renews (name, owner) already. */
int watchdog_renews(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);

/* watchdog_holds - the hold count of owner's watchdog lock, 0 when it
 * has none. */
uint32_t watchdog_holds(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);
/* An acquire succeeded: note the hold count; with watch, start renewing,
 * to be given up max_hold_ms after sent_ns (0: never). */
void watchdog_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                       uint32_t holds, uint64_t sent_ns, int watch, uint64_t max_hold_ms);
/* An unlock is about to be sent: hold renewals back if it is the last hold.
 * Its reply: the holds left (0: released), -1 (not the owner's), or
 * UNLOCK_UNKNOWN (failed: it may not have run; renewing resumes). */
#define UNLOCK_UNKNOWN INT64_MIN
void watchdog_unlock_begin(struct lw_client *c, const struct lw_lock *lock, uint64_t owner);
void watchdog_unlock_end(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                         int64_t holds_left);
void watchdog_forget(struct lw_client *c, const struct lw_lock *lock);
void watchdog_flush(struct lw_client *c);
void watchdog_shutdown(struct lw_client *c);
/* Cluster: slots failed over (a bitmap): re-check their locks at once. */
void watchdog_failover(struct lw_client *c, const uint8_t *slots);

#endif
