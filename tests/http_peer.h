/*
 * tests/http_peer.h - a port that is not Redis: a thread listening on a
 * free loopback port that answers whatever it reads with an HTTP 400 and
 * closes, as a web server given RESP does ("HTTP/1.1 400 Bad Request").
 * For the tests of a client pointed at the wrong port: it must say so
 * within a round trip (LW_EPROTO), not retry until its timeout.
 *
 * Every wait is bounded: the thread polls its socket 50 ms at a time and
 * stops when told; a connection it serves gets 2 s to send something.
 */
#ifndef LW_TESTS_HTTP_PEER_H
#define LW_TESTS_HTTP_PEER_H

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define HTTP_PEER_ANSWER "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

struct http_peer {
    int fd;
    int port;
    atomic_int stop;
    atomic_int served; /* connections answered */
    pthread_t thread;
};

static inline void http_peer_serve(struct http_peer *p, int c)
{
    struct pollfd in = {c, POLLIN, 0};
    char buf[4096];

    if (poll(&in, 1, 2000) == 1 && read(c, buf, sizeof buf) > 0) {
        /* Counted before the answer goes: a client that read it finds
         * the count already up (after, a busy machine could run the
         * client's whole check between the write and the count). */
        atomic_fetch_add(&p->served, 1);
        (void)!write(c, HTTP_PEER_ANSWER, sizeof HTTP_PEER_ANSWER - 1);
    }
    close(c);
}

static inline void *http_peer_run(void *arg)
{
    struct http_peer *p = arg;

    while (!atomic_load(&p->stop)) {
        struct pollfd l = {p->fd, POLLIN, 0};
        int c;

        if (poll(&l, 1, 50) != 1)
            continue;
        if ((c = accept(p->fd, NULL, NULL)) >= 0)
            http_peer_serve(p, c);
    }
    return NULL;
}

/* Listening on 127.0.0.1:p->port, answering, until http_peer_stop(). */
static inline void http_peer_start(struct http_peer *p)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;

    memset(p, 0, sizeof *p);
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(p->fd, 0);
    cr_assert_eq(bind(p->fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(p->fd, 16), 0);
    cr_assert_eq(getsockname(p->fd, (struct sockaddr *)&a, &len), 0);
    p->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&p->thread, NULL, http_peer_run, p), 0);
}

static inline void http_peer_stop(struct http_peer *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    close(p->fd);
}

#endif
