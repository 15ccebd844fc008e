/*
 * core/waiters.h - waiters.c's calls: acquires waiting on a channel, in
 * line, for every kind that waits (locks, read-write locks, permits, a
 * fair lock's turn).
 *
 * An acquire path embeds a struct waiter in its op and hands waiters.c a
 * row of the table below (struct wait_rule): how to send the op's attempt
 * again and how to end it.  What a waiter takes of its name (`want`) and
 * whether its channel's messages carry a count (`counts`) say who a
 * wake-up reaches: waiters.c's head comment.
 */
#ifndef LW_CORE_WAITERS_H
#define LW_CORE_WAITERS_H

#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "timer.h"

struct lw_client;
struct request;
struct waiter;

/* A waiter's state, which is its op's (lock.c's and semaphore.c's). */
enum wait_state { WAIT_NEW,
                  WAIT_INFLIGHT,  /* its attempt is on the wire */
                  WAIT_WAITING,   /* in line, its timer standing */
                  WAIT_HANDOFF }; /* an unlock of this client's hands it
                                     the lock (lock.c) */

/* `want` of a waiter that takes its name whole (a lock, a write lock);
 * a read takes 0 (it shares), an acquire of permits their number. */
#define WAIT_ALL INT32_MAX

/* An acquire path's row: what waiters.c calls back, on the engine thread. */
struct wait_rule {
    /* Send w's attempt (again): the last thing done with it. */
    void (*attempt)(struct waiter *w);
    /* End w's acquire with err (it leaves its line). */
    void (*end)(struct waiter *w, int err);
    /* A message on the channel carries how much is free (a semaphore's
     * permits), and a waiter leaving with what it took says how much it
     * left: the waiters that much serves try.  Otherwise any message
     * gives the head of the line its turn. */
    uint8_t counts;
};

/* An acquire's part in waiting, in its op (lw_container_of() finds the
 * op); engine thread. */
struct waiter {
    struct wait_link link;        /* its place in its channel's line */
    struct core_timer ct;         /* its retry, or its deadline */
    const struct wait_rule *rule; /* its op's row */
    uint64_t deadline_ns;         /* when it gives up; UINT64_MAX: never */
    uint64_t tried_ns;            /* when its last attempt was sent, when reach */
    uint64_t look_ns;             /* counting rules: when its last answer said to
                                     look again unwoken (the nearest expiry), taken
                                     up when it becomes first; 0: never answered */
    int64_t want;                 /* what it takes of the name: WAIT_ALL, 0 or n */
    uint8_t state;                /* enum wait_state */
    uint8_t woken;                /* a wake-up came while its attempt was out */
    uint8_t reach;                /* its wait covers reaching Redis
                                     (waiters_set_wait()) */
};

/* left: a waiter that leaves without what it waited for passes the turn
 * to the next in line. */
#define WAIT_PASS (-2)

/* When a waiter that may wait wait_ms from now gives up: UINT64_MAX for
 * LW_WAIT_FOREVER, or a wait past the clock's end. */
uint64_t waiters_deadline(uint64_t wait_ms);
/*
 * Waiting covers reaching Redis.  w may wait wait_ms from now: its
 * deadline (waiters_deadline()) and, for a wait that ends and is not 0,
 * `reach`: its attempts wait for a connection until the deadline, not
 * past it, and not only the command timeout (waiters_reach()), and one
 * that could not reach Redis, or was not answered, is tried again while
 * the wait lasts (waiters_retry()).  A try (0) asks once, as any call; a
 * wait without end fails as any call does when Redis cannot be reached,
 * for nothing would end it on a Redis never to be reached (a wrong
 * address).
 */
void waiters_set_wait(struct waiter *w, uint64_t wait_ms);
/* req carries an attempt of w's: it waits for Redis until w's deadline
 * when w's wait covers that (request_wait_until()), else as any
 * request.  Before every attempt's submission. */
void waiters_reach(struct waiter *w, struct request *req);
/* An attempt of w's, req, failed with err before Redis answered it (its
 * path noted already that one written may have run): 1 when it is to be
 * sent again now, for err says Redis could not be reached or did not
 * answer (LW_ECONNREFUSED, LW_ECONNECT, LW_ECONNLOST, LW_ETIMEDOUT,
 * LW_EUNSETTLED), w's wait covers that and has time left, and the attempt
 * was written or waited at least a tick (no attempt goes round faster:
 * while Redis is down it waits in the engine, not here); else 0, and the
 * acquire ends in err. */
int waiters_retry(const struct lw_client *c, const struct waiter *w,
                  const struct request *req, int err);
/* How an acquire whose wait ran out ends: LW_ELOCKED, Redis's last word
 * being that the lock is held (too few permits free); or, when the client
 * has no connection to Redis now, why not (engine_status():
 * LW_ECONNREFUSED, ...): nobody can say whether it is held, and "held"
 * must not stand for "unreachable". */
int waiters_timed_out(struct lw_client *c);
/* An acquire that was refused joins the line of the channel named so: 1
 * when the channel is live and it is first (try again now: a release may
 * have gone unheard), 0 to wait, -1 out of memory. */
int waiters_join(struct lw_client *c, struct waiter *w, const char *name, size_t len);
/* A new acquire, when the channel named so has waiters here: queued
 * behind them without trying (1: no barging inside the client), or 0
 * when there are none (try it). */
int waiters_queue(struct lw_client *c, struct waiter *w, const char *name, size_t len);
/* w is first in its line. */
int waiters_first(const struct waiter *w);
/* The first waiter of the channel named so, or NULL. */
struct waiter *waiters_head(struct lw_client *c, const char *name, size_t len);
/* Stand w's timer at at_ns, or at its deadline when that comes first. */
void waiters_arm(struct lw_client *c, struct waiter *w, uint64_t at_ns);
/* w leaves its line.  When it was first, those behind it try now:
 * left WAIT_PASS (it leaves without): the next; otherwise it got in, and
 * left says what it left free: for a counting rule the count, else 0
 * after a read (readers share) and -1 after a write.  A new first that
 * still waits looks again at its own look_ns, or else at look_ns (the
 * leaver's word: when what it took may end unsaid). */
void waiters_leave(struct lw_client *c, struct waiter *w, int64_t left, uint64_t look_ns);

#endif
