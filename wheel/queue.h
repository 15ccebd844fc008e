/*
 * wheel/queue.h - the library's intrusive lists, inline: a node is
 * embedded in the struct it links, and lw_item_of() (or lw_container_of(),
 * container.h) finds that struct again, so a list never allocates and a
 * struct can be in several lists at once, one node each.  Three shapes,
 * those of BSD's <sys/queue.h> (docs/design.md, "Dependencies we chose",
 * says why ours):
 *
 *   struct lw_slist  a stack: one pointer, the first node.  Push and pop
 *                    at the front; removing another node walks to it.
 *                    For a list whose head must stay one pointer (a
 *                    watchdog entry's sets), or that only ever grows at
 *                    the front.
 *   struct lw_queue  a FIFO: the first and the last node.  Push at either
 *                    end, pop the first, take the whole queue at once.
 *   struct lw_list   a circular doubly-linked list through a head that is
 *                    itself a node: insert at the tail, remove any node
 *                    without its head (a timer cancelled, a waiter that
 *                    leaves the middle of its line).
 *
 * The singly-linked shapes share their node, struct lw_qnode: one pointer,
 * as the hand-written `next` fields they replace.  Their heads are empty
 * when zeroed (a calloc'd struct holds empty ones) and hold no pointer
 * into themselves, so a head may be copied, returned or moved; a
 * struct lw_list head points at itself and must be initialised
 * (lw_list_init()) where it will stay.
 *
 * A node's links are the list's: read them through these calls, never
 * write them.  A node popped or removed is unlinked (its links NULL).
 * No call checks that a node is in the list it is given: pushing a node
 * that is in a list already corrupts both.  One thread at a time, as the
 * struct that holds the list.
 */
#ifndef LW_WHEEL_QUEUE_H
#define LW_WHEEL_QUEUE_H

#include <stddef.h>

#include <leasewheel/wheel.h> /* struct lw_list, a timer's link */

/* A node of a stack or a FIFO. */
struct lw_qnode {
    struct lw_qnode *next;
};

/* The struct of `type` whose `member` is node, or NULL for no node: what a
 * pop or a peek answered, as its struct. */
#define lw_item_of(node, type, member) ((type *)lw_item_at((node), offsetof(type, member)))

static inline void *lw_item_at(const void *node, size_t offset)
{
    return node ? (void *)((const char *)node - offset) : NULL;
}

/* The node after n in its stack or FIFO, or NULL when n is the last: for a
 * walk from lw_slist_first() or lw_queue_peek().  The walk must not pop or
 * remove the node it stands on before it has taken its successor. */
static inline struct lw_qnode *lw_qnode_next(const struct lw_qnode *n)
{
    return n->next;
}

/* A chain: nodes after a first one that is itself a member, with no head
 * of its own (a hash table's entry heading the others of its key). */

/* n after at. */
static inline void lw_qnode_insert_after(struct lw_qnode *at, struct lw_qnode *n)
{
    n->next = at->next;
    at->next = n;
}

/* Take n, not the first, out of the chain that first begins: 1, or 0 when
 * n is not in it. */
static inline int lw_qnode_remove_after(struct lw_qnode *first, struct lw_qnode *n)
{
    struct lw_qnode *at = first;

    while (at->next && at->next != n)
        at = at->next;
    if (!at->next)
        return 0;
    at->next = n->next;
    n->next = NULL;
    return 1;
}

/* The first node n leaves its chain: the node after it, which begins
 * what is left (or NULL). */
static inline struct lw_qnode *lw_qnode_detach(struct lw_qnode *n)
{
    struct lw_qnode *rest = n->next;

    n->next = NULL;
    return rest;
}

/* ---- A stack: one pointer ---- */

struct lw_slist {
    struct lw_qnode *first;
};

static inline int lw_slist_empty(const struct lw_slist *s)
{
    return s->first == NULL;
}

/* The first node (the last pushed), or NULL when empty. */
static inline struct lw_qnode *lw_slist_first(const struct lw_slist *s)
{
    return s->first;
}

static inline void lw_slist_push(struct lw_slist *s, struct lw_qnode *n)
{
    n->next = s->first;
    s->first = n;
}

/* Take the first node off, or NULL when empty. */
static inline struct lw_qnode *lw_slist_pop(struct lw_slist *s)
{
    struct lw_qnode *n = s->first;

    if (n) {
        s->first = n->next;
        n->next = NULL;
    }
    return n;
}

/* Take n off s, walking to it: 1, or 0 when n is not in s. */
static inline int lw_slist_remove(struct lw_slist *s, struct lw_qnode *n)
{
    struct lw_qnode **at = &s->first;

    while (*at && *at != n)
        at = &(*at)->next;
    if (!*at)
        return 0;
    *at = n->next;
    n->next = NULL;
    return 1;
}

/* Take the whole stack, leaving s empty. */
static inline struct lw_slist lw_slist_take(struct lw_slist *s)
{
    struct lw_slist all = *s;

    s->first = NULL;
    return all;
}

/* ---- A FIFO: the first and the last node ---- */

struct lw_queue {
    struct lw_qnode *head; /* popped next */
    struct lw_qnode *tail; /* pushed last */
};

static inline void lw_queue_init(struct lw_queue *q)
{
    q->head = q->tail = NULL;
}

static inline int lw_queue_empty(const struct lw_queue *q)
{
    return q->head == NULL;
}

/* The first node, left in the queue, or NULL when empty. */
static inline struct lw_qnode *lw_queue_peek(const struct lw_queue *q)
{
    return q->head;
}

/* n last. */
static inline void lw_queue_push(struct lw_queue *q, struct lw_qnode *n)
{
    n->next = NULL;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
}

/* n first: one coming back (a retry) is older than those waiting. */
static inline void lw_queue_push_front(struct lw_queue *q, struct lw_qnode *n)
{
    n->next = q->head;
    q->head = n;
    if (!q->tail)
        q->tail = n;
}

/* Take the first node off, or NULL when empty. */
static inline struct lw_qnode *lw_queue_pop(struct lw_queue *q)
{
    struct lw_qnode *n = q->head;

    if (n) {
        q->head = n->next;
        if (!q->head)
            q->tail = NULL;
        n->next = NULL;
    }
    return n;
}

/* Take the whole queue, leaving q empty: to go through what is queued now
 * while what the walk does may queue more. */
static inline struct lw_queue lw_queue_take(struct lw_queue *q)
{
    struct lw_queue all = *q;

    lw_queue_init(q);
    return all;
}

/* ---- A doubly-linked list: circular, through its head ---- */

/* head is an empty list.  A head lives where it was initialised. */
static inline void lw_list_init(struct lw_list *head)
{
    head->next = head;
    head->prev = head;
}

static inline int lw_list_empty(const struct lw_list *head)
{
    return head->next == head;
}

/* n is in a list: it was inserted and not removed since. */
static inline int lw_list_linked(const struct lw_list *n)
{
    return n->next != NULL;
}

/* n last in head's list. */
static inline void lw_list_insert_tail(struct lw_list *head, struct lw_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

/* n out of its list, whichever it is, and marked unlinked. */
static inline void lw_list_remove(struct lw_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = NULL;
    n->prev = NULL;
}

/* The first node of head's list, or NULL when empty. */
static inline struct lw_list *lw_list_first(const struct lw_list *head)
{
    return head->next == head ? NULL : head->next;
}

/* The node after n in head's list, or NULL when n is the last. */
static inline struct lw_list *lw_list_next(const struct lw_list *head, const struct lw_list *n)
{
    return n->next == head ? NULL : n->next;
}

/*
 * For a walk that rebuilds a list in place (the wheel's bucket walk keeps
 * some nodes and takes the rest out): b follows a, head or node.  A
 * rebuild joins each node it keeps to the last one kept, the head to the
 * first, and finally the last kept to the head, which closes the circle;
 * every node it left out is then lw_list_mark_unlinked().
 */
static inline void lw_list_join(struct lw_list *a, struct lw_list *b)
{
    a->next = b;
    b->prev = a;
}

/* n, left out of its list by a rebuild (lw_list_join()), is unlinked. */
static inline void lw_list_mark_unlinked(struct lw_list *n)
{
    n->next = NULL;
    n->prev = NULL;
}

#endif
