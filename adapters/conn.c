/*
 * adapters/conn.c - one Redis connection (see conn.h).
 *
 * Every hiredis callback of ours gets the connection as privdata and
 * first checks `ac == c->ac`.  Letting go of a context is clearing c->ac
 * and then freeing it: the NULL-reply callbacks hiredis runs while freeing
 * it find it is no longer ours and do nothing.  So a late connection can
 * be abandoned at once, from anywhere but the connect callback (hiredis
 * 0.14 does not let that one free its context).
 *
 * The set-up deadline is an ev_timer of the connection's own, not a check
 * on some tick: the connection belongs to no engine and no wheel (the
 * subscriber has neither, and a cluster client will have one connection
 * per master), and the timer is started and stopped once per connection
 * attempt, not per command, so it costs nothing that matters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libev.h>
#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "conn.h"

static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

/* Start connecting (hiredis, non-blocking), the socket close-on-exec.
 * NULL when out of memory; check ac->err. */
static redisAsyncContext *open_context(const struct lw_conn *c)
{
    redisAsyncContext *ac = c->unix_path ? redisAsyncConnectUnix(c->unix_path)
                                         : redisAsyncConnect(c->host, c->port);

    /* hiredis 0.14 cannot ask for SOCK_CLOEXEC: a process that forks and
     * execs (lwlock running COMMAND) would hand our sockets to the child.
     * A fork in another thread between socket() and here still can. */
    if (ac && !ac->err)
        fcntl(ac->c.fd, F_SETFD, fcntl(ac->c.fd, F_GETFD) | FD_CLOEXEC);
    return ac;
}

/* The reason a connection attempt failed, from hiredis's error and the
 * errno saved right after it. */
static int connect_error(const redisAsyncContext *ac, int saved_errno)
{
    if (ac->err == REDIS_ERR_OTHER && strstr(ac->errstr, "known"))
        return LW_ENOHOST; /* getaddrinfo: "Name or service not known" */
    if (saved_errno == ECONNREFUSED || strstr(ac->errstr, "refused"))
        return LW_ECONNREFUSED;
    return LW_ECONNECT;
}

/* The next delay in ms: half of it fixed, half random, so that many
 * clients cut off together do not come back together. */
static uint32_t backoff_next(struct backoff *b)
{
    if (b->last_ms == 0)
        b->last_ms = b->min_ms;
    else if (b->last_ms < b->max_ms / 2)
        b->last_ms *= 2;
    else
        b->last_ms = b->max_ms;
    return b->last_ms / 2 + (uint32_t)xorshift_below(&b->rng, b->last_ms / 2 + 1);
}

int conn_is_auth_error(const char *msg)
{
    return !strncmp(msg, "NOAUTH", 6) || !strncmp(msg, "WRONGPASS", 9) ||
           strstr(msg, "AUTH") || strstr(msg, "password");
}

int conn_fails_at_once(const struct lw_conn *c)
{
    int err = c->last_err;

    if (c->ever_ready)
        return 0;
    return err == LW_ECONNREFUSED || err == LW_ECONNECT || err == LW_EAUTH ? err : 0;
}

/* The live context is let go of (ours: to free, or NULL when hiredis is
 * freeing it): note why, schedule the next attempt, then tell. */
static void went_down(struct lw_conn *c, redisAsyncContext *ours, int err)
{
    c->state = CONN_DOWN;
    c->last_err = err;
    c->unflushed = 0;
    ev_timer_stop(c->loop, &c->deadline);
    if (ours)
        redisAsyncFree(ours);
    ev_timer_set(&c->retry, backoff_next(&c->backoff) / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->retry);
    c->on_down(c->arg, err);
}

void conn_fail(struct lw_conn *c, int err)
{
    redisAsyncContext *ac = c->ac;

    if (c->state == CONN_DOWN || c->state == CONN_CLOSED)
        return;
    c->ac = NULL;
    went_down(c, ac, err);
}

/* The context died under us: hiredis is freeing it already. */
static void lost(struct lw_conn *c)
{
    c->ac = NULL;
    went_down(c, NULL, LW_ECONNLOST);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct lw_conn *c = privdata;

    if (ac != c->ac)
        return;
    if (!reply) {
        lost(c);
        return;
    }
    c->on_reply(c->arg, reply);
}

static void ready(struct lw_conn *c)
{
    ev_timer_stop(c->loop, &c->deadline);
    c->backoff.last_ms = 0; /* the next failure starts again from min_ms */
    if (c->ever_ready)
        c->reconnects++;
    c->ever_ready = 1;
    c->last_err = 0;
    c->state = CONN_READY;
    c->on_up(c->arg);
}

/* AUTH and PING: an error fails the attempt; the PING's answer ends SETUP. */
static void on_setup_reply(redisAsyncContext *ac, void *reply_ptr, void *privdata)
{
    struct lw_conn *c = privdata;
    redisReply *reply = reply_ptr;
    int is_ping = reply && reply->type == REDIS_REPLY_STATUS && !strcmp(reply->str, "PONG");

    if (ac != c->ac || c->state != CONN_SETUP)
        return;
    if (!reply)
        lost(c);
    else if (reply->type == REDIS_REPLY_ERROR)
        conn_fail(c, conn_is_auth_error(reply->str) ? LW_EAUTH : LW_EREDIS);
    else if (is_ping)
        ready(c);
}

static void send_setup(struct lw_conn *c, const char *cmd, size_t len)
{
    /* On failure the deadline drops the connection: hiredis 0.14 does not
     * let a connect callback free its context. */
    if (redisAsyncFormattedCommand(c->ac, on_setup_reply, c, cmd, len) == REDIS_OK)
        c->unflushed = 1;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct lw_conn *c = ac->data;
    int saved_errno = errno;

    if (ac != c->ac)
        return;
    if (status != REDIS_OK) {
        c->ac = NULL; /* hiredis frees it on return */
        went_down(c, NULL, connect_error(ac, saved_errno));
        return;
    }
    c->state = CONN_SETUP; /* the deadline runs on from CONNECTING */
    if (c->auth_cmd)
        send_setup(c, c->auth_cmd, c->auth_len);
    if (c->on_setup)
        c->on_setup(c->arg);
    if (c->ac == ac)
        send_setup(c, ping_cmd, sizeof ping_cmd - 1);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct lw_conn *c = ac->data;

    (void)status;
    if (ac == c->ac)
        lost(c);
}

void conn_connect(struct lw_conn *c)
{
    redisAsyncContext *ac;
    int err;

    if (c->state == CONN_CLOSED)
        return;
    c->state = CONN_CONNECTING;
    ev_prepare_start(c->loop, &c->flush);
    ac = open_context(c);
    if (!ac || ac->err) {
        err = ac ? connect_error(ac, errno) : LW_ENOMEM;
        if (ac)
            redisAsyncFree(ac);
        went_down(c, NULL, err);
        return;
    }
    ac->data = c;
    c->ac = ac;
    if (redisLibevAttach(c->loop, ac) != REDIS_OK) {
        conn_fail(c, LW_ENOMEM);
        return;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    ev_timer_set(&c->deadline, c->connect_timeout_s, 0.0);
    ev_timer_start(c->loop, &c->deadline);
}

static int sent(struct lw_conn *c, int rc)
{
    if (rc != REDIS_OK)
        return LW_ECONNLOST;
    c->unflushed = 1;
    return 0;
}

int conn_send(struct lw_conn *c, const char *cmd, size_t len)
{
    if (!c->ac || (c->state != CONN_SETUP && c->state != CONN_READY))
        return LW_ECONNLOST;
    return sent(c, redisAsyncFormattedCommand(c->ac, on_reply, c, cmd, len));
}

int conn_send_argv(struct lw_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (!c->ac || (c->state != CONN_SETUP && c->state != CONN_READY))
        return LW_ECONNLOST;
    return sent(c, redisAsyncCommandArgv(c->ac, on_reply, c, argc, argv, lens));
}

/*
 * Before the loop blocks, write what its callbacks appended.  Left to
 * hiredis, the write would wait for the write watcher: one more trip
 * through epoll_wait, plus two epoll_ctl calls to start and stop watching
 * for writability, on every round trip.  Written here, the watcher is
 * started and stopped within one iteration and libev never tells the
 * kernel.  Only for a connected context: on one still connecting,
 * redisAsyncHandleWrite() would complete the connect itself.
 */
static void on_flush(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct lw_conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->unflushed && c->ac && (c->state == CONN_SETUP || c->state == CONN_READY)) {
        c->unflushed = 0;
        redisAsyncHandleWrite(c->ac); /* may fail the connection: then c->ac is NULL */
    }
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_fail(w->data, LW_ETIMEDOUT);
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_connect(w->data);
}

static char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *failed = 1;
    return d;
}

/* AUTH <password>, formatted once: binary-safe, and no printf per attempt. */
static char *format_auth(const char *password, size_t *len, int *failed)
{
    const char *argv[] = {"AUTH", password};
    char *cmd;
    int n;

    if (!password)
        return NULL;
    if ((n = redisFormatCommandArgv(&cmd, 2, argv, NULL)) < 0) {
        *failed = 1;
        return NULL;
    }
    *len = (size_t)n;
    return cmd;
}

int conn_init(struct lw_conn *c, const struct conn_config *cfg)
{
    int failed = 0;

    memset(c, 0, sizeof *c);
    c->host = dup_or_null(cfg->unix_path ? NULL : cfg->host, &failed);
    c->unix_path = dup_or_null(cfg->unix_path, &failed);
    c->auth_cmd = format_auth(cfg->password, &c->auth_len, &failed);
    c->port = cfg->port;
    c->connect_timeout_s = cfg->connect_timeout_ms / 1000.0;
    c->loop = cfg->loop;
    c->on_setup = cfg->on_setup;
    c->on_up = cfg->on_up;
    c->on_down = cfg->on_down;
    c->on_reply = cfg->on_reply;
    c->arg = cfg->arg;
    c->last_err = LW_ETIMEDOUT; /* no attempt has ended yet */
    c->backoff.min_ms = cfg->reconnect_min_ms;
    c->backoff.max_ms = cfg->reconnect_max_ms;
    c->backoff.rng = xorshift_seed((uint64_t)(uintptr_t)c ^ lw_clock_now());
    ev_init(&c->deadline, on_deadline);
    c->deadline.data = c;
    ev_init(&c->retry, on_retry);
    c->retry.data = c;
    ev_prepare_init(&c->flush, on_flush);
    c->flush.data = c;
    return failed ? LW_ENOMEM : 0;
}

void conn_close(struct lw_conn *c)
{
    redisAsyncContext *ac = c->ac;

    if (c->loop) {
        ev_timer_stop(c->loop, &c->deadline);
        ev_timer_stop(c->loop, &c->retry);
        ev_prepare_stop(c->loop, &c->flush);
    }
    c->state = CONN_CLOSED;
    c->ac = NULL;
    if (ac)
        redisAsyncFree(ac);
}

void conn_clear(struct lw_conn *c)
{
    free(c->host);
    free(c->unix_path);
    redisFreeCommand(c->auth_cmd);
    c->host = c->unix_path = c->auth_cmd = NULL;
}
