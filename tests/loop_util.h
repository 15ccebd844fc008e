/*
 * tests/loop_util.h - a libev loop run on a thread the test owns, and a
 * way to run a function on that thread and wait for it: how the tests put
 * a client on the caller's loop (config.loop) while the test's own thread
 * makes blocking calls.
 */
#ifndef LW_TESTS_LOOP_UTIL_H
#define LW_TESTS_LOOP_UTIL_H

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include <ev.h>

#include "engine_util.h"

struct loop_runner {
    struct ev_loop *loop;
    pthread_t thread;
    ev_async call;              /* run fn(arg) on the loop's thread */
    void (*fn)(void *arg);
    void *arg;
    struct tally ran;           /* one per fn run */
};

static inline void runner_on_call(struct ev_loop *loop, ev_async *w, int revents)
{
    struct loop_runner *r = w->data;

    (void)loop;
    (void)revents;
    void (*fn)(void *);
    void *arg;

    pthread_mutex_lock(&r->ran.lock);
    fn = r->fn;
    arg = r->arg;
    r->fn = NULL;
    pthread_mutex_unlock(&r->ran.lock);
    if (fn) {
        fn(arg);
        tally_add(&r->ran, 0);
    }
}

static inline void *runner_thread(void *arg)
{
    struct loop_runner *r = arg;

    ev_run(r->loop, 0);
    return NULL;
}

/* Run fn(arg) on the loop's thread and wait (bounded) until it has run.
 * One caller at a time: the test's thread. */
static inline void runner_call(struct loop_runner *r, void (*fn)(void *), void *arg)
{
    int want;

    pthread_mutex_lock(&r->ran.lock);
    want = r->ran.done + 1;
    r->arg = arg;
    r->fn = fn;
    pthread_mutex_unlock(&r->ran.lock);
    ev_async_send(r->loop, &r->call);
    cr_assert_geq(tally_wait(&r->ran, want, 30000), want, "the loop's thread did not answer");
}

/* A new loop, running on a new thread that takes no signals (SIGPIPE
 * included: a write to a dead socket then fails with EPIPE instead). */
static inline struct loop_runner *runner_start(void)
{
    struct loop_runner *r = calloc(1, sizeof *r);
    sigset_t all, old;

    cr_assert(r);
    tally_init(&r->ran);
    r->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(r->loop);
    ev_async_init(&r->call, runner_on_call);
    r->call.data = r;
    ev_async_start(r->loop, &r->call);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    cr_assert_eq(pthread_create(&r->thread, NULL, runner_thread, r), 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

static inline void runner_break(void *arg)
{
    struct loop_runner *r = arg;

    ev_async_stop(r->loop, &r->call);
    ev_break(r->loop, EVBREAK_ALL);
}

/* Stop the loop (whatever else it still watches), join, free. */
static inline void runner_stop(struct loop_runner *r)
{
    runner_call(r, runner_break, r);
    pthread_join(r->thread, NULL);
    ev_loop_destroy(r->loop);
    tally_destroy(&r->ran);
    free(r);
}

#endif
