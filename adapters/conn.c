/*
 * adapters/conn.c - one Redis connection (see conn.h).
 *
 * Our own I/O: a non-blocking socket (socket.c), TLS over it when the
 * endpoint asks (tls.c), an output buffer (an sds, hiredis's string), and
 * hiredis's reader to parse what is read; libev watches the socket.  No
 * callback list: every reply goes to on_reply in order (the AUTH and PING
 * replies of the set-up excepted), so pub/sub pushes of any kind are just
 * replies.
 *
 * TLS turns a read or a write into a handshake step now and then (OpenSSL
 * may have to write while reading, or read while writing).  A call that
 * wants the other direction sets a flag, and the watcher of that
 * direction retries it first: read_wants_write is served by on_writable,
 * write_wants_read by on_readable, as hiredis's ssl.c does.  A read goes
 * on until OpenSSL wants more bytes, for what it has decrypted already
 * would raise no event.
 *
 * Letting go of the socket inside the read loop (a callback failed or
 * closed the connection) parks the reader in c->dead_reader: the loop
 * still holds it and frees it when it returns.
 *
 * The set-up deadline is an ev_timer of the connection's own, not a check
 * on some tick: the connection belongs to no engine and no wheel (the
 * subscriber has neither, and a cluster client has one connection per
 * master), and the timer is started and stopped once per connection
 * attempt, not per command, so it costs nothing that matters.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/sds.h>

#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "conn.h"
#include "replies.h"
#include "resolve.h"
#include "socket.h"

#define READ_CHUNK 16384 /* as hiredis reads */

static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

int conn_is_auth_error(const char *msg)
{
    return !strncmp(msg, "NOAUTH", 6) || !strncmp(msg, "WRONGPASS", 9) ||
           strstr(msg, "AUTH") || strstr(msg, "password");
}

int conn_is_hard_failure(int err)
{
    switch (err) {
    case LW_ECONNREFUSED:
    case LW_ECONNECT:
    case LW_ETLS:
    case LW_EPROTO:
    case LW_EAUTH:
    case LW_ENOPERM:
    case LW_ENODB:
    case LW_ENOTSUP:
        return 1;
    default:
        return 0;
    }
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Final: what only an operator mends (an ACL, a password, the number of
 * databases, a server without the command), each said by Redis in words
 * that have not changed since they were made (NOPERM since 6.0, the DB
 * index's since 2.x, "unknown command" ever).  Everything else may pass
 * by itself and keeps the wait, LW_EREDIS: a server LOADING its data,
 * BUSY with a script, a replica whose MASTERDOWN, OOM, "max number of
 * clients reached", and any words we do not know, which a wait costs no
 * more than the command timeout.
 */
int conn_refusal(const char *words)
{
    if (starts(words, "NOPERM"))
        return LW_ENOPERM;
    if (conn_is_auth_error(words))
        return LW_EAUTH;
    if (strstr(words, "DB index") || strstr(words, "SELECT is not allowed in cluster mode"))
        return LW_ENODB;
    if (starts(words, "ERR unknown command") || starts(words, "ERR unknown subcommand"))
        return LW_ENOTSUP;
    return LW_EREDIS;
}

int conn_fails_at_once(const struct conn *c)
{
    if (c->ever_ready)
        return 0;
    return conn_is_hard_failure(c->last_err) ? c->last_err : 0;
}

const char *conn_why(const struct conn *c)
{
    return c->why;
}

static int is_tls(const struct conn *c)
{
    return c->ep->tls.enable;
}

/* Say why the attempt or the connection failed. */
static void note_why(struct conn *c, const char *what)
{
    snprintf(c->why, sizeof c->why, "%s", what);
}

/* Record why where the endpoint's owner reads it, "host:port: why", and
 * say it in the log as a line of kind at level. */
static void report_at(const struct conn *c, int err, int kind, int level)
{
    char line[sizeof c->why + 300];

    if (!c->ep->report)
        return;
    if (c->unix_path)
        snprintf(line, sizeof line, "%s: %s", c->unix_path, c->why);
    else
        snprintf(line, sizeof line, "%s:%d: %s", c->host ? c->host : "?", c->port, c->why);
    report_set(c->ep->report, err, kind, level, line);
}

/* Record the failure: an error when it will not mend by waiting. */
static void report(const struct conn *c, int err)
{
    report_at(c, err, LOG_CONN_FAILED,
              !c->ever_ready && conn_is_hard_failure(err) ? LOG_ERROR : LOG_WARN);
}

/* Let go of the socket (or give up the lookup that was to lead to one):
 * stop watching it, close it, forget what was to be written; the reader is freed unless the read loop is using it (it frees
 * it on return).  The TLS session stays, to be resumed. */
static void drop_stream(struct conn *c)
{
    if (c->lookup)
        resolve_cancel(c->lookup);
    c->lookup = NULL;
    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
    tls_stop(&c->tls);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    sdsfree(c->out);
    c->out = NULL;
    c->unflushed = 0;
    c->read_wants_write = c->write_wants_read = 0;
    if (c->reader && c->reading)
        c->dead_reader = c->reader;
    else if (c->reader)
        replies_reader_free(c->reader);
    c->reader = NULL;
}

/* The attempt or the connection is over: note why, schedule the next
 * attempt, then tell. */
static void went_down(struct conn *c, int err)
{
    /* Nothing of a failed handshake is resumed; one that failed for
     * offering a session is tried again at once, without. */
    int again_now = err == LW_ETLS && tls_refused(&c->tls);

    drop_stream(c);
    c->state = CONN_DOWN;
    c->last_err = err;
    if (!c->why[0])
        note_why(c, lw_strerror(err));
    report(c, err);
    ev_timer_stop(c->loop, &c->deadline);
    ev_timer_set(&c->retry, again_now ? 0.0 : backoff_next(&c->backoff) / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->retry);
    c->on_down(c->arg, err);
}

void conn_fail(struct conn *c, int err)
{
    if (c->state == CONN_DOWN || c->state == CONN_CLOSED)
        return;
    if (!c->why[0])
        note_why(c, lw_strerror(err));
    went_down(c, err);
}

/* Say in the endpoint's log that a connection that failed is back. */
static void say_restored(const struct conn *c)
{
    struct logger *log = c->ep->report ? c->ep->report->log : NULL;

    if (!log_enabled(log, LOG_INFO))
        return;
    if (c->unix_path)
        log_say(log, LOG_CONN_RESTORED, LOG_INFO, "%s: connection restored", c->unix_path);
    else
        log_say(log, LOG_CONN_RESTORED, LOG_INFO, "%s:%d: connection restored", c->host,
                c->port);
}

static void ready(struct conn *c)
{
    ev_timer_stop(c->loop, &c->deadline);
    backoff_reset(&c->backoff); /* the next failure starts again from min_ms */
    if (c->ever_ready) {
        c->reconnects++;
        say_restored(c);
    }
    c->ever_ready = 1;
    c->last_err = 0;
    c->state = CONN_READY;
    c->on_up(c->arg);
}

void conn_refused(struct conn *c, const char *cmd, const char *words)
{
    char what[sizeof c->why];

    if (c->state == CONN_DOWN || c->state == CONN_CLOSED)
        return;
    snprintf(what, sizeof what, "%s: %s", cmd, words);
    note_why(c, what);
    conn_fail(c, conn_refusal(words));
}

/* A reply read during SETUP: the AUTH's and the PING's are ours (an error
 * fails the attempt; the PING's answer ends SETUP), the user's set-up
 * replies between them are the user's. */
static void setup_reply(struct conn *c, redisReply *reply)
{
    if (!c->setup_auth && c->setup_user) {
        c->setup_user--;
        c->on_reply(c->arg, reply);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        conn_refused(c, c->setup_auth ? "AUTH" : "PING", reply->str);
    } else if (c->setup_auth) {
        c->setup_auth = 0;
    } else {
        ready(c); /* the PING's PONG */
    }
}

/* What the reader could not parse.  The first answer on a connection:
 * the server does not speak RESP (an HTTP server answers "HTTP/1.1 400"),
 * which no wait mends: LW_EPROTO, with what it said.  Later: the stream
 * is out of step, the connection is lost. */
static void not_resp(struct conn *c, const redisReader *r)
{
    char what[sizeof c->why];

    if (c->got_reply) {
        snprintf(what, sizeof what, "a reply that does not parse: %.120s", r->errstr);
        note_why(c, what);
        conn_fail(c, LW_ECONNLOST);
        return;
    }
    snprintf(what, sizeof what, "not a Redis server? It answered \"%s\" (%.80s)", c->heard,
             r->errstr);
    note_why(c, what);
    conn_fail(c, LW_EPROTO);
}

/* The first bytes a connection reads, kept as a line of printable
 * characters (the rest cut): what a server that does not speak RESP
 * answered. */
static void hear(struct conn *c, const char *buf, size_t n)
{
    size_t at = 0;

    while (at < n && at < sizeof c->heard - 1 && buf[at] != '\r' && buf[at] != '\n') {
        unsigned char ch = (unsigned char)buf[at];

        c->heard[at++] = ch >= ' ' && ch <= '~' ? (char)ch : '?';
    }
    c->heard[at] = 0;
}

/* Hand every complete reply read so far to its reader, in order. */
static void dispatch_replies(struct conn *c, redisReader *r)
{
    void *reply;

    while (c->reader == r) {
        if (redisReaderGetReply(r, &reply) != REDIS_OK) {
            not_resp(c, r);
            return;
        }
        if (!reply)
            return;
        c->got_reply = 1;
        if (c->state == CONN_SETUP)
            setup_reply(c, reply);
        else
            c->on_reply(c->arg, reply);
        replies_done(r);
    }
}

/* The server closed (how: "closed", or the socket's error) the
 * connection.  Before it answered anything on it, that is a refusal, not a
 * connection lost: a TLS port spoken to in plain text closes so, and a
 * TLS 1.3 server refusing the client's certificate, whose alert the
 * reset of closing on an unread command often loses (tls_refusal_hint()). */
static void closed_by_server(struct conn *c, const char *how)
{
    char what[sizeof c->why];
    const char *hint = is_tls(c) ? tls_refusal_hint(&c->tls) : NULL;

    if (c->state != CONN_SETUP || c->got_reply) {
        note_why(c, how);
        conn_fail(c, LW_ECONNLOST);
    } else if (hint) {
        snprintf(what, sizeof what, "%.100s right after the TLS handshake: %s", how, hint);
        note_why(c, what);
        conn_fail(c, LW_ETLS);
    } else {
        snprintf(what, sizeof what, "%.100s, before it answered anything%s", how,
                 is_tls(c) ? "" : " (a TLS port? TLS is off)");
        note_why(c, what);
        conn_fail(c, LW_ECONNECT);
    }
}

/* A TLS read or write failed with err (why said): a TLS failure during
 * the handshake or the set-up, a lost connection once set up; closed or
 * reset, as closed_by_server() says. */
static void tls_failed(struct conn *c, int err)
{
    char saved[sizeof c->why];

    memcpy(saved, c->why, sizeof saved);
    if (err == LW_ECONNLOST) {
        closed_by_server(c, saved);
        return;
    }
    if (err == LW_ETLS && c->state == CONN_READY) {
        snprintf(c->why, sizeof c->why, "TLS: %.*s", (int)sizeof c->why - 6, saved);
        err = LW_ECONNLOST;
    }
    conn_fail(c, err);
}

/* Read once (plain), or until OpenSSL wants more bytes (TLS), feeding the
 * reader.  1 when something was read, 0 when nothing more, -1 when the
 * connection failed. */
static int read_some(struct conn *c)
{
    char buf[READ_CHUNK];
    ssize_t n;

    if (!is_tls(c)) {
        n = read(c->fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0) {
            closed_by_server(c, n ? strerror(errno) : "closed by the server");
            return -1;
        }
    } else {
        n = tls_read(&c->tls, buf, sizeof buf, c->why, sizeof c->why);
        if (n == TLS_WANT_READ)
            return 0;
        if (n == TLS_WANT_WRITE) {
            c->read_wants_write = 1;
            ev_io_start(c->loop, &c->wio);
            return 0;
        }
        if (n < 0) {
            tls_failed(c, (int)n);
            return -1;
        }
    }
    if (n == 0) {
        closed_by_server(c, "closed by the server");
        return -1;
    }
    if (!c->got_reply && !c->heard[0])
        hear(c, buf, (size_t)n);
    if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
        conn_fail(c, LW_ENOMEM);
        return -1;
    }
    return 1;
}

static void read_and_dispatch(struct conn *c)
{
    redisReader *r = c->reader;
    int more;

    c->reading = 1;
    do {
        /* TLS: OpenSSL may hold more than it gave (read-ahead), which
         * the socket's readiness will not tell; plain: the next event. */
        more = read_some(c) > 0 && is_tls(c) && tls_pending(&c->tls);
        dispatch_replies(c, r);
    } while (more && c->reader == r);
    c->reading = 0;
    if (c->dead_reader) {
        replies_reader_free(c->dead_reader);
        c->dead_reader = NULL;
    }
}

/* Write what is buffered; wait for room (the write watcher) only when the
 * socket took less than all of it. */
static void write_out(struct conn *c)
{
    size_t done = 0, len = sdslen(c->out);
    ssize_t n = 0;

    c->unflushed = 0;
    c->write_wants_read = 0;
    /* TLS writes a record (16 kB at most) per call: what was written is
     * cut off the buffer once, at the end, not after each call. */
    while (done < len) {
        if (is_tls(c))
            n = tls_write(&c->tls, c->out + done, len - done, c->why, sizeof c->why);
        else if ((n = send(c->fd, c->out + done, len - done, MSG_NOSIGNAL)) < 0)
            n = errno == EAGAIN || errno == EINTR ? TLS_WANT_WRITE : -errno;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    sdsrange(c->out, (ssize_t)done, -1);
    if (done == len) {
        ev_io_stop(c->loop, &c->wio);
    } else if (n == TLS_WANT_WRITE) {
        ev_io_start(c->loop, &c->wio);
    } else if (n == TLS_WANT_READ) { /* the read watcher retries it */
        c->write_wants_read = 1;
        ev_io_stop(c->loop, &c->wio);
    } else if (is_tls(c)) {
        tls_failed(c, n == LW_ETLS ? LW_ETLS : LW_ECONNLOST);
    } else {
        note_why(c, strerror((int)-n));
        conn_fail(c, LW_ECONNLOST);
    }
}

static int append(struct conn *c, const char *cmd, size_t len)
{
    sds grown = sdscatlen(c->out, cmd, len);

    if (!grown)
        return -1;
    c->out = grown;
    c->unflushed = 1;
    return 0;
}

/* The connection is up (TCP, and TLS if asked): pipeline AUTH, the user's
 * set-up and PING.  Out of memory, the deadline ends the attempt. */
static void start_setup(struct conn *c)
{
    c->state = CONN_SETUP; /* the deadline runs on from CONNECTING */
    c->setup_auth = 0;
    c->setup_user = 0;
    c->ping_sent = 0;
    if (c->auth_cmd && append(c, c->auth_cmd, c->auth_len) == 0)
        c->setup_auth = 1;
    if (c->on_setup)
        c->on_setup(c->arg);
    if (c->fd >= 0 && append(c, ping_cmd, sizeof ping_cmd - 1) == 0)
        c->ping_sent = 1;
    ev_io_start(c->loop, &c->rio);
    if (c->fd >= 0)
        write_out(c);
}

/* A handshake step: done, or wait for the direction OpenSSL asks for. */
static void handshake(struct conn *c)
{
    int rc = tls_handshake(&c->tls, c->why, sizeof c->why);

    if (rc == 0) {
        ev_io_stop(c->loop, &c->wio);
        start_setup(c);
    } else if (rc == TLS_WANT_READ) {
        ev_io_stop(c->loop, &c->wio);
        ev_io_start(c->loop, &c->rio);
    } else if (rc == TLS_WANT_WRITE) {
        ev_io_stop(c->loop, &c->rio);
        ev_io_start(c->loop, &c->wio);
    } else {
        went_down(c, rc);
    }
}

/* The TLS files changed on disk and do not load (tls_start() said why):
 * the connection goes on with the previous ones, so nothing else would
 * tell.  Recorded as LW_ETLS and logged as a warning, once per change of
 * the files (tls.c tries them again only when they change again). */
static void report_reload(struct conn *c)
{
    report_at(c, LW_ETLS, LOG_TLS_FILES, LOG_WARN);
    c->why[0] = 0; /* not this attempt's failure, should it fail */
}

/* Writable while CONNECTING: the connect is over; SO_ERROR says how. */
static void connected(struct conn *c)
{
    int rc = socket_connected(c->fd, c->why, sizeof c->why);

    if (!rc && is_tls(c)) {
        rc = tls_start(c->ep->tls_ctx, &c->tls, c->fd, c->host, c->why, sizeof c->why);
        if (!rc && c->why[0])
            report_reload(c);
    }
    if (rc) {
        went_down(c, rc);
        return;
    }
    ev_io_stop(c->loop, &c->wio);
    if (is_tls(c)) {
        c->state = CONN_HANDSHAKE; /* the deadline runs on */
        handshake(c);
    } else {
        start_setup(c);
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->state == CONN_HANDSHAKE) {
        handshake(c);
        return;
    }
    if (c->write_wants_read) {
        write_out(c);
        if (c->fd < 0)
            return;
    }
    read_and_dispatch(c);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->state == CONN_CONNECTING) {
        connected(c);
    } else if (c->state == CONN_HANDSHAKE) {
        handshake(c);
    } else if (c->read_wants_write) {
        c->read_wants_write = 0;
        ev_io_stop(c->loop, &c->wio);
        read_and_dispatch(c);
        if (c->fd >= 0 && sdslen(c->out))
            write_out(c);
    } else {
        write_out(c);
    }
}

/* Connect to host:port from now on (port 0: the unix socket at host).
 * Out of memory, the old address stays; its ROLE check tells. */
static void set_address(struct conn *c, const char *host, int port)
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
static int pick_address(struct conn *c)
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

int conn_is_at(const struct conn *c, const char *host, int port)
{
    if (port == 0)
        return c->unix_path && !strcmp(c->unix_path, host);
    return c->host && !c->unix_path && c->port == port && !strcmp(c->host, host);
}

void conn_address(const struct conn *c, const char **host, int *port)
{
    *host = c->unix_path ? c->unix_path : c->host;
    *port = c->unix_path ? 0 : c->port;
}

int conn_held(const struct conn *c)
{
    return c->state == CONN_DOWN && !ev_is_active(&c->retry);
}

/* The socket connecting (rc 0: else rc, its failure) gets its reader,
 * its buffer, and a watch for the connect's end: 0, or LW_E*. */
static int stream_opened(struct conn *c, int rc)
{
    if (rc)
        return rc;
    c->reader = replies_reader_new();
    c->out = sdsempty();
    if (!c->reader || !c->out) {
        note_why(c, lw_strerror(LW_ENOMEM));
        return LW_ENOMEM;
    }
    ev_io_set(&c->rio, c->fd, EV_READ);
    ev_io_set(&c->wio, c->fd, EV_WRITE);
    ev_io_start(c->loop, &c->wio);
    return 0;
}

/* The host name's lookup answered (on the loop's thread): connect to its
 * addresses, or the attempt failed as the lookup says. */
static void on_resolved(void *arg, int err, struct addrinfo *all, const char *why)
{
    struct conn *c = arg;

    c->lookup = NULL;
    if (err) {
        note_why(c, why);
    } else {
        err = stream_opened(c, socket_open_addrs(all, &c->fd, c->why, sizeof c->why));
        freeaddrinfo(all);
    }
    if (err)
        went_down(c, err);
}

/* Start a new attempt's socket: at once to a unix socket or a numeric
 * address; to a name once its lookup, started here, answers
 * (on_resolved).  0, or LW_E*. */
static int open_stream(struct conn *c)
{
    struct addrinfo *all;
    int rc;

    if (c->unix_path)
        return stream_opened(c, socket_open_unix(c->unix_path, &c->fd, c->why, sizeof c->why));
    rc = resolve_numeric(c->host, c->port, &all);
    if (rc == 1)
        return resolve_start(&c->lookup, c->loop, c->ep->resolve, c->host, c->port, on_resolved,
                             c, c->why, sizeof c->why);
    if (rc) {
        note_why(c, lw_strerror(rc));
        return rc;
    }
    rc = socket_open_addrs(all, &c->fd, c->why, sizeof c->why);
    freeaddrinfo(all);
    return stream_opened(c, rc);
}

void conn_connect(struct conn *c)
{
    int err;

    if (c->state == CONN_CLOSED)
        return;
    ev_timer_stop(c->loop, &c->retry);
    if (c->state != CONN_DOWN) /* an attempt is under way already */
        return;
    if (pick_address(c))
        return; /* held: the user calls again once it knows where */
    c->state = CONN_CONNECTING;
    c->why[0] = 0;
    c->heard[0] = 0;
    c->got_reply = 0;
    ev_prepare_start(c->loop, &c->flush);
    ev_timer_set(&c->deadline, c->ep->connect_timeout_ms / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->deadline); /* the lookup counts too */
    if ((err = open_stream(c)))
        went_down(c, err);
}

/* A user's command is appended: count it when its reply comes during
 * SETUP, before the PING's. */
static int sent(struct conn *c, int rc)
{
    if (rc)
        return LW_ECONNLOST;
    if (c->state == CONN_SETUP && !c->ping_sent)
        c->setup_user++;
    return 0;
}

static int can_send(const struct conn *c)
{
    return c->fd >= 0 && (c->state == CONN_SETUP || c->state == CONN_READY);
}

int conn_send(struct conn *c, const char *cmd, size_t len)
{
    if (!can_send(c))
        return LW_ECONNLOST;
    return sent(c, append(c, cmd, len));
}

int conn_send_argv(struct conn *c, int argc, const char **argv, const size_t *lens)
{
    char *cmd;
    int n, rc;

    if (!can_send(c))
        return LW_ECONNLOST;
    if ((n = redisFormatCommandArgv(&cmd, argc, argv, lens)) < 0)
        return LW_ENOMEM;
    rc = append(c, cmd, (size_t)n);
    redisFreeCommand(cmd);
    return sent(c, rc);
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
    struct conn *c = w->data;

    (void)loop;
    (void)revents;
    if (c->unflushed && can_send(c) && !ev_is_active(&c->wio) && !c->write_wants_read)
        write_out(c); /* may fail the connection */
}

/* The connect, handshake and set-up took too long.  A handshake that got
 * no answer is a TLS failure: a plain server waits for a line that a TLS
 * greeting never ends.  A lookup that got no answer fails as a name whose
 * DNS does not answer always did (getaddrinfo()'s EAI_AGAIN, in the end):
 * LW_ECONNECT. */
static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = w->data;
    char what[sizeof c->why];
    int handshaking = c->state == CONN_HANDSHAKE;

    (void)loop;
    (void)revents;
    if (c->lookup) {
        snprintf(what, sizeof what, "the host name's lookup took over %u ms",
                 c->ep->connect_timeout_ms);
        note_why(c, what);
        conn_fail(c, LW_ECONNECT);
        return;
    }
    snprintf(what, sizeof what, "%s took over %u ms%s",
             handshaking ? "the TLS handshake" : "connect and set-up", c->ep->connect_timeout_ms,
             handshaking ? " (not a TLS port?)" : "");
    note_why(c, what);
    conn_fail(c, handshaking ? LW_ETLS : LW_ETIMEDOUT);
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

int conn_init(struct conn *c, const struct conn_config *cfg)
{
    const struct endpoint *ep = cfg->ep;
    int failed = 0;

    memset(c, 0, sizeof *c);
    c->ep = ep;
    c->fd = -1;
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

void conn_drop(struct conn *c)
{
    if (c->state == CONN_CLOSED)
        return;
    ev_timer_stop(c->loop, &c->deadline);
    ev_timer_stop(c->loop, &c->retry);
    drop_stream(c);
    c->state = CONN_DOWN; /* held (conn_held()) until conn_connect() */
}

void conn_close(struct conn *c)
{
    if (c->loop) {
        ev_timer_stop(c->loop, &c->deadline);
        ev_timer_stop(c->loop, &c->retry);
        ev_prepare_stop(c->loop, &c->flush);
        drop_stream(c);
    }
    c->state = CONN_CLOSED;
}

void conn_clear(struct conn *c)
{
    tls_forget(&c->tls);
    free(c->host);
    free(c->unix_path);
    redisFreeCommand(c->auth_cmd);
    c->host = c->unix_path = c->auth_cmd = NULL;
}
