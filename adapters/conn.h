/*
 * adapters/conn.h - one Redis connection to one address, on a libev loop:
 * what the engine's command link (link.c), the subscriber (subscriber.c)
 * and the topologies' own connections are built on.
 *
 * Life of a connection:
 *
 *   DOWN --connect--> CONNECTING --TCP up--> HANDSHAKE --TLS up--> SETUP
 *     ^                    |       (TLS only)   |                    |
 *     |                    |                    |     PING answered  v
 *     +---- back-off <-----+--- refused, TLS ---+---- error, --- READY
 *           (backoff.h)         failure,            deadline, EOF
 *                               deadline
 *
 * CONNECTING starts with the host name's lookup when the address is a
 * name (resolve.h: on a thread of its own, so that a slow DNS answer holds
 * up this connection only, never the loop); a numeric address or a unix
 * socket connects at once.
 *
 * SETUP pipelines AUTH (with a password or a user name), the user's own
 * set-up commands (on_setup) and a PING; the PING's reply makes the
 * connection READY, so the user's set-up has been answered by then.  One
 * deadline, the connect timeout, covers CONNECTING, HANDSHAKE and SETUP
 * together, the lookup included.  Any failure closes the socket (or gives
 * the lookup up) and tries again after the back-off.
 *
 * Everything a connection needs to know of where and how comes from its
 * endpoint (endpoint.h): credentials, timeouts, back-off, TLS.  The I/O is
 * our own: a non-blocking socket (socket.c), TLS over it when the
 * endpoint says (tls.c), two libev io watchers, an output buffer, and
 * hiredis's reader to parse.  Every reply, pub/sub pushes of any kind
 * included, goes to on_reply in the order read; the user pairs replies
 * with its commands itself.  (hiredis 0.14's async API aborts on a push it
 * has no callback for, such as a sharded "smessage", and has no TLS.)
 *
 * Why a connection failed is kept (conn_why()) and, when the endpoint has
 * a report, recorded there with the address.
 *
 * A connection knows nothing of engines, wheels, topologies or requests:
 * one object per address, all of it on the loop's thread (but for a
 * lookup's, which holds nothing of the connection's: resolve.h).
 */
#ifndef LW_ADAPTERS_CONN_H
#define LW_ADAPTERS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#include "backoff.h"
#include "endpoint.h"
#include "tls.h"

enum conn_state {
    CONN_DOWN,       /* waiting to (re)connect */
    CONN_CONNECTING, /* TCP/unix connect in progress */
    CONN_HANDSHAKE,  /* TLS handshake in progress */
    CONN_SETUP,      /* AUTH, the user's set-up, PING in flight */
    CONN_READY,      /* the user's commands flow */
    CONN_CLOSED,     /* conn_close() has run */
};

struct conn;

/* Connected, AUTH sent: send your own set-up commands (the PING follows).
 * It must not fail or close the connection. */
typedef void conn_setup_fn(void *arg);
/* SETUP is over: READY. */
typedef void conn_up_fn(void *arg);
/* The connection failed or was lost (err: LW_E*); the next attempt is
 * scheduled.  It may close the connection, not free it: the read loop
 * may still be running.  The same holds for every callback. */
typedef void conn_down_fn(void *arg, int err);
/* A reply to one of the user's commands, never NULL (a lost connection is
 * on_down), or a pub/sub push; in the order read.  Freed after the call. */
typedef void conn_reply_fn(void *arg, redisReply *reply);
/* Before each attempt: where to connect.  0 with *host and *port set (the
 * connection copies them; port 0: host is a unix socket's path), or 1 to
 * hold: no attempt, no callback, nothing scheduled, until the user calls
 * conn_connect() again (it knows the address later: Sentinel is being
 * asked). */
typedef int conn_where_fn(void *arg, const char **host, int *port);

struct conn_config {
    const struct endpoint *ep; /* credentials, timeouts, back-off; its
                                  address unless host is set.  It must
                                  outlive the connection */
    const char *host;          /* another address of the same deployment (a
                                  cluster node, a sentinel), or NULL */
    int port;                  /* with host; 0: host is a unix socket's path */
    struct ev_loop *loop;
    conn_setup_fn *on_setup; /* may be NULL */
    conn_up_fn *on_up;
    conn_down_fn *on_down;
    conn_reply_fn *on_reply;
    void *arg;
    conn_where_fn *where; /* may be NULL: always host:port */
    void *where_arg;
};

struct conn {
    const struct endpoint *ep;
    char *host; /* where it connects: a copy */
    char *unix_path;
    int port;
    char *auth_cmd; /* AUTH [<user>] <password>, formatted, or NULL */
    size_t auth_len;
    struct ev_loop *loop;
    conn_setup_fn *on_setup;
    conn_up_fn *on_up;
    conn_down_fn *on_down;
    conn_reply_fn *on_reply;
    void *arg;
    conn_where_fn *where;
    void *where_arg;

    struct resolve *lookup;   /* CONNECTING: the host name's lookup in
                                 flight (resolve.h), or NULL */
    int fd;                   /* the socket, or -1 */
    struct tls_conn tls;      /* with TLS: the session, and its SSL while
                                 connected */
    redisReader *reader;      /* parses what is read; NULL when down */
    redisReader *dead_reader; /* let go of inside the read loop: freed after */
    char *out;                /* what is to be written (an sds) */
    int reading;              /* inside the read loop */
    int read_wants_write;     /* TLS: a read waits for the socket to be
                                 writable */
    int write_wants_read;     /* TLS: a write waits for it to be readable */
    enum conn_state state;
    unsigned setup_auth; /* SETUP: the AUTH reply is still to come */
    unsigned setup_user; /* SETUP: the user's replies due before the PING's */
    int ping_sent;       /* SETUP: the PING is written */
    int got_reply;       /* a reply was read on this connection */
    int last_err;        /* why the last attempt failed; 0 while READY */
    int ever_ready;      /* a connection has been set up before */
    int unflushed;       /* commands appended since the last write */
    char why[200];       /* why the last attempt failed, in words */
    char heard[48];      /* SETUP: the first bytes read, for a server
                            whose answer does not parse (NUL-ended) */
    ev_io rio;           /* readable: replies */
    ev_io wio;           /* writable: the connect's end, or room for more */
    uint64_t reconnects; /* connections set up after the first */
    struct backoff backoff;
    ev_timer deadline; /* CONNECTING + HANDSHAKE + SETUP end in time */
    ev_timer retry;    /* the back-off */
    ev_prepare flush;  /* writes what this loop iteration appended */
};

/* conn_init - copy cfg (validated by the caller); no I/O yet.  Returns 0
 * or LW_ENOMEM; either way conn_clear() frees what was copied. */
int conn_init(struct conn *c, const struct conn_config *cfg);

/* conn_address - where c connects now: a host and port, or (port 0) a
 * unix socket's path.  For a second connection to the same node. */
void conn_address(const struct conn *c, const char **host, int *port);

/* conn_connect - start an attempt now: the first, or one held by the
 * where hook (a pending back-off is cut short). */
void conn_connect(struct conn *c);

/* conn_held - 1 when DOWN with no attempt scheduled: the where hook held
 * it, and only conn_connect() starts the next. */
int conn_held(const struct conn *c);

/* conn_is_at - 1 when the connection's address is host:port (port 0: the
 * unix socket at host). */
int conn_is_at(const struct conn *c, const char *host, int port);

/* conn_drop - let go of the connection at once, without on_down (the user
 * deals with what it had in flight), and start no new attempt: the node it
 * was on must not be heard from again (Sentinel named another master), and
 * the user first settles what it had there, then calls conn_connect().
 * Ignored when CLOSED. */
void conn_drop(struct conn *c);

/* conn_send - append a formatted command while SETUP (from on_setup) or
 * READY; its reply goes to on_reply.  Returns 0, or LW_ECONNLOST. */
int conn_send(struct conn *c, const char *cmd, size_t len);
int conn_send_argv(struct conn *c, int argc, const char **argv, const size_t *lens);

/* conn_fail - drop the connection for err and try again later (on_down
 * runs).  Ignored when DOWN or CLOSED. */
void conn_fail(struct conn *c, int err);

/* conn_close - drop the connection for good; no callback runs after.
 * Safe on a connection never connected. */
void conn_close(struct conn *c);

/* conn_clear - free what conn_init() copied (after conn_close()). */
void conn_clear(struct conn *c);

static inline int conn_is_ready(const struct conn *c)
{
    return c->state == CONN_READY;
}

/* The commands each set-up writes besides the user's: AUTH, PING. */
static inline unsigned conn_own_commands(const struct conn *c)
{
    return c->auth_cmd ? 2 : 1;
}

/*
 * Before the first connection has been set up, the reason the last
 * attempt failed when a wait will not mend it (nothing listens, no such
 * socket, the wrong password, a TLS failure, a server that closed the
 * connection before it answered anything, a set-up refusal that holds,
 * a server that does not speak RESP: conn_is_hard_failure()), else 0.
 * Once a connection has been up, failures are taken for a restart; and
 * the set-up refusals that may mend (LW_EREDIS: LOADING, BUSY, ...) keep
 * the wait.
 */
int conn_fails_at_once(const struct conn *c);

/* conn_is_hard_failure - err is one that waiting will not mend (before a
 * first connection): LW_ECONNREFUSED, LW_ECONNECT, LW_ETLS, LW_EPROTO,
 * and the set-up refusals conn_refusal() names final. */
int conn_is_hard_failure(int err);

/* conn_why - why the last attempt failed, in words ("" before one did). */
const char *conn_why(const struct conn *c);

/* Reply errors that mean the password is wrong or missing. */
int conn_is_auth_error(const char *msg);

/*
 * conn_refusal - the code of a set-up command's error reply, by Redis's
 * words.  Final (a wait will not mend it; an operator must): LW_ENOPERM
 * (NOPERM: the user's ACL), LW_EAUTH (a wrong or missing password),
 * LW_ENODB (SELECT: no such DB index, or a cluster node's "only DB 0"),
 * LW_ENOTSUP (an unknown command or subcommand).  Anything else is
 * LW_EREDIS, which may mend: LOADING, BUSY, MASTERDOWN, OOM, "max number
 * of clients reached", and what we do not know.
 */
int conn_refusal(const char *words);

/* conn_refused - the set-up command cmd ("SELECT 3", "SCRIPT LOAD") was
 * answered with the error words: the attempt fails with conn_refusal()'s
 * code, why being "cmd: words".  Ignored when DOWN or CLOSED. */
void conn_refused(struct conn *c, const char *cmd, const char *words);

#endif
