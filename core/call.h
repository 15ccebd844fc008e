/*
 * core/call.h - the call machine under every primitive: how a call lives,
 * from the API call to its completion, whatever it asks of Redis.
 *
 * Every op (lock.c's struct op, semaphore.c's struct sem_op, multi.c's
 * struct multi_op) begins with a struct call, as libuv's requests begin
 * with UV_REQ_FIELDS; what varies between the primitives is a row of
 * hooks, struct call_class, one per primitive, as a lock's ways are rows
 * (way.h) and its lease kinds (kind.h).  call.c owns the steps every call
 * takes:
 *
 *   run       on the calling thread: start it, and for a blocking call
 *             wait on its completion word (call_run());
 *   start     the hop to the engine thread: a task whose first step is
 *             the class's `begin`, or the command itself (a query);
 *   attempt   send (or send again) its command, formatted for the
 *             attempt when the class says so (call_attempt());
 *   reply     the class's, for what the answer means;
 *   wait      a refused acquire waits in a line (waiters.c): woken, or
 *             at its timer, it tries `again`; at its deadline it ends;
 *   admission a first acquire may be held back while renewals are behind
 *             (admission.c): admitted, it goes on by `admitted`;
 *   replicas  a first acquire waits for its WAIT (replicas.c): `acked`,
 *             or `undo` to give back what it took;
 *   complete  the class's `ending`, then the caller is told: its callback
 *             (Redis's words kept for lw_reply_error(), in_callback
 *             raised), or its blocked thread woken.
 *
 * Which primitives use which steps: admission holds back a lock's first
 * watchdog acquires (lock.c) but not a permit's nor a multi-lock's, whose
 * rows have no `admitted`: their first acquires are counted by the same
 * backlog, and admission lets held locks keep their leases first; a
 * permit's acquire, already bounded by its count, and a multi-lock's, all
 * of a set or none, are left as they were (docs/design.md).  Replica
 * acks serve a lock's and a permit's first acquires (`acked`, `undo`); a
 * multi-lock refuses acquire_replicas at its creation (a WAIT counts one
 * node's writes, and its groups span nodes in a cluster).
 *
 * Threads.  The calling thread fills in a call and runs it; everything
 * after the hop is the engine thread's, and engine_submit() there may
 * complete the request at once, so sending is the last thing done with a
 * call.
 */
#ifndef LW_CORE_CALL_H
#define LW_CORE_CALL_H

#include <stdatomic.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <leasewheel/lock.h>

#include "queue.h"
#include "request.h"
#include "waiters.h"

struct lw_client;
struct call;

/* A first acquire waiting for replicas (replicas.c), in its call: where
 * the acquire ran, and what ends the wait.  acked() gets 0
 * (acknowledged), LW_EREPLICAS (too few replicas, an error, a WAIT that
 * ran elsewhere: give it back), LW_ENOTSUP (the server has no WAIT: give
 * it back) or LW_ESHUTDOWN.  Engine thread. */
struct replica_ack {
    struct lw_qnode qnode; /* with the other acquires of its WAIT */
    uint64_t conn;         /* the connection the acquire ran on */
    uint64_t seq;          /* its write's sequence number there */
    void (*acked)(struct replica_ack *ack, int err);
};

/* A primitive's row: what call.c asks of its calls.  Engine thread, but
 * for ref. */
struct call_class {
    /* The handle the call is on: a reference taken when it starts
     * (calling thread), given back when it ends. */
    void (*ref)(struct call *call);
    void (*unref)(struct call *call);
    /* The first step of a call started as a task: it goes on to
     * call_attempt(), or completes. */
    void (*begin)(struct call *call);
    /* Format the command again for this attempt (NULL: the command was
     * formatted once, when the call was set up): 0 or an LW_E* code. */
    int (*format)(struct call *call);
    /* The answer to an attempt: reply, or none (err, and reply NULL). */
    void (*reply)(struct call *call, const redisReply *reply, int err);
    /* Try again from the start: woken in line, or its timer came (NULL:
     * call_attempt()). */
    void (*again)(struct call *call);
    /* Held back by admission, now let go (NULL: never held back). */
    void (*admitted)(struct call *call);
    /* Replicas acknowledged the first acquire: the holds are the
     * caller's, unless too late. */
    void (*acked)(struct call *call);
    /* Give back what the acquire took, then end in err. */
    void (*undo)(struct call *call, int err);
    /* Before the caller is told: leave the line, let go of what is held
     * back, count (NULL: nothing). */
    void (*ending)(struct call *call, int err);
    /* A call that ends without completing (call_discard()): let go of
     * what its op owns (NULL: nothing). */
    void (*discard)(struct call *call);
    /* Its waiters' channel messages carry counts (waiters.h's rule). */
    uint8_t counts;
};

/* The head of every op.  Its kind is the op's own (enum op_kind, ...). */
struct call {
    struct request req; /* the command: formatted once or per attempt */
    const struct call_class *cls;
    struct lw_client *client;
    uint64_t owner; /* whose hold it is (a semaphore's calls: 0) */
    uint8_t kind;   /* the op's kind, in its primitive's enum */
    uint8_t task;   /* it starts with a first step on the engine thread */
    uint8_t waits;  /* an acquire's attempt: it waits for Redis until
                       its wait's deadline (waiters_reach()) */

    /* An acquire's terms. */
    uint64_t lease_ms;    /* 0: the watchdog's */
    uint64_t start_ns;    /* when the call began */
    uint64_t max_hold_ms; /* its watchdog hold's cap, 0: none */
    uint64_t *until_out;  /* the caller's: the hold's sure end, or NULL */
    uint64_t from_ns;     /* its lease began then, at the earliest (the
                             acquire's last write) */
    int undo_err;         /* an acquire being given back ends in it */

    /* The outcome, and who is told: the callback, or a caller blocked
     * on `completed`. */
    lw_done_fn *done;
    void *arg;
    int64_t value;
    int err;
    uint8_t blocking;           /* a caller waits on `completed` */
    uint8_t heap;               /* the op is the library's: freed at its end */
    _Atomic uint32_t completed; /* lw_completion_*() */
    char *said;                 /* Redis's error reply (reply.h) */

    /* Waiting in line (waiters.c), replicas (replicas.c), admission
     * (admission.c): engine thread. */
    struct waiter w;
    struct replica_ack ack;
    struct lw_qnode admit_node; /* held back by admission */
};

/* Set up call (zeroed) for cls on client c: an op of kind.  A waiting
 * acquire takes `want` of its name (waiters.h: WAIT_ALL, 0 or n). */
void call_init(struct call *call, const struct call_class *cls, struct lw_client *c, int kind,
               int64_t want);
/* Whether a call may start on client c: 0, LW_ESHUTDOWN once the client
 * is freed, or LW_EDEADLK for a blocking call on the engine thread (it
 * would wait for itself).  call_run() asks; a primitive whose set-up
 * reads what the engine keeps asks first. */
int call_gate(const struct lw_client *c, int blocking);
/* Run a call that is set up: a blocking one (call->blocking) is waited
 * for, its value into *value (or NULL) and its error returned; an async
 * one is started, 0 or the error it could not start with.  A call ending
 * here is freed when it is the library's (call->heap). */
int call_run(struct call *call, int64_t *value);
/* A call whose set-up failed: what it holds is let go (and it is freed
 * when it is the library's). */
void call_discard(struct call *call);
/* Send (or send again) the call's command: the last thing done with it. */
void call_attempt(struct call *call);
/* Send the command formatted already: the last thing done with it. */
void call_send(struct call *call);
/* End the call with err and value: the class's `ending`, then the caller
 * is told; call may be gone after this. */
void call_complete(struct call *call, int err, int64_t value);
/* An attempt of an acquire failed with err before Redis answered: 1 when
 * it is to be sent again now (waiters_retry()). */
int call_retry(struct call *call, int err);
/* A first acquire's start: 1 when admission took it (held back, or
 * refused), 0 to go on. */
int call_held_back(struct call *call);
/* A first acquire, answered, waits for the client's replicas: `acked` or
 * `undo` follows, perhaps before this returns. */
void call_wait_replicas(struct call *call);

/* The lease the call asks for: its own, or the watchdog's. */
uint64_t call_lease_ms(const struct call *call);
/* Whether a hold sure until sure_ns comes too late to be of use: less
 * than a tick of it is left. */
int call_too_late(const struct call *call, uint64_t sure_ns);
/* When a hold taken now with the call's own lease is over at the latest:
 * the lease, its drift allowance (1%) and a tick. */
uint64_t call_lease_end(const struct call *call);
/* An acquire answered: 1 when its hold, sure until sure_ns, came too
 * late (call_too_late()): counted, and given back (`undo`, then
 * LW_ETIMEDOUT); 0 to go on. */
int call_undo_if_late(struct call *call, uint64_t sure_ns);
/* An acquire's lease, checked on the calling thread: 0 (the watchdog),
 * or one the client can renew in time: 0, LW_ERANGE or LW_ELEASE. */
int call_check_lease(const struct lw_client *c, uint64_t lease_ms);
/* When a waiter retries, told the holder has pttl ms left (-1: no TTL). */
uint64_t holder_retry_at(uint64_t now_ns, int64_t pttl, uint64_t deadline_ns);

#endif
