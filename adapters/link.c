/*
 * adapters/link.c - the pipeline to one node: a connection (conn.c:
 * connect, AUTH, PING, deadline, back-off), the FIFOs of requests waiting
 * and in flight on it, its in-flight cap, its scripts' SHAs.  One link
 * outside a cluster; one per master in a cluster (cluster.c routes).
 *
 * Its own set-up, between the connection's AUTH and PING: SELECT and one
 * SCRIPT LOAD per script.  The connection is READY once the PING is
 * answered, so by then every script's SHA is known and an EVALSHA never
 * races its load.
 *
 * Replies come back in write order on one connection, so the link keeps
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

/* A command the engine sends for itself (set-up, script reload, ASKING). */
struct own_request {
    struct lw_request req;
    enum { OWN_SELECT, OWN_LOAD, OWN_ASKING, OWN_ROLE } kind;
    unsigned script;
};

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
static const char role_cmd[] = "*1\r\n$4\r\nROLE\r\n";

static void send_own(struct link *l, int kind, unsigned script, char *cmd, size_t len);
static void on_own_reply(struct lw_request *req, const redisReply *reply, int err,
                         void *arg);

/* The request could not be written: the connection is gone. */
static void lost_request(struct link *l, struct lw_request *req, int err)
{
    if (l->e->cluster && req->done != on_own_reply)
        cluster_on_lost(l, req, err);
    else
        engine_complete(l->e, req, NULL, err);
}

/* Write one request, or fail it with LW_ECONNLOST when the connection is
 * neither in SETUP nor READY (a NOSCRIPT retry after it dropped).  A
 * request sent after an ASK redirect is preceded by ASKING, back to back,
 * as the cluster requires. */
static void write_request(struct link *l, struct lw_request *req, uint64_t now_ns)
{
    struct lw_engine *e = l->e;

    if (req->asking) {
        req->asking = 0;
        send_own(l, OWN_ASKING, 0, (char *)asking_cmd, sizeof asking_cmd - 1);
    }
    if (req->script)
        memcpy(req->cmd + req->sha_at, l->scripts[req->script - 1].sha, 40);
    if (conn_send(&l->conn, req->cmd, req->len) != 0) {
        lost_request(l, req, LW_ECONNLOST);
        return;
    }
    req->sent_seq = ++l->seq;
    req->sent_conn = l->conn_id;
    req->deadline_ns = now_ns + e->command_timeout_ns;
    fifo_push(&l->inflight, req);
    e->inflight_all++;
    l->sent++;
    count_add(&e->count.sent, 1);
    if (e->inflight_all > atomic_load_explicit(&e->count.inflight_max, memory_order_relaxed))
        atomic_store_explicit(&e->count.inflight_max, e->inflight_all, memory_order_relaxed);
}

/*
 * Write waiting requests while the pipeline has room.  Once it has been
 * full, wait until half of it has drained before topping it up: the server
 * still has the other half to work on, and one write of many commands costs
 * both sides fewer system calls and wake-ups than many writes of one.
 * Until it fills, requests are written at once.  The same holds for the
 * cap on all links together.
 */
void link_pump(struct link *l)
{
    struct lw_engine *e = l->e;
    uint64_t now_ns;

    if (l->pipeline_full && l->inflight.count <= e->refill_at)
        l->pipeline_full = 0;
    if (conn_is_ready(&l->conn) && l->waiting.head && !l->pipeline_full && !e->all_full) {
        now_ns = lw_clock_now();
        while (conn_is_ready(&l->conn) && l->waiting.head &&
               l->inflight.count < e->max_inflight && e->inflight_all < e->max_inflight_all)
            write_request(l, fifo_pop(&l->waiting), now_ns);
        l->pipeline_full = l->inflight.count >= e->max_inflight;
        e->all_full = e->inflight_all >= e->max_inflight_all;
    }
    if (l->side)
        link_pump(l->side);
    else
        engine_note_queues(e);
}

void link_pump_all(struct lw_engine *e)
{
    for (unsigned i = 0; i < e->nlinks; i++)
        if (e->links[i])
            link_pump(e->links[i]);
}

static void send_own(struct link *l, int kind, unsigned script, char *cmd, size_t len)
{
    struct own_request *own = calloc(1, sizeof *own);

    if (!own)
        return; /* set-up never ends; the connect timeout retries */
    own->kind = kind;
    own->script = script;
    own->req.cmd = cmd;
    own->req.len = len;
    own->req.done = on_own_reply;
    own->req.arg = l;
    write_request(l, &own->req, lw_clock_now());
}

/* Connected, AUTH written: SELECT and the SCRIPT LOADs; the PING follows.
 * In Sentinel mode a ROLE too: the node the sentinels named may have been
 * demoted since, and nothing may be written to it before it says master. */
static void on_setup(void *arg)
{
    struct link *l = arg;
    struct lw_engine *e = l->e;

    count_add(&e->count.sent, conn_own_commands(&l->conn));
    l->sent += conn_own_commands(&l->conn);
    if (e->select_cmd)
        send_own(l, OWN_SELECT, 0, e->select_cmd, e->select_len);
    for (unsigned i = 0; i < e->nscripts; i++) {
        send_own(l, OWN_LOAD, i, e->scripts[i].load_cmd, e->scripts[i].load_len);
        l->scripts[i].load_seq = l->seq;
    }
    if (e->sentinel)
        send_own(l, OWN_ROLE, 0, (char *)role_cmd, sizeof role_cmd - 1);
}

/* ROLE's reply: an array whose first element is the role. */
static int says_master(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
           reply->element[0]->type == REDIS_REPLY_STRING &&
           !strcmp(reply->element[0]->str, "master");
}

static void on_own_reply(struct lw_request *req, const redisReply *reply, int err,
                         void *arg)
{
    struct own_request *own = (struct own_request *)req;
    struct link *l = arg;
    int kind = own->kind;
    unsigned script = own->script;

    free(own);
    if (err || kind == OWN_ASKING)
        return; /* gone: whoever dropped it retries; ASKING: the command's
                   own reply tells */
    if (reply->type == REDIS_REPLY_ERROR) {
        if (l->conn.state != CONN_SETUP)
            return; /* a reload after NOSCRIPT: the retried EVALSHA reports it */
        conn_fail(&l->conn, conn_is_auth_error(reply->str) ? LW_EAUTH : LW_EREDIS);
        return;
    }
    if (kind == OWN_ROLE && !says_master(reply)) {
        sentinel_demoted(l);
        return;
    }
    if (kind == OWN_LOAD && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(l->scripts[script].sha, reply->str, 41);
}

/* SETUP is over: requests flow. */
static void on_up(void *arg)
{
    struct link *l = arg;
    struct lw_engine *e = l->e;

    if (!e->cluster && !l->is_side) /* the engine's status is its main connection's */
        atomic_store_explicit(&e->status, 0, memory_order_relaxed);
    l->conn_id = ++e->conn_ids;
    count_add(&e->count.replies, conn_own_commands(&l->conn));
    l->replies += conn_own_commands(&l->conn);
    count_add(&e->count.reconnects, l->conn.reconnects - l->reconnects);
    l->reconnects = l->conn.reconnects;
    link_pump(l);
}

/* Take the link's requests in flight off the engine's count. */
static struct fifo take_inflight(struct link *l)
{
    l->e->inflight_all -= l->inflight.count;
    if (l->e->inflight_all <= l->e->max_inflight_all / 2)
        l->e->all_full = 0;
    return fifo_take(&l->inflight);
}

/* Count a list's requests as unsettled: the users', not the engine's own
 * set-up commands (SELECT, SCRIPT LOAD, ROLE), which nobody waits on. */
static void count_unsettled(struct link *l, const struct fifo *list)
{
    uint64_t n = 0;

    for (const struct lw_request *req = list->head; req; req = req->next)
        n += req->done != on_own_reply;
    count_add(&l->e->count.unsettled, n);
}

/*
 * The connection failed or was lost: fail what was in flight on it with
 * err (in a cluster, a slot-routed request lost with its connection is
 * retried: cluster.c).  The state is already DOWN, so a callback that
 * submits again waits for the next connection.  Outside a cluster, before
 * the first connection has been set up, a reason a wait will not mend
 * fails the waiting requests too (conn_fails_at_once()); a resubmit waits
 * for the next attempt.
 */
static void on_down(void *arg, int err)
{
    struct link *l = arg;
    struct lw_engine *e = l->e;
    struct fifo lost = take_inflight(l);
    struct lw_request *req;
    int fail;

    if (!e->cluster && !l->is_side)
        atomic_store_explicit(&e->status, err, memory_order_relaxed);
    l->conn_id = 0;
    if (err == LW_EUNSETTLED) /* Sentinel: the node is no master now */
        count_unsettled(l, &lost);
    while ((req = fifo_pop(&lost)))
        lost_request(l, req, err);
    if (e->cluster)
        cluster_link_down(l, err);
    else if (!atomic_load_explicit(&e->closing, memory_order_relaxed) &&
             (fail = conn_fails_at_once(&l->conn)))
        engine_fail_all(e, &l->waiting, fail);
    link_pump_all(e); /* room freed on the engine-wide cap */
}

void link_fail_inflight(struct link *l, int err)
{
    struct fifo all = take_inflight(l);

    count_unsettled(l, &all);
    engine_fail_all(l->e, &all, err);
}

/* NOSCRIPT: load the script again (unless a load already follows this
 * request on the wire) and send the request once more behind it. */
static void retry_noscript(struct link *l, struct lw_request *req)
{
    struct lw_engine *e = l->e;
    struct link_script *s = &l->scripts[req->script - 1];

    req->retried = 1;
    l->script_reloads++;
    count_add(&e->count.script_reloads, 1);
    if (s->load_seq < req->sent_seq) {
        send_own(l, OWN_LOAD, req->script - 1, e->scripts[req->script - 1].load_cmd,
                 e->scripts[req->script - 1].load_len);
        s->load_seq = l->seq;
    }
    write_request(l, req, lw_clock_now()); /* fails it when the link is gone */
}

/* A reply freed room on the engine-wide cap: when it was full, every link
 * may write again. */
static void after_reply(struct link *l)
{
    struct lw_engine *e = l->e;

    if (e->all_full && e->inflight_all <= e->max_inflight_all / 2) {
        e->all_full = 0;
        if (e->nlinks > 1) {
            link_pump_all(e);
            return;
        }
    }
    link_pump(l);
}

static void on_reply(void *arg, redisReply *reply)
{
    struct link *l = arg;
    struct lw_engine *e = l->e;
    struct lw_request *req = fifo_pop(&l->inflight);

    if (!req) { /* a reply nobody asked for: the stream is out of step */
        conn_fail(&l->conn, LW_ECONNLOST);
        return;
    }
    e->inflight_all--;
    l->replies++;
    count_add(&e->count.replies, 1);
    if (reply->type == REDIS_REPLY_ERROR) {
        l->error_replies++;
        count_add(&e->count.error_replies, 1);
        if (req->script && !req->retried && !strncmp(reply->str, "NOSCRIPT", 8)) {
            retry_noscript(l, req);
            return;
        }
        if (e->cluster && req->done != on_own_reply && cluster_on_error(l, req, reply)) {
            after_reply(l);
            return;
        }
        if (e->sentinel && !strncmp(reply->str, "READONLY", 8)) {
            /* The master we were told of was demoted under us: this and
             * everything after it on the wire is unsettled, not failed. */
            sentinel_demoted(l); /* first: a resubmit must not go there */
            count_add(&e->count.unsettled, 1);
            engine_complete(e, req, NULL, LW_EUNSETTLED);
            return;
        }
    }
    engine_complete(e, req, reply, 0);
    after_reply(l);
}

struct link *link_new(struct lw_engine *e, unsigned node, const struct conn_config *where)
{
    struct link *l = calloc(1, sizeof *l);
    struct conn_config cc = *where;

    if (!l)
        return NULL;
    l->e = e;
    l->node = node;
    cc.loop = e->loop;
    cc.on_setup = on_setup;
    cc.on_up = on_up;
    cc.on_down = on_down;
    cc.on_reply = on_reply;
    cc.arg = l;
    l->scripts = calloc(e->nscripts + 1, sizeof *l->scripts);
    if (conn_init(&l->conn, &cc) || !l->scripts) {
        link_free(l);
        return NULL;
    }
    return l;
}

/* The side lane of a node's main link: a second connection to the same
 * address, with the same credentials, set-up and scripts, whose commands
 * may block the server grace_ns longer than the command timeout.  (Its
 * address is the main connection's when it is made.) */
static struct link *side_new(struct link *of)
{
    struct lw_engine *e = of->e;
    struct link *l = calloc(1, sizeof *l);
    struct conn_config cc = {
        .loop = e->loop, .on_setup = on_setup, .on_up = on_up, .on_down = on_down,
        .on_reply = on_reply, .arg = l,
    };

    if (!l)
        return NULL;
    l->e = e;
    l->node = of->node;
    l->is_side = 1;
    l->grace_ns = e->side_grace_ns;
    l->scripts = calloc(e->nscripts + 1, sizeof *l->scripts);
    if (e->sentinel) { /* the master the sentinels named, not a copy */
        cc.where = sentinel_side_where;
        cc.where_arg = e->sentinel;
    }
    if (conn_init_like(&l->conn, &of->conn, &cc) || !l->scripts) {
        link_free(l);
        return NULL;
    }
    return l;
}

struct link *link_lane(struct link *l, const struct lw_request *req)
{
    if (req->lane != LW_LANE_SIDE || l->is_side)
        return l;
    if (!l->side && (l->side = side_new(l)))
        link_connect(l->side);
    return l->side;
}

void link_free(struct link *l)
{
    if (l) {
        link_free(l->side);
        conn_clear(&l->conn);
        free(l->scripts);
        free(l);
    }
}

void link_connect(struct link *l)
{
    conn_connect(&l->conn);
}

/* Why a request that waited its whole time on this link fails. */
static int wait_error(struct link *l, const struct lw_request *req)
{
    int err;

    if (conn_is_ready(&l->conn))
        return LW_ETIMEDOUT;
    if (l->e->cluster)
        return req->route == LW_ROUTE_SLOT ? LW_EUNSETTLED
                                           : (l->conn.last_err ? l->conn.last_err : LW_ETIMEDOUT);
    err = atomic_load_explicit(&l->e->status, memory_order_relaxed);
    return err ? err : LW_ETIMEDOUT;
}

void link_check_timeouts(struct link *l, uint64_t now_ns)
{
    /* The server has stopped answering: everything on the wire is late. */
    if (l->side)
        link_check_timeouts(l->side, now_ns);
    if (l->inflight.head && l->inflight.head->deadline_ns + l->grace_ns <= now_ns)
        conn_fail(&l->conn, LW_ETIMEDOUT);
    while (l->waiting.head && l->waiting.head->deadline_ns <= now_ns) {
        struct lw_request *req = fifo_pop(&l->waiting);
        int err = wait_error(l, req);

        if (err == LW_EUNSETTLED) /* its master refused or lost the connection */
            count_add(&l->e->count.unsettled, 1);
        engine_complete(l->e, req, NULL, err);
    }
}

void link_close(struct link *l, int err)
{
    struct fifo all;

    if (l->side)
        link_close(l->side, err);
    conn_close(&l->conn);
    all = take_inflight(l);
    engine_fail_all(l->e, &all, err);
    engine_fail_all(l->e, &l->waiting, err);
}

int lw_engine_conn_node(const struct lw_engine *e, uint64_t conn)
{
    for (unsigned i = 0; conn && i < e->nlinks; i++) {
        const struct link *l = e->links[i];

        if (l && (l->conn_id == conn || (l->side && l->side->conn_id == conn)))
            return (int)i;
    }
    return -1;
}

int lw_engine_node_stats(const struct lw_engine *e, unsigned node, struct lw_engine_stats *out)
{
    const struct link *l;

    if (node >= lw_engine_node_count(e))
        return LW_ERANGE;
    memset(out, 0, sizeof *out);
    if (!(l = e->links[node]))
        return 0; /* a replica: no link */
    out->sent = l->sent;
    out->replies = l->replies;
    out->error_replies = l->error_replies;
    out->reconnects = l->conn.reconnects;
    out->script_reloads = l->script_reloads;
    out->waiting = l->waiting.count;
    out->inflight = l->inflight.count;
    if ((l = l->side)) { /* the node's side lane is its share too */
        out->sent += l->sent;
        out->replies += l->replies;
        out->error_replies += l->error_replies;
        out->reconnects += l->conn.reconnects;
        out->script_reloads += l->script_reloads;
        out->waiting += l->waiting.count;
        out->inflight += l->inflight.count;
    }
    return 0;
}
