/*
 * core/call.c - the call machine (call.h): the steps every call takes,
 * whatever its primitive.
 *
 * A call's life: set up on the calling thread (its class, its command
 * when that needs nothing the engine thread keeps), then started, as a
 * task when its primitive has a first step to take on the engine thread.
 * There it is sent, answered, perhaps held back, waiting in line or for
 * replicas, and sent again, until it completes: its class's `ending`, then
 * its callback, or the blocked caller woken.  A blocking call is an op on
 * the caller's stack (or the library's, freed by call_run()); an async
 * call's op is the library's, freed after its callback.
 */
#include <stdlib.h>

#include "call.h"
#include "admission.h"
#include "client_base.h"
#include "completion.h"
#include "container.h"
#include "replicas.h"
#include "reply.h"

static struct call *waiting_call(struct waiter *w)
{
    return lw_container_of(w, struct call, w);
}

/* Try again from the start: the class's way, or the same command. */
static void call_again(struct call *call)
{
    if (call->cls->again)
        call->cls->again(call);
    else
        call_attempt(call);
}

/* ---- Waiting in line (waiters.c): every call's row ---- */

static void waiter_again(struct waiter *w)
{
    call_again(waiting_call(w));
}

static void waiter_end(struct waiter *w, int err)
{
    call_complete(waiting_call(w), err, 0);
}

static const struct wait_rule line = {waiter_again, waiter_end, 0};
static const struct wait_rule counting_line = {waiter_again, waiter_end, 1};

/* A waiting call's timer: the holder's lease (a permit's expiry) ran
 * out, or the wait did. */
static void timer_fired(struct lw_client *c, struct core_timer *t, uint64_t now_ns)
{
    struct call *call = lw_container_of(t, struct call, w.ct);

    if (call->w.state != WAIT_WAITING)
        return; /* woken by a message in the same tick */
    if (now_ns >= call->w.deadline_ns)
        call_complete(call, waiters_timed_out(c), 0);
    else
        call_again(call);
}

void call_init(struct call *call, const struct call_class *cls, struct lw_client *c, int kind,
               int64_t want)
{
    call->cls = cls;
    call->client = c;
    call->kind = (uint8_t)kind;
    call->w.rule = cls->counts ? &counting_line : &line;
    call->w.want = want;
    call->w.ct.fire = timer_fired;
}

/* ---- Ending ---- */

void call_complete(struct call *call, int err, int64_t value)
{
    struct lw_client *c = call->client;

    if (call->cls->ending)
        call->cls->ending(call, err);
    call->w.state = WAIT_NEW;
    if (call->blocking) {
        call->err = err;
        call->value = value;
        call->cls->unref(call);                 /* the caller still holds its handle */
        lw_completion_signal(&call->completed); /* call may be gone after this */
        return;
    }
    if (call->done) {
        c->in_callback++;
        reply_error_tell(&call->said);
        call->done(err, value, call->arg);
        reply_error_set(NULL);
        c->in_callback--;
    }
    free(call->said);
    request_clear(&call->req);
    call->cls->unref(call);
    free(call);
}

/* ---- Sending ---- */

static void on_reply(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct call *call = arg;

    if (req->task) { /* the first step, on the engine thread */
        req->task = 0;
        if (err)
            call_complete(call, err, 0);
        else
            call->cls->begin(call);
        return;
    }
    call->cls->reply(call, err ? NULL : reply, err);
}

void call_send(struct call *call)
{
    int rc;

    /* An acquire's attempt waits for Redis until the acquire's wait
     * ends; any other command as every request. */
    if (call->waits)
        waiters_reach(&call->w, &call->req);
    else
        request_wait_until(&call->req, 0);
    call->w.state = WAIT_INFLIGHT;
    call->w.woken = 0;
    if ((rc = engine_submit(call->client->engine, &call->req, on_reply, call)))
        call_complete(call, rc, 0);
}

void call_attempt(struct call *call)
{
    int rc;

    if (call->client->closing) {
        call_complete(call, LW_ESHUTDOWN, 0);
        return;
    }
    if (call->cls->format && (rc = call->cls->format(call))) {
        call_complete(call, rc, 0);
        return;
    }
    call_send(call);
}

int call_retry(struct call *call, int err)
{
    return call->waits && err && waiters_retry(call->client, &call->w, &call->req, err);
}

/* ---- Admission and replicas ---- */

static void admitted(struct call *call)
{
    call->cls->admitted(call);
}

static void admit_end(struct call *call, int err)
{
    call_complete(call, err, 0);
}

static const struct admit_rule admit = {.admitted = admitted, .end = admit_end};

int call_held_back(struct call *call)
{
    return call->cls->admitted && admission_holds(call->client, call, &admit);
}

/* A first acquire's WAIT is over (replicas.c): err 0 (acknowledged),
 * LW_EREPLICAS or LW_ENOTSUP (give it back), or LW_ESHUTDOWN (as any hold
 * at shutdown: its lease ends it). */
static void acked(struct replica_ack *ack, int err)
{
    struct call *call = lw_container_of(ack, struct call, ack);

    if (err == LW_ESHUTDOWN) {
        call_complete(call, err, 0);
    } else if (err == LW_ENOTSUP) { /* the server has no WAIT */
        call->cls->undo(call, LW_ENOTSUP);
    } else if (err) {
        stats_replicas_refused(&call->client->count);
        call->cls->undo(call, LW_EREPLICAS);
    } else {
        call->cls->acked(call); /* the WAIT may have taken long */
    }
}

void call_wait_replicas(struct call *call)
{
    call->ack.acked = acked;
    replicas_wait(call->client, &call->ack, &call->req);
}

/* ---- Starting (calling thread) ---- */

/* Hand call to the engine thread, with a reference on its handle. */
static int call_start(struct call *call)
{
    int rc;

    call->cls->ref(call);
    if (call->task)
        request_task(&call->req);
    call->w.state = WAIT_INFLIGHT;
    if ((rc = engine_submit(call->client->engine, &call->req, on_reply, call)))
        call->cls->unref(call);
    return rc;
}

void call_discard(struct call *call)
{
    if (call->cls && call->cls->discard)
        call->cls->discard(call);
    request_clear(&call->req);
    if (call->heap)
        free(call);
}

int call_gate(const struct lw_client *c, int blocking)
{
    if (atomic_load_explicit(&c->freed, memory_order_acquire))
        return LW_ESHUTDOWN; /* every call fails, nothing is sent */
    if (blocking && engine_on_thread(c->engine))
        return LW_EDEADLK; /* it would wait for itself */
    return 0;
}

int call_run(struct call *call, int64_t *value)
{
    int blocking = call->blocking; /* an async call may be gone once started */
    int rc = call_gate(call->client, blocking);

    if (rc == 0 && blocking)
        lw_completion_reset(&call->completed);
    if (rc == 0 && (rc = call_start(call)) == 0 && !blocking)
        return 0;
    if (rc == 0) {
        lw_completion_wait(&call->completed);
        rc = call->err;
        if (value)
            *value = call->value;
        reply_error_tell(&call->said);
    }
    call_discard(call);
    return rc;
}

/* ---- Leases ---- */

uint64_t call_lease_ms(const struct call *call)
{
    return call->lease_ms ? call->lease_ms : call->client->lease_ms;
}

int call_too_late(const struct call *call, uint64_t sure_ns)
{
    return lw_clock_now() + call->client->tick_ns >= sure_ns;
}

uint64_t call_lease_end(const struct call *call)
{
    return lw_clock_now() + call->lease_ms * 1000000u + call->lease_ms * 10000u +
           call->client->tick_ns;
}

int call_undo_if_late(struct call *call, uint64_t sure_ns)
{
    if (!call_too_late(call, sure_ns))
        return 0;
    stats_acquired_too_late(&call->client->count);
    call->cls->undo(call, LW_ETIMEDOUT);
    return 1;
}

int call_check_lease(const struct lw_client *c, uint64_t lease_ms)
{
    if (lease_ms > LW_MAX_LEASE_MS)
        return LW_ERANGE;
    if (lease_ms != 0 && (lease_ms < LW_MIN_LEASE_MS || lease_ms * 1000000u < 3 * c->tick_ns))
        return LW_ELEASE;
    return 0;
}

/* When a waiter told the holder has pttl ms left tries again, if no unlock
 * wakes it first: when the lease runs out, as nobody publishes an expiry.
 * PTTL reads 0 in the millisecond the key expires (Redis drops a key once
 * its clock has passed the expiry time): that too is a lease running out,
 * retried at the next tick, not a lock without expiry.  Only -1 (a key
 * with no TTL, not ours) waits for a message or the deadline.  A
 * semaphore's acquire is told the nearest expiry the same way. */
uint64_t holder_retry_at(uint64_t now_ns, int64_t pttl, uint64_t deadline_ns)
{
    uint64_t ms;

    if (pttl < 0)
        return deadline_ns;
    ms = pttl > 0 ? (uint64_t)pttl : 1;
    if (ms >= (deadline_ns - now_ns) / 1000000u)
        return deadline_ns;
    return now_ns + ms * 1000000u;
}
