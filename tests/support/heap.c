/* The baseline binary heap; see heap.h. */
#include "heap.h"

/* Exchange `child` and its parent `up` in the tree. */
static void swap_with_parent(struct heap *h, struct heap_timer *up, struct heap_timer *child)
{
    struct heap_timer *grand = up->parent, *up_left = up->left, *up_right = up->right;
    struct heap_timer *sibling;

    up->left = child->left;
    up->right = child->right;
    up->parent = child;
    if (up_left == child) {
        child->left = up;
        child->right = sibling = up_right;
    } else {
        child->right = up;
        child->left = sibling = up_left;
    }
    child->parent = grand;
    if (up->left)
        up->left->parent = up;
    if (up->right)
        up->right->parent = up;
    if (sibling)
        sibling->parent = child;
    if (!grand)
        h->min = child;
    else if (grand->left == up)
        grand->left = child;
    else
        grand->right = child;
}

/* The link that holds (or will hold) position `pos` (1-based). */
static struct heap_timer **link_of(struct heap *h, size_t pos, struct heap_timer **parent)
{
    struct heap_timer **link = &h->min;
    size_t path = 0;
    unsigned depth = 0;

    for (; pos >= 2; pos >>= 1, depth++)
        path = (path << 1) | (pos & 1);
    *parent = NULL;
    while (depth--) {
        *parent = *link;
        link = (path & 1) ? &(*parent)->right : &(*parent)->left;
        path >>= 1;
    }
    return link;
}

static void sift_up(struct heap *h, struct heap_timer *t)
{
    while (t->parent && t->deadline < t->parent->deadline)
        swap_with_parent(h, t->parent, t);
}

static void sift_down(struct heap *h, struct heap_timer *t)
{
    for (;;) {
        struct heap_timer *least = t;

        if (t->left && t->left->deadline < least->deadline)
            least = t->left;
        if (t->right && t->right->deadline < least->deadline)
            least = t->right;
        if (least == t)
            return;
        swap_with_parent(h, t, least);
    }
}

void heap_schedule(struct heap *h, struct heap_timer *t, uint64_t deadline)
{
    struct heap_timer *parent;
    struct heap_timer **link = link_of(h, h->count + 1, &parent);

    t->left = t->right = NULL;
    t->parent = parent;
    t->deadline = deadline;
    t->in_heap = 1;
    *link = t;
    h->count++;
    sift_up(h, t);
}

int heap_cancel(struct heap *h, struct heap_timer *t)
{
    struct heap_timer *parent, *last, **link;

    if (!t->in_heap)
        return 0;
    t->in_heap = 0;
    link = link_of(h, h->count, &parent);
    last = *link;
    *link = NULL;
    h->count--;
    if (last == t)
        return 1;
    /* The last node takes t's place, then finds its level. */
    last->left = t->left;
    last->right = t->right;
    last->parent = t->parent;
    if (last->left)
        last->left->parent = last;
    if (last->right)
        last->right->parent = last;
    if (!t->parent)
        h->min = last;
    else if (t->parent->left == t)
        t->parent->left = last;
    else
        t->parent->right = last;
    sift_down(h, last);
    sift_up(h, last);
    return 1;
}

struct heap_timer *heap_pop_due(struct heap *h, uint64_t now)
{
    struct heap_timer *min = h->min;

    if (!min || min->deadline > now)
        return NULL;
    heap_cancel(h, min);
    return min;
}
