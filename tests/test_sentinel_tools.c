/*
 * tests/test_sentinel_tools.c - lwlock against a real Sentinel setup (a
 * master, two replicas, three sentinels: tests/fixtures/redis_sentinel.h),
 * run as processes, through a redis-sentinel:// URL:
 *
 *   - given in -r or in LWLOCK_REDIS, lwlock takes the lock on the master
 *     the sentinels name, runs COMMAND under it with increasing fencing
 *     tokens, and still does with the first sentinel of the URL stopped;
 *   - with --replicas 1 the lock is on a replica before COMMAND runs; with
 *     both replicas cut off lwlock exits 69 without running COMMAND and
 *     leaves no key behind;
 *   - loops of lwlock (contender.c's lwloop mode, --redis URL) contend for
 *     one name, loops of lwlock --fair for a fair lock, and loops of
 *     lwlock --elect for an election that lwlock --observe watches,
 *     through SENTINEL FAILOVERs and a kill -9 of the master: never two
 *     holders or leaders, the locks change hands after every fault, and
 *     the observer runs through them all, printing candidates' terms;
 *   - over TLS (TLS-only data nodes and sentinels, mutual TLS): a
 *     rediss-sentinel:// URL takes the lock on the master; an unknown CA
 *     exits 69 with the reason on one line.
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
#include "fixture_util.h"
#include "lwloop_util.h"
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

/* ---- The setup's nodes ---- */

/* One command to data node i: its integer reply (a string one read as a
 * number, nil as 0), or -1. */
static long long node_int(int i, const char *fmt, const char *arg)
{
    return fixture_reply_int(redis_sentinel_command(&rs, i, fmt, arg));
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

/* One run of lwlock (args, env) on name, whose master is m: the token
 * COMMAND saw. */
static unsigned long long run_looking(const char *const *args, const char *const *env, int m,
                                      const char *name)
{
    char path[300];
    unsigned long long token;
    int code;

    set_port_env("LWT_PORT", m);
    unlink(path_in_dir("exists", path, sizeof path));
    code = run_lwlock(args, env);
    cr_assert_eq(code, 0, "%s: lwlock exited %d", name, code);
    token = looked_token(name, m);
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
    t1 = run_looking(ARGS("-r", url, "--fence", "job", "sh", "-c", LWLOCK_LOOK), NULL, m, "job");
    snprintf(env, sizeof env, "LWLOCK_REDIS=%s", url);
    t2 = run_looking(ARGS("--fence", "job", "sh", "-c", LWLOCK_LOOK), ARGS(env), m, "job");
    cr_assert_gt(t1, 0);
    cr_assert_gt(t2, t1, "tokens %llu then %llu", t1, t2);
    cr_assert_eq(node_int(m, "GET %s", "redisson_lock_token:{job}"), (long long)t2);

    /* The URL's first sentinel stopped: it accepts the connection and
     * answers nothing; lwlock asks the next one. */
    cr_assert_eq(redis_sentinel_signal_sentinel(&rs, 0, SIGSTOP), 0);
    t0 = now_ms();
    t3 = run_looking(ARGS("-r", url, "--fence", "job", "sh", "-c", LWLOCK_LOOK), NULL, m, "job");
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
    code = run_lwlock(ARGS("--replicas", "1", "-r", url, "rep", "sh", "-c", look_replicas), NULL);
    cr_assert_eq(code, 0, "%d", code);
    slurp("on0", on0, sizeof on0);
    slurp("on1", on1, sizeof on1);
    cr_assert(!strcmp(on0, "1\n") || !strcmp(on1, "1\n"), "on no replica: '%s' '%s'", on0, on1);
    cr_assert_eq(node_int(m, "EXISTS %s", "rep"), 0, "released");

    /* Both cut off: the acquire is given back, 69, COMMAND never runs. */
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[0], 1), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&rs, rep[1], 1), 0);
    t0 = now_ms();
    code = run_lwlock(ARGS("--replicas", "1", "-r", url, "rep", "touch", "ran"), NULL);
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
    code = run_lwlock(ARGS("--replicas", "1", "-r", url, "rep", "touch", "ran"), NULL);
    cr_assert_eq(code, 0, "replicas back: %d", code);
    cr_assert(exists("ran"), "COMMAND ran in the test's directory");
}

/* ---- Over TLS ---- */

#if LW_HAVE_TLS
static struct tls_certs certs;

/* Data nodes and sentinels TLS-only, clients asked for a certificate; url
 * is rediss-sentinel://. */
static void setup_tls(void)
{
    struct fixture_tls tls;
    char addrs[256];

    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    cr_assert_eq(redis_sentinel_start_tls(&rs, "mymaster", NULL, NULL, &tls), 0,
                 "the TLS Sentinel setup did not start");
    redis_sentinel_addrs(&rs, addrs, sizeof addrs);
    snprintf(url, sizeof url, "rediss-sentinel://%s#mymaster", addrs);
    make_test_dir("/tmp/lw-sentinel-tools-XXXXXX");
}

static void teardown_tls(void)
{
    teardown();
    tls_certs_remove(&certs);
}

/* The sentinels and the master over TLS, the same settings for both
 * (LWLOCK_SENTINEL_TLS unset); COMMAND sees its lock held on the master
 * (through the node's plain unix socket). */
Test(sentinel_tools, lwlock_through_a_rediss_sentinel_url, .init = setup_tls,
     .fini = teardown_tls, .timeout = 150)
{
    int m = redis_sentinel_master(&rs), code;

    cr_assert_geq(m, 0);
    setenv("LWT_SOCK", rs.data[m].unix_path, 1);
    code = run_lwlock(ARGS("-r", url, "--cacert", certs.ca_file, "--cert", certs.client_cert,
                           "--key", certs.client_key, "--fence", "job", "sh", "-c",
                           LWLOCK_LOOK_UNIX),
                      NULL);
    cr_assert_eq(code, 0, "%d", code);
    cr_assert_gt(looked_token("job", m), 0);
    cr_assert_eq(node_int(m, "EXISTS %s", "job"), 0, "released");
    code = run_lwlock(ARGS("-r", url, "--cacert", certs.other_ca_file, "--cert",
                           certs.client_cert, "--key", certs.client_key, "job", "touch", "ran"),
                      NULL);
    cr_assert_eq(code, 69, "an unknown CA: %d", code);
    cr_assert(stderr_has("certificate verify failed") && stderr_one_line());
    cr_assert_not(exists("ran"));
}
#endif

/* ---- Contention under failovers and a kill ---- */

/* The lease outlasts a switch: a kill -9 is seen 2.3 s after, and a
 * renewal may be a third of the lease old by then (docs/reliability.md,
 * "Redis Sentinel"). */
#define LEASE_MS 6000
#define NLOOPS 7
#define GAP_MS 2000         /* before the first fault */
#define PROGRESS_MS 15000   /* the lock must change hands this soon after a fault */
#define WAIT_EXIT_MS 30000  /* an lwlock's wait (1 s) and command timeout, and more */
#define NFAILOVERS 3

static char log_path[300];
static int log_fd = -1;

static struct loop loops[NLOOPS] = {
    {"l0", 20, 0, 0},
    {"l1", 20, 0, 0},
    /* Sections up to a quarter lease: some span the faults. */
    {"l2", LEASE_MS / 4, LEASE_MS / 4, 0},
    /* A fair lock's (its queue, places and give-up times move with the
     * master, or are lost with it: a waiter then queues again). */
    {"lq0", 20, 0, 0, "fair", 0, "fq"},
    {"lq1", LEASE_MS / 4, LEASE_MS / 4, 0, "fair", 0, "fq"},
    /* Candidates of an election (lwlock --elect: its queue, term and value
     * move with the master, or are lost with it), and lwlock --observe
     * watching it (observer_terms()). */
    {"le0", 20, 0, 0, "elect", 0, "el"},
    {"le1", LEASE_MS / 4, LEASE_MS / 4, 0, "elect", 0, "el"},
};

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

/* SENTINEL FAILOVER; then the demoted master rejoins as a replica (after
 * about 11 s: Sentinel's reconfiguration of a master that is still up). */
static void fault_failover(int f)
{
    int m = settled_master();

    log_fault(log_fd, "fault", "failover", f);
    fault_start[f] = lw_clock_now();
    cr_assert_eq(redis_sentinel_failover_when_ready(&rs, 30000), 0, "SENTINEL FAILOVER refused");
    cr_assert_geq(redis_sentinel_wait_master(&rs, m, 20000), 0, "no new master");
    log_fault(log_fd, "faultend", "failover", f);
    fault_end[f] = lw_clock_now();
    expect_progress(f);
    cr_assert(wait_until(redis_sentinel_role(&rs, m) == 0, 25000),
              "the demoted master never rejoined");
}

/* kill -9 of the master; it comes back as a replica of its successor. */
static void fault_kill(int f)
{
    int m = settled_master();

    log_fault(log_fd, "fault", "kill", f);
    fault_start[f] = lw_clock_now();
    cr_assert_eq(redis_sentinel_signal(&rs, m, SIGKILL), 0);
    cr_assert_geq(redis_sentinel_wait_master(&rs, m, 20000), 0, "no new master");
    log_fault(log_fd, "faultend", "kill", f);
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
    struct summary sums[NLOOPS] = {{0}};
    struct loops_verdict v;
    struct observed_terms ot;
    uint64_t t0 = now_ms();
    pid_t observer;

    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(log_fd, 0);
    start_loops(loops, NLOOPS, "--redis", url, LEASE_MS, log_path);
    observer = start_observer("-r", url, "el0");
    sleep_ms(GAP_MS);
    cr_assert_geq(entered_since(0), 3, "no progress before the faults");
    for (int f = 0; f < NFAILOVERS; f++)
        fault_failover(f);
    fault_kill(NFAILOVERS);
    sleep_ms(1000);
    stop_loops(loops, NLOOPS, sums, WAIT_EXIT_MS);
    close(log_fd);
    kill(observer, SIGTERM);
    cr_assert_eq(wait_child(observer, 10000), 0, "lwlock --observe ends with 0 at SIGTERM");
    echo_file("observe.err", "lwlock --observe stderr");

    judge_loops(log_path, loops, sums, NLOOPS, "sentinel_tools", &v);
    cr_log_info("sentinel_tools: %zu critical sections in %.1f s; the lock changed hands again "
                "%llu, %llu, %llu and %llu ms after the new master was named (three failovers, "
                "a kill); %ld across a fault; overlaps %zu, marker clashes %d, token "
                "regressions %d, lost %ld, unavailable %ld",
                v.nivs, (now_ms() - t0) / 1000.0, (unsigned long long)resumed_ms[0],
                (unsigned long long)resumed_ms[1], (unsigned long long)resumed_ms[2],
                (unsigned long long)resumed_ms[3], spanning(v.ivs, v.nivs), v.overlaps,
                v.clashes, v.regressions, v.total.lost, v.total.errors);
    ot = observer_terms(v.ivs, v.nivs, "el0");
    cr_log_info("sentinel_tools: lwlock --observe printed %ld terms, %ld of them a candidate's, "
                "%ld not above the one before, and 'unknown' %ld times",
                ot.terms, ot.candidates, ot.not_above, ot.unknown);
    cr_assert_eq(v.overlaps, 0, "%zu overlaps", v.overlaps);
    cr_assert_geq(ot.terms, 3, "lwlock --observe printed %ld terms", ot.terms);
    /* Not asserted: a term no candidate logged (its campaign's answer
     * lost, or lost with the master), and terms lower than the one
     * before (a repeated term after a failover that lost the counter's
     * last increments: docs/reliability.md, "Redis Sentinel"). */
    cr_assert_eq(v.clashes, 0);
    cr_assert_eq(v.total.other, 0,
                 "an lwlock ended otherwise than done, busy, lost or unavailable");
    /* Not asserted: tokens that went back, and locks lost.  The fencing
     * counter's increments and the acquires the old master took after the
     * promotion are lost with it (docs/reliability.md, "Redis Sentinel");
     * such a lock is reported lost once the switch is seen, which may be
     * before its section entered. */
    cr_assert((long)v.nivs <= v.total.acquired &&
                  (long)v.nivs >= v.total.acquired - v.total.lost,
              "%zu sections for %ld locks acquired, %ld lost: a section without a lock",
              v.nivs, v.total.acquired, v.total.lost);
    cr_assert_geq(v.nivs, 30, "a run without work proves nothing");
    cr_assert_lt(now_ms() - t0, 90000, "four faults took %.1f s", (now_ms() - t0) / 1000.0);
    free(v.recs);
    free(v.ivs);
}
