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

#include "lock_util.h"

/* The contenders' last arguments: over TLS, the files they connect with. */
#ifdef LW_TEST_TLS
#define LAST_ARGS                                                                      \
    "--cacert", certs.ca_file, "--cert", certs.client_cert, "--key", certs.client_key, \
        (char *)NULL
#else
#define LAST_ARGS (char *)NULL
#endif

#include "contention_run.h"

#define NCONTENDERS 4

static void setup(void)
{
    server_start();
    contention_open();
}

static void teardown(void)
{
    contention_close();
    server_stop();
}

#define CONTENTION_TEST(name) \
    Test(contention, name, .init = setup, .fini = teardown, .timeout = 150)

/* ---- The faults of each test ---- */

#ifdef LW_TEST_TLS
/* The fencing counters at least are kept. */
static int fault_restart_keeping(void)
{
    return restart_keeping(NAMES, 0);
}

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

    run(spec, NCONTENDERS, keeping_faults, NKEEPING, KEEPING_REPS, 1200, &r);
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

/* Each wiping fault's holders on stderr (tagged): every one told, or
 * gone, within the bound, and some told. */
static void told_in_time(const char *tag, const struct wipe_stats *st)
{
    int told = 0;

    for (int k = 0; k < NWIPING; k++) {
        fprintf(stderr,
                "contention: %s%s: %d holders inside, %d told before leaving (at most %.1f ms "
                "(clients) / %.1f ms (lwlock) after the fault ended; bound %d / %d ms), %d "
                "late\n",
                tag, wiping_faults[k].name, st[k].inside, st[k].told, st[k].told_ms[0],
                st[k].told_ms[1], LEASE_MS / 3 + 2 * CLIENT_TICK_MS + TOLD_MARGIN_MS,
                LEASE_MS / 3 + 2 * LWLOCK_TICK_MS + TOLD_MARGIN_MS, st[k].late);
        cr_assert_eq(st[k].late, 0, "%s: %d holders told late", wiping_faults[k].name,
                     st[k].late);
        told += st[k].told;
    }
    cr_assert_geq(told, 1, "no holder was inside at a wiping fault: the bound went untested");
}

/* Our wall clock less lw_clock_now(), in microseconds, read when a run
 * starts: a fencing counter is made at Redis's clock in microseconds
 * (this machine's), so a token tells when its counter was made. */
static long long epoch_less_clock_us;

static void note_epoch(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    epoch_less_clock_us = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 -
                          (long long)(lw_clock_now() / 1000u);
}

/* x's fencing token is from before fault f wiped the counter: below f's
 * start on Redis's clock, at which no counter made after the wipe can
 * start (a counter made before it counts up by one an acquire, which
 * cannot catch up with the clock's microseconds). */
static int drew_before(const struct run *r, const struct interval *x, const struct span *f)
{
    (void)r;
    return x->token > 0 && x->token < (long long)(f->start / 1000u) + epoch_less_clock_us;
}

/* The old holder a got the lock before fault f wiped it: it entered
 * before f ended, or its fencing token is from before the wipe.  Under
 * lwlock, COMMAND enters only after a fork and an exec, tens of ms after
 * the acquire under ASan: an acquire just before a restart can enter
 * after it. */
static int acquired_before(const struct run *r, const struct interval *a, const struct span *f)
{
    return a->start <= f->end || drew_before(r, a, f);
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
    if (acquired_before(r, a, f))
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
 * fencing counters go with the keys, and come back at Redis's clock in
 * microseconds: above every token before, none goes back. */
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
    int regressions, bad = 0;

    note_epoch();
    run(spec, NCONTENDERS, wiping_faults, NWIPING, 3, 1500, &r);
    report(&r, wiping_faults, NWIPING);
    n = find_overlaps(r.ivs, r.nivs, found, sizeof found / sizeof found[0]);
    cr_assert_leq(n, sizeof found / sizeof found[0]);
    regressions = token_regressions(r.ivs, r.nivs);
    for (size_t i = 0; i < n; i++)
        if (!explained(&r, &found[i], st) && bad++ < MAX_SHOWN)
            show_overlap(&found[i]);
    holders_at_faults(&r, st);
    told_in_time("", st);
    for (int k = 0; k < NWIPING; k++)
        fprintf(stderr,
                "contention: %s: %d overlaps; two holders inside together for up to %.1f "
                "ms\n",
                wiping_faults[k].name, st[k].overlaps, st[k].exposed_ms);
    fprintf(stderr, "contention: overlaps %zu, unexplained %d; fencing token regressions %d\n",
            n, bad, regressions);
    cr_assert_eq(bad, 0, "%d overlaps not explained by a wiping fault", bad);
    /* A counter wiped comes back at Redis's clock: the tokens after a wipe
     * are above those before (a regression in the log is an old holder
     * entering late, which explained() reads from its token). */
    for (int i = 0; i < NWIPING; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, wiping_faults[i].name), 3);
    cr_assert_geq(acquisitions(&r, 'c'), 20, "a run without work proves nothing");
    cr_assert_geq(acquisitions(&r, 'l'), 10, "a run without work proves nothing");
    free_run(&r);
}

/* The holders of permits and of a read-write lock through the same wiping
 * faults: an empty server (or FLUSHALL) takes their leases, and a holder
 * that was told nothing keeps believing until its next renewal finds
 * its permit or field gone, as a lock's holder does.  Measured and
 * bounded: every holder inside at a wipe is told, or has left, within a
 * renewal period and two ticks of the fault's end (and the margin).
 * Second holders may get in meanwhile (more inside than permits, a
 * writer beside a reader): the limit no client library removes, which
 * this bound ends. */
#define WIPE_PERMITS 2
CONTENTION_TEST(wiping_faults_every_kind_told_by_the_next_renewal)
{
    static const struct contender spec[] = {
        {"cp0", "client", 2 * LEASE_MS, 1000, LEASE_MS / 2, 0, NULL, WIPE_PERMITS, "sem", 1},
        {"lp1", "lwloop", 2 * LEASE_MS, 1000, LEASE_MS / 2, 0, NULL, WIPE_PERMITS, "sem", 1},
        {"cw0", "client", 2 * LEASE_MS, 1000, LEASE_MS, 0, "write", 0, "rw", 1},
        {"cr1", "client", 2 * LEASE_MS, 1000, LEASE_MS / 2, 0, "read", 0, "rw", 1},
        {"lr2", "lwloop", 2 * LEASE_MS, 1000, LEASE_MS / 2, 0, "read", 0, "rw", 1},
    };
    struct wipe_stats st[NWIPING] = {0};
    struct run r;

    note_epoch();
    run(spec, (int)(sizeof spec / sizeof spec[0]), wiping_faults, NWIPING, 3, 1500, &r);
    report(&r, wiping_faults, NWIPING);
    holders_at_faults(&r, st);
    told_in_time("every kind: ", st);
    for (int i = 0; i < NWIPING; i++)
        cr_assert_eq(count_faults(r.faults, r.nfaults, wiping_faults[i].name), 3);
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

    run(spec, NCONTENDERS, some_faults, NSOME, 2, 1200, &r);
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

    run(spec, NCONTENDERS, some_faults, NSOME, 1, 1200, &r);
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
