/*
 * An intrusive multi-producer single-consumer queue (Dmitry Vyukov's).
 *
 * Producers, on any thread, push with one atomic exchange and one store.
 * The single consumer pops without atomic read-modify-writes.  Nodes are
 * embedded in the caller's structs (struct lw_mpsc_node); the queue never
 * allocates.
 *
 * The one weakness, inherent in the design: a producer pre-empted between
 * its exchange and its store hides every node pushed after it until it runs
 * again.  lw_mpsc_pop() then returns NULL although the queue is not empty;
 * the consumer simply finds those nodes at its next pop.  Nothing is lost.
 *
 * Memory order.  push: the node's fields written before the push are
 * published by the release store that links it (or by the exchange, for
 * the first node); pop reads `next` with acquire, so the consumer sees them.
 *
 * A node's `next` is a plain pointer in the public header (it must compile
 * as C++), so it is touched only through lw_mpsc_next(), lw_mpsc_link()
 * and lw_mpsc_clear_next() below:
 * GCC/Clang __atomic builtins, defined on plain objects of a lock-free
 * size.  The queue's own head is private and stays a C11 _Atomic.
 */
#ifndef LW_WHEEL_MPSC_H
#define LW_WHEEL_MPSC_H

#include <stdatomic.h>

#include <leasewheel/wheel.h>

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2,
               "lw_mpsc_node.next is accessed with lock-free atomic builtins");

static inline struct lw_mpsc_node *lw_mpsc_next(const struct lw_mpsc_node *node)
{
    return __atomic_load_n(&node->next, __ATOMIC_ACQUIRE);
}

/* Before the node is published: nobody else can be reading it. */
static inline void lw_mpsc_clear_next(struct lw_mpsc_node *node)
{
    __atomic_store_n(&node->next, (struct lw_mpsc_node *)0, __ATOMIC_RELAXED);
}

/* Publishes node (and what was written to it before) to the consumer. */
static inline void lw_mpsc_link(struct lw_mpsc_node *prev, struct lw_mpsc_node *node)
{
    __atomic_store_n(&prev->next, node, __ATOMIC_RELEASE);
}

/* head is the producers' and tail the consumer's: on separate cache lines,
 * so that pushing does not keep stealing the line the consumer pops from. */
struct lw_mpsc {
    _Alignas(64) _Atomic(struct lw_mpsc_node *) head; /* last pushed; producers swap it */
    _Alignas(64) struct lw_mpsc_node *tail;           /* next to pop; consumer only */
    struct lw_mpsc_node stub;                         /* keeps the list non-empty */
};

static inline void lw_mpsc_init(struct lw_mpsc *q)
{
    lw_mpsc_clear_next(&q->stub);
    atomic_init(&q->head, &q->stub);
    q->tail = &q->stub;
}

/* Any thread.  Returns true when the queue may have been empty before. */
static inline int lw_mpsc_push(struct lw_mpsc *q, struct lw_mpsc_node *node)
{
    struct lw_mpsc_node *prev;

    lw_mpsc_clear_next(node);
    prev = atomic_exchange_explicit(&q->head, node, memory_order_acq_rel);
    lw_mpsc_link(prev, node);
    return prev == &q->stub;
}

/*
 * Consumer only: call first in the wake-up callback, before the first pop,
 * when producers push, then wake the consumer through a flag that the
 * consumer's side clears before calling back - as libev's ev_async does:
 * its pipe callback stores `sent = 0` and calls the watcher with only a
 * compiler barrier between.  On x86 that store can still sit in the store
 * buffer while the callback reads the queue.  Then:
 *   consumer                       producer of X
 *   sent = 0 (buffered)
 *   pop: T->next is NULL, head     exchange done, link not yet
 *     moved: return NULL
 *                                  link T->next = X; sent = 1; the loop
 *                                  is told to look
 *   sent = 0 lands, over the 1
 * and the loop's look finds `sent` clear: X waits for a wake-up that never
 * comes.  With a full fence first the clearing is visible before the queue
 * is read, so a link the pop misses comes after it, and so does the
 * `sent = 1` behind the link.  tests/test_handover.c shows the loss without
 * the fence.
 */
static inline void lw_mpsc_wake_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

/* Consumer only.  The node lw_mpsc_pop() would return first, without
 * taking it, or NULL. */
static inline struct lw_mpsc_node *lw_mpsc_peek(struct lw_mpsc *q)
{
    return q->tail != &q->stub ? q->tail : lw_mpsc_next(&q->stub);
}

/* Consumer only.  The oldest node, or NULL (empty, or a push in flight). */
static inline struct lw_mpsc_node *lw_mpsc_pop(struct lw_mpsc *q)
{
    struct lw_mpsc_node *tail = q->tail;
    struct lw_mpsc_node *next = lw_mpsc_next(tail);

    if (tail == &q->stub) {
        if (!next)
            return NULL;
        q->tail = next;
        tail = next;
        next = lw_mpsc_next(next);
    }
    if (next) {
        q->tail = next;
        return tail;
    }
    /* `tail` is the last node we can see.  If a producer has swapped head
     * but not linked yet, wait for it (next pop); otherwise push the stub
     * behind `tail` so that `tail` can be handed out. */
    if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
        return NULL;
    lw_mpsc_push(q, &q->stub);
    next = lw_mpsc_next(tail);
    if (next) {
        q->tail = next;
        return tail;
    }
    return NULL;
}

#endif
