/*
 * tests/lwloop_util.h - loops of lwlock contending in a test (contender.c's
 * lwloop mode, one process per loop, one lwlock per round): started on
 * the Redis a test names (--cluster SEEDS, --redis URL), stopped through
 * their stop file, their stderr copied to the test's; and the injector's
 * lines in their log.  Shared by test_cluster_tools and
 * test_sentinel_tools; files go to proc_util.h's test directory.
 */
#ifndef LW_TESTS_LWLOOP_UTIL_H
#define LW_TESTS_LWLOOP_UTIL_H

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "contention_log.h"
#include "proc_util.h"
#include "wait_child.h"

struct loop {
    const char *id;
    int hold_max_ms, idle_max_ms; /* its sections and the idle time after */
    pid_t pid;
    const char *kind;   /* "read", "write", "fair" or "elect" (lwlock --read,
                           --write, --fair, --elect), NULL: a lock */
    int permits;        /* lwlock --permits N; 0: a lock */
    const char *prefix; /* its one name is prefix0; NULL: "lock" (lock0) */
};

/*
 * Start n loops, each on one name (--names 1: "lock0", or its prefix's) of
 * its kind, of the Redis that
 * `addr_opt addr` gives the contender (--cluster SEEDS, --redis URL), each
 * lwlock with lease_ms renewed and a 1 s wait, all logging to log_path;
 * they stop at the stop file, or after 120 s.
 */
static inline void start_loops(struct loop *loops, int n, const char *addr_opt, const char *addr,
                               int lease_ms, const char *log_path)
{
    char lease[16], stop[300], out[32], err[32], hold[16], idle[16], permits[16];

    snprintf(lease, sizeof lease, "%d", lease_ms);
    path_in_dir("stop", stop, sizeof stop);
    for (int i = 0; i < n; i++) {
        snprintf(out, sizeof out, "%s.out", loops[i].id);
        snprintf(err, sizeof err, "%s.err", loops[i].id);
        snprintf(hold, sizeof hold, "%d", loops[i].hold_max_ms);
        snprintf(idle, sizeof idle, "%d", loops[i].idle_max_ms);
        snprintf(permits, sizeof permits, "%d", loops[i].permits);
        /* No --kind: --names once more, which changes nothing. */
        loops[i].pid = start_child(
            CONTENDER_PATH,
            ARGS("lwloop", addr_opt, addr, "--names", "1", loops[i].kind ? "--kind" : "--names",
                 loops[i].kind ? loops[i].kind : "1", "--permits", permits, "--prefix",
                 loops[i].prefix ? loops[i].prefix : "lock", "--lease-ms", lease, "--wait-ms",
                 "1000", "--hold-max-ms", hold, "--idle-max-ms", idle, "--deadline-ms", "120000",
                 "--stop", stop, "--log", log_path, "--id", loops[i].id, "--lwlock",
                 LWLOCK_PATH),
            NULL, out, err);
    }
}

/* Copy a loop's stderr to ours, but for lwlock's "held by another owner"
 * and "not elected within the wait" (expected, many): anything else, a sanitizer's report included, lands in
 * the test log. */
static inline void echo_loop_stderr(const char *id)
{
    char path[300], line[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.err", dir, id);
    if (!(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof line, f))
        if (!strstr(line, lw_strerror(LW_ELOCKED)) && !strstr(line, "not elected within"))
            fprintf(stderr, "[%s stderr] %s", id, line);
    fclose(f);
}

/* Tell the loops to stop after their round and wait (wait_ms each at
 * most): status 0, and their summaries in sums. */
static inline void stop_loops(struct loop *loops, int n, struct summary *sums, int wait_ms)
{
    char path[300];
    int fd, code;

    fd = open(path_in_dir("stop", path, sizeof path), O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    for (int i = 0; i < n; i++) {
        code = wait_child(loops[i].pid, wait_ms);
        echo_loop_stderr(loops[i].id);
        cr_assert_eq(code, 0, "loop %s: status %d", loops[i].id, code);
        snprintf(path, sizeof path, "%s/%s.out", dir, loops[i].id);
        cr_assert(read_summary_file(path, &sums[i]), "loop %s printed no summary", loops[i].id);
    }
}

/* lwlock --observe --json name (through `addr_opt addr`, as the loops'
 * lwlocks: -r URL, -c SEEDS) until SIGTERM, its lines to observe.json. */
static inline pid_t start_observer(const char *addr_opt, const char *addr, const char *name)
{
    return start_child(LWLOCK_PATH, ARGS(addr_opt, addr, "--observe", "--json", name), NULL,
                       "observe.json", "observe.err");
}

/* What lwlock --observe printed: its terms, how many of them were a
 * candidate's (a section on the name logged that term), how many were
 * not above the one before (a failover lost the counter's last
 * increments: a repeated term; lwlock --elect never proclaims, so a line
 * of the same term is another leader), and its "unknown" lines (its
 * belief ran out, Redis away). */
struct observed_terms {
    long terms, candidates, not_above, unknown;
};

static inline struct observed_terms observer_terms(const struct interval *ivs, size_t nivs,
                                                   const char *name)
{
    struct observed_terms o = {0};
    char path[300], line[8192];
    long long term, last = 0;
    FILE *f = fopen(path_in_dir("observe.json", path, sizeof path), "r");

    cr_assert_not_null(f);
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"unknown\""))
            o.unknown++;
        if (sscanf(line, "{\"term\": %lld,", &term) != 1)
            continue;
        o.terms++;
        o.not_above += term <= last;
        last = term;
        for (size_t i = 0; i < nivs; i++)
            if (!strcmp(ivs[i].name, name) && ivs[i].token == term) {
                o.candidates++;
                break;
            }
    }
    fclose(f);
    return o;
}

/* The injector's line in the log fd (contention_log.h leaves its lines out
 * of the intervals): kind "fault" when fault number seq begins, "faultend"
 * when it is over. */
static inline void log_fault(int fd, const char *kind, const char *fault, int seq)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s injector %d %" PRIu64 " 0\n", kind, fault, seq,
                     lw_clock_now());

    cr_assert_eq(write(fd, line, (size_t)n), n);
}

/* What the loops' log and summaries say, judged (contention_log.h). */
enum { LOOPS_LOCK,
       LOOPS_RW,
       LOOPS_PERMIT };

struct loops_verdict {
    struct record *recs;
    struct interval *ivs;  /* sorted by name and start */
    size_t nrecs, nivs;
    size_t sections[3];    /* by kind: LOOPS_* */
    size_t overlaps;       /* two holders of a lock inside at once, or a
                              writer beside anyone */
    size_t shared;         /* readers inside together (by right) */
    int most_permits;      /* the most inside the semaphore at once (the
                              permit loops share one) */
    int clashes;           /* a marker found taken */
    int regressions;       /* a plain lock's fencing token not above the
                              one before */
    struct summary total;  /* the loops' counts, added up */
};

/* Which kind of name iv's loop holds (LOOPS_*): a fair lock is a lock,
 * and so is an election (lwlock --elect: a term is a lock's hold). */
static inline int loop_kind(const struct loop *loops, int n, const struct interval *iv)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(loops[i].id, iv->holder))
            return loops[i].permits ? LOOPS_PERMIT
                   : loops[i].kind && strcmp(loops[i].kind, "fair") != 0 &&
                           strcmp(loops[i].kind, "elect") != 0
                       ? LOOPS_RW
                       : LOOPS_LOCK;
    return LOOPS_LOCK;
}

/* Judge the run, each kind by what may be inside together: a lock's
 * holder alone, a writer alone, no more than the permits.  Each loop's
 * counts and up to 8 overlaps of each sort on stderr, tagged; free
 * v->recs and v->ivs after. */
static inline void judge_loops(const char *log_path, const struct loop *loops,
                               const struct summary *sums, int n, const char *tag,
                               struct loops_verdict *v)
{
    static struct overlap shown[8];
    struct interval *of[3];
    size_t bad;

    memset(v, 0, sizeof *v);
    v->recs = read_log(log_path, &v->nrecs);
    for (size_t i = 0; i < v->nrecs; i++)
        v->clashes += !strcmp(v->recs[i].kind, "clash");
    v->ivs = intervals(v->recs, v->nrecs, &v->nivs);
    for (int i = 0; i < n; i++) {
        fprintf(stderr,
                "%s: %s: rounds %ld acquired %ld busy %ld unavailable %ld lost %ld other %ld\n",
                tag, loops[i].id, sums[i].rounds, sums[i].acquired, sums[i].busy,
                sums[i].errors, sums[i].lost, sums[i].other);
        v->total.rounds += sums[i].rounds;
        v->total.acquired += sums[i].acquired;
        v->total.busy += sums[i].busy;
        v->total.errors += sums[i].errors;
        v->total.lost += sums[i].lost;
        v->total.other += sums[i].other;
    }
    find_overlaps(v->ivs, v->nivs, NULL, 0); /* sorts them */
    for (int k = 0; k < 3; k++) {
        of[k] = calloc(v->nivs + 1, sizeof *of[k]);
        cr_assert_not_null(of[k]);
    }
    for (size_t i = 0; i < v->nivs; i++) {
        int k = loop_kind(loops, n, &v->ivs[i]);

        of[k][v->sections[k]++] = v->ivs[i];
    }
    v->overlaps = find_overlaps(of[LOOPS_LOCK], v->sections[LOOPS_LOCK], shown, 8);
    v->regressions = token_regressions(of[LOOPS_LOCK], v->sections[LOOPS_LOCK]);
    for (size_t i = 0; i < v->overlaps && i < 8; i++)
        show_overlap(&shown[i]);
    rw_overlaps(of[LOOPS_RW], v->sections[LOOPS_RW], shown, 8, &bad, &v->shared);
    for (size_t i = 0; i < bad && i < 8; i++)
        show_overlap(&shown[i]);
    v->overlaps += bad;
    v->most_permits = most_inside(of[LOOPS_PERMIT], v->sections[LOOPS_PERMIT]);
    for (int k = 0; k < 3; k++)
        free(of[k]);
}

#endif
