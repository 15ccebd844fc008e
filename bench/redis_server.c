/* bench/redis_server.c - see redis_server.h. */
#include "redis_server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"

static redisContext *connect_server(const struct redis_server *s, int timeout_ms)
{
    return fixture_connect(s->port, s->password, timeout_ms);
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
    char *argv[24] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--dir", s->dir, "--unixsocket", sock,
                      "--unixsocketperm", "700", "--logfile", log,
                      "--enable-debug-command", "local"};
    int k = 19;

    snprintf(port, sizeof port, "%d", s->port);
    snprintf(sock, sizeof sock, "%s", s->unix_path);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    if (s->password[0]) {
        argv[k++] = "--requirepass";
        argv[k++] = s->password;
    }
    argv[k] = NULL;
    return fixture_spawn(argv, log);
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
        fixture_sleep_ms(20);
    }
    return -1;
}

static void reap(struct redis_server *s)
{
    if (s->pid)
        fixture_reap(s->pid, 5000);
    s->pid = 0;
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
        if ((!keep_port || attempt > 0) && fixture_free_ports(&s->port, 1) != 0)
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

void redis_server_stop(struct redis_server *s)
{
    kill_server(s);
    if (s->dir[0])
        fixture_remove_tree(s->dir);
    s->dir[0] = '\0';
}
