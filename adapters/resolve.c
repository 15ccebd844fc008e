/*
 * adapters/resolve.c - a host name resolved off the loop's thread (see
 * resolve.h).
 *
 * A thread per lookup rather than a pool or a resolver library: a lookup
 * happens once per connection attempt to a node given by name (attempts
 * are spaced by the back-off), so a thread's start costs nothing that
 * matters; getaddrinfo() keeps every source the system's resolver has
 * (nsswitch: /etc/hosts, DNS, others) exactly as before; and a thread of
 * its own means one slow name holds up no other name's lookup.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <leasewheel/error.h>

#include "resolve.h"

struct resolve {
    pthread_mutex_t lock; /* guards everything below that changes */
    int refs;             /* the loop's side and the thread: 2, then 1 */
    int given_up;         /* the loop's side let go (cancelled, or done ran) */
    int answered;         /* err, all and why hold the thread's answer */
    int err;
    struct addrinfo *all;
    char why[160];
    ev_async wake; /* sent by the thread with the answer */
    /* Set before the thread starts, read-only after: */
    struct ev_loop *loop;
    resolve_fn *fn;
    resolve_done_fn *done;
    void *arg;
    int port;
    char host[]; /* a copy */
};

/* host:port's addresses by fn, IPv4 ones if it has any, else IPv6 (as
 * hiredis asks): 0 with *out set, or an LW_E* code with why. */
static int lookup(resolve_fn *fn, const char *host, int port, int flags, struct addrinfo **out,
                  char *why, size_t n)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = flags};
    char service[8];
    int rc;

    snprintf(service, sizeof service, "%d", port);
    if ((rc = fn(host, service, &hints, out)) == 0)
        return 0;
    hints.ai_family = AF_INET6;
    if ((rc = fn(host, service, &hints, out)) == 0)
        return 0;
    snprintf(why, n, "%s", gai_strerror(rc));
    if (rc == EAI_MEMORY)
        return LW_ENOMEM;
    return rc == EAI_NONAME || rc == EAI_NODATA ? LW_ENOHOST : LW_ECONNECT;
}

int resolve_numeric(const char *host, int port, struct addrinfo **all)
{
    char why[64];
    int rc = lookup(getaddrinfo, host, port, AI_NUMERICHOST, all, why, sizeof why);

    if (rc == LW_ENOMEM)
        return rc;
    return rc ? 1 : 0; /* not numeric: a name */
}

/* Let go of one reference: the last one frees the lookup. */
static void release(struct resolve *r)
{
    int last;

    pthread_mutex_lock(&r->lock);
    last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void *lookup_thread(void *p)
{
    struct resolve *r = p;
    struct addrinfo *all = NULL;
    char why[sizeof r->why] = "";
    int err = lookup(r->fn, r->host, r->port, 0, &all, why, sizeof why);

    pthread_mutex_lock(&r->lock);
    if (!r->given_up) {
        r->err = err;
        r->all = all;
        memcpy(r->why, why, sizeof why);
        r->answered = 1;
        all = NULL; /* the loop's now */
        ev_async_send(r->loop, &r->wake);
    }
    pthread_mutex_unlock(&r->lock);
    if (all)
        freeaddrinfo(all);
    release(r);
    return NULL;
}

/* The thread answered: hand the answer over, on the loop's thread. */
static void on_answer(struct ev_loop *loop, ev_async *w, int revents)
{
    struct resolve *r = w->data;
    resolve_done_fn *done = r->done;
    void *arg = r->arg;
    struct addrinfo *all;
    char why[sizeof r->why];
    int err;

    (void)revents;
    pthread_mutex_lock(&r->lock);
    if (!r->answered) { /* not ours to act on yet */
        pthread_mutex_unlock(&r->lock);
        return;
    }
    ev_async_stop(loop, &r->wake);
    r->given_up = 1;
    err = r->err;
    all = r->all;
    r->all = NULL;
    memcpy(why, r->why, sizeof why);
    pthread_mutex_unlock(&r->lock);
    release(r);
    done(arg, err, all, why);
}

/* A detached thread for r, with every signal blocked (the process's
 * handlers are not ours to run).  0 or an errno. */
static int start_thread(struct resolve *r)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    int rc;

    if ((rc = pthread_attr_init(&attr)))
        return rc;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t, &attr, lookup_thread, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

int resolve_start(struct resolve **out, struct ev_loop *loop, resolve_fn *fn, const char *host,
                  int port, resolve_done_fn *done, void *arg, char *why, size_t n)
{
    size_t len = strlen(host) + 1;
    struct resolve *r = calloc(1, sizeof *r + len);
    int rc;

    if (!r || pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        snprintf(why, n, "%s", lw_strerror(LW_ENOMEM));
        return LW_ENOMEM;
    }
    memcpy(r->host, host, len);
    r->port = port;
    r->fn = fn ? fn : getaddrinfo;
    r->loop = loop;
    r->done = done;
    r->arg = arg;
    r->refs = 2;
    ev_async_init(&r->wake, on_answer);
    r->wake.data = r;
    ev_async_start(loop, &r->wake);
    if ((rc = start_thread(r))) {
        ev_async_stop(loop, &r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        snprintf(why, n, "no thread to look the name up: %s", strerror(rc));
        return LW_ENOMEM;
    }
    *out = r;
    return 0;
}

void resolve_cancel(struct resolve *r)
{
    struct addrinfo *all;

    pthread_mutex_lock(&r->lock);
    r->given_up = 1;
    ev_async_stop(r->loop, &r->wake);
    all = r->all; /* answered, not yet handed over */
    r->all = NULL;
    pthread_mutex_unlock(&r->lock);
    if (all)
        freeaddrinfo(all);
    release(r);
}
