/*
 * core/replicas.c - first acquires acknowledged by replicas
 * (acquire_replicas): WAIT after the acquire, on the connection that ran it.
 *
 * WAIT counts the writes of the connection it is sent on, and blocks that
 * connection for up to its timeout.  So acquires that wait go over the
 * engine's side lane (a second connection per master: lock.c and
 * semaphore.c set the lane), and their WAIT follows them there; renewals
 * and everything else stay on the main connection, which a WAIT never
 * holds up.
 *
 * One WAIT answers for many acquires.  Every acquire whose reply came
 * before a WAIT was written ran before it on the server, so a WAIT covers
 * all the acquires of its connection that joined before it went out, or
 * were written before it (their sequence numbers).  At most one WAIT per
 * connection is out at a time; acquires answered meanwhile gather behind
 * it and share the next.  Without that, acquires behind a blocked WAIT
 * would each wait out a whole timeout of their own, one after another.
 *
 * A WAIT counts only if it ran on the connection its acquires ran on
 * (request.sent_conn): after a reconnect, or on another master, it
 * would count nothing of ours and could answer "enough" all the same.  So
 * it is routed to the node whose connection that was (by node, not by
 * slot: an acquire that followed an ASK ran on a node its slot does not
 * name yet), and a node-routed request is never sent again on another
 * connection.  Such a WAIT, an error, or too few replicas: every acquire
 * it answers for is given back and fails with LW_EREPLICAS.
 *
 * The acquires are a lock's (lock.c) or a semaphore's (semaphore.c): each
 * waits as the struct replica_ack in its op, whose acked() ends the wait
 * in its own file's states; this file only groups them by connection and
 * sends the WAITs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_base.h"
#include "queue.h"
#include "replicas.h"
#include "call.h"

struct ack_wait {
    struct request req; /* WAIT <replicas> <timeout> */
    struct lw_client *c;
    struct lw_qnode qnode; /* in c->acks */
    struct lw_slist acks;  /* struct replica_ack: the acquires it answers for */
    uint64_t conn;         /* the connection they ran on */
    int submitted;
};

/* Whether w answers for the acquire: the same connection, and w goes out
 * after it (not yet sent, not yet written, or written after it). */
static int covers(const struct ack_wait *w, const struct replica_ack *ack)
{
    if (w->conn != ack->conn)
        return 0;
    if (!w->submitted || w->req.sent_conn == 0)
        return 1;
    return w->req.sent_conn == w->conn && w->req.sent_seq > ack->seq;
}

static struct ack_wait *wait_of(struct lw_qnode *n)
{
    return lw_item_of(n, struct ack_wait, qnode);
}

/* End every acquire w answers for, and w. */
static void settle(struct lw_client *c, struct ack_wait *w, int err)
{
    struct lw_slist acks = lw_slist_take(&w->acks);
    struct replica_ack *ack;

    lw_slist_remove(&c->acks, &w->qnode);
    request_clear(&w->req);
    free(w);
    while ((ack = lw_item_of(lw_slist_pop(&acks), struct replica_ack, qnode)))
        ack->acked(ack, err);
}

static void submit_wait(struct lw_client *c, struct ack_wait *w);

/* A server without WAIT (serverless Redis, Valkey serverless, a renamed
 * command): acquire_replicas cannot be met there.  Said once per acquire,
 * as LW_ENOTSUP, with the reason in lw_client_last_error() and the log,
 * not as a generic error reply. */
static int no_wait_command(struct lw_client *c, const redisReply *reply)
{
    char line[300];

    if (reply->type != REDIS_REPLY_ERROR || !strstr(reply->str, "unknown command"))
        return 0;
    snprintf(line, sizeof line,
             "WAIT: %.120s: this server has no WAIT command (serverless Redis or Valkey?), so "
             "acquire_replicas cannot be met: set it to 0",
             reply->str);
    engine_report(c->engine, LW_ENOTSUP, LOG_ERROR, line);
    return 1;
}

static void on_wait(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct ack_wait *w = arg, *next;
    struct lw_client *c = w->c;
    struct lw_qnode *n;
    uint64_t conn = w->conn;
    int ok = !err && reply->type == REDIS_REPLY_INTEGER &&
             reply->integer >= (long long)c->replicas && req->sent_conn == conn;

    if (!ok && !err && no_wait_command(c, reply))
        err = LW_ENOTSUP;
    settle(c, w,
           ok                                  ? 0
           : err == LW_ESHUTDOWN || c->closing ? LW_ESHUTDOWN
           : err == LW_ENOTSUP                 ? LW_ENOTSUP
                                               : LW_EREPLICAS);
    for (n = lw_slist_first(&c->acks); n; n = lw_qnode_next(n)) { /* those gathered behind it */
        next = wait_of(n);
        if (next->conn == conn && !next->submitted) {
            submit_wait(c, next);
            return;
        }
    }
}

static void submit_wait(struct lw_client *c, struct ack_wait *w)
{
    int rc;

    w->submitted = 1;
    if ((rc = engine_submit(c->engine, &w->req, on_wait, w)))
        on_wait(&w->req, NULL, rc, w);
}

/* A WAIT for the acquire's connection, to the node it is to (node); NULL
 * when out of memory. */
static struct ack_wait *new_wait(struct lw_client *c, const struct replica_ack *ack, int node)
{
    struct ack_wait *w = calloc(1, sizeof *w);
    char n[16], ms[16];
    const char *argv[3] = {"WAIT", n, ms};

    if (!w)
        return NULL;
    snprintf(n, sizeof n, "%u", c->replicas);
    snprintf(ms, sizeof ms, "%u", c->replicas_timeout_ms);
    if (request_command(&w->req, 3, argv, NULL)) {
        free(w);
        return NULL;
    }
    request_route_node(&w->req, (unsigned)node);
    w->req.lane = LW_LANE_SIDE;
    w->c = c;
    w->conn = ack->conn;
    lw_slist_push(&c->acks, &w->qnode);
    return w;
}

void replicas_wait(struct lw_client *c, struct replica_ack *ack, const struct request *req)
{
    struct ack_wait *w;
    struct lw_qnode *n;
    int busy = 0, node;

    ack->conn = req->sent_conn;
    ack->seq = req->sent_seq;
    if (c->closing) {
        ack->acked(ack, LW_ESHUTDOWN);
        return;
    }
    for (n = lw_slist_first(&c->acks); n; n = lw_qnode_next(n)) {
        w = wait_of(n);
        if (covers(w, ack)) { /* one that is out, or gathers behind one */
            lw_slist_push(&w->acks, &ack->qnode);
            return;
        }
        busy |= w->conn == ack->conn; /* out, but too early for this one */
    }
    /* The node whose connection ran the acquire: after a redirect (ASK
     * above all) not the one its slot names.  None: that connection is
     * gone already, and a WAIT elsewhere would count nothing of ours. */
    if ((node = engine_conn_node(c->engine, ack->conn)) < 0 ||
        !(w = new_wait(c, ack, node))) {
        ack->acked(ack, LW_EREPLICAS); /* or out of memory: not acknowledged */
        return;
    }
    lw_slist_push(&w->acks, &ack->qnode);
    if (!busy)
        submit_wait(c, w);
}

void replicas_shutdown(struct lw_client *c)
{
    struct ack_wait *w = wait_of(lw_slist_first(&c->acks));

    while (w) {
        if (w->submitted) { /* the engine ends it */
            w = wait_of(lw_qnode_next(&w->qnode));
            continue;
        }
        settle(c, w, LW_ESHUTDOWN);
        w = wait_of(lw_slist_first(&c->acks)); /* settle() ran callbacks: start over */
    }
}
