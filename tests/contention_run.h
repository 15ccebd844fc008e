/*
 * tests/contention_run.h - the harness of the tests of mutual exclusion
 * under faults (test_contention.c, test_fault_model.c): contenders
 * (contender.c: library clients and loops of lwlock) started as
 * processes on the fixture's Redis, or on a proxy in front of it; faults
 * injected between their rounds on the fixture's server, each logged
 * from its start to its end in the contenders' log; and a run's numbers
 * (contention_log.h reads the log and checks what may be inside
 * together).
 *
 * The includer defines LAST_ARGS (the contenders' last arguments: over
 * TLS, the files they connect with) and includes lock_util.h first (the
 * fixture's server, srv).
 */
#ifndef LW_TESTS_CONTENTION_RUN_H
#define LW_TESTS_CONTENTION_RUN_H

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contention_log.h"

#define LEASE_MS 1200
#define NAMES 3 /* a contender's names, unless it says */
#define CLIENT_TICK_MS 10
#define LWLOCK_TICK_MS 100 /* lwlock's tick: lease/10, at most 100 ms */
#define LONG_FAULT_MS (LEASE_MS + 800) /* every holder is told during it */
#define SHORT_FAULT_MS 400              /* renewals are only delayed */
#define WAIT_EXIT_MS 30000 /* lwlock's wait (1 s) and command timeout (3 s), and more */
#define MAX_SHOWN 8
#define MAX_CONTENDERS 16

static char dir[256];       /* the test's temporary directory */
static char log_path[300];  /* the shared log */
static int log_fd = -1;     /* the injector's lines */
static int contender_port;  /* where the contenders connect: srv's port, or a proxy's */

/* The test's directory and log; the contenders connect to srv. */
static inline void contention_open(void)
{
    snprintf(dir, sizeof dir, "/tmp/lw-contention-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(log_fd, 0);
    contender_port = srv.port;
}

static inline void contention_close(void)
{
    char cmd[300];

    close(log_fd);
    if (getenv("LW_TEST_KEEP")) { /* to look at the log afterwards */
        fprintf(stderr, "contention: kept %s\n", dir);
    } else {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void)!system(cmd);
    }
}

/* ---- The contenders ---- */

struct contender {
    const char *id;   /* c*: library clients; l*: lwlock loops */
    const char *mode; /* contender.c's mode */
    int hold_max_ms;  /* critical sections of 1..hold_max_ms */
    int wait_ms;      /* how long an acquire waits for a held name */
    int idle_max_ms;  /* between rounds: 0..idle_max_ms */
    pid_t pid;
    const char *kind; /* "read" or "write" (a read-write lock), NULL: a
                         lock */
    int permits;      /* one permit of a semaphore of N; 0: locks */
    const char *prefix; /* its names: prefix0 ...; NULL: "lock" */
    int names;          /* how many; 0: NAMES (1 for permits) */
    int max_inflight;   /* a client's in-flight cap; 0: the default */
    int lease_ms;       /* 0: LEASE_MS */
    int hold_min_ms;    /* critical sections of hold_min_ms..hold_max_ms; 0: 1 */
    const char *clock;  /* its wall clock: libfaketime's timestamp file of
                           that name in dir (the includer defines
                           LIBFAKETIME_PATH); NULL: the true clock */
    int lock_delay_ms;  /* an election's candidate: its terms' lock delay */
};

/* Child: c's wall clock is its file's, libfaketime preloaded into the
 * contender and every process it starts (lwlock, its COMMAND), never into
 * redis-server.  The file is read at every reading of the wall clock
 * (FAKETIME_NO_CACHE), so that a test moves it while the contender runs;
 * CLOCK_MONOTONIC and CLOCK_BOOTTIME (the log's, the library's timing of
 * leases) stay true (FAKETIME_DONT_FAKE_MONOTONIC). */
static inline void preload_clock(const struct contender *c)
{
    char file[300];

    if (!c->clock)
        return;
#ifdef LIBFAKETIME_PATH
    snprintf(file, sizeof file, "%s/%s", dir, c->clock);
    setenv("LD_PRELOAD", LIBFAKETIME_PATH, 1);
    setenv("FAKETIME_TIMESTAMP_FILE", file, 1);
    setenv("FAKETIME_NO_CACHE", "1", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
#else
    (void)file;
    fprintf(stderr, "contender %s: a clock of its own needs LIBFAKETIME_PATH\n", c->id);
    _exit(127);
#endif
}

/* libfaketime's first process of a tree (a contender with a clock: what
 * it starts inherit them) makes a semaphore and shared memory named by its
 * pid, and removes them as it exits, not when it is killed: once it is
 * gone, removed here too (a later process of that pid would go without). */
static inline void forget_clock(pid_t pid)
{
    char name[64];

    snprintf(name, sizeof name, "/faketime_shm_%ld", (long)pid);
    shm_unlink(name);
    snprintf(name, sizeof name, "/faketime_sem_%ld", (long)pid);
    sem_unlink(name);
}

/* Child: contender MODE ... with stdout and stderr to files of dir. */
static inline void exec_contender(const struct contender *c)
{
    char port[16], names[16], lease[16], wait[16], hold[16], idle[16], stop[300], out[300],
        permits[16], cap[16], hold_min[16], delay[16];
    int fd;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 1; i <= 2; i++) {
        snprintf(out, sizeof out, "%s/%s.%s", dir, c->id, i == 1 ? "out" : "err");
        if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0) {
            dup2(fd, i);
            close(fd);
        }
    }
    snprintf(port, sizeof port, "%d", contender_port);
    snprintf(names, sizeof names, "%d", c->names ? c->names : c->permits ? 1
                                                                         : NAMES);
    snprintf(cap, sizeof cap, "%d", c->max_inflight);
    snprintf(permits, sizeof permits, "%d", c->permits);
    snprintf(lease, sizeof lease, "%d", c->lease_ms ? c->lease_ms : LEASE_MS);
    snprintf(wait, sizeof wait, "%d", c->wait_ms);
    snprintf(hold, sizeof hold, "%d", c->hold_max_ms);
    snprintf(hold_min, sizeof hold_min, "%d", c->hold_min_ms);
    snprintf(idle, sizeof idle, "%d", c->idle_max_ms);
    snprintf(delay, sizeof delay, "%d", c->lock_delay_ms);
    snprintf(stop, sizeof stop, "%s/stop", dir);
    preload_clock(c);
    /* No --kind: --names once more, which changes nothing; --permits 0: a
     * lock. */
    execl(CONTENDER_PATH, CONTENDER_PATH, c->mode, "--port", port, "--names", names,
          c->kind ? "--kind" : "--names", c->kind ? c->kind : names, "--lease-ms", lease,
          "--wait-ms", wait, "--hold-min-ms", hold_min, "--hold-max-ms", hold, "--idle-max-ms",
          idle, "--permits", permits, "--prefix", c->prefix ? c->prefix : "lock",
          "--max-inflight", cap, "--deadline-ms", "120000", "--stop", stop, "--log", log_path,
          "--id", c->id, "--lwlock", LWLOCK_PATH, "--lock-delay-ms", delay, LAST_ARGS);
    _exit(127);
}

static inline void start_contenders(struct contender *cs, int n)
{
    for (int i = 0; i < n; i++) {
        cs[i].pid = fork();
        cr_assert_geq(cs[i].pid, 0);
        if (cs[i].pid == 0)
            exec_contender(&cs[i]);
    }
}

/* Tell them to stop after their round and wait (bounded): their exit
 * statuses must be 0. */
static inline void stop_contenders(struct contender *cs, int n)
{
    char stop[300];
    uint64_t until = now_ms() + WAIT_EXIT_MS;
    int fd, st;

    snprintf(stop, sizeof stop, "%s/stop", dir);
    fd = open(stop, O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    for (int i = 0; i < n; i++) {
        while (waitpid(cs[i].pid, &st, WNOHANG) != cs[i].pid) {
            if (now_ms() >= until) {
                kill(cs[i].pid, SIGKILL);
                waitpid(cs[i].pid, &st, 0);
                cr_assert(0, "contender %s did not stop", cs[i].id);
            }
            sleep_ms(10);
        }
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "contender %s: status %d", cs[i].id,
                  st);
    }
}

static inline void read_summary(const struct contender *c, struct summary *s)
{
    char path[300];

    snprintf(path, sizeof path, "%s/%s.out", dir, c->id);
    cr_assert(read_summary_file(path, s), "contender %s printed no summary", c->id);
}

/* Copy a contender's stderr to ours, but for lwlock's expected one-line
 * messages (busy, lost, unavailable): a sanitizer's report from any of
 * its processes lands in the test log. */
static inline int echo_stderr(const struct contender *c)
{
    char path[300], line[1024];
    FILE *f;
    int expected = 0;

    snprintf(path, sizeof path, "%s/%s.err", dir, c->id);
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "lwlock: ", 8))
            expected++;
        else
            fprintf(stderr, "[%s stderr] %s", c->id, line);
    }
    fclose(f);
    return expected;
}

/* ---- Faults ---- */

/* One line of the log for the injector: kind fault/faultend, name the
 * fault's, round its sequence number. */
static inline void log_fault(const char *kind, const char *fault, int seq)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s injector %d %" PRIu64 " 0\n", kind, fault, seq,
                     lw_clock_now());

    cr_assert_eq(write(log_fd, line, (size_t)n), n);
}

static inline int command_ok(const char *fmt, const char *arg)
{
    redisReply *r = redis_server_command(&srv, fmt, arg);
    int ok = r && r->type != REDIS_REPLY_ERROR;

    if (r && !ok)
        fprintf(stderr, "%s: %s\n", fmt, r->str);
    freeReplyObject(r);
    return ok;
}

/* Connections CLIENT KILL closed: normal ones, pub/sub ones. */
static long killed_normal, killed_pubsub;

static inline int kill_clients(const char *type, long *count)
{
    redisReply *r = redis_server_command(&srv, "CLIENT KILL TYPE %s", type);
    int ok = r && r->type == REDIS_REPLY_INTEGER;

    if (ok)
        *count += r->integer;
    freeReplyObject(r);
    return ok;
}

static inline int fault_client_kill(void)
{
    return kill_clients("normal", &killed_normal);
}

/* The pub/sub connections of waiters, killed once some client is
 * subscribed (waiting for a held name; waited for up to 3 s). */
static inline int fault_pubsub_kill(void)
{
    for (int i = 0; i < 300; i++) {
        redisReply *r = redis_server_command(&srv, "CLIENT LIST TYPE %s", "pubsub");
        int some = r && r->type == REDIS_REPLY_STRING && r->len > 0;

        freeReplyObject(r);
        if (some)
            break;
        sleep_ms(10);
    }
    return kill_clients("pubsub", &killed_pubsub);
}

/* A restart that keeps the keys: SHUTDOWN SAVE writes them, with their
 * expiry times and the fencing counters, to the server's RDB file, from
 * which it starts again on the same port, down_ms later.  Every
 * connection is closed, the scripts are gone. */
static inline int restart_keeping(long long min_keys, int down_ms)
{
    int port = srv.port, kept;
    redisReply *r = redis_server_command(&srv, "SHUTDOWN %s", "SAVE");

    /* No reply: the server closed the connection as it exited. */
    if (r) {
        fprintf(stderr, "SHUTDOWN SAVE: %s\n", r->type == REDIS_REPLY_ERROR ? r->str : "?");
        freeReplyObject(r);
        return 0;
    }
    sleep_ms(down_ms);
    if (redis_server_restart(&srv) != 0 || srv.port != port)
        return 0;
    r = redis_server_command(&srv, "DBSIZE");
    kept = r && r->type == REDIS_REPLY_INTEGER && r->integer >= min_keys;
    freeReplyObject(r);
    return kept;
}

/* Some key is kept: readers and permits draw no token, a writer may not
 * have come by every name yet (the semaphore's count is kept). */
static inline int fault_restart_keeping_some(void)
{
    return restart_keeping(1, 0);
}

static inline int fault_stop_long(void)
{
    if (redis_server_signal(&srv, SIGSTOP))
        return 0;
    sleep_ms(LONG_FAULT_MS);
    return redis_server_signal(&srv, SIGCONT) == 0;
}

static inline int pause_for(int ms)
{
    char arg[16];

    snprintf(arg, sizeof arg, "%d", ms);
    if (!command_ok("CLIENT PAUSE %s ALL", arg))
        return 0;
    sleep_ms(ms);
    return 1;
}

static inline int fault_pause_short(void)
{
    return pause_for(SHORT_FAULT_MS);
}

static inline int fault_pause_long(void)
{
    return pause_for(LONG_FAULT_MS);
}

static inline int fault_debug_sleep(void)
{
    char arg[16];

    snprintf(arg, sizeof arg, "%.3f", SHORT_FAULT_MS / 1000.0);
    return command_ok("DEBUG SLEEP %s", arg);
}

static inline int fault_script_flush(void)
{
    return command_ok("SCRIPT %s", "FLUSH");
}

static inline int fault_flushall(void)
{
    return command_ok("FLUSHALL %s", "SYNC");
}

/* An empty server on the same port. */
static inline int fault_restart(void)
{
    int port = srv.port;

    return redis_server_restart(&srv) == 0 && srv.port == port;
}

struct fault {
    const char *name;
    int (*inject)(void);
};

/* Warm up, then each fault reps times, gap_ms apart (and after the last),
 * each logged from its start to its end. */
static inline void inject(const struct fault *faults, int n, int reps, int gap_ms)
{
    int seq = 0;

    sleep_ms(1500);
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++, seq++) {
            log_fault("fault", faults[i].name, seq);
            cr_assert(faults[i].inject(), "fault %s failed", faults[i].name);
            log_fault("faultend", faults[i].name, seq);
            sleep_ms(gap_ms);
        }
}

/* ---- The log (contention_log.h reads it) ---- */

/* The injector's faults, from its lines (sorted by intervals()). */
struct span {
    const char *name;
    uint64_t start, end;
};

static inline struct span *fault_spans(const struct record *recs, size_t n, int *count)
{
    struct span *sp = calloc(n + 1, sizeof *sp);
    int k = 0;

    cr_assert_not_null(sp);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(recs[i].holder, "injector"))
            continue;
        if (!strcmp(recs[i].kind, "fault"))
            sp[k++] = (struct span){recs[i].name, recs[i].ns, 0};
        else if (k > 0 && !strcmp(recs[i].kind, "faultend"))
            sp[k - 1].end = recs[i].ns;
    }
    *count = k;
    return sp;
}

static inline int count_faults(const struct span *sp, int n, const char *name)
{
    int k = 0;

    for (int i = 0; i < n; i++)
        k += !strcmp(sp[i].name, name) && sp[i].end;
    return k;
}

static inline double longest_fault_ms(const struct span *sp, int n, const char *name)
{
    double ms = 0;

    for (int i = 0; i < n; i++)
        if (!strcmp(sp[i].name, name) && sp[i].end && (sp[i].end - sp[i].start) / 1e6 > ms)
            ms = (sp[i].end - sp[i].start) / 1e6;
    return ms;
}

/* ---- A run and its numbers ---- */

struct run {
    struct record *recs;
    size_t nrecs;
    struct interval *ivs;
    size_t nivs;
    struct span *faults;
    int nfaults;
    struct summary sums[MAX_CONTENDERS];
    long lost_lines;
};

static struct contender contenders[MAX_CONTENDERS];
static int ncontenders;

/* After the faults: the contenders go on until enough() finds in the log
 * the work the test must show, for at most extra_ms (a busy machine gives
 * them fewer rounds in the faults' time). */
static inline void until_enough(int (*enough)(const struct record *recs, size_t n), int extra_ms)
{
    uint64_t until = now_ms() + (uint64_t)extra_ms;
    int ok = 0;

    while (enough && !ok) {
        size_t n;
        struct record *recs = read_log(log_path, &n);

        ok = enough(recs, n);
        free(recs);
        if (!ok && now_ms() >= until)
            break;
        if (!ok)
            sleep_ms(200);
    }
}

/* Run the contenders while the faults are injected, then, with enough,
 * until_enough(); then read the log. */
static inline void run_until(const struct contender *spec, int n, const struct fault *faults,
                             int nfaults, int reps, int gap_ms,
                             int (*enough)(const struct record *recs, size_t n), int extra_ms,
                             struct run *out)
{
    int lwlock_lines = 0;

    memset(out, 0, sizeof *out);
    cr_assert_leq(n, MAX_CONTENDERS);
    ncontenders = n;
    memcpy(contenders, spec, (size_t)n * sizeof *spec);
    start_contenders(contenders, n);
    inject(faults, nfaults, reps, gap_ms);
    until_enough(enough, extra_ms);
    stop_contenders(contenders, n);
    for (int i = 0; i < ncontenders; i++) {
        read_summary(&contenders[i], &out->sums[i]);
        lwlock_lines += echo_stderr(&contenders[i]);
    }
    out->recs = read_log(log_path, &out->nrecs);
    for (size_t i = 0; i < out->nrecs; i++)
        out->lost_lines += !strcmp(out->recs[i].kind, "lost");
    out->ivs = intervals(out->recs, out->nrecs, &out->nivs);
    out->faults = fault_spans(out->recs, out->nrecs, &out->nfaults);
    fprintf(stderr, "contention: %zu log lines, %d messages from lwlock\n", out->nrecs,
            lwlock_lines);
}

static inline void run(const struct contender *spec, int n, const struct fault *faults, int nfaults,
                       int reps, int gap_ms, struct run *out)
{
    run_until(spec, n, faults, nfaults, reps, gap_ms, NULL, 0, out);
}

static inline void free_run(struct run *r)
{
    free(r->recs);
    free(r->ivs);
    free(r->faults);
}

/* Acquisitions (entered critical sections) by contender kind. */
static inline long acquisitions(const struct run *r, char kind)
{
    long k = 0;

    for (size_t i = 0; i < r->nivs; i++)
        k += r->ivs[i].holder[0] == kind;
    return k;
}

/* Holders told of a loss while inside (before they left). */
static inline long told_inside(const struct run *r)
{
    long k = 0;

    for (size_t i = 0; i < r->nivs; i++)
        k += r->ivs[i].lost_ns && r->ivs[i].end == r->ivs[i].lost_ns;
    return k;
}

static inline void report(const struct run *r, const struct fault *faults, int nfaults)
{
    struct summary t = {0};

    for (int i = 0; i < ncontenders; i++) {
        const struct summary *s = &r->sums[i];

        fprintf(stderr,
                "contention: %s (%s): rounds %ld acquired %ld busy %ld transport errors %ld "
                "lost %ld (outside a round %ld) clashes %ld unlock errors %ld other %ld\n",
                contenders[i].id, contenders[i].mode, s->rounds, s->acquired, s->busy,
                s->errors, s->lost, s->lost_elsewhere, s->clashes, s->unlock_errors, s->other);
        t.errors += s->errors;
        t.clashes += s->clashes;
        t.unlock_errors += s->unlock_errors;
        t.other += s->other;
    }
    fprintf(stderr,
            "contention: acquisitions %zu (clients %ld, lwlock %ld); losses reported %ld "
            "(%ld inside a critical section); transport errors %ld; marker clashes %ld\n",
            r->nivs, acquisitions(r, 'c'), acquisitions(r, 'l'), r->lost_lines,
            told_inside(r), t.errors, t.clashes);
    for (int i = 0; i < nfaults; i++)
        fprintf(stderr, "contention: fault %s x%d (the longest %.0f ms)\n", faults[i].name,
                count_faults(r->faults, r->nfaults, faults[i].name),
                longest_fault_ms(r->faults, r->nfaults, faults[i].name));
    /* Every client's lock was released in the end (or lost): none stayed
     * behind, renewed for nobody. */
    cr_assert_eq(t.unlock_errors, 0);
    /* No lwlock ended otherwise than done, busy, lost or unavailable (a
     * crash, a sanitizer's abort). */
    cr_assert_eq(t.other, 0);
}

#endif
