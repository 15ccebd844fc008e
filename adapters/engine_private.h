/*
 * adapters/engine_private.h - what engine.c (threads, loop, requests) and
 * link.c (the pipeline on the connection) share.  Not for core/.
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
    char sha[41];       /* from the SCRIPT LOAD reply */
    uint64_t load_seq;  /* write sequence number of the latest SCRIPT LOAD */
};

/* Counters: written by the engine thread only, read from anywhere. */
struct counters {
    _Atomic uint64_t sent, replies, error_replies, failed, timeouts;
    _Atomic uint64_t reconnects, script_reloads, waiting, inflight, inflight_max;
    _Atomic uint64_t topology_refreshes, redirects, unsettled;
};

struct lw_engine {
    /* Configuration, copied. */
    uint64_t command_timeout_ns;
    uint32_t max_inflight;
    uint32_t refill_at;        /* a pipeline that was full is topped up once
                                  no more than this many are in flight */
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
    _Alignas(64) _Atomic int callers; /* threads inside lw_engine_submit() */
    _Atomic int closing;       /* lw_engine_free() has begun */
    _Alignas(64) _Atomic int status; /* lw_engine_status() */
    struct counters count;

    /* Engine thread only. */
    struct fifo waiting;       /* submitted, not yet written */
    struct fifo inflight;      /* written, reply pending, in write order */
    struct lw_conn conn;       /* the connection the pipeline runs on */
    uint64_t seq;              /* commands written so far */
    int in_callback;           /* depth of user callbacks running now */
    int pipeline_full;         /* reached max_inflight; waiting for refill_at */
};

/* engine.c: finish a request, on the engine thread. */
void engine_complete(struct lw_engine *e, struct lw_request *req,
                     const redisReply *reply, int err);

/* Fail every request of the list with err. */
void engine_fail_all(struct lw_engine *e, struct fifo *list, int err);

/* link.c, engine thread (link_init: any thread, before the loop runs;
 * LW_ENOMEM, and free_engine() frees what it copied either way). */
int link_init(struct lw_engine *e, const struct lw_engine_config *cfg);
void link_connect(struct lw_engine *e);          /* start the first connection */
void link_pump(struct lw_engine *e);             /* write waiting requests */
void link_check_timeouts(struct lw_engine *e, uint64_t now_ns);
void link_close(struct lw_engine *e, int err);   /* drop the connection for good */

#endif
