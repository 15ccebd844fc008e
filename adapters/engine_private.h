/*
 * adapters/engine_private.h - what engine.c (threads, loop, requests),
 * link.c (the pipeline on one node's connection) and cluster.c (topology
 * and routing) share.  Not for core/.
 */
#ifndef LW_ADAPTERS_ENGINE_PRIVATE_H
#define LW_ADAPTERS_ENGINE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include <ev.h>

#include "conn.h"
#include "counter.h"
#include "engine.h"
#include "mpsc.h"

/* A singly-linked FIFO of requests; engine thread only. */
struct fifo {
    struct lw_request *head;
    struct lw_request *tail;
    size_t count;
};

static inline void fifo_push(struct fifo *f, struct lw_request *req)
{
    req->next = NULL;
    if (f->tail)
        f->tail->next = req;
    else
        f->head = req;
    f->tail = req;
    f->count++;
}

static inline struct lw_request *fifo_pop(struct fifo *f)
{
    struct lw_request *req = f->head;

    if (req) {
        f->head = req->next;
        if (!f->head)
            f->tail = NULL;
        f->count--;
        req->next = NULL;
    }
    return req;
}

/* Put req first: a request coming back (a redirect, a retry) is older
 * than those waiting, so it goes first and the FIFO stays nearly in
 * deadline order. */
static inline void fifo_push_front(struct fifo *f, struct lw_request *req)
{
    req->next = f->head;
    f->head = req;
    if (!f->tail)
        f->tail = req;
    f->count++;
}

/* Take the whole list, leaving f empty. */
static inline struct fifo fifo_take(struct fifo *f)
{
    struct fifo all = *f;

    f->head = f->tail = NULL;
    f->count = 0;
    return all;
}

struct script {
    char *load_cmd;     /* SCRIPT LOAD <body>, formatted */
    size_t load_len;
};

/* A script's state on one link. */
struct link_script {
    char sha[41];       /* from the SCRIPT LOAD reply */
    uint64_t load_seq;  /* write sequence number of the latest SCRIPT LOAD */
};

/*
 * The pipeline to one node: its connection, its FIFOs, its cap, its
 * scripts.  One outside a cluster; one per master in a cluster, so a slow
 * or dead master holds up only its own requests.
 */
struct link {
    struct lw_engine *e;
    unsigned node;             /* its node index; 0 outside a cluster */
    struct lw_conn conn;
    struct fifo waiting;       /* routed here, not yet written */
    struct fifo inflight;      /* written, reply pending, in write order */
    struct link_script *scripts;
    uint64_t seq;              /* commands written so far */
    uint64_t reconnects;       /* conn.reconnects already counted */
    int pipeline_full;         /* reached the cap; waiting for refill_at */
    uint64_t conn_id;          /* the connection's number while READY
                                  (lw_request.sent_conn) */
    uint64_t grace_ns;         /* added to the command timeout: a side
                                  link's commands may block (WAIT) */
    struct link *side;         /* the node's side lane, once asked for */
    int is_side;               /* this is a side lane */
    /* lw_engine_node_stats(): plain counters, read on the engine thread. */
    uint64_t sent, replies, error_replies, script_reloads;
};

/* Counters: written by the engine thread only, read from anywhere. */
struct counters {
    _Atomic uint64_t sent, replies, error_replies, failed, timeouts;
    _Atomic uint64_t reconnects, script_reloads, waiting, inflight, inflight_max;
    _Atomic uint64_t topology_refreshes, redirects, unsettled, switches;
    _Atomic uint64_t taken_late;
};

struct lw_engine {
    /* Configuration, copied. */
    uint64_t command_timeout_ns;
    uint32_t max_inflight;     /* per link */
    uint32_t refill_at;        /* a pipeline that was full is topped up once
                                  no more than this many are in flight */
    uint32_t max_inflight_all; /* all links together (the same outside a
                                  cluster) */
    char *select_cmd;          /* SELECT <db>, formatted, or NULL */
    size_t select_len;
    struct script *scripts;
    unsigned nscripts;
    lw_engine_tick_fn *on_tick;
    void *tick_arg;

    /* The loop and its watchers. */
    struct ev_loop *loop;
    int own_thread;            /* 0: embedded in the caller's loop */
    pthread_t thread;          /* ours, when own_thread */
    pthread_t loop_thread;     /* the engine thread, for LW_EDEADLK; set
                                  before lw_engine_new() returns */
    _Atomic uint32_t started;  /* own thread: loop_thread is set (a futex) */
    ev_async wake;             /* submissions, and shutdown */
    ev_timer tick;             /* the wheel's tick */
    struct lw_wheel *wheel;

    /* Shared with application threads.  What submitters write (the queue's
     * head, `callers`) and what the engine writes (the queue's tail, the
     * counters) sit on separate cache lines. */
    struct lw_mpsc submitted;
    /* Engine thread: what take_late() saw at the last tick. */
    struct lw_mpsc_node *tick_first; /* the queue's first node */
    uint64_t tick_taken;             /* `taken` then */
    uint64_t taken;                  /* requests taken from the queue */
    _Alignas(64) _Atomic int callers; /* threads inside lw_engine_submit() */
    _Atomic int closing;       /* lw_engine_free() has begun */
    _Alignas(64) _Atomic int status; /* lw_engine_status() */
    struct counters count;

    /* Engine thread only. */
    struct link **links;       /* by node index; NULL for a node without one
                                  (a replica); links[0] outside a cluster */
    unsigned nlinks;
    size_t inflight_all;       /* commands in flight on all links */
    int all_full;              /* max_inflight_all was reached */
    struct cluster *cluster;   /* NULL outside a cluster */
    struct sentinel *sentinel; /* NULL outside Sentinel mode */
    int in_callback;           /* depth of user callbacks running now */
    uint64_t conn_ids;         /* connections set up so far, all links */
    uint64_t side_grace_ns;    /* side_block_ms */
};

/* Link 0: the only one outside a cluster. */
static inline struct link *single_link(struct lw_engine *e)
{
    return e->links[0];
}

/* engine.c: finish a request, on the engine thread. */
void engine_complete(struct lw_engine *e, struct lw_request *req,
                     const redisReply *reply, int err);

/* Fail every request of the list with err. */
void engine_fail_all(struct lw_engine *e, struct fifo *list, int err);

/* Publish the queue lengths for lw_engine_get_stats(). */
void engine_note_queues(struct lw_engine *e);

/* link.c, engine thread (link_new: any thread before the loop runs; NULL
 * when out of memory). */
struct link *link_new(struct lw_engine *e, unsigned node, const struct conn_config *where);
void link_free(struct link *l);                  /* after link_close() */
void link_connect(struct link *l);               /* start the first connection */
void link_pump(struct link *l);                  /* write waiting requests */
void link_pump_all(struct lw_engine *e);
void link_check_timeouts(struct link *l, uint64_t now_ns);
void link_close(struct link *l, int err);        /* drop the connection for good */
/* The link of l's node that req's lane names: l, or its side link (made
 * and connecting on first use; NULL when out of memory). */
struct link *link_lane(struct link *l, const struct lw_request *req);

/* link.c: take the link's requests in flight off it and fail them with
 * err, counted as unsettled (Sentinel: the master they went to is not the
 * master any more, so no reply of its may confirm them). */
void link_fail_inflight(struct link *l, int err);

/* "host:port" (an IPv6 host in brackets): 0, LW_EINVAL, LW_ERANGE,
 * LW_ENOMEM; host (malloc'd) and port may be NULL. */
int engine_parse_addr(const char *s, char **host, int *port);

/* sentinel.c, engine thread but sentinel_check and sentinel_new
 * (lw_engine_new(), which has sentinel_new make link 0). */
int sentinel_check(const struct lw_engine_config *cfg);
int sentinel_new(struct lw_engine *e, const struct lw_engine_config *cfg);
void sentinel_free(struct lw_engine *e);
void sentinel_start(struct lw_engine *e);        /* ask, connect, listen */
void sentinel_stop(struct lw_engine *e);
int sentinel_fails_at_once(const struct lw_engine *e);
/* Take req in: 1 when it is held back after a switch (lw_request_settle()),
 * 0 to queue it on the link as usual. */
int sentinel_hold(struct lw_engine *e, struct lw_request *req);
size_t sentinel_held(const struct lw_engine *e); /* requests held back */
/* l's node is no master (ROLE, READONLY): drop l's connection (its
 * requests in flight fail as unsettled) and ask the sentinels now. */
void sentinel_demoted(struct link *l);
/* conn.h's where hook for a side link (arg: e->sentinel). */
int sentinel_side_where(void *arg, const char **host, int *port);

/* cluster.c, engine thread but cluster_check_seeds and cluster_new
 * (lw_engine_new()). */
int cluster_check_seeds(const struct lw_engine_config *cfg);
int cluster_new(struct lw_engine *e, const struct lw_engine_config *cfg);
void cluster_free(struct lw_engine *e);
void cluster_start(struct lw_engine *e);         /* connect to the first seed */
void cluster_stop(struct lw_engine *e);          /* fail what it holds, close */
/* Queue req on the link its route names (first, when front), or hold it
 * until there is one. */
void cluster_route(struct lw_engine *e, struct lw_request *req, int front);
void cluster_tick(struct lw_engine *e, uint64_t now_ns);
int cluster_fails_at_once(const struct lw_engine *e);
/* A link's request answered with an error: 1 when the cluster took it
 * over (a redirect, a retry), 0 to complete it with the reply. */
int cluster_on_error(struct link *l, struct lw_request *req, const redisReply *reply);
/* A link's request lost with its connection (err): retried or failed. */
void cluster_on_lost(struct link *l, struct lw_request *req, int err);
void cluster_link_down(struct link *l, int err);
size_t cluster_held(const struct lw_engine *e);  /* requests held outside links */

#endif
