/*
 * adapters/fifo.h - a FIFO of requests (their fifo_node) and its length:
 * what waits to be written on a link, what is in flight on it, what a
 * topology holds back.  A wheel/queue.h FIFO with a count, which the
 * links' caps read.  Engine thread only.
 */
#ifndef LW_ADAPTERS_FIFO_H
#define LW_ADAPTERS_FIFO_H

#include <stddef.h>

#include "queue.h"
#include "request.h"

/* Zeroed: empty. */
struct fifo {
    struct lw_queue q;
    size_t count;
};

static inline int fifo_empty(const struct fifo *f)
{
    return lw_queue_empty(&f->q);
}

/* The oldest request, left in f, or NULL when empty. */
static inline struct request *fifo_peek(const struct fifo *f)
{
    return lw_item_of(lw_queue_peek(&f->q), struct request, fifo_node);
}

/* The request after req in its FIFO, or NULL: a walk from fifo_peek(). */
static inline struct request *fifo_next(const struct request *req)
{
    return lw_item_of(lw_qnode_next(&req->fifo_node), struct request, fifo_node);
}

static inline void fifo_push(struct fifo *f, struct request *req)
{
    lw_queue_push(&f->q, &req->fifo_node);
    f->count++;
}

static inline struct request *fifo_pop(struct fifo *f)
{
    struct request *req = lw_item_of(lw_queue_pop(&f->q), struct request, fifo_node);

    if (req)
        f->count--;
    return req;
}

/* Put req first: a request coming back (a redirect, a retry) is older
 * than those waiting, so it goes first and the FIFO stays nearly in
 * deadline order. */
static inline void fifo_push_front(struct fifo *f, struct request *req)
{
    lw_queue_push_front(&f->q, &req->fifo_node);
    f->count++;
}

/* Take the whole list, leaving f empty. */
static inline struct fifo fifo_take(struct fifo *f)
{
    struct fifo all = {lw_queue_take(&f->q), f->count};

    f->count = 0;
    return all;
}

#endif
