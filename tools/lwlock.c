/*
 * tools/lwlock.c - lwlock [options] NAME COMMAND [ARG...]
 *
 * Holds the leasewheel lock NAME on a Redis server while COMMAND runs, as
 * flock(1) does for a file on one machine: acquire (waiting as told), run
 * COMMAND with LWLOCK_NAME (and with --fence LWLOCK_TOKEN, the fencing token) in its
 * environment, release when it exits, exit with its status.  If the lock
 * is lost meanwhile (the watchdog found it gone, or a fixed lease ran out)
 * COMMAND is no longer protected: it gets a signal, and lwlock exits 79
 * once it is gone, so that a caller can tell.  With --warn-signal COMMAND
 * hears of it earlier, when the lock turns at risk (on_risk); with
 * --max-hold the lock is given up after so long held (max_hold_ms), a loss
 * like the others; with --min-hold a COMMAND that ends sooner leaves the
 * lock to expire that long after it was taken (lw_unlock_after), so that
 * the same job started late elsewhere finds it held; with -v the
 * library's log lines go to stderr.
 *
 * With --permits N, one permit of the semaphore NAME is held instead of
 * the lock (created with N permits if absent), renewed or fixed as a lock
 * is, lost the same way; COMMAND sees LWLOCK_PERMIT (the permit's id in
 * hex) instead of LWLOCK_TOKEN.  --set-permits N sets the total and exits.
 *
 * With --elect NAME, lwlock campaigns for leadership of the election NAME
 * (<leasewheel/election.h>: a lock whose term is its fencing token) and
 * runs COMMAND while leader, with LWLOCK_TERM.  Leadership lost is a lock
 * lost (a signal, 79, no campaign again); COMMAND's exit resigns.
 * --observe NAME prints who leads, and every change, until a signal.
 *
 * Structure.  Two threads run here: main, and the library's engine thread,
 * on which the acquire's completion and on_lost are called.  Everything
 * main waits for arrives on a file descriptor, so that one poll() serves
 * each phase without races or polling intervals:
 *   - the signals lwlock acts on (SIGINT, SIGTERM, SIGHUP to pass on,
 *     SIGCHLD for COMMAND's exit) are blocked from the start - before the
 *     engine thread exists - and read from a signalfd: no handlers, and no
 *     mutable global state;
 *   - the engine thread's callbacks (the acquire's, on_lost, on_risk)
 *     only write a small record to a pipe (the only safe, short thing to
 *     do there); main reads it.  The log hook is the exception: it writes
 *     its line to stderr itself, in one write(2);
 *   - a fixed lease's end is a timerfd.
 * The acquire is asynchronous so that a long wait stays interruptible.
 *
 * COMMAND is started with fork() and execvpe(), in a child that restores
 * the signal mask lwlock started with, sees none of the descriptors
 * lwlock or the library opened, only those lwlock itself was given, and
 * gets the loss's signal should lwlock die (PR_SET_PDEATHSIG): the lock
 * is lwlock's, and ends with its lease once nobody renews it.  (The
 * library makes its sockets close-on-exec, but hiredis cannot do it
 * atomically: a reconnect on the engine thread at the moment of the fork
 * could still slip one through.)
 *
 * The command line is read by lwlock_args.c, which the fuzzer calls too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <leasewheel.h>

#include "lwlock_args.h"
#include "lwlock_status.h"
#include "redis_url.h"

#define MAX_INHERITED 64 /* descriptors passed on to COMMAND */

/* What the engine thread tells main, one record per write(2): shorter than
 * PIPE_BUF, so records never interleave. */
enum { EV_ACQUIRED = 1,
       EV_LOST = 2,
       EV_RISK = 3 };

struct event {
    int kind;
    int err;           /* EV_ACQUIRED: 0 or LW_E*; EV_LOST: the reason;
                          EV_RISK: 1 at risk, 0 safe again */
    int64_t value;     /* EV_ACQUIRED: the token; EV_LOST: when (lw_clock_now);
                          EV_RISK: the ms of lease left */
    uint64_t until_ns; /* EV_ACQUIRED: until when the hold is sure */
};

/* The acquire's callback argument: where to post, and where the library
 * writes how long the hold is sure (lw_acquire_until_async()), both on
 * the engine thread. */
struct acquire_out {
    int ev_wr;
    uint64_t until_ns;
    char said[LW_REPLY_ERROR_MAX]; /* Redis's words when it refused */
};

struct run {
    struct lwlock_options opt;
    sigset_t old_mask; /* as lwlock started: COMMAND gets it back */
    int inherited[MAX_INHERITED];
    int ninherited; /* -1: too many to track, leave all open */
    int sigfd, ev_rd, ev_wr, timerfd;
    struct lw_client *client;
    struct lw_lock *lock;
    struct lw_multi *multi;        /* --multi: instead of lock */
    uint64_t tokens[LW_MULTI_MAX]; /* --multi: each name's, as given */
    uint64_t owner;
    struct lw_semaphore *sem;  /* --permits, --set-permits: instead of lock */
    struct lw_election *elect; /* --elect: instead of lock (its owner is its own) */
    struct lw_permit permit;   /* --permits: the one held */
    pid_t child;
    struct acquire_out out;
    uint64_t acquired_ns; /* when the acquire's success arrived */
    uint64_t until_ns;    /* until when the acquire's lease is sure */
    uint64_t ended_ns;    /* when COMMAND's exit was seen */
    /* When -w's wait ends (UINT64_MAX: never). */
    uint64_t wait_until_ns;
    int lost;
    int at_risk; /* warned, and not safe again since */
};

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "lwlock: " text "\n" in one write(2): the engine thread's log lines
 * (-v) go to stderr too, and lines must not interleave. */
static void say_line(const char *text)
{
    char line[2048];
    int n = snprintf(line, sizeof line - 1, "lwlock: %s", text);

    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, (size_t)n);
}

static void report(const char *fmt, ...)
{
    char text[2000];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    say_line(text);
}

/* ---- Descriptors, signals, the engine thread's messages ---- */

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* The descriptors above 2 that lwlock was started with: COMMAND gets them
 * (as flock(1) passes its own on), and nothing opened later. */
static void note_inherited(struct run *r)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    r->ninherited = d ? 0 : -1;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);

        if (fd <= 2 || fd == dirfd(d))
            continue;
        if (r->ninherited == MAX_INHERITED) {
            r->ninherited = -1;
            break;
        }
        r->inherited[r->ninherited++] = fd;
    }
    if (d)
        closedir(d);
    if (r->ninherited > 0)
        qsort(r->inherited, (size_t)r->ninherited, sizeof r->inherited[0], compare_ints);
}

static int setup_signals(struct run *r)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigset_t set;

    /* An ignored SIGCHLD would reap COMMAND behind our back (and never
     * reach the signalfd). */
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, &r->old_mask) ||
        (r->sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
        report("signalfd: %s", strerror(errno));
        return EXIT_OSERR;
    }
    return 0;
}

/* 0, or an exit status.  Before the client: its thread inherits the mask. */
static int setup(struct run *r)
{
    int p[2];

    note_inherited(r);
    if (setup_signals(r))
        return EXIT_OSERR;
    if (pipe2(p, O_CLOEXEC)) {
        report("pipe: %s", strerror(errno));
        return EXIT_OSERR;
    }
    r->ev_rd = p[0];
    r->ev_wr = p[1];
    /* The engine thread must never block on it. */
    fcntl(r->ev_wr, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Engine thread: hand the record to main, nothing more.  The acquire's,
 * one loss, and a pair of risk records at most per renewal period, which
 * main reads as they come while COMMAND runs: the pipe (2048 records)
 * never fills. */
static void post(int fd, int kind, int err, int64_t value, uint64_t until_ns)
{
    struct event ev = {kind, err, value, until_ns};

    (void)!write(fd, &ev, sizeof ev);
}

static void on_acquired(int err, int64_t token, void *arg)
{
    struct acquire_out *out = arg;

    /* Read once the event is: the pipe orders the two. */
    snprintf(out->said, sizeof out->said, "%s", lw_reply_error());
    post(out->ev_wr, EV_ACQUIRED, err, token, err ? 0 : out->until_ns);
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    post(*(const int *)arg, EV_LOST, reason, (int64_t)lw_clock_now(), 0);
}

static void on_risk(const char *name, size_t len, uint64_t owner, int at_risk, uint64_t left_ms,
                    void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    post(*(const int *)arg, EV_RISK, at_risk, (int64_t)left_ms, 0);
}

/* -v: the library's line, "lwlock: LEVEL: message". */
static void on_log(int level, const char *message, void *arg)
{
    char text[1900];

    (void)arg;
    snprintf(text, sizeof text, "%s: %s", lw_log_level_name(level), message);
    say_line(text);
}

static int read_event(int fd, struct event *ev)
{
    return read(fd, ev, sizeof *ev) == (ssize_t)sizeof *ev ? 0 : -1;
}

static int read_signal(int fd)
{
    struct signalfd_siginfo si;

    return read(fd, &si, sizeof si) == (ssize_t)sizeof si ? (int)si.ssi_signo : 0;
}

/* poll() that only returns for readiness (the signals are blocked, but a
 * debugger or SIGSTOP/SIGCONT can still cause EINTR). */
static int wait_readable(struct pollfd *p, nfds_t n)
{
    int rc;

    while ((rc = poll(p, n, -1)) < 0 && errno == EINTR)
        ;
    if (rc < 0)
        report("poll: %s", strerror(errno));
    return rc < 0 ? -1 : 0;
}

/* ---- The lock ---- */

/* A tenth of the lease, at most the default 100 ms: renewals (every third
 * of the lease) and loss detection are a tick late at worst, which a short
 * lease cannot afford at the default tick.  Leases stay >= 3 ticks. */
static uint32_t tick_for(uint32_t lease_ms)
{
    uint32_t tick = lease_ms / 10;

    return tick < 1 ? 1 : tick > LW_DEFAULT_TICK_MS ? LW_DEFAULT_TICK_MS
                                                    : tick;
}

/* Where Redis is, for messages: "HOST:PORT", "the cluster at SEED,..." or
 * "master NAME of the sentinels at HOST:PORT,...". */
static const char *where(const struct run *r, char *buf, size_t size)
{
    const struct lwlock_options *o = &r->opt;

    if (o->cluster.n)
        snprintf(buf, size, "the cluster at %s%s", o->cluster.addr[0],
                 o->cluster.n > 1 ? ",..." : "");
    else if (o->redis.sentinels.n)
        snprintf(buf, size, "master %s of the sentinels at %s%s", o->redis.master,
                 o->redis.sentinels.addr[0], o->redis.sentinels.n > 1 ? ",..." : "");
    else
        snprintf(buf, size, strchr(o->redis.host, ':') ? "[%s]:%d" : "%s:%d", o->redis.host,
                 o->redis.port);
    return buf;
}

/* Redis's words for the last call that it refused, into buf: the
 * acquire's (its callback kept them), else this thread's last blocking
 * call's. */
static const char *redis_words(const struct run *r, char *buf, size_t size)
{
    snprintf(buf, size, "%s", r->out.said[0] ? r->out.said : lw_reply_error());
    return buf;
}

/*
 * Why err, when it says Redis could not be reached (or would not have us:
 * TLS, AUTH, an ACL, a DB it has not, not Redis at all) and the client
 * knows why: " (" the client's last error ")",
 * the address and the reason (e.g. "127.0.0.1:6380: TLS: certificate
 * verify failed: ..."); when Redis refused a command, " (Redis: " its
 * words ")"; into buf; else "".  Returns buf.
 */
static const char *reason(const struct run *r, int err, char *buf, size_t size)
{
    char last[512];

    buf[0] = 0;
    switch (err) {
    case LW_ETIMEDOUT:
    case LW_ECONNREFUSED:
    case LW_ENOHOST:
    case LW_EAUTH:
    case LW_ECONNLOST:
    case LW_EREDIS:
    case LW_ECONNECT:
    case LW_EUNSETTLED:
    case LW_ETLS:
    case LW_ENOPERM:
    case LW_ENODB:
    case LW_EPROTO:
    case LW_ENOTSUP:
        if (r->client && lw_client_last_error(r->client, last, sizeof last) && last[0])
            snprintf(buf, size, " (%s)", last);
        break;
    case LW_EREPLY:
    case LW_EWRONGTYPE:
        if (redis_words(r, last, sizeof last)[0])
            snprintf(buf, size, " (Redis: %s)", last);
        break;
    }
    return buf;
}

/*
 * The exit status of a call that failed with err: lwlock's one table
 * (lwlock_args.h lists the statuses; --help and lwlock(1) print them).
 * 65 the name holds another kind of lock or another type of value, 75
 * not acquired within the wait, 71 out of memory, 69 anything else:
 * Redis unreachable, refusing us (a password, an ACL, a DB it has not,
 * TLS, not Redis at all) or failing a command.  A usage error (64) is
 * found by lwlock_args.c before any call.
 */
static int exit_status(int err)
{
    switch (err) {
    case LW_EWRONGKIND:
    case LW_EWRONGTYPE:
        return EXIT_WRONGKIND;
    case LW_ELOCKED:
        return EXIT_LOCKED;
    case LW_ENOMEM:
        return EXIT_OSERR;
    default:
        return EXIT_UNAVAILABLE;
    }
}

/* --multi: the key of the name at *name in NAME's comma list
 * (PREFIX:NAME), into key (LW_LOCK_NAME_MAX + 1 bytes); *name moves on
 * to the next.  The key's length, as printed. */
static size_t multi_key(const struct run *r, const char **name, char *key)
{
    const char *comma = strchr(*name, ',');
    size_t len = comma ? (size_t)(comma - *name) : strlen(*name);
    int klen = snprintf(key, LW_LOCK_NAME_MAX + 1, "%s%s%.*s", r->opt.prefix ? r->opt.prefix : "",
                        r->opt.prefix ? ":" : "", (int)len, *name);

    *name = comma ? comma + 1 : *name + len;
    return klen < 0 ? 0 : (size_t)klen; /* too long: lw_lock_new() refuses it */
}

/* --multi: a lock handle for each name (PREFIX:NAME), the multi-lock over
 * them (which keeps them). */
static int new_multi(struct run *r)
{
    struct lw_lock *locks[LW_MULTI_MAX];
    const char *name = r->opt.name;
    size_t n = 0;
    int rc = 0;

    while (rc == 0 && n < r->opt.nnames) {
        char key[LW_LOCK_NAME_MAX + 1];
        size_t klen = multi_key(r, &name, key);

        if ((rc = lw_lock_new(r->client, key, klen, &locks[n])) == 0 &&
            (rc = lw_lock_set_fenced(locks[n], r->opt.fence)) == 0)
            n++;
    }
    if (rc == 0)
        rc = lw_multi_new(locks, n, &r->multi);
    while (n)
        lw_lock_free(locks[--n]);
    return rc;
}

/* The handle of the lock --read, --write, --fair, --multi or none asks
 * for, fenced with --fence (not a read lock: the options refused it). */
static int new_lock(struct run *r)
{
    const char *key = r->opt.key;
    int rc;

    switch (r->opt.kind) {
    case LWLOCK_MULTI:
        return new_multi(r);
    case LWLOCK_READ:
        return lw_read_lock_new(r->client, key, strlen(key), &r->lock);
    case LWLOCK_WRITE:
        rc = lw_write_lock_new(r->client, key, strlen(key), &r->lock);
        break;
    case LWLOCK_FAIR:
        rc = lw_fair_lock_new(r->client, key, strlen(key), &r->lock);
        break;
    default:
        rc = lw_lock_new(r->client, key, strlen(key), &r->lock);
        break;
    }
    return rc ? rc : lw_lock_set_fenced(r->lock, r->opt.fence);
}

/* $name, or NULL when unset or empty. */
static const char *env(const char *name)
{
    const char *v = getenv(name);

    return v && v[0] ? v : NULL;
}

/* err says Redis could not be reached, or did not answer: what a wait
 * covers (the library's acquires wait through it until -w's end). */
static int unreachable(int err)
{
    return err == LW_ECONNREFUSED || err == LW_ECONNECT || err == LW_ECONNLOST ||
           err == LW_ETIMEDOUT || err == LW_EUNSETTLED;
}

/* --permits N: the semaphore created with N permits when absent (an
 * existing one keeps its count); try_set's answer. */
static int create_semaphore(struct run *r)
{
    int rc = lw_semaphore_try_set(r->sem, r->opt.permits);

    if (rc == 1 && r->opt.verbose)
        report("created the semaphore %s with %lld permits", r->opt.key, r->opt.permits);
    return rc;
}

/* The lock, or with permits the semaphore (created with --permits' N when
 * absent).  With -w, a Redis not reached yet is the acquire's to wait
 * for: it creates the semaphore then, should it still be absent. */
static int new_handle(struct run *r)
{
    const char *key = r->opt.key;
    int rc;

    if (r->opt.elect)
        return lw_election_new(r->client, key, strlen(key), &r->elect);
    if (!r->opt.permits && r->opt.set_permits < 0)
        return new_lock(r);
    if ((rc = lw_semaphore_new(r->client, key, strlen(key), &r->sem)) || !r->opt.permits)
        return rc;
    rc = create_semaphore(r);
    if (rc < 0 && unreachable(rc) && r->opt.wait_ms > 0)
        return 0;
    return rc < 0 ? rc : 0;
}

static int wrong_type(const struct run *r);

static int start_client(struct run *r)
{
    char at[600], why[600];
    struct lw_client_config cfg;
    int rc;

    lw_client_config_init(&cfg);
    cfg.host = r->opt.redis.host;
    cfg.port = r->opt.redis.port;
    cfg.db = r->opt.redis.db;
    cfg.username = r->opt.redis.username[0] ? r->opt.redis.username : NULL;
    cfg.password = r->opt.redis.password[0] ? r->opt.redis.password : NULL;
    cfg.cluster_seeds = r->opt.cluster.n ? r->opt.cluster.ptr : NULL;
    cfg.cluster_nseeds = r->opt.cluster.n;
    if (r->opt.redis.sentinels.n) {
        cfg.sentinels = r->opt.redis.sentinels.ptr;
        cfg.nsentinels = r->opt.redis.sentinels.n;
        cfg.sentinel_master = r->opt.redis.master;
        /* Not the URL's: those are the master's (Lettuce's convention);
         * sentinels mostly have no password, or one of their own. */
        cfg.sentinel_username = env("LWLOCK_SENTINEL_USERNAME");
        cfg.sentinel_password = env("LWLOCK_SENTINEL_PASSWORD");
    }
    /* The data nodes' TLS; the sentinels reached the same way unless
     * $LWLOCK_SENTINEL_TLS=0 asked for plain ones (sentinel_tls: off). */
    cfg.tls = r->opt.tls;
    cfg.sentinel_tls_own = r->opt.redis.sentinels.n && r->opt.plain_sentinels;
    cfg.acquire_replicas = r->opt.replicas;
    /* HGETALL NAME says which machine and process holds it. */
    cfg.client_id_host = 1;
    cfg.watchdog_timeout_ms = r->opt.watchdog_ms;
    /* A candidate that dies in the queue drops out within its lease, as
     * a leader that dies does. */
    if (r->opt.elect) {
        cfg.fair_place_ms = r->opt.watchdog_ms;
        cfg.election_lock_delay_ms = r->opt.lock_delay_ms;
    }
    cfg.tick_ms = tick_for(r->opt.lease_ms ? r->opt.lease_ms : r->opt.watchdog_ms);
    cfg.on_lost = on_lost;
    cfg.lost_arg = &r->ev_wr; /* set before the engine thread starts, never changed */
    if (r->opt.warn_sig) {
        cfg.on_risk = on_risk;
        cfg.risk_arg = &r->ev_wr;
    }
    cfg.max_hold_ms = r->opt.max_hold_ms;
    /* -w's wait covers reaching Redis: the connection tries again at
     * least every quarter of it, so that a Redis back before the wait
     * ends is found in time (the back-off doubles up to that). */
    if (r->opt.wait_ms > 0 && (unsigned long long)r->opt.wait_ms / 4 < cfg.reconnect_max_ms)
        cfg.reconnect_max_ms = r->opt.wait_ms / 4 > cfg.reconnect_min_ms
                                   ? (uint32_t)(r->opt.wait_ms / 4)
                                   : cfg.reconnect_min_ms;
    if (r->opt.verbose)
        cfg.log = on_log;
    if ((rc = lw_client_new(&cfg, &r->client)) == 0 && (rc = new_handle(r)) == 0)
        return 0;
    if (rc == LW_EWRONGTYPE) /* --permits' creation met another type */
        return wrong_type(r);
    if (rc == LW_ENOTSUP && r->opt.tls.enable && !r->client)
        report("cannot use Redis at %s over TLS: this leasewheel was built without TLS",
               where(r, at, sizeof at));
    else
        report("cannot use Redis at %s: %s%s", where(r, at, sizeof at), lw_strerror(rc),
               reason(r, rc, why, sizeof why));
    return exit_status(rc);
}

/* What lwlock's kind asks of a name, for messages. */
static const char *asked(const struct run *r)
{
    if (r->sem)
        return "a semaphore";
    return r->opt.kind == LWLOCK_READ || r->opt.kind == LWLOCK_WRITE ? "a read-write lock"
                                                                     : "a lock";
}

/* Whether key holds a type that the kind asked cannot use (a semaphore:
 * anything but a count; a lock: anything but a lock's hash, a
 * semaphore's count too), and what, into what (lwlock_holds_phrase(): as
 * --status says it). */
static int holds_other(const struct run *r, const char *key, size_t len, char *what, size_t n)
{
    struct lw_lock *l = NULL;
    struct lw_name_status st;
    int other = 0;

    if (lw_lock_new(r->client, key, len, &l) == 0 && lw_name_status(l, &st) == 0) {
        other = st.kind == LW_NAME_OTHER ||
                (r->sem ? st.kind != LW_NAME_PERMITS && st.kind != LW_NAME_FREE
                        : st.kind == LW_NAME_PERMITS);
        lwlock_holds_phrase(&st, what, n);
    }
    lw_lock_free(l);
    return other;
}

/* LW_EWRONGTYPE: which name holds what, in a sentence ("jobs holds a
 * string, not a lock"; "jobs holds a hash that is not a lock"), and
 * Redis's words; 65.  --multi: the first name that does. */
static int wrong_type(const struct run *r)
{
    const char *name = r->opt.name;
    char key[LW_LOCK_NAME_MAX + 1], what[120] = "", words[512], tail[40] = "";
    int found = 0;

    redis_words(r, words, sizeof words); /* before the status calls below */
    if (!r->multi)
        found = holds_other(r, r->opt.key, strlen(r->opt.key), what, sizeof what);
    for (size_t i = 0; r->multi && !found && i < r->opt.nnames; i++) {
        size_t klen = multi_key(r, &name, key);

        found = holds_other(r, key, klen, what, sizeof what);
    }
    if (!found)
        snprintf(what, sizeof what, "another type of Redis value");
    /* "a hash that is not a lock" says it of a lock already */
    if (!lwlock_phrase_says_no_lock(what))
        snprintf(tail, sizeof tail, ", not %s", asked(r));
    else if (r->sem)
        snprintf(tail, sizeof tail, ", nor %s", asked(r));
    report("%s holds %s%s (Redis: %s)", found && r->multi ? key : r->opt.key, what, tail, words);
    return EXIT_WRONGKIND;
}

/* The acquire failed with err: the exit status, with a message. */
static int acquire_failed(const struct run *r, int err)
{
    char at[600], why[600];

    if (err == LW_ELOCKED) { /* -q: the loser of a race says nothing */
        if (!r->opt.quiet)
            report("%s: %s", r->opt.key,
                   r->sem     ? "no permit free within the wait"
                   : r->elect ? "another leads: not elected within the wait"
                              : lw_strerror(err));
        return EXIT_LOCKED; /* main() makes it -E's */
    }
    if (err == LW_EWRONGKIND) {
        report("%s holds a lock of another kind: %s", r->opt.key,
               r->opt.kind == LWLOCK_PLAIN ? "a read-write lock (try --read or --write)"
                                           : "a plain lock (not --read nor --write)");
        return EXIT_WRONGKIND;
    }
    if (err == LW_EWRONGTYPE)
        return wrong_type(r);
    report("cannot acquire %s at %s: %s%s", r->opt.key, where(r, at, sizeof at),
           lw_strerror(err), reason(r, err, why, sizeof why));
    return exit_status(err);
}

/* The lock or permit given back at once, whatever the answer. */
static int let_go(struct run *r)
{
    if (r->multi)
        return lw_multi_unlock_owner(r->multi, r->owner);
    if (r->elect)
        return lw_election_resign(r->elect);
    return r->sem ? lw_permit_release(r->sem, &r->permit, 1) : lw_unlock_owner(r->lock, r->owner);
}

/*
 * Interrupted while acquiring.  An acquire still pending fails when the
 * client is freed; one whose success is on its way cannot be told apart
 * from that here, so whatever already arrived is looked at: a lock that
 * was acquired is released.  (One acquired in the instant between this
 * look and the client's end expires after its lease, as if lwlock had
 * crashed.)
 */
static int interrupted(struct run *r, int sig)
{
    struct pollfd p = {r->ev_rd, POLLIN, 0};
    struct event ev;
    char buf[24];

    if (poll(&p, 1, 0) == 1 && read_event(r->ev_rd, &ev) == 0 && ev.kind == EV_ACQUIRED &&
        ev.err == 0)
        let_go(r);
    report("interrupted by %s while acquiring %s", lwlock_signal_name(sig, buf, sizeof buf),
           r->opt.key);
    return 128 + sig;
}

/* What is left of -w's wait: LW_WAIT_FOREVER, or ms (0 once over). */
static uint64_t wait_left(const struct run *r)
{
    uint64_t now = lw_clock_now();

    if (r->wait_until_ns == UINT64_MAX)
        return LW_WAIT_FOREVER;
    return now < r->wait_until_ns ? (r->wait_until_ns - now + 999999u) / 1000000u : 0;
}

/* Start the acquire, waiting what is left of -w: 0, or an LW_E* code. */
static int start_acquire(struct run *r)
{
    uint64_t wait = wait_left(r);

    if (r->sem) /* the ids land in r->permit, which outlives the client */
        return lw_permit_acquire_until_async(r->sem, 1, wait, r->opt.lease_ms, &r->permit,
                                             &r->out.until_ns, on_acquired, &r->out);
    if (r->elect) /* the term comes as the token */
        return lw_election_campaign_async(r->elect, r->opt.value, strlen(r->opt.value), wait,
                                          on_acquired, &r->out);
    if (r->multi) /* the tokens land in r->tokens, likewise */
        return lw_multi_acquire_until_async(r->multi, r->owner, wait, r->opt.lease_ms, r->tokens,
                                            &r->out.until_ns, on_acquired, &r->out);
    return lw_acquire_until_async(r->lock, r->owner, wait, r->opt.lease_ms, &r->out.until_ns,
                                  on_acquired, &r->out);
}

/* The acquire found no semaphore: with --permits N it is created, as at
 * the start (Redis restarted empty since, or was not reached then), and
 * asked again, at most a few times; 0 when it was, else an LW_E* code. */
static int acquire_again(struct run *r, int err, int *agains)
{
    int rc;

    if (err != LW_ENOSEM || !r->opt.permits || ++*agains > 3)
        return err;
    /* Redis gone again: the acquire waits for it, while -w lasts. */
    if ((rc = create_semaphore(r)) < 0 && !(unreachable(rc) && wait_left(r) != 0))
        return rc;
    return start_acquire(r);
}

/* 0 with *token set, or an exit status. */
static int acquire(struct run *r, uint64_t *token)
{
    struct pollfd p[2] = {{r->sigfd, POLLIN, 0}, {r->ev_rd, POLLIN, 0}};
    struct event ev;
    int rc, sig, agains = 0;

    r->owner = lw_owner_self();
    r->out.ev_wr = r->ev_wr;
    r->wait_until_ns = r->opt.wait_ms < 0 ? UINT64_MAX
                                          : lw_clock_now() + (uint64_t)r->opt.wait_ms * 1000000u;
    if ((rc = start_acquire(r)))
        return acquire_failed(r, rc);
    for (;;) {
        if (wait_readable(p, 2))
            return EXIT_OSERR;
        if (p[0].revents && (sig = read_signal(r->sigfd)) != 0 && sig != SIGCHLD)
            return interrupted(r, sig);
        if (p[1].revents && read_event(r->ev_rd, &ev) == 0 && ev.kind == EV_ACQUIRED) {
            if (ev.err && (rc = acquire_again(r, ev.err, &agains)) == 0)
                continue;
            if (ev.err)
                return acquire_failed(r, rc);
            *token = (uint64_t)ev.value;
            r->acquired_ns = lw_clock_now();
            r->until_ns = ev.until_ns;
            return 0;
        }
    }
}

/* A fixed lease's end: when the library says the lease is sure no longer
 * (lw_acquire_until_async()), counted from the earliest the lease can
 * have started, not from the reply, which may have come late.  On
 * CLOCK_BOOTTIME, lw_clock_now()'s clock, which counts a suspend: a lease
 * that ends while the host sleeps fires at waking; one already past
 * fires at once. */
static int arm_lease_timer(struct run *r)
{
    struct itimerspec its = {
        .it_value = {(time_t)(r->until_ns / 1000000000u), (long)(r->until_ns % 1000000000u)},
    };

    r->timerfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
    if (r->timerfd < 0 || timerfd_settime(r->timerfd, TFD_TIMER_ABSTIME, &its, NULL)) {
        report("timerfd: %s", strerror(errno));
        return EXIT_OSERR;
    }
    return 0;
}

/* ---- COMMAND ---- */

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Set by lwlock for COMMAND: never passed on from lwlock's own
 * environment (a nested lwlock's would mislead). */
static int ours(const char *var)
{
    return has_prefix(var, "LWLOCK_NAME=") || has_prefix(var, "LWLOCK_TOKEN=") ||
           has_prefix(var, "LWLOCK_PERMIT=") || has_prefix(var, "LWLOCK_TERM=");
}

/* Whether COMMAND gets a second variable beside LWLOCK_NAME: a permit's
 * LWLOCK_PERMIT, a fenced lock's LWLOCK_TOKEN (--fence) or a leader's
 * LWLOCK_TERM (--elect); other locks have none, and one inherited from an
 * outer lwlock must not pass for it. */
static int env_second(const struct run *r)
{
    return r->sem || r->opt.fence || r->elect;
}

/* LWLOCK_REDIS=... with the password taken out (malloc'd), or NULL when
 * var is not LWLOCK_REDIS or has none.  *failed on ENOMEM. */
static char *redis_var_without_password(const char *var, int *failed)
{
    char *v;

    if (!has_prefix(var, "LWLOCK_REDIS=") || !strchr(var, '@'))
        return NULL;
    if (!(v = malloc(strlen(var) + 1))) {
        *failed = 1;
        return NULL;
    }
    memcpy(v, "LWLOCK_REDIS=", sizeof "LWLOCK_REDIS=");
    if (redis_url_without_password(var + strlen("LWLOCK_REDIS="), v + strlen("LWLOCK_REDIS="),
                                   strlen(var) + 1 - strlen("LWLOCK_REDIS=")))
        return v;
    free(v);
    return NULL;
}

/* lwlock's environment with LWLOCK_NAME set, LWLOCK_TOKEN or
 * LWLOCK_PERMIT when env_second(), and LWLOCK_REDIS without its password
 * and no LWLOCK_SENTINEL_PASSWORD (COMMAND is not lwlock's to trust with
 * them: a nested lwlock is given them again): built before fork(), since the child of a threaded process
 * must not allocate.  The strings made (*made) are the array's last
 * entries, freed with it (free_env). */
static char **command_env(const struct run *r, uint64_t token, size_t *made)
{
    extern char **environ;
    const char *name = r->opt.key;
    size_t n = 0, k = 0;
    char **env, *vname, *vsecond = NULL, *vredis = NULL, hex[LW_PERMIT_HEX_LEN + 1];
    int failed = 0;

    while (environ[n])
        n++;
    env = malloc((n + 4) * sizeof *env);
    vname = malloc(strlen(name) + sizeof "LWLOCK_NAME=");
    if (env_second(r))
        vsecond = malloc(sizeof "LWLOCK_PERMIT=" + LW_PERMIT_HEX_LEN + 21 * LW_MULTI_MAX);
    for (size_t i = 0; i < n && !vredis; i++)
        vredis = redis_var_without_password(environ[i], &failed);
    if (!env || !vname || (env_second(r) && !vsecond) || failed) {
        free(env);
        free(vname);
        free(vsecond);
        free(vredis);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!ours(environ[i]) && !(vredis && has_prefix(environ[i], "LWLOCK_REDIS=")) &&
            !has_prefix(environ[i], "LWLOCK_SENTINEL_PASSWORD="))
            env[k++] = environ[i];
    *made = 0;
    if (vredis)
        env[k++] = vredis, ++*made;
    sprintf(vname, "LWLOCK_NAME=%s", name);
    env[k++] = vname, ++*made;
    if (r->sem)
        sprintf(vsecond, "LWLOCK_PERMIT=%s", lw_permit_hex(&r->permit, hex));
    else if (r->multi && vsecond) /* each name's, in NAME's order */
        for (size_t i = 0, at = (size_t)sprintf(vsecond, "LWLOCK_TOKEN="); i < r->opt.nnames; i++)
            at += (size_t)sprintf(vsecond + at, i ? ",%" PRIu64 : "%" PRIu64, r->tokens[i]);
    else if (r->elect)
        sprintf(vsecond, "LWLOCK_TERM=%" PRIu64, token);
    else if (vsecond)
        sprintf(vsecond, "LWLOCK_TOKEN=%" PRIu64, token);
    if (vsecond)
        env[k++] = vsecond, ++*made;
    env[k] = NULL;
    return env;
}

/* made: the strings command_env() made, 1 to 3. */
static void free_env(char **env, size_t made)
{
    size_t n = 0;

    while (env[n])
        n++;
    for (size_t i = n - made; i < n; i++)
        free(env[i]);
    free(env);
}

/* Child: every descriptor but 0-2 and the inherited ones is closed at
 * exec.  close_range(2) is async-signal-safe and covers the gaps in a
 * few calls. */
static void close_ours_on_exec(const struct run *r)
{
    unsigned lo = 3;

    if (r->ninherited < 0)
        return;
    for (int i = 0; i < r->ninherited; i++) {
        unsigned fd = (unsigned)r->inherited[i];

        if (fd > lo)
            close_range(lo, fd - 1, CLOSE_RANGE_CLOEXEC);
        lo = fd + 1;
    }
    close_range(lo, ~0u, CLOSE_RANGE_CLOEXEC);
}

/* Child of a threaded process: async-signal-safe calls only.  The
 * disposition of the signal that stops COMMAND on a loss is reset (an
 * inherited "ignore" would defeat it); the others stay as lwlock got
 * them, as any exec leaves them (nohup keeps working).  The same signal
 * comes should lwlock die (parent is its pid), however it dies, SIGKILL
 * too: then nothing renews the lock, which ends with its lease, and
 * COMMAND must not outlive it.  Unlike flock(1)'s lock, held by the
 * descriptor COMMAND inherits, ours lives in lwlock.  An lwlock gone
 * before the request was made is caught by the pid check after it.  An
 * exec failure goes back to the parent through errfd, which exec
 * closes. */
static void exec_command(const struct run *r, pid_t parent, char **env, int errfd)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    int err;

    sigemptyset(&dfl.sa_mask);
    sigaction(r->opt.lost_sig, &dfl, NULL);
    if (prctl(PR_SET_PDEATHSIG, r->opt.lost_sig) != 0 || getppid() != parent)
        _exit(EXIT_OSERR);
    close_ours_on_exec(r);
    sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
    execvpe(r->opt.command[0], r->opt.command, env);
    err = errno;
    (void)!write(errfd, &err, sizeof err);
    _exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* 0 with r->child running (or already failed to exec, and said so), or
 * an exit status. */
static int spawn(struct run *r, uint64_t token)
{
    size_t made = 0;
    char **env = command_env(r, token, &made);
    int p[2], err;
    pid_t pid, parent;

    if (!env || pipe2(p, O_CLOEXEC)) {
        report("cannot start %s: %s", r->opt.command[0], strerror(env ? errno : ENOMEM));
        if (env)
            free_env(env, made);
        return EXIT_OSERR;
    }
    parent = getpid();
    pid = fork();
    if (pid == 0)
        exec_command(r, parent, env, p[1]);
    err = errno;
    close(p[1]);
    free_env(env, made);
    if (pid < 0) {
        close(p[0]);
        report("fork: %s", strerror(err));
        return EXIT_OSERR;
    }
    r->child = pid;
    if (read(p[0], &err, sizeof err) == (ssize_t)sizeof err)
        report("%s: %s", r->opt.command[0], strerror(err));
    close(p[0]);
    return 0;
}

/* What lwlock holds, for messages: "lock NAME", "permit of NAME",
 * "leadership of NAME". */
static const char *held(const struct run *r)
{
    return r->sem ? "permit of" : r->elect ? "leadership of"
                                           : "lock";
}

/* The lock is gone: COMMAND runs unprotected from now on. */
static void lose(struct run *r, const char *why)
{
    char buf[24];

    if (r->lost)
        return;
    r->lost = 1;
    report("%s %s lost (%s): sending %s to %s", held(r), r->opt.key, why,
           lwlock_signal_name(r->opt.lost_sig, buf, sizeof buf), r->opt.command[0]);
    kill(r->child, r->opt.lost_sig);
}

/* The lock turned at risk (at_risk 1) or safe again (0), with left_ms of
 * its lease sure to be left: warn COMMAND once each time it turns at
 * risk, while it is not lost. */
static void risk(struct run *r, int at_risk, int64_t left_ms)
{
    char buf[24];

    if (!at_risk || r->lost) {
        r->at_risk = 0;
        return;
    }
    if (r->at_risk)
        return;
    r->at_risk = 1;
    if (r->opt.verbose)
        report("%s %s at risk (%lld ms of its lease sure to be left): sending %s to %s",
               held(r), r->opt.key, (long long)left_ms,
               lwlock_signal_name(r->opt.warn_sig, buf, sizeof buf), r->opt.command[0]);
    kill(r->child, r->opt.warn_sig);
}

/* A record from the engine thread while COMMAND runs. */
static void on_event(struct run *r, const struct event *ev)
{
    if (ev->kind == EV_LOST)
        lose(r, lw_lost_reason_name(ev->err));
    else if (ev->kind == EV_RISK)
        risk(r, ev->err, ev->value);
}

/* A signal for lwlock: passed on, or COMMAND's exit noted in *status. */
static void on_signal(struct run *r, int sig, int *status)
{
    int st;

    if (sig != SIGCHLD) {
        kill(r->child, sig);
        return;
    }
    /* SIGCHLDs merge; COMMAND is lwlock's only child. */
    if (waitpid(r->child, &st, WNOHANG) == r->child && (WIFEXITED(st) || WIFSIGNALED(st))) {
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        r->ended_ns = lw_clock_now();
    }
}

/* Until COMMAND exits: its exit status, or -1 on a poll failure. */
static int supervise(struct run *r)
{
    struct pollfd p[3] = {{r->sigfd, POLLIN, 0}, {r->ev_rd, POLLIN, 0}, {r->timerfd, POLLIN, 0}};
    nfds_t n = r->timerfd >= 0 ? 3 : 2;
    int status = -1, sig;
    struct event ev;
    uint64_t expirations;

    while (status < 0) {
        if (wait_readable(p, n))
            return -1;
        /* A loss seen in the same wake-up as the exit counts: which came
         * first cannot be told, and 79 is the safe answer. */
        if (p[1].revents && read_event(r->ev_rd, &ev) == 0)
            on_event(r, &ev);
        if (n == 3 && p[2].revents && read(r->timerfd, &expirations, sizeof expirations) > 0)
            lose(r, "the lease ended");
        if (p[0].revents && (sig = read_signal(r->sigfd)) != 0)
            on_signal(r, sig, &status);
    }
    return status;
}

/* Was the lock reported lost after COMMAND's exit was seen?  (A loss
 * reported by then is already in the pipe: on_lost runs before the
 * unlock's own completion.) */
static int lost_after_end(const struct run *r)
{
    struct pollfd p = {r->ev_rd, POLLIN, 0};
    struct event ev;

    while (poll(&p, 1, 0) == 1 && read_event(r->ev_rd, &ev) == 0)
        if (ev.kind == EV_LOST && (uint64_t)ev.value > r->ended_ns)
            return 1;
    return 0;
}

/*
 * The unlock: at once, or with --min-hold, when COMMAND ended before it,
 * left to expire min_hold_ms after the acquire (counted from its success
 * here, a round trip after Redis took it: never shorter than asked).
 */
static int unlock(struct run *r)
{
    uint64_t held_ms = (lw_clock_now() - r->acquired_ns) / 1000000u;

    if (r->opt.min_hold_ms <= held_ms) /* always, with a permit */
        return let_go(r);
    if (r->opt.verbose)
        report("%s stays held %llu ms more (--min-hold)", r->opt.key,
               (unsigned long long)(r->opt.min_hold_ms - held_ms));
    return lw_unlock_after(r->lock, r->owner, r->opt.min_hold_ms - held_ms);
}

/* COMMAND ended with status: release the lock, unless lost. */
static int release(struct run *r, int status)
{
    int rc;

    if (r->lost)
        return EXIT_LOST;
    rc = unlock(r);
    if (rc == LW_ENOPERMIT) /* released or reclaimed: a permit's "not ours" */
        rc = LW_ENOTOWNER;
    if (rc == LW_ENOTOWNER && lost_after_end(r)) {
        /* The unlock waited on Redis past the lease: COMMAND had ended
         * under the lock, nothing ran unprotected. */
        report("%s expired while being released, after %s ended", r->opt.key,
               r->opt.command[0]);
        return status;
    }
    if (rc == LW_ENOTOWNER) { /* gone before COMMAND ended, unnoticed till now */
        report("%s was lost before %s ended", r->opt.key, r->opt.command[0]);
        return EXIT_LOST;
    }
    if (rc)
        report("cannot release %s: %s (it expires after its lease)", r->opt.key, lw_strerror(rc));
    return status;
}

static int run_command(struct run *r, uint64_t token)
{
    int rc, status;

    if ((r->opt.lease_ms && (rc = arm_lease_timer(r))) || (rc = spawn(r, token))) {
        let_go(r);
        return rc;
    }
    if ((status = supervise(r)) < 0) {
        /* Nothing left to wait with: COMMAND must not outlive the lock. */
        kill(r->child, SIGKILL);
        waitpid(r->child, NULL, 0);
        let_go(r);
        return EXIT_OSERR;
    }
    return release(r, status);
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* The client goes first: its callbacks write to ev_wr. */
static void teardown(struct run *r)
{
    lw_multi_free(r->multi);
    lw_election_free(r->elect);
    lw_lock_free(r->lock);
    lw_semaphore_free(r->sem);
    lw_client_free(r->client);
    close_fd(r->sigfd);
    close_fd(r->ev_rd);
    close_fd(r->ev_wr);
    close_fd(r->timerfd);
}

/* --status: what NAME holds, taking nothing.  0 free, EXIT_HELD, 65 (no
 * lock nor semaphore), or exit_status()'s with a message. */
static int show_status(struct run *r)
{
    struct lw_name_status st;
    char at[600], why[600];
    int rc = lw_name_status(r->lock, &st);

    if (rc == 0)
        return lwlock_print_status(r->opt.key, &st, r->opt.json, stdout);
    report("cannot read %s at %s: %s%s", r->opt.key, where(r, at, sizeof at), lw_strerror(rc),
           reason(r, rc, why, sizeof why));
    return exit_status(rc);
}

/* --observe: what the observer is told, a line each, flushed (a pipe
 * reader sees each change as it comes).  On the engine thread. */
static void observed(int state, const struct lw_leader *l, void *arg)
{
    struct run *r = arg;

    lwlock_print_leader(r->opt.key, state, l, r->opt.json, stdout);
    fflush(stdout);
}

/* --observe: who leads NAME, and every change, until SIGTERM, SIGINT or
 * SIGHUP: 0; or exit_status()'s, with a message. */
static int observe(struct run *r)
{
    struct pollfd p = {r->sigfd, POLLIN, 0};
    struct lw_election *e = NULL;
    char at[600], why[600];
    int rc = lw_election_new(r->client, r->opt.key, strlen(r->opt.key), &e), sig = 0;

    if (rc == 0)
        rc = lw_election_observe(e, observed, r);
    if (rc) {
        report("cannot observe %s at %s: %s%s", r->opt.key, where(r, at, sizeof at),
               lw_strerror(rc), reason(r, rc, why, sizeof why));
        lw_election_free(e);
        return exit_status(rc);
    }
    while (sig != SIGTERM && sig != SIGINT && sig != SIGHUP) {
        if (wait_readable(&p, 1)) {
            rc = EXIT_OSERR;
            break;
        }
        sig = read_signal(r->sigfd);
    }
    lw_election_unobserve(e);
    lw_election_free(e);
    return rc;
}

/* --set-permits N: available + acquired = N.  0; 65 when NAME holds
 * another type (a lock: as --permits says); or exit_status()'s, with a
 * message. */
static int set_permits(struct run *r)
{
    char at[600], why[600];
    int rc = lw_semaphore_set(r->sem, r->opt.set_permits);

    if (rc == 0)
        return 0;
    if (rc == LW_EWRONGTYPE)
        return wrong_type(r);
    report("cannot set the permits of %s at %s: %s%s", r->opt.key, where(r, at, sizeof at),
           lw_strerror(rc), reason(r, rc, why, sizeof why));
    return exit_status(rc);
}

int main(int argc, char **argv)
{
    struct run r = {.sigfd = -1, .ev_rd = -1, .ev_wr = -1, .timerfd = -1};
    uint64_t token = 0;
    int rc;

    rc = lwlock_parse_args(argc, argv, getenv("LWLOCK_REDIS"), getenv("LWLOCK_PREFIX"), &r.opt,
                           stdout, stderr);
    if (rc < 0)
        rc = lwlock_check_env_files(&r.opt, getenv("LWLOCK_SENTINEL_TLS"), stderr);
    if (rc >= 0)
        return rc;
    if ((rc = setup(&r)) == 0 && (rc = start_client(&r)) == 0 && r.opt.status)
        rc = show_status(&r);
    else if (rc == 0 && r.opt.observe)
        rc = observe(&r);
    else if (rc == 0 && r.opt.set_permits >= 0)
        rc = set_permits(&r);
    else if (rc == 0 && (rc = acquire(&r, &token)) == 0)
        rc = run_command(&r, token);
    else if (rc == EXIT_LOCKED) /* not acquired: -E's status, which may be 0 */
        rc = r.opt.conflict_exit;
    teardown(&r);
    return rc;
}
