/*
 * adapters/tls_none.c - TLS in a build without it (-Dtls=disabled, or no
 * OpenSSL 3): the calls of tls.h, each saying so.  A config that asks for
 * TLS is refused with LW_ENOTSUP (tls_new()); the rest is never
 * reached, but a connection's code calls it unconditionally.
 */
#include <stdio.h>

#include <leasewheel/error.h>

#include "tls.h"

int tls_available(void)
{
    return 0;
}

int tls_new(const struct lw_tls_config *cfg, struct tls **out)
{
    (void)cfg;
    *out = NULL;
    return LW_ENOTSUP;
}

void tls_free(struct tls *t)
{
    (void)t;
}

int tls_start(struct tls *t, struct tls_conn *tc, int fd, const char *host, char *why,
              size_t n)
{
    (void)t;
    (void)tc;
    (void)fd;
    (void)host;
    snprintf(why, n, "built without TLS");
    return LW_ENOTSUP;
}

int tls_handshake(struct tls_conn *tc, char *why, size_t n)
{
    (void)tc;
    snprintf(why, n, "built without TLS");
    return LW_ENOTSUP;
}

ssize_t tls_read(struct tls_conn *tc, char *buf, size_t len, char *why, size_t n)
{
    (void)buf;
    (void)len;
    return tls_handshake(tc, why, n);
}

int tls_pending(const struct tls_conn *tc)
{
    (void)tc;
    return 0;
}

const char *tls_refusal_hint(const struct tls_conn *tc)
{
    (void)tc;
    return NULL;
}

ssize_t tls_write(struct tls_conn *tc, const char *buf, size_t len, char *why, size_t n)
{
    (void)buf;
    (void)len;
    return tls_handshake(tc, why, n);
}

void tls_stop(struct tls_conn *tc)
{
    (void)tc;
}

void tls_forget(struct tls_conn *tc)
{
    (void)tc;
}

int tls_refused(struct tls_conn *tc)
{
    (void)tc;
    return 0;
}
