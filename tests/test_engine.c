/*
 * The engine against a real redis-server: pipelining, order, back-pressure,
 * scripts, set-up commands, unix sockets, embedded mode.  Faults (SIGSTOP,
 * restart, bad addresses and passwords, shutdown) are in test_engine_faults.c.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <ev.h>

#include "engine_util.h"

/* --- 100k pipelined commands from two threads, per-thread order --- */

#define PER_THREAD 50000

struct sender {
    struct engine *engine;
    struct request *reqs;
    struct tally *tally;
    char key[16];
    long next;     /* engine thread: index of the next completion expected */
    long disorder; /* completions that came out of order or wrong */
    int submit_errors;
};

static void in_order(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct sender *s = arg;
    long i = s->next++;

    /* INCR on the thread's own key answers 1, 2, 3...: the reply says where
     * the command ran, the request where it was submitted. */
    if (err || req != &s->reqs[i] || reply->type != REDIS_REPLY_INTEGER ||
        reply->integer != i + 1)
        s->disorder++;
    tally_add(s->tally, err);
}

static void *send_all(void *arg)
{
    struct sender *s = arg;
    struct request cmd;

    set_cmd(&cmd, "INCR", s->key);
    for (long i = 0; i < PER_THREAD; i++) {
        /* Every request shares the one formatted command: it is only read. */
        request_init(&s->reqs[i]);
        s->reqs[i].cmd = cmd.cmd;
        s->reqs[i].len = cmd.len;
        if (engine_submit(s->engine, &s->reqs[i], in_order, s))
            s->submit_errors++;
    }
    tally_wait(s->tally, 2 * PER_THREAD, 60000);
    request_clear(&cmd);
    return NULL;
}

REDIS_TEST(engine, pipelined_two_threads_keep_order)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct tally tally;
    struct sender senders[2];
    pthread_t threads[2];

    engine_config(&cfg);
    cfg.node.command_timeout_ms = 60000; /* sanitizer builds are slow */
    cr_assert_eq(engine_new(&cfg, &e), 0);
    tally_init(&tally);
    for (int t = 0; t < 2; t++) {
        senders[t] = (struct sender){.engine = e, .tally = &tally};
        senders[t].reqs = calloc(PER_THREAD, sizeof *senders[t].reqs);
        snprintf(senders[t].key, sizeof senders[t].key, "seq:%d", t);
        pthread_create(&threads[t], NULL, send_all, &senders[t]);
    }
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    cr_assert_eq(tally_wait(&tally, 2 * PER_THREAD, 1000), 2 * PER_THREAD);
    engine_get_stats(e, &st);
    engine_free(e);
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(senders[t].submit_errors, 0);
        cr_assert_eq(senders[t].next, PER_THREAD);
        cr_assert_eq(senders[t].disorder, 0, "thread %d: %ld out of order", t,
                     senders[t].disorder);
        free(senders[t].reqs);
    }
    cr_assert_eq(tally.failed, 0);
    cr_assert_geq(st.sent, 2 * PER_THREAD);
    cr_assert_geq(st.replies, 2 * PER_THREAD);
    cr_assert_gt(st.inflight_max, 1, "commands were not pipelined");
    cr_assert_leq(st.inflight_max, LW_ENGINE_DEFAULT_MAX_INFLIGHT);
    cr_log_info("100k INCRs: in-flight high-water %llu",
                (unsigned long long)st.inflight_max);
    tally_destroy(&tally);
}

/* --- back-pressure: never more than max_inflight on the wire --- */

REDIS_TEST(engine, inflight_cap_holds)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct tally tally;
    enum { N = 2000 };
    struct request *reqs = calloc(N, sizeof *reqs);

    engine_config(&cfg);
    cfg.max_inflight = 8;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);
    tally_init(&tally);
    for (int i = 0; i < N; i++) {
        set_cmd(&reqs[i], "INCR", "capped");
        cr_assert_eq(engine_submit(e, &reqs[i], count_done, &tally), 0);
    }
    cr_assert_eq(tally_wait(&tally, N, 30000), N);
    cr_assert_eq(tally.failed, 0);
    engine_get_stats(e, &st);
    cr_assert_eq(st.inflight_max, 8, "high-water %llu", (unsigned long long)st.inflight_max);
    engine_free(e);
    for (int i = 0; i < N; i++)
        request_clear(&reqs[i]);
    free(reqs);
    tally_destroy(&tally);
}

/* --- scripts: EVALSHA, and NOSCRIPT after SCRIPT FLUSH --- */

static const char *const echo_script[] = {"return KEYS[1] .. ':' .. ARGV[1]"};

struct echo {
    struct tally *tally;
    int wrong;
};

static void check_echo(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct echo *echo = arg;

    (void)req;
    if (err || reply->type != REDIS_REPLY_STRING || strcmp(reply->str, "k:v"))
        echo->wrong++;
    if (echo->tally)
        tally_add(echo->tally, err);
}

static void evalsha_echo(struct request *req)
{
    const char *argv[] = {"k", "v"};

    request_init(req);
    cr_assert_eq(request_evalsha(req, 0, 1, 2, argv, NULL), 0);
}

REDIS_TEST(engine, script_flush_recovers_through_noscript)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct request req, plain;
    struct echo echo = {0};
    redisReply *r;
    int pong = 0;

    engine_config(&cfg);
    cfg.scripts = echo_script;
    cfg.nscripts = 1;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    evalsha_echo(&req);
    cr_assert_eq(engine_call(e, &req, check_echo, &echo), 0);
    cr_assert_eq(echo.wrong, 0);

    /* A zeroed request is a plain command, not script 0. */
    memset(&plain, 0, sizeof plain);
    plain.cmd = (char *)"*1\r\n$4\r\nPING\r\n";
    plain.len = strlen(plain.cmd);
    cr_assert_eq(engine_call(e, &plain, pong_check, &pong), 0);
    cr_assert(pong);

    r = redis_server_command(&srv, "SCRIPT FLUSH");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(engine_call(e, &req, check_echo, &echo), 0);
    cr_assert_eq(echo.wrong, 0, "EVALSHA after SCRIPT FLUSH did not recover");
    engine_get_stats(e, &st);
    cr_assert_eq(st.script_reloads, 1);
    request_clear(&req);
    engine_free(e);
}

REDIS_TEST(engine, script_flush_under_pipelining_loads_once_per_burst)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats before, after;
    struct tally tally;
    enum { N = 200 };
    struct request reqs[N], one;
    struct echo echo = {&tally, 0};
    redisReply *r;

    engine_config(&cfg);
    cfg.scripts = echo_script;
    cfg.nscripts = 1;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    evalsha_echo(&one);
    cr_assert_eq(engine_call(e, &one, NULL, NULL), 0);
    r = redis_server_command(&srv, "SCRIPT FLUSH");
    freeReplyObject(r);
    engine_get_stats(e, &before);
    tally_init(&tally);
    for (int i = 0; i < N; i++) {
        evalsha_echo(&reqs[i]);
        cr_assert_eq(engine_submit(e, &reqs[i], check_echo, &echo), 0);
    }
    cr_assert_eq(tally_wait(&tally, N, 30000), N);
    cr_assert_eq(echo.wrong, 0);
    engine_get_stats(e, &after);
    /* Every EVALSHA written before the reload came back NOSCRIPT and was
     * retried, but each burst of them loaded the script only once. */
    cr_assert_geq(after.script_reloads - before.script_reloads, 1);
    cr_assert_leq(after.sent - before.sent,
                  N + 2 * (after.script_reloads - before.script_reloads));
    engine_free(e);
    for (int i = 0; i < N; i++)
        request_clear(&reqs[i]);
    request_clear(&one);
    tally_destroy(&tally);
}

/* --- unix socket, SELECT --- */

static void expect_ok(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)req;
    *(int *)arg = !err && reply->type == REDIS_REPLY_STATUS && !strcmp(reply->str, "OK");
}

REDIS_TEST(engine, unix_socket_and_select)
{
    struct engine_config cfg;
    struct engine *e;
    struct request req;
    redisReply *r;
    int ok = 0;

    engine_config(&cfg);
    cfg.node.unix_path = srv.unix_path;
    cfg.node.db = 3;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    set_cmd(&req, "SET", "in-db-3", "yes");
    cr_assert_eq(engine_call(e, &req, expect_ok, &ok), 0);
    cr_assert(ok);
    request_clear(&req);
    cr_assert_eq(engine_status(e), 0);
    engine_free(e);

    r = redis_server_command(&srv, "INFO keyspace");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert(strstr(r->str, "db3:keys=1"), "%s", r->str);
    freeReplyObject(r);
}

/* --- a blocking call on the engine thread is refused --- */

struct nested {
    struct engine *engine;
    int rc;
};

static void call_from_engine(struct request *req, const redisReply *reply, int err,
                             void *arg)
{
    struct nested *n = arg;
    struct request inner;

    (void)req;
    (void)reply;
    (void)err;
    request_init(&inner);
    n->rc = engine_call(n->engine, &inner, NULL, NULL);
}

REDIS_TEST(engine, blocking_call_on_engine_thread_is_edeadlk)
{
    struct engine_config cfg;
    struct nested out = {NULL, 0};
    struct request req;

    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &out.engine), 0);
    set_cmd(&req, "PING");
    cr_assert_eq(engine_call(out.engine, &req, call_from_engine, &out), 0);
    cr_assert_eq(out.rc, LW_EDEADLK);
    request_clear(&req);
    engine_free(out.engine);
}

/* --- embedded mode: the caller's loop, the caller's thread --- */

struct embedded {
    struct engine *engine;
    struct tally tally;
    int blocking_ok;
    int finished;
};

static void *embedded_client(void *arg)
{
    struct embedded *m = arg;
    struct request reqs[100];

    /* From another thread: blocking calls, then a burst of async ones. */
    m->blocking_ok = ping_until_up(m->engine, 100) == 0 && ping(m->engine) == 0;
    for (int i = 0; i < 100; i++) {
        set_cmd(&reqs[i], "INCR", "embedded");
        engine_submit(m->engine, &reqs[i], count_done, &m->tally);
    }
    tally_wait(&m->tally, 100, 30000);
    for (int i = 0; i < 100; i++)
        request_clear(&reqs[i]);
    __atomic_store_n(&m->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void watch_finished(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct embedded *m = w->data;

    (void)revents;
    if (__atomic_load_n(&m->finished, __ATOMIC_ACQUIRE))
        ev_break(loop, EVBREAK_ALL);
}

static void give_up(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

REDIS_TEST(engine, embedded_mode_runs_on_callers_loop)
{
    struct engine_config cfg;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct embedded m = {0};
    struct request req;
    ev_timer watch, limit;
    pthread_t client;

    signal(SIGPIPE, SIG_IGN); /* embedded: the application's business */
    engine_config(&cfg);
    cfg.loop = loop;
    cr_assert_eq(engine_new(&cfg, &m.engine), 0);
    cr_assert_eq(engine_loop(m.engine), loop);
    set_cmd(&req, "PING");
    cr_assert_eq(engine_call(m.engine, &req, NULL, NULL), LW_EDEADLK,
                 "blocking on the loop's own thread must be refused");
    request_clear(&req);

    tally_init(&m.tally);
    pthread_create(&client, NULL, embedded_client, &m);
    ev_timer_init(&watch, watch_finished, 0.01, 0.01);
    watch.data = &m;
    ev_timer_start(loop, &watch);
    ev_timer_init(&limit, give_up, 60.0, 0.0); /* bound the test */
    ev_timer_start(loop, &limit);
    ev_run(loop, 0);
    ev_timer_stop(loop, &watch);
    ev_timer_stop(loop, &limit);
    pthread_join(client, NULL);

    cr_assert(m.blocking_ok);
    cr_assert_eq(m.tally.done, 100);
    cr_assert_eq(m.tally.failed, 0);
    engine_free(m.engine);
    ev_loop_destroy(loop);
    tally_destroy(&m.tally);
}

/* --- a request queued without its wake-up: the tick takes it --- */

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void note_done(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)req;
    (void)reply;
    atomic_store((_Atomic int *)arg, err ? -1 : 1);
}

REDIS_TEST(engine, request_queued_without_wakeup_is_taken_by_the_tick)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct request ping, task;
    _Atomic int ping_done = 0, task_done = 0;
    uint64_t queued_ns, taken_ns = 0;

    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    set_cmd(&ping, "PING");
    cr_assert_eq(engine_call(e, &ping, NULL, NULL), 0); /* connected */

    /* What engine_submit() does, less the ev_async_send(): the state a
     * missed wake-up leaves behind. */
    request_init(&task);
    request_task(&task);
    task.done = note_done;
    task.arg = &task_done;
    queued_ns = lw_clock_now();
    engine_queue_unwoken(e, &task);
    for (int i = 0; i < 2000 && !atomic_load(&task_done); i++) /* 2 s at most */
        nap_ms(1);
    if (atomic_load(&task_done))
        taken_ns = lw_clock_now() - queued_ns;
    cr_assert_eq(atomic_load(&task_done), 1, "the queued task was never taken");
    cr_assert_lt(taken_ns, 500 * 1000000ull, "taken %.0f ms after it was queued",
                 (double)taken_ns / 1e6);
    engine_get_stats(e, &st);
    cr_assert_eq(st.taken_late, 1);

    /* A plain submission behind it is taken at once, as always. */
    request_clear(&ping);
    set_cmd(&ping, "PING");
    cr_assert_eq(engine_submit(e, &ping, note_done, &ping_done), 0);
    for (int i = 0; i < 2000 && !atomic_load(&ping_done); i++)
        nap_ms(1);
    cr_assert_eq(atomic_load(&ping_done), 1);
    engine_free(e);
    request_clear(&ping);
}

/* Cluster seeds and sentinels in one config ask for two topologies: the
 * config is refused, neither half dropped (the sentinels were, before).
 * Either alone is accepted, so the refusal is the pair's. */
Test(engine, seeds_with_sentinels_is_refused)
{
    struct engine_config cfg;
    struct engine *e = NULL;
    const char *nodes[] = {"127.0.0.1:1"};

    engine_config_init(&cfg);
    cfg.seeds = nodes;
    cfg.nseeds = 1;
    cfg.sentinels = nodes;
    cfg.nsentinels = 1;
    cfg.sentinel_master = "mymaster";
    cr_assert_eq(engine_new(&cfg, &e), LW_EINVAL);
    cr_assert_null(e);

    cfg.nsentinels = 0;
    cfg.sentinels = NULL;
    cfg.sentinel_master = NULL;
    cr_assert_eq(engine_new(&cfg, &e), 0, "seeds alone");
    engine_free(e);
    e = NULL;
    cfg.seeds = NULL;
    cfg.nseeds = 0;
    cfg.sentinels = nodes;
    cfg.nsentinels = 1;
    cfg.sentinel_master = "mymaster";
    cr_assert_eq(engine_new(&cfg, &e), 0, "sentinels alone");
    engine_free(e);
}

/* --- urgent requests (renewals) are written before others waiting --- */

#include "proxy.h"

static void tally_done(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)req;
    (void)reply;
    tally_add(arg, err);
}

/* Wait (2 s at most) until the engine has `inflight` commands on the wire
 * and `waiting` more queued. */
static int queues_reach(struct engine *e, uint64_t inflight, uint64_t waiting)
{
    struct engine_stats st;

    for (int i = 0; i < 2000; i++) {
        engine_get_stats(e, &st);
        if (st.inflight == inflight && st.waiting == waiting)
            return 1;
        nap_ms(1);
    }
    return 0;
}

/*
 * Six plain RPUSHes are queued, then an urgent one, while the server
 * answers nothing (a proxy holds every byte): the pipeline of four keeps
 * two slots for urgent requests, so two plain ones go on the wire and four
 * wait; the urgent one, queued last, is written at once, into a reserved
 * slot.  The server's list then says the order the commands reached it.
 */
REDIS_TEST(engine, urgent_requests_are_written_before_others_waiting)
{
    struct proxy *p = proxy_start(srv.port);
    struct engine_config cfg;
    struct engine *e;
    struct request plain[6], urgent;
    struct tally tally;
    char name[8];
    redisReply *list;
    const char *expect[] = {"p0", "p1", "u", "p2", "p3", "p4", "p5"};

    cr_assert(p, "no proxy");
    tally_init(&tally);
    engine_config(&cfg);
    cfg.node.port = proxy_port(p);
    cfg.max_inflight = 4;
    cfg.urgent_reserve = 2;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);
    cr_assert_eq(proxy_hold(p, 1), 0);
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "p%d", i);
        set_cmd(&plain[i], "RPUSH", "order", name);
        cr_assert_eq(engine_submit(e, &plain[i], tally_done, &tally), 0);
    }
    cr_assert(queues_reach(e, 2, 4), "the plain requests took the reserved slots");
    set_cmd(&urgent, "RPUSH", "order", "u");
    request_urgent(&urgent);
    cr_assert_eq(engine_submit(e, &urgent, tally_done, &tally), 0);
    cr_assert(queues_reach(e, 3, 4), "the urgent request was not written at once");
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(tally_wait(&tally, 7, 10000), 7);
    cr_assert_eq(tally.failed, 0);

    list = redis_server_command(&srv, "LRANGE order 0 -1");
    cr_assert(list && list->type == REDIS_REPLY_ARRAY && list->elements == 7);
    for (size_t i = 0; i < 7; i++)
        cr_expect_str_eq(list->element[i]->str, expect[i], "command %zu reached Redis as %s",
                         i, list->element[i]->str);
    freeReplyObject(list);
    engine_free(e);
    for (int i = 0; i < 6; i++)
        request_clear(&plain[i]);
    request_clear(&urgent);
    tally_destroy(&tally);
    proxy_stop(p);
}

/* A reserve as large as the pipeline leaves nothing for other requests. */
Test(engine, urgent_reserve_must_leave_room)
{
    struct engine_config cfg;
    struct engine *e = NULL;

    engine_config_init(&cfg);
    cfg.max_inflight = 4;
    cfg.urgent_reserve = 4;
    cr_assert_eq(engine_new(&cfg, &e), LW_ERANGE);
}
