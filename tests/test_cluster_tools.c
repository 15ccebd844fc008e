/*
 * tests/test_cluster_tools.c - the command-line tools against a real Redis
 * Cluster (3 masters, 3 replicas, tests/fixtures/redis_cluster.h), run as
 * processes:
 *
 *   - lwlock through one seed (a replica) takes locks on every master, runs
 *     COMMAND under them with increasing fencing tokens, and exits as its
 *     usage says (COMMAND's status, 75 held, 79 lost, 127, 69);
 *   - with -c, LWLOCK_REDIS gives only the user and password, as the usage
 *     says (LWLOCK_REDIS takes one address, never seeds);
 *   - loops of lwlock (contender.c's lwloop mode) contend for one name while
 *     its slot's master fails over, the slot migrates key by key to another
 *     master, and every node kills its clients: never two holders at once,
 *     none lost, the lock handed over after each fault, and a holder
 *     inside across each fault keeps it;
 *   - loops of every kind (locks, readers and writers of a read-write
 *     lock, permits of a semaphore of two, a fair lock) on names of one
 *     slot through the same faults: no lock held twice, no writer beside
 *     anyone, never more than two permits inside;
 *   - lwbench --cluster starts its own cluster and reports every master;
 *   - over TLS (a TLS-only cluster, mutual TLS): lwlock -c --tls through
 *     one seed takes the lock on every master; an unknown CA exits 69
 *     with the reason on one line.
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
#include "redis_cluster.h"
#include "time_util.h"
#include "wait_child.h"

static struct redis_cluster cl;
static char seeds[256]; /* every node, for -c */

static void make_dir(void)
{
    make_test_dir("/tmp/lw-cluster-tools-XXXXXX");
}

static void setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 1), 0, "the cluster did not start");
    redis_cluster_seeds(&cl, seeds, sizeof seeds);
    make_dir();
}

static void teardown(void)
{
    remove_test_dir();
    redis_cluster_stop(&cl);
}

#define CLUSTER_TEST(name) \
    Test(cluster_tools, name, .init = setup, .fini = teardown, .timeout = 180)

/* ---- lwlock runs ---- */

static int lwlock(const char *const *args)
{
    return run_lwlock(args, NULL);
}

/* ---- The cluster ---- */

/* One command to node i: its integer reply (a string one read as a
 * number, nil as 0), or -1. */
static long long node_int(int i, const char *fmt, const char *arg)
{
    return fixture_reply_int(redis_cluster_command(&cl, i, fmt, arg));
}

static int slot_of(const char *name)
{
    return (int)node_int(0, "CLUSTER KEYSLOT %s", name);
}

/* A name "<prefix><k>" whose slot master m serves. */
static void name_on(int m, const char *prefix, char *buf, size_t size)
{
    for (int k = 0; k < 1000; k++) {
        snprintf(buf, size, "%s%d", prefix, k);
        if (redis_cluster_slot_master(&cl, slot_of(buf), -1) == m)
            return;
    }
    cr_assert(0, "no name of %s* on node %d", prefix, m);
}

static void node_ok(int i, const char *fmt, const char *arg)
{
    redisReply *r = redis_cluster_command(&cl, i, fmt, arg);

    cr_assert(r && r->type != REDIS_REPLY_ERROR, "node %d: %s: %s", i, fmt,
              r ? r->str : "no answer");
    freeReplyObject(r);
}

static void addr_of(int i, char *buf, size_t size)
{
    snprintf(buf, size, "127.0.0.1:%d", cl.node[i].port);
}

/* ---- lwlock through one seed ---- */

/* One run of lwlock -c seed NAME on master m's name: the token COMMAND saw. */
static unsigned long long run_looking(const char *seed, int m, const char *name)
{
    char port[16];
    unsigned long long token;
    int code;

    snprintf(port, sizeof port, "%d", cl.node[m].port);
    setenv("LWT_PORT", port, 1);
    code = lwlock(ARGS("-c", seed, "--fence", name, "sh", "-c", LWLOCK_LOOK));
    cr_assert_eq(code, 0, "%s on node %d: %d", name, m, code);
    token = looked_token(name, m);
    cr_assert_eq(node_int(m, "EXISTS %s", name), 0, "%s released", name);
    return token;
}

/* The seed is a replica: lwlock finds every master from it. */
CLUSTER_TEST(lwlock_through_one_seed_on_every_master)
{
    char seed[64], name[32], buf[256], token_key[64], closed[64];
    int rep = redis_cluster_replica_of(&cl, 0);
    uint64_t t0;
    pid_t pid;
    int m, code;

    cr_assert_geq(rep, 0);
    addr_of(rep, seed, sizeof seed);
    for (m = 0; m < cl.masters; m++) {
        unsigned long long t1, t2;

        name_on(m, "job", name, sizeof name);
        t1 = run_looking(seed, m, name);
        t2 = run_looking(seed, m, name);
        cr_assert_gt(t1, 0);
        cr_assert_gt(t2, t1, "%s: tokens %llu then %llu", name, t1, t2);
        snprintf(token_key, sizeof token_key, "redisson_lock_token:{%s}", name);
        cr_assert_eq(node_int(m, "GET %s", token_key), (long long)t2, "%s", token_key);
    }

    /* The exit statuses, on master 1's name. */
    name_on(1, "status", name, sizeof name);
    cr_assert_eq(lwlock(ARGS("-c", seed, name, "sh", "-c", "exit 3")), 3);
    cr_assert_eq(lwlock(ARGS("-c", seed, name, "/nonexistent/command")), 127);
    cr_assert(stderr_has("lwlock: /nonexistent/command: "));
    cr_assert_eq(node_int(1, "EXISTS %s", name), 0, "released after exec failed");

    /* Held by another client: 75 at once, or after the wait. */
    node_ok(1, "HSET %s other:1 1", name);
    node_ok(1, "PEXPIRE %s 20000", name);
    cr_assert_eq(lwlock(ARGS("-c", seed, name, "touch", "ran")), 75);
    t0 = now_ms();
    code = lwlock(ARGS("-w", "300ms", "-c", seed, name, "touch", "ran"));
    cr_assert_eq(code, 75, "-w 300: %d", code);
    cr_assert_geq(now_ms() - t0, 300);
    cr_assert_not(exists("ran"), "COMMAND never ran");
    node_ok(1, "DEL %s", name);

    /* Deleted behind its back on its master: COMMAND gets SIGTERM, 79. */
    pid = start_child(LWLOCK_PATH,
                      ARGS("-W", "600", "-c", seed, name, "sh", "-c", TRAPPING("TERM", "0")),
                      NULL, "out", "err");
    if (!wait_until(exists("ready"), 10000)) {
        wait_child(pid, 0);
        echo_file("err", "lwlock stderr");
        cr_assert(0, "COMMAND never got ready");
    }
    cr_assert_eq(node_int(1, "DEL %s", name), 1);
    code = wait_child(pid, 5000);
    echo_file("err", "lwlock stderr");
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");

    /* No seed answers: 69, and COMMAND never runs. */
    snprintf(closed, sizeof closed, "127.0.0.1:%d", closed_port());
    code = lwlock(ARGS("-c", closed, name, "touch", "ran"));
    cr_assert_eq(code, 69, "%d", code);
    cr_assert_not(exists("ran"));
}

/* --status and --min-hold through a seed that is a replica: the status
 * script's two keys ({NAME}:timeout beside NAME) are in one slot; the
 * min-hold's PEXPIRE reaches the name's master. */
CLUSTER_TEST(lwlock_status_and_min_hold_on_a_cluster)
{
    char seed[64], name[32], tkey[64], out[2048];
    int rep = redis_cluster_replica_of(&cl, 0), code;

    cr_assert_geq(rep, 0);
    addr_of(rep, seed, sizeof seed);
    name_on(2, "sem", name, sizeof name);
    snprintf(tkey, sizeof tkey, "{%s}:timeout", name);
    node_ok(2, "SET %s 2", name);
    {
        redisReply *r = redis_cluster_command(&cl, 2, "ZADD %s 922337203685477 permit-1", tkey);

        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "ZADD: %s", r ? r->str : "no answer");
        freeReplyObject(r);
    }
    code = lwlock(ARGS("-c", seed, "--status", name));
    cr_assert_eq(code, 1, "--status on permits: %d", code);
    slurp("out", out, sizeof out);
    cr_assert(strstr(out, "a semaphore, 2 permits available, 1 taken") &&
                  strstr(out, "permit-1  never"),
              "%s", out);

    name_on(1, "atleast", name, sizeof name);
    cr_assert_eq(lwlock(ARGS("-c", seed, "--min-hold", "5s", name, "true")), 0);
    cr_assert_gt(node_int(1, "PTTL %s", name), 0, "left held on its master");
    code = lwlock(ARGS("-c", seed, "--status", "--json", name));
    cr_assert_eq(code, 1, "--status after the min-hold's run: %d", code);
    slurp("out", out, sizeof out);
    cr_assert(strstr(out, "\"kind\": \"lock\"") && strstr(out, "\"holders_total\": 1"), "%s",
              out);
    cr_assert_eq(lwlock(ARGS("-c", seed, name, "touch", "ran")), 75, "refused meanwhile");
    cr_assert_not(exists("ran"));
}

/* With -c, -r or LWLOCK_REDIS give only the user and password (lwlock
 * --help): its HOST:PORT is not used, and its DB must be 0. */
CLUSTER_TEST(lwlock_redis_gives_the_clusters_credentials)
{
    char seed[64], name[32];
    int code;

    addr_of(0, seed, sizeof seed);
    for (int i = 0; i < cl.nnodes; i++)
        node_ok(i, "ACL SETUSER locks on >%s ~* &* +@all", "s3cret");
    name_on(2, "cred", name, sizeof name);

    /* A host that does not exist: only the credentials count. */
    code = run_lwlock(ARGS("-c", seed, name, "true"),
                      ARGS("LWLOCK_REDIS=redis://locks:s3cret@nowhere.invalid:1"));
    cr_assert_eq(code, 0, "the right password: %d", code);
    code = run_lwlock(ARGS("-c", seed, name, "touch", "ran"),
                      ARGS("LWLOCK_REDIS=redis://locks:wrong@nowhere.invalid:1"));
    cr_assert_eq(code, 69, "a wrong password: %d", code);
    cr_assert(stderr_has(lw_strerror(LW_EAUTH)), "says '%s'", lw_strerror(LW_EAUTH));
    cr_assert(!stderr_has("wrong"), "the password is not shown");
    cr_assert_not(exists("ran"));
    /* -r wins over LWLOCK_REDIS, as without -c. */
    code = run_lwlock(ARGS("-c", seed, "-r", "redis://locks:s3cret@h", name, "true"),
                      ARGS("LWLOCK_REDIS=redis://locks:wrong@h"));
    cr_assert_eq(code, 0, "-r's password: %d", code);
    code = run_lwlock(ARGS("-c", seed, name, "true"),
                      ARGS("LWLOCK_REDIS=redis://locks:s3cret@h/2"));
    cr_assert_eq(code, 64, "a DB: %d", code);
    cr_assert(stderr_has("only DB 0"));
    /* Seeds are -c's alone: LWLOCK_REDIS is one address. */
    code = run_lwlock(ARGS(name, "true"), ARGS("LWLOCK_REDIS=127.0.0.1:7000,127.0.0.1:7001"));
    cr_assert_eq(code, 64, "seeds in LWLOCK_REDIS: %d", code);
    cr_assert(stderr_has("LWLOCK_REDIS"));
}

/* ---- Contention under failover, migration and killed connections ---- */

#define LEASE_MS 3000
#define NLOOPS 3
#define GAP_MS 2500        /* between faults: the loops hand the lock over */
#define WAIT_EXIT_MS 30000 /* an lwlock's wait (1 s) and command timeout, and more */

static char log_path[300];
static int log_fd = -1;

static struct loop loops[NLOOPS] = {
    {"l0", 20, 0, 0},
    {"l1", 20, 0, 0},
    /* Sections up to half a lease, spanning the faults and their renewals. */
    {"l2", LEASE_MS / 2, LEASE_MS / 2, 0},
};

/* Between the migration's steps: the loops run in each state (IMPORTING /
 * MIGRATING, ASK, the slot reassigned). */
static int slow_steps(struct redis_cluster *c, enum redis_cluster_step step, void *arg)
{
    (void)c;
    (void)step;
    (void)arg;
    sleep_ms(500);
    return 0;
}

/* The faults, numbered as in the log; when each began and ended, and when
 * the holder kept across it exited (from there the loops take over). */
#define NFAULTS 3
static const char *const fault_names[NFAULTS] = {"failover", "migrate", "client-kill"};
static uint64_t fault_start[NFAULTS], fault_end[NFAULTS], holder_done[NFAULTS];

/* A graceful failover of the slot's master to its replica. */
static void fault_failover(int slot)
{
    cr_assert_geq(redis_cluster_failover(&cl, slot), 0, "the replica never took over");
}

/* The slot to another master, one key per MIGRATE. */
static void fault_migrate(int slot)
{
    int from = redis_cluster_slot_master(&cl, slot, -1), to;

    for (to = 0; to < cl.nnodes && (to == from || redis_cluster_is_master(&cl, to) != 1); to++)
        ;
    cr_assert(from >= 0 && to < cl.nnodes);
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 1, slow_steps, NULL), 0);
    cr_assert_eq(redis_cluster_wait_slot_master(&cl, slot, -1, 15000), to);
}

/* Every node drops its clients, three times. */
static void fault_client_kill(int slot)
{
    (void)slot;
    for (int k = 0; k < 3; k++, sleep_ms(300))
        for (int i = 0; i < cl.nnodes; i++)
            node_ok(i, "CLIENT KILL TYPE %s", "normal");
}

static void (*const faults[NFAULTS])(int) = {fault_failover, fault_migrate, fault_client_kill};

static int log_has(const char *line)
{
    char buf[65536];
    int fd = open(log_path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : 0;

    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strstr(buf, line) != NULL;
}

/* Fault f on slot, logged from its start to its end. */
static void inject_fault(int f, int slot)
{
    log_fault(log_fd, "fault", fault_names[f], f);
    fault_start[f] = lw_clock_now();
    faults[f](slot);
    log_fault(log_fd, "faultend", fault_names[f], f);
    fault_end[f] = lw_clock_now();
}

/* Fault f while a holder ("h", round f) is inside for HOLD_ACROSS_MS
 * under lwlock: it must keep the lock (exit 0, not 79). */
#define HOLD_ACROSS_MS "4000"
static void fault_across_a_holder(int f, int slot)
{
    char round[16], enter[64];
    pid_t pid;
    int code;

    snprintf(round, sizeof round, "%d", f);
    snprintf(enter, sizeof enter, "enter lock0 h %d ", f);
    pid = start_child(LWLOCK_PATH,
                      ARGS("-c", seeds, "-W", "3000", "-w", "20000ms", "--fence", "lock0", CONTENDER_PATH,
                           "section", "--log", log_path, "--id", "h", "--round", round,
                           "--hold-ms", HOLD_ACROSS_MS),
                      NULL, "h.out", "h.err");
    if (!wait_until(log_has(enter), 25000)) {
        wait_child(pid, 0);
        echo_file("h.err", "holder stderr");
        cr_assert(0, "the holder never got in before the %s", fault_names[f]);
    }
    sleep_ms(300);
    inject_fault(f, slot);
    code = wait_child(pid, 20000);
    holder_done[f] = lw_clock_now();
    echo_file("h.err", "holder stderr");
    cr_assert_eq(code, 0, "the lock held across the %s: lwlock exited %d", fault_names[f], code);
}

/* The n loops run on the cluster, a gap before each fault (fault(f,
 * slot) injects it) and after the last; their summaries in sums. */
static void loops_through_faults(struct loop *ls, int n, struct summary *sums, int slot,
                                 void (*fault)(int f, int slot))
{
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(log_fd, 0);
    start_loops(ls, n, "--cluster", seeds, LEASE_MS, log_path);
    sleep_ms(GAP_MS);
    for (int f = 0; f < NFAULTS; f++) {
        fault(f, slot);
        sleep_ms(GAP_MS);
    }
    stop_loops(ls, n, sums, WAIT_EXIT_MS);
    close(log_fd);
}

/* Critical sections entered in [from, to). */
static long entered_between(const struct interval *ivs, size_t n, uint64_t from, uint64_t to)
{
    long k = 0;

    for (size_t i = 0; i < n; i++)
        k += ivs[i].start >= from && ivs[i].start < to;
    return k;
}

static long long max_token(const struct interval *ivs, size_t n)
{
    long long max = 0;

    for (size_t i = 0; i < n; i++)
        max = ivs[i].token > max ? ivs[i].token : max;
    return max;
}

/* Critical sections that began before a fault and ended after it. */
static long spanning(const struct interval *ivs, size_t n)
{
    long k = 0;

    for (size_t i = 0; i < n; i++)
        for (int f = 0; f < NFAULTS; f++)
            k += ivs[i].start < fault_start[f] && ivs[i].end > fault_end[f];
    return k;
}

/* Critical sections entered in the gap after fault f's holder. */
static long after_fault(const struct interval *ivs, size_t n, int f)
{
    return entered_between(ivs, n, holder_done[f], holder_done[f] + GAP_MS * 1000000ull);
}

CLUSTER_TEST(lwlock_loops_never_overlap_through_failover_migration_and_kills)
{
    struct summary sums[NLOOPS] = {{0}};
    const char *name = "lock0"; /* contender.c's name for --names 1 */
    int slot = slot_of(name);
    struct loops_verdict v;
    struct interval *ivs;
    size_t nivs;
    uint64_t t0 = now_ms();

    cr_assert_geq(slot, 0);
    loops_through_faults(loops, NLOOPS, sums, slot, fault_across_a_holder);

    judge_loops(log_path, loops, sums, NLOOPS, "cluster_tools", &v);
    ivs = v.ivs;
    nivs = v.nivs;
    fprintf(stderr,
            "cluster_tools: %zu critical sections in %.1f s (in the 2.5 s after the failover "
            "%ld, the migration %ld, the kills %ld; %ld across a fault); overlaps %zu, marker "
            "clashes %d, token regressions %d, lost %ld, unavailable %ld\n",
            nivs, (now_ms() - t0) / 1000.0, after_fault(ivs, nivs, 0), after_fault(ivs, nivs, 1),
            after_fault(ivs, nivs, 2), spanning(ivs, nivs), v.overlaps, v.clashes,
            v.regressions, v.total.lost, v.total.errors);
    cr_assert_eq(v.overlaps, 0, "%zu overlaps", v.overlaps);
    cr_assert_eq(v.clashes, 0);
    cr_assert_eq(v.regressions, 0, "fencing tokens went back");
    cr_assert_eq(v.total.other, 0,
                 "an lwlock ended otherwise than done, busy, lost or unavailable");
    cr_assert_eq(v.total.lost, 0, "none of these faults loses a lock");
    cr_assert_eq((long)nivs, v.total.acquired + NFAULTS, "every acquired lock ran its section");
    /* The fencing counter moved with the slot, and went on from there. */
    cr_assert_geq(node_int(redis_cluster_slot_master(&cl, slot, -1), "GET %s",
                           "redisson_lock_token:{lock0}"),
                  max_token(ivs, nivs));
    /* Progress: the lock kept changing hands after every fault. */
    cr_assert_geq(nivs, 30, "a run without work proves nothing");
    cr_assert_geq(spanning(ivs, nivs), NFAULTS, "a holder inside across every fault");
    for (int f = 0; f < NFAULTS; f++)
        cr_assert_geq(after_fault(ivs, nivs, f), 3, "no progress after the %s", fault_names[f]);
    free(v.recs);
    free(v.ivs);
}

/* ---- Every kind through the cluster's moves ---- */

/* Loops of every kind on names sharing one slot ({fm}): plain locks, a
 * read-write lock's readers and writers, a semaphore of two, a fair lock. */
#define KIND_PERMITS 2
static struct loop kind_loops[] = {
    {"lk0", 20, 100, 0, NULL, 0, "{fm}lk"},
    {"lk1", LEASE_MS / 2, LEASE_MS / 2, 0, NULL, 0, "{fm}lk"},
    {"lr0", 600, 100, 0, "read", 0, "{fm}rw"},
    {"lr1", 300, 100, 0, "read", 0, "{fm}rw"},
    {"lw0", LEASE_MS / 2, LEASE_MS / 2, 0, "write", 0, "{fm}rw"},
    {"lp0", LEASE_MS / 2, 200, 0, NULL, KIND_PERMITS, "{fm}sem"},
    {"lp1", 300, 100, 0, NULL, KIND_PERMITS, "{fm}sem"},
    {"lp2", 600, 300, 0, NULL, KIND_PERMITS, "{fm}sem"},
    {"lq0", 300, 100, 0, "fair", 0, "{fm}fair"},
    {"lq1", LEASE_MS / 2, 200, 0, "fair", 0, "{fm}fair"},
    /* Candidates of an election, which lwlock --observe watches. */
    {"le0", 300, 100, 0, "elect", 0, "{fm}el"},
    {"le1", LEASE_MS / 2, 200, 0, "elect", 0, "{fm}el"},
};
#define NKIND_LOOPS (int)(sizeof kind_loops / sizeof kind_loops[0])

/*
 * The fault model's cluster part: loops of lwlock of every kind, on names
 * of one slot, while its master fails over to its replica, the slot
 * migrates key by key to another master (MIGRATING/IMPORTING, ASK
 * redirects for the keys moved) and every node kills its clients: no two
 * holders of a lock, no writer beside anyone, never more than two inside
 * the semaphore of two, never two leaders, and lwlock --observe prints
 * only candidates' terms, rising, through it all.
 */
CLUSTER_TEST(every_kind_through_failover_migration_and_kills)
{
    struct summary sums[NKIND_LOOPS] = {{0}};
    struct loops_verdict v;
    struct observed_terms ot;
    int slot = slot_of("{fm}");
    pid_t observer = start_observer("-c", seeds, "{fm}el0");

    cr_assert_geq(slot, 0);
    loops_through_faults(kind_loops, NKIND_LOOPS, sums, slot, inject_fault);
    kill(observer, SIGTERM);
    cr_assert_eq(wait_child(observer, 10000), 0, "lwlock --observe ends with 0 at SIGTERM");
    echo_file("observe.err", "lwlock --observe stderr");

    judge_loops(log_path, kind_loops, sums, NKIND_LOOPS, "cluster_kinds", &v);
    fprintf(stderr,
            "cluster_kinds: sections: locks %zu, read-write %zu (readers together %zu), "
            "permits %zu (at most %d inside, %d permits); overlaps %zu; lost %ld, unavailable "
            "%ld\n",
            v.sections[LOOPS_LOCK], v.sections[LOOPS_RW], v.shared, v.sections[LOOPS_PERMIT],
            v.most_permits, KIND_PERMITS, v.overlaps, v.total.lost, v.total.errors);
    ot = observer_terms(v.ivs, v.nivs, "{fm}el0");
    fprintf(stderr,
            "cluster_kinds: lwlock --observe printed %ld terms, %ld of them a candidate's, %ld "
            "not above the one before, 'unknown' %ld times\n",
            ot.terms, ot.candidates, ot.not_above, ot.unknown);
    cr_assert_eq(v.overlaps, 0, "%zu overlaps of a lock's holders or with a writer",
                 v.overlaps);
    /* Not asserted yet: how many terms it printed.  Once (.ci/run, the
     * long suite under load) it printed none of the 13 terms held, though
     * it ran and ended with 0: a read of its that never completed is the
     * suspect (issue 44's note).  What it printed must hold. */
    if (ot.terms == 0)
        fprintf(stderr, "cluster_kinds: lwlock --observe printed no term\n");
    cr_assert_eq(ot.not_above, 0, "a term printed not above the one before");
    cr_assert_eq(ot.candidates, ot.terms, "lwlock --observe printed a term no candidate held");
    cr_assert_leq(v.most_permits, KIND_PERMITS, "%d inside at once with %d permits",
                  v.most_permits, KIND_PERMITS);
    cr_assert_eq(v.clashes, 0);
    cr_assert_eq(v.regressions, 0, "fencing tokens went back");
    cr_assert_eq(v.total.other, 0,
                 "an lwlock ended otherwise than done, busy, lost or unavailable");
    for (int k = 0; k < 3; k++)
        cr_assert_geq(v.sections[k], 10, "a run without work proves nothing");
    free(v.recs);
    free(v.ivs);
}

/* ---- Over TLS ---- */

#if LW_HAVE_TLS
static struct tls_certs certs;

/* A TLS-only cluster of 3 masters (no replicas: quicker), clients asked
 * for a certificate. */
static void setup_tls(void)
{
    struct fixture_tls tls;

    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    cr_assert_eq(redis_cluster_start_tls(&cl, 3, 0, &tls), 0, "the TLS cluster did not start");
    make_dir();
}

static void teardown_tls(void)
{
    teardown();
    tls_certs_remove(&certs);
}

/* -c --tls: every node over TLS, found through one seed; COMMAND sees its
 * lock held on its master (through the node's plain unix socket). */
Test(cluster_tools, lwlock_tls_through_one_seed_on_every_master, .init = setup_tls,
     .fini = teardown_tls, .timeout = 180)
{
    char seed[64], name[32];
    int code;

    addr_of(0, seed, sizeof seed);
    for (int m = 0; m < cl.masters; m++) {
        name_on(m, "tls", name, sizeof name);
        setenv("LWT_SOCK", cl.node[m].unix_path, 1);
        code = lwlock(ARGS("-c", seed, "--tls", "--cacert", certs.ca_file, "--cert",
                           certs.client_cert, "--key", certs.client_key, "--fence", name, "sh",
                           "-c", LWLOCK_LOOK_UNIX));
        cr_assert_eq(code, 0, "%s on node %d: %d", name, m, code);
        cr_assert_gt(looked_token(name, m), 0);
        cr_assert_eq(node_int(m, "EXISTS %s", name), 0, "%s released", name);
    }
    code = lwlock(ARGS("-c", seed, "--tls", "--cacert", certs.other_ca_file, "--cert",
                       certs.client_cert, "--key", certs.client_key, name, "touch", "ran"));
    cr_assert_eq(code, 69, "an unknown CA: %d", code);
    cr_assert(stderr_has("certificate verify failed") && stderr_one_line());
    cr_assert_not(exists("ran"));
}
#endif

/* ---- lwbench --cluster ---- */

/* The number after key in s (a JSON "key": or a table's words), or -1. */
static double number_after(const char *s, const char *key)
{
    const char *at = s ? strstr(s, key) : NULL;

    return at ? strtod(at + strlen(key), NULL) : -1;
}

/* Its own private cluster: started, run on, stopped. */
Test(cluster_tools, lwbench_cluster_reports_every_master, .init = make_dir, .fini = remove_test_dir,
     .timeout = 180)
{
    static char out[16384], json[16384];
    char json_path[300];
    const char *at, *p;
    int code, masters = 0;

    path_in_dir("lwbench.json", json_path, sizeof json_path);
    code = wait_child(start_child(LWBENCH_PATH,
                                  ARGS("--cluster", "--locks", "3000", "--lease-ms", "3000",
                                       "--tick-ms", "10", "--duration-s", "3", "--json",
                                       json_path),
                                  NULL, "out", "err"),
                      150000);
    slurp("out", out, sizeof out);
    fprintf(stderr, "[lwbench stdout]\n%s", out);
    echo_file("err", "lwbench stderr");
    cr_assert_eq(code, 0, "lwbench --cluster: %d", code);

    /* The table: one run, held, none lost; the per-master lines. */
    cr_assert(strstr(out, "Redis Cluster of 3 masters (private"), "%s", out);
    at = strstr(out, "3000 locks on 3 masters: ");
    cr_assert_not_null(at);
    cr_assert_gt(number_after(at, "masters: "), 1.0, "keys per renewal call");
    for (p = at; (p = strstr(p, "\n127.0.0.1:")); p++)
        masters++;
    cr_assert_eq(masters, 3, "per-master lines: %d", masters);
    cr_assert_not_null(strstr(at, "\ncluster "));

    /* The JSON: the same, field by field. */
    slurp("lwbench.json", json, sizeof json);
    cr_assert_not_null(strstr(json, "\"cluster\": true"));
    cr_assert_eq(number_after(json, "\"acquired\": "), 3000);
    cr_assert_not_null(strstr(json, "\"held\": true"));
    cr_assert_eq(number_after(json, "\"lost\": "), 0);
    cr_assert_gt(number_after(json, "\"keys_per_renewal_call\": "), 1.0);
    cr_assert_gt(number_after(json, "\"keys_per_call\": "), 1.0);
    cr_assert_gt(number_after(json, "\"ceiling_keys_per_s\": "), 0);
    cr_assert_gt(number_after(json, "\"single_key_keys_per_s\": "), 0,
                 "the 1-key ceiling in a cluster");
    cr_assert_gt(number_after(json, "\"renewals_achieved_per_s\": "), 0);
    masters = 0;
    for (p = strstr(json, "\"masters\": ["); p && (p = strstr(p, "{\"addr\": ")); p++) {
        cr_assert_gt(number_after(p, "\"locks\": "), 0, "a master without locks");
        cr_assert_gt(number_after(p, "\"renewals_per_s\": "), 0, "a master not renewing");
        cr_assert_gt(number_after(p, "\"keys_per_call\": "), 1.0);
        cr_assert_gt(number_after(p, "\"ceiling_keys_per_s\": "), 0);
        masters++;
    }
    cr_assert_eq(masters, 3, "masters in the JSON: %d", masters);
}
