/*
 * The intrusive lists of wheel/queue.h: a FIFO keeps its order (pushed at
 * either end, popped, taken whole), a stack gives back the last pushed
 * and lets any node go, a doubly-linked list loses a node from its
 * middle, its first or its last place and keeps the rest in order; every
 * shape says when it is empty, and zeroed heads of the singly-linked ones
 * are empty.
 */
#include <criterion/criterion.h>

#include "queue.h"

enum { N = 5 };

/* Items in a FIFO or a stack and in a list at once, one node each. */
struct item {
    int id;
    struct lw_qnode qnode;
    struct lw_list link;
};

/* items[i] unlinked, with id i. */
static void number(struct item *items, int n)
{
    for (int i = 0; i < n; i++)
        items[i] = (struct item){.id = i};
}

static int qid(const struct lw_qnode *n)
{
    return lw_item_of(n, struct item, qnode)->id;
}

static int lid(const struct lw_list *n)
{
    return lw_item_of(n, struct item, link)->id;
}

/* The ids of a FIFO from its head, in ids[]; how many. */
static int queue_ids(const struct lw_queue *q, int *ids)
{
    int n = 0;

    for (const struct lw_qnode *it = lw_queue_peek(q); it; it = lw_qnode_next(it))
        ids[n++] = qid(it);
    return n;
}

/* The ids of a list from its first, in ids[]; how many. */
static int list_ids(const struct lw_list *head, int *ids)
{
    int n = 0;

    for (const struct lw_list *it = lw_list_first(head); it; it = lw_list_next(head, it))
        ids[n++] = lid(it);
    return n;
}

static void assert_ids(const int *got, int n, const int *want, int want_n)
{
    cr_assert_eq(n, want_n, "%d nodes, %d expected", n, want_n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "place %d: %d, %d expected", i, got[i], want[i]);
}

Test(queue, fifo_zeroed_is_empty)
{
    struct lw_queue q = {0};
    struct item a = {.id = 7};

    cr_assert(lw_queue_empty(&q));
    cr_assert_null(lw_queue_peek(&q));
    cr_assert_null(lw_queue_pop(&q));
    cr_assert_null(lw_item_of(lw_queue_pop(&q), struct item, qnode));
    lw_queue_push(&q, &a.qnode);
    cr_assert_not(lw_queue_empty(&q));
    cr_assert_eq(lw_item_of(lw_queue_pop(&q), struct item, qnode), &a);
    cr_assert(lw_queue_empty(&q));
    cr_assert_null(q.tail, "the last pop leaves no tail behind");
}

Test(queue, fifo_pops_in_push_order)
{
    struct item items[N];
    struct lw_queue q;
    int ids[N], n, want[N] = {0, 1, 2, 3, 4};

    number(items, N);
    lw_queue_init(&q);
    for (int i = 0; i < N; i++)
        lw_queue_push(&q, &items[i].qnode);
    n = queue_ids(&q, ids);
    assert_ids(ids, n, want, N);
    for (int i = 0; i < N; i++) {
        struct lw_qnode *it = lw_queue_pop(&q);

        cr_assert_eq(qid(it), i);
        cr_assert_null(it->next, "a node popped is unlinked");
    }
    cr_assert(lw_queue_empty(&q));
    lw_queue_push(&q, &items[3].qnode); /* a node may be pushed again once popped */
    cr_assert_eq(qid(lw_queue_peek(&q)), 3);
}

Test(queue, fifo_push_front_goes_first)
{
    struct item items[N];
    struct lw_queue q = {0};
    int ids[N], n, want[] = {3, 0, 1, 2, 4};

    number(items, N);
    lw_queue_push_front(&q, &items[0].qnode); /* into an empty queue: first and last */
    lw_queue_push(&q, &items[1].qnode);
    lw_queue_push(&q, &items[2].qnode);
    lw_queue_push_front(&q, &items[3].qnode);
    lw_queue_push(&q, &items[4].qnode); /* after the last, not after the one put first */
    n = queue_ids(&q, ids);
    assert_ids(ids, n, want, N);
}

Test(queue, fifo_take_leaves_it_empty)
{
    struct item items[N];
    struct lw_queue q = {0}, all;
    int ids[N], n, want[] = {0, 1, 2}, again[] = {3};

    number(items, N);
    for (int i = 0; i < 3; i++)
        lw_queue_push(&q, &items[i].qnode);
    all = lw_queue_take(&q);
    cr_assert(lw_queue_empty(&q));
    n = queue_ids(&all, ids);
    assert_ids(ids, n, want, 3);
    /* Both go on apart: what a walk of the taken queue pushes back. */
    lw_queue_push(&q, &items[3].qnode);
    n = queue_ids(&q, ids);
    assert_ids(ids, n, again, 1);
    all = lw_queue_take(&q);
    cr_assert_eq(qid(lw_queue_pop(&all)), 3);
    cr_assert(lw_queue_empty(&all));
    all = lw_queue_take(&q); /* an empty one too */
    cr_assert(lw_queue_empty(&all));
}

Test(queue, stack_pops_last_pushed_and_removes_any)
{
    struct item items[N];
    struct lw_slist s = {0};
    int want[] = {4, 2, 1};
    struct item outside = {.id = 9};

    number(items, N);
    cr_assert(lw_slist_empty(&s));
    cr_assert_null(lw_slist_pop(&s));
    for (int i = 0; i < N; i++)
        lw_slist_push(&s, &items[i].qnode);
    cr_assert_eq(qid(lw_slist_first(&s)), 4);
    cr_assert(lw_slist_remove(&s, &items[3].qnode), "from the middle");
    cr_assert(lw_slist_remove(&s, &items[0].qnode), "the last");
    cr_assert_not(lw_slist_remove(&s, &items[0].qnode), "gone already");
    cr_assert_not(lw_slist_remove(&s, &outside.qnode), "never in it");
    cr_assert_null(items[3].qnode.next, "a node removed is unlinked");
    {
        struct lw_slist all = lw_slist_take(&s);

        cr_assert(lw_slist_empty(&s));
        for (int i = 0; i < 3; i++)
            cr_assert_eq(qid(lw_slist_pop(&all)), want[i]);
        cr_assert(lw_slist_empty(&all));
    }
    lw_slist_push(&s, &items[1].qnode);
    cr_assert(lw_slist_remove(&s, &items[1].qnode), "the first and only");
    cr_assert(lw_slist_empty(&s));
}

Test(queue, list_removes_middle_first_last)
{
    struct item items[N];
    struct lw_list head;
    int ids[N], n;
    int all[] = {0, 1, 2, 3, 4}, no_middle[] = {0, 1, 3, 4}, no_first[] = {1, 3, 4},
        no_last[] = {1, 3};

    number(items, N);
    lw_list_init(&head);
    cr_assert(lw_list_empty(&head));
    cr_assert_null(lw_list_first(&head));
    for (int i = 0; i < N; i++) {
        cr_assert_not(lw_list_linked(&items[i].link));
        lw_list_insert_tail(&head, &items[i].link);
        cr_assert(lw_list_linked(&items[i].link));
    }
    n = list_ids(&head, ids);
    assert_ids(ids, n, all, N);

    lw_list_remove(&items[2].link);
    cr_assert_not(lw_list_linked(&items[2].link), "a node removed is unlinked");
    n = list_ids(&head, ids);
    assert_ids(ids, n, no_middle, 4);
    lw_list_remove(&items[0].link);
    cr_assert_eq(lid(lw_list_first(&head)), 1);
    n = list_ids(&head, ids);
    assert_ids(ids, n, no_first, 3);
    lw_list_remove(&items[4].link);
    n = list_ids(&head, ids);
    assert_ids(ids, n, no_last, 2);
    cr_assert_eq(head.prev, &items[3].link, "the last is the head's prev");

    /* Inserted again after a removal: last, behind the rest. */
    lw_list_insert_tail(&head, &items[2].link);
    cr_assert_eq(lid(lw_list_next(&head, &items[3].link)), 2);
    cr_assert_null(lw_list_next(&head, &items[2].link));
    lw_list_remove(&items[1].link);
    lw_list_remove(&items[3].link);
    lw_list_remove(&items[2].link);
    cr_assert(lw_list_empty(&head));
    cr_assert_null(lw_list_first(&head));
}

/* A walk that keeps the odd ids and leaves the even ones out, as the
 * wheel's bucket walk does. */
Test(queue, list_rebuilt_in_place)
{
    struct item items[N];
    struct lw_list head, *kept = &head, *it, *next;
    int ids[N], n, odd[] = {1, 3};

    number(items, N);
    lw_list_init(&head);
    for (int i = 0; i < N; i++)
        lw_list_insert_tail(&head, &items[i].link);
    for (it = head.next; it != &head; it = next) {
        next = it->next;
        if (lid(it) % 2) {
            lw_list_join(kept, it);
            kept = it;
        } else {
            lw_list_mark_unlinked(it);
        }
    }
    lw_list_join(kept, &head);
    n = list_ids(&head, ids);
    assert_ids(ids, n, odd, 2);
    cr_assert_eq(head.prev, &items[3].link);
    cr_assert_not(lw_list_linked(&items[0].link));
    cr_assert_not(lw_list_linked(&items[4].link));
    lw_list_remove(&items[3].link); /* the rebuilt list is whole both ways */
    lw_list_remove(&items[1].link);
    cr_assert(lw_list_empty(&head));
}
