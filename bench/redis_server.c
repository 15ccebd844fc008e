/* bench/redis_server.c - see redis_server.h. */
#include "redis_server.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* A port nobody listens on right now (the kernel's pick). */
static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static redisContext *connect_server(const struct redis_server *s, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    redisReply *r;

    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, (struct timeval){2, 0});
    if (s->password[0]) {
        r = redisCommand(c, "AUTH %s", s->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

redisReply *redis_server_command(const struct redis_server *s, const char *fmt, ...)
{
    redisContext *c = connect_server(s, 2000);
    redisReply *r;
    va_list ap;

    if (!c)
        return NULL;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static pid_t spawn(struct redis_server *s)
{
    char port[16], sock[320], log[320];
    char *argv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", s->dir, "--unixsocket", sock,
                    "--unixsocketperm", "700", "--logfile", log,
                    "--enable-debug-command", "local",
                    s->password[0] ? "--requirepass" : NULL, s->password, NULL};

    snprintf(port, sizeof port, "%d", s->port);
    snprintf(sock, sizeof sock, "%s", s->unix_path);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    return spawn_process(argv, log);
}

/* Wait up to 5 s for PONG; 0, or -1 when the server died or never answered. */
static int wait_ready(struct redis_server *s)
{
    for (int i = 0; i < 250; i++) {
        int status;
        redisContext *c;

        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return -1;
        }
        if ((c = connect_server(s, 100))) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG");

            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        }
        sleep_ms(20);
    }
    return -1;
}

static void reap(struct redis_server *s)
{
    int status;

    for (int i = 0; i < 500 && s->pid; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid)
            s->pid = 0;
        else
            sleep_ms(10);
    }
    if (s->pid) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
        s->pid = 0;
    }
}

static void kill_server(struct redis_server *s)
{
    if (!s->pid)
        return;
    kill(s->pid, SIGCONT);
    kill(s->pid, SIGTERM);
    reap(s);
}

static int launch(struct redis_server *s, int keep_port)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        if (!keep_port || attempt > 0)
            s->port = free_port();
        if (s->port <= 0)
            return -1;
        s->pid = spawn(s);
        if (s->pid < 0) {
            s->pid = 0;
            return -1;
        }
        if (wait_ready(s) == 0)
            return 0;
        kill_server(s); /* e.g. the port was taken meanwhile: another one */
    }
    fprintf(stderr, "redis_server: redis-server did not start (see %s/redis.log)\n", s->dir);
    return -1;
}

int redis_server_start(struct redis_server *s, const char *password)
{
    const char *tmp = getenv("TMPDIR");

    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s/lw-redis-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        fprintf(stderr, "redis_server: mkdtemp %s: %s\n", s->dir, strerror(errno));
        return -1;
    }
    snprintf(s->unix_path, sizeof s->unix_path, "%s/redis.sock", s->dir);
    if (password)
        snprintf(s->password, sizeof s->password, "%s", password);
    return launch(s, 0);
}

int redis_server_restart(struct redis_server *s)
{
    kill_server(s);
    return launch(s, 1);
}

int redis_server_signal(struct redis_server *s, int sig)
{
    if (!s->pid)
        return -1;
    if (kill(s->pid, sig) != 0)
        return -1;
    if (sig == SIGKILL)
        reap(s);
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void redis_server_stop(struct redis_server *s)
{
    kill_server(s);
    if (s->dir[0])
        nftw(s->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    s->dir[0] = '\0';
}
