/*
 * tests/test_examples.c - the programs of docs/examples/, each run against
 * a private redis-server, their output checked for what they say they did:
 * the README's first C and C++ programs; the timing wheel alone; the
 * leader pausing while its renewals are held back (on_risk) and stepping
 * down when its lock is deleted behind its back (on_lost), a new term
 * starting; the scheduler skipping a job held elsewhere and stopping the
 * jobs whose locks are deleted; the C++ server's threads never two inside
 * one account; two readers sharing a read-write lock before a writer; three
 * workers on a semaphore of two permits.
 * (test_embedded runs libev_server.c, test_metrics metrics_server.c.)
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <leasewheel.h>

#include "redis_server.h"
#include "wait_child.h"

extern char **environ;

static struct redis_server srv;
static char port[16];

static void setup(void)
{
    cr_assert_eq(redis_server_start(&srv, NULL), 0, "redis-server did not start");
    snprintf(port, sizeof port, "%d", srv.port);
}

static void teardown(void)
{
    redis_server_stop(&srv);
}

#define EXAMPLE_TEST(name) Test(examples, name, .init = setup, .fini = teardown, .timeout = 120)

/* A running example: its stdout, read a line at a time. */
struct example {
    pid_t pid;
    int out;
    char buf[8192];
    size_t len;
};

static void example_start(struct example *ex, char *const argv[])
{
    posix_spawn_file_actions_t fa;
    int p[2];

    memset(ex, 0, sizeof *ex);
    cr_assert_eq(pipe(p), 0, "pipe");
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    cr_assert_eq(posix_spawn(&ex->pid, argv[0], &fa, NULL, argv, environ), 0, "%s", argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    ex->out = p[0];
}

/* Take the first whole line in ex->buf into line (size cap); 0 if none. */
static int take_line(struct example *ex, char *line, size_t cap)
{
    char *nl = memchr(ex->buf, '\n', ex->len);
    size_t n;

    if (!nl)
        return 0;
    n = (size_t)(nl - ex->buf);
    snprintf(line, cap, "%.*s", (int)n, ex->buf);
    memmove(ex->buf, nl + 1, ex->len - n - 1);
    ex->len -= n + 1;
    return 1;
}

/*
 * Read lines from any of the n examples until one has a line containing
 * needle, for at most ms: the index of that example (the line in line),
 * or a failed assertion.  Lines before it are skipped (and logged).
 */
static int expect_any(struct example **ex, int n, const char *needle, char *line, size_t cap,
                      int ms)
{
    uint64_t until = lw_clock_now() + (uint64_t)ms * 1000000u;

    for (;;) {
        struct pollfd p[4];

        for (int i = 0; i < n; i++)
            while (take_line(ex[i], line, cap)) {
                cr_log_info("example %d: %s", i, line);
                if (strstr(line, needle))
                    return i;
            }
        cr_assert_lt(lw_clock_now(), until, "no line with \"%s\" in %d ms", needle, ms);
        for (int i = 0; i < n; i++)
            p[i] = (struct pollfd){.fd = ex[i]->out, .events = POLLIN};
        if (poll(p, (nfds_t)n, 100) <= 0)
            continue;
        for (int i = 0; i < n; i++)
            if (p[i].revents) {
                ssize_t got = read(ex[i]->out, ex[i]->buf + ex[i]->len,
                                   sizeof ex[i]->buf - 1 - ex[i]->len);

                cr_assert_gt(got, 0, "example %d ended before saying \"%s\"", i, needle);
                ex[i]->len += (size_t)got;
            }
    }
}

static void expect(struct example *ex, const char *needle, char *line, size_t cap)
{
    expect_any(&ex, 1, needle, line, cap, 20000);
}

/* Stop it with SIGTERM (unless it ended on its own): its exit status. */
static int example_end(struct example *ex, int term)
{
    int st;

    if (term)
        kill(ex->pid, SIGTERM);
    st = wait_child(ex->pid, 20000);
    close(ex->out);
    return st;
}

static long long redis_int(const char *fmt, const char *key)
{
    redisReply *r = redis_server_command(&srv, fmt, key);
    long long v;

    cr_assert_not_null(r, "no reply to %s", fmt);
    cr_assert(r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_STRING,
              "%s %s: not an integer", fmt, key);
    /* A counter's GET is a string. */
    v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : r->integer;
    freeReplyObject(r);
    return v;
}

/* Redis's answer as a string into buf ("" for nil). */
static const char *redis_str(const char *fmt, const char *arg, char *buf, size_t size)
{
    redisReply *r = redis_server_command(&srv, fmt, arg);

    cr_assert_not_null(r, "no reply to %s", fmt);
    snprintf(buf, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return buf;
}

/* The README's first program: the lock taken (a fencing token), released. */
static void first_program(const char *path)
{
    char *argv[] = {(char *)path, port, NULL};
    struct example ex;
    char line[256];

    example_start(&ex, argv);
    expect(&ex, "holding orders:42, fencing token ", line, sizeof line);
    cr_assert_gt(strtoull(strstr(line, "token ") + 6, NULL, 10), 0, "%s", line);
    expect(&ex, "released orders:42", line, sizeof line);
    cr_assert_eq(example_end(&ex, 0), 0, "%s failed", path);
    cr_assert_eq(redis_int("EXISTS %s", "orders:42"), 0, "the lock is left");
}

EXAMPLE_TEST(first)
{
    first_program(FIRST_PATH);
}

#ifdef FIRST_CXX_PATH
EXAMPLE_TEST(first_cxx)
{
    first_program(FIRST_CXX_PATH);
}

/* Four threads, 50 requests each, on three accounts: all served or
 * turned away busy, never two threads inside one account. */
EXAMPLE_TEST(cxx_server)
{
    char *argv[] = {CXX_SERVER_PATH, port, "4", "50", NULL};
    struct example ex;
    char line[256];

    example_start(&ex, argv);
    for (int i = 0; i < 3; i++) {
        expect(&ex, "account:", line, sizeof line);
        cr_assert(strstr(line, "at most 1 thread inside at once"), "%s", line);
    }
    expect(&ex, "served ", line, sizeof line);
    cr_assert(strstr(line, " 0 failed"), "%s", line);
    cr_assert_eq(example_end(&ex, 0), 0, "cxx_server failed: %s", line);
}
#endif

/* The term of a "leading (term N)" line. */
static unsigned long long term_of(const char *line)
{
    const char *at = strstr(line, "(term ");

    cr_assert(at, "no term in '%s'", line);
    return strtoull(at + 6, NULL, 10);
}

/*
 * Two candidates of one election, on a 3 s lease (renewed every second):
 * one leads; its lock deleted behind its back, it steps down at its next
 * renewal (lost: not owner), and a leader, either, starts a later term
 * (the name's fencing tokens), its value (its pid) beside it.  At SIGTERM the leader
 * resigns and both exit 0, the lock released.
 */
EXAMPLE_TEST(leader)
{
    char *argv[] = {LEADER_PATH, port, "reports", "3000", NULL};
    struct example a, b, *both[] = {&a, &b};
    char line[256], value[32];
    unsigned long long first, second;
    int lead;

    example_start(&a, argv);
    expect(&a, "leading (term ", line, sizeof line);
    first = term_of(line);
    cr_assert_gt(first, 0);
    example_start(&b, argv);
    expect(&b, "campaigning for leader:reports", line, sizeof line);

    cr_assert_eq(redis_int("DEL %s", "leader:reports"), 1, "the leader's lock");
    expect(&a, "stepped down after", line, sizeof line);
    cr_assert(strstr(line, "lost (not owner)"), "%s", line);
    lead = expect_any(both, 2, "leading (term ", line, sizeof line, 20000);
    second = term_of(line);
    cr_assert_gt(second, first, "'%s' after term %llu", line, first);
    cr_assert_eq(redis_int("EXISTS %s", "leader:reports"), 1, "the second term's lock");
    snprintf(value, sizeof value, "pid %ld", (long)both[lead]->pid);
    cr_assert_str_eq(redis_str("HGET leader:reports %s", "leasewheel:value", line, sizeof line),
                     value, "the leader's value, beside its lock");

    kill(both[lead]->pid, SIGTERM);
    expect(both[lead], "resigned after", line, sizeof line);
    cr_assert_eq(example_end(both[lead], 0), 0, "the leader failed");
    /* The other one may take over meanwhile: then it resigns too. */
    cr_assert_eq(example_end(both[!lead], 1), 0, "the other failed");
    cr_assert_eq(redis_int("EXISTS %s", "leader:reports"), 0, "the lock is left");
    cr_assert_geq(redis_int("GET %s", "redisson_lock_token:{leader:reports}"), (long long)second,
                  "terms");
}

/* The rest of what ex says until it ends, appended to out (size cap). */
static void rest_of(struct example *ex, char *out, size_t cap)
{
    size_t used = strlen(out);
    ssize_t got;

    for (int reads = 0; reads < 1000 && used + 1 < cap; reads++) {
        if (ex->len) {
            size_t n = ex->len < cap - 1 - used ? ex->len : cap - 1 - used;

            memcpy(out + used, ex->buf, n);
            used += n;
            ex->len = 0;
        }
        got = read(ex->out, ex->buf, sizeof ex->buf - 1);
        if (got <= 0)
            break;
        ex->len = (size_t)got;
    }
    out[used] = 0;
}

/*
 * Asked to stop (SIGTERM) while it campaigns, with the lock freed just
 * then: the acquire under way may still succeed, and the leader then
 * leads no step and resigns, the lock released; or it stops campaigning.
 * Never a loss it did not have ("stepped down"), whatever its stack held.
 */
EXAMPLE_TEST(leader_stopped_while_campaigning)
{
    char *argv[] = {LEADER_PATH, port, "stop", "3000", NULL};
    struct example a;
    char line[256], said[8192] = "";
    redisReply *r;

    r = redis_server_command(&srv, "HSET %s other:1 1", "leader:stop");
    freeReplyObject(r);
    cr_assert_eq(redis_int("PEXPIRE %s 60000", "leader:stop"), 1);
    example_start(&a, argv);
    expect(&a, "campaigning for leader:stop", line, sizeof line);
    kill(a.pid, SIGTERM);
    cr_assert_eq(redis_int("DEL %s", "leader:stop"), 1);
    r = redis_server_command(&srv, "PUBLISH %s 0", "redisson_lock__channel:{leader:stop}");
    freeReplyObject(r);
    cr_assert_eq(wait_child(a.pid, 20000), 0, "the leader failed");
    rest_of(&a, said, sizeof said);
    close(a.out);
    cr_log_info("leader said: %s", said);
    cr_assert_null(strstr(said, "stepped down"), "%s", said);
    cr_assert(!strstr(said, "leading") || strstr(said, "resigned after 0 steps\n"), "%s", said);
    cr_assert_eq(redis_int("EXISTS %s", "leader:stop"), 0, "the lock is left");
}

/*
 * One leader on a 3 s lease (renewed every second); CLIENT PAUSE WRITE for
 * 1.8 s holds its renewals back past half the lease, whatever the phase:
 * it pauses ("at risk"), then resumes when the renewal held back is
 * confirmed ("safe again").  Should the machine be slow enough for the
 * lease to run out first, it steps down instead (lost: expired), which
 * the example also handles; either way it says so.
 */
EXAMPLE_TEST(leader_at_risk)
{
    char *argv[] = {LEADER_PATH, port, "reports", "3000", NULL};
    struct example a;
    char line[256];
    redisReply *r;

    example_start(&a, argv);
    expect(&a, "leading (term ", line, sizeof line);
    r = redis_server_command(&srv, "CLIENT PAUSE 1800 WRITE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
    freeReplyObject(r);
    expect(&a, "leader:reports at risk", line, sizeof line);
    cr_assert(strstr(line, ": pausing"), "%s", line);
    for (;;) {
        expect(&a, "", line, sizeof line);
        if (strstr(line, "safe again") || strstr(line, "stepped down"))
            break;
    }
    if (strstr(line, "stepped down"))
        cr_assert(strstr(line, "lost (expired)"), "%s", line);
    else
        cr_assert(strstr(line, ": resuming"), "%s", line);
    cr_assert_eq(example_end(&a, 1), 0, "the leader failed");
}

/*
 * Twenty jobs, one of whose locks another process holds (a Redisson-style
 * hold by another owner field): 19 run.  Two of their locks deleted, those
 * two jobs stop; at SIGTERM the 17 others finish and release their locks.
 */
EXAMPLE_TEST(scheduler)
{
    char *argv[] = {SCHEDULER_PATH, port, "20", "3000", NULL};
    redisReply *r;
    struct example ex;
    char line[256];
    int seen3 = 0, seen11 = 0;

    r = redis_server_command(&srv, "HSET job:5 someone-else:1 1");
    cr_assert_not_null(r, "HSET");
    freeReplyObject(r);
    cr_assert_eq(redis_int("PEXPIRE %s 60000", "job:5"), 1, "PEXPIRE");

    example_start(&ex, argv);
    expect(&ex, "19 jobs running, 1 held elsewhere", line, sizeof line);
    cr_assert_eq(redis_int("DEL %s", "job:3"), 1, "job 3's lock");
    cr_assert_eq(redis_int("DEL %s", "job:11"), 1, "job 11's lock");
    while (!seen3 || !seen11) {
        expect(&ex, "stopped after", line, sizeof line);
        cr_assert(strstr(line, "lock lost (not owner)"), "%s", line);
        seen3 |= strncmp(line, "job 3 ", 6) == 0;
        seen11 |= strncmp(line, "job 11 ", 7) == 0;
        cr_assert(strncmp(line, "job 3 ", 6) == 0 || strncmp(line, "job 11 ", 7) == 0,
                  "another job stopped: %s", line);
    }
    cr_assert_eq(redis_int("EXISTS %s", "job:0"), 1, "job 0 still held");
    kill(ex.pid, SIGTERM);
    expect(&ex, "jobs finished", line, sizeof line);
    cr_assert_str_eq(line, "17 jobs finished, 2 stopped by a lost lock", "%s", line);
    cr_assert_eq(example_end(&ex, 0), 0, "scheduler failed");
    cr_assert_eq(redis_int("EXISTS %s", "job:0"), 0, "job 0's lock released");
    cr_assert_eq(redis_int("EXISTS %s", "job:5"), 1, "the other holder's lock untouched");
}

/* The wheel alone (no Redis): three renewals, in the order they fall due. */
EXAMPLE_TEST(wheel)
{
    char *argv[] = {WHEEL_PATH, NULL};
    struct example ex;
    char line[256];

    example_start(&ex, argv);
    expect(&ex, "renew ", line, sizeof line);
    cr_assert_str_eq(line, "renew orders:42 (due at 10 ms)", "%s", line);
    expect(&ex, "renew ", line, sizeof line);
    cr_assert_str_eq(line, "renew stock:7 (due at 20 ms)", "%s", line);
    expect(&ex, "renew ", line, sizeof line);
    cr_assert_str_eq(line, "renew report:1 (due at 30 ms)", "%s", line);
    cr_assert_eq(example_end(&ex, 0), 0, "wheel failed");
}

/* Its whole output until it exits (at most 20 s), into out (cap bytes). */
static void read_all(struct example *ex, char *out, size_t cap)
{
    uint64_t until = lw_clock_now() + 20000000000u;
    size_t len = 0;

    for (;;) {
        struct pollfd p = {.fd = ex->out, .events = POLLIN};
        ssize_t got;

        cr_assert_lt(lw_clock_now(), until, "no end of output in 20 s: %.*s", (int)len, out);
        if (poll(&p, 1, 100) <= 0)
            continue;
        got = read(ex->out, out + len, cap - 1 - len);
        cr_assert_geq(got, 0, "read");
        if (got == 0)
            break;
        len += (size_t)got;
    }
    out[len] = '\0';
    cr_log_info("%s", out);
}

/* Where needle is in out (a failed assertion if nowhere). */
static const char *at(const char *out, const char *needle)
{
    const char *p = strstr(out, needle);

    cr_assert_not_null(p, "no \"%s\" in:\n%s", needle, out);
    return p;
}

/*
 * Two readers share report:7; the first is refused the write lock (no
 * upgrade); the writer finds it busy, gets it only after both readers
 * said they release, downgrades, and leaves it free.
 */
EXAMPLE_TEST(rwlock)
{
    char *argv[] = {RWLOCK_PATH, port, NULL};
    struct example ex;
    char out[4096];
    const char *holding;

    example_start(&ex, argv);
    read_all(&ex, out, sizeof out);
    cr_assert_eq(example_end(&ex, 0), 0, "rwlock failed:\n%s", out);
    at(out, "reader 1 reading\n");
    at(out, "reader 2 reading\n");
    at(out, "reader 1: no upgrade (LW_EDEADLK)\n");
    holding = at(out, "writer: holding report:7 alone, fencing token ");
    cr_assert_gt(strtoull(holding + strlen("writer: holding report:7 alone, fencing token "),
                          NULL, 10),
                 0, "%s", out);
    cr_assert_lt(at(out, "writer: 2 readers hold report:7, waiting\n"), holding, "%s", out);
    cr_assert_lt(at(out, "reader 1 done, releasing\n"), holding, "%s", out);
    cr_assert_lt(at(out, "reader 2 done, releasing\n"), holding, "%s", out);
    cr_assert_lt(holding, at(out, "writer: took the read lock too (a downgrade)\n"), "%s", out);
    at(out, "writer: released the write lock, still reading\n");
    at(out, "released report:7\n");
    cr_assert_eq(redis_int("EXISTS %s", "report:7"), 0, "the lock is left");
}

/*
 * Three workers on 2 permits: all got in, never more than two at once;
 * worker 1's permit released by the main thread; both permits back.
 */
EXAMPLE_TEST(permits)
{
    char *argv[] = {PERMITS_PATH, port, NULL};
    struct example ex;
    char out[4096];

    example_start(&ex, argv);
    read_all(&ex, out, sizeof out);
    cr_assert_eq(example_end(&ex, 0), 0, "permits failed:\n%s", out);
    at(out, "renders created with 2 permits\n");
    for (int i = 1; i <= 3; i++) {
        char line[32];

        snprintf(line, sizeof line, "worker %d inside (", i);
        at(out, line);
    }
    cr_assert_null(strstr(out, "(3 inside)"), "%s", out);
    cr_assert_lt(at(out, "(1 inside)"), at(out, "main released worker 1's permit "), "%s", out);
    at(out, ": ok\n");
    at(out, "3 workers done, at most 2 inside at once, 2 permits available\n");
    cr_assert_eq(redis_int("ZCARD %s", "{renders}:timeout"), 0, "a permit is left");
}
