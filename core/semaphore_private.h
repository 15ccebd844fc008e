/*
 * core/semaphore_private.h - what semaphore.c (handles, calls, replies)
 * and permit_waiters.c (acquires waiting on a semaphore's channel) share.
 *
 * A semaphore call is a struct sem_op, as a lock call is a struct op
 * (client_private.h), but simpler: no owners, no hand-over.  An acquire
 * waits for replicas (acquire_replicas) as a lock's does (replicas.c).
 * Every sem_op begins as a task on the engine thread and is formatted
 * there before each attempt: its scripts publish (the command depends on
 * the pub/sub mode, which the engine thread follows) and carry the time
 * of the attempt (expiry is judged by the sender's clock).
 */
#ifndef LW_CORE_SEMAPHORE_PRIVATE_H
#define LW_CORE_SEMAPHORE_PRIVATE_H

#include <leasewheel/semaphore.h>

#include "client_private.h"

#define SEM_CHANNEL_PREFIX "redisson_sc"
#define SEM_TIMEOUT_SUFFIX "timeout"
/* Redisson's score for a permit that never expires. */
#define SEM_NEVER_MS 922337203685477ll

struct lw_semaphore {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op in progress */
    char *timeout_key;     /* {name}:timeout */
    size_t timeout_len;
    char *channel; /* redisson_sc:{name} */
    size_t channel_len;
    unsigned slot; /* name, timeout key and channel share it */
    size_t len;
    char name[];
};

enum sem_op_kind { SOP_ACQUIRE,
                   SOP_RELEASE,
                   SOP_UNDO, /* an acquire answered too late, or not acknowledged by
                 enough replicas: its permits go back */
                   SOP_TRY_SET,
                   SOP_SET,
                   SOP_ADD,
                   SOP_AVAILABLE,
                   SOP_ACQUIRED };

enum sem_op_state { SOPS_NEW,
                    SOPS_INFLIGHT,
                    SOPS_WAITING };

struct sem_op {
    struct lw_request req;
    struct core_timer ct; /* a waiting acquire's retry or deadline */
    struct lw_semaphore *sem;
    struct wait_link wait;     /* its place in its channel's line;
                                  engine thread */
    struct lw_permit *permits; /* acquire: the caller's, filled in;
                                  release: the ids (own copy if async) */
    struct lw_permit *own;     /* the async release's copy, freed with it */
    lw_done_fn *done;
    void *arg;
    uint64_t lease_ms;
    uint64_t *until_out;       /* lw_permit_acquire_until*(): the permits'
                                  sure end */
    uint64_t wait_deadline_ns; /* UINT64_MAX: for ever */
    uint64_t start_ns;
    uint64_t expiry_ns; /* a waiter: the nearest expiry its last attempt
                           was answered (its deadline at the latest) */
    int64_t amount;     /* set, try-set: the permits; add: the delta */
    int64_t value;
    int err;
    unsigned n; /* permits acquired or released */
    uint8_t kind;
    uint8_t state;
    uint8_t woken; /* a message came while an attempt was out */
    uint8_t blocking;
    uint8_t held_back; /* a release: the watchdog holds its permits'
                          renewals back until it completes */
    int undo_err;      /* SOP_UNDO: the error the acquire ends in */
    /* An acquire waiting for replicas (replicas.c). */
    struct replica_ack ack;
    uint64_t ack_from_ns; /* when the acquire's lease began, at the earliest */
    _Atomic uint32_t completed;
};

/* semaphore.c */
/* Format and send the op (again): the last thing done with it. */
void sem_attempt(struct sem_op *op);
void sem_complete(struct sem_op *op, int err, int64_t value);

/* permit_waiters.c: the waiters of a semaphore, oldest first.  As
 * waiters.c for locks: one subscription per channel; a message carrying k
 * wakes the waiters k permits serve, oldest first, at once; whoever
 * leaves the head of the line passes the turn on. */
/* An acquire that found too few permits joins the line: 1 when the
 * channel is live and it is first (try again now: a release may have gone
 * unheard), 0 to wait, -1 out of memory. */
int permit_waiters_join(struct lw_client *c, struct sem_op *op);
/* A new acquire behind this client's waiters for the name (1), or 0 when
 * there are none (try it). */
int permit_waiters_queue(struct lw_client *c, struct sem_op *op);
int permit_waiters_first(const struct sem_op *op);
/* op leaves the line.  When it was first: with `left` permits free after
 * its acquire, the next waiters they serve try now; without permits
 * (left -1: not known), the next in line tries. */
void permit_waiters_leave(struct lw_client *c, struct sem_op *op, int64_t left);

#endif
