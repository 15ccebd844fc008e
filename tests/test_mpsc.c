/*
 * The intrusive MPSC queue: FIFO per producer, nothing lost or duplicated
 * with several producers pushing while the consumer pops.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "container.h"
#include "mpsc.h"

enum { PRODUCERS = 3, PER_PRODUCER = 200000 };

struct msg {
    struct lw_mpsc_node node;
    int producer;
    int seq;
};

struct feed {
    struct lw_mpsc *queue;
    struct msg *msgs;
    int producer;
};

static void *push_all(void *arg)
{
    struct feed *f = arg;

    for (int i = 0; i < PER_PRODUCER; i++) {
        f->msgs[i].producer = f->producer;
        f->msgs[i].seq = i;
        lw_mpsc_push(f->queue, &f->msgs[i].node);
    }
    return NULL;
}

Test(mpsc, empty_queue_pops_null)
{
    struct lw_mpsc q;
    struct msg a;

    lw_mpsc_init(&q);
    cr_assert_null(lw_mpsc_pop(&q));
    cr_assert(lw_mpsc_push(&q, &a.node), "first push into an empty queue");
    cr_assert_eq(lw_mpsc_pop(&q), &a.node);
    cr_assert_null(lw_mpsc_pop(&q));
    lw_mpsc_push(&q, &a.node); /* a node may be pushed again once popped */
    cr_assert_eq(lw_mpsc_pop(&q), &a.node);
    cr_assert_null(lw_mpsc_pop(&q));
}

Test(mpsc, producers_fifo_nothing_lost, .timeout = 120)
{
    static struct msg msgs[PRODUCERS][PER_PRODUCER];
    struct feed feeds[PRODUCERS];
    pthread_t threads[PRODUCERS];
    int next_seq[PRODUCERS] = {0};
    struct lw_mpsc q;
    long got = 0, empty_polls = 0;

    lw_mpsc_init(&q);
    for (int p = 0; p < PRODUCERS; p++) {
        feeds[p] = (struct feed){.queue = &q, .msgs = msgs[p], .producer = p};
        cr_assert_eq(pthread_create(&threads[p], NULL, push_all, &feeds[p]), 0);
    }
    while (got < (long)PRODUCERS * PER_PRODUCER) {
        struct lw_mpsc_node *n = lw_mpsc_pop(&q);
        struct msg *m;

        if (!n) {
            cr_assert_lt(++empty_polls, 2000000000L, "consumer starved");
            continue;
        }
        m = lw_container_of(n, struct msg, node);
        cr_assert_eq(m->seq, next_seq[m->producer], "producer %d out of order",
                     m->producer);
        next_seq[m->producer]++;
        got++;
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(threads[p], NULL);
    cr_assert_null(lw_mpsc_pop(&q));
}
