/*
 * adapters/engine.c - the engine: its loop and thread, the hand-over of
 * requests from application threads, completions, the tick, shutdown.
 *
 * Hand-over.  lw_engine_submit() pushes the request on a Vyukov MPSC queue
 * (one atomic exchange) and calls ev_async_send(), which is cheap when a
 * wake-up is already pending.  The engine's ev_async callback drains the
 * queue into its FIFO of waiting requests and writes as many as the
 * pipeline has room for (link.c).
 *
 * Completion.  A request completes on the engine thread: its callback runs,
 * then a caller blocked in lw_engine_call() is woken through a futex on
 * the request's `completed` word: 0 pending, 1 done, 2 done-and-a-waiter-
 * sleeps.  The engine only makes the wake system call when somebody sleeps.
 *
 * Shutdown.  lw_engine_free() raises `closing`, waits for the submitters
 * already past their check of it (`callers`), and has the engine thread
 * fail everything and stop.  After that no request can be in the queue
 * that nobody will complete.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "completion.h"
#include "engine_private.h"

void engine_complete(struct lw_engine *e, struct lw_request *req,
                     const redisReply *reply, int err)
{
    int blocking = req->blocking;

    if (err) {
        count_add(&e->count.failed, 1);
        if (err == LW_ETIMEDOUT)
            count_add(&e->count.timeouts, 1);
    }
    req->err = err;
    if (req->done) {
        e->in_callback++;
        req->done(req, reply, err, req->arg);
        e->in_callback--;
    }
    if (blocking)
        lw_completion_signal(&req->completed);
}

void engine_fail_all(struct lw_engine *e, struct fifo *list, int err)
{
    struct fifo all = fifo_take(list);
    struct lw_request *req;

    while ((req = fifo_pop(&all)))
        engine_complete(e, req, NULL, err);
}

void engine_note_queues(struct lw_engine *e)
{
    size_t waiting = e->cluster ? cluster_held(e) : e->sentinel ? sentinel_held(e) : 0;

    for (unsigned i = 0; i < e->nlinks; i++)
        if (e->links[i])
            waiting += e->links[i]->waiting.count +
                       (e->links[i]->side ? e->links[i]->side->waiting.count : 0);
    atomic_store_explicit(&e->count.inflight, e->inflight_all, memory_order_relaxed);
    atomic_store_explicit(&e->count.waiting, waiting, memory_order_relaxed);
}

/* Why requests fail as the engine takes them, or 0: the first connection
 * (the first seed round, in a cluster) was refused. */
static int fails_at_once(const struct lw_engine *e)
{
    if (e->sentinel)
        return sentinel_fails_at_once(e);
    return e->cluster ? cluster_fails_at_once(e) : conn_fails_at_once(&e->links[0]->conn);
}

/* A request taken in: to its link's waiting FIFO (cluster.c decides which
 * in a cluster). */
static void take_request(struct lw_engine *e, struct lw_request *req, uint64_t deadline_ns)
{
    struct link *l;

    req->deadline_ns = deadline_ns;
    req->expires_ns = deadline_ns;
    if (e->cluster)
        cluster_route(e, req, 0);
    else if (e->sentinel && sentinel_hold(e, req))
        ; /* held back after a switch */
    else if ((l = link_lane(single_link(e), req)))
        fifo_push(&l->waiting, req);
    else
        engine_complete(e, req, NULL, LW_ENOMEM);
}

/* A request's wait for the pipeline starts when the engine takes it: a
 * request that cannot be written within the command timeout fails
 * (link_check_timeouts()), and one taken while the first connection is
 * refused fails at once (conn_fails_at_once()).  One clock read per batch,
 * not per request.  Tasks run as they come out of the queue, with task_err. */
static void take_submitted(struct lw_engine *e, int task_err)
{
    struct lw_mpsc_node *node = lw_mpsc_pop(&e->submitted);
    uint64_t deadline_ns;
    int refused;

    if (!node)
        return;
    deadline_ns = lw_clock_now() + e->command_timeout_ns;
    refused = task_err ? 0 : fails_at_once(e); /* shutting down: LW_ESHUTDOWN */
    do {
        struct lw_request *req =
            (struct lw_request *)((char *)node - offsetof(struct lw_request, qnode));

        e->taken++;
        if (req->task || refused) {
            engine_complete(e, req, NULL, req->task ? task_err : refused);
            continue;
        }
        take_request(e, req, deadline_ns);
    } while ((node = lw_mpsc_pop(&e->submitted)));
}

/* Engine thread: fail everything, stop the watchers. */
static void shutdown_engine(struct lw_engine *e)
{
    take_submitted(e, LW_ESHUTDOWN);
    if (e->cluster)
        cluster_stop(e);
    if (e->sentinel)
        sentinel_stop(e);
    for (unsigned i = 0; i < e->nlinks; i++)
        if (e->links[i])
            link_close(e->links[i], LW_ESHUTDOWN);
    engine_note_queues(e);
    ev_async_stop(e->loop, &e->wake);
    ev_timer_stop(e->loop, &e->tick);
    if (e->own_thread)
        ev_break(e->loop, EVBREAK_ALL);
}

/* Take what was submitted and write what the pipelines have room for. */
static void take_and_write(struct lw_engine *e)
{
    take_submitted(e, 0);
    if (e->cluster)
        link_pump_all(e);
    else
        link_pump(single_link(e));
}

/* lw_mpsc_wake_fence() first: libev clears the watcher's `sent` flag with
 * no fence before calling us (wheel/mpsc.h says why that loses wake-ups).
 * The same fence orders the `closing` flag. */
static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    struct lw_engine *e = w->data;

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
static void take_late(struct lw_engine *e)
{
    struct lw_mpsc_node *first = lw_mpsc_peek(&e->submitted);

    if (first && first == e->tick_first && e->taken == e->tick_taken &&
        !atomic_load_explicit(&e->closing, memory_order_acquire)) {
        uint64_t before = e->taken;

        take_and_write(e);
        count_add(&e->count.taken_late, e->taken - before);
        first = lw_mpsc_peek(&e->submitted);
    }
    e->tick_first = first;
    e->tick_taken = e->taken;
}

static void arm_tick(struct lw_engine *e)
{
    uint64_t next = lw_wheel_next_tick(e->wheel), now = lw_clock_now();

    ev_timer_set(&e->tick, next > now ? (double)(next - now) / 1e9 : 0.0, 0.0);
    ev_timer_start(e->loop, &e->tick);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct lw_engine *e = w->data;
    struct lw_timer_list due = {0};
    uint64_t now = lw_clock_now();

    (void)loop;
    (void)revents;
    take_late(e);
    lw_wheel_advance(e->wheel, now, &due);
    if (due.count && e->on_tick) {
        e->in_callback++;
        e->on_tick(e, &due, e->tick_arg);
        e->in_callback--;
    }
    while (lw_timer_list_pop(&due))
        ; /* nobody claimed them */
    for (unsigned i = 0; i < e->nlinks; i++)
        if (e->links[i])
            link_check_timeouts(e->links[i], now);
    if (e->cluster)
        cluster_tick(e, now);
    engine_note_queues(e);
    arm_tick(e);
}

static void connect_links(struct lw_engine *e)
{
    if (e->cluster)
        cluster_start(e);
    else if (e->sentinel)
        sentinel_start(e);
    else
        link_connect(single_link(e));
}

static void *engine_thread(void *arg)
{
    struct lw_engine *e = arg;

    e->loop_thread = pthread_self();
    atomic_store_explicit(&e->started, 1, memory_order_release);
    lw_futex_wake(&e->started);
    connect_links(e);
    ev_run(e->loop, 0);
    return NULL;
}

static int is_engine_thread(const struct lw_engine *e)
{
    return pthread_equal(pthread_self(), e->loop_thread);
}

int lw_engine_submit(struct lw_engine *e, struct lw_request *req, lw_request_fn *done,
                     void *arg)
{
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
    if (is_engine_thread(e) && !req->task) {
        take_request(e, req, lw_clock_now() + e->command_timeout_ns);
        if (!e->cluster)
            link_pump(single_link(e));
    } else {
        lw_mpsc_push(&e->submitted, &req->qnode);
        ev_async_send(e->loop, &e->wake);
    }
    atomic_fetch_sub_explicit(&e->callers, 1, memory_order_release);
    return 0;
}

int lw_engine_call(struct lw_engine *e, struct lw_request *req, lw_request_fn *done,
                   void *arg)
{
    int rc;

    if (!e || !req)
        return LW_EINVAL;
    if (is_engine_thread(e))
        return LW_EDEADLK;
    req->blocking = 1;
    rc = lw_engine_submit(e, req, done, arg);
    if (rc == 0) {
        lw_completion_wait(&req->completed);
        rc = req->err;
    }
    req->blocking = 0;
    return rc;
}

void lw_engine_config_init(struct lw_engine_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "127.0.0.1";
    cfg->port = LW_ENGINE_DEFAULT_PORT;
    cfg->connect_timeout_ms = LW_ENGINE_DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->command_timeout_ms = LW_ENGINE_DEFAULT_COMMAND_TIMEOUT_MS;
    cfg->max_inflight = LW_ENGINE_DEFAULT_MAX_INFLIGHT;
    cfg->reconnect_min_ms = LW_ENGINE_DEFAULT_RECONNECT_MIN_MS;
    cfg->reconnect_max_ms = LW_ENGINE_DEFAULT_RECONNECT_MAX_MS;
    lw_wheel_config_init(&cfg->wheel);
}

_Static_assert(LW_ENGINE_UNIX_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
               "LW_ENGINE_UNIX_PATH_MAX is a sockaddr_un's path");

static int check_ms(uint32_t ms)
{
    if (ms == 0)
        return LW_EINVAL;
    return ms > LW_ENGINE_MAX_TIMEOUT_MS ? LW_ERANGE : 0;
}

static int check_address(const struct lw_engine_config *cfg);

static int check_config(const struct lw_engine_config *cfg)
{
    const uint32_t times[] = {cfg->connect_timeout_ms, cfg->command_timeout_ms,
                              cfg->reconnect_min_ms, cfg->reconnect_max_ms};
    int rc;

    if (cfg->nsentinels) {
        if ((rc = sentinel_check(cfg)))
            return rc;
        if (cfg->db < 0 || cfg->db > 65535)
            return LW_ERANGE;
    } else if (cfg->nseeds) {
        if ((rc = cluster_check_seeds(cfg)))
            return rc;
    } else if ((rc = check_address(cfg))) {
        return rc;
    }
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if ((rc = check_ms(times[i])))
            return rc;
    if (cfg->topology_refresh_ms > LW_ENGINE_MAX_TIMEOUT_MS ||
        cfg->side_block_ms > LW_ENGINE_MAX_TIMEOUT_MS)
        return LW_ERANGE;
    if (cfg->reconnect_min_ms > cfg->reconnect_max_ms)
        return LW_ERANGE;
    if (cfg->max_inflight == 0)
        return LW_EINVAL;
    if (cfg->max_inflight > LW_ENGINE_MAX_INFLIGHT || cfg->nscripts > LW_ENGINE_MAX_SCRIPTS)
        return LW_ERANGE;
    if (cfg->nscripts && !cfg->scripts)
        return LW_EINVAL;
    for (unsigned i = 0; i < cfg->nscripts; i++)
        if (!cfg->scripts[i] || !cfg->scripts[i][0])
            return LW_EINVAL;
    return 0;
}

/* One node's address: host and port, or a unix socket; and the db. */
static int check_address(const struct lw_engine_config *cfg)
{
    if (!cfg->unix_path && (!cfg->host || !cfg->host[0]))
        return LW_EINVAL;
    if (cfg->unix_path && !cfg->unix_path[0])
        return LW_EINVAL;
    /* hiredis would cut a longer path short and connect somewhere else. */
    if (cfg->unix_path && strlen(cfg->unix_path) > LW_ENGINE_UNIX_PATH_MAX)
        return LW_ERANGE;
    if (!cfg->unix_path && (cfg->port < 1 || cfg->port > 65535))
        return LW_ERANGE;
    if (cfg->db < 0 || cfg->db > 65535)
        return LW_ERANGE;
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

static int copy_config(struct lw_engine *e, const struct lw_engine_config *cfg)
{
    char db[16];

    e->command_timeout_ns = cfg->command_timeout_ms * 1000000ull;
    e->max_inflight = cfg->max_inflight;
    e->refill_at = cfg->max_inflight / 2;
    /* In a cluster each link has the configured cap, and all together
     * twice that: a master that stopped answering holds at most half of
     * what the engine lets out, until its commands time out. */
    e->max_inflight_all = cfg->nseeds ? 2 * cfg->max_inflight : cfg->max_inflight;
    e->side_grace_ns = cfg->side_block_ms * 1000000ull;
    e->on_tick = cfg->on_tick;
    e->tick_arg = cfg->tick_arg;
    snprintf(db, sizeof db, "%d", cfg->db);
    if (cfg->db && !cfg->nseeds && !(e->select_cmd = format(&e->select_len, 2, (const char *[]){"SELECT", db})))
        return LW_ENOMEM;
    e->scripts = calloc(cfg->nscripts + 1, sizeof *e->scripts);
    if (!e->scripts)
        return LW_ENOMEM;
    for (; e->nscripts < cfg->nscripts; e->nscripts++) {
        struct script *s = &e->scripts[e->nscripts];
        const char *argv[] = {"SCRIPT", "LOAD", cfg->scripts[e->nscripts]};

        if (!(s->load_cmd = format(&s->load_len, 3, argv)))
            return LW_ENOMEM;
    }
    return 0;
}

/* RFC 6761: names under .invalid never resolve; say so without a query. */
static int is_invalid_name(const char *host)
{
    size_t n = strlen(host);

    while (n && host[n - 1] == '.')
        n--;
    return n >= 8 && !strncasecmp(host + n - 8, ".invalid", 8);
}

static void free_engine(struct lw_engine *e)
{
    lw_wheel_free(e->wheel);
    for (unsigned i = 0; i < e->nscripts; i++)
        redisFreeCommand(e->scripts[i].load_cmd);
    free(e->scripts);
    redisFreeCommand(e->select_cmd);
    for (unsigned i = 0; i < e->nlinks; i++)
        link_free(e->links[i]);
    free(e->links);
    cluster_free(e);
    sentinel_free(e);
    free(e);
}

static void init_watchers(struct lw_engine *e)
{
    ev_async_init(&e->wake, on_wake);
    e->wake.data = e;
    ev_async_start(e->loop, &e->wake);
    ev_init(&e->tick, on_tick);
    e->tick.data = e;
    arm_tick(e);
}

static int start_thread(struct lw_engine *e)
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

/* The single node's link, or the cluster's state (links come with the
 * topology).  LW_ENOMEM. */
static int make_links(struct lw_engine *e, const struct lw_engine_config *cfg)
{
    const struct conn_config where = {CONN_CONFIG_FROM(cfg)};

    if (cfg->nseeds)
        return cluster_new(e, cfg);
    if (cfg->nsentinels)
        return sentinel_new(e, cfg);
    e->links = calloc(1, sizeof *e->links);
    if (!e->links || !(e->links[0] = link_new(e, 0, &where)))
        return LW_ENOMEM;
    e->nlinks = 1;
    return 0;
}

int lw_engine_new(const struct lw_engine_config *cfg, struct lw_engine **out)
{
    struct lw_engine *e;
    int rc;

    if (!cfg || !out)
        return LW_EINVAL;
    if ((rc = check_config(cfg)))
        return rc;
    if (!cfg->nseeds && !cfg->nsentinels && !cfg->unix_path && is_invalid_name(cfg->host))
        return LW_ENOHOST;
    e = calloc(1, sizeof *e);
    if (!e)
        return LW_ENOMEM;
    if ((rc = copy_config(e, cfg)) || (rc = lw_wheel_new(&cfg->wheel, &e->wheel))) {
        free_engine(e);
        return rc;
    }
    lw_mpsc_init(&e->submitted);
    atomic_init(&e->status, LW_ETIMEDOUT); /* not connected yet */
    e->own_thread = cfg->loop == NULL;
    e->loop = cfg->loop ? cfg->loop : ev_loop_new(EVFLAG_AUTO);
    if (!e->loop || (rc = make_links(e, cfg))) {
        if (e->loop && e->own_thread)
            ev_loop_destroy(e->loop);
        free_engine(e);
        return LW_ENOMEM;
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
        connect_links(e);
    }
    *out = e;
    return 0;
}

int lw_engine_free(struct lw_engine *e)
{
    if (!e)
        return 0;
    /* From inside the engine it would free what the caller returns into
     * (and, with our own thread, join itself).  Embedded, the shutdown runs
     * right here, so only the loop's thread may do it: from another, it
     * would race the loop's callbacks. */
    if (is_engine_thread(e) ? e->own_thread || e->in_callback : !e->own_thread)
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

int lw_engine_on_thread(const struct lw_engine *e)
{
    return is_engine_thread(e);
}

uint64_t lw_request_sent_ns(const struct lw_engine *e, const struct lw_request *req)
{
    return req->deadline_ns - e->command_timeout_ns;
}

struct lw_wheel *lw_engine_wheel(struct lw_engine *e)
{
    return e->wheel;
}

struct ev_loop *lw_engine_loop(struct lw_engine *e)
{
    return e->loop;
}

int lw_engine_status(const struct lw_engine *e)
{
    return atomic_load_explicit(&e->status, memory_order_relaxed);
}

void lw_engine_get_stats(const struct lw_engine *e, struct lw_engine_stats *out)
{
    const struct counters *c = &e->count;

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
}

/* Outside a cluster: one node, index 0.  cluster.c answers for clusters. */
int lw_engine_is_cluster(const struct lw_engine *e)
{
    return e->cluster != NULL;
}
