/*
 * adapters/socket.c - opening a non-blocking socket to Redis (see
 * socket.h).  What hiredis 0.14's redisConnectNonBlock() did for us until
 * the connection did its own I/O: the same address order and options, and
 * close-on-exec from socket() on (hiredis could only set it after).
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

static int open_unix(const char *path, int *fd, char *why, size_t n)
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

/* The addresses of host, IPv4 ones if it has any, else IPv6. */
static int resolve(const char *host, int port, struct addrinfo **out, char *why, size_t n)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    char service[8];
    int rc;

    snprintf(service, sizeof service, "%d", port);
    if ((rc = getaddrinfo(host, service, &hints, out)) == 0)
        return 0;
    hints.ai_family = AF_INET6;
    if ((rc = getaddrinfo(host, service, &hints, out)) == 0)
        return 0;
    snprintf(why, n, "%s", gai_strerror(rc));
    if (rc == EAI_MEMORY)
        return LW_ENOMEM;
    return rc == EAI_NONAME || rc == EAI_NODATA ? LW_ENOHOST : LW_ECONNECT;
}

int socket_open(const char *host, int port, int *fd, char *why, size_t n)
{
    struct addrinfo *all, *a;
    int rc, err = EHOSTUNREACH;

    if (port == 0)
        return open_unix(host, fd, why, n);
    if ((rc = resolve(host, port, &all, why, n)))
        return rc;
    /* The first address that starts connecting; an unreachable one is
     * skipped, any other failure is the answer. */
    for (a = all; a && err == EHOSTUNREACH; a = a->ai_next)
        err = start_connect(a->ai_family, a->ai_addr, a->ai_addrlen, fd);
    freeaddrinfo(all);
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
