/*
 * adapters/socket.h - opening a non-blocking socket to Redis: to TCP
 * addresses already resolved (resolve.h: a name is looked up off the
 * engine's thread) or to a unix socket; close-on-exec from its creation (a
 * process that forks and execs, lwlock running COMMAND, must not hand it
 * on) and TCP_NODELAY.
 */
#ifndef LW_ADAPTERS_SOCKET_H
#define LW_ADAPTERS_SOCKET_H

#include <stddef.h>

struct addrinfo;

/*
 * socket_open_addrs - start connecting to the first of all's addresses
 * (resolve.h) that is not unreachable; socket_open_unix - to the unix
 * socket at path.  0 with *fd set: connected, or connecting (wait until it
 * is writable, then socket_connected()).  Else an LW_E* code, with why (n
 * bytes) saying what failed: LW_ECONNREFUSED, LW_ECONNECT (any other
 * reason), LW_ENOMEM.
 */
int socket_open_addrs(const struct addrinfo *all, int *fd, char *why, size_t n);
int socket_open_unix(const char *path, int *fd, char *why, size_t n);

/* socket_connected - a connect in progress is over: 0, LW_ECONNREFUSED or
 * LW_ECONNECT (why says what the socket reported). */
int socket_connected(int fd, char *why, size_t n);

#endif
