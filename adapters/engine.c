/*
 * adapters/engine.c - the engine: its loop and thread, the hand-over of
 * requests from application threads, completions, the tick, shutdown.
 * Where a request goes is its topology's business (topology.h), how it is
 * written and answered its link's (link.h); the engine calls both only
 * through their interfaces.
 *
 * One iteration of the loop.  libev runs our watchers in this order (its
 * ev_run: prepare watchers before it blocks; then, of what became pending,
 * the highest priority first and, within one, the last queued first, which
 * puts timers before I/O):
 *
 *   1. flush      (ev_prepare, one per connection, conn.c) writes what the
 *                 previous iteration's callbacks appended: one write per
 *                 connection per iteration, however many commands;
 *   2.            libev blocks in epoll_wait until the next timer at most;
 *      behind    (ev_check, on_check, the highest priority) runs the tick
 *                 first when the wheel is a tick behind ("Time" below);
 *   3. wake-up    (ev_async, on_wake) takes every submitted request, routes
 *                 it (topology) and writes what the pipelines have room
 *                 for (link);
 *   4. timers, earliest due first:
 *        tick     (on_tick) advances the wheel: due timers go to core's
 *                 tick hook (renewals batched, waiters retried); then every
 *                 link's timeouts, and the topology's tick (its retries,
 *                 expiries, map refreshes);
 *        deadline (per connection, conn.c) ends a connect or set-up that
 *                 took too long;
 *        retry    (per connection, conn.c) starts the next attempt after
 *                 the back-off;
 *        the topology's own: the cluster's map refreshes and reopenings,
 *                 Sentinel's rounds, answer deadlines, refreshes and the
 *                 settle time after a switch; the pub/sub router's hold
 *                 and recheck;
 *   5. I/O        (ev_io, per connection, conn.c): readable hands every
 *                 reply read to its link, which completes its requests
 *                 (callbacks run here: core's replies, renewals confirmed);
 *                 writable finishes a connect, or writes what a full socket
 *                 kept back.
 *
 * Time.  The wheel, and every lease, run on lw_clock_now(), a clock
 * that counts the time the host was suspended (CLOCK_BOOTTIME); libev's
 * timers run on CLOCK_MONOTONIC, which stops meanwhile.  So on waking the
 * tick's timer is not due yet by libev's clock, while by the leases' the
 * wheel is behind by the whole sleep, and a reply or a message may come
 * first.  A check watcher (on_check), at the highest priority, runs before
 * any other callback of an iteration: when the wheel is more than a tick
 * behind, it runs the tick at once, which finds every lease that ended
 * meanwhile lost before anything else is done.  The tick also notes how
 * far CLOCK_BOOTTIME went ahead of CLOCK_MONOTONIC since the last one:
 * more than a tick is a sleep, counted (host_sleeps) and logged.
 *
 * Hand-over.  engine_submit() pushes the request on a Vyukov MPSC queue
 * (one atomic exchange) and calls ev_async_send(), which is cheap when a
 * wake-up is already pending.  The engine's ev_async callback drains the
 * queue, routes each request and writes as many as the pipelines have room
 * for.
 *
 * Completion.  A request completes on the engine thread: its callback runs,
 * then a caller blocked in engine_call() is woken through a futex on
 * the request's `completed` word: 0 pending, 1 done, 2 done-and-a-waiter-
 * sleeps.  The engine only makes the wake system call when somebody sleeps
 * (links_complete(), link.c).
 *
 * Shutdown.  engine_free() raises `closing`, waits for the submitters
 * already past their check of it (`callers`), and has the engine thread
 * fail everything and stop.  After that no request can be in the queue
 * that nobody will complete.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "completion.h"
#include "container.h"
#include "counter.h"
#include "engine.h"
#include "link.h"
#include "log.h"
#include "mpsc.h"
#include "topology.h"

struct engine {
    /* The loop and its watchers. */
    struct ev_loop *loop;
    int own_thread;           /* 0: embedded in the caller's loop */
    pthread_t thread;         /* ours, when own_thread */
    pthread_t loop_thread;    /* the engine thread, for LW_EDEADLK; set
                                 before engine_new() returns */
    _Atomic uint32_t started; /* own thread: loop_thread is set (a futex) */
    ev_async wake;            /* submissions, and shutdown */
    ev_timer tick;            /* the wheel's tick */
    ev_check behind;          /* runs the tick first when the wheel is
                                 behind: the host slept ("Time" above) */
    uint64_t slept_gap_ns;    /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at the
                                 last tick: the host's sleep so far */
    _Atomic uint64_t host_sleeps;
    struct lw_wheel *wheel;
    engine_tick_fn *on_tick;
    void *tick_arg;

    /* Shared with application threads.  What submitters write (the queue's
     * head, `callers`) and what the engine writes (the queue's tail, the
     * counters in `links`) sit on separate cache lines. */
    struct lw_mpsc submitted;
    /* Engine thread: what take_late() saw at the last tick. */
    struct lw_mpsc_node *tick_first;  /* the queue's first node */
    uint64_t tick_taken;              /* `taken` then */
    uint64_t taken;                   /* requests taken from the queue */
    unsigned nscripts;                /* for engine_submit()'s check */
    _Alignas(64) _Atomic int callers; /* threads inside engine_submit() */
    _Atomic int closing;              /* engine_free() has begun */

    /* Engine thread: the links, and the topology that routes over them. */
    struct endpoint node; /* the data nodes' endpoint: every link's */
    struct report report; /* why a connection failed last (any thread) */
    struct logger logger; /* the program's log hook */
    struct link_set links;
    struct topology *topo;
};

/* A request's wait for the pipeline starts when the engine takes it (at
 * now_ns): a request that cannot be written within the command timeout,
 * or by the end of its caller's wait when that comes first
 * (request_wait_until()), fails (links_check_timeouts()).  Its
 * topology routes it. */
static void take_request(struct engine *e, struct request *req, uint64_t now_ns)
{
    req->expires_ns = now_ns + e->links.command_timeout_ns;
    if (req->wait_until_ns && req->wait_until_ns < req->expires_ns)
        req->expires_ns = req->wait_until_ns;
    e->topo->ops->route(e->topo, req, 0);
}

/* Why req, taken in at now_ns, fails at once: no first connection can be
 * had (refused: the topology's fails_at_once), unless req's wait goes on
 * and may see that mend (a Redis down or starting); else 0. */
static int refused_now(const struct request *req, int refused, uint64_t now_ns)
{
    return refused && !request_waits_through(req, refused, now_ns) ? refused : 0;
}

/* Take every submitted request.  One clock read per batch, not per
 * request.  Tasks run as they come out of the queue, with task_err. */
static void take_submitted(struct engine *e, int task_err)
{
    struct lw_mpsc_node *node = lw_mpsc_pop(&e->submitted);
    uint64_t now;
    int refused;

    if (!node)
        return;
    now = lw_clock_now();
    /* Shutting down, everything fails with LW_ESHUTDOWN instead. */
    refused = task_err ? 0 : e->topo->ops->fails_at_once(e->topo);
    do {
        struct request *req = lw_container_of(node, struct request, qnode);
        int err = req->task ? task_err : refused_now(req, refused, now);

        e->taken++;
        if (req->task || err) {
            links_complete(&e->links, req, NULL, err);
            continue;
        }
        take_request(e, req, now);
    } while ((node = lw_mpsc_pop(&e->submitted)));
}

/* Engine thread: fail everything, stop the watchers. */
static void shutdown_engine(struct engine *e)
{
    take_submitted(e, LW_ESHUTDOWN);
    e->topo->ops->stop(e->topo);
    links_close(&e->links, LW_ESHUTDOWN);
    links_note_queues(&e->links);
    ev_async_stop(e->loop, &e->wake);
    ev_timer_stop(e->loop, &e->tick);
    ev_check_stop(e->loop, &e->behind);
    if (e->own_thread)
        ev_break(e->loop, EVBREAK_ALL);
}

/* Take what was submitted and write what the pipelines have room for. */
static void take_and_write(struct engine *e)
{
    take_submitted(e, 0);
    links_pump_all(&e->links);
}

/* lw_mpsc_wake_fence() first: libev clears the watcher's `sent` flag with
 * no fence before calling us (wheel/mpsc.h says why that loses wake-ups).
 * The same fence orders the `closing` flag. */
static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    struct engine *e = w->data;

    (void)loop;
    (void)revents;
    lw_mpsc_wake_fence();
    if (atomic_load_explicit(&e->closing, memory_order_acquire)) {
        shutdown_engine(e);
        return;
    }
    take_and_write(e);
}

/* The safety net under the wake-up.  A submitter queues its request, then
 * wakes the engine; the wake-up's callback (on_wake) runs before the tick
 * in the same loop iteration, and takes every request queued.  So a
 * request still first in the queue a whole tick later, with nothing taken
 * since, had its wake-up missed: its submitter was held up between
 * queueing and waking, or the wake-up was lost (as it was before on_wake
 * had its fence).  Take it now and count it.  Two loads a tick. */
static void take_late(struct engine *e)
{
    struct lw_mpsc_node *first = lw_mpsc_peek(&e->submitted);

    if (first && first == e->tick_first && e->taken == e->tick_taken &&
        !atomic_load_explicit(&e->closing, memory_order_acquire)) {
        uint64_t before = e->taken;

        take_and_write(e);
        count_add(&e->links.count.taken_late, e->taken - before);
        first = lw_mpsc_peek(&e->submitted);
    }
    e->tick_first = first;
    e->tick_taken = e->taken;
}

static void arm_tick(struct engine *e)
{
    uint64_t next = lw_wheel_next_tick(e->wheel), now = lw_clock_now();

    ev_timer_set(&e->tick, next > now ? (double)(next - now) / 1e9 : 0.0, 0.0);
    ev_timer_start(e->loop, &e->tick);
}

/* CLOCK_BOOTTIME's lead on CLOCK_MONOTONIC: the time the host has slept
 * since it booted. */
static uint64_t slept_gap_ns(uint64_t now_ns)
{
    struct timespec ts;
    uint64_t mono;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    mono = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return now_ns > mono ? now_ns - mono : 0;
}

/* A tick: did the host sleep since the last?  Counted and said once. */
static void note_sleep(struct engine *e, uint64_t now_ns)
{
    uint64_t gap = slept_gap_ns(now_ns), slept = gap - e->slept_gap_ns;

    if (gap > e->slept_gap_ns && slept > lw_wheel_tick_ns(e->wheel)) {
        count_add(&e->host_sleeps, 1);
        if (log_enabled(&e->logger, LOG_WARN))
            log_say(&e->logger, LOG_CLOCK, LOG_WARN,
                    "the host slept %llu ms: every lease that ended meanwhile is lost now",
                    (unsigned long long)(slept / 1000000u));
    }
    e->slept_gap_ns = gap;
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct engine *e = w->data;
    struct lw_timer_list due = {0};
    uint64_t now = lw_clock_now();

    (void)loop;
    (void)revents;
    note_sleep(e, now);
    take_late(e);
    lw_wheel_advance(e->wheel, now, &due);
    if (due.count && e->on_tick) {
        e->links.in_callback++;
        e->on_tick(e, &due, e->tick_arg);
        e->links.in_callback--;
    }
    while (lw_timer_list_pop(&due))
        ; /* nobody claimed them */
    links_check_timeouts(&e->links, now);
    if (e->topo->ops->tick)
        e->topo->ops->tick(e->topo, now);
    links_note_queues(&e->links);
    arm_tick(e);
}

/* Before any other callback of an iteration: a wheel more than a tick
 * behind (the host slept, and libev's clock did not count it) ticks now,
 * ahead of the replies and messages that woke the loop. */
static void on_check(struct ev_loop *loop, ev_check *w, int revents)
{
    struct engine *e = w->data;

    (void)revents;
    if (lw_clock_now() < lw_wheel_next_tick(e->wheel) + lw_wheel_tick_ns(e->wheel))
        return;
    ev_timer_stop(loop, &e->tick);
    on_tick(loop, &e->tick, 0);
}

static void *engine_thread(void *arg)
{
    struct engine *e = arg;

    e->loop_thread = pthread_self();
    atomic_store_explicit(&e->started, 1, memory_order_release);
    lw_futex_wake(&e->started);
    e->topo->ops->start(e->topo);
    ev_run(e->loop, 0);
    return NULL;
}

static int is_engine_thread(const struct engine *e)
{
    return pthread_equal(pthread_self(), e->loop_thread);
}

int engine_submit(struct engine *e, struct request *req, request_fn *done,
                  void *arg)
{
    uint64_t now = 0;

    if (!e || !req || (!req->task && (!req->cmd || req->len == 0)) ||
        req->script > e->nscripts)
        return LW_EINVAL;
    req->done = done;
    req->arg = arg;
    req->err = 0;
    req->retried = 0;
    req->redirects = req->unsettled = req->asking = 0;
    req->sent_conn = 0;
    lw_completion_reset(&req->completed);

    atomic_fetch_add(&e->callers, 1);
    if (atomic_load(&e->closing)) {
        atomic_fetch_sub(&e->callers, 1);
        return LW_ESHUTDOWN;
    }
    /* On the engine thread (a lock's task step, the watchdog) a request
     * goes straight to its route, unless no first connection can be had
     * (and it does not wait through that): then through the queue, so
     * that take_submitted() fails it at once, as it does a caller's, and
     * not from inside this call. */
    if (is_engine_thread(e) && !req->task &&
        !refused_now(req, e->topo->ops->fails_at_once(e->topo), now = lw_clock_now())) {
        take_request(e, req, now);
        links_pump_all(&e->links);
    } else {
        lw_mpsc_push(&e->submitted, &req->qnode);
        ev_async_send(e->loop, &e->wake);
    }
    atomic_fetch_sub_explicit(&e->callers, 1, memory_order_release);
    return 0;
}

void engine_queue_unwoken(struct engine *e, struct request *req)
{
    lw_mpsc_push(&e->submitted, &req->qnode);
}

int engine_call(struct engine *e, struct request *req, request_fn *done,
                void *arg)
{
    int rc;

    if (!e || !req)
        return LW_EINVAL;
    if (is_engine_thread(e))
        return LW_EDEADLK;
    req->blocking = 1;
    rc = engine_submit(e, req, done, arg);
    if (rc == 0) {
        lw_completion_wait(&req->completed);
        rc = req->err;
    }
    req->blocking = 0;
    return rc;
}

void engine_config_init(struct engine_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    endpoint_init(&cfg->node);
    endpoint_init(&cfg->sentinel);
    cfg->max_inflight = LW_ENGINE_DEFAULT_MAX_INFLIGHT;
    lw_wheel_config_init(&cfg->wheel);
    cfg->log_level = LOG_INFO;
}

static int check_config(const struct engine_config *cfg)
{
    int rc;

    if ((rc = topology_check(cfg)) || (rc = endpoint_check(&cfg->node)))
        return rc;
    if (cfg->topology_refresh_ms > LW_ENGINE_MAX_TIMEOUT_MS ||
        cfg->side_block_ms > LW_ENGINE_MAX_TIMEOUT_MS)
        return LW_ERANGE;
    if (cfg->max_inflight == 0)
        return LW_EINVAL;
    if (cfg->max_inflight > LW_ENGINE_MAX_INFLIGHT || cfg->nscripts > LW_ENGINE_MAX_SCRIPTS ||
        cfg->urgent_reserve >= cfg->max_inflight)
        return LW_ERANGE;
    if (cfg->nscripts && !cfg->scripts)
        return LW_EINVAL;
    for (unsigned i = 0; i < cfg->nscripts; i++)
        if (!cfg->scripts[i] || !cfg->scripts[i][0])
            return LW_EINVAL;
    return 0;
}

/* A copy of argv as a formatted command, or NULL. */
static char *format(size_t *len, int argc, const char **argv)
{
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, argc, argv, NULL);

    if (n < 0)
        return NULL;
    *len = (size_t)n;
    return cmd;
}

/* What every link shares: caps, timeouts, the scripts.  All links
 * together may have one link's cap in flight, unless the topology raises
 * it when it makes its links (topology_new()); so too with SELECT, which
 * the topology asks for when its nodes have databases. */
static int init_links(struct engine *e, const struct engine_config *cfg)
{
    struct link_set *ls = &e->links;

    ls->ep = &e->node;
    ls->closing = &e->closing;
    ls->command_timeout_ns = cfg->node.command_timeout_ms * 1000000ull;
    ls->side_grace_ns = cfg->side_block_ms * 1000000ull;
    ls->max_inflight = cfg->max_inflight;
    ls->reserve = cfg->urgent_reserve;
    ls->refill_at = (cfg->max_inflight - cfg->urgent_reserve) / 2;
    ls->max_inflight_all = cfg->max_inflight;
    atomic_init(&ls->status, LW_ETIMEDOUT); /* not connected yet */
    ls->scripts = calloc(cfg->nscripts + 1, sizeof *ls->scripts);
    if (!ls->scripts)
        return LW_ENOMEM;
    for (; ls->nscripts < cfg->nscripts; ls->nscripts++) {
        struct script *s = &ls->scripts[ls->nscripts];
        const char *argv[] = {"SCRIPT", "LOAD", cfg->scripts[ls->nscripts]};

        if (!(s->load_cmd = format(&s->load_len, 3, argv)))
            return LW_ENOMEM;
    }
    e->nscripts = cfg->nscripts;
    return 0;
}

static void free_engine(struct engine *e)
{
    struct link_set *ls = &e->links;

    lw_wheel_free(e->wheel);
    if (e->topo)
        e->topo->ops->free(e->topo);
    links_free(ls);
    for (unsigned i = 0; ls->scripts && i < ls->nscripts; i++)
        redisFreeCommand(ls->scripts[i].load_cmd);
    free(ls->scripts);
    endpoint_clear(&e->node);
    report_destroy(&e->report);
    free(e);
}

static void init_watchers(struct engine *e)
{
    ev_async_init(&e->wake, on_wake);
    e->wake.data = e;
    ev_async_start(e->loop, &e->wake);
    ev_init(&e->tick, on_tick);
    e->tick.data = e;
    arm_tick(e);
    ev_check_init(&e->behind, on_check);
    ev_set_priority(&e->behind, EV_MAXPRI);
    e->behind.data = e;
    ev_check_start(e->loop, &e->behind);
    e->slept_gap_ns = slept_gap_ns(lw_clock_now());
}

static int start_thread(struct engine *e)
{
    sigset_t all, old;
    int rc;

    /* The engine thread takes no signals: they belong to the application.
     * That includes SIGPIPE from a write to a dead socket, which would
     * otherwise kill the process. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&e->thread, NULL, engine_thread, e);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        return LW_ENOMEM;
    /* Wait until the thread has recorded who it is: from now on any thread
     * may ask is_engine_thread(). */
    while (!atomic_load_explicit(&e->started, memory_order_acquire))
        lw_futex_wait(&e->started, 0);
    return 0;
}

/* The engine's state, its links' shared part and its topology (which
 * makes the first links); the loop is not running yet. */
static int make_engine(struct engine *e, const struct engine_config *cfg)
{
    int rc;

    if ((rc = endpoint_copy(&e->node, &cfg->node)) || (rc = init_links(e, cfg)) ||
        (rc = lw_wheel_new(&cfg->wheel, &e->wheel)))
        return rc;
    e->node.report = &e->report;
    e->logger.fn = cfg->log;
    e->logger.arg = cfg->log_arg;
    e->logger.level = cfg->log_level;
    e->report.log = &e->logger;
    e->links.log = &e->logger;
    e->on_tick = cfg->on_tick;
    e->tick_arg = cfg->tick_arg;
    lw_mpsc_init(&e->submitted);
    e->own_thread = cfg->loop == NULL;
    e->loop = cfg->loop ? cfg->loop : ev_loop_new(EVFLAG_AUTO);
    if (!e->loop)
        return LW_ENOMEM;
    e->links.loop = e->loop;
    return topology_new(cfg, &e->links, &e->topo);
}

int engine_new(const struct engine_config *cfg, struct engine **out)
{
    struct engine *e;
    int rc;

    if (!cfg || !out)
        return LW_EINVAL;
    if ((rc = check_config(cfg)) || (rc = topology_check_host(cfg)))
        return rc;
    if (!(e = calloc(1, sizeof *e)))
        return LW_ENOMEM;
    report_init(&e->report);
    if ((rc = make_engine(e, cfg))) {
        if (e->loop && e->own_thread)
            ev_loop_destroy(e->loop);
        free_engine(e);
        return rc;
    }
    init_watchers(e);
    if (e->own_thread) {
        if ((rc = start_thread(e))) {
            ev_loop_destroy(e->loop);
            free_engine(e);
            return rc;
        }
    } else {
        e->loop_thread = pthread_self();
        e->topo->ops->start(e->topo);
    }
    *out = e;
    return 0;
}

int engine_free(struct engine *e)
{
    if (!e)
        return 0;
    /* From inside the engine it would free what the caller returns into
     * (and, with our own thread, join itself).  Embedded, the shutdown runs
     * right here, so only the loop's thread may do it: from another, it
     * would race the loop's callbacks. */
    if (is_engine_thread(e) ? e->own_thread || e->links.in_callback : !e->own_thread)
        return LW_EDEADLK;
    atomic_store(&e->closing, 1);
    while (atomic_load(&e->callers))
        sched_yield(); /* a submitter between its check and its push */
    if (e->own_thread) {
        ev_async_send(e->loop, &e->wake);
        pthread_join(e->thread, NULL);
        ev_loop_destroy(e->loop);
    } else {
        shutdown_engine(e);
    }
    free_engine(e);
    return 0;
}

int engine_on_thread(const struct engine *e)
{
    return is_engine_thread(e);
}

struct lw_wheel *engine_wheel(struct engine *e)
{
    return e->wheel;
}

struct ev_loop *engine_loop(struct engine *e)
{
    return e->loop;
}

struct topology *engine_topology(struct engine *e)
{
    return e->topo;
}

const struct endpoint *engine_endpoint(const struct engine *e)
{
    return &e->node;
}

struct logger *engine_logger(struct engine *e)
{
    return &e->logger;
}

void engine_report(struct engine *e, int err, int level, const char *text)
{
    pthread_mutex_lock(&e->report.lock);
    e->report.err = err;
    snprintf(e->report.text, sizeof e->report.text, "%s", text);
    pthread_mutex_unlock(&e->report.lock);
    log_say(&e->logger, LOG_SERVER, level, "%s", text);
}

int engine_last_error(struct engine *e, char *buf, size_t len)
{
    return report_get(&e->report, buf, len);
}

int engine_status(const struct engine *e)
{
    return atomic_load_explicit(&e->links.status, memory_order_relaxed);
}

void engine_get_stats(const struct engine *e, struct engine_stats *out)
{
    const struct link_counters *c = &e->links.count;

    out->sent = count_get(&c->sent);
    out->replies = count_get(&c->replies);
    out->error_replies = count_get(&c->error_replies);
    out->failed = count_get(&c->failed);
    out->timeouts = count_get(&c->timeouts);
    out->reconnects = count_get(&c->reconnects);
    out->script_reloads = count_get(&c->script_reloads);
    out->waiting = count_get(&c->waiting);
    out->inflight = count_get(&c->inflight);
    out->inflight_max = count_get(&c->inflight_max);
    out->topology_refreshes = count_get(&c->topology_refreshes);
    out->redirects = count_get(&c->redirects);
    out->unsettled = count_get(&c->unsettled);
    out->switches = count_get(&c->switches);
    out->taken_late = count_get(&c->taken_late);
    out->tls_handshakes = count_get(&c->tls_handshakes);
    out->tls_resumed = count_get(&c->tls_resumed);
    out->host_sleeps = count_get(&e->host_sleeps);
}

/* --- the topology's answers ---------------------------------------------- */

int engine_is_cluster(const struct engine *e)
{
    return e->topo->ops->is_cluster(e->topo);
}

int engine_sharded_pubsub(const struct engine *e)
{
    return e->topo->ops->sharded(e->topo);
}

int engine_slot_node(const struct engine *e, unsigned slot)
{
    return e->topo->ops->slot_node(e->topo, slot);
}

unsigned engine_node_count(const struct engine *e)
{
    return e->topo->ops->node_count(e->topo);
}

unsigned engine_master_count(const struct engine *e)
{
    return e->topo->ops->master_count(e->topo);
}

int engine_node_addr(const struct engine *e, unsigned node, const char **host, int *port)
{
    return e->topo->ops->node_addr(e->topo, node, host, port);
}

int engine_conn_node(const struct engine *e, uint64_t conn)
{
    return links_conn_node(&e->links, conn);
}

int engine_node_stats(const struct engine *e, unsigned node, struct engine_stats *out)
{
    if (node >= engine_node_count(e))
        return LW_ERANGE;
    links_node_stats(&e->links, node, out);
    return 0;
}
