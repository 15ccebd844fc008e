/*
 * adapters/tls.h - TLS on a connection's socket (OpenSSL 3).
 *
 * Two objects.  An endpoint's TLS (struct tls) holds its settings and
 * the OpenSSL context made from them, made on first use and made again
 * when the files it was made from change on disk (a certificate rotation):
 * connections made after see the new files, those already up keep theirs.
 * A connection's TLS (struct tls_conn) is its OpenSSL session object while
 * connected, and the session it may resume on its next connect.
 *
 * Everything is non-blocking on the loop: the handshake and every read and
 * write return TLS_WANT_READ or TLS_WANT_WRITE when the socket must become
 * readable or writable first, whichever direction the call itself was
 * going (OpenSSL may need to write while reading and the reverse: the
 * caller retries the same call when the socket is ready as asked).
 *
 * Failures are LW_ETLS (a handshake refused, a certificate not trusted, a
 * protocol error; why says OpenSSL's reason, e.g. "certificate verify
 * failed: unable to get local issuer certificate") or LW_ECONNLOST (the
 * peer closed or reset the connection).  Built without TLS (-Dtls=disabled)
 * every call is LW_ENOTSUP.
 */
#ifndef LW_ADAPTERS_TLS_H
#define LW_ADAPTERS_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <leasewheel/tls.h>

#define TLS_WANT_READ (-1000)  /* retry once the socket is readable */
#define TLS_WANT_WRITE (-1001) /* retry once the socket is writable */

struct tls;

/* One connection's TLS. */
struct tls_conn {
    void *ssl;            /* SSL *, while connected */
    void *session;        /* SSL_SESSION * to resume, or NULL */
    uint64_t session_gen; /* the context generation it came from */
    uint64_t ssl_gen;     /* the generation ssl was made with */
    int offered;          /* the handshake under way offers session */
    int no_resume;        /* the server refused a session: offer none */
    uint64_t handshakes;  /* handshakes done */
    uint64_t resumed;     /* of which resumed a session */
};

/* tls_available - 1 when built with TLS. */
int tls_available(void);

/* tls_new - an endpoint's TLS, from cfg (copied; nothing is loaded
 * yet).  0, LW_ENOMEM, LW_ENOTSUP. */
int tls_new(const struct lw_tls_config *cfg, struct tls **out);

/* tls_free - after every connection using it let go of its session. */
void tls_free(struct tls *t);

/*
 * tls_start - begin the handshake on connected socket fd to host (the
 * name verified unless the config names another, and sent as SNI when it
 * is no IP address): loads or reloads the context when its files changed,
 * and resumes tc's session when it came from the same context.  0 (then
 * tls_handshake()), or LW_ETLS / LW_ENOMEM with why.  0 with why not empty:
 * the files changed and do not load (a key that does not match, a file
 * half-written), so the previous context is used; said by the first
 * connection after each change only, for the caller to report.
 */
int tls_start(struct tls *t, struct tls_conn *tc, int fd, const char *host, char *why,
              size_t n);

/* tls_handshake - go on with it: 0 when done, TLS_WANT_READ,
 * TLS_WANT_WRITE, or LW_ETLS / LW_ECONNLOST with why. */
int tls_handshake(struct tls_conn *tc, char *why, size_t n);

/* tls_read, tls_write - as read() and write(): the bytes moved, 0 (read:
 * the peer closed cleanly), TLS_WANT_READ, TLS_WANT_WRITE, or LW_ETLS /
 * LW_ECONNLOST with why.  tls_write() may write less than len; it must be
 * called again with at least the bytes it did not take, at the same place
 * in the stream. */
ssize_t tls_read(struct tls_conn *tc, char *buf, size_t len, char *why, size_t n);

/* tls_pending - 1 when OpenSSL holds bytes it read from the socket that
 * tls_read() has not returned yet: the socket's readiness will not say so,
 * so read again before waiting for it. */
int tls_pending(const struct tls_conn *tc);

ssize_t tls_write(struct tls_conn *tc, const char *buf, size_t len, char *why, size_t n);

/* tls_refusal_hint - why a connection closed or reset after its
 * handshake, before any reply, most likely was, or NULL.  A TLS 1.3
 * server checks the client's certificate after the client has finished
 * its handshake and sent its first command; refusing it, the server sends
 * an alert and closes, and the reset that closing on an unread command
 * causes often loses the alert. */
const char *tls_refusal_hint(const struct tls_conn *tc);

/* tls_stop - the connection is over: free its SSL (the session, if any,
 * is kept for the next connect). */
void tls_stop(struct tls_conn *tc);

/* tls_forget - tls_stop(), and drop the session too (the next connect goes
 * elsewhere, or the connection is being freed). */
void tls_forget(struct tls_conn *tc);

/* tls_refused - the attempt failed with LW_ETLS: tls_forget(), and 1 when
 * its handshake had offered a session.  Some servers fail a handshake that
 * offers one instead of ignoring it (Redis with tls-session-caching no and
 * client certificates required: an "internal error" alert); sessions are
 * then no longer kept or offered on tc, and the caller may try again at
 * once, with a full handshake. */
int tls_refused(struct tls_conn *tc);

#endif
