/*
 * bench/pipeline.h - requests kept flowing through an engine, at most
 * `window` unanswered, as the watchdog keeps its renewal batches flowing.
 *
 * The caller submits the first `window`; each reply's callback submits the
 * next, on the engine thread.  Requests are formatted once and re-sent in
 * turn (request i % n), so a continuous flood needs n > window: one
 * connection answers in order, so the request re-sent is always one whose
 * reply has come.  Every reply is checked.
 */
#ifndef LW_BENCH_PIPELINE_H
#define LW_BENCH_PIPELINE_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine.h"

#define PIPE_FOREVER UINT64_MAX

struct pipeline {
    struct engine *e;
    struct request *reqs;
    uint32_t n, window;
    uint32_t ones;              /* each reply: an array of this many 1s;
                                   0: any integer (HSET, DEL) */
    int zeros_ok;               /* the array may hold 0s too (keys gone) */
    int stamped;                /* and ends with one more integer, Redis's
                                   clock (the watchdog's renewal scripts) */
    uint64_t total;             /* submissions to make, or PIPE_FOREVER */
    _Atomic uint64_t next;      /* the next submission's number */
    _Atomic uint64_t submitted;
    _Atomic uint64_t done;      /* completed, well or not */
    _Atomic uint64_t failed;
    _Atomic int first_err;      /* an LW_E* code, or 1: a bad reply */
    _Atomic int stop;           /* no more submissions */
    _Atomic int bad_noted;      /* bad_reply written (by the first bad one) */
    char bad_reply[96];         /* what the first bad reply was */
};

/* Send all n requests once (total = n); the seconds it took, or -1 when
 * it did not finish within a minute.  Check p->failed afterwards. */
double pipe_run(struct pipeline *p);

/* Start a flood: the requests re-sent in turn until pipe_stop(). */
void pipe_start(struct pipeline *p);

/* Stop submitting and wait (at most a minute) for the replies still to
 * come: 0, or -1 when they did not. */
int pipe_stop(struct pipeline *p);

/* Why requests failed, into buf. */
const char *pipe_why(struct pipeline *p, char *buf, size_t n);

/* A bare engine on host:port that knows the lock client's scripts, at most
 * max_inflight unanswered, with a command timeout of a minute (a busy
 * shared machine is not a failure).  0 or an LW_E* code. */
int pipe_scripts_engine(const char *host, int port, uint32_t max_inflight,
                        struct engine **e);

/* Clear and free n requests (reqs may be NULL). */
void pipe_free_reqs(struct request *reqs, uint32_t n);

#endif
