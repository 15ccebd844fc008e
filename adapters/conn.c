/* adapters/conn.c - connection helpers shared by link.c and subscriber.c. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <leasewheel/error.h>

#include "conn.h"

redisAsyncContext *conn_start(const char *host, int port, const char *unix_path)
{
    redisAsyncContext *ac = unix_path ? redisAsyncConnectUnix(unix_path)
                                      : redisAsyncConnect(host, port);

    /* hiredis 0.14 cannot ask for SOCK_CLOEXEC: a process that forks and
     * execs (lwlock running COMMAND) would hand our sockets to the child.
     * A fork in another thread between socket() and here still can. */
    if (ac && !ac->err)
        fcntl(ac->c.fd, F_SETFD, fcntl(ac->c.fd, F_GETFD) | FD_CLOEXEC);
    return ac;
}

int conn_error(const redisAsyncContext *ac, int saved_errno)
{
    if (ac->err == REDIS_ERR_OTHER && strstr(ac->errstr, "known"))
        return LW_ENOHOST; /* getaddrinfo: "Name or service not known" */
    if (saved_errno == ECONNREFUSED || strstr(ac->errstr, "refused"))
        return LW_ECONNREFUSED;
    return LW_ECONNECT;
}

uint32_t backoff_next(struct backoff *b)
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
