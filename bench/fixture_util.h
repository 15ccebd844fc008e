/*
 * bench/fixture_util.h - what the server fixtures share (redis_server.c,
 * redis_cluster.c, redis_sentinel.c): free loopback ports, starting a
 * server that dies with its starter, reaping it within a bound, removing
 * a temporary directory, a connection with AUTH.  Static inline, so that
 * each fixture stays one source file for the builds that list it.
 */
#ifndef LW_BENCH_FIXTURE_UTIL_H
#define LW_BENCH_FIXTURE_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define FIXTURE_MAX_PORTS 32

static inline void fixture_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static inline int64_t fixture_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* n (<= FIXTURE_MAX_PORTS) distinct free loopback ports: all sockets stay
 * bound until every port is picked, so the kernel cannot hand out one
 * twice.  0 or -1. */
static inline int fixture_free_ports(int *ports, int n)
{
    int fds[FIXTURE_MAX_PORTS], ok, i;

    if (n > FIXTURE_MAX_PORTS)
        return -1;
    for (i = 0; i < n; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sa;

        ports[i] = -1;
        if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0)
            break;
        if (bind(fds[i], (struct sockaddr *)&sa, sizeof sa) == 0 &&
            getsockname(fds[i], (struct sockaddr *)&sa, &len) == 0)
            ports[i] = ntohs(sa.sin_port);
    }
    ok = i == n;
    while (i-- > 0) {
        if (ports[i] <= 0)
            ok = 0;
        if (fds[i] >= 0)
            close(fds[i]);
    }
    return ok ? 0 : -1;
}

/* Fork and exec argv with stdout/stderr to log (appended: what a server
 * says before it opens its own log lands there too); PR_SET_PDEATHSIG so
 * that nothing outlives a crashed test.  The pid, or -1. */
static inline pid_t fixture_spawn(char *const argv[], const char *log)
{
    pid_t parent = getpid(), pid = fork();

    if (pid != 0)
        return pid;
    /* Child: only async-signal-safe calls until exec. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    /* A caller that blocks SIGTERM (to sigwait for it, as lwbench and the
     * soak do) would pass the mask on through exec: the server would ignore
     * the fixture's SIGTERM and only die of the SIGKILL 5 s later. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR), out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null >= 0)
        dup2(null, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    execvp(argv[0], argv);
    _exit(127);
}

/* Wait up to timeout_ms for pid to exit: its exit status, or -1 (killed
 * by a signal, or still running after timeout_ms: then SIGKILLed and
 * reaped). */
static inline int fixture_reap(pid_t pid, int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;
    int status;

    while (fixture_now_ms() < deadline) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        fixture_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Reap the server *pid, if running (SIGKILLed after timeout_ms), and mark
 * it gone: *pid and *stopped 0.  A fixture's node keeps both. */
static inline void fixture_forget(pid_t *pid, int *stopped, int timeout_ms)
{
    if (!*pid)
        return;
    fixture_reap(*pid, timeout_ms);
    *pid = 0;
    *stopped = 0;
}

/* Send sig to the server *pid: SIGSTOP and SIGCONT are noted in *stopped;
 * after SIGTERM (with a SIGCONT, so that a stopped one can exit) or SIGKILL
 * it is reaped.  0, or -1 when it is not running. */
static inline int fixture_signal(pid_t *pid, int *stopped, int sig)
{
    if (!*pid || kill(*pid, sig) != 0)
        return -1;
    if (sig == SIGSTOP || sig == SIGCONT)
        *stopped = sig == SIGSTOP;
    if (sig == SIGKILL || sig == SIGTERM) {
        if (sig == SIGTERM)
            kill(*pid, SIGCONT);
        fixture_forget(pid, stopped, 5000);
    }
    return 0;
}

static inline int fixture_remove_entry(const char *path, const struct stat *sb, int flag,
                                       struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove dir and all below it. */
static inline void fixture_remove_tree(const char *dir)
{
    nftw(dir, fixture_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* A ROLE reply (freed here): 1 master, 0 replica, -1 none or not ROLE's. */
static inline int fixture_role(redisReply *r)
{
    int role = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        role = !strcmp(r->element[0]->str, "master");
    freeReplyObject(r);
    return role;
}

/* A reply (freed here) as a number: an integer, a string read as one
 * (GET of a counter), nil as 0; -1 for none or anything else. */
static inline long long fixture_reply_int(redisReply *r)
{
    long long v = -1;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    freeReplyObject(r);
    return v;
}

/* A connection to 127.0.0.1:port (connect timeout timeout_ms, then 2 s per
 * command), authenticated with password unless that is "". */
static inline redisContext *fixture_connect(int port, const char *password, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *r;

    if (!rc || rc->err) {
        redisFree(rc);
        return NULL;
    }
    redisSetTimeout(rc, (struct timeval){2, 0});
    if (password[0]) {
        r = redisCommand(rc, "AUTH %s", password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            redisFree(rc);
            return NULL;
        }
        freeReplyObject(r);
    }
    return rc;
}

/* PONG from 127.0.0.1:port within 100 ms. */
static inline int fixture_ping(int port, const char *password)
{
    redisContext *rc = fixture_connect(port, password, 100);
    redisReply *r = rc ? redisCommand(rc, "PING") : NULL;
    int ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG");

    freeReplyObject(r);
    redisFree(rc);
    return ok;
}

/* The server *pid on port was just spawned (*pid < 0: it was not): wait
 * 5 s at most for its PONG.  0, or -1 with *pid 0 (it exited, or did not
 * answer and was killed). */
static inline int fixture_wait_up(pid_t *pid, int *stopped, int port, const char *password)
{
    int status;

    if (*pid < 0) {
        *pid = 0;
        return -1;
    }
    for (int i = 0; i < 250; i++) {
        if (waitpid(*pid, &status, WNOHANG) == *pid) {
            *pid = 0;
            return -1;
        }
        if (fixture_ping(port, password))
            return 0;
        fixture_sleep_ms(20);
    }
    kill(*pid, SIGKILL);
    fixture_forget(pid, stopped, 5000);
    return -1;
}

#endif
