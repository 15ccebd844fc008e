/*
 * tests/test_contention.c - mutual exclusion under faults: four processes
 * (two library clients, two loops of lwlock runs; see contender.c) compete
 * for three names in bounded rounds while faults are injected between
 * rounds.  Every critical section appends enter/exit/lost lines to one
 * log; afterwards each holder-round is an interval [enter, min(exit,
 * lost)] (a holder believes it holds until it leaves or is told it lost
 * the lock), and two intervals of different holders on one name that
 * overlap are a violation.
 *
 * The faults that keep the keys (a killed connection, a stopped server,
 * paused clients, DEBUG SLEEP, SCRIPT FLUSH) must cause none.  Those that
 * wipe them (FLUSHALL, a restart to an empty server) let another holder in
 * while the old one still believes it holds, until its next renewal tells
 * it: no client library prevents that (fencing tokens are for that); the
 * second test measures how long it lasts and checks the bound.
 *
 * The third runs lwlock --read and --write loops on read-write locks
 * through a stopped server, killed connections and a restart that keeps
 * the keys: no writer's section overlaps another section, and readers'
 * sections do overlap (they share).  The fourth runs lwlock --permits loops on one semaphore through a
 * stopped server, killed connections and a restart that keeps the keys:
 * never more sections inside at once than permits, and at some moment
 * more than one (the permits are really shared).
 *
 * Built again with LW_TEST_TLS (contention_tls, the first test only): the
 * server serves TLS only and asks for client certificates
 * (engine_util.h), every contender reaches it over mutual TLS (the library
 * clients' config, lwlock's --tls --cacert --cert --key), and the faults
 * are the ones that break connections, TLS's included: CLIENT KILL of
 * normal and of pub/sub clients, and a restart that keeps the keys.  The
 * test's own commands go over the server's unix socket.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contention_log.h"
#include "lock_util.h"

#define LEASE_MS 1200
#define NAMES 3
#define CLIENT_TICK_MS 10
#define LWLOCK_TICK_MS 100 /* lwlock's tick: lease/10, at most 100 ms */
#define LONG_FAULT_MS (LEASE_MS + 800) /* every holder is told during it */
#define SHORT_FAULT_MS 400              /* renewals are only delayed */
#define WAIT_EXIT_MS 30000 /* lwlock's wait (1 s) and command timeout (3 s), and more */
#define MAX_SHOWN 8

/* The contenders' last arguments: over TLS, the files they connect with. */
#ifdef LW_TEST_TLS
#define LAST_ARGS                                                                      \
    "--cacert", certs.ca_file, "--cert", certs.client_cert, "--key", certs.client_key, \
        (char *)NULL
#else
#define LAST_ARGS (char *)NULL
#endif

static char dir[256];      /* the test's temporary directory */
static char log_path[300]; /* the shared log */
static int log_fd = -1;    /* the injector's lines */

static void setup(void)
{
    server_start();
    snprintf(dir, sizeof dir, "/tmp/lw-contention-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(log_fd, 0);
}

static void teardown(void)
{
    char cmd[300];

    close(log_fd);
    if (getenv("LW_TEST_KEEP")) { /* to look at the log afterwards */
        fprintf(stderr, "contention: kept %s\n", dir);
    } else {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void)!system(cmd);
    }
    server_stop();
}

#define CONTENTION_TEST(name) \
    Test(contention, name, .init = setup, .fini = teardown, .timeout = 150)

/* ---- The contenders ---- */

struct contender {
    const char *id;   /* c*: library clients; l*: lwlock loops */
    const char *mode; /* contender.c's mode */
    int hold_max_ms;  /* critical sections of 1..hold_max_ms */
    int wait_ms;      /* how long an acquire waits for a held name */
    int idle_max_ms;  /* between rounds: 0..idle_max_ms */
    pid_t pid;
    const char *kind; /* lwloop: "read" or "write" (a read-write lock), NULL:
                         a lock */
    int permits; /* lwloop: lwlock --permits N on one name; 0: locks */
};

/* Child: contender MODE ... with stdout and stderr to files of dir. */
static void exec_contender(const struct contender *c)
{
    char port[16], names[16], lease[16], wait[16], hold[16], idle[16], stop[300], out[300],
        permits[16];
    int fd;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 1; i <= 2; i++) {
        snprintf(out, sizeof out, "%s/%s.%s", dir, c->id, i == 1 ? "out" : "err");
        if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0) {
            dup2(fd, i);
            close(fd);
        }
    }
    snprintf(port, sizeof port, "%d", srv.port);
    snprintf(names, sizeof names, "%d", c->permits ? 1 : NAMES);
    snprintf(permits, sizeof permits, "%d", c->permits);
    snprintf(lease, sizeof lease, "%d", LEASE_MS);
    snprintf(wait, sizeof wait, "%d", c->wait_ms);
    snprintf(hold, sizeof hold, "%d", c->hold_max_ms);
    snprintf(idle, sizeof idle, "%d", c->idle_max_ms);
    snprintf(stop, sizeof stop, "%s/stop", dir);
    /* No --kind: --names once more, which changes nothing; --permits 0: a
     * lock. */
    execl(CONTENDER_PATH, CONTENDER_PATH, c->mode, "--port", port, "--names", names,
          c->kind ? "--kind" : "--names", c->kind ? c->kind : names, "--lease-ms", lease,
          "--wait-ms", wait, "--hold-max-ms", hold, "--idle-max-ms", idle, "--permits", permits,
          "--deadline-ms",
          "120000", "--stop", stop, "--log", log_path, "--id", c->id, "--lwlock", LWLOCK_PATH,
          LAST_ARGS);
    _exit(127);
}

static void start_contenders(struct contender *cs, int n)
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
static void stop_contenders(struct contender *cs, int n)
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

static void read_summary(const struct contender *c, struct summary *s)
{
    char path[300];

    snprintf(path, sizeof path, "%s/%s.out", dir, c->id);
    cr_assert(read_summary_file(path, s), "contender %s printed no summary", c->id);
}

/* Copy a contender's stderr to ours, but for lwlock's expected one-line
 * messages (busy, lost, unavailable): a sanitizer's report from any of
 * its processes lands in the test log. */
static int echo_stderr(const struct contender *c)
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
static void log_fault(const char *kind, const char *fault, int seq)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s injector %d %" PRIu64 " 0\n", kind, fault, seq,
                     lw_clock_now());

    cr_assert_eq(write(log_fd, line, (size_t)n), n);
}

static int command_ok(const char *fmt, const char *arg)
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

static int kill_clients(const char *type, long *count)
{
    redisReply *r = redis_server_command(&srv, "CLIENT KILL TYPE %s", type);
    int ok = r && r->type == REDIS_REPLY_INTEGER;

    if (ok)
        *count += r->integer;
    freeReplyObject(r);
    return ok;
}

static int fault_client_kill(void)
{
    return kill_clients("normal", &killed_normal);
}

/* The pub/sub connections of waiters, killed once some client is
 * subscribed (waiting for a held name; waited for up to 3 s). */
static int fault_pubsub_kill(void)
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
 * which it starts again on the same port.  Every connection is closed,
 * the scripts are gone. */
static int restart_keeping(long long min_keys)
{
    int port = srv.port, kept;
    redisReply *r = redis_server_command(&srv, "SHUTDOWN %s", "SAVE");

    /* No reply: the server closed the connection as it exited. */
    if (r) {
        fprintf(stderr, "SHUTDOWN SAVE: %s\n", r->type == REDIS_REPLY_ERROR ? r->str : "?");
        freeReplyObject(r);
        return 0;
    }
    if (redis_server_restart(&srv) != 0 || srv.port != port)
        return 0;
    r = redis_server_command(&srv, "DBSIZE");
    kept = r && r->type == REDIS_REPLY_INTEGER && r->integer >= min_keys;
    freeReplyObject(r);
    return kept;
}

#ifdef LW_TEST_TLS
/* The fencing counters at least are kept. */
static int fault_restart_keeping(void)
{
    return restart_keeping(NAMES);
}
#else
/* Some key is kept: readers and permits draw no token, a writer may not
 * have come by every name yet (the semaphore's count is kept). */
static int fault_restart_keeping_some(void)
{
    return restart_keeping(1);
}

static int fault_stop_long(void)
{
    if (redis_server_signal(&srv, SIGSTOP))
        return 0;
    sleep_ms(LONG_FAULT_MS);
    return redis_server_signal(&srv, SIGCONT) == 0;
}

static int pause_for(int ms)
{
    char arg[16];

    snprintf(arg, sizeof arg, "%d", ms);
    if (!command_ok("CLIENT PAUSE %s ALL", arg))
        return 0;
    sleep_ms(ms);
    return 1;
}

static int fault_pause_short(void)
{
    return pause_for(SHORT_FAULT_MS);
}

static int fault_pause_long(void)
{
    return pause_for(LONG_FAULT_MS);
}

static int fault_debug_sleep(void)
{
    char arg[16];

    snprintf(arg, sizeof arg, "%.3f", SHORT_FAULT_MS / 1000.0);
    return command_ok("DEBUG SLEEP %s", arg);
}

static int fault_script_flush(void)
{
    return command_ok("SCRIPT %s", "FLUSH");
}
#endif

static int fault_flushall(void)
{
    return command_ok("FLUSHALL %s", "SYNC");
}

/* An empty server on the same port. */
static int fault_restart(void)
{
    int port = srv.port;

    return redis_server_restart(&srv) == 0 && srv.port == port;
}

struct fault {
    const char *name;
    int (*inject)(void);
};

#ifdef LW_TEST_TLS
static const struct fault keeping_faults[] = {
    {"client-kill", fault_client_kill},
    {"pubsub-kill", fault_pubsub_kill},
    {"restart-keeping", fault_restart_keeping},
};
#define KEEPING_REPS 3
#else
static const struct fault keeping_faults[] = {
    {"client-kill", fault_client_kill},   {"sigstop-long", fault_stop_long},
    {"pause-short", fault_pause_short},   {"pause-long", fault_pause_long},
    {"debug-sleep", fault_debug_sleep},   {"script-flush", fault_script_flush},
};
#define KEEPING_REPS 1
#endif
#define NKEEPING (int)(sizeof keeping_faults / sizeof keeping_faults[0])

static const struct fault wiping_faults[] = {
    {"flushall", fault_flushall},
    {"restart", fault_restart},
};
#define NWIPING (int)(sizeof wiping_faults / sizeof wiping_faults[0])

/* Warm up, then each fault reps times, gap_ms apart (and after the last),
 * each logged from its start to its end. */
static void inject(const struct fault *faults, int n, int reps, int gap_ms)
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

static struct span *fault_spans(const struct record *recs, size_t n, int *count)
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

static int count_faults(const struct span *sp, int n, const char *name)
{
    int k = 0;

    for (int i = 0; i < n; i++)
        k += !strcmp(sp[i].name, name) && sp[i].end;
    return k;
}

static double longest_fault_ms(const struct span *sp, int n, const char *name)
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
    struct summary sums[4];
    long lost_lines;
};

#define NCONTENDERS 4
static struct contender contenders[NCONTENDERS];

/* Run the contenders while the faults are injected, then read the log. */
static void run(const struct contender *spec, const struct fault *faults, int nfaults,
                int reps, int gap_ms, struct run *out)
{
    int lwlock_lines = 0;

    memset(out, 0, sizeof *out);
    memcpy(contenders, spec, sizeof contenders);
    start_contenders(contenders, NCONTENDERS);
    inject(faults, nfaults, reps, gap_ms);
    stop_contenders(contenders, NCONTENDERS);
    for (int i = 0; i < NCONTENDERS; i++) {
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

static void free_run(struct run *r)
{
    free(r->recs);
    free(r->ivs);
    free(r->faults);
}

/* Acquisitions (entered critical sections) by contender kind. */
static long acquisitions(const struct run *r, char kind)
{
    long k = 0;

    for (size_t i = 0; i < r->nivs; i++)
        k += r->ivs[i].holder[0] == kind;
    return k;
}

/* Holders told of a loss while inside (before they left). */
static long told_inside(const struct run *r)
{
    long k = 0;

    for (size_t i = 0; i < r->nivs; i++)
        k += r->ivs[i].lost_ns && r->ivs[i].end == r->ivs[i].lost_ns;
    return k;
}

static void report(const struct run *r, const struct fault *faults, int nfaults)
{
    struct summary t = {0};

    for (int i = 0; i < NCONTENDERS; i++) {
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

/* The connections the faults broke: CLIENT KILL's counts, and the
 * library clients' reconnects (not lwlock's: each run is a process of its
 * own).  Each client reconnected after every fault that closed its
 * command connection (lw_client_stats counts no pub/sub reconnects). */
static void connections(const struct run *r)
{
    int closing = count_faults(r->faults, r->nfaults, "client-kill") +
                  count_faults(r->faults, r->nfaults, "restart-keeping");

    fprintf(stderr, "contention: connections killed: %ld normal, %ld pub/sub\n", killed_normal,
            killed_pubsub);
    for (int i = 0; i < NCONTENDERS; i++) {
        const struct summary *s = &r->sums[i];

        if (contenders[i].id[0] != 'c')
            continue;
        fprintf(stderr, "contention: %s: %ld reconnects, %ld TLS handshakes (%ld resumed)\n",
                contenders[i].id, s->reconnects, s->tls_handshakes, s->tls_resumed);
        cr_assert_geq(s->reconnects, closing, "%s: fewer reconnects than faults", contenders[i].id);
#ifdef LW_TEST_TLS
        cr_assert_gt(s->tls_handshakes, s->reconnects, "%s: not over TLS", contenders[i].id);
#endif
    }
    /* Both clients' command connections at least, each time. */
    cr_assert_geq(killed_normal, 2 * count_faults(r->faults, r->nfaults, "client-kill"));
#ifdef LW_TEST_TLS
    cr_assert_geq(killed_pubsub, 1, "no waiter's subscription was killed");
#endif
}

/* ---- The tests ---- */

/* Faults that keep the keys: no two holders ever inside at once.  One
 * contender of each kind holds for a few ms and moves on quickly (many
 * hand-overs); the other holds for up to two leases, so that critical
 * sections span the faults (and the renewals, and losses, under them),
 * then idles as long, to leave its names free half the time.  Over TLS
 * each fault three times: the connections they break are the point. */
CONTENTION_TEST(keeping_faults_never_let_two_in)
{
    static const struct contender spec[NCONTENDERS] = {
        {"c0", "client", 20, 300, 0, 0},
        {"c1", "client", 2 * LEASE_MS, 1000, 2 * LEASE_MS, 0},
        {"l0", "lwloop", 20, 300, 0, 0},
        {"l1", "lwloop", 2 * LEASE_MS, 1000, 2 * LEASE_MS, 0},
    };
    struct overlap shown[MAX_SHOWN];
    struct run r;
    size_t n;
    int regressions;

    run(spec, keeping_faults, NKEEPING, KEEPING_REPS, 1200, &r);
    report(&r, keeping_faults, NKEEPING);
    n = find_overlaps(r.ivs, r.nivs, shown, MAX_SHOWN);
    regressions = token_regressions(r.ivs, r.nivs);
    fprintf(stderr, "contention: violations %zu, fencing token regressions %d\n", n,
            regressions);
    for (size_t i = 0; i < n && i < MAX_SHOWN; i++)
        show_overlap(&shown[i]);
    cr_assert_eq(n, 0, "%zu overlaps", n);
    cr_assert_eq(regressions, 0);
    for (int i = 0; i < NKEEPING; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, keeping_faults[i].name), KEEPING_REPS);
    connections(&r);
    cr_assert_geq(acquisitions(&r, 'c'), 20, "a run without work proves nothing");
    cr_assert_geq(acquisitions(&r, 'l'), 10, "a run without work proves nothing");
    free_run(&r);
}

/* ---- Faults that wipe the keys ---- */

/* How soon after a wiping fault its holders must have been told: the next
 * renewal (lease/3 after the last, fired up to a tick early) finds the
 * key gone; a tick more for its reply's handling, and a margin for the
 * machine (and lwlock's signal to its COMMAND). */
#define TOLD_MARGIN_MS 300

static uint64_t told_bound_ns(const struct interval *a)
{
    uint64_t tick = a->holder[0] == 'c' ? CLIENT_TICK_MS : LWLOCK_TICK_MS;

    return (LEASE_MS / 3 + 2 * tick + TOLD_MARGIN_MS) * 1000000u;
}

/* The fault an overlap follows: the last one that began before the second
 * holder entered (NULL when none). */
static const struct span *cause(const struct run *r, const struct overlap *o)
{
    const struct span *f = NULL;

    for (int i = 0; i < r->nfaults; i++)
        if (r->faults[i].start <= o->b->start && r->faults[i].end)
            f = &r->faults[i];
    return f;
}

/* Per wiping fault kind: its holders and its overlaps. */
struct wipe_stats {
    int inside;          /* holders inside when it began */
    int told;            /* ... of which told of the loss before they left */
    double told_ms[2];   /* the latest told after the fault's end: clients, lwlock */
    int late;            /* holders still inside past the bound */
    int overlaps;
    double exposed_ms;   /* the longest time two holders were inside together */
};

static int wipe_index(const char *name)
{
    int k = 0;

    while (strcmp(wiping_faults[k].name, name))
        k++;
    return k;
}

/* Each holder inside when a wiping fault began: told (or gone) within
 * the bound after its end? */
static void holders_at_faults(const struct run *r, struct wipe_stats *st)
{
    for (int i = 0; i < r->nfaults; i++) {
        const struct span *f = &r->faults[i];
        struct wipe_stats *s = &st[wipe_index(f->name)];

        for (size_t j = 0; j < r->nivs; j++) {
            const struct interval *a = &r->ivs[j];
            double after = ((double)a->end - (double)f->end) / 1e6;
            int kind = a->holder[0] == 'l';

            if (a->start >= f->start || a->end <= f->start)
                continue;
            s->inside++;
            if (a->end == UINT64_MAX || a->end > f->end + told_bound_ns(a)) {
                s->late++;
                fprintf(stderr, "  %s#%ld on %s: still inside %.1f ms after %s\n", a->holder,
                        a->round, a->name, after, f->name);
            }
            if (a->lost_ns && a->end == a->lost_ns) {
                s->told++;
                s->told_ms[kind] = after > s->told_ms[kind] ? after : s->told_ms[kind];
            }
        }
    }
}

/* The old holder a got the lock before fault f wiped it: it entered
 * before f ended, or its fencing token is from before the wipe (the new
 * holder's counter started again).  Under lwlock, COMMAND enters only
 * after a fork and an exec, tens of ms after the acquire under ASan: an
 * acquire just before a restart can enter after it. */
static int acquired_before(const struct interval *a, const struct interval *b,
                           const struct span *f)
{
    return a->start <= f->end || (a->token > 0 && b->token > 0 && b->token <= a->token);
}

/* x's fencing token is from before fault f wiped the counter: higher than
 * the new counter can have reached when x entered.  Every acquire of the
 * name since the wipe entered between f's start and x's enter (each left
 * before the next acquired), so a token drawn after the wipe is at most
 * one above their number. */
static int drew_before(const struct run *r, const struct interval *x, const struct span *f)
{
    long long since = 0;

    for (size_t i = 0; i < r->nivs; i++)
        since += !strcmp(r->ivs[i].name, x->name) && r->ivs[i].start >= f->start &&
                 r->ivs[i].start < x->start;
    return x->token > since + 1;
}

/* The holder b, which entered second, got the lock before fault f wiped
 * it, and a after: the same late enter under lwlock, on a loaded machine
 * long enough for a new holder to acquire and enter first.  b's token is
 * not below a's then, but it is from the old counter and a's from the
 * new one. */
static int entered_late(const struct run *r, const struct interval *a, const struct interval *b,
                        const struct span *f)
{
    return drew_before(r, b, f) && !drew_before(r, a, f);
}

/* 1 when the overlap is the fault's doing and ended in time: its old
 * holder got the lock before the wipe and was told (or left) within the
 * bound.  Its numbers added to st (indexed like wiping_faults). */
static int explained(const struct run *r, const struct overlap *o, struct wipe_stats *st)
{
    const struct span *f = cause(r, o);
    const struct interval *a = o->a, *b = o->b, *old;
    double both;
    int k;

    if (!f)
        return 0;
    if (acquired_before(a, b, f))
        old = a;
    else if (entered_late(r, a, b, f))
        old = b;
    else
        return 0;
    if (old->end == UINT64_MAX || old->end > f->end + told_bound_ns(old))
        return 0;
    k = wipe_index(f->name);
    both = ms_between(b->start, a->end < b->end ? a->end : b->end);
    st[k].overlaps++;
    st[k].exposed_ms = both > st[k].exposed_ms ? both : st[k].exposed_ms;
    return 1;
}

/* FLUSHALL and a restart (an empty server) delete the locks behind their
 * holders' backs: another holder may get in before the old one is told.
 * Measured: every overlap follows such a fault, and its old holder was
 * told (or left) within a renewal period and two ticks of it.  The
 * fencing counters go with the keys: tokens start again from 1. */
CONTENTION_TEST(wiping_faults_overlap_until_the_next_renewal)
{
    static const struct contender spec[NCONTENDERS] = {
        {"c0", "client", 20, 300, 0, 0},
        {"c1", "client", 2 * LEASE_MS, 1000, LEASE_MS, 0},
        {"l0", "lwloop", 20, 300, 0, 0},
        {"l1", "lwloop", 2 * LEASE_MS, 1000, LEASE_MS, 0},
    };
    static struct overlap found[4096];
    struct wipe_stats st[NWIPING] = {0};
    struct run r;
    size_t n;
    int regressions, bad = 0, told = 0;

    run(spec, wiping_faults, NWIPING, 3, 1500, &r);
    report(&r, wiping_faults, NWIPING);
    n = find_overlaps(r.ivs, r.nivs, found, sizeof found / sizeof found[0]);
    cr_assert_leq(n, sizeof found / sizeof found[0]);
    regressions = token_regressions(r.ivs, r.nivs);
    for (size_t i = 0; i < n; i++)
        if (!explained(&r, &found[i], st) && bad++ < MAX_SHOWN)
            show_overlap(&found[i]);
    holders_at_faults(&r, st);
    for (int k = 0; k < NWIPING; k++) {
        fprintf(stderr,
                "contention: %s: %d holders inside, %d told before leaving (at most %.1f ms "
                "(clients) / %.1f ms (lwlock) after the fault ended; bound %d / %d ms), %d "
                "late\n",
                wiping_faults[k].name, st[k].inside, st[k].told, st[k].told_ms[0],
                st[k].told_ms[1], LEASE_MS / 3 + 2 * CLIENT_TICK_MS + TOLD_MARGIN_MS,
                LEASE_MS / 3 + 2 * LWLOCK_TICK_MS + TOLD_MARGIN_MS, st[k].late);
        fprintf(stderr,
                "contention: %s: %d overlaps; two holders inside together for up to %.1f "
                "ms\n",
                wiping_faults[k].name, st[k].overlaps, st[k].exposed_ms);
    }
    fprintf(stderr, "contention: overlaps %zu, unexplained %d; fencing token regressions %d\n",
            n, bad, regressions);
    cr_assert_eq(bad, 0, "%d overlaps not explained by a wiping fault", bad);
    for (int k = 0; k < NWIPING; k++) {
        cr_assert_eq(st[k].late, 0, "%s: %d holders told late", wiping_faults[k].name,
                     st[k].late);
        told += st[k].told;
    }
    cr_assert_geq(told, 1, "no holder was inside at a wiping fault: the bound went untested");
    cr_assert_geq(regressions, 1, "the counters are wiped with the locks");
    for (int i = 0; i < NWIPING; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, wiping_faults[i].name), 3);
    cr_assert_geq(acquisitions(&r, 'c'), 20, "a run without work proves nothing");
    cr_assert_geq(acquisitions(&r, 'l'), 10, "a run without work proves nothing");
    free_run(&r);
}

/* ---- Read-write locks through lwlock ---- */

#ifndef LW_TEST_TLS
/* The faults that keep some key (the read-write and the permits tests). */
static const struct fault some_faults[] = {
    {"client-kill", fault_client_kill},
    {"pubsub-kill", fault_pubsub_kill},
    {"sigstop-long", fault_stop_long},
    {"restart-keeping", fault_restart_keeping_some},
};
#define NSOME (int)(sizeof some_faults / sizeof some_faults[0])

/* lw*: lwlock --write; lr*: lwlock --read. */
static int is_writer(const struct interval *iv)
{
    return iv->holder[1] == 'w';
}

/* The overlaps of ivs (sorted here by name and start): those with a
 * writer in *bad (the first max of them in shown), those of two readers
 * in *shared. */
static void rw_overlaps(struct interval *ivs, size_t n, struct overlap *shown, size_t max,
                        size_t *bad, size_t *shared)
{
    find_overlaps(ivs, n, NULL, 0);
    *bad = *shared = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n && !strcmp(ivs[i].name, ivs[j].name) &&
                               ivs[j].start < ivs[i].end;
             j++) {
            if (!strcmp(ivs[i].holder, ivs[j].holder))
                continue;
            if (!is_writer(&ivs[i]) && !is_writer(&ivs[j])) {
                (*shared)++;
                continue;
            }
            if (*bad < max)
                shown[*bad] = (struct overlap){&ivs[i], &ivs[j]};
            (*bad)++;
        }
}

/* The writers' fencing tokens, in order per name: none went back (the
 * faults keep the counters). */
static int writer_token_regressions(const struct interval *ivs, size_t n)
{
    struct interval *w = calloc(n + 1, sizeof *w);
    size_t k = 0;
    int regressions;

    cr_assert_not_null(w);
    for (size_t i = 0; i < n; i++)
        if (is_writer(&ivs[i]))
            w[k++] = ivs[i];
    find_overlaps(w, k, NULL, 0);
    regressions = token_regressions(w, k);
    free(w);
    return regressions;
}

static long acquisitions_of(const struct run *r, int writers)
{
    long k = 0;

    for (size_t i = 0; i < r->nivs; i++)
        k += is_writer(&r->ivs[i]) == writers;
    return k;
}

/* Readers and writers of three read-write locks, all through lwlock,
 * while Redis is stopped past the lease, its clients' connections
 * (commands and subscriptions) are killed and it restarts keeping its
 * keys: a writer is never inside with anyone, and readers are inside
 * together (else the test proves nothing about sharing).  One reader and
 * one writer hold briefly and often; the others for up to two leases,
 * across the faults. */
CONTENTION_TEST(rw_writers_alone_readers_together)
{
    static const struct contender spec[NCONTENDERS] = {
        {"lr0", "lwloop", 300, 1000, 0, 0, "read"},
        {"lr1", "lwloop", 2 * LEASE_MS, 1000, LEASE_MS, 0, "read"},
        {"lw0", "lwloop", 20, 1000, 100, 0, "write"},
        {"lw1", "lwloop", 2 * LEASE_MS, 1000, 2 * LEASE_MS, 0, "write"},
    };
    struct overlap shown[MAX_SHOWN];
    size_t bad, shared;
    struct run r;
    int regressions;

    run(spec, some_faults, NSOME, 2, 1200, &r);
    report(&r, some_faults, NSOME);
    rw_overlaps(r.ivs, r.nivs, shown, MAX_SHOWN, &bad, &shared);
    regressions = writer_token_regressions(r.ivs, r.nivs);
    fprintf(stderr,
            "contention: read-write: %ld read and %ld write sections; %zu overlaps with a "
            "writer, %zu of two readers; writers' token regressions %d\n",
            acquisitions_of(&r, 0), acquisitions_of(&r, 1), bad, shared, regressions);
    for (size_t i = 0; i < bad && i < MAX_SHOWN; i++)
        show_overlap(&shown[i]);
    cr_assert_eq(bad, 0, "%zu overlaps with a writer", bad);
    cr_assert_geq(shared, 1, "no two readers were ever inside together");
    cr_assert_eq(regressions, 0);
    for (int i = 0; i < NSOME; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, some_faults[i].name), 2);
    cr_assert_geq(acquisitions_of(&r, 0), 10, "a run without readers proves nothing");
    cr_assert_geq(acquisitions_of(&r, 1), 5, "a run without writers proves nothing");
    free_run(&r);
}
#endif

/* ---- Permits through lwlock ---- */

#ifndef LW_TEST_TLS
#define PERMITS 2

struct edge {
    uint64_t at;
    int delta; /* +1 enter, -1 leave */
};

/* Leaving first at a tie: a section that ends as another starts is not
 * inside with it. */
static int by_time_leave_first(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;

    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->delta - y->delta;
}

/* The most sections of different holder-rounds inside at once (one name). */
static int most_inside(const struct interval *ivs, size_t n)
{
    struct edge *e = calloc(2 * n + 1, sizeof *e);
    int inside = 0, most = 0;

    cr_assert_not_null(e);
    for (size_t i = 0; i < n; i++) {
        e[2 * i] = (struct edge){ivs[i].start, 1};
        e[2 * i + 1] = (struct edge){ivs[i].end, -1};
    }
    qsort(e, 2 * n, sizeof *e, by_time_leave_first);
    for (size_t i = 0; i < 2 * n; i++)
        if ((inside += e[i].delta) > most)
            most = inside;
    free(e);
    return most;
}

/* Four loops of lwlock --permits 2 on one semaphore while Redis is stopped
 * past the lease, its connections (commands and subscriptions) killed,
 * and it restarts keeping its keys: never three inside at once, and two
 * at some moment (else the test proves nothing about sharing).  Two hold
 * briefly and often; two for up to two leases, across the faults. */
CONTENTION_TEST(permits_never_more_inside_than_permits)
{
    static const struct contender spec[NCONTENDERS] = {
        {"l0", "lwloop", 300, 1000, 0, 0, NULL, PERMITS},
        {"l1", "lwloop", 20, 1000, 100, 0, NULL, PERMITS},
        {"l2", "lwloop", 2 * LEASE_MS, 1000, LEASE_MS, 0, NULL, PERMITS},
        {"l3", "lwloop", 2 * LEASE_MS, 1000, 2 * LEASE_MS, 0, NULL, PERMITS},
    };
    struct run r;
    int most;

    run(spec, some_faults, NSOME, 1, 1200, &r);
    report(&r, some_faults, NSOME);
    most = most_inside(r.ivs, r.nivs);
    fprintf(stderr, "contention: permits: %zu sections, at most %d inside at once (%d permits)\n",
            r.nivs, most, PERMITS);
    cr_assert_leq(most, PERMITS, "%d sections inside at once with %d permits", most, PERMITS);
    cr_assert_geq(most, 2, "the permits were never used at once");
    for (int i = 0; i < NSOME; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, some_faults[i].name), 1);
    cr_assert_geq(acquisitions(&r, 'l'), 10, "a run without work proves nothing");
    free_run(&r);
}
#endif
