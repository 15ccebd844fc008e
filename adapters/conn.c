/*
 * adapters/conn.c - one Redis connection (see conn.h).
 *
 * Our own I/O on a non-blocking hiredis context: hiredis connects, formats
 * into its output buffer, writes it and parses what we read; libev watches
 * the socket.  No callback list: every reply goes to on_reply in order
 * (the AUTH and PING replies of the set-up excepted), so pub/sub pushes of
 * any kind, which hiredis 0.14's async API aborts on when it has no
 * callback for them, are just replies.
 *
 * Letting go of a context inside the read loop (a callback failed or
 * closed the connection) only parks it in c->dead: the loop still holds
 * it and frees it when it returns.  Anywhere else it is freed at once.
 *
 * The set-up deadline is an ev_timer of the connection's own, not a check
 * on some tick: the connection belongs to no engine and no wheel (the
 * subscriber has neither, and a cluster client has one connection per
 * master), and the timer is started and stopped once per connection
 * attempt, not per command, so it costs nothing that matters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "conn.h"

static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

/* Start connecting (hiredis, non-blocking), the socket close-on-exec.
 * NULL when out of memory; check rc->err. */
static redisContext *open_context(const struct lw_conn *c)
{
    redisContext *rc = c->unix_path ? redisConnectUnixNonBlock(c->unix_path)
                                    : redisConnectNonBlock(c->host, c->port);

    /* hiredis 0.14 cannot ask for SOCK_CLOEXEC: a process that forks and
     * execs (lwlock running COMMAND) would hand our sockets to the child.
     * A fork in another thread between socket() and here still can. */
    if (rc && !rc->err)
        fcntl(rc->fd, F_SETFD, fcntl(rc->fd, F_GETFD) | FD_CLOEXEC);
    return rc;
}

/* The reason a connection attempt failed, from hiredis's error and the
 * errno saved right after it. */
static int connect_error(const redisContext *rc, int saved_errno)
{
    if (rc->err == REDIS_ERR_OTHER && strstr(rc->errstr, "known"))
        return LW_ENOHOST; /* getaddrinfo: "Name or service not known" */
    if (saved_errno == ECONNREFUSED || strstr(rc->errstr, "refused"))
        return LW_ECONNREFUSED;
    return LW_ECONNECT;
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

/* Let go of the live context: stop watching it and free it, unless the
 * read loop is using it (it frees it on return). */
static void drop_context(struct lw_conn *c)
{
    redisContext *rc = c->rc;

    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
    c->rc = NULL;
    c->unflushed = 0;
    if (!rc)
        return;
    if (c->reading)
        c->dead = rc;
    else
        redisFree(rc);
}

/* The attempt or the connection is over: note why, schedule the next
 * attempt, then tell. */
static void went_down(struct lw_conn *c, int err)
{
    drop_context(c);
    c->state = CONN_DOWN;
    c->last_err = err;
    ev_timer_stop(c->loop, &c->deadline);
    ev_timer_set(&c->retry, backoff_next(&c->backoff) / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->retry);
    c->on_down(c->arg, err);
}

void conn_fail(struct lw_conn *c, int err)
{
    if (c->state == CONN_DOWN || c->state == CONN_CLOSED)
        return;
    went_down(c, err);
}

static void ready(struct lw_conn *c)
{
    ev_timer_stop(c->loop, &c->deadline);
    backoff_reset(&c->backoff); /* the next failure starts again from min_ms */
    if (c->ever_ready)
        c->reconnects++;
    c->ever_ready = 1;
    c->last_err = 0;
    c->state = CONN_READY;
    c->on_up(c->arg);
}

/* A reply read during SETUP: the AUTH's and the PING's are ours (an error
 * fails the attempt; the PING's answer ends SETUP), the user's set-up
 * replies between them are the user's. */
static void setup_reply(struct lw_conn *c, redisReply *reply)
{
    if (!c->setup_auth && c->setup_user) {
        c->setup_user--;
        c->on_reply(c->arg, reply);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        conn_fail(c, conn_is_auth_error(reply->str) ? LW_EAUTH : LW_EREDIS);
    } else if (c->setup_auth) {
        c->setup_auth = 0;
    } else {
        ready(c); /* the PING's PONG */
    }
}

/* Hand every complete reply read so far to its reader, in order. */
static void dispatch_replies(struct lw_conn *c, redisContext *rc)
{
    void *reply;

    while (c->rc == rc) {
        if (redisGetReply(rc, &reply) != REDIS_OK) {
            conn_fail(c, LW_ECONNLOST); /* a protocol error: out of step */
            return;
        }
        if (!reply)
            return;
        if (c->state == CONN_SETUP)
            setup_reply(c, reply);
        else
            c->on_reply(c->arg, reply);
        freeReplyObject(reply);
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct lw_conn *c = w->data;
    redisContext *rc = c->rc;

    (void)loop;
    (void)revents;
    if (redisBufferRead(rc) != REDIS_OK) { /* EOF or a read error */
        conn_fail(c, LW_ECONNLOST);
        return;
    }
    c->reading = 1;
    dispatch_replies(c, rc);
    c->reading = 0;
    if (c->dead) {
        redisFree(c->dead);
        c->dead = NULL;
    }
}

/* Write what hiredis holds; wait for room (the write watcher) only when
 * the socket took less than all of it. */
static void write_out(struct lw_conn *c)
{
    int done = 0;

    c->unflushed = 0;
    if (redisBufferWrite(c->rc, &done) != REDIS_OK) {
        conn_fail(c, LW_ECONNLOST);
        return;
    }
    if (done)
        ev_io_stop(c->loop, &c->wio);
    else
        ev_io_start(c->loop, &c->wio);
}

static int append_setup(struct lw_conn *c, const char *cmd, size_t len)
{
    if (redisAppendFormattedCommand(c->rc, cmd, len) != REDIS_OK)
        return -1;
    c->unflushed = 1;
    return 0;
}

/* The socket is connected: pipeline AUTH, the user's set-up and PING.
 * Out of memory, the deadline ends the attempt. */
static void start_setup(struct lw_conn *c)
{
    c->state = CONN_SETUP; /* the deadline runs on from CONNECTING */
    c->setup_auth = 0;
    c->setup_user = 0;
    c->ping_sent = 0;
    if (c->auth_cmd && append_setup(c, c->auth_cmd, c->auth_len) == 0)
        c->setup_auth = 1;
    if (c->on_setup)
        c->on_setup(c->arg);
    if (c->rc && append_setup(c, ping_cmd, sizeof ping_cmd - 1) == 0)
        c->ping_sent = 1;
    ev_io_start(c->loop, &c->rio);
}

/* Writable while CONNECTING: the connect is over; SO_ERROR says how. */
static void connected(struct lw_conn *c)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(c->rc->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        went_down(c, err == ECONNREFUSED ? LW_ECONNREFUSED : LW_ECONNECT);
        return;
    }
    ev_io_stop(c->loop, &c->wio);
    start_setup(c);
    if (c->rc)
        write_out(c);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct lw_conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->state == CONN_CONNECTING)
        connected(c);
    else
        write_out(c);
}

/* Connect to host:port from now on (port 0: the unix socket at host).
 * Out of memory, the old address stays; its ROLE check tells. */
static void set_address(struct lw_conn *c, const char *host, int port)
{
    char *copy = strdup(host);

    if (!copy)
        return;
    free(c->host);
    free(c->unix_path);
    c->host = port ? copy : NULL;
    c->unix_path = port ? NULL : copy;
    c->port = port;
}

/* The where hook's address, copied when it changed.  1: hold. */
static int pick_address(struct lw_conn *c)
{
    const char *host;
    int port;

    if (!c->where)
        return 0;
    if (c->where(c->where_arg, &host, &port))
        return 1;
    if (!conn_is_at(c, host, port))
        set_address(c, host, port);
    return 0;
}

int conn_is_at(const struct lw_conn *c, const char *host, int port)
{
    if (port == 0)
        return c->unix_path && !strcmp(c->unix_path, host);
    return c->host && !c->unix_path && c->port == port && !strcmp(c->host, host);
}

void conn_address(const struct lw_conn *c, const char **host, int *port)
{
    *host = c->unix_path ? c->unix_path : c->host;
    *port = c->unix_path ? 0 : c->port;
}

int conn_held(const struct lw_conn *c)
{
    return c->state == CONN_DOWN && !ev_is_active(&c->retry);
}

void conn_connect(struct lw_conn *c)
{
    redisContext *rc;
    int err;

    if (c->state == CONN_CLOSED)
        return;
    ev_timer_stop(c->loop, &c->retry);
    if (c->state != CONN_DOWN) /* an attempt is under way already */
        return;
    if (pick_address(c))
        return; /* held: the user calls again once it knows where */
    c->state = CONN_CONNECTING;
    ev_prepare_start(c->loop, &c->flush);
    rc = open_context(c);
    if (!rc || rc->err) {
        err = rc ? connect_error(rc, errno) : LW_ENOMEM;
        if (rc)
            redisFree(rc);
        went_down(c, err);
        return;
    }
    c->rc = rc;
    ev_io_set(&c->rio, rc->fd, EV_READ);
    ev_io_set(&c->wio, rc->fd, EV_WRITE);
    ev_io_start(c->loop, &c->wio);
    ev_timer_set(&c->deadline, c->ep->connect_timeout_ms / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->deadline);
}

/* A user's command is appended: count it when its reply comes during
 * SETUP, before the PING's. */
static int sent(struct lw_conn *c, int rc)
{
    if (rc != REDIS_OK)
        return LW_ECONNLOST;
    if (c->state == CONN_SETUP && !c->ping_sent)
        c->setup_user++;
    c->unflushed = 1;
    return 0;
}

int conn_send(struct lw_conn *c, const char *cmd, size_t len)
{
    if (!c->rc || (c->state != CONN_SETUP && c->state != CONN_READY))
        return LW_ECONNLOST;
    return sent(c, redisAppendFormattedCommand(c->rc, cmd, len));
}

int conn_send_argv(struct lw_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (!c->rc || (c->state != CONN_SETUP && c->state != CONN_READY))
        return LW_ECONNLOST;
    return sent(c, redisAppendCommandArgv(c->rc, argc, argv, lens));
}

/*
 * Before the loop blocks, write what its callbacks appended: one write per
 * loop iteration for all of them.  Waiting for the write watcher instead
 * would cost one more trip through epoll_wait, plus two epoll_ctl calls to
 * start and stop watching for writability, on every round trip.  The
 * watcher is started only when the socket is full.
 */
static void on_flush(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct lw_conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->unflushed && c->rc && !ev_is_active(&c->wio) &&
        (c->state == CONN_SETUP || c->state == CONN_READY))
        write_out(c); /* may fail the connection */
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

/* AUTH [<user>] <password>, formatted once: binary-safe, and no printf per
 * attempt.  A user without a password sends an empty one: what a user
 * with "nopass" accepts. */
static char *format_auth(const char *user, const char *password, size_t *len, int *failed)
{
    const char *argv[3] = {"AUTH"};
    int argc = 1;
    char *cmd;
    int n;

    if (!password && !user)
        return NULL;
    if (user)
        argv[argc++] = user;
    argv[argc++] = password ? password : "";
    if ((n = redisFormatCommandArgv(&cmd, argc, argv, NULL)) < 0) {
        *failed = 1;
        return NULL;
    }
    *len = (size_t)n;
    return cmd;
}

int conn_init(struct lw_conn *c, const struct conn_config *cfg)
{
    const struct lw_endpoint *ep = cfg->ep;
    int failed = 0;

    memset(c, 0, sizeof *c);
    c->ep = ep;
    if (cfg->host) { /* port 0: a unix socket's path */
        c->host = dup_or_null(cfg->port ? cfg->host : NULL, &failed);
        c->unix_path = dup_or_null(cfg->port ? NULL : cfg->host, &failed);
        c->port = cfg->port;
    } else {
        c->host = dup_or_null(ep->unix_path ? NULL : ep->host, &failed);
        c->unix_path = dup_or_null(ep->unix_path, &failed);
        c->port = ep->unix_path ? 0 : ep->port;
    }
    c->auth_cmd = format_auth(ep->username, ep->password, &c->auth_len, &failed);
    c->loop = cfg->loop;
    c->on_setup = cfg->on_setup;
    c->on_up = cfg->on_up;
    c->on_down = cfg->on_down;
    c->on_reply = cfg->on_reply;
    c->arg = cfg->arg;
    c->where = cfg->where;
    c->where_arg = cfg->where_arg;
    c->last_err = LW_ETIMEDOUT; /* no attempt has ended yet */
    backoff_init(&c->backoff, ep->reconnect_min_ms, ep->reconnect_max_ms,
                 (uint64_t)(uintptr_t)c ^ lw_clock_now());
    ev_init(&c->deadline, on_deadline);
    c->deadline.data = c;
    ev_init(&c->retry, on_retry);
    c->retry.data = c;
    ev_prepare_init(&c->flush, on_flush);
    c->flush.data = c;
    ev_init(&c->rio, on_readable);
    c->rio.data = c;
    ev_init(&c->wio, on_writable);
    c->wio.data = c;
    return failed ? LW_ENOMEM : 0;
}

void conn_drop(struct lw_conn *c)
{
    if (c->state == CONN_CLOSED)
        return;
    ev_timer_stop(c->loop, &c->deadline);
    ev_timer_stop(c->loop, &c->retry);
    drop_context(c);
    c->state = CONN_DOWN; /* held (conn_held()) until conn_connect() */
}

void conn_close(struct lw_conn *c)
{
    if (c->loop) {
        ev_timer_stop(c->loop, &c->deadline);
        ev_timer_stop(c->loop, &c->retry);
        ev_prepare_stop(c->loop, &c->flush);
        drop_context(c);
    }
    c->state = CONN_CLOSED;
}

void conn_clear(struct lw_conn *c)
{
    free(c->host);
    free(c->unix_path);
    redisFreeCommand(c->auth_cmd);
    c->host = c->unix_path = c->auth_cmd = NULL;
}
