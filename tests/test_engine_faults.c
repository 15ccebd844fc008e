/*
 * The engine when things go wrong: a stopped server, a restarted server,
 * bad addresses and passwords, bad configuration, shutdown with requests
 * outstanding.  Nothing may hang: every wait below is bounded.
 */
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>

#include "conn.h"
#include "engine_util.h"
#include "http_peer.h"
#include "time_util.h"

static uint64_t ms_since(uint64_t start_ns)
{
    return (lw_clock_now() - start_ns) / 1000000u;
}

/* --- SIGSTOP: timeouts within command_timeout + one tick, then recovery --- */

enum { STOP_TIMEOUT_MS = 300, STOP_TICK_MS = 20, SCHED_SLACK_MS = 40 };

struct timed {
    struct tally *tally;
    uint64_t submitted_ns;
    uint64_t took_ms;
    int err;
};

static void record_time(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct timed *t = arg;

    (void)req;
    (void)reply;
    t->took_ms = ms_since(t->submitted_ns);
    t->err = err;
    tally_add(t->tally, err);
}

REDIS_TEST(faults, sigstop_times_out_then_recovers)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct tally tally;
    enum { N = 20 };
    struct request reqs[N];
    struct timed timed[N];

    engine_config(&cfg);
    cfg.node.command_timeout_ms = STOP_TIMEOUT_MS;
    cfg.node.connect_timeout_ms = STOP_TIMEOUT_MS;
    cfg.wheel.tick_ns = STOP_TICK_MS * 1000000ull;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);

    cr_assert_eq(redis_server_signal(&srv, SIGSTOP), 0);
    tally_init(&tally);
    for (int i = 0; i < N; i++) {
        set_cmd(&reqs[i], "INCR", "stopped");
        timed[i] = (struct timed){.tally = &tally, .submitted_ns = lw_clock_now()};
        cr_assert_eq(engine_submit(e, &reqs[i], record_time, &timed[i]), 0);
    }
    cr_assert_eq(tally_wait(&tally, N, 10000), N, "requests hung on a stopped server");
    for (int i = 0; i < N; i++) {
        cr_assert_eq(timed[i].err, LW_ETIMEDOUT, "request %d: %s", i,
                     lw_errname(timed[i].err));
        cr_assert_geq(timed[i].took_ms, STOP_TIMEOUT_MS - 1);
        cr_assert_leq(timed[i].took_ms, STOP_TIMEOUT_MS + STOP_TICK_MS + SCHED_SLACK_MS,
                      "request %d took %llu ms", i, (unsigned long long)timed[i].took_ms);
    }
    /* Still stopped: a new request fails too (now waiting for a connection). */
    cr_assert_eq(ping(e), LW_ETIMEDOUT);

    cr_assert_eq(redis_server_signal(&srv, SIGCONT), 0);
    cr_assert_eq(ping_until_up(e, 200), 0, "no recovery after SIGCONT");
    engine_get_stats(e, &st);
    cr_assert_geq(st.timeouts, N);
    cr_assert_geq(st.reconnects, 1);
    engine_free(e);
    for (int i = 0; i < N; i++)
        request_clear(&reqs[i]);
    tally_destroy(&tally);
}

/* --- restart: in-flight requests fail, the client reconnects --- */

struct outcome {
    struct tally *tally;
    int err;
    long long integer;
};

static void record_outcome(struct request *req, const redisReply *reply, int err,
                           void *arg)
{
    struct outcome *o = arg;

    (void)req;
    o->err = err;
    o->integer = !err && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    tally_add(o->tally, err);
}

REDIS_TEST(faults, restart_fails_inflight_and_reconnects)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct tally tally;
    enum { N = 10 };
    struct request block, reqs[N], incr;
    struct outcome blocked = {0}, out[N], after = {0};
    uint64_t start;

    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);

    /* BLPOP holds the connection, so everything behind it is in flight
     * when the server goes away. */
    tally_init(&tally);
    set_cmd(&block, "BLPOP", "never", "0");
    blocked.tally = &tally;
    cr_assert_eq(engine_submit(e, &block, record_outcome, &blocked), 0);
    for (int i = 0; i < N; i++) {
        set_cmd(&reqs[i], "INCR", "restarted");
        out[i] = (struct outcome){.tally = &tally};
        cr_assert_eq(engine_submit(e, &reqs[i], record_outcome, &out[i]), 0);
    }
    for (int i = 0; i < 100; i++) { /* until all of them are written */
        engine_get_stats(e, &st);
        if (st.inflight == N + 1)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(st.inflight, N + 1);

    start = lw_clock_now();
    cr_assert_eq(redis_server_restart(&srv), 0);
    cr_assert_eq(tally_wait(&tally, N + 1, 10000), N + 1, "requests hung over a restart");
    cr_assert_eq(blocked.err, LW_ECONNLOST, "%s", lw_errname(blocked.err));
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i].err, LW_ECONNLOST, "%d: %s", i, lw_errname(out[i].err));

    /* Traffic resumes on the new, empty server. */
    cr_assert_eq(ping_until_up(e, 200), 0, "no reconnect after restart");
    after.tally = &tally;
    set_cmd(&incr, "INCR", "restarted");
    cr_assert_eq(engine_call(e, &incr, record_outcome, &after), 0);
    cr_assert_eq(after.integer, 1);
    engine_get_stats(e, &st);
    cr_assert_geq(st.reconnects, 1);
    cr_log_info("reconnected %llu ms after the restart began",
                (unsigned long long)ms_since(start));
    engine_free(e);
    request_clear(&block);
    request_clear(&incr);
    for (int i = 0; i < N; i++)
        request_clear(&reqs[i]);
    tally_destroy(&tally);
}

/* --- wrong password, refused connection, set-up refusals, unknown host --- */

/*
 * Before the first connection, a refused connection, a wrong password, a
 * set-up command refused for good (a DB index out of range, an ACL's
 * NOPERM) or a server that does not speak RESP fails requests at once (a
 * 10 s command timeout is not waited out), the next request too; a
 * refusal that may mend (LW_EREDIS) fails a request at its command
 * timeout (200 ms here).  Either way with the reason the attempts failed,
 * and said (when said is not NULL) in engine_last_error()'s words.
 */
static void expect_connect_error(struct engine_config *cfg, int want, int at_once,
                                 const char *said)
{
    struct engine *e;
    uint64_t start = lw_clock_now(), limit_ms = at_once ? 2000 : 200 + 10 + 500;
    char why[256];

    cfg->node.command_timeout_ms = at_once ? 10000 : 200;
    cfg->node.connect_timeout_ms = 200;
    cr_assert_eq(engine_new(cfg, &e), 0);
    for (int i = 0; i < 2; i++) {
        int got = ping(e);

        cr_assert_eq(got, want, "got %s, want %s", lw_errname(got), lw_errname(want));
    }
    cr_assert_leq(ms_since(start), 2 * limit_ms, "%llu ms", (unsigned long long)ms_since(start));
    cr_assert_eq(engine_status(e), want);
    if (said) {
        cr_assert_eq(engine_last_error(e, why, sizeof why), want);
        cr_assert(strstr(why, said), "\"%s\" does not say \"%s\"", why, said);
    }
    engine_free(e);
}

REDIS_TEST(faults, wrong_password_is_eauth)
{
    struct engine_config cfg;
    struct engine *e;

    redis_server_stop(&srv);
    cr_assert_eq(redis_server_start(&srv, "sesame"), 0);
    engine_config(&cfg);
    cfg.node.password = "wrong";
    expect_connect_error(&cfg, LW_EAUTH, 1, "AUTH: WRONGPASS ");
    cfg.node.password = NULL; /* the server wants one: NOAUTH */
    expect_connect_error(&cfg, LW_EAUTH, 1, "PING: NOAUTH ");
    cr_assert_str_eq(lw_strerror(LW_EAUTH), "Redis authentication failed");

    cfg.node.password = "sesame";
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping(e), 0);
    engine_free(e);
}

REDIS_TEST(faults, refused_connection_is_econnrefused)
{
    struct engine_config cfg;
    int port = srv.port;

    redis_server_stop(&srv); /* nothing listens there now */
    engine_config(&cfg);
    cfg.node.port = port;
    expect_connect_error(&cfg, LW_ECONNREFUSED, 1, "Connection refused");
    cr_assert_str_eq(lw_errname(LW_ECONNREFUSED), "LW_ECONNREFUSED");
}

/* A DB index the server does not have: final (the server's `databases`
 * is fixed at its start), in redis-cli's words. */
REDIS_TEST(faults, bad_db_is_enodb_at_once)
{
    struct engine_config cfg;

    engine_config(&cfg);
    cfg.node.db = 60000; /* the server has 16 */
    expect_connect_error(&cfg, LW_ENODB, 1, "SELECT 60000: ERR DB index is out of range");
    cr_assert_str_eq(lw_errname(LW_ENODB), "LW_ENODB");
}

static const char *const one_script[] = {"return 1"};

/* user: an ACL user with the password "pw" and every right but those
 * `minus` takes away (ACL SETUSER's words, "-script|load"). */
static void make_user(const char *user, const char *minus)
{
    redisReply *r = redis_server_command(&srv, "ACL SETUSER %s on >pw ~* &* +@all %s", user, minus);

    cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER %s: %s", user,
              r ? r->str : "no reply");
    freeReplyObject(r);
}

/* An ACL that refuses a set-up command (SCRIPT LOAD, SELECT, or the
 * connection's own PING): LW_ENOPERM at once, the command and Redis's
 * words in the last error; the same user with the right gets in. */
REDIS_TEST(faults, acl_refusals_at_set_up_are_enoperm_at_once)
{
    struct engine_config cfg;
    struct engine *e;
    redisReply *r;

    make_user("noload", "-script|load");
    make_user("noselect", "-select");
    make_user("noping", "-ping");
    engine_config(&cfg);
    cfg.scripts = one_script;
    cfg.nscripts = 1;
    cfg.node.password = "pw";
    cfg.node.username = "noload";
    expect_connect_error(&cfg, LW_ENOPERM, 1, "SCRIPT LOAD: NOPERM ");
    cfg.node.username = "noselect";
    cfg.node.db = 1;
    expect_connect_error(&cfg, LW_ENOPERM, 1, "SELECT 1: NOPERM ");
    cfg.node.username = "noping";
    cfg.node.db = 0;
    expect_connect_error(&cfg, LW_ENOPERM, 1, "PING: NOPERM ");
    cr_assert_str_eq(lw_errname(LW_ENOPERM), "LW_ENOPERM");

    r = redis_server_command(&srv, "ACL SETUSER noload +script|load");
    freeReplyObject(r);
    cfg.node.username = "noload";
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping(e), 0);
    engine_free(e);
}

/* A server full up ("ERR max number of clients reached", which Redis
 * sends before it reads anything) is a refusal that may mend: requests
 * wait their command timeout and fail LW_EREDIS, with Redis's words; the
 * connection is made once there is room. */
REDIS_TEST(faults, a_refusal_that_may_mend_keeps_the_wait)
{
    struct engine_config cfg;
    struct engine *e;
    redisContext *admin;
    redisReply *r;
    uint64_t start;
    char why[256];
    int got;

    admin = redisConnect("127.0.0.1", srv.port);
    cr_assert(admin && !admin->err);
    r = redisCommand(admin, "CONFIG SET maxclients 1"); /* admin is the one */
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    engine_config(&cfg);
    cfg.node.command_timeout_ms = 300;
    cfg.node.connect_timeout_ms = 200;
    cfg.node.reconnect_max_ms = 50;
    start = lw_clock_now();
    cr_assert_eq(engine_new(&cfg, &e), 0);
    got = ping(e);
    cr_assert_eq(got, LW_EREDIS, "%s", lw_errname(got));
    cr_assert_geq(ms_since(start), 300 - 1, "failed at once: %llu ms",
                  (unsigned long long)ms_since(start));
    cr_assert_eq(engine_last_error(e, why, sizeof why), LW_EREDIS);
    cr_assert(strstr(why, "ERR max number of clients reached"), "%s", why);
    r = redisCommand(admin, "CONFIG SET maxclients 10000");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(admin);
    cr_assert_eq(ping_until_up(e, 100), 0, "no connection once there was room");
    engine_free(e);
}

/* A port that is not Redis (an HTTP server): its first answer does not
 * parse, LW_EPROTO at once, saying what it answered. */
Test(faults, a_port_that_is_not_redis_is_eproto_at_once)
{
    struct engine_config cfg;
    struct http_peer peer;

    http_peer_start(&peer);
    engine_config_init(&cfg);
    cfg.node.port = peer.port;
    cfg.wheel.tick_ns = 10 * 1000000ull;
    expect_connect_error(&cfg, LW_EPROTO, 1, "It answered \"HTTP/1.1 400 Bad Request\"");
    cr_assert_geq(atomic_load(&peer.served), 1);
    http_peer_stop(&peer);
    cr_assert_str_eq(lw_errname(LW_EPROTO), "LW_EPROTO");
}

/* Which refusals are final, by the words each Redis version says. */
Test(faults, set_up_refusals_by_their_words)
{
    static const struct {
        const char *words;
        int code;
    } cases[] = {
        {"NOPERM User u has no permissions to run the 'script|load' command", LW_ENOPERM},
        {"NOPERM this user has no permissions to run the 'select' command or its subcommand",
         LW_ENOPERM},
        {"WRONGPASS invalid username-password pair or user is disabled.", LW_EAUTH},
        {"NOAUTH Authentication required.", LW_EAUTH},
        {"ERR invalid password", LW_EAUTH},
        {"ERR AUTH <password> called without any password configured for the default user. "
         "Are you sure your configuration is correct?",
         LW_EAUTH},
        {"ERR DB index is out of range", LW_ENODB},
        {"ERR invalid DB index", LW_ENODB},
        {"ERR SELECT is not allowed in cluster mode", LW_ENODB},
        {"ERR unknown command 'SCRIPT', with args beginning with: 'LOAD' ", LW_ENOTSUP},
        {"ERR unknown command `ROLE`, with args beginning with: ", LW_ENOTSUP},
        {"ERR unknown subcommand 'LOAD'. Try SCRIPT HELP.", LW_ENOTSUP},
        {"LOADING Redis is loading the dataset in memory", LW_EREDIS},
        {"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
         "NOSAVE.",
         LW_EREDIS},
        {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
         LW_EREDIS},
        {"OOM command not allowed when used memory > 'maxmemory'.", LW_EREDIS},
        {"ERR max number of clients reached", LW_EREDIS},
        {"ERR something new", LW_EREDIS},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = conn_refusal(cases[i].words);

        cr_assert_eq(got, cases[i].code, "\"%s\": %s, not %s", cases[i].words, lw_errname(got),
                     lw_errname(cases[i].code));
        cr_assert_eq(conn_is_hard_failure(got), got != LW_EREDIS, "%s", lw_errname(got));
    }
}

Test(faults, unknown_host_is_enohost)
{
    struct engine_config cfg;
    struct engine *e = NULL;

    engine_config_init(&cfg);
    cfg.node.host = "no-such-host.invalid"; /* RFC 6761: never resolves, no query */
    cr_assert_eq(engine_new(&cfg, &e), LW_ENOHOST);
    cr_assert_null(e);
    cr_assert_str_eq(lw_strerror(LW_ENOHOST), "Redis host name does not resolve");
}

/* --- configuration and arguments --- */

Test(faults, bad_config_and_arguments_are_refused)
{
    struct engine_config cfg;
    struct engine *e = NULL;
    const char *no_body[] = {NULL};
    struct request req;
    const char *argv[] = {"k"};

    cr_assert_eq(engine_new(NULL, &e), LW_EINVAL);
#define REFUSED(field, value, code)                                                   \
    do {                                                                              \
        engine_config_init(&cfg);                                                     \
        cfg.field = value;                                                            \
        cr_assert_eq(engine_new(&cfg, &e), code, #field " = " #value);                \
    } while (0)
    REFUSED(node.host, NULL, LW_EINVAL);
    REFUSED(node.host, "", LW_EINVAL);
    REFUSED(node.unix_path, "", LW_EINVAL);
    REFUSED(node.port, 0, LW_ERANGE);
    REFUSED(node.port, 65536, LW_ERANGE);
    REFUSED(node.db, -1, LW_ERANGE);
    REFUSED(node.command_timeout_ms, 0, LW_EINVAL);
    REFUSED(node.connect_timeout_ms, LW_ENGINE_MAX_TIMEOUT_MS + 1, LW_ERANGE);
    REFUSED(node.reconnect_min_ms, 10000, LW_ERANGE); /* above reconnect_max_ms */
    REFUSED(max_inflight, 0, LW_EINVAL);
    REFUSED(max_inflight, LW_ENGINE_MAX_INFLIGHT + 1, LW_ERANGE);
    REFUSED(nscripts, LW_ENGINE_MAX_SCRIPTS + 1, LW_ERANGE);
    REFUSED(nscripts, 1, LW_EINVAL); /* scripts NULL */
    engine_config_init(&cfg);
    cfg.scripts = no_body;
    cfg.nscripts = 1;
    cr_assert_eq(engine_new(&cfg, &e), LW_EINVAL);
    REFUSED(wheel.tick_ns, 0, LW_EINVAL);
#undef REFUSED
    cr_assert_null(e);

    request_init(&req);
    cr_assert_eq(request_command(&req, 0, argv, NULL), LW_EINVAL);
    cr_assert_eq(request_evalsha(&req, 0, 2, 1, argv, NULL), LW_ERANGE);
    cr_assert_eq(request_evalsha(&req, -1, 0, 1, argv, NULL), LW_EINVAL);
    engine_free(NULL);
}

REDIS_TEST(faults, bad_requests_are_refused)
{
    struct engine_config cfg;
    struct engine *e;
    struct request req;
    const char *argv[] = {"k"};

    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    request_init(&req);
    cr_assert_eq(engine_submit(e, NULL, NULL, NULL), LW_EINVAL);
    cr_assert_eq(engine_submit(e, &req, NULL, NULL), LW_EINVAL, "no command");
    cr_assert_eq(engine_call(NULL, &req, NULL, NULL), LW_EINVAL);
    cr_assert_eq(request_evalsha(&req, 0, 1, 1, argv, NULL), 0);
    cr_assert_eq(engine_submit(e, &req, NULL, NULL), LW_EINVAL, "no script 0");
    request_clear(&req);
    engine_free(e);
}

/* --- shutdown with requests in flight and queued --- */

struct waiter {
    struct engine *engine;
    int rc;
};

static void *blocking_ping(void *arg)
{
    struct waiter *w = arg;

    w->rc = ping(w->engine);
    return NULL;
}

REDIS_TEST(faults, free_with_requests_outstanding_fails_them_eshutdown)
{
    struct engine_config cfg;
    struct engine *e;
    struct engine_stats st;
    struct tally tally;
    enum { N = 100 };
    struct request reqs[N];
    struct outcome out[N];
    struct waiter w;
    pthread_t thread;

    engine_config(&cfg);
    cfg.max_inflight = N / 2; /* half in flight, half queued behind them */
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);
    cr_assert_eq(redis_server_signal(&srv, SIGSTOP), 0); /* nothing will answer */

    tally_init(&tally);
    for (int i = 0; i < N; i++) {
        set_cmd(&reqs[i], "INCR", "shutdown");
        out[i] = (struct outcome){.tally = &tally};
        cr_assert_eq(engine_submit(e, &reqs[i], record_outcome, &out[i]), 0);
    }
    w = (struct waiter){e, 0};
    pthread_create(&thread, NULL, blocking_ping, &w);
    for (int i = 0; i < 200; i++) { /* until the pipeline is full */
        engine_get_stats(e, &st);
        if (st.inflight == N / 2 && st.waiting == N / 2 + 1)
            break;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(st.inflight, N / 2);
    cr_assert_eq(st.waiting, N / 2 + 1, "the blocking PING is queued");

    engine_free(e);
    pthread_join(thread, NULL);
    cr_assert_eq(tally.done, N, "every request completes before free returns");
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i].err, LW_ESHUTDOWN, "%d: %s", i, lw_errname(out[i].err));
    cr_assert_eq(w.rc, LW_ESHUTDOWN);
    redis_server_signal(&srv, SIGCONT);
    for (int i = 0; i < N; i++)
        request_clear(&reqs[i]);
    tally_destroy(&tally);
}

REDIS_TEST(faults, free_while_never_connected)
{
    struct engine_config cfg;
    struct engine *e;
    struct tally tally;
    struct request req;

    /* Stopped, the server's kernel still accepts the connection; the set-up
     * is never answered.  (A refused connection would fail it at once.) */
    redis_server_signal(&srv, SIGSTOP);
    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    tally_init(&tally);
    set_cmd(&req, "PING");
    cr_assert_eq(engine_submit(e, &req, count_done, &tally), 0);
    engine_free(e);
    redis_server_signal(&srv, SIGCONT);
    cr_assert_eq(tally.done, 1);
    cr_assert_eq(tally.last_err, LW_ESHUTDOWN);
    request_clear(&req);
    tally_destroy(&tally);
}

/* --- a callback that resubmits after a failure: the request waits for the
 *     next connection instead of being written to the dead one --- */

struct again {
    struct engine *engine;
    struct tally *tally;
    int first_err;
    int second_err;
    int calls;
};

static void resubmit_once(struct request *req, const redisReply *reply, int err,
                          void *arg)
{
    struct again *a = arg;

    (void)reply;
    if (a->calls++ == 0) {
        a->first_err = err;
        if (err && engine_submit(a->engine, req, resubmit_once, a) == 0)
            return;
    } else {
        a->second_err = err;
    }
    tally_add(a->tally, err);
}

REDIS_TEST(faults, resubmit_from_failure_callback_waits_for_reconnect)
{
    struct engine_config cfg;
    struct engine *e;
    struct tally tally;
    struct request stopped, killed;
    struct again a1 = {0}, a2 = {0};

    engine_config(&cfg);
    cfg.node.command_timeout_ms = 200;
    cfg.node.connect_timeout_ms = 200;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping_until_up(e, 100), 0);
    tally_init(&tally);

    /* Timed out (the connection is dropped by us). */
    cr_assert_eq(redis_server_signal(&srv, SIGSTOP), 0);
    a1 = (struct again){.engine = e, .tally = &tally};
    set_cmd(&stopped, "INCR", "again");
    cr_assert_eq(engine_submit(e, &stopped, resubmit_once, &a1), 0);
    cr_assert_eq(tally_wait(&tally, 1, 10000), 1);
    cr_assert_eq(a1.first_err, LW_ETIMEDOUT);
    cr_assert_eq(redis_server_signal(&srv, SIGCONT), 0);
    cr_assert_eq(ping_until_up(e, 200), 0);

    /* Lost (the server dies under a blocked command). */
    a2 = (struct again){.engine = e, .tally = &tally};
    set_cmd(&killed, "BLPOP", "never", "0");
    cr_assert_eq(engine_submit(e, &killed, resubmit_once, &a2), 0);
    cr_assert(wait_until(blocked_clients() >= 1, 5000), "the BLPOP never blocked");
    cr_assert_eq(redis_server_signal(&srv, SIGKILL), 0);
    cr_assert_eq(tally_wait(&tally, 2, 10000), 2);
    cr_assert_eq(a2.first_err, LW_ECONNLOST, "%s", lw_errname(a2.first_err));
    cr_assert_eq(a2.second_err, LW_ECONNREFUSED, "%s", lw_errname(a2.second_err));

    cr_assert_eq(engine_free(e), 0);
    request_clear(&stopped);
    request_clear(&killed);
    tally_destroy(&tally);
}

/* --- engine_free from the engine's own callback is refused --- */

struct self_free {
    struct engine *engine;
    int rc;
};

static void free_from_callback(struct request *req, const redisReply *reply, int err,
                               void *arg)
{
    struct self_free *f = arg;

    (void)req;
    (void)reply;
    (void)err;
    f->rc = engine_free(f->engine);
}

REDIS_TEST(faults, free_from_callback_is_edeadlk)
{
    struct engine_config cfg;
    struct self_free f = {0};
    struct request req;
    const char *sub[] = {"SUBSCRIBE", "chan"}, *mon[] = {"monitor"};

    engine_config(&cfg);
    cr_assert_eq(engine_new(&cfg, &f.engine), 0);
    set_cmd(&req, "PING");
    cr_assert_eq(engine_call(f.engine, &req, free_from_callback, &f), 0);
    cr_assert_eq(f.rc, LW_EDEADLK);
    request_clear(&req);

    /* Commands without exactly one reply cannot go through the engine. */
    request_init(&req);
    cr_assert_eq(request_command(&req, 2, sub, NULL), LW_EINVAL);
    cr_assert_eq(request_command(&req, 1, mon, NULL), LW_EINVAL);
    cr_assert_null(req.cmd);
    cr_assert_eq(engine_free(f.engine), 0);
}

/* --- host names looked up off the engine thread --- */

/*
 * getaddrinfo()'s stand-in (struct endpoint's resolve, a test hook):
 * "slow.test" answers as 127.0.0.1 after SLOW_DNS_MS; "never.test" does
 * not answer before the test lets it go (10 s at most), then fails as a
 * DNS that does not answer does; any other name as getaddrinfo().  It
 * counts its calls and the ones still running, so that a test sees every
 * lookup thread done before it ends.
 */
enum { SLOW_DNS_MS = 3000 };

static _Atomic int dns_calls, dns_running, dns_let_go;

static int test_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                            struct addrinfo **res)
{
    int rc;

    dns_calls++;
    dns_running++;
    if (!strcmp(node, "slow.test")) {
        sleep_ms(SLOW_DNS_MS);
        node = "127.0.0.1";
    }
    for (int i = 0; !strcmp(node, "never.test") && !dns_let_go && i < 1000; i++)
        sleep_ms(10);
    rc = strcmp(node, "never.test") ? getaddrinfo(node, service, hints, res) : EAI_AGAIN;
    dns_running--;
    return rc;
}

static void dns_reset(void)
{
    dns_calls = 0;
    dns_let_go = 0;
}

/* Every lookup thread is done (they free what they hold). */
static void dns_wait_done(void)
{
    dns_let_go = 1;
    cr_assert(wait_until(dns_running == 0, 2 * SLOW_DNS_MS), "a lookup is still running");
}

/* A timer on the engine's wheel that sets itself again for the next tick
 * each time it fires, as the watchdog's renewals do; the longest gap
 * between two of its firings.  Engine thread; read once the engine is
 * gone. */
static struct {
    struct lw_timer timer;
    uint64_t last_ns, worst_ns, count;
} beat;

static void on_beat(struct engine *e, struct lw_timer_list *due, void *arg)
{
    uint64_t now = lw_clock_now();

    (void)arg;
    while (lw_timer_list_pop(due) == &beat.timer) {
        if (beat.last_ns && now - beat.last_ns > beat.worst_ns)
            beat.worst_ns = now - beat.last_ns;
        beat.last_ns = now;
        beat.count++;
        lw_wheel_schedule(engine_wheel(e), &beat.timer, now + 10 * 1000000ull);
    }
}

/*
 * A name whose lookup takes 3 s delays its own connection, not the
 * engine: its thread goes on, the wheel ticking every 10 ms meanwhile
 * (the tick is what renews locks, on every node's connection; a lookup on
 * the engine thread stopped it for the whole 3 s).  The PING waits for
 * the lookup, then succeeds.
 */
REDIS_TEST(faults, slow_host_name_delays_only_its_connection)
{
    struct engine_config cfg;
    struct engine *e;
    uint64_t start;

    dns_reset();
    memset(&beat, 0, sizeof beat);
    engine_config(&cfg);
    cfg.node.host = "slow.test";
    cfg.node.resolve = test_getaddrinfo;
    cfg.node.connect_timeout_ms = 2 * SLOW_DNS_MS;
    cfg.on_tick = on_beat;
    start = lw_clock_now();
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(lw_wheel_schedule_remote(engine_wheel(e), &beat.timer, start), 0);
    cr_assert_eq(ping(e), 0);
    cr_assert_geq(ms_since(start), SLOW_DNS_MS - 50, "the PING did not wait for the lookup");
    engine_free(e);
    /* Every 10-20 ms (the next tick after 10 ms); at least one per 100 ms
     * on average, none more than 500 ms after the last. */
    cr_assert_geq(beat.count, SLOW_DNS_MS / 100, "%llu beats in 3 s",
                  (unsigned long long)beat.count);
    cr_assert_lt(beat.worst_ns / 1000000u, 500, "the engine stood still %llu ms",
                 (unsigned long long)(beat.worst_ns / 1000000u));
    dns_wait_done();
}

/* A name that does not resolve within the connect timeout fails the
 * attempt at the deadline with LW_ECONNECT (as a DNS that does not answer
 * always did: EAI_AGAIN), which fails requests at once before a first
 * connection; the lookup's thread is let go. */
Test(faults, host_name_not_resolved_in_time_is_econnect)
{
    struct engine_config cfg;
    struct engine *e;
    uint64_t start;
    char why[256];

    dns_reset();
    engine_config_init(&cfg);
    cfg.node.host = "never.test";
    cfg.node.resolve = test_getaddrinfo;
    cfg.node.connect_timeout_ms = 300;
    cfg.node.command_timeout_ms = 10000;
    start = lw_clock_now();
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping(e), LW_ECONNECT);
    cr_assert_lt(ms_since(start), 300 + 700, "%llu ms", (unsigned long long)ms_since(start));
    cr_assert_eq(engine_status(e), LW_ECONNECT);
    cr_assert_eq(engine_last_error(e, why, sizeof why), LW_ECONNECT);
    cr_assert(strstr(why, "never.test") && strstr(why, "lookup took over 300 ms"), "%s", why);
    engine_free(e);
    dns_wait_done();
}

/* Freed while a lookup is under way: the request fails LW_ESHUTDOWN, the
 * lookup's thread finishes on its own and frees its answer (ASan's leak
 * check sees it). */
REDIS_TEST(faults, free_during_host_name_lookup)
{
    struct engine_config cfg;
    struct engine *e;
    struct request req;
    struct tally tally;

    dns_reset();
    engine_config(&cfg);
    cfg.node.host = "slow.test";
    cfg.node.resolve = test_getaddrinfo;
    cfg.node.connect_timeout_ms = 2 * SLOW_DNS_MS;
    tally_init(&tally);
    cr_assert_eq(engine_new(&cfg, &e), 0);
    set_cmd(&req, "PING");
    cr_assert_eq(engine_submit(e, &req, count_done, &tally), 0);
    cr_assert(wait_until(dns_running == 1, 2000), "no lookup started");
    engine_free(e);
    cr_assert_eq(tally_wait(&tally, 1, 1000), 1);
    cr_assert_eq(tally.last_err, LW_ESHUTDOWN);
    request_clear(&req);
    tally_destroy(&tally);
    dns_wait_done();
}

/* A numeric address is never looked up: no call to the resolver. */
REDIS_TEST(faults, numeric_address_is_not_looked_up)
{
    struct engine_config cfg;
    struct engine *e;

    dns_reset();
    engine_config(&cfg);
    cfg.node.host = "127.0.0.1";
    cfg.node.resolve = test_getaddrinfo;
    cr_assert_eq(engine_new(&cfg, &e), 0);
    cr_assert_eq(ping(e), 0);
    engine_free(e);
    cr_assert_eq(dns_calls, 0);
}
