/*
 * tests/metrics_util.h - scrapes served and read on loopback: a client's
 * text whole, one GET /metrics answered for a client of the test's,
 * docs/examples/metrics_server started, and a checker script's output
 * read; shared by test_metrics.c and test_dashboard.c.
 */
#ifndef LW_TESTS_METRICS_UTIL_H
#define LW_TESTS_METRICS_UTIL_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "wait_child.h"

extern char **environ;

/* The text whole, in a buffer of the size it asked for. */
static inline char *format_all(struct lw_client *c, int *len)
{
    int n = lw_client_format_metrics(c, NULL, 0);
    char *buf;

    cr_assert_gt(n, 0);
    buf = malloc((size_t)n + 4096);
    cr_assert(buf);
    *len = lw_client_format_metrics(c, buf, (size_t)n + 4096);
    cr_assert_lt(*len, n + 4096);
    cr_assert_eq(strlen(buf), (size_t)*len);
    return buf;
}

/* A listening socket on 127.0.0.1, on a free port. */
static inline int listen_any(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, 4), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Serve one GET /metrics on fd for c, with snapshots just before and just
 * after the text was made. */
static inline void serve_one(int fd, struct lw_client *c, struct lw_client_stats *before,
                             struct lw_client_stats *after)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char req[2048], head[160], *text;
    size_t got = 0;
    int conn, len;

    cr_assert_eq(poll(&p, 1, 20000), 1, "no scrape came");
    cr_assert_geq(conn = accept(fd, NULL, NULL), 0);
    while (!memmem(req, got, "\r\n\r\n", 4)) {
        ssize_t n = read(conn, req + got, sizeof req - got);

        cr_assert_gt(n, 0);
        got += (size_t)n;
    }
    cr_assert_eq(strncmp(req, "GET /metrics ", 13), 0);
    lw_client_get_stats(c, before);
    text = format_all(c, &len);
    lw_client_get_stats(c, after);
    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
             "Content-Length: %d\r\nConnection: close\r\n\r\n",
             len);
    cr_assert_eq(write(conn, head, strlen(head)), (ssize_t)strlen(head));
    cr_assert_eq(write(conn, text, (size_t)len), (ssize_t)len);
    close(conn);
    free(text);
}

/* Start argv[0] with its stdout on a pipe: the pipe's end to read. */
static inline int spawn_reading(char *const argv[], pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    int p[2];

    cr_assert_eq(pipe(p), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    cr_assert_eq(posix_spawn(pid, argv[0], &fa, NULL, argv, environ), 0, "%s", argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    return p[0];
}

/* What fd says until it closes, in a buffer to free; fd closed. */
static inline char *read_all(int fd)
{
    size_t cap = 1 << 16, got = 0;
    char *out = malloc(cap);
    ssize_t n;

    cr_assert(out);
    while ((n = read(fd, out + got, cap - 1 - got)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && (got += (size_t)n) == cap - 1)
            cr_assert(out = realloc(out, cap *= 2));
    out[got] = 0;
    close(fd);
    return out;
}

/* docs/examples/metrics_server's first line, "listening on
 * 127.0.0.1:PORT", on out: the port. */
static inline int example_port(int out)
{
    struct pollfd p = {.fd = out, .events = POLLIN};
    char line[128];
    size_t got = 0;
    int port = 0;

    while (!memchr(line, '\n', got) && got < sizeof line - 1) {
        ssize_t n;

        cr_assert_eq(poll(&p, 1, 10000), 1, "metrics_server said nothing");
        cr_assert_gt(n = read(out, line + got, sizeof line - 1 - got), 0);
        got += (size_t)n;
    }
    line[got] = 0;
    cr_assert_eq(sscanf(line, "listening on 127.0.0.1:%d", &port), 1, "%s", line);
    return port;
}

#endif
