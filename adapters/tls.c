/*
 * adapters/tls.c - TLS on a connection's socket, with OpenSSL 3 (see
 * tls.h): the library hiredis, libvalkey and redis-server itself use.
 *
 * Verification.  By default the server's chain is checked against the
 * configured CAs (or the system's trust store) and its name against the
 * host connected to: SSL_set1_host() for a name, the IP SANs for an
 * address (X509_VERIFY_PARAM_set1_ip_asc()).  hiredis's TLS checks the
 * chain only.  A name is also sent as SNI; an address never is (RFC 6066).
 *
 * Rotation.  The context is made from the files on first use and made
 * again when one of them changes: before each handshake the files' inode,
 * size and change times are compared with those the context was made
 * from (a few stat() calls per connection attempt, nothing per request).
 * A reload that fails (a file half-written, a key that does not match)
 * keeps the previous context and says why; it is tried again only when
 * the files change again.  Each context has a generation; a session is
 * resumed only on the generation it came from, so that a server whose
 * CA changed is verified afresh.
 *
 * Sessions.  A reconnect offers the server the session its connection had
 * last, so that it need not do a full handshake (redis-server caches
 * sessions by default).  TLS 1.3 sends its tickets after the handshake, so
 * they are taken from OpenSSL's new-session callback, into the
 * connection's struct tls_conn (SSL_set_app_data), not read back once.  A
 * caller's own SSL_CTX is not changed: its connections do not resume.
 * A server that fails a handshake for the session offered to it (Redis
 * with tls-session-caching no and client certificates required answers
 * with an "internal error" alert) is offered none again by that
 * connection, which tries again at once (tls_refused()).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/error.h>

#include "tls.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* What a file looked like when the context was made from it. */
struct stamp {
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

enum { F_CA,
       F_CA_DIR,
       F_CERT,
       F_KEY,
       F_COUNT };

struct tls {
    struct lw_tls_config cfg;     /* the strings our own */
    SSL_CTX *ctx;                 /* in use, NULL until made */
    uint64_t generation;          /* contexts made so far */
    struct stamp made[F_COUNT];   /* the files ctx was made from */
    struct stamp failed[F_COUNT]; /* the files the last failed reload saw */
    int have_failed;
};

int tls_available(void)
{
    return 1;
}

static const char *file_of(const struct tls *t, int f)
{
    const char *files[F_COUNT] = {t->cfg.ca_file, t->cfg.ca_dir, t->cfg.cert_file,
                                  t->cfg.key_file};

    return files[f];
}

static void stamp_files(const struct tls *t, struct stamp *out)
{
    for (int f = 0; f < F_COUNT; f++) {
        const char *path = file_of(t, f);
        struct stat st;

        memset(&out[f], 0, sizeof out[f]);
        if (!path || stat(path, &st) < 0)
            continue;
        out[f].exists = 1;
        out[f].dev = st.st_dev;
        out[f].ino = st.st_ino;
        out[f].size = st.st_size;
        out[f].mtime = st.st_mtim;
        out[f].ctime = st.st_ctim;
    }
}

static int same_stamps(const struct stamp *a, const struct stamp *b)
{
    return memcmp(a, b, F_COUNT * sizeof *a) == 0;
}

/* OpenSSL's reason for what failed, emptying its error queue: a system
 * error's own text where there is one (a file that would not open is a
 * system error under an X509 "system lib"), else the last error's, or
 * with `cause` the first's (loading a file, the later ones wrap it: "PEM
 * lib" after "bad end line"). */
static void ssl_reason_of(char *why, size_t n, const char *what, int cause)
{
    unsigned long e, sys = 0, first = 0, last = 0;
    const char *reason = NULL;

    while ((e = ERR_get_error())) {
        if (ERR_SYSTEM_ERROR(e))
            sys = e;
        else if (!first)
            first = last = e;
        else
            last = e;
    }
    if (sys)
        reason = strerror(ERR_GET_REASON(sys));
    else if (last)
        reason = ERR_reason_error_string(cause ? first : last);
    snprintf(why, n, "%s%s%s", what, what[0] ? ": " : "", reason ? reason : "failed");
}

static void ssl_reason(char *why, size_t n, const char *what)
{
    ssl_reason_of(why, n, what, 0);
}

static int keep_session(SSL *ssl, SSL_SESSION *session);

/* A new context from the files; NULL with why. */
static SSL_CTX *make_ctx(const struct tls *t, char *why, size_t n)
{
    const struct lw_tls_config *c = &t->cfg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char what[300];

    if (!ctx) {
        ssl_reason(why, n, "");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, c->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, keep_session);
    what[0] = 0;
    if (c->ca_file || c->ca_dir) {
        if (!SSL_CTX_load_verify_locations(ctx, c->ca_file, c->ca_dir))
            snprintf(what, sizeof what, "loading the CAs %s%s%s", c->ca_file ? c->ca_file : "",
                     c->ca_file && c->ca_dir ? ", " : "", c->ca_dir ? c->ca_dir : "");
    } else if (!SSL_CTX_set_default_verify_paths(ctx)) {
        snprintf(what, sizeof what, "loading the system's CAs");
    }
    if (!what[0] && c->cert_file && !SSL_CTX_use_certificate_chain_file(ctx, c->cert_file))
        snprintf(what, sizeof what, "loading the certificate %s", c->cert_file);
    if (!what[0] && c->key_file &&
        (!SSL_CTX_use_PrivateKey_file(ctx, c->key_file, SSL_FILETYPE_PEM) ||
         !SSL_CTX_check_private_key(ctx)))
        snprintf(what, sizeof what, "loading the key %s", c->key_file);
    if (what[0]) {
        ssl_reason_of(why, n, what, 1);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The context to use now, made again when its files changed.  NULL with
 * why when none could be made.  A failed reload keeps the previous one,
 * says why (only then: the caller reports it once per change of the
 * files) and is not tried again until the files change again. */
static SSL_CTX *current_ctx(struct tls *t, char *why, size_t n)
{
    struct stamp now[F_COUNT];
    char reason[256];
    SSL_CTX *ctx;

    if (t->cfg.ssl_ctx)
        return t->cfg.ssl_ctx;
    stamp_files(t, now);
    if (t->ctx && same_stamps(now, t->made))
        return t->ctx;
    if (t->have_failed && same_stamps(now, t->failed) && t->ctx)
        return t->ctx;
    if (!(ctx = make_ctx(t, reason, sizeof reason))) {
        memcpy(t->failed, now, sizeof now);
        t->have_failed = 1;
        snprintf(why, n, "%s%s", t->ctx ? "TLS files not reloaded, the previous ones kept: " : "",
                 reason);
        return t->ctx;
    }
    SSL_CTX_free(t->ctx); /* connections made with it hold their own reference */
    t->ctx = ctx;
    t->generation++;
    t->have_failed = 0;
    memcpy(t->made, now, sizeof now);
    return ctx;
}

/* OpenSSL's new-session callback: a session (a TLS 1.3 ticket comes after
 * the handshake) to offer on the connection's next connect. */
static int keep_session(SSL *ssl, SSL_SESSION *session)
{
    struct tls_conn *tc = SSL_get_app_data(ssl);

    if (!tc || tc->no_resume)
        return 0;
    if (tc->session)
        SSL_SESSION_free(tc->session);
    tc->session = session;
    tc->session_gen = tc->ssl_gen;
    return 1; /* ours now */
}

static int is_ip_address(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* Which name the server's certificate must carry, and SNI. */
static int name_server(const struct tls *t, SSL *ssl, const char *host)
{
    const char *name = t->cfg.server_name ? t->cfg.server_name : host;
    int ip = is_ip_address(name);

    if (!ip && !SSL_set_tlsext_host_name(ssl, name))
        return 0;
    if (t->cfg.insecure) {
        SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
        return 1;
    }
    return ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
              : SSL_set1_host(ssl, name) == 1;
}

int tls_start(struct tls *t, struct tls_conn *tc, int fd, const char *host, char *why,
              size_t n)
{
    SSL_CTX *ctx;
    SSL *ssl;
    int reused = t->cfg.ssl_ctx == NULL;

    ERR_clear_error();
    why[0] = 0;
    if (!(ctx = current_ctx(t, why, n)))
        return LW_ETLS;
    if (!(ssl = SSL_new(ctx)))
        return LW_ENOMEM;
    /* A server that closes without close_notify (a restart) is a lost
     * connection, not a TLS failure. */
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
    /* conn.c's writes: a retried write may come from a grown (moved)
     * buffer, and a part written counts.  Set on each SSL, not only on
     * our contexts, so that a caller's SSL_CTX works the same. */
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read what the socket has in one read(), not a record header and a
     * body at a time: replies come as many small records. */
    SSL_set_read_ahead(ssl, 1);
    if (!SSL_set_fd(ssl, fd) || !name_server(t, ssl, host)) {
        ssl_reason(why, n, "setting up the connection");
        SSL_free(ssl);
        return LW_ETLS;
    }
    SSL_set_connect_state(ssl);
    SSL_set_app_data(ssl, tc);
    tc->offered = reused && !tc->no_resume && tc->session && tc->session_gen == t->generation;
    if (tc->offered)
        SSL_set_session(ssl, tc->session);
    tc->ssl = ssl;
    tc->ssl_gen = t->generation;
    return 0;
}

/* Why the last call on tc's SSL returned r (<= 0). */
static int io_error(struct tls_conn *tc, int r, char *why, size_t n)
{
    int saved = errno;
    unsigned long e;

    switch (SSL_get_error(tc->ssl, r)) {
    case SSL_ERROR_WANT_READ: return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(why, n, "closed by the server");
        return LW_ECONNLOST;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error())
            break;
        snprintf(why, n, "%s", saved ? strerror(saved) : "closed by the server");
        return LW_ECONNLOST;
    default: break;
    }
    e = ERR_peek_last_error();
    if (ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        snprintf(why, n, "certificate verify failed: %s",
                 X509_verify_cert_error_string(SSL_get_verify_result(tc->ssl)));
        return LW_ETLS;
    }
    ssl_reason(why, n, "");
    if (ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
        ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG)
        snprintf(why + strlen(why), n - strlen(why), " (not a TLS port?)");
    return LW_ETLS;
}

int tls_handshake(struct tls_conn *tc, char *why, size_t n)
{
    int r;

    ERR_clear_error();
    if ((r = SSL_connect(tc->ssl)) == 1) {
        tc->offered = 0;
        tc->handshakes++;
        tc->resumed += SSL_session_reused(tc->ssl) == 1;
        return 0;
    }
    r = io_error(tc, r, why, n);
    if (r == LW_ECONNLOST) /* during the handshake: refused by the server */
        snprintf(why + strlen(why), n - strlen(why), " during the TLS handshake");
    return r == LW_ECONNLOST ? LW_ETLS : r;
}

ssize_t tls_read(struct tls_conn *tc, char *buf, size_t len, char *why, size_t n)
{
    int r;

    ERR_clear_error();
    if ((r = SSL_read(tc->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len))) > 0)
        return r;
    if (SSL_get_error(tc->ssl, r) == SSL_ERROR_ZERO_RETURN)
        return 0;
    return io_error(tc, r, why, n);
}

int tls_pending(const struct tls_conn *tc)
{
    return SSL_has_pending(tc->ssl);
}

const char *tls_refusal_hint(const struct tls_conn *tc)
{
    if (!tc->ssl || SSL_version(tc->ssl) != TLS1_3_VERSION)
        return NULL;
    return SSL_get_certificate(tc->ssl)
               ? "the server refused this client: its client certificate not trusted?"
               : "the server refused this client: a client certificate required? (none "
                 "was sent)";
}

ssize_t tls_write(struct tls_conn *tc, const char *buf, size_t len, char *why, size_t n)
{
    int r;

    ERR_clear_error();
    if ((r = SSL_write(tc->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len))) > 0)
        return r;
    return io_error(tc, r, why, n);
}

/* A connection that ends without close_notify (killed, reset, a server
 * restart: nearly every end here) would have OpenSSL mark its session not
 * resumable as it is freed (ssl_clear_bad_session()).  Since TLS 1.1 an
 * unclean close need not forbid resumption (RFC 5246, 7.2.1): mark the
 * connection shut down, so that its session survives it.  After a TLS
 * failure the session is dropped instead (tls_forget()). */
void tls_stop(struct tls_conn *tc)
{
    if (tc->ssl) {
        SSL_set_app_data(tc->ssl, NULL);
        if (!SSL_in_init(tc->ssl))
            SSL_set_shutdown(tc->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        SSL_free(tc->ssl);
        tc->ssl = NULL;
    }
}

void tls_forget(struct tls_conn *tc)
{
    tls_stop(tc);
    if (tc->session) {
        SSL_SESSION_free(tc->session);
        tc->session = NULL;
    }
}

int tls_refused(struct tls_conn *tc)
{
    int offered = tc->offered;

    tc->offered = 0;
    tc->no_resume |= offered;
    tls_forget(tc);
    return offered;
}

static char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *failed = 1;
    return d;
}

int tls_new(const struct lw_tls_config *cfg, struct tls **out)
{
    struct tls *t = calloc(1, sizeof *t);
    int failed = 0;

    if (!t)
        return LW_ENOMEM;
    t->cfg = *cfg;
    t->cfg.ca_file = dup_or_null(cfg->ca_file, &failed);
    t->cfg.ca_dir = dup_or_null(cfg->ca_dir, &failed);
    t->cfg.cert_file = dup_or_null(cfg->cert_file, &failed);
    t->cfg.key_file = dup_or_null(cfg->key_file, &failed);
    t->cfg.server_name = dup_or_null(cfg->server_name, &failed);
    if (cfg->ssl_ctx)
        t->generation = 1; /* the caller's, for good */
    if (failed) {
        tls_free(t);
        return LW_ENOMEM;
    }
    *out = t;
    return 0;
}

void tls_free(struct tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free((char *)t->cfg.ca_file);
    free((char *)t->cfg.ca_dir);
    free((char *)t->cfg.cert_file);
    free((char *)t->cfg.key_file);
    free((char *)t->cfg.server_name);
    free(t);
}
