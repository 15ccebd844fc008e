/*
 * bench/lwtls_tls.c - lwtls's TLS settings: each run's private server, the
 * clients' configuration, and tls-noresume's SSL_CTX of lwtls's own (see
 * lwtls.c).
 */
#include <stdio.h>

#if LW_HAVE_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#include "lwtls.h"
#include "redis_server.h"
#include "tls_certs.h"

int start_server(const struct opts *o, enum run_kind k, const struct tls_certs *certs,
                 struct redis_server *s)
{
    static const char *const nocache[] = {"--tls-session-caching", "no", NULL};
    struct fixture_tls ft;

    if (k == RUN_TCP)
        return redis_server_start(s, NULL);
    ft = tls_certs_server_tls(certs, TLS_CERTS_SERVER, o->server_auth ? "no" : "yes");
    return redis_server_start_tls_args(s, NULL, &ft, k == RUN_TLS_NOCACHE ? nocache : NULL);
}

/* The clients' TLS: trust the throwaway CA; with mutual TLS present the
 * fixtures' client certificate.  tls-noresume: the same, from an SSL_CTX of
 * lwtls's own (the library resumes sessions only on contexts it made). */
struct lw_tls_config client_tls(const struct opts *o, enum run_kind k,
                                const struct tls_certs *certs)
{
    struct lw_tls_config t = {0};

    if (k == RUN_TCP)
        return t;
    t.enable = 1;
    if (k == RUN_TLS_NORESUME) {
        t.ssl_ctx = o->ssl_ctx;
        return t;
    }
    t.ca_file = certs->ca_file;
    if (!o->server_auth) {
        t.cert_file = certs->client_cert;
        t.key_file = certs->client_key;
    }
    return t;
}

#if LW_HAVE_TLS
/* tls-noresume's context: what the library makes from the files (tls.c:
 * its modes too, which its writes rely on), less the session callback.
 * NULL (said) when it cannot be made. */
void *make_ssl_ctx(const struct opts *o, const struct tls_certs *certs)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (ctx)
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) &&
        SSL_CTX_load_verify_locations(ctx, certs->ca_file, NULL) &&
        (o->server_auth ||
         (SSL_CTX_use_certificate_chain_file(ctx, certs->client_cert) &&
          SSL_CTX_use_PrivateKey_file(ctx, certs->client_key, SSL_FILETYPE_PEM)))) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        return ctx;
    }
    fprintf(stderr, "lwtls: tls-noresume: an SSL_CTX: %s\n",
            ERR_reason_error_string(ERR_get_error()));
    SSL_CTX_free(ctx);
    return NULL;
}

void free_ssl_ctx(void *ctx)
{
    SSL_CTX_free(ctx);
}
#else
void *make_ssl_ctx(const struct opts *o, const struct tls_certs *certs)
{
    (void)o;
    (void)certs;
    return NULL;
}

void free_ssl_ctx(void *ctx)
{
    (void)ctx;
}
#endif
