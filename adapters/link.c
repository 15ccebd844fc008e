/*
 * adapters/link.c - the engine's one Redis connection.
 *
 * Life of a connection:
 *
 *   DOWN --connect--> CONNECTING --TCP up--> SETUP --PING answered--> READY
 *     ^                   |                    |                        |
 *     +---- back-off <----+-- refused, setup --+-- error, timeout, EOF --+
 *           (jittered,        error, connect
 *            doubling)        timeout
 *
 * SETUP pipelines AUTH, SELECT, one SCRIPT LOAD per script and a PING, and
 * waits for the PING: only then do requests flow, so an EVALSHA never
 * races its script's load.  Any failure frees the hiredis context, fails
 * what was in flight on it, and schedules the next attempt.
 *
 * Replies come back in write order on one connection, so the engine keeps
 * its own FIFO of requests in flight and pairs each reply with its head;
 * hiredis's per-command privdata is only the engine.  That is what lets a
 * timed-out connection be abandoned at once: the callbacks hiredis runs
 * with NULL while freeing a context we have let go of find it is no longer
 * e->ac, and do nothing.
 *
 * Timeouts.  Every command has the same timeout, so the in-flight FIFO is
 * also in deadline order and only its head needs checking: once per tick,
 * O(1), instead of a wheel timer per command (scheduled and cancelled for
 * every reply).  The same holds for the FIFO of requests waiting to be
 * written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libev.h>

#include "engine_private.h"

/* A command the engine sends for itself (set-up, script reload). */
struct own_request {
    struct lw_request req;
    enum { OWN_AUTH, OWN_SELECT, OWN_LOAD, OWN_PING } kind;
    unsigned script;
};

static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);

static void set_state(struct lw_engine *e, enum link_state state)
{
    e->state = state;
    e->state_since_ns = lw_clock_now();
}

/* Write one request.  The connection must be up (CONNECTING excluded). */
static void write_request(struct lw_engine *e, struct lw_request *req, uint64_t now_ns)
{
    if (req->script)
        memcpy(req->cmd + req->sha_at, e->scripts[req->script - 1].sha, 40);
    if (redisAsyncFormattedCommand(e->ac, on_reply, e, req->cmd, req->len) != REDIS_OK) {
        engine_complete(e, req, NULL, LW_ECONNLOST);
        return;
    }
    e->unflushed = 1;
    req->sent_seq = ++e->seq;
    req->deadline_ns = now_ns + e->command_timeout_ns;
    fifo_push(&e->inflight, req);
    count_add(&e->count.sent, 1);
    if (e->inflight.count > atomic_load_explicit(&e->count.inflight_max, memory_order_relaxed))
        atomic_store_explicit(&e->count.inflight_max, e->inflight.count, memory_order_relaxed);
}

/* Publish the queue lengths for lw_engine_get_stats(). */
static void note_queues(struct lw_engine *e)
{
    atomic_store_explicit(&e->count.inflight, e->inflight.count, memory_order_relaxed);
    atomic_store_explicit(&e->count.waiting, e->waiting.count, memory_order_relaxed);
}

/*
 * Write waiting requests while the pipeline has room.  Once it has been
 * full, wait until half of it has drained before topping it up: the server
 * still has the other half to work on, and one write of many commands costs
 * both sides fewer system calls and wake-ups than many writes of one.
 * Until it fills, requests are written at once.
 */
void link_pump(struct lw_engine *e)
{
    uint64_t now_ns;

    if (e->pipeline_full && e->inflight.count <= e->refill_at)
        e->pipeline_full = 0;
    if (e->state == LINK_READY && e->ac && e->waiting.head && !e->pipeline_full) {
        now_ns = lw_clock_now();
        while (e->state == LINK_READY && e->waiting.head &&
               e->inflight.count < e->max_inflight)
            write_request(e, fifo_pop(&e->waiting), now_ns);
        e->pipeline_full = e->inflight.count >= e->max_inflight;
    }
    note_queues(e);
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct lw_engine *e = w->data;

    (void)loop;
    (void)revents;
    link_connect(e);
}

/*
 * Before the loop blocks, write what its callbacks appended.  Left to
 * hiredis, the write would wait for the write watcher: one more trip
 * through epoll_wait, plus two epoll_ctl calls to start and stop watching
 * for writability, on every round trip.  Written here, the watcher is
 * started and stopped within one iteration and libev never tells the
 * kernel.  Only for a connected context: on one still connecting,
 * redisAsyncHandleWrite() would complete the connect itself.
 */
static void on_flush(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct lw_engine *e = w->data;

    (void)loop;
    (void)revents;
    if (e->unflushed && e->ac && (e->state == LINK_SETUP || e->state == LINK_READY)) {
        e->unflushed = 0;
        redisAsyncHandleWrite(e->ac); /* may fail the link: then e->ac is NULL */
    }
}

void link_init(struct lw_engine *e)
{
    ev_init(&e->retry, on_retry);
    e->retry.data = e;
    ev_prepare_init(&e->flush, on_flush);
    e->flush.data = e;
    ev_prepare_start(e->loop, &e->flush);
}

/*
 * Before the first connection has been set up, an attempt that failed for a
 * reason a wait will not mend (nothing listens, no such socket, the wrong
 * password) is reported at once: requests fail with it instead of waiting
 * out the command timeout.  Once a connection has been up, requests wait
 * through reconnects (a restart) as before; so do they on a set-up error
 * (LW_EREDIS, which is also a server still LOADING its data).  Returns
 * that error, or 0.
 */
int link_fails_at_once(const struct lw_engine *e)
{
    int status = atomic_load_explicit(&e->status, memory_order_relaxed);

    if (e->ready_once)
        return 0;
    if (status == LW_ECONNREFUSED || status == LW_ECONNECT || status == LW_EAUTH)
        return status;
    return 0;
}

/* After a failure: note why, and try again after a jittered back-off. */
static void schedule_retry(struct lw_engine *e, int err)
{
    int fail;

    set_state(e, LINK_DOWN);
    atomic_store_explicit(&e->status, err, memory_order_relaxed);
    if (atomic_load_explicit(&e->closing, memory_order_relaxed))
        return;
    if ((fail = link_fails_at_once(e)))
        engine_fail_all(e, &e->waiting, fail); /* a resubmit waits for the next attempt */
    ev_timer_set(&e->retry, backoff_next(&e->backoff) / 1000.0, 0.0);
    ev_timer_start(e->loop, &e->retry);
}

/*
 * Let go of the live connection: fail what is in flight on it with err and
 * free the hiredis context (later, if we are inside one of its callbacks).
 * Clearing e->ac first makes the NULL-reply callbacks of the free no-ops.
 */
static void drop_link(struct lw_engine *e, int err)
{
    redisAsyncContext *ac = e->ac;

    e->ac = NULL;
    if (e->state != LINK_CLOSED)
        set_state(e, LINK_DOWN); /* callbacks below may submit: they must wait */
    engine_fail_all(e, &e->inflight, err);
    note_queues(e);
    if (ac)
        redisAsyncFree(ac);
}

/* The connection failed: let it go and try again later. */
static void fail_link(struct lw_engine *e, int err)
{
    drop_link(e, err);
    schedule_retry(e, err);
}

/* The connection died under us: hiredis is freeing it already. */
static void link_lost(struct lw_engine *e, int err)
{
    e->ac = NULL;
    fail_link(e, err);
}

static void on_own_reply(struct lw_request *req, const redisReply *reply, int err,
                         void *arg);

static void send_own(struct lw_engine *e, int kind, unsigned script, char *cmd, size_t len)
{
    struct own_request *own = calloc(1, sizeof *own);

    if (!own)
        return; /* set-up never ends; the connect timeout retries */
    own->kind = kind;
    own->script = script;
    own->req.cmd = cmd;
    own->req.len = len;
    own->req.done = on_own_reply;
    own->req.arg = e;
    write_request(e, &own->req, lw_clock_now());
}

/* Connected: pipeline the set-up commands; the PING's reply ends SETUP. */
static void start_setup(struct lw_engine *e)
{
    e->state = LINK_SETUP; /* the connect timeout runs on from CONNECTING */
    if (e->auth_cmd)
        send_own(e, OWN_AUTH, 0, e->auth_cmd, e->auth_len);
    if (e->select_cmd && e->ac)
        send_own(e, OWN_SELECT, 0, e->select_cmd, e->select_len);
    for (unsigned i = 0; i < e->nscripts && e->ac; i++) {
        send_own(e, OWN_LOAD, i, e->scripts[i].load_cmd, e->scripts[i].load_len);
        e->scripts[i].load_seq = e->seq;
    }
    if (e->ac)
        send_own(e, OWN_PING, 0, (char *)ping_cmd, sizeof ping_cmd - 1);
}

static void on_own_reply(struct lw_request *req, const redisReply *reply, int err,
                         void *arg)
{
    struct own_request *own = (struct own_request *)req;
    struct lw_engine *e = arg;
    int kind = own->kind;
    unsigned script = own->script;

    free(own);
    if (err || e->state == LINK_CLOSED)
        return; /* the connection is gone; whoever dropped it retries */
    if (reply->type == REDIS_REPLY_ERROR) {
        if (e->state != LINK_SETUP)
            return; /* a reload after NOSCRIPT: the retried EVALSHA reports it */
        err = kind == OWN_AUTH || conn_is_auth_error(reply->str) ? LW_EAUTH : LW_EREDIS;
        fail_link(e, err);
        return;
    }
    if (kind == OWN_LOAD && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(e->scripts[script].sha, reply->str, 41);
    if (kind == OWN_PING && e->state == LINK_SETUP) {
        set_state(e, LINK_READY);
        atomic_store_explicit(&e->status, 0, memory_order_relaxed);
        backoff_reset(&e->backoff);
        if (e->ready_once)
            count_add(&e->count.reconnects, 1);
        e->ready_once = 1;
        link_pump(e);
    }
}

/* NOSCRIPT: load the script again (unless a load already follows this
 * request on the wire) and send the request once more behind it. */
static void retry_noscript(struct lw_engine *e, struct lw_request *req)
{
    struct script *s = &e->scripts[req->script - 1];

    req->retried = 1;
    count_add(&e->count.script_reloads, 1);
    if (s->load_seq < req->sent_seq) {
        send_own(e, OWN_LOAD, req->script - 1, s->load_cmd, s->load_len);
        s->load_seq = e->seq;
    }
    if (e->ac)
        write_request(e, req, lw_clock_now());
    else
        engine_complete(e, req, NULL, LW_ECONNLOST);
}

static void on_reply(redisAsyncContext *ac, void *reply_ptr, void *privdata)
{
    struct lw_engine *e = privdata;
    redisReply *reply = reply_ptr;
    struct lw_request *req;

    if (ac != e->ac)
        return; /* a connection we let go of, being freed */
    if (!reply) {
        link_lost(e, LW_ECONNLOST);
        return;
    }
    req = fifo_pop(&e->inflight);
    if (!req) { /* a reply nobody asked for: the stream is out of step */
        fail_link(e, LW_ECONNLOST);
        return;
    }
    count_add(&e->count.replies, 1);
    if (reply->type == REDIS_REPLY_ERROR) {
        count_add(&e->count.error_replies, 1);
        if (req->script && !req->retried && !strncmp(reply->str, "NOSCRIPT", 8)) {
            retry_noscript(e, req);
            return;
        }
    }
    engine_complete(e, req, reply, 0);
    link_pump(e);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct lw_engine *e = ac->data;
    int saved_errno = errno;

    if (ac != e->ac)
        return;
    if (status != REDIS_OK) {
        e->ac = NULL; /* hiredis frees it on return */
        schedule_retry(e, conn_error(ac, saved_errno));
        return;
    }
    start_setup(e);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct lw_engine *e = ac->data;

    (void)status;
    if (ac == e->ac)
        link_lost(e, LW_ECONNLOST);
}

void link_connect(struct lw_engine *e)
{
    redisAsyncContext *ac;
    int err;

    if (e->state == LINK_CLOSED)
        return;
    set_state(e, LINK_CONNECTING);
    ac = conn_start(e->host, e->port, e->unix_path);
    if (!ac) {
        schedule_retry(e, LW_ENOMEM);
        return;
    }
    if (ac->err) {
        err = conn_error(ac, errno);
        redisAsyncFree(ac);
        schedule_retry(e, err);
        return;
    }
    ac->data = e;
    e->ac = ac;
    if (redisLibevAttach(e->loop, ac) != REDIS_OK) {
        fail_link(e, LW_ENOMEM);
        return;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

void link_check_timeouts(struct lw_engine *e, uint64_t now_ns)
{
    int err;

    /* Not connected in time, or the server has stopped answering: either
     * way everything on the wire is late. */
    if (((e->state == LINK_CONNECTING || e->state == LINK_SETUP) &&
         now_ns - e->state_since_ns >= e->connect_timeout_ns) ||
        (e->inflight.head && e->inflight.head->deadline_ns <= now_ns))
        fail_link(e, LW_ETIMEDOUT);
    err = e->state == LINK_READY ? LW_ETIMEDOUT
                                 : atomic_load_explicit(&e->status, memory_order_relaxed);
    if (err == 0)
        err = LW_ETIMEDOUT;
    while (e->waiting.head && e->waiting.head->deadline_ns <= now_ns)
        engine_complete(e, fifo_pop(&e->waiting), NULL, err);
    note_queues(e);
}

void link_close(struct lw_engine *e, int err)
{
    ev_timer_stop(e->loop, &e->retry);
    ev_prepare_stop(e->loop, &e->flush);
    set_state(e, LINK_CLOSED);
    drop_link(e, err);
}
