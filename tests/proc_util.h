/*
 * tests/proc_util.h - running the tools as processes in a test: a
 * temporary directory for the test, files in it, children whose stdout
 * and stderr go to files there.  Shared by test_lwlock,
 * test_cluster_tools and test_sentinel_tools (one test executable each,
 * so `dir` is each one's).
 */
#ifndef LW_TESTS_PROC_UTIL_H
#define LW_TESTS_PROC_UTIL_H

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "wait_child.h"

static char dir[256]; /* the test's temporary directory */

/* A fresh directory from template (mkdtemp's "...XXXXXX"), also in
 * LWT_DIR for shell snippets (the test process has no other thread). */
static inline void make_test_dir(const char *template)
{
    snprintf(dir, sizeof dir, "%s", template);
    cr_assert_not_null(mkdtemp(dir));
    setenv("LWT_DIR", dir, 1);
}

/* Gone again, unless LW_TEST_KEEP is set (to look at it afterwards). */
static inline void remove_test_dir(void)
{
    char cmd[300];

    if (getenv("LW_TEST_KEEP")) {
        fprintf(stderr, "kept %s\n", dir);
        return;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)!system(cmd);
}

static inline const char *path_in_dir(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

/* The file's contents ("" when missing), at most size - 1 bytes. */
static inline char *slurp(const char *name, char *buf, size_t size)
{
    char path[512];
    int fd = open(path_in_dir(name, path, sizeof path), O_RDONLY);
    ssize_t n = 0;

    if (fd >= 0) {
        n = read(fd, buf, size - 1);
        close(fd);
    }
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

static inline int exists(const char *name)
{
    char path[512];

    return access(path_in_dir(name, path, sizeof path), F_OK) == 0;
}

/* Child: descriptor `to` to a file of the test directory. */
static inline void redirect(int to, const char *name)
{
    char path[512];
    int fd = open(path_in_dir(name, path, sizeof path),
                  O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);

    if (fd >= 0 && fd != to) {
        dup2(fd, to);
        close(fd);
    }
}

#define ARGS(...) ((const char *[]){__VA_ARGS__, NULL})

/* Start prog with args (argv[0] excluded) and extra "K=V" settings, its
 * stdout and stderr to the files out and err, in the test directory (so
 * that a COMMAND's "touch ran" lands where exists("ran") looks); it dies
 * with the test.  prog must be an absolute path. */
static inline pid_t start_child(const char *prog, const char *const *args,
                                const char *const *env, const char *out, const char *err)
{
    const char *argv[40] = {prog};
    size_t n = 1;
    pid_t pid;

    while (args[n - 1] && n < 39) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        redirect(1, out);
        redirect(2, err);
        if (chdir(dir))
            _exit(121);
        for (; env && *env; env++)
            putenv((char *)*env);
        execv(prog, (char *const *)argv);
        _exit(120);
    }
    return pid;
}

/* Copy a child's output file to our stderr, tagged (a sanitizer's report
 * from it lands in the test log). */
static inline void echo_file(const char *name, const char *tag)
{
    char buf[8192];

    if (*slurp(name, buf, sizeof buf))
        fprintf(stderr, "[%s] %s", tag, buf);
}

/* Run prog to the end (at most ms) as start_child() does, its output to
 * "out" and "err", then copy its stderr to ours: its exit status, as
 * wait_child() gives it. */
static inline int run_child(const char *prog, const char *const *args, const char *const *env,
                            int ms)
{
    int code = wait_child(start_child(prog, args, env, "out", "err"), ms);

    echo_file("err", "stderr");
    return code;
}

/* Run lwlock (the build's, LWLOCK_PATH) to the end, at most 20 s: its
 * exit status, as run_child() gives it. */
static inline int run_lwlock(const char *const *args, const char *const *env)
{
    return run_child(LWLOCK_PATH, args, env, 20000);
}

/* A COMMAND for lwlock (sh -c) that records what it saw: whether the lock
 * is held on the Redis at $LWT_PORT (redis-cli EXISTS, to "exists"), and
 * the lock's name and fencing token (to "env"). */
#define LWLOCK_LOOK                                                                  \
    "redis-cli -p \"$LWT_PORT\" EXISTS \"$LWLOCK_NAME\" > \"$LWT_DIR/exists\"; " \
    "echo \"$LWLOCK_NAME $LWLOCK_TOKEN\" > \"$LWT_DIR/env\""

/* LWLOCK_LOOK through the node's unix socket ($LWT_SOCK), plain text: for
 * a node whose TCP port speaks TLS only. */
#define LWLOCK_LOOK_UNIX                                                                \
    "redis-cli -s \"$LWT_SOCK\" EXISTS \"$LWLOCK_NAME\" > \"$LWT_DIR/exists\"; " \
    "echo \"$LWLOCK_NAME $LWLOCK_TOKEN\" > \"$LWT_DIR/env\""

/* After a run whose COMMAND was LWLOCK_LOOK (or _UNIX), on name whose
 * master is node m: COMMAND saw name held there; the token it saw. */
static inline unsigned long long looked_token(const char *name, int m)
{
    char buf[256], seen[64];
    unsigned long long token = 0;

    cr_assert_str_eq(slurp("exists", buf, sizeof buf), "1\n", "%s not held on node %d", name, m);
    cr_assert_eq(sscanf(slurp("env", buf, sizeof buf), "%63s %llu", seen, &token), 2, "'%s'",
                 buf);
    cr_assert_str_eq(seen, name);
    return token;
}

/* Whether the last run's stderr has text. */
static inline int stderr_has(const char *text)
{
    char buf[8192];

    return strstr(slurp("err", buf, sizeof buf), text) != NULL;
}

/* Whether the last run's stderr is one line. */
static inline int stderr_one_line(void)
{
    char buf[8192];
    const char *nl = strchr(slurp("err", buf, sizeof buf), '\n');

    return nl && nl[1] == 0;
}

/* A loopback port nobody listens on: one the kernel just handed out,
 * closed again. */
static inline int closed_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* A shell snippet for COMMAND: on SIG, record it in DIR/sig, stop the
 * sleep and exit with CODE; DIR/ready appears once the trap is set.
 * (The sleep runs in the background: sh runs traps only between
 * commands, and `wait` is one that a trapped signal interrupts.) */
#define TRAPPING(sig, code)                                                              \
    "trap 'echo " sig " > \"$LWT_DIR/sig\"; kill $!; exit " code "' " sig "; "             \
    "sleep 30 & touch \"$LWT_DIR/ready\"; wait"

#endif
