/*
 * adapters/socket.c - opening a non-blocking socket to Redis (see
 * socket.h).  What hiredis 0.14's redisConnectNonBlock() did for us until
 * the connection did its own I/O: the same options, and close-on-exec from
 * socket() on (hiredis could only set it after).  The addresses come
 * resolved (resolve.h), in hiredis's order.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <leasewheel/error.h>

#include "socket.h"

/* Why a connect failed, as an LW_E* code, with errno's text. */
static int connect_failed(int err, char *why, size_t n)
{
    snprintf(why, n, "%s", strerror(err));
    if (err == ENOMEM || err == ENOBUFS)
        return LW_ENOMEM;
    return err == ECONNREFUSED ? LW_ECONNREFUSED : LW_ECONNECT;
}

/* Start a non-blocking connect on a new socket of addr's family: 0 with
 * *fd set, or the errno that stopped it. */
static int start_connect(int family, const struct sockaddr *addr, socklen_t len, int *fd)
{
    int s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, err;

    if (s < 0)
        return errno;
    if (family != AF_UNIX)
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s, addr, len) < 0 && errno != EINPROGRESS) {
        err = errno;
        close(s);
        return err;
    }
    *fd = s;
    return 0;
}

int socket_open_unix(const char *path, int *fd, char *why, size_t n)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int err;

    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(why, n, "unix socket path too long");
        return LW_ECONNECT;
    }
    strcpy(sa.sun_path, path);
    if ((err = start_connect(AF_UNIX, (const struct sockaddr *)&sa, sizeof sa, fd)))
        return connect_failed(err, why, n);
    return 0;
}

int socket_open_addrs(const struct addrinfo *all, int *fd, char *why, size_t n)
{
    const struct addrinfo *a;
    int err = EHOSTUNREACH;

    /* The first address that starts connecting; an unreachable one is
     * skipped, any other failure is the answer. */
    for (a = all; a && err == EHOSTUNREACH; a = a->ai_next)
        err = start_connect(a->ai_family, a->ai_addr, a->ai_addrlen, fd);
    return err ? connect_failed(err, why, n) : 0;
}

int socket_connected(int fd, char *why, size_t n)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    return err ? connect_failed(err, why, n) : 0;
}
