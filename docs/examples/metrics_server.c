/*
 * docs/examples/metrics_server.c - the client's metrics for Prometheus, on
 * the server's own libev loop.
 *
 * A demonstration, not a web server: it reads one request per connection
 * into a fixed buffer and answers it, enough for Prometheus or curl to
 * scrape; put the text behind your own server's handler.
 *
 * A small HTTP server answers GET /metrics with
 * lw_client_format_metrics()'s text.  So that the numbers move, it holds
 * three locks (the watchdog renews them every second: a 3 s lease) and
 * takes and releases a fourth every 100 ms.  The client runs on this loop
 * (config.loop): one thread, no mutex, and the metrics call reads the
 * client's figures directly, without waiting on anything.
 *
 * Usage: metrics_server [redis_port [http_port [seconds]]]
 *   Redis at 127.0.0.1:redis_port (default 6379); HTTP on
 *   127.0.0.1:http_port (default 9464; 0: any free port); stop after
 *   `seconds` (default 0: at SIGINT or SIGTERM).  Prints the address it
 *   listens on.  Then: curl http://127.0.0.1:9464/metrics
 * Build: cc -o metrics_server metrics_server.c $(pkg-config --cflags --libs leasewheel) -lev
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>
#include <leasewheel.h>

#define HELD 3

static struct lw_client *client;
static struct lw_lock *job_lock;

/* --- the locks: three held, one taken and released --------------------- */

static void job_unlocked(int err, int64_t holds_left, void *arg)
{
    (void)holds_left;
    (void)arg;
    if (err)
        fprintf(stderr, "unlock: %s\n", lw_strerror(err));
}

static void job_acquired(int err, int64_t token, void *arg)
{
    (void)token;
    (void)arg;
    if (!err && (err = lw_unlock_async(job_lock, 1, job_unlocked, NULL)) == 0)
        return;
    if (err != LW_ELOCKED) /* LW_ELOCKED: another process holds it */
        fprintf(stderr, "job: %s\n", lw_strerror(err));
}

static void next_job(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    /* Try once (wait 0), lease 0: the watchdog's. */
    if (lw_acquire_async(job_lock, 1, 0, 0, job_acquired, NULL))
        fprintf(stderr, "job: refused\n");
}

static void held(int err, int64_t token, void *arg)
{
    (void)token;
    if (err)
        fprintf(stderr, "lock %d: %s\n", (int)(intptr_t)arg, lw_strerror(err));
}

/* --- HTTP: one request per connection ----------------------------------- */

struct conn {
    ev_io io;
    char req[2048];
    size_t got;
    char *resp; /* the response, being written */
    size_t len, sent;
};

static void conn_close(struct ev_loop *loop, struct conn *c)
{
    ev_io_stop(loop, &c->io);
    close(c->io.fd);
    free(c->resp);
    free(c);
}

/* The response to GET /metrics.  lw_client_format_metrics() returns the
 * length its text needs, as snprintf() does: when the buffer was too small,
 * grow it and call again. */
static char *metrics_response(size_t *len)
{
    static char *text;
    static size_t cap;
    char *resp;
    int n;

    while ((n = lw_client_format_metrics(client, text, cap)) >= 0 && (size_t)n >= cap) {
        char *more = realloc(text, (size_t)n + 1024);

        if (!more)
            return NULL;
        text = more;
        cap = (size_t)n + 1024;
    }
    if (n < 0 || !(resp = malloc((size_t)n + 256)))
        return NULL;
    *len = (size_t)snprintf(resp, (size_t)n + 256,
                            "HTTP/1.1 200 OK\r\n"
                            "Content-Type: text/plain; version=0.0.4\r\n"
                            "Content-Length: %d\r\n"
                            "Connection: close\r\n\r\n%s",
                            n, text);
    return resp;
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = (struct conn *)w;
    ssize_t n = write(w->fd, c->resp + c->sent, c->len - c->sent);

    (void)revents;
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || (c->sent += (size_t)n) == c->len)
        conn_close(loop, c);
}

static void respond(struct ev_loop *loop, struct conn *c)
{
    static const char not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                    "Connection: close\r\n\r\n";

    if (!strncmp(c->req, "GET /metrics ", 13))
        c->resp = metrics_response(&c->len);
    else if ((c->resp = strdup(not_found)))
        c->len = sizeof not_found - 1;
    if (!c->resp) {
        conn_close(loop, c);
        return;
    }
    ev_io_stop(loop, &c->io);
    ev_io_init(&c->io, on_write, c->io.fd, EV_WRITE);
    ev_io_start(loop, &c->io);
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = (struct conn *)w;
    ssize_t n = read(w->fd, c->req + c->got, sizeof c->req - 1 - c->got);

    (void)revents;
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || (c->got += (size_t)n) == sizeof c->req - 1) { /* gone, or too long */
        conn_close(loop, c);
        return;
    }
    c->req[c->got] = 0;
    if (strstr(c->req, "\r\n\r\n")) /* the whole head: GETs have no body */
        respond(loop, c);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    int fd = accept(w->fd, NULL, NULL);
    struct conn *c;

    (void)revents;
    if (fd < 0)
        return;
    if (!(c = calloc(1, sizeof *c))) {
        close(fd);
        return;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    ev_io_init(&c->io, on_read, fd, EV_READ);
    ev_io_start(loop, &c->io);
}

/* A non-blocking listening socket on 127.0.0.1:port; the port it got. */
static int listen_on(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;

    a.sin_port = htons((uint16_t)*port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 16) ||
        getsockname(fd, (struct sockaddr *)&a, &alen)) {
        perror("listen");
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void stop(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void time_up(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
    struct ev_loop *loop = ev_default_loop(0);
    struct lw_client_config cfg;
    struct lw_lock *lock[HELD];
    int http_port = argc > 2 ? atoi(argv[2]) : 9464, fd;
    double seconds = argc > 3 ? atof(argv[3]) : 0;
    ev_io listener;
    ev_timer jobs, deadline;
    ev_signal sigint, sigterm;

    signal(SIGPIPE, SIG_IGN); /* a scraper that hangs up must not kill us */
    lw_client_config_init(&cfg);
    cfg.port = argc > 1 ? atoi(argv[1]) : 6379;
    cfg.loop = loop;
    cfg.watchdog_timeout_ms = 3000; /* renewed every second */
    if (lw_client_new(&cfg, &client) || (fd = listen_on(&http_port)) < 0)
        return 2;
    for (int i = 0; i < HELD; i++) {
        char name[32];

        snprintf(name, sizeof name, "metrics-demo:held:%d", i);
        if (lw_lock_new(client, name, strlen(name), &lock[i]) ||
            lw_acquire_async(lock[i], 1, LW_WAIT_FOREVER, 0, held, (void *)(intptr_t)i))
            return 2;
    }
    if (lw_lock_new(client, "metrics-demo:job", 16, &job_lock))
        return 2;

    ev_io_init(&listener, on_accept, fd, EV_READ);
    ev_io_start(loop, &listener);
    ev_timer_init(&jobs, next_job, 0.1, 0.1);
    ev_timer_start(loop, &jobs);
    ev_signal_init(&sigint, stop, SIGINT);
    ev_signal_start(loop, &sigint);
    ev_signal_init(&sigterm, stop, SIGTERM);
    ev_signal_start(loop, &sigterm);
    if (seconds > 0) {
        ev_timer_init(&deadline, time_up, seconds, 0);
        ev_timer_start(loop, &deadline);
    }
    printf("listening on 127.0.0.1:%d\n", http_port);
    fflush(stdout);
    ev_run(loop, 0);

    /* On the loop's thread, outside the library's callbacks.  The held
     * locks are not unlocked: they expire with their lease. */
    close(fd);
    for (int i = 0; i < HELD; i++)
        lw_lock_free(lock[i]);
    lw_lock_free(job_lock);
    lw_client_free(client);
    return 0;
}
