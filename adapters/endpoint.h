/*
 * adapters/endpoint.h - what it takes to open one connection to Redis:
 * where (an address or a unix socket), as whom (ACL user, password), which
 * database, how patiently (connect and command timeouts), how to come back
 * (the reconnect back-off).
 *
 * A client fills one endpoint for its data nodes, and one for its
 * sentinels, from its config (core/client.c); the defaults live here and
 * nowhere else.  The engine keeps its own copy (endpoint_copy()) and
 * hands a pointer to it to every connection it opens: the command link,
 * the acquire side link, every cluster node's link, the subscribers.  A
 * connection to another address of the same deployment (a cluster node, a
 * master named by Sentinel, a sentinel) takes the endpoint with that
 * address instead of its own; everything else is the endpoint's.
 *
 * A setting every connection needs is one field here, read in one place:
 * conn.c.
 */
#ifndef LW_ADAPTERS_ENDPOINT_H
#define LW_ADAPTERS_ENDPOINT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <leasewheel/tls.h>

#include "log.h"

#define LW_ENDPOINT_DEFAULT_HOST "127.0.0.1"
#define LW_ENDPOINT_DEFAULT_PORT 6379
#define LW_ENDPOINT_DEFAULT_CONNECT_TIMEOUT_MS 2000u
#define LW_ENDPOINT_DEFAULT_COMMAND_TIMEOUT_MS 3000u
#define LW_ENDPOINT_DEFAULT_RECONNECT_MIN_MS 50u
#define LW_ENDPOINT_DEFAULT_RECONNECT_MAX_MS 5000u
#define LW_ENDPOINT_MAX_TIMEOUT_MS 3600000u /* one hour */
#define LW_ENDPOINT_UNIX_PATH_MAX 107u      /* bytes: a sockaddr_un's, less the NUL */

struct addrinfo;
struct tls;

/*
 * Where an engine's connections say why they failed: the latest failure's
 * code and a line with the address and the reason (OpenSSL's, a refused
 * connect's, an AUTH error's), for lw_client_last_error().  Written by the
 * engine thread, read by any thread.
 */
struct report {
    pthread_mutex_t lock;
    int err; /* LW_E*, 0 before the first failure */
    char text[256];
    struct logger *log; /* said there too (engine thread), or NULL */
};

struct endpoint {
    const char *host;            /* name or address; ignored with unix_path */
    int port;                    /* 1..65535 */
    const char *unix_path;       /* a unix socket instead of host:port, or NULL */
    const char *username;        /* ACL user: AUTH <user> <password>, or NULL */
    const char *password;        /* AUTH after connecting, or NULL */
    int db;                      /* SELECT after connecting when not 0; 0..65535 */
    uint32_t connect_timeout_ms; /* connect, TLS handshake and set-up; 1..MAX */
    uint32_t command_timeout_ms; /* a command's reply, or its wait to be sent;
                                    1..MAX */
    uint32_t reconnect_min_ms;   /* the back-off's first delay (backoff.h) */
    uint32_t reconnect_max_ms;   /* its longest; not under reconnect_min_ms */
    struct lw_tls_config tls;    /* tls.enable: every connection over TLS;
                                    a copy keeps only `enable`, the rest is
                                    in tls_ctx */
    /* Made by endpoint_copy(): */
    int owned;           /* the strings are its own */
    struct tls *tls_ctx; /* with tls.enable: the OpenSSL context
                            (tls.h), loaded on first use */
    /* Set by the owner of a copy, or NULL: */
    struct report *report; /* where its connections say why they
                              failed; not the endpoint's own */
    /* Tests only, else NULL: what looks host names up instead of
     * getaddrinfo() (resolve.h; on the lookup's own thread, answering
     * with getaddrinfo()'s own results).  Kept by endpoint_copy(). */
    int (*resolve)(const char *node, const char *service, const struct addrinfo *hints,
                   struct addrinfo **res);
};

/* endpoint_init - the defaults: 127.0.0.1:6379, db 0, no credentials,
 * the LW_ENDPOINT_DEFAULT_* times. */
void endpoint_init(struct endpoint *ep);

/* endpoint_check_address - a usable address: host and port, or a unix
 * socket path that fits a sockaddr_un (and then no TLS: Redis serves TLS
 * on TCP only).  0, LW_EINVAL or LW_ERANGE. */
int endpoint_check_address(const struct endpoint *ep);

/* endpoint_check - the rest: db, times (0: LW_EINVAL; over
 * LW_ENDPOINT_MAX_TIMEOUT_MS: LW_ERANGE), reconnect_min_ms <=
 * reconnect_max_ms (LW_ERANGE), the TLS settings (tls_check()). */
int endpoint_check(const struct endpoint *ep);

/* tls_check - TLS settings that make sense: none set without enable, a
 * certificate with its key (LW_EINVAL); enable in a build without TLS
 * (LW_ENOTSUP). */
int tls_check(const struct lw_tls_config *tls);

/* endpoint_copy - dst becomes src with strings of its own, and its TLS
 * context (not loaded yet) when TLS is on; no report.  0, LW_ENOMEM or
 * LW_ENOTSUP; either way endpoint_clear(dst) frees what was made. */
int endpoint_copy(struct endpoint *dst, const struct endpoint *src);

/* endpoint_clear - free a copy's strings; nothing for one not owned. */
void endpoint_clear(struct endpoint *ep);

/* report_init, report_destroy - a report with no failure yet. */
void report_init(struct report *r);
void report_destroy(struct report *r);

/* report_set - record a failure: err and its line (copied, cut to fit),
 * and say it in the log as a line of kind (log.h) at level (LOG_ERROR: it
 * will not mend by waiting; LOG_WARN else). */
void report_set(struct report *r, int err, int kind, int level, const char *text);

/* report_get - the latest failure's code (0: none yet), its line into
 * buf (len bytes, NUL-terminated; buf may be NULL when len is 0). */
int report_get(struct report *r, char *buf, size_t len);

/* parse_addr - "host:port" (an IPv6 host in brackets): 0, LW_EINVAL,
 * LW_ERANGE, LW_ENOMEM; host (malloc'd) and port may be NULL. */
int parse_addr(const char *s, char **host, int *port);

#endif
