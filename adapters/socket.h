/*
 * adapters/socket.h - opening a non-blocking socket to Redis: to a TCP
 * address (resolved here: IPv4 first, then IPv6, as hiredis does) or to a
 * unix socket; close-on-exec from its creation (a process that forks and
 * execs, lwlock running COMMAND, must not hand it on) and TCP_NODELAY.
 *
 * Resolution is getaddrinfo(), which blocks the calling thread (the engine
 * thread) while DNS answers: give IP addresses where DNS may be slow.
 */
#ifndef LW_ADAPTERS_SOCKET_H
#define LW_ADAPTERS_SOCKET_H

#include <stddef.h>

/*
 * socket_open - start connecting to host:port (port 0: the unix socket at
 * path host).  0 with *fd set: connected, or connecting (wait until it is
 * writable, then socket_connected()).  Else an LW_E* code, with why (n
 * bytes) saying what failed: LW_ENOHOST (no such name), LW_ECONNREFUSED,
 * LW_ECONNECT (any other reason), LW_ENOMEM.
 */
int socket_open(const char *host, int port, int *fd, char *why, size_t n);

/* socket_connected - a connect in progress is over: 0, LW_ECONNREFUSED or
 * LW_ECONNECT (why says what the socket reported). */
int socket_connected(int fd, char *why, size_t n);

#endif
