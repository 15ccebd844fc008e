/*
 * The clock shim (tests/support/clockshim.c), the seam of the tests of a
 * stepped or suspended clock, does what they rely on:
 *   redis-server starts under it as fast as without it, and its wall clock
 *   steps when the control file says (TIME, key expiry, a script's TIME:
 *   Redis 7.0 reads all three with gettimeofday());
 *   a process given a lag sees its monotonic clocks that far behind
 *   CLOCK_BOOTTIME, as after a suspend, continuing from where it was
 *   stopped; its wall clock, and a program it forks and execs, unshifted.
 * Each reading of a shimmed clock is bracketed by two readings of the
 * test's own (unshimmed) clock: shifted, it must lie between them.
 *
 * Plain build only (suite 'once'): the shim and its probe are never
 * sanitized, and there is nothing of the library's here for a sanitizer.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clockshim.h"
#include "fixture_util.h"
#include "redis_server.h"

#define MS INT64_C(1000000)
#define SLACK_NS MS /* TIME's microseconds, rounded down, and no more */

static char dir[256];
static struct clockshim cs;

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[300];

    signal(SIGPIPE, SIG_IGN); /* a probe that died: EPIPE, not our death */
    snprintf(dir, sizeof dir, "%s/lw-clockshim-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/clock", dir);
    cr_assert_eq(clockshim_create(&cs, path), 0);
}

static void teardown(void)
{
    clockshim_destroy(&cs);
    rmdir(dir);
}

static int64_t now_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * CLOCKSHIM_S + ts.tv_nsec;
}

/* Start a redis-server, under the shim when shimmed: the ms it took. */
static int64_t start_server(struct redis_server *s, int shimmed)
{
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    int rc;

    if (shimmed)
        cr_assert_eq(clockshim_env_set(CLOCKSHIM_PATH, cs.path), 0);
    rc = redis_server_start(s, NULL);
    if (shimmed)
        clockshim_env_unset();
    cr_assert_eq(rc, 0, "redis-server did not start%s", shimmed ? " under the shim" : "");
    return (now_ns(CLOCK_MONOTONIC) - t0) / MS;
}

/* The shim is mapped into process pid (its file's name: the directory
 * of the control file, mapped too, is named after it). */
static int has_shim(pid_t pid)
{
    const char *name = strrchr(CLOCKSHIM_PATH, '/');
    char path[64], line[512];
    FILE *f;
    int found = 0;

    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

/* A TIME-shaped reply (TIME's or a script's): ns since 1970. */
static int64_t time_reply_ns(redisReply *r)
{
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "not TIME's reply");
    cr_assert(r->element[0]->type == REDIS_REPLY_STRING &&
              r->element[1]->type == REDIS_REPLY_STRING);
    return atoll(r->element[0]->str) * CLOCKSHIM_S + atoll(r->element[1]->str) * 1000;
}

/* What TIME answers, or a script returning it when script is not NULL, is
 * our wall clock plus offset, read between before and after. */
static void assert_time_shifted(struct redis_server *s, const char *script, int64_t offset)
{
    int64_t before = now_ns(CLOCK_REALTIME), t, after;
    redisReply *r = script ? redis_server_command(s, "EVAL %s 0", script)
                           : redis_server_command(s, "TIME");
    const char *cmd = script ? script : "TIME";

    after = now_ns(CLOCK_REALTIME);
    t = time_reply_ns(r) - offset;
    freeReplyObject(r);
    cr_assert(t >= before - SLACK_NS && t <= after + SLACK_NS,
              "%s with an offset of %lld ms: %lld ms off the window of %lld ms", cmd,
              (long long)(offset / MS),
              (long long)((t < before ? t - before : t - after) / MS),
              (long long)((after - before) / MS));
}

Test(clockshim, redis_starts_and_its_time_steps, .init = setup, .fini = teardown)
{
    struct redis_server plain, s;
    const int64_t offsets[] = {10 * CLOCKSHIM_S, -5 * CLOCKSHIM_S, 0};
    int64_t plain_ms, shim_ms;

    plain_ms = start_server(&plain, 0);
    redis_server_stop(&plain);
    clockshim_set_offset(&cs, 0);
    shim_ms = start_server(&s, 1);
    cr_log_info("redis-server started in %lld ms, %lld ms under the shim", (long long)plain_ms,
                (long long)shim_ms);
    cr_assert(has_shim(s.pid), "redis-server has not loaded the shim");
    /* The fixture waits 5 s at most: a hang fails above; slow is failed here. */
    cr_assert_lt(shim_ms, plain_ms + 1000);
    assert_time_shifted(&s, NULL, 0);
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        clockshim_set_offset(&cs, offsets[i]);
        assert_time_shifted(&s, NULL, offsets[i]);
    }
    redis_server_stop(&s);
}

Test(clockshim, keys_expire_by_the_stepped_clock, .init = setup, .fini = teardown)
{
    struct redis_server s;
    int64_t set_at, gone_ms;
    long long pttl;
    redisReply *r;

    start_server(&s, 1);
    set_at = now_ns(CLOCK_MONOTONIC);
    freeReplyObject(redis_server_command(&s, "MSET short 1 long 1"));
    cr_assert_eq(fixture_reply_int(redis_server_command(&s, "PEXPIRE short 5000")), 1);
    cr_assert_eq(fixture_reply_int(redis_server_command(&s, "PEXPIRE long 20000")), 1);
    cr_assert_gt(fixture_reply_int(redis_server_command(&s, "PTTL short")), 4000);

    clockshim_set_offset(&cs, 6 * CLOCKSHIM_S);
    /* PTTL first: GET would delete the key, and PTTL say -2 whatever the clock. */
    cr_assert_eq(fixture_reply_int(redis_server_command(&s, "PTTL short")), -2);
    r = redis_server_command(&s, "GET short");
    cr_assert(r && r->type == REDIS_REPLY_NIL, "GET short: not nil after the step");
    freeReplyObject(r);
    pttl = fixture_reply_int(redis_server_command(&s, "PTTL long"));
    gone_ms = (now_ns(CLOCK_MONOTONIC) - set_at) / MS + 1;
    cr_assert(pttl <= 14000 && pttl >= 14000 - gone_ms,
              "PTTL long after +6 s: %lld ms, not 14000 less %lld at most", pttl,
              (long long)gone_ms);

    /* Stepped back: the expiry is a time of day, so the 6 s come back. */
    clockshim_set_offset(&cs, 0);
    pttl = fixture_reply_int(redis_server_command(&s, "PTTL long"));
    gone_ms = (now_ns(CLOCK_MONOTONIC) - set_at) / MS + 1;
    cr_assert(pttl <= 20000 && pttl >= 20000 - gone_ms, "PTTL long stepped back: %lld ms", pttl);
    redis_server_stop(&s);
}

Test(clockshim, a_script_sees_the_stepped_time, .init = setup, .fini = teardown)
{
    struct redis_server s;

    start_server(&s, 1);
    clockshim_set_offset(&cs, 10 * CLOCKSHIM_S);
    assert_time_shifted(&s, "return redis.call('time')", 10 * CLOCKSHIM_S);
    clockshim_set_offset(&cs, -5 * CLOCKSHIM_S);
    assert_time_shifted(&s, "return redis.call('time')", -5 * CLOCKSHIM_S);
    redis_server_stop(&s);
}

/* The suspend: clockshim_probe, shimmed, through two pipes. */

/* The clocks the probe reports, in its order: the first three lag. */
#define NCLOCKS 5
#define MONO 0
#define RAW 2
#define BOOT 3
static const clockid_t clocks[NCLOCKS] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE,
                                          CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
static const char *const clock_names[NCLOCKS] = {"MONOTONIC", "MONOTONIC_COARSE",
                                                 "MONOTONIC_RAW", "BOOTTIME", "REALTIME"};

struct probe {
    pid_t pid;
    int to, from; /* its stdin, its stdout */
};

static void probe_start(struct probe *p)
{
    char preload[600], file[sizeof cs.path + 32];
    char *const argv[] = {CLOCKSHIM_PROBE_PATH, NULL};
    char *const envp[] = {preload, file, NULL}; /* its whole environment */
    int in[2], out[2];
    pid_t parent = getpid();

    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", CLOCKSHIM_PATH);
    snprintf(file, sizeof file, "%s=%s", CLOCKSHIM_ENV, cs.path);
    cr_assert(pipe(in) == 0 && pipe(out) == 0);
    p->pid = fork();
    cr_assert_geq(p->pid, 0);
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = in[1];
    p->from = out[0];
}

/* End of its stdin: it exits; reaped within 5 s (killed past that). */
static void probe_stop(struct probe *p)
{
    close(p->to);
    close(p->from);
    cr_assert_eq(fixture_reap(p->pid, 5000), 0);
}

/* Send cmd and read the line it answers (within 5 s): the clocks of the
 * probe (r) or of its child (g), with ours just before and just after. */
static void probe_read(struct probe *p, char cmd, int64_t got[NCLOCKS], int64_t before[NCLOCKS],
                       int64_t after[NCLOCKS])
{
    char line[256];
    size_t n = 0;
    int64_t deadline;
    long long v[NCLOCKS];

    for (int i = 0; i < NCLOCKS; i++)
        before[i] = now_ns(clocks[i]);
    deadline = now_ns(CLOCK_MONOTONIC) + 5 * CLOCKSHIM_S;
    cr_assert_eq(write(p->to, &cmd, 1), 1);
    while (n == 0 || line[n - 1] != '\n') {
        struct pollfd pfd = {p->from, POLLIN, 0};
        int64_t left_ms = (deadline - now_ns(CLOCK_MONOTONIC)) / MS;
        ssize_t k;

        cr_assert(left_ms > 0 && n < sizeof line - 1, "no line from the probe in 5 s");
        if (poll(&pfd, 1, (int)left_ms) <= 0)
            continue;
        k = read(p->from, line + n, sizeof line - 1 - n);
        cr_assert_gt(k, 0, "the probe is gone");
        n += (size_t)k;
    }
    for (int i = NCLOCKS - 1; i >= 0; i--)
        after[i] = now_ns(clocks[i]);
    line[n] = '\0';
    cr_assert_eq(sscanf(line, "%lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4]),
                 NCLOCKS, "the probe said: %s", line);
    for (int i = 0; i < NCLOCKS; i++)
        got[i] = v[i];
}

/* The probe's (or its child's) clocks, the monotonic ones plus lag, were
 * read between before and after: exact, as each clock is the same clock
 * the test reads, and a coarse one never passes the fine one. */
static void assert_lag(const char *who, char cmd, struct probe *p, int64_t lag,
                       int64_t got[NCLOCKS])
{
    int64_t before[NCLOCKS], after[NCLOCKS];

    probe_read(p, cmd, got, before, after);
    for (int i = 0; i < NCLOCKS; i++) {
        int64_t t = got[i] + (i <= RAW ? lag : 0);

        cr_assert(t >= before[i] && t <= after[i],
                  "%s's CLOCK_%s with a lag of %lld ms: %lld ms off the window of %lld ms", who,
                  clock_names[i], (long long)(lag / MS),
                  (long long)((t < before[i] ? t - before[i] : t - after[i]) / MS),
                  (long long)((after[i] - before[i]) / MS));
    }
}

Test(clockshim, a_suspend_lags_the_monotonic_clocks_of_one_process, .init = setup,
     .fini = teardown)
{
    struct probe p;
    int64_t first[NCLOCKS], then[NCLOCKS], child[NCLOCKS], stopped_at, lag, jump;
    int st = 0, i;

    probe_start(&p);
    clockshim_set_lag(&cs, p.pid, 0);
    assert_lag("the probe", 'r', &p, 0, first);

    /* The suspend: stopped (and seen so) for 1.5 s, its length written
     * as the lag, then resumed. */
    cr_assert_eq(kill(p.pid, SIGSTOP), 0);
    for (i = 0; i < 500 && waitpid(p.pid, &st, WUNTRACED | WNOHANG) != p.pid; i++)
        fixture_sleep_ms(2);
    cr_assert(i < 500 && WIFSTOPPED(st), "the probe did not stop in 1 s");
    stopped_at = now_ns(CLOCK_MONOTONIC);
    fixture_sleep_ms(1500);
    lag = now_ns(CLOCK_MONOTONIC) - stopped_at;
    clockshim_set_lag(&cs, p.pid, lag);
    cr_assert_eq(kill(p.pid, SIGCONT), 0);

    assert_lag("the probe", 'r', &p, lag, then);
    cr_log_info("lag %lld ms: MONOTONIC went on %lld ms, BOOTTIME %lld ms", (long long)(lag / MS),
                (long long)((then[MONO] - first[MONO]) / MS),
                (long long)((then[BOOT] - first[BOOT]) / MS));
    cr_assert_geq(then[MONO], first[MONO], "MONOTONIC went back");
    /* BOOTTIME jumped by the lag against MONOTONIC: give or take the
     * time between the probe's two readings of them, each time (20 ms:
     * a probe pre-empted there on a busy machine). */
    jump = (then[BOOT] - then[MONO]) - (first[BOOT] - first[MONO]);
    cr_assert(jump >= lag - 20 * MS && jump <= lag + 20 * MS,
              "BOOTTIME jumped %lld ms against MONOTONIC, not the lag's %lld", (long long)(jump / MS),
              (long long)(lag / MS));

    /* What it forks and execs inherits the shim, not the lag; unless the
     * lag is every process's (pid 0). */
    assert_lag("its child", 'g', &p, 0, child);
    clockshim_set_lag(&cs, 0, lag);
    assert_lag("its child with pid 0", 'g', &p, lag, child);
    assert_lag("the probe with pid 0", 'r', &p, lag, then);
    probe_stop(&p);
}
