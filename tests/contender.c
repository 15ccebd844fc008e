/*
 * tests/contender.c - one contender of tests/test_contention.c, on the
 * public API only.  Three modes:
 *
 *   contender client  --port P --names N --rounds R --deadline-ms D
 *                     --lease-ms L --wait-ms W --log FILE --id ID
 *                     [--hold-min-ms G] [--hold-max-ms H] [--idle-max-ms I]
 *                     [--stop FILE] [--kind read|write] [--permits N]
 *                     [--prefix P] [--max-inflight M] [--command-timeout-ms T]
 *       one lw_client (watchdog lease L, tick 10 ms; its in-flight cap M
 *       and command timeout T when given); each round try-locks one of N
 *       names (waiting at most W ms), runs a critical section of G..H ms
 *       (default 1..20), unlocks, and idles 0..I ms (default 0).  With
 *       --kind, the read or write lock of a read-write lock (fair: a fair
 *       lock; multi: a multi-lock over two of the N names, drawn each
 *       round, both logged, and once told lost, both released by the
 *       library within 2 s, told once, else "other"); with
 *       --permits N, one permit of a semaphore of N (made so when absent,
 *       again after a restart to an empty server), renewed by the
 *       watchdog.  on_lost records the moment this holder was told.
 *   contender lwloop  (the same options) --lwlock PATH [--cluster SEEDS]
 *                     [--redis ADDRESS]
 *       each round runs `lwlock -r 127.0.0.1:P -W L -w W NAME contender
 *       section ...` (with --cluster `lwlock -c SEEDS ...` instead of -r;
 *       with --redis, -r ADDRESS as given, e.g. a redis-sentinel:// URL)
 *       and waits for it (bounded); -r's address is 127.0.0.1:P (a proxy's,
 *       say).  With --kind fair, lwlock --fair.  With --kind read or --kind write,
 *       lwlock --read or --write: the read-write lock NAME.  With --kind
 *       multi, lwlock --multi A,B: two of the N names, drawn as a client
 *       draws them.  With
 *       --permits N, lwlock --permits N: one permit of the semaphore NAME
 *       (created with N).
 *   contender observe (the client's options)
 *       one lw_client observing the election of each of N names
 *       (lw_election_observe()): "seen" lines (the term) with "sure"
 *       lines (stamped with the leader's no-other-until) and "by" lines
 *       (named by the leader's value), "vacant", "unknown"; the report's
 *       sequence is the round.  A client or
 *       lwloop with --kind elect is a candidate (lw_election_campaign(),
 *       lwlock --elect; its value the contender's id): its sections are
 *       its terms, the term logged as the token.
 *   contender section --log FILE --id ID --round K --hold-ms H
 *       lwlock's COMMAND: the critical section; lwlock's lost signal
 *       (SIGTERM) records "lost" and ends it.  Without LWLOCK_TOKEN (a
 *       reader: readers share; a permit: N may be inside) it logs token 0
 *       and takes no marker.  A multi-lock's LWLOCK_NAME is "A,B" (its
 *       LWLOCK_TOKEN "TA,TB"): each name is logged and marked as a
 *       client's set is.
 *
 * Names are P0 .. P(N-1), P being --prefix (default "lock"): a test runs
 * contenders of several kinds at once on names of their own.
 *
 * With --cacert CA --cert CERT --key KEY (client and lwloop) the server is
 * reached over mutual TLS: the client trusts CA and presents CERT (its
 * config's tls), and lwlock runs with --tls --cacert CA --cert CERT --key
 * KEY.
 *
 * The log: one line per event, appended with a single write(2) to a file
 * opened O_APPEND (atomic for short lines, whichever process writes):
 *   <kind> <name> <holder-id> <round> <lw_clock_now() ns> [<extra>]
 * kinds: enter (extra: the fencing token), exit, lost (extra: the reason,
 * 0 for a signal), clash (the marker below was taken), parent (a section's:
 * extra, lwlock's pid, which names its field in a fair lock's queue).
 * lw_clock_now() (CLOCK_BOOTTIME) is one clock for every process of the
 * machine, the injector's and the library's too, so lines of different
 * processes compare; and no clock fault of the tests moves it.
 *
 * "Nobody else is inside" is checked live with a marker per name (FILE.
 * NAME.inside, O_CREAT|O_EXCL at enter, unlinked at exit by its creator):
 * a taken marker is only noted ("clash"); the test's verdict comes from the
 * intervals in the log.
 *
 * A client or lwloop contender ends after R rounds, D ms, or when the stop
 * file exists, and prints one "summary" line of counts on stdout; a client
 * adds its connections' counts (lw_client_stats: reconnects, TLS
 * handshakes, resumed sessions), an lwloop zeros.  Messages go to stderr.
 *
 * LW_CONTENDER_TRACE set in the environment: "trace <ns> ..." lines on
 * stderr, on the log's clock, to read beside it when a run fails: a
 * client's library log (connections lost and restored, leases at risk
 * and lost), each take it tries and how one fails, and after a busy one
 * the name's holder and queue (lw_name_status()); an lwloop's lwlock
 * processes, started and ended.  The test echoes contenders' stderr;
 * LW_TEST_KEEP keeps the directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel.h>

#include "wait_child.h"

#define NAMES_MAX 16
#define HOLD_MAX_MS 20        /* the default */
#define UNLOCK_TRIES 20       /* 250 ms apart: outlasts every fault of the test */
#define LWLOCK_GRACE_MS 15000 /* beyond its wait and command timeout */

struct opts {
    const char *mode;
    int port;
    int names;
    int rounds;
    int deadline_ms;
    int lease_ms;
    int wait_ms;
    int hold_ms;
    int hold_min_ms; /* 0: 1 */
    int hold_max_ms;
    int idle_max_ms;
    int round;
    int permits;            /* lwlock --permits N, or a client's semaphore of N; 0: a lock */
    int max_inflight;       /* client: its cap; 0: the default */
    int command_timeout_ms; /* client: 0: the default */
    int lock_delay_ms;      /* --kind elect: its terms' lock delay; 0 none */
    const char *prefix;     /* the names' */
    const char *log;
    const char *id;
    const char *lwlock;
    const char *cluster; /* lwloop: lwlock -c's seeds instead of -r */
    const char *redis;   /* lwloop: lwlock -r's address instead of --port */
    const char *kind;    /* "read" or "write" (lwlock --read, --write; a
                            client's read or write lock), or NULL: a lock */
    const char *stop;
    const char *cacert, *cert, *key; /* TLS: all three, or none */
};

/* The log, opened once per process; shared by the engine thread's
 * on_lost and, in section mode, the signal handler (tool code). */
static int log_fd = -1;

static uint64_t now_ns(void)
{
    return lw_clock_now();
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One line, one write(2). */
static void record(const char *kind, const char *name, const char *id, long round,
                   long long extra)
{
    char line[256];
    int n = snprintf(line, sizeof line, "%s %s %s %ld %" PRIu64 " %lld\n", kind, name, id,
                     round, now_ns(), extra);

    if (n > 0 && (size_t)n < sizeof line)
        (void)!write(log_fd, line, (size_t)n);
}

static void lock_name(const struct opts *o, int idx, char *buf, size_t size)
{
    snprintf(buf, size, "%s%d", o->prefix, idx);
}

static void marker_path(const struct opts *o, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s.%s.inside", o->log, name);
}

/* Enter's marker: 1 when we created it, 0 (and a clash noted) when it
 * was taken. */
static int take_marker(const struct opts *o, const char *name, long round)
{
    char path[PATH_MAX];
    int fd;

    marker_path(o, name, path, sizeof path);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        record("clash", name, o->id, round, 0);
        return 0;
    }
    close(fd);
    return 1;
}

static void drop_marker(const struct opts *o, const char *name)
{
    char path[PATH_MAX];

    marker_path(o, name, path, sizeof path);
    unlink(path);
}

/* ---- Options ---- */

static int usage(const char *why)
{
    fprintf(stderr, "contender: %s\n", why);
    return 64;
}

static int int_arg(const char *s, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int take_opt(struct opts *o, const char *key, const char *val)
{
    static const struct {
        const char *key;
        size_t off;
    } ints[] = {
        {"--port", offsetof(struct opts, port)},
        {"--names", offsetof(struct opts, names)},
        {"--rounds", offsetof(struct opts, rounds)},
        {"--deadline-ms", offsetof(struct opts, deadline_ms)},
        {"--lease-ms", offsetof(struct opts, lease_ms)},
        {"--wait-ms", offsetof(struct opts, wait_ms)},
        {"--hold-ms", offsetof(struct opts, hold_ms)},
        {"--hold-min-ms", offsetof(struct opts, hold_min_ms)},
        {"--hold-max-ms", offsetof(struct opts, hold_max_ms)},
        {"--idle-max-ms", offsetof(struct opts, idle_max_ms)},
        {"--round", offsetof(struct opts, round)},
        {"--permits", offsetof(struct opts, permits)},
        {"--max-inflight", offsetof(struct opts, max_inflight)},
        {"--command-timeout-ms", offsetof(struct opts, command_timeout_ms)},
        {"--lock-delay-ms", offsetof(struct opts, lock_delay_ms)},
    };

    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(key, ints[i].key))
            return int_arg(val, (int *)((char *)o + ints[i].off));
    if (!strcmp(key, "--log"))
        o->log = val;
    else if (!strcmp(key, "--id"))
        o->id = val;
    else if (!strcmp(key, "--lwlock"))
        o->lwlock = val;
    else if (!strcmp(key, "--stop"))
        o->stop = val;
    else if (!strcmp(key, "--prefix") && *val && strlen(val) < 16)
        o->prefix = val;
    else if (!strcmp(key, "--cluster"))
        o->cluster = val;
    else if (!strcmp(key, "--redis"))
        o->redis = val;
    else if (!strcmp(key, "--kind") &&
             (!strcmp(val, "read") || !strcmp(val, "write") || !strcmp(val, "fair") ||
              !strcmp(val, "multi") || !strcmp(val, "elect")))
        o->kind = val;
    else if (!strcmp(key, "--cacert"))
        o->cacert = val;
    else if (!strcmp(key, "--cert"))
        o->cert = val;
    else if (!strcmp(key, "--key"))
        o->key = val;
    else
        return -1;
    return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.names = 1, .rounds = 1000000, .deadline_ms = 10000, .lease_ms = 1200, .wait_ms = 1000, .hold_ms = 5, .hold_max_ms = HOLD_MAX_MS, .prefix = "lock"};
    if (argc < 2)
        return usage("missing mode");
    o->mode = argv[1];
    for (int i = 2; i < argc; i += 2)
        if (i + 1 >= argc || take_opt(o, argv[i], argv[i + 1]))
            return usage("bad option");
    if (!o->log || !o->id || o->names < 1 || o->names > NAMES_MAX || o->hold_max_ms < 1 ||
        o->hold_min_ms > o->hold_max_ms)
        return usage("--log, --id, 1..16 --names and --hold-max-ms >= 1 (and >= --hold-min-ms) "
                     "are needed");
    if (!o->cacert != !o->cert || !o->cacert != !o->key)
        return usage("TLS needs all of --cacert, --cert and --key");
    log_fd = open(o->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return usage("cannot open the log");
    return 0;
}

/* ---- Counts, printed at the end ---- */

struct counts {
    long rounds, acquired, busy, errors, lost, lost_elsewhere, clashes, unlock_errors, other;
    int last_error;
    struct lw_client_stats conns; /* a client's: its connections' counts */
};

static void print_summary(const struct opts *o, const struct counts *c)
{
    printf("summary %s rounds %ld acquired %ld busy %ld errors %ld lost %ld "
           "lost_elsewhere %ld clashes %ld unlock_errors %ld other %ld last_error %s "
           "reconnects %" PRIu64 " tls_handshakes %" PRIu64 " tls_resumed %" PRIu64 "\n",
           o->id, c->rounds, c->acquired, c->busy, c->errors, c->lost, c->lost_elsewhere,
           c->clashes, c->unlock_errors, c->other, lw_errname(c->last_error),
           c->conns.reconnects, c->conns.tls_handshakes, c->conns.tls_resumed);
    fflush(stdout);
}

/* A small generator per process (rand() would do, but not thread-safely). */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t rng_seed(const char *id)
{
    uint64_t s = now_ns() ^ ((uint64_t)getpid() << 32);

    for (; *id; id++)
        s = s * 131 + (unsigned char)*id;
    return s ? s : 1;
}

/* Another round?  Not after R rounds, the deadline, or the stop file. */
static int go_on(const struct opts *o, long rounds, uint64_t deadline)
{
    return rounds < o->rounds && now_ns() < deadline && !(o->stop && access(o->stop, F_OK) == 0);
}

static int random_hold(const struct opts *o, uint64_t *rng)
{
    int lo = o->hold_min_ms > 1 ? o->hold_min_ms : 1;

    return lo + (int)(rng_next(rng) % (uint64_t)(o->hold_max_ms - lo + 1));
}

/* Between rounds, outside any lock: a long holder leaves its names free
 * for a while. */
static void idle(const struct opts *o, uint64_t *rng)
{
    if (o->idle_max_ms > 0)
        sleep_ms((long)(rng_next(rng) % (uint64_t)(o->idle_max_ms + 1)));
}

/* A multi-lock's pair of the n names: two different ones, the smaller
 * first (one order for everyone, as lwlock --multi takes them). */
static void draw_pair(int n, uint64_t *rng, int *a, int *b)
{
    int x = (int)(rng_next(rng) % (uint64_t)n);
    int y = (x + 1 + (int)(rng_next(rng) % (uint64_t)(n - 1))) % n;

    *a = x < y ? x : y;
    *b = x < y ? y : x;
}

/* ---- Client mode ---- */

/* What the main thread holds now, for on_lost (the engine thread). */
struct holding {
    const struct opts *o;
    _Atomic int inside; /* between enter and exit */
    _Atomic int idx;    /* which name */
    _Atomic int idx2;   /* a multi-lock's second name; -1 none */
    _Atomic int told;   /* on_lost calls during this critical section */
    _Atomic long round;
    _Atomic int lost; /* told during this critical section */
    _Atomic long lost_total, lost_elsewhere;
};

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct holding *h = arg;
    char mine[32], copy[32];
    long round = -1;

    (void)owner;
    char second[32] = "";
    int idx2 = atomic_load(&h->idx2);

    lock_name(h->o, atomic_load(&h->idx), mine, sizeof mine);
    if (idx2 >= 0)
        lock_name(h->o, idx2, second, sizeof second);
    snprintf(copy, sizeof copy, "%.*s", (int)(len < 31 ? len : 31), name);
    if (atomic_load(&h->inside) && (!strcmp(copy, mine) || !strcmp(copy, second))) {
        round = atomic_load(&h->round);
        atomic_store(&h->lost, 1);
        atomic_fetch_add(&h->told, 1);
        /* A multi-lock's set is lost whole: its other name too. */
        if (idx2 >= 0)
            record("lost", strcmp(copy, mine) ? mine : second, h->o->id, round, reason);
    } else {
        /* Lost after its critical section: a fault held its unlock up
         * past the lease.  (Such a loss of the name held now would be
         * taken for this round's: the callback cannot tell them apart.
         * It only ends an interval early in a round that re-acquired a
         * name whose unlock never came back, which the retries below
         * prevent, or count as unlock_errors.) */
        atomic_fetch_add(&h->lost_elsewhere, 1);
    }
    atomic_fetch_add(&h->lost_total, 1);
    record("lost", copy, h->o->id, round, reason);
}

/* One name a client contends for: a lock (plain, or a read-write lock's
 * read or write side), or a semaphore and the permit held of it. */
struct target {
    struct lw_lock *lock;
    struct lw_semaphore *sem;
    struct lw_permit permit;
    struct lw_multi *multi; /* --kind multi: a pair of names */
    struct lw_lock *pair[2];
    struct lw_election *elect; /* --kind elect: a candidate */
};

static int is_multi(const struct opts *o)
{
    return o->kind && !strcmp(o->kind, "multi");
}

static int is_elect(const struct opts *o)
{
    return o->kind && !strcmp(o->kind, "elect");
}

/* Whether a holder of o's kind is alone inside (a marker of its own). */
static int exclusive(const struct opts *o)
{
    return !o->permits && !(o->kind && !strcmp(o->kind, "read"));
}

/* The acquire: 0, LW_ELOCKED, or another error.  A semaphore gone with a
 * restart to an empty server is made again (LW_ENOSEM stays this round's
 * error), as lwlock --permits does. */
static int take(const struct opts *o, struct target *t, uint64_t *token)
{
    int rc;

    if (t->multi) {
        uint64_t tokens[2];

        rc = lw_multi_acquire(t->multi, lw_owner_self(), (uint64_t)o->wait_ms, 0, tokens);
        *token = tokens[0];
        return rc;
    }
    if (t->elect) /* the value: who leads, as observers see it */
        return lw_election_campaign(t->elect, o->id, strlen(o->id), (uint64_t)o->wait_ms, token);
    if (!t->sem)
        return lw_trylock(t->lock, (uint64_t)o->wait_ms, 0, token);
    *token = 0;
    rc = lw_permit_acquire(t->sem, 1, (uint64_t)o->wait_ms, 0, &t->permit);
    if (rc == LW_ENOSEM)
        (void)lw_semaphore_try_set(t->sem, o->permits);
    return rc;
}

/* The release: 0, LW_ENOTOWNER (not held any more: a permit's
 * LW_ENOPERMIT too), or another error. */
static int give(struct target *t)
{
    int rc;

    if (t->multi)
        return lw_multi_unlock(t->multi);
    if (t->elect)
        return lw_election_resign(t->elect);
    if (!t->sem)
        return lw_unlock(t->lock);
    rc = lw_permit_release(t->sem, &t->permit, 1);
    return rc == LW_ENOPERMIT ? LW_ENOTOWNER : rc;
}

/* Release, retrying transport errors (the unlock may not have run): a
 * lock left behind would be renewed for nobody. */
static void release(const struct opts *o, struct target *t, struct counts *c)
{
    int rc = 0;

    for (int i = 0; i < UNLOCK_TRIES; i++) {
        rc = give(t);
        if (rc == 0 || rc == LW_ENOTOWNER)
            return;
        sleep_ms(250);
    }
    c->unlock_errors++;
    c->last_error = rc;
    fprintf(stderr, "contender %s: unlock: %s\n", o->id, lw_errname(rc));
}

/* A multi-lock told lost: its set is the library's to give back.  Within
 * two seconds the owner must hold neither name, and it must have been
 * told once; else a violation ("other"). */
static void check_set_released(struct holding *h, struct target *t, struct counts *c)
{
    uint64_t until = now_ns() + 2000000000u;
    int held = 1;

    while (held && now_ns() < until) {
        held = lw_is_held(t->pair[0]) == 1 || lw_is_held(t->pair[1]) == 1;
        if (held)
            sleep_ms(20);
    }
    if (held || atomic_load(&h->told) != 1) {
        c->other++;
        fprintf(stderr, "contender %s: a lost set %s (told %d times)\n", h->o->id,
                held ? "still held" : "released", atomic_load(&h->told));
    }
}

static void critical_section(struct holding *h, struct target *t, const char *name,
                             const char *name2, uint64_t token, int hold_ms, struct counts *c)
{
    const struct opts *o = h->o;
    long round = atomic_load(&h->round);
    uint64_t until;
    int marker = 0, marker2 = 0;

    atomic_store(&h->lost, 0);
    atomic_store(&h->told, 0);
    atomic_store(&h->inside, 1);
    record("enter", name, o->id, round, (long long)token);
    if (name2)
        record("enter", name2, o->id, round, (long long)token);
    if (exclusive(o)) {
        marker = take_marker(o, name, round);
        c->clashes += !marker;
        if (name2) {
            marker2 = take_marker(o, name2, round);
            c->clashes += !marker2;
        }
    }
    until = now_ns() + (uint64_t)hold_ms * 1000000u;
    while (now_ns() < until && !atomic_load(&h->lost))
        sleep_ms(1);
    record("exit", name, o->id, round, 0);
    if (name2)
        record("exit", name2, o->id, round, 0);
    if (marker)
        drop_marker(o, name);
    if (marker2)
        drop_marker(o, name2);
    atomic_store(&h->inside, 0);
    if (!atomic_load(&h->lost))
        release(o, t, c);
    else if (t->multi)
        check_set_released(h, t, c);
}

/* ---- Tracing (LW_CONTENDER_TRACE) ---- */

static int tracing;                  /* LW_CONTENDER_TRACE is set */
static struct lw_client *trace_client; /* a client's, for trace_status() */

/* A "trace <ns> ..." line on stderr, when tracing. */
__attribute__((format(printf, 1, 2))) static void trace(const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (!tracing)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "trace %" PRIu64 " %s\n", now_ns(), line);
}

static void trace_log(int level, const char *message, void *arg)
{
    (void)arg;
    trace("%s %s", lw_log_level_name(level), message);
}

/* The name's holder and queue, after a busy take. */
static void trace_status(const char *name)
{
    struct lw_name_status st;
    struct lw_lock *l = NULL;
    int rc;

    if (!tracing || !trace_client)
        return;
    rc = lw_fair_lock_new(trace_client, name, strlen(name), &l);
    if (!rc)
        rc = lw_name_status(l, &st);
    lw_lock_free(l);
    if (rc) {
        trace("status %s", lw_errname(rc));
        return;
    }
    trace("status kind %d ttl %" PRId64 " holders %u waiters %u (me %s)", st.kind, st.ttl_ms,
          st.nholders, st.nwaiters, lw_client_id(trace_client));
    for (unsigned i = 0; i < st.nwaiters && i < LW_STATUS_WAITERS; i++)
        trace("waiter %s give-up %" PRId64 " place %" PRId64, st.waiters[i].id,
              st.waiters[i].give_up_ms, st.waiters[i].place_ms);
}

static int new_client(const struct opts *o, struct holding *h, struct lw_client **out)
{
    struct lw_client_config cfg;
    int rc;

    lw_client_config_init(&cfg);
    cfg.port = o->port;
    cfg.tick_ms = 10;
    cfg.watchdog_timeout_ms = (uint32_t)o->lease_ms;
    if (is_elect(o)) { /* a dead candidate drops out of the queue as fast */
        cfg.fair_place_ms = (uint32_t)o->lease_ms;
        cfg.election_lock_delay_ms = (uint32_t)o->lock_delay_ms;
    }
    if (o->max_inflight)
        cfg.max_inflight = (uint32_t)o->max_inflight;
    if (o->command_timeout_ms)
        cfg.command_timeout_ms = (uint32_t)o->command_timeout_ms;
    cfg.on_lost = on_lost;
    cfg.lost_arg = h;
    if (tracing)
        cfg.log = trace_log;
    if (o->cacert) {
        cfg.tls.enable = 1;
        cfg.tls.ca_file = o->cacert;
        cfg.tls.cert_file = o->cert;
        cfg.tls.key_file = o->key;
    }
    if ((rc = lw_client_new(&cfg, out)))
        fprintf(stderr, "contender %s: lw_client_new: %s\n", o->id, lw_errname(rc));
    else
        trace_client = *out;
    return rc;
}

/* The name's handle, of o's kind. */
static int new_target(const struct opts *o, struct lw_client *client, const char *name,
                      struct target *t)
{
    size_t len = strlen(name);
    int rc;

    if (o->permits) {
        rc = lw_semaphore_new(client, name, len, &t->sem);
        if (rc == 0)
            (void)lw_semaphore_try_set(t->sem, o->permits);
        return rc;
    }
    if (o->kind && !strcmp(o->kind, "read"))
        return lw_read_lock_new(client, name, len, &t->lock);
    if (is_elect(o)) /* its term is the token */
        return lw_election_new(client, name, len, &t->elect);
    if (o->kind && !strcmp(o->kind, "fair"))
        rc = lw_fair_lock_new(client, name, len, &t->lock);
    else if (o->kind && !is_multi(o)) /* a multi-lock's names are plain locks */
        rc = lw_write_lock_new(client, name, len, &t->lock);
    else
        rc = lw_lock_new(client, name, len, &t->lock);
    /* Fenced: every section logs its token, whose order the checkers read. */
    return rc ? rc : lw_lock_set_fenced(t->lock, 1);
}

static void client_round(struct holding *h, struct target *targets, struct target *pairs,
                         uint64_t *rng, struct counts *c)
{
    int n = h->o->names, idx, idx2 = -1, rc;
    struct target *t;
    uint64_t token = 0;
    char name[32], name2[32];

    if (pairs) { /* a multi-lock over two names */
        draw_pair(n, rng, &idx, &idx2);
        t = &pairs[idx * n + idx2];
        lock_name(h->o, idx2, name2, sizeof name2);
    } else {
        idx = (int)(rng_next(rng) % (uint64_t)n);
        t = &targets[idx];
    }
    lock_name(h->o, idx, name, sizeof name);
    atomic_store(&h->idx, idx);
    atomic_store(&h->idx2, idx2);
    atomic_store(&h->round, c->rounds);
    trace("try %s", name);
    rc = take(h->o, t, &token);
    if (rc == 0) {
        c->acquired++;
        critical_section(h, t, name, pairs ? name2 : NULL, token, random_hold(h->o, rng), c);
    } else if (rc == LW_ELOCKED) {
        c->busy++;
        trace_status(name);
    } else {
        /* Expected while a fault is on: count it, pause a little, go on. */
        c->errors++;
        c->last_error = rc;
        trace("take %s", lw_errname(rc));
        sleep_ms(20);
    }
    idle(h->o, rng);
    c->rounds++;
}

/* --kind multi: a multi-lock for every pair of names, pairs[a * N + b]
 * (a < b), over the names' own lock handles. */
static int new_pairs(const struct opts *o, struct target *targets, struct target *pairs)
{
    int rc = 0;

    for (int a = 0; a < o->names && !rc; a++) {
        for (int b = a + 1; b < o->names && !rc; b++) {
            struct target *t = &pairs[a * o->names + b];

            t->pair[0] = targets[a].lock;
            t->pair[1] = targets[b].lock;
            rc = lw_multi_new(t->pair, 2, &t->multi);
        }
    }
    return rc;
}

static int run_client(const struct opts *o)
{
    struct holding h = {.o = o, .idx2 = -1};
    struct target targets[NAMES_MAX] = {{0}};
    static struct target pairs[NAMES_MAX * NAMES_MAX];
    struct lw_client *client = NULL;
    struct counts c = {0};
    uint64_t rng = rng_seed(o->id), deadline = now_ns() + (uint64_t)o->deadline_ms * 1000000u;
    int rc = new_client(o, &h, &client);

    for (int i = 0; i < o->names && !rc; i++) {
        char name[32];

        lock_name(o, i, name, sizeof name);
        rc = new_target(o, client, name, &targets[i]);
    }
    if (!rc && is_multi(o))
        rc = o->names < 2 ? LW_EINVAL : new_pairs(o, targets, pairs);
    while (!rc && go_on(o, c.rounds, deadline))
        client_round(&h, targets, is_multi(o) ? pairs : NULL, &rng, &c);
    for (int i = 0; i < NAMES_MAX * NAMES_MAX; i++)
        lw_multi_free(pairs[i].multi);
    for (int i = 0; i < o->names; i++) {
        lw_election_free(targets[i].elect);
        lw_lock_free(targets[i].lock);
        lw_semaphore_free(targets[i].sem);
    }
    if (client)
        lw_client_get_stats(client, &c.conns);
    lw_client_free(client);
    c.lost = atomic_load(&h.lost_total);
    c.lost_elsewhere = atomic_load(&h.lost_elsewhere);
    print_summary(o, &c);
    return rc ? 1 : 0;
}

/* ---- observe mode ---- */

/* One name watched: its handle, and the reports' sequence (the log's
 * round), counted on the engine thread, the only caller. */
struct watch {
    const struct opts *o;
    char name[32];
    struct lw_election *e;
    long seq;
};

/* What the observer is told, as log lines: "seen" at the moment told
 * with the term, and "sure" stamped with its no-other-leader-until (both
 * lw_clock_now()'s); "vacant"; "unknown". */
static void observed(int state, const struct lw_leader *l, void *arg)
{
    struct watch *w = arg;
    long seq = w->seq++;
    char line[256];
    int n;

    if (state == LW_OBSERVED_VACANT || state == LW_OBSERVED_UNKNOWN) {
        record(state == LW_OBSERVED_VACANT ? "vacant" : "unknown", w->name, w->o->id, seq, 0);
        return;
    }
    record("seen", w->name, w->o->id, seq, (long long)l->term);
    n = snprintf(line, sizeof line, "sure %s %s %ld %" PRIu64 " %lld\n", w->name, w->o->id, seq,
                 l->sure_until_ns, (long long)l->term);
    if (n > 0 && (size_t)n < sizeof line)
        (void)!write(log_fd, line, (size_t)n);
    /* Whose: the leader's value, a candidate's id (one word, short). */
    if (l->value_len > 0 && l->value_len < 16 && !strpbrk(l->value, " \n"))
        record("by", l->value, w->o->id, seq, (long long)l->term);
}

/* An observer of every name's election, until the stop file or the
 * deadline; its summary counts the reports (rounds). */
static int run_observer(const struct opts *o)
{
    struct holding h = {.o = o, .idx2 = -1}; /* on_lost: never told here */
    struct watch ws[NAMES_MAX] = {{0}};
    struct lw_client *client = NULL;
    struct counts c = {0};
    uint64_t deadline = now_ns() + (uint64_t)o->deadline_ms * 1000000u;
    int rc = new_client(o, &h, &client);

    for (int i = 0; i < o->names && !rc; i++) {
        ws[i].o = o;
        lock_name(o, i, ws[i].name, sizeof ws[i].name);
        rc = lw_election_new(client, ws[i].name, strlen(ws[i].name), &ws[i].e);
        if (!rc)
            rc = lw_election_observe(ws[i].e, observed, &ws[i]);
    }
    while (!rc && go_on(o, 0, deadline))
        sleep_ms(20);
    for (int i = 0; i < o->names; i++) {
        if (ws[i].e && lw_election_unobserve(ws[i].e) == 0)
            c.rounds += ws[i].seq;
        lw_election_free(ws[i].e);
    }
    if (rc)
        fprintf(stderr, "contender %s: observe: %s\n", o->id, lw_errname(rc));
    if (client)
        lw_client_get_stats(client, &c.conns);
    lw_client_free(client);
    print_summary(o, &c);
    return rc ? 1 : 0;
}

/* ---- lwloop mode ---- */

/* args (NULL-terminated) appended to argv at k: the new k. */
static int append(const char **argv, int k, const char *const *args)
{
    while (*args)
        argv[k++] = *args++;
    return k;
}

/* Child: lwlock [TLS flags] NAME contender section ...; dies with us. */
static void exec_lwlock(const struct opts *o, const char *self, const char *name, long round,
                        int hold_ms)
{
    char addr[32], lease[16], wait[16], rnd[24], hold[16], permits[16], delay[24];
    const char *argv[32] = {o->lwlock};
    int k = 1;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", o->port);
    snprintf(lease, sizeof lease, "%d", o->lease_ms);
    snprintf(wait, sizeof wait, "%dms", o->wait_ms);
    snprintf(rnd, sizeof rnd, "%ld", round);
    snprintf(hold, sizeof hold, "%d", hold_ms);
    if (o->kind && !is_elect(o)) /* --elect NAME: below */
        argv[k++] = !strcmp(o->kind, "read")    ? "--read"
                    : !strcmp(o->kind, "write") ? "--write"
                    : is_multi(o)               ? "--multi"
                                                : "--fair";
    snprintf(permits, sizeof permits, "%d", o->permits);
    if (o->permits)
        k = append(argv, k, (const char *[]){"--permits", permits, NULL});
    else if (is_elect(o)) /* the section logs its term */
        k = append(argv, k, (const char *[]){"--value", o->id, NULL});
    else if (!o->kind || strcmp(o->kind, "read"))
        argv[k++] = "--fence"; /* the section logs its token */
    if (o->cacert)
        k = append(argv, k,
                   (const char *[]){"--tls", "--cacert", o->cacert, "--cert", o->cert, "--key",
                                    o->key, NULL});
    k = append(argv, k,
               (const char *[]){o->cluster ? "-c" : "-r",
                                o->cluster ? o->cluster : o->redis ? o->redis
                                                                   : addr,
                                "-W", lease, "-w", wait, NULL});
    snprintf(delay, sizeof delay, "%dms", o->lock_delay_ms);
    if (is_elect(o)) /* the last option: NAME is its value */
        k = append(argv, k, (const char *[]){"--lock-delay", delay, "--elect", NULL});
    k = append(argv, k,
               (const char *[]){name, self, "section", "--log", o->log, "--id", o->id,
                                "--round", rnd, "--hold-ms", hold, NULL});
    argv[k] = NULL;
    execv(o->lwlock, (char *const *)argv);
    _exit(127);
}

/* lwlock's exit statuses: 0 done, 75 busy, 79 lost, 69 unavailable. */
static void count_status(const struct opts *o, int status, struct counts *c)
{
    if (status == 0 || status == 79)
        c->acquired++;
    if (status == 79)
        c->lost++;
    else if (status == 75)
        c->busy++;
    else if (status == 69)
        c->errors++;
    else if (status != 0)
        c->other++;
    if (status != 0 && status != 75 && status != 79 && status != 69)
        fprintf(stderr, "contender %s: lwlock exited %d\n", o->id, status);
}

static int run_lwloop(const struct opts *o)
{
    uint64_t rng = rng_seed(o->id), deadline = now_ns() + (uint64_t)o->deadline_ms * 1000000u;
    struct counts c = {0};
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

    if (n <= 0 || !o->lwlock)
        return usage("lwloop needs --lwlock and /proc/self/exe");
    self[n] = 0;
    if (is_multi(o) && o->names < 2)
        return usage("--kind multi needs 2 or more --names");
    for (; go_on(o, c.rounds, deadline); c.rounds++) {
        int idx, idx2, hold;
        char name[64];
        pid_t pid;

        if (is_multi(o)) { /* lwlock --multi A,B */
            draw_pair(o->names, &rng, &idx, &idx2);
            lock_name(o, idx, name, sizeof name);
            lock_name(o, idx2, name + strlen(name) + 1, sizeof name - strlen(name) - 1);
            name[strlen(name)] = ',';
        } else {
            idx = (int)(rng_next(&rng) % (uint64_t)o->names);
            lock_name(o, idx, name, sizeof name);
        }
        hold = random_hold(o, &rng);
        fflush(stdout);
        if ((pid = fork()) == 0)
            exec_lwlock(o, self, name, c.rounds, hold);
        if (pid < 0)
            return usage("fork failed");
        trace("lwlock %d started", (int)pid);
        count_status(o, wait_child(pid, o->wait_ms + LWLOCK_GRACE_MS), &c);
        trace("lwlock %d ended", (int)pid);
        idle(o, &rng);
    }
    print_summary(o, &c);
    return 0;
}

/* ---- section mode (lwlock's COMMAND) ---- */

#define SECTION_NAMES 4 /* a multi-lock's names a section logs */

/* Prebuilt for the signal handler, which may only make async-signal-safe
 * calls (clock_gettime, write, unlink, _exit): each name's "lost" line up
 * to its time, and its marker (bit i of have_markers: taken). */
static char lost_prefix[SECTION_NAMES][128];
static size_t lost_prefix_len[SECTION_NAMES];
static char marker_file[SECTION_NAMES][PATH_MAX];
static int section_names;
static volatile sig_atomic_t have_markers;

/* Decimal digits of v at the end of buf[0..size): the first digit. */
static char *u64_digits(uint64_t v, char *buf, size_t size)
{
    char *p = buf + size;

    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v && p > buf);
    return p;
}

/* lwlock's lost signal: this is the moment we were told (of every name:
 * a multi-lock's set is lost whole). */
static void on_term(int sig)
{
    char line[200], num[24], *d;
    size_t dl;

    (void)sig;
    d = u64_digits(now_ns(), num, sizeof num);
    dl = (size_t)(num + sizeof num - d);
    for (int i = 0; i < section_names; i++) {
        size_t len = lost_prefix_len[i];

        memcpy(line, lost_prefix[i], len);
        memcpy(line + len, d, dl);
        len += dl;
        memcpy(line + len, " 0\n", 3);
        (void)!write(log_fd, line, len + 3);
    }
    for (int i = 0; i < section_names; i++)
        if (have_markers & (1 << i))
            unlink(marker_file[i]);
    _exit(0);
}

static void block_term(int how)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(how, &set, NULL);
}

/* s split at its commas into at most max parts (in place): their count,
 * 0 when there are more. */
static int split_commas(char *s, char **parts, int max)
{
    int n = 0;

    for (char *p = s; p; n++) {
        if (n == max)
            return 0;
        parts[n] = p;
        if ((p = strchr(p, ',')))
            *p++ = 0;
    }
    return n;
}

static int run_section(const struct opts *o)
{
    const char *name = getenv("LWLOCK_NAME"), *token = getenv("LWLOCK_TOKEN");
    struct sigaction sa = {.sa_handler = on_term};
    char names_buf[256], tokens_buf[256], *names[SECTION_NAMES], *tokens[SECTION_NAMES];
    int ntokens = 0, taken = 0;

    if (!token) /* lwlock --elect: the term */
        token = getenv("LWLOCK_TERM");
    if (!name)
        return usage("section runs under lwlock (LWLOCK_NAME, LWLOCK_TOKEN)");
    /* lwlock --multi: "A,B" and "TA,TB", each name's token in its order. */
    snprintf(names_buf, sizeof names_buf, "%s", name);
    snprintf(tokens_buf, sizeof tokens_buf, "%s", token ? token : "");
    section_names = split_commas(names_buf, names, SECTION_NAMES);
    if (token)
        ntokens = split_commas(tokens_buf, tokens, SECTION_NAMES);
    if (!section_names || (token && ntokens != section_names))
        return usage("LWLOCK_NAME and LWLOCK_TOKEN: up to 4 names, a token each");
    for (int i = 0; i < section_names; i++) {
        int n = snprintf(lost_prefix[i], sizeof lost_prefix[i], "lost %s %s %d ", names[i],
                         o->id, o->round);

        if (n <= 0 || (size_t)n >= sizeof lost_prefix[i])
            return usage("name too long");
        lost_prefix_len[i] = (size_t)n;
        marker_path(o, names[i], marker_file[i], sizeof marker_file[i]);
    }
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    for (int i = 0; i < section_names; i++)
        record("enter", names[i], o->id, o->round, token ? atoll(tokens[i]) : 0);
    record("parent", names[0], o->id, o->round, (long long)getppid()); /* lwlock's pid */
    /* The markers and their flags change together, as the handler sees
     * them. */
    block_term(SIG_BLOCK);
    for (int i = 0; token && i < section_names; i++)
        taken |= take_marker(o, names[i], o->round) << i;
    have_markers = taken;
    block_term(SIG_UNBLOCK);
    sleep_ms(o->hold_ms);
    /* From here the handler must not unlink a marker that may be the next
     * holder's; a loss now is after our exit anyway. */
    block_term(SIG_BLOCK);
    for (int i = 0; i < section_names; i++)
        record("exit", names[i], o->id, o->round, 0);
    for (int i = 0; i < section_names; i++)
        if (have_markers & (1 << i))
            unlink(marker_file[i]);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);

    if (rc)
        return rc;
    tracing = getenv("LW_CONTENDER_TRACE") != NULL;
    if (!strcmp(o.mode, "client"))
        rc = run_client(&o);
    else if (!strcmp(o.mode, "lwloop"))
        rc = run_lwloop(&o);
    else if (!strcmp(o.mode, "section"))
        rc = run_section(&o);
    else if (!strcmp(o.mode, "observe"))
        rc = run_observer(&o);
    else
        rc = usage("mode: client, lwloop, section or observe");
    close(log_fd);
    return rc;
}
