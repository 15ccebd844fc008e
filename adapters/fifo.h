/*
 * adapters/fifo.h - a singly-linked FIFO of requests (lw_request.next):
 * what waits to be written on a link, what is in flight on it, what a
 * topology holds back.  Engine thread only.
 */
#ifndef LW_ADAPTERS_FIFO_H
#define LW_ADAPTERS_FIFO_H

#include <stddef.h>

#include "request.h"

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

#endif
