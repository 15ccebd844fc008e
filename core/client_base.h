/*
 * core/client_base.h - the shared base of core/: struct lw_client, which
 * every part of core/ reads, its groups (the watchdog's, the lease holds',
 * admission's, the kinds' terms), and what a renewal batch keeps per
 * node.  Nothing else: a type one file owns is in that file or in a header
 * named for it (lock_op.h for lock.c's handle and op, call.h for the call
 * machine, scripts.h for the scripts, entry.h for the watchdog's entries),
 * and each file's calls for the others are in a header named for it, which
 * its callers include: docs/design.md, "Who calls whom in core/", says
 * which go which way, and why.
 *
 * Threads.  Application threads only format commands and hand calls over;
 * every structure below that is marked "engine thread" is touched by the
 * engine thread alone, so none of it needs a lock.
 */
#ifndef LW_CORE_CLIENT_BASE_H
#define LW_CORE_CLIENT_BASE_H

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
#include "timer.h"
#include "waiters.h"

struct lw_client;

struct entry;
struct lease_hold;
struct batch;
struct ack_wait;

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
    struct lw_queue held; /* struct call: held back, oldest first (admit_node) */
    uint64_t close_ns;    /* a renewal backlog over this closes it */
    uint64_t open_ns;     /* under this for quiet_ns, it opens again */
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
    uint32_t renew_batch;       /* renew_batch: entries per call at most */
    uint32_t batches_max;       /* renew_batches_inflight, per master */
    struct entry *entries;      /* by name; each heads a chain of owners */
    struct lw_queue renew;      /* due renewals waiting for a batch slot
                                   (entry.renew_node) */
    struct lw_queue drops;      /* lost leases whose field is to be removed
                                   (entry.drop_node) */
    uint32_t batches_inflight;  /* renewal and drop calls unanswered */
    struct node_batches *nodes; /* by node; one Redis: 0 */
    unsigned nodes_cap;         /* nodes has room for */
    struct batch_args *args;    /* a batch's arguments, while formatting */
    int flushing;               /* inside watchdog_flush() */
    uint64_t first_renewals;    /* new watchdog locks so far */
    struct request flush_task;  /* a flush asked for off a tick */
    int flush_pending;          /* flush_task is submitted */
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
    _Atomic uint32_t refs;  /* lw_client_free() to come, plus one per handle */
    _Atomic int freed;      /* lw_client_free() has been called */
    struct engine *engine;  /* NULL once freed */
    struct lw_wheel *wheel; /* the engine's */
    char id[LW_CLIENT_ID_MAX + 1];
    size_t id_len;
    uint64_t tick_ns;
    uint64_t lease_ms;  /* watchdog_timeout_ms */
    char lease_str[24]; /* the same, as a script argument */
    size_t lease_len;
    struct lease_terms terms[KIND_COUNT]; /* each kind's lease */
    uint64_t fair_wait_ms;                /* fair_wait_ms */
    uint64_t lock_delay_ms;               /* election_lock_delay_ms: 0 none */
    struct lease_callbacks callbacks;
    uint64_t max_hold_ms; /* max_hold_ms: 0 none */
    int embedded;         /* on the caller's loop (config.loop) */
    int sharded_pubsub;   /* enum lw_sharded_mode */
    uint32_t replicas;    /* acquire_replicas: 0 off */
    uint32_t replicas_timeout_ms;
    struct client_counters count;

    /* Engine thread only. */
    struct pubsub *pubsub;         /* unlock messages (adapters/pubsub.h) */
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

#endif
