/*
 * adapters/endpoint.c - an endpoint's defaults, checks and copies (see
 * endpoint.h), and the "host:port" parser that cluster seeds and
 * sentinels are given in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <leasewheel/error.h>

#include "endpoint.h"
#include "tls.h"

_Static_assert(LW_ENDPOINT_UNIX_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
               "LW_ENDPOINT_UNIX_PATH_MAX is a sockaddr_un's path");

void endpoint_init(struct endpoint *ep)
{
    memset(ep, 0, sizeof *ep);
    ep->host = LW_ENDPOINT_DEFAULT_HOST;
    ep->port = LW_ENDPOINT_DEFAULT_PORT;
    ep->connect_timeout_ms = LW_ENDPOINT_DEFAULT_CONNECT_TIMEOUT_MS;
    ep->command_timeout_ms = LW_ENDPOINT_DEFAULT_COMMAND_TIMEOUT_MS;
    ep->reconnect_min_ms = LW_ENDPOINT_DEFAULT_RECONNECT_MIN_MS;
    ep->reconnect_max_ms = LW_ENDPOINT_DEFAULT_RECONNECT_MAX_MS;
}

int endpoint_check_address(const struct endpoint *ep)
{
    if (!ep->unix_path && (!ep->host || !ep->host[0]))
        return LW_EINVAL;
    if (ep->unix_path && !ep->unix_path[0])
        return LW_EINVAL;
    /* A longer path would be cut short and connect somewhere else. */
    if (ep->unix_path && strlen(ep->unix_path) > LW_ENDPOINT_UNIX_PATH_MAX)
        return LW_ERANGE;
    if (!ep->unix_path && (ep->port < 1 || ep->port > 65535))
        return LW_ERANGE;
    if (ep->unix_path && ep->tls.enable)
        return LW_EINVAL;
    return 0;
}

int tls_check(const struct lw_tls_config *tls)
{
    if (!tls->enable)
        return tls->ca_file || tls->ca_dir || tls->cert_file || tls->key_file ||
                       tls->server_name || tls->insecure || tls->ssl_ctx
                   ? LW_EINVAL
                   : 0;
    if (!tls_available())
        return LW_ENOTSUP;
    if (!tls->cert_file != !tls->key_file)
        return LW_EINVAL;
    return 0;
}

static int check_ms(uint32_t ms)
{
    if (ms == 0)
        return LW_EINVAL;
    return ms > LW_ENDPOINT_MAX_TIMEOUT_MS ? LW_ERANGE : 0;
}

int endpoint_check(const struct endpoint *ep)
{
    const uint32_t times[] = {ep->connect_timeout_ms, ep->command_timeout_ms,
                              ep->reconnect_min_ms, ep->reconnect_max_ms};
    int rc;

    if (ep->db < 0 || ep->db > 65535)
        return LW_ERANGE;
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if ((rc = check_ms(times[i])))
            return rc;
    if (ep->reconnect_min_ms > ep->reconnect_max_ms)
        return LW_ERANGE;
    return tls_check(&ep->tls);
}

static const char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *failed = 1;
    return d;
}

int endpoint_copy(struct endpoint *dst, const struct endpoint *src)
{
    int failed = 0, rc = 0;

    *dst = *src;
    dst->host = dup_or_null(src->host, &failed);
    dst->unix_path = dup_or_null(src->unix_path, &failed);
    dst->username = dup_or_null(src->username, &failed);
    dst->password = dup_or_null(src->password, &failed);
    memset(&dst->tls, 0, sizeof dst->tls);
    dst->tls.enable = src->tls.enable;
    dst->tls_ctx = NULL;
    dst->report = NULL;
    dst->owned = 1;
    if (src->tls.enable)
        rc = tls_new(&src->tls, &dst->tls_ctx);
    return failed ? LW_ENOMEM : rc;
}

void endpoint_clear(struct endpoint *ep)
{
    if (!ep->owned)
        return;
    free((char *)ep->host);
    free((char *)ep->unix_path);
    free((char *)ep->username);
    free((char *)ep->password);
    tls_free(ep->tls_ctx);
    ep->host = ep->unix_path = ep->username = ep->password = NULL;
    ep->tls_ctx = NULL;
    ep->owned = 0;
}

void report_init(struct report *r)
{
    pthread_mutex_init(&r->lock, NULL);
    r->err = 0;
    r->text[0] = 0;
    r->log = NULL;
}

void report_destroy(struct report *r)
{
    pthread_mutex_destroy(&r->lock);
}

void report_set(struct report *r, int err, int kind, int level, const char *text)
{
    pthread_mutex_lock(&r->lock);
    r->err = err;
    snprintf(r->text, sizeof r->text, "%s", text);
    pthread_mutex_unlock(&r->lock);
    log_say(r->log, kind, level, "%s (%s)", text, lw_errname(err));
}

int report_get(struct report *r, char *buf, size_t len)
{
    int err;

    pthread_mutex_lock(&r->lock);
    err = r->err;
    if (len)
        snprintf(buf, len, "%s", r->text);
    pthread_mutex_unlock(&r->lock);
    return err;
}

int parse_addr(const char *s, char **host, int *port)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    const char *h = s;
    size_t hlen;
    char *end;
    long p;

    if (!colon || colon == s || !colon[1])
        return LW_EINVAL;
    hlen = (size_t)(colon - s);
    if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || (memchr(h, ':', hlen) && s[0] != '['))
        return LW_EINVAL;
    p = strtol(colon + 1, &end, 10);
    if (*end || colon[1] == '-' || colon[1] == '+' || colon[1] == ' ')
        return LW_EINVAL;
    if (p < 1 || p > 65535)
        return LW_ERANGE;
    if (host && !(*host = strndup(h, hlen)))
        return LW_ENOMEM;
    if (port)
        *port = (int)p;
    return 0;
}
