/*
 * adapters/resolve.h - a host name resolved off the loop's thread.
 *
 * getaddrinfo() blocks the thread that calls it while DNS answers, and the
 * loop's thread is the engine's: one slow answer would stop every renewal
 * to every node.  So a lookup runs on a thread of its own, started for it
 * and gone when getaddrinfo() returns, and wakes the loop with an ev_async
 * when it has the answer; the loop hands it to the caller.  A numeric
 * address (127.0.0.1, ::1) needs no lookup: resolve_numeric() turns it into
 * addresses at once, on the caller's thread, with no thread started.
 *
 * Who owns what: a lookup (struct resolve) is shared by the loop's side and
 * its thread, each holding a reference, under the lookup's own mutex.  The
 * thread writes the answer and, unless the loop's side gave up, sends the
 * ev_async, both under that mutex; the loop's side reads the answer under
 * it too.  resolve_cancel() (the connection closed, its deadline passed,
 * the engine is being freed) marks the lookup given up and stops the
 * ev_async under the mutex: from then on the thread touches neither the
 * loop nor the caller, frees its answer and, holding the last reference,
 * the lookup.  getaddrinfo() cannot be interrupted, so the thread runs on
 * until the resolver's own timeout (resolv.conf) after a cancel; it holds
 * nothing of the engine's.
 *
 * The answer is getaddrinfo()'s as socket.c asks for it: IPv4 addresses
 * if the name has any, else IPv6 ones.
 */
#ifndef LW_ADAPTERS_RESOLVE_H
#define LW_ADAPTERS_RESOLVE_H

#include <stddef.h>

#include <ev.h>

struct addrinfo;

/* getaddrinfo()'s signature: what a lookup calls (a test stands in a
 * slow one, through struct endpoint's resolve). */
typedef int resolve_fn(const char *node, const char *service, const struct addrinfo *hints,
                       struct addrinfo **res);

/* The lookup is over, on the loop's thread: 0 with all (the caller's to
 * freeaddrinfo()), or an LW_E* code with why saying what failed
 * (LW_ENOHOST: no such name; LW_ECONNECT: DNS failed otherwise;
 * LW_ENOMEM). */
typedef void resolve_done_fn(void *arg, int err, struct addrinfo *all, const char *why);

struct resolve;

/*
 * resolve_numeric - host as a numeric address (IPv4, else IPv6), without
 * a lookup: 0 with *all set (freeaddrinfo() it), 1 when host is a name
 * (resolve_start() it), or LW_ENOMEM.
 */
int resolve_numeric(const char *host, int port, struct addrinfo **all);

/*
 * resolve_start - look host:port up on a thread of its own with fn
 * (NULL: getaddrinfo()); done(arg, ...) runs on loop's thread once it
 * answers, unless resolve_cancel() came first.  0 with *out set, or
 * LW_ENOMEM (no memory or no thread; why says which).  Call on loop's
 * thread.
 */
int resolve_start(struct resolve **out, struct ev_loop *loop, resolve_fn *fn, const char *host,
                  int port, resolve_done_fn *done, void *arg, char *why, size_t n);

/*
 * resolve_cancel - give the lookup up: done will not run, and the lookup
 * is freed by whichever side lets go of it last.  Call on loop's thread,
 * before done ran (done's call ends the lookup: do not cancel after).
 */
void resolve_cancel(struct resolve *r);

#endif
