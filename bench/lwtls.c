/*
 * bench/lwtls.c - TLS: handshakes and reconnect storms.  How long a
 * connection takes to set up over plain TCP, with a full TLS handshake and
 * with a resumed one; and, when every connection of N clients is killed
 * at once, how long until their renewals flow again.
 *
 *   lwtls [--runs LIST] [--samples N] [--clients N] [--locks N]
 *         [--lease-ms MS] [--reconnect-min-ms MS] [--server-auth] [-v]
 *         [--json FILE]
 *
 * Each run has a private redis-server 7 of its own on a free loopback
 * port, stopped (by its pid) afterwards:
 *   tcp           plain TCP: the reference
 *   tls           TLS only on TCP (--port 0 --tls-port P), session caching
 *                 on (Redis's default): reconnects resume
 *   tls-nocache   the same with --tls-session-caching no.  With mutual TLS
 *                 such a server answers a session offered with an
 *                 "internal error" alert (OpenSSL: no session id context
 *                 is set without the cache, and a server that verifies
 *                 its clients then refuses to resume): the library forgets
 *                 the session and tries again after its back-off, with a
 *                 full handshake, and so at every reconnect.  With server
 *                 authentication only, TLS 1.3's tickets need no cache:
 *                 reconnects resume as with tls
 *   tls-noresume  as tls, but the clients cannot resume: they are given an
 *                 SSL_CTX of lwtls's own (lw_tls_config.ssl_ctx), and the
 *                 library resumes sessions only on contexts it made.
 *                 Every reconnect is a full handshake, none fails
 * The TLS servers present a certificate of a throwaway CA made with
 * openssl at the start (the fixtures' tls_certs, as lwbench --tls does),
 * which the clients trust.  By default they ask the clients for a
 * certificate too (mutual TLS, tls-auth-clients yes: Redis's default);
 * --server-auth makes it server authentication only (tls-auth-clients
 * no, no client certificate).  The fixture serves the unix socket in
 * plain text: lwtls's own connection (CLIENT KILL, INFO) goes there.
 *
 * 1. Set-up.  The library's connection itself (adapters/conn.c, through
 * its internal API: the public one has no way to time a connection or to
 * make one again on demand), with the set-up the library's command
 * connection does: one SCRIPT LOAD per lock script, then the PING whose
 * answer makes it usable (no AUTH or SELECT here).  Timed from
 * conn_connect() (the socket is opened, the non-blocking connect starts)
 * to the PING's answer: TCP, the TLS handshake, the set-up.  Each sample is
 * a pair: a new connection ("new": no session to offer, a full
 * handshake), then the same connection dropped and made again ("again":
 * as a reconnect is, offering the session it had, so resumed when the
 * server and the context allow).  An "again" refused for its session is
 * made once more at once (the library would wait its back-off first),
 * and timed over both attempts.  The pairs alternate, so both see the
 * same machine; p50, p99 and max over the samples, and how many "again"s
 * resumed or were refused.  All connections of a run share one TLS
 * context, as a client's do: its loading from the files (once per client)
 * is not in the figures; 5 pairs before the samples are not counted.
 *
 * 2. The reconnect storm.  N clients (public API) on one libev loop in
 * embedded mode (lw_client_config.loop: no thread), each holding L
 * watchdog locks.  A client has two connections, commands and pub/sub
 * (outside a cluster its subscriber connects at once), so 2N in all;
 * lwtls raises its RLIMIT_NOFILE soft limit (which the servers inherit)
 * as far as that needs.  Steps:
 *   cold start  the clients are created 50 at a time (each wave's first
 *               calls, lw_is_locked, answered before the next: 500 at
 *               once, each loading its TLS files and making two full
 *               handshakes, overrun the 2 s connect timeout on a small
 *               machine); the time until all have answered;
 *   the locks   lock j of every client is acquired at j * P / L, P the
 *               renewal period (lease / 3), so that each client has a
 *               renewal due every P / L (the defaults: every 100 ms, the
 *               clients' tick);
 *   the kill    P / L / 2 after the last locks (halfway to the next
 *               renewals), each client's counters are read, then from
 *               lwtls's own connection CLIENT KILL TYPE normal and CLIENT
 *               KILL TYPE pubsub (an idle subscriber has no channel: it
 *               is "normal");
 *   after it    per client, from the kill: "connected again", both its
 *               connections set up again (the library's INFO log line
 *               "...: connection restored", one per connection); and
 *               "renewing again", a renewal confirmed on the new command
 *               connection (renewals_confirmed grows after reconnects
 *               did).  The clients with a connection restored and no
 *               renewal yet are polled after every loop iteration (the
 *               others have nothing to poll for), so the times hold to
 *               within one iteration.  p50, p99 and max over the clients
 *               (max, "all": until every client).
 * A client reconnected before its next renewal falls due waits for it: up
 * to P / L more, and renewals go out at the ticks of the client's wheel
 * (100 ms).  A renewal that fell due while the connection was down waits
 * in its queue and goes out the moment it is set up again.  The first
 * reconnect waits the back-off, half to all of reconnect_min_ms (the
 * library's default 50 ms; --reconnect-min-ms).
 *
 * The run goes on until the kill + the lease + two ticks: a watchdog lock
 * that was not renewed by then has run out in Redis, so "no lock lost"
 * covers them all: then Redis is asked whether it still has each lock's
 * hold (HEXISTS of its field, on lwtls's own connection), for a loop held
 * up by long iterations may not have reported a loss yet.  Also reported:
 * the reconnect handshakes of the command connections, resumed and full
 * (lw_client_stats: tls_handshakes, tls_resumed; the library does not
 * count the pub/sub connections'), the failed connection attempts (the
 * library's log lines that say an attempt failed), locks that went at
 * risk (half their lease without a confirmed renewal), the loop's longest
 * iteration after the kill (its busy time, less the wait in the poll: how
 * late a timer, a renewal's or a deadline's, could run, and how coarse the
 * times above are), and the CPU time this process and Redis spent from
 * the kill until every client was renewing again.
 *
 * Everything on the client side runs on the one thread: a storm's
 * handshakes progress together, in rounds, the client's and the server's
 * work taking turns, so the clients come back nearly all at once, when the
 * whole herd's work is done.  A herd whose work takes longer than the
 * connect timeout (2 s, connect + handshake + set-up) fails nearly all
 * together (LW_ETIMEDOUT) and starts over after its back-off.
 *
 * Checks (a failed one makes the exit status 1): no lock lost (on_lost,
 * the counters, and Redis at the end), every acquire succeeded, every
 * client connected and renewing again before the run's end, every lock
 * still held at the end.
 *
 * Progress goes to stderr, the tables to stdout.  Exit status: 0 every
 * check held, 1 one did not, 2 a failure (redis-server or openssl missing,
 * a connection that could not be made, no memory), 64 bad usage.  SIGINT
 * or SIGTERM end the run in progress early (what it measured is still
 * printed, marked interrupted) and skip the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <hiredis/hiredis.h>
#if LW_HAVE_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#include <leasewheel/lock.h>

#include "cli_util.h"
#include "client_private.h" /* lw_lock_scripts: the set-up's SCRIPT LOADs */
#include "conn.h"
#include "endpoint.h"
#include "redis_server.h"
#include "tls_certs.h"

#define MAX_CLIENTS 5000u
#define MAX_LOCKS 64u
#define MAX_SAMPLES 100000u
#define WARMUP_PAIRS 5
#define OWNER 1u
#define COLD_LIMIT_S 60 /* the longest the cold start may take */
#define WAVE 50u        /* clients created at once at the start */

static const char usage_text[] =
    "usage: lwtls [options]\n"
    "Connection set-up time (plain TCP, a full TLS handshake, a resumed one), and\n"
    "a reconnect storm: N clients on one loop, each holding watchdog locks, every\n"
    "connection killed at once; how long until each client is connected and\n"
    "renewing again, and how many reconnect handshakes resumed.  Each run on a\n"
    "private redis-server of its own; checks that no lock was lost.\n"
    "\n"
    "  --runs LIST       comma-separated, of: tcp (plain TCP, the reference), tls\n"
    "                    (TLS only, session caching on: Redis's default),\n"
    "                    tls-nocache (the server with --tls-session-caching no),\n"
    "                    tls-noresume (clients that cannot resume: an SSL_CTX of\n"
    "                    lwtls's own); default all four\n"
    "  --samples N       set-up: connection pairs (new, then made again) per run\n"
    "                    (default 300; 0: no set-up measurement)\n"
    "  --clients N       the storm's clients, two connections each (default 500,\n"
    "                    at most 5000; 0: no storm)\n"
    "  --locks N         watchdog locks each client holds (default 10, 1..64): lock j\n"
    "                    of each is taken at j / N of a renewal period, so that a\n"
    "                    renewal falls due every period / N (the default: every\n"
    "                    tick of the clients' wheel, 100 ms)\n"
    "  --lease-ms MS     their lease (default 3000, 300..600000); renewals every\n"
    "                    third of it\n"
    "  --reconnect-min-ms MS\n"
    "                    the clients' reconnect_min_ms, the first reconnect's\n"
    "                    back-off (default: the library's, 50)\n"
    "  --server-auth     TLS with server authentication only (the default is mutual\n"
    "                    TLS: the clients present a certificate)\n"
    "  -v                the library's log lines on stderr (many, in a storm)\n"
    "  --json FILE       the results as JSON too\n"
    "  -h, --help\n"
    "\n"
    "Exit status: 0 every check held, 1 one did not, 2 failure, 64 usage.\n";

enum run_kind { RUN_TCP,
                RUN_TLS,
                RUN_TLS_NOCACHE,
                RUN_TLS_NORESUME,
                RUN_KINDS };

static const char *const run_names[RUN_KINDS] = {"tcp", "tls", "tls-nocache", "tls-noresume"};

struct opts {
    int runs[RUN_KINDS]; /* which, in this order */
    uint32_t samples, clients, locks, lease_ms, reconnect_min_ms;
    int server_auth, verbose;
    const char *json;
    void *ssl_ctx; /* tls-noresume: the clients' SSL_CTX, lwtls's own */
};

/* Quantiles of a set of times, ns. */
struct spread {
    unsigned n;
    uint64_t p50, p99, max;
};

struct storm_result {
    unsigned clients, locks;
    uint64_t cold_ns;                         /* until every client answered a first call */
    long long killed_normal, killed_pubsub;   /* CLIENT KILL's replies; -1: failed */
    struct spread up, renew;                  /* over the clients that got there */
    uint64_t all_renewing_ns;                 /* from the kill; 0: not every client */
    uint64_t longest_iteration_ns;            /* the loop's longest, after the kill */
    uint64_t reconnects, handshakes, resumed; /* command connections, since the kill */
    uint64_t failed_attempts;                 /* connection attempts that failed after the kill */
    uint64_t went_at_risk, lost, acquire_failed;
    long long gone;                 /* locks whose hold Redis no longer has at the end; -1: unknown */
    uint64_t held_end;              /* locks_held at the end, all clients */
    double self_cpu_s, redis_cpu_s; /* from the kill until all renewing; -1: unknown */
    int ok;
};

struct run {
    enum run_kind kind;
    int done_setup, done_storm;
    struct spread fresh, again; /* set-up: new connections, made again */
    unsigned resumed;           /* "again"s that resumed a session */
    unsigned refused;           /* "again"s whose session the server refused */
    struct storm_result storm;
    int interrupted;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Sort v[n] and take its spread. */
static struct spread spread_of(uint64_t *v, unsigned n)
{
    struct spread s = {n, 0, 0, 0};

    qsort(v, n, sizeof *v, cli_cmp_u64);
    s.p50 = cli_quantile(v, n, 0.50);
    s.p99 = cli_quantile(v, n, 0.99);
    s.max = n ? v[n - 1] : 0;
    return s;
}

/* Run the loop until CLOCK_MONOTONIC reaches t (or a signal came). */
static void run_until(struct ev_loop *loop, ev_timer *wake, uint64_t t)
{
    uint64_t now;

    while (!interrupted && (now = cli_now_ns()) < t) {
        ev_now_update(loop);
        ev_timer_stop(loop, wake);
        ev_timer_set(wake, (double)(t - now) / 1e9, 0.0);
        ev_timer_start(loop, wake);
        ev_run(loop, EVRUN_ONCE);
    }
    ev_timer_stop(loop, wake);
}

/* One loop iteration, woken by t at the latest. */
static void run_once(struct ev_loop *loop, ev_timer *wake, uint64_t t)
{
    uint64_t now = cli_now_ns();

    ev_now_update(loop);
    ev_timer_stop(loop, wake);
    ev_timer_set(wake, now < t ? (double)(t - now) / 1e9 : 0.0, 0.0);
    ev_timer_start(loop, wake);
    ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, wake);
}

/* When the loop's poll blocked (the last prepare watcher) and woke (the
 * first check watcher): the iteration's busy time is the rest. */
static struct {
    uint64_t blocked, woke;
} busy_mark;

static void on_blocking(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    busy_mark.blocked = cli_now_ns();
}

static void on_woken(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    if (!busy_mark.woke)
        busy_mark.woke = cli_now_ns();
}

static void on_wake(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

/* --- the TLS settings ------------------------------------------------------ */

static int start_server(const struct opts *o, enum run_kind k, const struct tls_certs *certs,
                        struct redis_server *s)
{
    static const char *const nocache[] = {"--tls-session-caching", "no", NULL};
    struct fixture_tls ft;

    if (k == RUN_TCP)
        return redis_server_start(s, NULL);
    ft = tls_certs_server_tls(certs, TLS_CERTS_SERVER, o->server_auth ? "no" : "yes");
    return redis_server_start_tls_args(s, NULL, &ft, k == RUN_TLS_NOCACHE ? nocache : NULL);
}

/* The clients' TLS: trust the throwaway CA; with mutual TLS present the
 * fixtures' client certificate.  tls-noresume: the same, from an SSL_CTX of
 * lwtls's own (the library resumes sessions only on contexts it made). */
static struct lw_tls_config client_tls(const struct opts *o, enum run_kind k,
                                       const struct tls_certs *certs)
{
    struct lw_tls_config t = {0};

    if (k == RUN_TCP)
        return t;
    t.enable = 1;
    if (k == RUN_TLS_NORESUME) {
        t.ssl_ctx = o->ssl_ctx;
        return t;
    }
    t.ca_file = certs->ca_file;
    if (!o->server_auth) {
        t.cert_file = certs->client_cert;
        t.key_file = certs->client_key;
    }
    return t;
}

#if LW_HAVE_TLS
/* tls-noresume's context: what the library makes from the files (tls.c:
 * its modes too, which its writes rely on), less the session callback.
 * NULL (said) when it cannot be made. */
static void *make_ssl_ctx(const struct opts *o, const struct tls_certs *certs)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (ctx)
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) &&
        SSL_CTX_load_verify_locations(ctx, certs->ca_file, NULL) &&
        (o->server_auth ||
         (SSL_CTX_use_certificate_chain_file(ctx, certs->client_cert) &&
          SSL_CTX_use_PrivateKey_file(ctx, certs->client_key, SSL_FILETYPE_PEM)))) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        return ctx;
    }
    fprintf(stderr, "lwtls: tls-noresume: an SSL_CTX: %s\n",
            ERR_reason_error_string(ERR_get_error()));
    SSL_CTX_free(ctx);
    return NULL;
}

static void free_ssl_ctx(void *ctx)
{
    SSL_CTX_free(ctx);
}
#else
static void *make_ssl_ctx(const struct opts *o, const struct tls_certs *certs)
{
    (void)o;
    (void)certs;
    return NULL;
}

static void free_ssl_ctx(void *ctx)
{
    (void)ctx;
}
#endif

/* --- 1. set-up ----------------------------------------------------------- */

struct probe {
    struct lw_conn conn;
    char *loads[SCRIPT_COUNT]; /* SCRIPT LOAD <script>, formatted */
    size_t lens[SCRIPT_COUNT];
    int up, down, err, bad;
    uint64_t up_ns;
    char bad_reply[200];
};

static void probe_setup(void *arg)
{
    struct probe *p = arg;

    for (unsigned i = 0; i < SCRIPT_COUNT; i++)
        conn_send(&p->conn, p->loads[i], p->lens[i]);
}

static void probe_up(void *arg)
{
    struct probe *p = arg;

    p->up_ns = cli_now_ns();
    p->up = 1;
}

static void probe_down(void *arg, int err)
{
    struct probe *p = arg;

    p->down = 1;
    p->err = err;
}

static void probe_reply(void *arg, redisReply *reply)
{
    struct probe *p = arg;

    if (reply->type == REDIS_REPLY_ERROR && !p->bad) {
        p->bad = 1;
        snprintf(p->bad_reply, sizeof p->bad_reply, "%s", reply->str);
    }
}

/*
 * Connect (or again) and wait until usable: 0 and *ns, or -1 (said).  A
 * handshake that failed offering a session (a server that refuses to
 * resume: Redis with --tls-session-caching no and mutual TLS answers an
 * "internal error" alert) is counted in *refused, and the attempt made
 * again at once, without a session (the connection forgot it), as the
 * library's next attempt is after its back-off: *ns is both attempts,
 * less the back-off.
 */
static int probe_connect(struct ev_loop *loop, struct probe *p, uint64_t *ns, unsigned *refused)
{
    int offered = p->conn.tls.session != NULL;
    uint64_t t0;

    p->up = p->down = 0;
    t0 = cli_now_ns();
    conn_connect(&p->conn);
    while (!p->up && !p->down)
        ev_run(loop, EVRUN_ONCE);
    if (p->down && p->err == LW_ETLS && offered && refused) {
        (*refused)++;
        p->down = 0;
        conn_connect(&p->conn);
        while (!p->up && !p->down)
            ev_run(loop, EVRUN_ONCE);
    }
    if (p->down || p->bad) {
        fprintf(stderr, "lwtls: a connection failed: %s\n",
                p->bad ? p->bad_reply : conn_why(&p->conn));
        return -1;
    }
    *ns = p->up_ns - t0;
    return 0;
}

/* The pairs; 0, or 2 (a failure, said). */
static int measure_setup(struct ev_loop *loop, const struct opts *o, enum run_kind k,
                         const struct tls_certs *certs, int port, struct run *run)
{
    struct lw_endpoint ep, own;
    struct probe p;
    struct conn_config cc = {.loop = loop,
                             .on_setup = probe_setup,
                             .on_up = probe_up,
                             .on_down = probe_down,
                             .on_reply = probe_reply,
                             .arg = &p};
    uint64_t *fresh = calloc(o->samples, sizeof *fresh), *again = calloc(o->samples, sizeof *again);
    unsigned n = 0;
    int status = 0, rc;

    memset(&p, 0, sizeof p);
    memset(&own, 0, sizeof own);
    lw_endpoint_init(&ep);
    ep.host = "127.0.0.1";
    ep.port = port;
    ep.tls = client_tls(o, k, certs);
    cc.ep = &own;
    if (!fresh || !again || (rc = lw_endpoint_copy(&own, &ep)) == LW_ENOMEM) {
        fprintf(stderr, "lwtls: out of memory\n");
        status = 2;
    } else if (rc) {
        fprintf(stderr, "lwtls: the TLS settings: %s\n", lw_strerror(rc));
        status = 2;
    }
    for (unsigned i = 0; i < SCRIPT_COUNT && !status; i++) {
        int len = redisFormatCommand(&p.loads[i], "SCRIPT LOAD %s", lw_lock_scripts[i]);

        if (len < 0) {
            fprintf(stderr, "lwtls: out of memory\n");
            status = 2;
        }
        p.lens[i] = len < 0 ? 0 : (size_t)len;
    }
    for (int i = -WARMUP_PAIRS; i < (int)o->samples && !status && !interrupted; i++) {
        uint64_t f, a, resumed;

        if (conn_init(&p.conn, &cc)) {
            fprintf(stderr, "lwtls: out of memory\n");
            status = 2;
            conn_clear(&p.conn);
            break;
        }
        if (probe_connect(loop, &p, &f, NULL) == 0) {
            unsigned refused = 0;

            resumed = p.conn.tls.resumed;
            conn_drop(&p.conn);
            if (probe_connect(loop, &p, &a, &refused) != 0) {
                status = 2;
            } else if (i >= 0) {
                fresh[n] = f;
                again[n] = a;
                run->resumed += p.conn.tls.resumed > resumed;
                run->refused += refused;
                n++;
            }
        } else {
            status = 2;
        }
        conn_close(&p.conn);
        conn_clear(&p.conn);
    }
    if (!status) {
        run->fresh = spread_of(fresh, n);
        run->again = spread_of(again, n);
        run->done_setup = 1;
    }
    for (unsigned i = 0; i < SCRIPT_COUNT; i++)
        redisFreeCommand(p.loads[i]);
    lw_endpoint_clear(&own);
    free(fresh);
    free(again);
    return status;
}

/* --- 2. the storm ---------------------------------------------------------- */

struct storm;

struct bclient {
    struct storm *st;
    struct lw_client *c;
    struct lw_lock *locks[MAX_LOCKS];
    int answered, cmd_up, polling;
    unsigned restored; /* connections restored since the kill */
    uint64_t up_ns;    /* from the kill: both connections up again; 0 not yet */
    uint64_t renew_ns; /* from the kill: a renewal confirmed; 0 not yet */
    uint64_t base_reconnects, base_confirmed, base_handshakes, base_resumed, base_risk;
};

struct storm {
    const struct opts *o;
    struct bclient *cl;
    unsigned n;
    int after_kill;
    uint64_t start_ns, kill_ns, cold_end_ns;
    unsigned answered, answer_failed, renewing;
    uint64_t acquired, acquire_failed, lost;
    uint64_t failed_attempts; /* connection attempts failed after the kill */
    unsigned *pending;        /* clients to poll: a connection restored, no renewal yet */
    unsigned npending;
};

static void on_log(int level, const char *message, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    if (st->o->verbose)
        fprintf(stderr, "lwtls: %s: %s\n", lw_log_level_name(level), message);
    if (!st->after_kill)
        return;
    /* A failed attempt's line ends "(LW_E...)"; the kill's own say
     * LW_ECONNLOST. */
    if (strstr(message, "(LW_E") && !strstr(message, "(LW_ECONNLOST)"))
        st->failed_attempts++;
    if (!strstr(message, "connection restored"))
        return;
    if (++b->restored == 2)
        b->up_ns = cli_now_ns() - st->kill_ns;
    if (!b->polling && !b->renew_ns) {
        b->polling = 1;
        st->pending[st->npending++] = (unsigned)(b - st->cl);
    }
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct storm *st = arg;

    (void)owner;
    if (st->lost++ < 5)
        fprintf(stderr, "lwtls: lock %.*s lost: %s\n", (int)len, name,
                lw_lost_reason_name(reason));
}

static void on_answer(int err, int64_t value, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    (void)value;
    if (err) {
        char last[300];

        if (!st->answer_failed++) {
            lw_client_last_error(b->c, last, sizeof last);
            fprintf(stderr, "lwtls: a client's first call failed: %s%s%s\n", lw_strerror(err),
                    last[0] ? ": " : "", last);
        }
        return;
    }
    b->answered = 1;
    if (++st->answered == st->n)
        st->cold_end_ns = cli_now_ns();
}

static void on_acquired(int err, int64_t value, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    (void)value;
    if (!err) {
        st->acquired++;
        return;
    }
    if (!st->acquire_failed++)
        fprintf(stderr, "lwtls: an acquire failed: %s\n", lw_strerror(err));
}

static void lock_name(char *buf, size_t n, unsigned index, unsigned client, unsigned lock)
{
    snprintf(buf, n, "lwtls:%d:%u:%u:%u", (int)getpid(), index, client, lock);
}

/*
 * The locks whose hold is gone from Redis (HEXISTS of each lock's field,
 * pipelined on lwtls's own connection), whatever their clients know: a
 * loop held up by a long iteration can leave a lock expired in Redis and
 * not yet reported lost.  -1 when Redis did not answer.
 */
static long long count_gone(redisContext *rc, const struct storm *st, unsigned index)
{
    unsigned locks = st->o->locks;
    long long gone = 0;

    for (unsigned i = 0; i < st->n; i++) {
        const char *id = lw_client_id(st->cl[i].c);
        char name[96];

        for (unsigned j = 0; j < locks; j++) {
            lock_name(name, sizeof name, index, i, j);
            if (redisAppendCommand(rc, "HEXISTS %s %s:%u", name, id, OWNER) != REDIS_OK)
                return -1;
        }
        for (unsigned j = 0; j < locks; j++) {
            redisReply *r;

            if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
                return -1;
            gone += r->type != REDIS_REPLY_INTEGER || r->integer != 1;
            freeReplyObject(r);
        }
    }
    return gone;
}

/* Poll the clients with a connection restored and no renewal yet. */
static void poll_pending(struct storm *st)
{
    struct lw_client_stats s;
    unsigned k = 0;

    for (unsigned i = 0; i < st->npending; i++) {
        struct bclient *b = &st->cl[st->pending[i]];

        lw_client_get_stats(b->c, &s);
        if (!b->cmd_up && s.reconnects > b->base_reconnects) {
            /* The command connection is up again since the last poll: what
             * is confirmed from now on went out on it. */
            b->cmd_up = 1;
            b->base_confirmed = s.renewals_confirmed;
        } else if (b->cmd_up && s.renewals_confirmed > b->base_confirmed) {
            b->renew_ns = cli_now_ns() - st->kill_ns;
            b->polling = 0;
            st->renewing++;
            continue;
        }
        st->pending[k++] = st->pending[i];
    }
    st->npending = k;
}

/* Create the clients, take the locks, kill every connection, watch them
 * come back.  0 (results in run->storm), or 2 (a failure, said). */
static int run_storm(struct ev_loop *loop, const struct opts *o, enum run_kind k,
                     const struct tls_certs *certs, const struct redis_server *srv,
                     redisContext *rc, unsigned index, struct run *run)
{
    struct storm_result *res = &run->storm;
    struct storm st = {.o = o, .n = o->clients};
    struct lw_client_config cfg;
    struct lw_client_stats s;
    ev_timer wake;
    ev_prepare blocking;
    ev_check woken;
    uint64_t period = (uint64_t)o->lease_ms * 1000000u / 3, gap = period / o->locks;
    uint64_t t0, end, *up = NULL, *renew = NULL;
    double self0 = 0, redis0 = -1;
    int status = 0, cpu_taken = 0;
    unsigned nup = 0, nrenew = 0;

    ev_init(&wake, on_wake);
    ev_prepare_init(&blocking, on_blocking);
    ev_set_priority(&blocking, EV_MINPRI);
    ev_check_init(&woken, on_woken);
    ev_set_priority(&woken, EV_MAXPRI);
    memset(res, 0, sizeof *res);
    res->clients = o->clients;
    res->locks = o->locks;
    res->self_cpu_s = res->redis_cpu_s = -1;
    res->killed_normal = res->killed_pubsub = -1;
    st.cl = calloc(st.n, sizeof *st.cl);
    st.pending = calloc(st.n, sizeof *st.pending);
    up = calloc(st.n, sizeof *up);
    renew = calloc(st.n, sizeof *renew);
    if (!st.cl || !st.pending || !up || !renew) {
        fprintf(stderr, "lwtls: out of memory\n");
        status = 2;
        goto out;
    }

    lw_client_config_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.port = srv->port;
    cfg.loop = loop;
    cfg.watchdog_timeout_ms = o->lease_ms;
    cfg.tls = client_tls(o, k, certs);
    cfg.reconnect_min_ms = o->reconnect_min_ms;
    if (cfg.reconnect_max_ms < cfg.reconnect_min_ms)
        cfg.reconnect_max_ms = cfg.reconnect_min_ms;
    cfg.on_lost = on_lost;
    cfg.lost_arg = &st;
    cfg.log = on_log;
    cfg.log_level = LW_LOG_INFO;

    /* Cold start: WAVE clients at a time, a first call each, answered
     * before the next wave. */
    fprintf(stderr, "lwtls:   %u clients connecting, %u at a time...\n", st.n, WAVE);
    st.start_ns = cli_now_ns();
    end = st.start_ns + (uint64_t)COLD_LIMIT_S * 1000000000u;
    for (unsigned i = 0; i < st.n && !status && !interrupted && !st.answer_failed; i++) {
        struct bclient *b = &st.cl[i];
        int err;

        b->st = &st;
        cfg.log_arg = b;
        if ((err = lw_client_new(&cfg, &b->c)) != 0) {
            fprintf(stderr, "lwtls: lw_client_new: %s\n", lw_strerror(err));
            status = 2;
            break;
        }
        for (unsigned j = 0; j < o->locks && !status; j++) {
            char name[96];

            lock_name(name, sizeof name, index, i, j);
            if ((err = lw_lock_new(b->c, name, strlen(name), &b->locks[j])) != 0) {
                fprintf(stderr, "lwtls: lw_lock_new: %s\n", lw_strerror(err));
                status = 2;
            }
        }
        if (!status && (err = lw_is_locked_async(b->locks[0], on_answer, b)) != 0) {
            fprintf(stderr, "lwtls: lw_is_locked_async: %s\n", lw_strerror(err));
            status = 2;
        }
        if ((i + 1) % WAVE && i + 1 < st.n)
            continue;
        while (!status && !interrupted && st.answered + st.answer_failed <= i && cli_now_ns() < end)
            run_once(loop, &wake, end);
    }
    if (status || interrupted)
        goto out;
    if (st.answered < st.n) {
        fprintf(stderr, "lwtls: %u of %u clients never answered a first call\n",
                st.n - st.answered, st.n);
        status = 2;
        goto out;
    }
    res->cold_ns = st.cold_end_ns - st.start_ns;

    /* The locks, in L groups spread over a renewal period. */
    fprintf(stderr, "lwtls:   %u locks...\n", st.n * o->locks);
    t0 = cli_now_ns();
    for (unsigned j = 0; j < o->locks && !interrupted && !status; j++) {
        run_until(loop, &wake, t0 + j * gap);
        for (unsigned i = 0; i < st.n && !status; i++) {
            int err = lw_acquire_async(st.cl[i].locks[j], OWNER, 0, 0, on_acquired, &st.cl[i]);

            if (err) {
                fprintf(stderr, "lwtls: lw_acquire_async: %s\n", lw_strerror(err));
                status = 2;
            }
        }
    }
    while (!status && !interrupted && st.acquired + st.acquire_failed < (uint64_t)st.n * o->locks)
        run_once(loop, &wake, cli_now_ns() + 100000000u);
    /* Halfway to the next renewals (at once if the acquires took longer). */
    run_until(loop, &wake, t0 + period - gap / 2);
    if (status || interrupted)
        goto out;

    /* The kill. */
    for (unsigned i = 0; i < st.n; i++) {
        struct bclient *b = &st.cl[i];

        lw_client_get_stats(b->c, &s);
        b->base_reconnects = s.reconnects;
        b->base_handshakes = s.tls_handshakes;
        b->base_resumed = s.tls_resumed;
        b->base_risk = s.went_at_risk;
    }
    redis0 = cli_redis_cpu_s(rc);
    self0 = cli_process_cpu_s();
    fprintf(stderr, "lwtls:   killing every connection...\n");
    st.after_kill = 1;
    st.kill_ns = cli_now_ns();
    for (int t = 0; t < 2; t++) {
        redisReply *r = redisCommand(rc, t ? "CLIENT KILL TYPE pubsub" : "CLIENT KILL TYPE normal");

        if (r && r->type == REDIS_REPLY_INTEGER)
            *(t ? &res->killed_pubsub : &res->killed_normal) = r->integer;
        else
            fprintf(stderr, "lwtls: CLIENT KILL: %s\n",
                    r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
    }
    end = st.kill_ns + (uint64_t)o->lease_ms * 1000000u + 2u * LW_DEFAULT_TICK_MS * 1000000u;
    ev_prepare_start(loop, &blocking);
    ev_check_start(loop, &woken);
    while (!interrupted && cli_now_ns() < end) {
        /* Whatever a client does (a connection restored, a renewal
         * confirmed) happens in a loop iteration: poll after each. */
        uint64_t busy, t = cli_now_ns();

        busy_mark.blocked = busy_mark.woke = 0;
        run_once(loop, &wake, end);
        /* Busy: before the poll blocked, and after it woke. */
        busy = cli_now_ns() - t;
        if (busy_mark.woke && busy_mark.blocked >= t && busy_mark.woke >= busy_mark.blocked)
            busy -= busy_mark.woke - busy_mark.blocked;
        if (busy > res->longest_iteration_ns)
            res->longest_iteration_ns = busy;
        poll_pending(&st);
        if (!cpu_taken && st.renewing == st.n) {
            res->all_renewing_ns = cli_now_ns() - st.kill_ns;
            res->self_cpu_s = cli_process_cpu_s() - self0;
            if (redis0 >= 0 && (res->redis_cpu_s = cli_redis_cpu_s(rc)) >= 0)
                res->redis_cpu_s -= redis0;
            cpu_taken = 1;
            fprintf(stderr, "lwtls:   every client renewing again after %.0f ms; watching the "
                            "locks to the end of a lease...\n",
                    (double)res->all_renewing_ns / 1e6);
        }
    }

    ev_prepare_stop(loop, &blocking);
    ev_check_stop(loop, &woken);

    /* What came of it. */
    for (unsigned i = 0; i < st.n; i++) {
        struct bclient *b = &st.cl[i];

        lw_client_get_stats(b->c, &s);
        res->reconnects += s.reconnects - b->base_reconnects;
        res->handshakes += s.tls_handshakes - b->base_handshakes;
        res->resumed += s.tls_resumed - b->base_resumed;
        res->went_at_risk += s.went_at_risk - b->base_risk;
        res->held_end += s.locks_held;
        res->lost += s.lost_not_owner + s.lost_errors + s.lost_expired + s.lost_failover +
                     s.lost_held_too_long;
        if (b->up_ns)
            up[nup++] = b->up_ns;
        if (b->renew_ns)
            renew[nrenew++] = b->renew_ns;
    }
    if (st.lost > res->lost)
        res->lost = st.lost;
    if ((res->gone = count_gone(rc, &st, index)) < 0)
        fprintf(stderr, "lwtls: Redis did not say which locks it still holds\n");
    else if ((uint64_t)res->gone > res->lost)
        res->lost = (uint64_t)res->gone;
    res->acquire_failed = st.acquire_failed;
    res->failed_attempts = st.failed_attempts;
    res->up = spread_of(up, nup);
    res->renew = spread_of(renew, nrenew);
    res->ok = res->lost == 0 && res->gone == 0 && res->acquire_failed == 0 && nup == st.n && nrenew == st.n &&
              res->held_end == (uint64_t)st.n * o->locks && !interrupted;
    run->done_storm = 1;

out:
    run->interrupted = interrupted;
    for (unsigned i = 0; st.cl && i < st.n; i++) {
        for (unsigned j = 0; j < o->locks; j++)
            lw_lock_free(st.cl[i].locks[j]);
        if (st.cl[i].c)
            lw_client_free(st.cl[i].c);
    }
    free(st.cl);
    free(st.pending);
    free(up);
    free(renew);
    return status;
}

/* --- the report ------------------------------------------------------------ */

static const char *fmt_cpu(char *buf, size_t n, double s)
{
    if (s < 0)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%.0f ms", s * 1e3);
    return buf;
}

/* One of a spread's quantiles, "—" when it is empty. */
static const char *fmt_q(char *buf, size_t n, const struct spread *sp, uint64_t ns)
{
    if (!sp->n) {
        snprintf(buf, n, "—");
        return buf;
    }
    return cli_fmt_ms(buf, n, ns);
}

/* A spread's "all" column: its max when every client got there. */
static const char *fmt_all(char *buf, size_t n, const struct spread *sp, unsigned of)
{
    if (sp->n == of)
        return cli_fmt_ms(buf, n, sp->max);
    snprintf(buf, n, "%u of %u", sp->n, of);
    return buf;
}

static const char *fmt_checks(char *buf, size_t n, const struct storm_result *r,
                              int interrupted_run)
{
    size_t k = 0;

    buf[0] = 0;
    if (r->lost)
        k += (size_t)snprintf(buf + k, n - k, "%" PRIu64 " locks lost; ", r->lost);
    if (r->gone > 0 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%lld gone from Redis; ", r->gone);
    if (r->gone < 0 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "Redis not asked; ");
    if (r->acquire_failed && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%" PRIu64 " acquires failed; ",
                              r->acquire_failed);
    if ((r->up.n < r->clients || r->renew.n < r->clients) && k < n)
        k += (size_t)snprintf(buf + k, n - k, "not every client back; ");
    if (r->held_end != (uint64_t)r->clients * r->locks && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%" PRIu64 " of %" PRIu64 " locks held at the end; ",
                              r->held_end, (uint64_t)r->clients * r->locks);
    if (interrupted_run && k < n)
        k += (size_t)snprintf(buf + k, n - k, "interrupted; ");
    if (k == 0)
        snprintf(buf, n, "ok");
    else if (k >= 2 && k < n)
        buf[k - 2] = 0;
    return buf;
}

static const char *setup_label(enum run_kind k, int again)
{
    if (k == RUN_TCP)
        return again ? "again" : "new";
    return again ? "again (a reconnect)" : "new (full handshake)";
}

static void print_setup(const struct opts *o, const struct run *runs, unsigned n)
{
    printf("Connection set-up: from the connect to the set-up's PING answered (TCP, TLS, "
           "%u SCRIPT LOADs, PING), %u samples each\n\n",
           (unsigned)SCRIPT_COUNT, o->samples);
    printf("| run | connection | samples | p50 | p99 | max | resumed | refused |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];

        if (!r->done_setup)
            continue;
        for (int again = 0; again < 2; again++) {
            const struct spread *s = again ? &r->again : &r->fresh;
            char a[32], b[32], c[32], res[32], ref[32];

            if (r->kind == RUN_TCP || !again) {
                snprintf(res, sizeof res, "—");
                snprintf(ref, sizeof ref, "—");
            } else {
                snprintf(res, sizeof res, "%u of %u", r->resumed, s->n);
                snprintf(ref, sizeof ref, "%u", r->refused);
            }
            printf("| %s | %s | %u | %s | %s | %s | %s | %s |\n", run_names[r->kind],
                   setup_label(r->kind, again), s->n, cli_fmt_ms(a, sizeof a, s->p50),
                   cli_fmt_ms(b, sizeof b, s->p99), cli_fmt_ms(c, sizeof c, s->max), res, ref);
        }
    }
    printf("\n");
}

static void print_storm(const struct opts *o, const struct run *runs, unsigned n)
{
    printf("Reconnect storm: %u clients (2 connections each), %u watchdog locks each, lease "
           "%u ms; every connection killed at once; times from the kill, per client\n\n",
           o->clients, o->locks, o->lease_ms);
    printf("| run | cold start | killed | connected again p50 | p99 | all | renewing again p50 "
           "| p99 | all | reconnect handshakes: resumed / full | failed attempts | at risk | "
           "longest iteration | CPU: lwtls | Redis | checks |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        const struct storm_result *s = &r->storm;
        char cold[32], a[32], b[32], c[32], d[32], e[32], f[32], hs[64], it[32], cs[32],
            cr[32], chk[256];

        if (!r->done_storm)
            continue;
        if (r->kind == RUN_TCP)
            snprintf(hs, sizeof hs, "—");
        else
            snprintf(hs, sizeof hs, "%" PRIu64 " / %" PRIu64, s->resumed,
                     s->handshakes - s->resumed);
        printf("| %s | %s | %lld + %lld | %s | %s | %s | %s | %s | %s | %s | %" PRIu64
               " | %" PRIu64 " | %s | %s | %s | %s |\n",
               run_names[r->kind], cli_fmt_ms(cold, sizeof cold, s->cold_ns), s->killed_normal,
               s->killed_pubsub, fmt_q(a, sizeof a, &s->up, s->up.p50),
               fmt_q(b, sizeof b, &s->up, s->up.p99), fmt_all(c, sizeof c, &s->up, s->clients),
               fmt_q(d, sizeof d, &s->renew, s->renew.p50), fmt_q(e, sizeof e, &s->renew, s->renew.p99),
               fmt_all(f, sizeof f, &s->renew, s->clients),
               hs, s->failed_attempts, s->went_at_risk,
               cli_fmt_ms(it, sizeof it, s->longest_iteration_ns), fmt_cpu(cs, sizeof cs, s->self_cpu_s),
               fmt_cpu(cr, sizeof cr, s->redis_cpu_s), fmt_checks(chk, sizeof chk, s, r->interrupted));
    }
}

static void json_spread(FILE *f, const char *name, const struct spread *s)
{
    fprintf(f, "\"%s\": {\"n\": %u, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}", name,
            s->n, (double)s->p50 / 1e6, (double)s->p99 / 1e6, (double)s->max / 1e6);
}

static int write_json(const struct opts *o, const struct run *runs, unsigned n)
{
    FILE *f = fopen(o->json, "w");

    if (!f) {
        fprintf(stderr, "lwtls: %s: %s\n", o->json, strerror(errno));
        return -1;
    }
    fprintf(f,
            "{\n  \"tool\": \"lwtls\",\n  \"tls\": \"%s\",\n  \"samples\": %u,\n"
            "  \"clients\": %u,\n  \"locks\": %u,\n  \"lease_ms\": %u,\n"
            "  \"reconnect_min_ms\": %u,\n  \"runs\": [\n",
            o->server_auth ? "server-auth" : "mutual", o->samples, o->clients, o->locks,
            o->lease_ms, o->reconnect_min_ms);
    for (unsigned i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        const struct storm_result *s = &r->storm;
        char chk[256];

        fprintf(f, "    {\"run\": \"%s\"", run_names[r->kind]);
        if (r->done_setup) {
            fprintf(f, ", \"setup\": {");
            json_spread(f, "new", &r->fresh);
            fprintf(f, ", ");
            json_spread(f, "again", &r->again);
            fprintf(f, ", \"again_resumed\": %u, \"again_refused\": %u}", r->resumed,
                    r->refused);
        }
        if (r->done_storm) {
            fprintf(f,
                    ", \"storm\": {\"clients\": %u, \"locks_each\": %u, \"cold_start_ms\": %.3f, "
                    "\"killed_normal\": %lld, \"killed_pubsub\": %lld, ",
                    s->clients, s->locks, (double)s->cold_ns / 1e6, s->killed_normal,
                    s->killed_pubsub);
            json_spread(f, "connected_again", &s->up);
            fprintf(f, ", ");
            json_spread(f, "renewing_again", &s->renew);
            fprintf(f,
                    ", \"all_renewing_ms\": %.3f, \"reconnects\": %" PRIu64
                    ", \"tls_handshakes\": %" PRIu64 ", \"tls_resumed\": %" PRIu64
                    ", \"failed_attempts\": %" PRIu64 ", \"went_at_risk\": %" PRIu64
                    ", \"lost\": %" PRIu64 ", \"gone_from_redis\": %lld"
                    ", \"acquire_failed\": %" PRIu64 ", \"held_end\": %" PRIu64
                    ", \"longest_iteration_ms\": %.3f, \"self_cpu_s\": %.3f, \"redis_cpu_s\": %.3f, \"ok\": %s, \"checks\": \"%s\"}",
                    (double)s->all_renewing_ns / 1e6, s->reconnects, s->handshakes, s->resumed,
                    s->failed_attempts, s->went_at_risk, s->lost, s->gone, s->acquire_failed,
                    s->held_end, (double)s->longest_iteration_ns / 1e6, s->self_cpu_s,
                    s->redis_cpu_s, s->ok ? "true" : "false",
                    fmt_checks(chk, sizeof chk, s, r->interrupted));
        }
        fprintf(f, ", \"interrupted\": %s}%s\n", r->interrupted ? "true" : "false",
                i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    if (fclose(f)) {
        fprintf(stderr, "lwtls: %s: %s\n", o->json, strerror(errno));
        return -1;
    }
    return 0;
}

/* --- options --------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "lwtls: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(lwtls --help for the options)\n");
    return 64;
}

/* "tcp,tls": each a run's name, once; 0, or -1. */
static int parse_runs(const char *s, struct opts *o)
{
    char buf[128], *save = NULL, *tok;
    int n = 0;

    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    memset(o->runs, 0, sizeof o->runs);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k;

        for (k = 0; k < RUN_KINDS && strcmp(tok, run_names[k]); k++)
            ;
        if (k == RUN_KINDS || o->runs[k])
            return -1;
        o->runs[k] = 1;
        n++;
    }
    return n ? 0 : -1;
}

enum { O_RUNS = 256,
       O_SAMPLES,
       O_CLIENTS,
       O_LOCKS,
       O_LEASE,
       O_RECONNECT,
       O_SERVER_AUTH,
       O_JSON };

static const struct option long_opts[] = {
    {"runs", required_argument, NULL, O_RUNS},
    {"samples", required_argument, NULL, O_SAMPLES},
    {"clients", required_argument, NULL, O_CLIENTS},
    {"locks", required_argument, NULL, O_LOCKS},
    {"lease-ms", required_argument, NULL, O_LEASE},
    {"reconnect-min-ms", required_argument, NULL, O_RECONNECT},
    {"server-auth", no_argument, NULL, O_SERVER_AUTH},
    {"json", required_argument, NULL, O_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* 0 to run, 1 help shown, 64 bad usage (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    struct lw_client_config defaults;
    int opt;

    memset(o, 0, sizeof *o);
    parse_runs("tcp,tls,tls-nocache,tls-noresume", o);
    o->samples = 300;
    o->clients = 500;
    o->locks = 10;
    o->lease_ms = 3000;
    lw_client_config_init(&defaults);
    o->reconnect_min_ms = defaults.reconnect_min_ms;
    while ((opt = getopt_long(argc, argv, "vh", long_opts, NULL)) != -1) {
        switch (opt) {
        case O_RUNS:
            if (parse_runs(optarg, o))
                return usage_error("--runs: '%s' is not a list of tcp, tls, tls-nocache, "
                                   "tls-noresume (each once)",
                                   optarg);
            break;
        case O_SAMPLES:
            if (cli_parse_u32(optarg, 0, MAX_SAMPLES, &o->samples))
                return usage_error("--samples: '%s' is not 0..100000", optarg);
            break;
        case O_CLIENTS:
            if (cli_parse_u32(optarg, 0, MAX_CLIENTS, &o->clients))
                return usage_error("--clients: '%s' is not 0..5000", optarg);
            break;
        case O_LOCKS:
            if (cli_parse_u32(optarg, 1, MAX_LOCKS, &o->locks))
                return usage_error("--locks: '%s' is not 1..64", optarg);
            break;
        case O_LEASE:
            if (cli_parse_u32(optarg, 3 * LW_DEFAULT_TICK_MS, 600000, &o->lease_ms))
                return usage_error("--lease-ms: '%s' is not 300..600000", optarg);
            break;
        case O_RECONNECT:
            if (cli_parse_u32(optarg, 1, 60000, &o->reconnect_min_ms))
                return usage_error("--reconnect-min-ms: '%s' is not 1..60000", optarg);
            break;
        case O_SERVER_AUTH: o->server_auth = 1; break;
        case O_JSON: o->json = optarg; break;
        case 'v': o->verbose = 1; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default: return usage_error("%s", "bad option");
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    return 0;
}

/* Room for `need` descriptors: the soft limit raised (the servers started
 * after inherit it).  0, or -1 (said). */
static int raise_nofile(rlim_t need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0; /* it will tell soon enough */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
            fprintf(stderr,
                    "lwtls: %llu clients need about %llu file descriptors, and the hard limit "
                    "is %llu (ulimit -Hn): fewer --clients, or a higher limit\n",
                    (unsigned long long)(need / 2), (unsigned long long)need,
                    (unsigned long long)rl.rlim_max);
            return -1;
        }
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "lwtls: setrlimit(RLIMIT_NOFILE, %llu): %s\n",
                    (unsigned long long)need, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* One run: its server, the set-up samples, the storm.  0, or 2. */
static int do_run(struct ev_loop *loop, const struct opts *o, enum run_kind k,
                  const struct tls_certs *certs, unsigned index, struct run *run)
{
    struct redis_server srv = {0};
    redisContext *rc;
    int status = 0;

    run->kind = k;
    fprintf(stderr, "lwtls: %s: starting a private redis-server%s...\n", run_names[k],
            k == RUN_TCP ? "" : (k == RUN_TLS_NOCACHE ? ", TLS only, no session cache" : ", TLS only"));
    if (start_server(o, k, certs, &srv)) {
        fprintf(stderr, "lwtls: could not start a private redis-server (is it installed, with "
                        "TLS?)\n");
        return 2;
    }
    rc = redisConnectUnixWithTimeout(srv.unix_path, (struct timeval){5, 0});
    if (!rc || rc->err || redisSetTimeout(rc, (struct timeval){30, 0}) != REDIS_OK) {
        fprintf(stderr, "lwtls: the private redis-server's unix socket does not answer\n");
        status = 2;
    }
    if (!status && o->samples) {
        fprintf(stderr, "lwtls:   set-up: %u connection pairs...\n", o->samples);
        status = measure_setup(loop, o, k, certs, srv.port, run);
    }
    if (!status && o->clients && !interrupted)
        status = run_storm(loop, o, k, certs, &srv, rc, index, run);
    run->interrupted |= interrupted;
    if (rc)
        redisFree(rc);
    redis_server_stop(&srv);
    return status;
}

int main(int argc, char **argv)
{
    static struct run runs[RUN_KINDS];
    struct tls_certs certs;
    struct ev_loop *loop;
    struct sigaction sa;
    struct opts o;
    unsigned n = 0;
    char load[64];
    int status, any_tls = 0;

    memset(&certs, 0, sizeof certs);
    if ((status = parse_args(argc, argv, &o)) != 0)
        return status == 1 ? 0 : status;
    any_tls = o.runs[RUN_TLS] || o.runs[RUN_TLS_NOCACHE] || o.runs[RUN_TLS_NORESUME];
    if (any_tls && !lw_tls_available()) {
        fprintf(stderr, "lwtls: this leasewheel was built without TLS: the tcp run only\n");
        o.runs[RUN_TLS] = o.runs[RUN_TLS_NOCACHE] = o.runs[RUN_TLS_NORESUME] = any_tls = 0;
        if (!o.runs[RUN_TCP])
            return 0;
    }
    /* The loop's thread writes to sockets (lock.h); a signal ends the run. */
    signal(SIGPIPE, SIG_IGN);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (raise_nofile((rlim_t)o.clients * 2 + 256))
        return 2;
    if (any_tls) {
        fprintf(stderr, "lwtls: making a throwaway CA and certificates for TLS\n");
        if (tls_certs_make(&certs)) {
            fprintf(stderr, "lwtls: could not make certificates (is openssl installed?)\n");
            return 2;
        }
    }
    if (o.runs[RUN_TLS_NORESUME] && !(o.ssl_ctx = make_ssl_ctx(&o, &certs))) {
        tls_certs_remove(&certs);
        return 2;
    }
    if (!(loop = ev_loop_new(EVBACKEND_EPOLL))) {
        fprintf(stderr, "lwtls: no libev loop (epoll)\n");
        free_ssl_ctx(o.ssl_ctx);
        tls_certs_remove(&certs);
        return 2;
    }
    cli_load_average(load, sizeof load);
    printf("lwtls: a private redis-server per run (TLS only on TCP for the tls runs, "
           "%s); load average at the start: %s\n\n",
           o.server_auth ? "server authentication only" : "mutual TLS: the clients present a "
                                                          "certificate",
           load);
    fflush(stdout);
    status = 0;
    for (int k = 0; k < RUN_KINDS && !interrupted && !status; k++) {
        if (!o.runs[k])
            continue;
        status = do_run(loop, &o, (enum run_kind)k, &certs, n, &runs[n]);
        n++;
    }
    if (status) {
        ev_loop_destroy(loop);
        free_ssl_ctx(o.ssl_ctx);
        tls_certs_remove(&certs);
        return status;
    }
    if (o.samples)
        print_setup(&o, runs, n);
    if (o.clients)
        print_storm(&o, runs, n);
    for (unsigned i = 0; i < n; i++)
        if ((runs[i].done_storm && !runs[i].storm.ok) || runs[i].interrupted)
            status = 1;
    cli_load_average(load, sizeof load);
    printf("\n%s; load average at the end: %s\n",
           status ? "CHECKS FAILED (see the checks column)"
                  : "checks: no lock lost, every acquire succeeded, every client connected and "
                    "renewing again, every lock held at the end",
           load);
    if (o.json && write_json(&o, runs, n))
        status = 2;
    ev_loop_destroy(loop);
    free_ssl_ctx(o.ssl_ctx);
    tls_certs_remove(&certs);
    return status;
}
