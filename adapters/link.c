/*
 * adapters/link.c - the engine's pipelined command link, on one connection
 * (conn.c: connect, AUTH, PING, deadline, back-off).
 *
 * Its own set-up, between the connection's AUTH and PING: SELECT and one
 * SCRIPT LOAD per script.  The connection is READY once the PING is
 * answered, so by then every script's SHA is known and an EVALSHA never
 * races its load.
 *
 * Replies come back in write order on one connection, so the engine keeps
 * its own FIFO of requests in flight and pairs each reply with its head;
 * hiredis holds no pointer to a request.  That is what lets a timed-out
 * connection be abandoned at once.
 *
 * Timeouts.  Every command has the same timeout, so the in-flight FIFO is
 * also in deadline order and only its head needs checking: once per tick,
 * O(1), instead of a wheel timer per command (scheduled and cancelled for
 * every reply).  The same holds for the FIFO of requests waiting to be
 * written.  They belong to the pipeline, so they stay on the engine's tick;
 * the connection's own set-up deadline is its business.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_private.h"

/* A command the engine sends for itself (set-up, script reload). */
struct own_request {
    struct lw_request req;
    enum { OWN_SELECT, OWN_LOAD } kind;
    unsigned script;
};

/* Write one request, or fail it with LW_ECONNLOST when the connection is
 * neither in SETUP nor READY (a NOSCRIPT retry after it dropped). */
static void write_request(struct lw_engine *e, struct lw_request *req, uint64_t now_ns)
{
    if (req->script)
        memcpy(req->cmd + req->sha_at, e->scripts[req->script - 1].sha, 40);
    if (conn_send(&e->conn, req->cmd, req->len) != 0) {
        engine_complete(e, req, NULL, LW_ECONNLOST);
        return;
    }
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
    if (conn_is_ready(&e->conn) && e->waiting.head && !e->pipeline_full) {
        now_ns = lw_clock_now();
        while (conn_is_ready(&e->conn) && e->waiting.head &&
               e->inflight.count < e->max_inflight)
            write_request(e, fifo_pop(&e->waiting), now_ns);
        e->pipeline_full = e->inflight.count >= e->max_inflight;
    }
    note_queues(e);
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

/* Connected, AUTH written: SELECT and the SCRIPT LOADs; the PING follows. */
static void on_setup(void *arg)
{
    struct lw_engine *e = arg;

    count_add(&e->count.sent, conn_own_commands(&e->conn));
    if (e->select_cmd)
        send_own(e, OWN_SELECT, 0, e->select_cmd, e->select_len);
    for (unsigned i = 0; i < e->nscripts; i++) {
        send_own(e, OWN_LOAD, i, e->scripts[i].load_cmd, e->scripts[i].load_len);
        e->scripts[i].load_seq = e->seq;
    }
}

static void on_own_reply(struct lw_request *req, const redisReply *reply, int err,
                         void *arg)
{
    struct own_request *own = (struct own_request *)req;
    struct lw_engine *e = arg;
    int kind = own->kind;
    unsigned script = own->script;

    free(own);
    if (err)
        return; /* the connection is gone; whoever dropped it retries */
    if (reply->type == REDIS_REPLY_ERROR) {
        if (e->conn.state != CONN_SETUP)
            return; /* a reload after NOSCRIPT: the retried EVALSHA reports it */
        conn_fail(&e->conn, conn_is_auth_error(reply->str) ? LW_EAUTH : LW_EREDIS);
        return;
    }
    if (kind == OWN_LOAD && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(e->scripts[script].sha, reply->str, 41);
}

/* SETUP is over: requests flow. */
static void on_up(void *arg)
{
    struct lw_engine *e = arg;

    atomic_store_explicit(&e->status, 0, memory_order_relaxed);
    count_add(&e->count.replies, conn_own_commands(&e->conn));
    count_set(&e->count.reconnects, e->conn.reconnects);
    link_pump(e);
}

/*
 * The connection failed or was lost: fail what was in flight on it with
 * err.  The state is already DOWN, so a callback that submits again waits
 * for the next connection.  Before the first connection has been set up,
 * a reason a wait will not mend fails the waiting requests too
 * (conn_fails_at_once()); a resubmit waits for the next attempt.
 */
static void on_down(void *arg, int err)
{
    struct lw_engine *e = arg;
    int fail;

    atomic_store_explicit(&e->status, err, memory_order_relaxed);
    engine_fail_all(e, &e->inflight, err);
    if (!atomic_load_explicit(&e->closing, memory_order_relaxed) &&
        (fail = conn_fails_at_once(&e->conn)))
        engine_fail_all(e, &e->waiting, fail);
    note_queues(e);
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
    write_request(e, req, lw_clock_now()); /* fails it when the link is gone */
}

static void on_reply(void *arg, redisReply *reply)
{
    struct lw_engine *e = arg;
    struct lw_request *req = fifo_pop(&e->inflight);

    if (!req) { /* a reply nobody asked for: the stream is out of step */
        conn_fail(&e->conn, LW_ECONNLOST);
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

int link_init(struct lw_engine *e, const struct lw_engine_config *cfg)
{
    const struct conn_config cc = {
        CONN_CONFIG_FROM(cfg),
        .loop = e->loop,
        .on_setup = on_setup,
        .on_up = on_up,
        .on_down = on_down,
        .on_reply = on_reply,
        .arg = e,
    };

    return conn_init(&e->conn, &cc);
}

void link_connect(struct lw_engine *e)
{
    conn_connect(&e->conn);
}

void link_check_timeouts(struct lw_engine *e, uint64_t now_ns)
{
    int err;

    /* The server has stopped answering: everything on the wire is late. */
    if (e->inflight.head && e->inflight.head->deadline_ns <= now_ns)
        conn_fail(&e->conn, LW_ETIMEDOUT);
    err = conn_is_ready(&e->conn) ? LW_ETIMEDOUT
                                  : atomic_load_explicit(&e->status, memory_order_relaxed);
    if (err == 0)
        err = LW_ETIMEDOUT;
    while (e->waiting.head && e->waiting.head->deadline_ns <= now_ns)
        engine_complete(e, fifo_pop(&e->waiting), NULL, err);
    note_queues(e);
}

void link_close(struct lw_engine *e, int err)
{
    conn_close(&e->conn);
    engine_fail_all(e, &e->inflight, err);
    note_queues(e);
}
