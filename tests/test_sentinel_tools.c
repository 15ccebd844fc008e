/*
 * tests/test_sentinel_tools.c - lwlock against a real Sentinel setup (a
 * master, two replicas, three sentinels: bench/redis_sentinel.h), run as
 * processes, through a redis-sentinel:// URL:
 *
 *   - given in -r or in LWLOCK_REDIS, lwlock takes the lock on the master
 *     the sentinels name, runs COMMAND under it with increasing fencing
 *     tokens, and still does with the first sentinel of the URL stopped;
 *   - with --replicas 1 the lock is on a replica before COMMAND runs; with
 *     both replicas cut off lwlock exits 69 without running COMMAND and
 *     leaves no key behind;
 *   - loops of lwlock (contender.c's lwloop mode, --redis URL) contend for
 *     one name through SENTINEL FAILOVERs and a kill -9 of the master:
 *     never two holders, and the lock changes hands after every fault.
 *
 * Every child's stdout and stderr go to files of the test's directory;
 * lwlock's stderr is copied to the test's own.  Every wait has a deadline.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

#include "contention_log.h"
#include "proc_util.h"
#include "redis_sentinel.h"
#include "time_util.h"
#include "wait_child.h"

static struct redis_sentinel rs;
static char url[400]; /* redis-sentinel://S0,S1,S2#mymaster */

static void setup(void)
{
    char addrs[256];

    cr_assert_eq(redis_sentinel_start(&rs, "mymaster", NULL, NULL), 0,
                 "the Sentinel setup did not start");
    redis_sentinel_addrs(&rs, addrs, sizeof addrs);
    snprintf(url, sizeof url, "redis-sentinel://%s#mymaster", addrs);
    make_test_dir("/tmp/lw-sentinel-tools-XXXXXX");
}

static void teardown(void)
{
    remove_test_dir();
    redis_sentinel_stop(&rs);
}

#define SENTINEL_TEST(name) \
    Test(sentinel_tools, name, .init = setup, .fini = teardown, .timeout = 150)

/* Run lwlock to the end (at most 20 s): its exit status. */
static int lwlock_env(const char *const *args, const char *const *env)
{
    return run_child(LWLOCK_PATH, args, env, 20000);
}

/* ---- The setup's nodes ---- */

/* One command to data node i: its integer reply (a string one read as a
 * number, nil as 0), or -1. */
static long long node_int(int i, const char *fmt, const char *arg)
{
    redisReply *r = redis_sentinel_command(&rs, i, fmt, arg);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    if (r)
        freeReplyObject(r);
    return v;
}

/* The master's count of replicas online (INFO replication), or -1. */
static int replicas_online(int m)
{
    redisReply *r = redis_sentinel_command(&rs, m, "INFO replication");
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_slaves:")
                                                        : NULL;
    int n = at ? atoi(at + strlen("connected_slaves:")) : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

/* The master the sentinels name, with both replicas online. */
static int settled_master(void)
{
    int m = redis_sentinel_wait_master(&rs, -1, 20000);

    cr_assert_geq(m, 0, "no master");
    cr_assert(wait_until(replicas_online(m) == 2, 20000), "the replicas are not back");
    cr_assert_eq(redis_sentinel_wait_synced(&rs, 10000), 0);
    return m;
}

static void set_port_env(const char *var, int i)
{
    char port[16];

    snprintf(port, sizeof port, "%d", rs.data[i].port);
    setenv(var, port, 1);
}

/* ---- lwlock through the sentinels ---- */

/* COMMAND's view: the lock held on the master (redis-cli there), its name
 * and token. */
static const char look[] =
    "redis-cli -p \"$LWT_PORT\" EXISTS \"$LWLOCK_NAME\" > \"$LWT_DIR/exists\"; "
    "echo \"$LWLOCK_NAME $LWLOCK_TOKEN\" > \"$LWT_DIR/env\"";

/* One run of lwlock (args, env) on name, whose master is m: the token
 * COMMAND saw. */
static unsigned long long run_looking(const char *const *args, const char *const *env, int m,
                                      const char *name)
{
    char buf[256], seen[64], path[300];
    unsigned long long token = 0;
    int code;

    set_port_env("LWT_PORT", m);
    unlink(path_in_dir("exists", path, sizeof path));
    code = lwlock_env(args, env);
    cr_assert_eq(code, 0, "%s: lwlock exited %d", name, code);
    cr_assert_str_eq(slurp("exists", buf, sizeof buf), "1\n", "%s not held on node %d", name, m);
    cr_assert_eq(sscanf(slurp("env", buf, sizeof buf), "%63s %llu", seen, &token), 2, "'%s'",
                 buf);
    cr_assert_str_eq(seen, name);
    cr_assert_eq(node_int(m, "EXISTS %s", name), 0, "%s released", name);
    return token;
}

SENTINEL_TEST(lwlock_through_a_sentinel_url)
{
    char env[420];
    int m = redis_sentinel_master(&rs);
    unsigned long long t1, t2, t3;
    uint64_t t0;

    cr_assert_geq(m, 0);
    t1 = run_looking(ARGS("-r", url, "job", "sh", "-c", look), NULL, m, "job");
    snprintf(env, sizeof env, "LWLOCK_REDIS=%s", url);
    t2 = run_looking(ARGS("job", "sh", "-c", look), ARGS(env), m, "job");
    cr_assert_gt(t1, 0);
    cr_assert_gt(t2, t1, "tokens %llu then %llu", t1, t2);
    cr_assert_eq(node_int(m, "GET %s", "redisson_lock_token:{job}"), (long long)t2);

    /* The URL's first sentinel stopped: it accepts the connection and
     * answers nothing; lwlock asks the next one. */
    cr_assert_eq(redis_sentinel_signal_sentinel(&rs, 0, SIGSTOP), 0);
    t0 = now_ms();
    t3 = run_looking(ARGS("-r", url, "job", "sh", "-c", look), NULL, m, "job");
    cr_log_info("lwlock with the first sentinel stopped: %llu ms",
                (unsigned long long)(now_ms() - t0));
    cr_assert_gt(t3, t2, "tokens %llu then %llu", t2, t3);
    cr_assert_eq(redis_sentinel_signal_sentinel(&rs, 0, SIGCONT), 0);
}

/* COMMAND's view with --replicas: the lock on each replica. */
static const char look_replicas[] =
    "redis-cli -p \"$LWT_R0\" EXISTS \"$LWLOCK_NAME\" > \"$LWT_DIR/on0\"; "
    "redis-cli -p \"$LWT_R1\" EXISTS \"$LWLOCK_NAME\" > \"$LWT_DIR/on1\"";

SENTINEL_TEST(lwlock_replicas_through_sentinel)
{
    char on0[16], on1[16];
    int m = settled_master(), rep[2], k = 0, code;
    uint64_t t0;

    for (int i = 0; i < REDIS_SENTINEL_DATA; i++)
        if (i != m)
            rep[k++] = i;
    set_port_env("LWT_R0", rep[0]);
    set_port_env("LWT_R1", rep[1]);

    /* Both replicas up: WAIT says one has it, so one does. */
    code = lwlock_env(ARGS("--replicas", "1", "-r", url, "rep", "sh", "-c", look_replicas), NULL);
    cr_assert_eq(code, 0, "%d", code);
    slurp("on0", on0, sizeof on0);
    slurp("on1", on1, sizeof on1);
    cr_assert(!strcmp(on0, "1\n") || !strcmp(on1, "1\n"), "on no replica: '%s' '%s'", on0, on1);
    cr_assert_eq(node_int(m, "EXISTS %s", "rep"), 0, "released");

    /* Both cut off: the acquire is given back, 69, COMMAND never runs. */
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[0], 1), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[1], 1), 0);
    t0 = now_ms();
    code = lwlock_env(ARGS("--replicas", "1", "-r", url, "rep", "touch", "ran"), NULL);
    cr_log_info("--replicas 1 with both replicas cut off: exit %d after %llu ms", code,
                (unsigned long long)(now_ms() - t0));
    cr_assert_eq(code, 69, "%d", code);
    cr_assert(stderr_has(lw_strerror(LW_EREPLICAS)), "says '%s'", lw_strerror(LW_EREPLICAS));
    cr_assert_not(exists("ran"), "COMMAND ran");
    cr_assert_eq(node_int(m, "EXISTS %s", "rep"), 0, "a lock key left on the master");

    /* Back: they catch up, and the same run succeeds. */
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[0], 0), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[1], 0), 0);
    cr_assert_eq(settled_master(), m);
    code = lwlock_env(ARGS("--replicas", "1", "-r", url, "rep", "touch", "ran"), NULL);
    cr_assert_eq(code, 0, "replicas back: %d", code);
    cr_assert(exists("ran"), "COMMAND ran in the test's directory");
}

/* ---- Contention under failovers and a kill ---- */

/* The lease outlasts a switch: a kill -9 is seen 2.3 s after, and a
 * renewal may be a third of the lease old by then (docs/reliability.md,
 * "Redis Sentinel"). */
#define LEASE_MS 6000
#define NLOOPS 3
#define GAP_MS 2000         /* before the first fault */
#define PROGRESS_MS 15000   /* the lock must change hands this soon after a fault */
#define WAIT_EXIT_MS 30000  /* an lwlock's wait (1 s) and command timeout, and more */
#define NFAILOVERS 3

static char log_path[300];
static int log_fd = -1;

struct loop {
    const char *id;
    int hold_max_ms, idle_max_ms;
    pid_t pid;
};

static struct loop loops[NLOOPS] = {
    {"l0", 20, 0, 0},
    {"l1", 20, 0, 0},
    /* Sections up to a quarter lease: some span the faults. */
    {"l2", LEASE_MS / 4, LEASE_MS / 4, 0},
};

static void start_loops(void)
{
    char lease[16], stop[300], out[32], err[32], hold[16], idle[16];

    snprintf(lease, sizeof lease, "%d", LEASE_MS);
    path_in_dir("stop", stop, sizeof stop);
    for (int i = 0; i < NLOOPS; i++) {
        snprintf(out, sizeof out, "%s.out", loops[i].id);
        snprintf(err, sizeof err, "%s.err", loops[i].id);
        snprintf(hold, sizeof hold, "%d", loops[i].hold_max_ms);
        snprintf(idle, sizeof idle, "%d", loops[i].idle_max_ms);
        loops[i].pid = start_child(CONTENDER_PATH,
                                   ARGS("lwloop", "--redis", url, "--names", "1", "--lease-ms",
                                        lease, "--wait-ms", "1000", "--hold-max-ms", hold,
                                        "--idle-max-ms", idle, "--deadline-ms", "120000",
                                        "--stop", stop, "--log", log_path, "--id", loops[i].id,
                                        "--lwlock", LWLOCK_PATH),
                                   NULL, out, err);
    }
}

/* A loop's stderr to ours, but for lwlock's "held by another owner"
 * (expected, many). */
static void echo_loop_stderr(const char *id)
{
    char path[300], line[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.err", dir, id);
    if (!(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof line, f))
        if (!strstr(line, lw_strerror(LW_ELOCKED)))
            fprintf(stderr, "[%s stderr] %s", id, line);
    fclose(f);
}

/* Tell the loops to stop after their round and wait (bounded): status 0,
 * and their summaries. */
static void stop_loops(struct summary *sums)
{
    char path[300];
    int fd, code;

    fd = open(path_in_dir("stop", path, sizeof path), O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    for (int i = 0; i < NLOOPS; i++) {
        code = wait_child(loops[i].pid, WAIT_EXIT_MS);
        echo_loop_stderr(loops[i].id);
        cr_assert_eq(code, 0, "loop %s: status %d", loops[i].id, code);
        snprintf(path, sizeof path, "%s/%s.out", dir, loops[i].id);
        cr_assert(read_summary_file(path, &sums[i]), "loop %s printed no summary", loops[i].id);
    }
}

/* The injector's lines in the log (contention_log.h leaves them out of
 * the intervals). */
static void log_fault(const char *kind, const char *fault, int seq)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s injector %d %" PRIu64 " 0\n", kind, fault, seq,
                     lw_clock_now());

    cr_assert_eq(write(log_fd, line, (size_t)n), n);
}

/* Critical sections entered since `since` (lw_clock_now), from the log. */
static long entered_since(uint64_t since)
{
    size_t n;
    struct record *recs = read_log(log_path, &n);
    long k = 0;

    for (size_t i = 0; i < n; i++)
        k += !strcmp(recs[i].kind, "enter") && recs[i].ns >= since;
    free(recs);
    return k;
}

#define NFAULTS (NFAILOVERS + 1)
static uint64_t fault_start[NFAULTS], fault_end[NFAULTS], resumed_ms[NFAULTS];

/* After fault f (the new master named): the lock changes hands again
 * (three sections entered), and how soon. */
static void expect_progress(int f)
{
    cr_assert(wait_until(entered_since(fault_end[f]) >= 3, PROGRESS_MS),
              "no progress after fault %d", f);
    resumed_ms[f] = (lw_clock_now() - fault_end[f]) / 1000000u;
}

/* SENTINEL FAILOVER as soon as the sentinels take it (-INPROG while the
 * last one is wound up, -NOGOODSLAVE until a replica is seen healthy). */
static int failover_when_ready(int ms)
{
    uint64_t until = now_ms() + (uint64_t)ms;

    while (redis_sentinel_failover(&rs) != 0) {
        if (now_ms() >= until)
            return -1;
        sleep_ms(250);
    }
    return 0;
}

/* SENTINEL FAILOVER; then the demoted master rejoins as a replica (after
 * about 11 s: Sentinel's reconfiguration of a master that is still up). */
static void fault_failover(int f)
{
    int m = settled_master();

    log_fault("fault", "failover", f);
    fault_start[f] = lw_clock_now();
    cr_assert_eq(failover_when_ready(30000), 0, "SENTINEL FAILOVER refused");
    cr_assert_geq(redis_sentinel_wait_master(&rs, m, 20000), 0, "no new master");
    log_fault("faultend", "failover", f);
    fault_end[f] = lw_clock_now();
    expect_progress(f);
    cr_assert(wait_until(redis_sentinel_role(&rs, m) == 0, 25000),
              "the demoted master never rejoined");
}

/* kill -9 of the master; it comes back as a replica of its successor. */
static void fault_kill(int f)
{
    int m = settled_master();

    log_fault("fault", "kill", f);
    fault_start[f] = lw_clock_now();
    cr_assert_eq(redis_sentinel_signal(&rs, m, SIGKILL), 0);
    cr_assert_geq(redis_sentinel_wait_master(&rs, m, 20000), 0, "no new master");
    log_fault("faultend", "kill", f);
    fault_end[f] = lw_clock_now();
    expect_progress(f);
    cr_assert_eq(redis_sentinel_restart_node(&rs, m), 0);
    settled_master();
}

/* Critical sections that began before a fault and ended after its end. */
static long spanning(const struct interval *ivs, size_t n)
{
    long k = 0;

    for (size_t i = 0; i < n; i++)
        for (int f = 0; f < NFAULTS; f++)
            k += ivs[i].start < fault_start[f] && ivs[i].end > fault_end[f];
    return k;
}

SENTINEL_TEST(lwlock_loops_never_overlap_through_failovers_and_a_kill)
{
    static struct overlap shown[8];
    struct summary sums[NLOOPS] = {{0}};
    int clashes = 0, regressions;
    long lost = 0, errors = 0, other = 0, acquired = 0;
    struct record *recs;
    struct interval *ivs;
    size_t nrecs, nivs, n;
    uint64_t t0 = now_ms();

    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(log_fd, 0);
    start_loops();
    sleep_ms(GAP_MS);
    cr_assert_geq(entered_since(0), 3, "no progress before the faults");
    for (int f = 0; f < NFAILOVERS; f++)
        fault_failover(f);
    fault_kill(NFAILOVERS);
    sleep_ms(1000);
    stop_loops(sums);
    close(log_fd);

    recs = read_log(log_path, &nrecs);
    for (size_t i = 0; i < nrecs; i++)
        clashes += !strcmp(recs[i].kind, "clash");
    ivs = intervals(recs, nrecs, &nivs);
    for (int i = 0; i < NLOOPS; i++) {
        cr_log_info("sentinel_tools: %s: rounds %ld acquired %ld busy %ld unavailable %ld "
                    "lost %ld other %ld",
                    loops[i].id, sums[i].rounds, sums[i].acquired, sums[i].busy, sums[i].errors,
                    sums[i].lost, sums[i].other);
        lost += sums[i].lost;
        errors += sums[i].errors;
        other += sums[i].other;
        acquired += sums[i].acquired;
    }
    n = find_overlaps(ivs, nivs, shown, 8);
    regressions = token_regressions(ivs, nivs);
    for (size_t i = 0; i < n && i < 8; i++)
        show_overlap(&shown[i]);
    cr_log_info("sentinel_tools: %zu critical sections in %.1f s; the lock changed hands again "
                "%llu, %llu, %llu and %llu ms after the new master was named (three failovers, "
                "a kill); %ld across a fault; overlaps %zu, marker clashes %d, token "
                "regressions %d, lost %ld, unavailable %ld",
                nivs, (now_ms() - t0) / 1000.0, (unsigned long long)resumed_ms[0],
                (unsigned long long)resumed_ms[1], (unsigned long long)resumed_ms[2],
                (unsigned long long)resumed_ms[3],
                spanning(ivs, nivs), n, clashes, regressions, lost, errors);
    cr_assert_eq(n, 0, "%zu overlaps", n);
    cr_assert_eq(clashes, 0);
    cr_assert_eq(other, 0, "an lwlock ended otherwise than done, busy, lost or unavailable");
    /* A lock taken on the old master after the promotion is reported lost
     * once the switch is seen, which may be before its section entered. */
    cr_assert((long)nivs <= acquired && (long)nivs >= acquired - lost,
              "%zu sections for %ld locks acquired, %ld lost: a section without a lock",
              nivs, acquired, lost);
    cr_assert_geq(nivs, 30, "a run without work proves nothing");
    free(recs);
    free(ivs);
}
