/*
 * adapters/link.c - the pipeline to one node (see link.h): a connection
 * (conn.c: connect, AUTH, PING, deadline, back-off), the FIFOs of requests
 * waiting and in flight on it, its in-flight cap, its scripts' SHAs; and
 * the set of an engine's links.
 *
 * Its own set-up, between the connection's AUTH and PING: SELECT, one
 * SCRIPT LOAD per script, and (when the set says so) ROLE.  The connection
 * is READY once the PING is answered, so by then every script's SHA is
 * known and an EVALSHA never races its load.
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
 * written, but for an acquire's attempt whose wait ends sooner
 * (request_wait_until()), which the tick looks for when the earliest
 * is due (expire_own()).  They belong to the pipeline, so they stay on
 * the engine's tick; the connection's own set-up deadline is its business.
 *
 * Reports.  What only the topology can decide goes through its table
 * (topology.h): the set-up done, the connection down, a user's request
 * answered with an error or lost with the connection, a request that
 * waited its whole time, a node that says it is no master.  The engine's
 * own set-up commands (SELECT, SCRIPT LOAD, ROLE, ASKING) are never
 * reported: nobody else waits on them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "completion.h"
#include "counter.h"
#include "engine.h"
#include "link.h"
#include "topology.h"

/* A command the link sends for itself (set-up, script reload, ASKING). */
struct own_request {
    struct request req;
    enum { OWN_SELECT,
           OWN_LOAD,
           OWN_ASKING,
           OWN_ROLE } kind;
    unsigned script;
};

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
static const char role_cmd[] = "*1\r\n$4\r\nROLE\r\n";

static void send_own(struct link *l, int kind, unsigned script, char *cmd, size_t len);
static void on_own_reply(struct request *req, const redisReply *reply, int err,
                         void *arg);

static const struct topology_ops *ops(const struct link *l)
{
    return l->ls->topo->ops;
}

static int is_own(const struct request *req)
{
    return req->done == on_own_reply;
}

/* --- the set -------------------------------------------------------------- */

void links_complete(struct link_set *ls, struct request *req, const redisReply *reply,
                    int err)
{
    int blocking = req->blocking;

    if (err) {
        count_add(&ls->count.failed, 1);
        if (err == LW_ETIMEDOUT)
            count_add(&ls->count.timeouts, 1);
    }
    req->err = err;
    if (req->done) {
        ls->in_callback++;
        req->done(req, reply, err, req->arg);
        ls->in_callback--;
    }
    if (blocking)
        lw_completion_signal(&req->completed);
}

void links_fail_all(struct link_set *ls, struct fifo *list, int err)
{
    struct fifo all = fifo_take(list), doomed = {0};
    struct request *req;
    uint64_t now = lw_clock_now();

    /* Those that wait through err stay, in order, before a callback below
     * can queue anything behind them. */
    while ((req = fifo_pop(&all)))
        fifo_push(request_waits_through(req, err, now) ? list : &doomed, req);
    while ((req = fifo_pop(&doomed)))
        links_complete(ls, req, NULL, err);
}

void links_note_queues(struct link_set *ls)
{
    size_t waiting = ls->topo ? ls->topo->ops->held(ls->topo) : 0;

    for (unsigned i = 0; i < ls->nlinks; i++)
        if (ls->links[i])
            waiting += ls->links[i]->waiting.count + ls->links[i]->urgent.count +
                       (ls->links[i]->side ? ls->links[i]->side->waiting.count +
                                                 ls->links[i]->side->urgent.count
                                           : 0);
    atomic_store_explicit(&ls->count.inflight, ls->inflight_all, memory_order_relaxed);
    atomic_store_explicit(&ls->count.waiting, waiting, memory_order_relaxed);
}

int links_reserve(struct link_set *ls, unsigned n)
{
    struct link **links;

    if (n <= ls->nlinks)
        return 0;
    if (!(links = realloc(ls->links, n * sizeof *links)))
        return LW_ENOMEM;
    memset(links + ls->nlinks, 0, (n - ls->nlinks) * sizeof *links);
    ls->links = links;
    ls->nlinks = n;
    return 0;
}

void links_pump_all(struct link_set *ls)
{
    for (unsigned i = 0; i < ls->nlinks; i++)
        if (ls->links[i])
            link_pump(ls->links[i]);
}

/* --- writing ---------------------------------------------------------------- */

/* The request could not be written, or its connection went: the topology
 * may retry a user's request; the link's own are done with. */
static void lost_request(struct link *l, struct request *req, int err)
{
    if (!is_own(req) && ops(l)->link_lost)
        ops(l)->link_lost(l->ls->topo, l, req, err);
    else
        links_complete(l->ls, req, NULL, err);
}

/* Write one request, or fail it with LW_ECONNLOST when the connection is
 * neither in SETUP nor READY (a NOSCRIPT retry after it dropped).  A
 * request sent after an ASK redirect is preceded by ASKING, back to back,
 * as the cluster requires. */
static void write_request(struct link *l, struct request *req, uint64_t now_ns)
{
    struct link_set *ls = l->ls;

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
    req->sent_ns = now_ns;
    fifo_push(&l->inflight, req);
    ls->inflight_all++;
    l->sent++;
    count_add(&ls->count.sent, 1);
    count_max(&ls->count.inflight_max, ls->inflight_all);
}

/*
 * Write waiting requests while the pipeline has room: the urgent ones
 * first, up to the whole cap, whenever a slot is free; then the others,
 * up to the cap less the urgent ones' reserve.  Once that has been
 * reached, the others wait until half of it has drained before topping it
 * up: the server still has the other half to work on, and one write of
 * many commands costs both sides fewer system calls and wake-ups than many
 * writes of one.  Until it fills, requests are written at once.  The same
 * holds for the cap on all links together.
 */
void link_pump(struct link *l)
{
    struct link_set *ls = l->ls;
    uint32_t cap = ls->max_inflight - ls->reserve;
    size_t cap_all = ls->max_inflight_all - ls->reserve;
    uint64_t now_ns;

    if (l->pipeline_full && l->inflight.count <= ls->refill_at)
        l->pipeline_full = 0;
    if (conn_is_ready(&l->conn) &&
        (!fifo_empty(&l->urgent) ||
         (!fifo_empty(&l->waiting) && !l->pipeline_full && !ls->all_full))) {
        now_ns = lw_clock_now();
        while (conn_is_ready(&l->conn) && !fifo_empty(&l->urgent) &&
               l->inflight.count < ls->max_inflight && ls->inflight_all < ls->max_inflight_all)
            write_request(l, fifo_pop(&l->urgent), now_ns);
        while (!l->pipeline_full && !ls->all_full && conn_is_ready(&l->conn) &&
               !fifo_empty(&l->waiting) && l->inflight.count < cap && ls->inflight_all < cap_all)
            write_request(l, fifo_pop(&l->waiting), now_ns);
        if (l->inflight.count >= cap)
            l->pipeline_full = 1;
        if (ls->inflight_all >= cap_all)
            ls->all_full = 1;
    }
    if (l->side)
        link_pump(l->side);
    else
        links_note_queues(ls);
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

/* --- the connection's callbacks --------------------------------------------- */

/* Connected, AUTH written: SELECT and the SCRIPT LOADs, and ROLE when the
 * node must prove it is a master (Sentinel: the node named may have been
 * demoted since, and nothing may be written to it before it says master);
 * the PING follows. */
static void on_setup(void *arg)
{
    struct link *l = arg;
    struct link_set *ls = l->ls;

    count_add(&ls->count.sent, conn_own_commands(&l->conn));
    l->sent += conn_own_commands(&l->conn);
    if (ls->select_cmd)
        send_own(l, OWN_SELECT, 0, ls->select_cmd, ls->select_len);
    for (unsigned i = 0; i < ls->nscripts; i++) {
        send_own(l, OWN_LOAD, i, ls->scripts[i].load_cmd, ls->scripts[i].load_len);
        l->scripts[i].load_seq = l->seq;
    }
    if (ls->check_role)
        send_own(l, OWN_ROLE, 0, (char *)role_cmd, sizeof role_cmd - 1);
}

/* ROLE's reply: an array whose first element is the role. */
static int says_master(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
           reply->element[0]->type == REDIS_REPLY_STRING &&
           !strcmp(reply->element[0]->str, "master");
}

/* A set-up command was refused: the attempt fails with Redis's words,
 * the command named as redis-cli names it ("SELECT 99"), and a code that
 * says whether a wait may mend it (conn_refusal()). */
static void refused(struct link *l, int kind, const char *words)
{
    char cmd[32];

    if (kind == OWN_SELECT)
        snprintf(cmd, sizeof cmd, "SELECT %d", l->ls->ep->db);
    else
        snprintf(cmd, sizeof cmd, "%s", kind == OWN_LOAD ? "SCRIPT LOAD" : "ROLE");
    conn_refused(&l->conn, cmd, words);
}

static void on_own_reply(struct request *req, const redisReply *reply, int err,
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
        refused(l, kind, reply->str);
        return;
    }
    if (kind == OWN_ROLE && !says_master(reply)) {
        ops(l)->link_demoted(l->ls->topo, l);
        return;
    }
    if (kind == OWN_LOAD && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(l->scripts[script].sha, reply->str, 41);
}

/* SETUP is over: requests flow. */
static void on_up(void *arg)
{
    struct link *l = arg;
    struct link_set *ls = l->ls;

    l->conn_id = ++ls->conn_ids;
    count_add(&ls->count.replies, conn_own_commands(&l->conn));
    l->replies += conn_own_commands(&l->conn);
    count_add(&ls->count.reconnects, l->conn.reconnects - l->reconnects);
    l->reconnects = l->conn.reconnects;
    count_add(&ls->count.tls_handshakes, l->conn.tls.handshakes - l->handshakes);
    l->handshakes = l->conn.tls.handshakes;
    count_add(&ls->count.tls_resumed, l->conn.tls.resumed - l->resumed);
    l->resumed = l->conn.tls.resumed;
    if (ops(l)->link_up)
        ops(l)->link_up(ls->topo, l);
    link_pump(l);
}

/* Take the link's requests in flight off the set's count. */
static struct fifo take_inflight(struct link *l)
{
    struct link_set *ls = l->ls;

    ls->inflight_all -= l->inflight.count;
    if (ls->inflight_all <= ls->max_inflight_all / 2)
        ls->all_full = 0;
    return fifo_take(&l->inflight);
}

/* Count a list's requests as unsettled: the users', not the link's own
 * set-up commands (SELECT, SCRIPT LOAD, ROLE), which nobody waits on. */
static void count_unsettled(struct link *l, const struct fifo *list)
{
    uint64_t n = 0;

    for (const struct request *req = fifo_peek(list); req; req = fifo_next(req))
        n += !is_own(req);
    count_add(&l->ls->count.unsettled, n);
}

/*
 * The connection failed or was lost: what was in flight on it is reported
 * lost (err), then the topology hears of it.  The state is already DOWN,
 * so a callback that submits again waits for the next connection.
 */
static void on_down(void *arg, int err)
{
    struct link *l = arg;
    struct link_set *ls = l->ls;
    struct fifo lost = take_inflight(l);
    struct request *req;

    l->conn_id = 0;
    if (err == LW_EUNSETTLED) /* the node is no master now */
        count_unsettled(l, &lost);
    while ((req = fifo_pop(&lost)))
        lost_request(l, req, err);
    if (ops(l)->link_down)
        ops(l)->link_down(ls->topo, l, err);
    links_pump_all(ls); /* room freed on the set's cap */
}

void link_fail_inflight(struct link *l, int err)
{
    struct fifo all = take_inflight(l);

    count_unsettled(l, &all);
    links_fail_all(l->ls, &all, err);
    if (l->side)
        link_fail_inflight(l->side, err);
}

void link_fail_waiting(struct link *l, int err)
{
    links_fail_all(l->ls, &l->urgent, err);
    links_fail_all(l->ls, &l->waiting, err);
    if (l->side)
        link_fail_waiting(l->side, err);
}

/* NOSCRIPT: load the script again (unless a load already follows this
 * request on the wire) and send the request once more behind it. */
static void retry_noscript(struct link *l, struct request *req)
{
    struct link_set *ls = l->ls;
    struct link_script *s = &l->scripts[req->script - 1];

    req->retried = 1;
    l->script_reloads++;
    count_add(&ls->count.script_reloads, 1);
    if (s->load_seq < req->sent_seq) {
        send_own(l, OWN_LOAD, req->script - 1, ls->scripts[req->script - 1].load_cmd,
                 ls->scripts[req->script - 1].load_len);
        s->load_seq = l->seq;
    }
    write_request(l, req, lw_clock_now()); /* fails it when the link is gone */
}

/* A reply freed room on the set's cap: when it was full, every link may
 * write again. */
static void after_reply(struct link *l)
{
    struct link_set *ls = l->ls;

    if (ls->all_full && ls->inflight_all <= ls->max_inflight_all / 2) {
        ls->all_full = 0;
        if (ls->nlinks > 1) {
            links_pump_all(ls);
            return;
        }
    }
    link_pump(l);
}

static void on_reply(void *arg, redisReply *reply)
{
    struct link *l = arg;
    struct link_set *ls = l->ls;
    struct request *req = fifo_pop(&l->inflight);

    if (!req) { /* a reply nobody asked for: the stream is out of step */
        conn_fail(&l->conn, LW_ECONNLOST);
        return;
    }
    ls->inflight_all--;
    l->replies++;
    count_add(&ls->count.replies, 1);
    if (reply->type == REDIS_REPLY_ERROR) {
        l->error_replies++;
        count_add(&ls->count.error_replies, 1);
        if (req->script && !req->retried && !strncmp(reply->str, "NOSCRIPT", 8)) {
            retry_noscript(l, req);
            return;
        }
        if (!is_own(req) && ops(l)->link_error && ops(l)->link_error(ls->topo, l, req, reply)) {
            after_reply(l);
            return;
        }
    }
    links_complete(ls, req, reply, 0);
    after_reply(l);
}

/* conn.h's where hook: the topology says where this link connects now. */
static int link_where(void *arg, const char **host, int *port)
{
    struct link *l = arg;

    return ops(l)->link_where(l->ls->topo, l, host, port);
}

/* A link of node to host:port (NULL: the endpoint's address). */
static struct link *make_link(struct link_set *ls, unsigned node, const char *host, int port)
{
    struct link *l = calloc(1, sizeof *l);
    struct conn_config cc = {
        .ep = ls->ep,
        .host = host,
        .port = port,
        .loop = ls->loop,
        .on_setup = on_setup,
        .on_up = on_up,
        .on_down = on_down,
        .on_reply = on_reply,
        .arg = l,
    };

    if (!l)
        return NULL;
    l->ls = ls;
    l->node = node;
    if (ops(l)->link_where) {
        cc.where = link_where;
        cc.where_arg = l;
    }
    l->scripts = calloc(ls->nscripts + 1, sizeof *l->scripts);
    if (conn_init(&l->conn, &cc) || !l->scripts) {
        free(l->scripts);
        conn_clear(&l->conn);
        free(l);
        return NULL;
    }
    return l;
}

struct link *link_new(struct link_set *ls, unsigned node, const char *host, int port)
{
    struct link *l = make_link(ls, node, host, port);

    if (l)
        ls->links[node] = l;
    return l;
}

/* The side lane of a node's main link: a second connection to the same
 * node, with the same credentials, set-up and scripts, whose commands may
 * block the server grace_ns longer than the command timeout.  (Its
 * address is the main connection's when it is made, or the topology's.) */
static struct link *side_new(struct link *of)
{
    const char *host;
    int port;
    struct link *l;

    conn_address(&of->conn, &host, &port);
    if (!(l = make_link(of->ls, of->node, host, port)))
        return NULL;
    l->is_side = 1;
    l->grace_ns = of->ls->side_grace_ns;
    return l;
}

/* The link of l's node that req's lane names: l, or its side link (made
 * and connecting on first use; NULL when out of memory). */
static struct link *lane_of(struct link *l, const struct request *req)
{
    if (req->lane != LW_LANE_SIDE || l->is_side)
        return l;
    if (!l->side && (l->side = side_new(l)))
        link_connect(l->side);
    return l->side;
}

void link_queue(struct link *l, struct request *req, int front)
{
    struct link *to = lane_of(l, req);
    struct fifo *q;

    if (!to) {
        links_complete(l->ls, req, NULL, LW_ENOMEM);
        return;
    }
    q = req->urgent ? &to->urgent : &to->waiting;
    if (front)
        fifo_push_front(q, req);
    else
        fifo_push(q, req);
    /* Its wait may end before those queued ahead of it: the tick looks
     * for it by then (expire_own()). */
    if (req->wait_until_ns && (!to->own_due_ns || req->expires_ns < to->own_due_ns))
        to->own_due_ns = req->expires_ns;
}

static void link_free(struct link *l)
{
    if (l) {
        link_free(l->side);
        conn_clear(&l->conn);
        free(l->scripts);
        free(l);
    }
}

int links_select_db(struct link_set *ls)
{
    char db[16];
    const char *argv[] = {"SELECT", db};
    int n;

    if (!ls->ep->db || ls->select_cmd)
        return 0;
    snprintf(db, sizeof db, "%d", ls->ep->db);
    if ((n = redisFormatCommandArgv(&ls->select_cmd, 2, argv, NULL)) < 0)
        return LW_ENOMEM;
    ls->select_len = (size_t)n;
    return 0;
}

void links_free(struct link_set *ls)
{
    for (unsigned i = 0; i < ls->nlinks; i++)
        link_free(ls->links[i]);
    free(ls->links);
    ls->links = NULL;
    ls->nlinks = 0;
    redisFreeCommand(ls->select_cmd);
    ls->select_cmd = NULL;
}

void link_connect(struct link *l)
{
    conn_connect(&l->conn);
}

int link_is_up(const struct link *l)
{
    return conn_is_ready(&l->conn);
}

int link_held(const struct link *l)
{
    return conn_held(&l->conn);
}

void link_fail(struct link *l, int err)
{
    conn_fail(&l->conn, err);
}

void link_drop(struct link *l)
{
    conn_drop(&l->conn);
    if (l->side)
        conn_drop(&l->side->conn);
}

/* --- time ------------------------------------------------------------------ */

/* Why a request that waited its whole time on this link fails. */
static int wait_error(struct link *l, const struct request *req)
{
    if (conn_is_ready(&l->conn))
        return LW_ETIMEDOUT;
    return ops(l)->link_expired(l->ls->topo, l, req);
}

/* req waited its whole time to be written: it fails. */
static void expire(struct link *l, struct request *req)
{
    int err = wait_error(l, req);

    if (err == LW_EUNSETTLED) /* its master refused or lost the connection */
        count_add(&l->ls->count.unsettled, 1);
    links_complete(l->ls, req, NULL, err);
}

/* Fail the requests of q (in deadline order) that waited their whole
 * time to be written. */
static void expire_waiting(struct link *l, struct fifo *q, uint64_t now_ns)
{
    const struct request *first;

    while ((first = fifo_peek(q)) && first->expires_ns <= now_ns)
        expire(l, fifo_pop(q));
}

/* Requests whose caller's wait ends before the command timeout
 * (request_wait_until()) break the deadline order: one may be due
 * behind a head that is not.  When the earliest such wait queued on l is
 * over (own_due_ns, a bound: what was written since may have been it),
 * both FIFOs are searched: those due fail, the others keep their order,
 * and own_due_ns becomes the earliest left.  A search per tick at most,
 * and only while the link is down: up, it writes what waits in order, and
 * a head whose time is up fails as any other. */
static void expire_own(struct link *l, uint64_t now_ns)
{
    struct fifo *queues[2] = {&l->urgent, &l->waiting}, due = {0};
    struct request *req;
    uint64_t next = 0;

    for (int i = 0; i < 2; i++) {
        struct fifo all = fifo_take(queues[i]);

        while ((req = fifo_pop(&all))) {
            if (req->wait_until_ns && req->expires_ns <= now_ns) {
                fifo_push(&due, req);
                continue;
            }
            fifo_push(queues[i], req);
            if (req->wait_until_ns && (!next || req->expires_ns < next))
                next = req->expires_ns;
        }
    }
    l->own_due_ns = next; /* before a callback queues more */
    while ((req = fifo_pop(&due)))
        expire(l, req);
}

static void check_timeouts(struct link *l, uint64_t now_ns)
{
    const struct request *oldest;

    /* The server has stopped answering: everything on the wire is late. */
    if (l->side)
        check_timeouts(l->side, now_ns);
    oldest = fifo_peek(&l->inflight);
    if (oldest && oldest->sent_ns + l->ls->command_timeout_ns + l->grace_ns <= now_ns)
        conn_fail(&l->conn, LW_ETIMEDOUT);
    expire_waiting(l, &l->urgent, now_ns);
    expire_waiting(l, &l->waiting, now_ns);
    if (l->own_due_ns && l->own_due_ns <= now_ns && !conn_is_ready(&l->conn))
        expire_own(l, now_ns);
}

void links_check_timeouts(struct link_set *ls, uint64_t now_ns)
{
    for (unsigned i = 0; i < ls->nlinks; i++)
        if (ls->links[i])
            check_timeouts(ls->links[i], now_ns);
}

static void link_close(struct link *l, int err)
{
    struct fifo all;

    if (l->side)
        link_close(l->side, err);
    conn_close(&l->conn);
    all = take_inflight(l);
    links_fail_all(l->ls, &all, err);
    links_fail_all(l->ls, &l->urgent, err);
    links_fail_all(l->ls, &l->waiting, err);
}

void links_close(struct link_set *ls, int err)
{
    for (unsigned i = 0; i < ls->nlinks; i++)
        if (ls->links[i])
            link_close(ls->links[i], err);
}

/* --- the questions ------------------------------------------------------------ */

int links_conn_node(const struct link_set *ls, uint64_t conn)
{
    for (unsigned i = 0; conn && i < ls->nlinks; i++) {
        const struct link *l = ls->links[i];

        if (l && (l->conn_id == conn || (l->side && l->side->conn_id == conn)))
            return (int)i;
    }
    return -1;
}

/* Add l's share of the counters to out. */
static void add_stats(const struct link *l, struct engine_stats *out)
{
    out->sent += l->sent;
    out->replies += l->replies;
    out->error_replies += l->error_replies;
    out->reconnects += l->conn.reconnects;
    out->script_reloads += l->script_reloads;
    out->redirects += l->redirects;
    out->waiting += l->waiting.count + l->urgent.count;
    out->inflight += l->inflight.count;
}

void links_node_stats(const struct link_set *ls, unsigned node, struct engine_stats *out)
{
    const struct link *l = node < ls->nlinks ? ls->links[node] : NULL;

    memset(out, 0, sizeof *out);
    if (!l)
        return; /* a replica: no link */
    add_stats(l, out);
    if (l->side) /* the node's side lane is its share too */
        add_stats(l->side, out);
}
