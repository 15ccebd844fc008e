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
 *
 * This file has the options and the runs in turn; the measurements, the
 * TLS settings and the report are in files of their own (lwtls.h lists
 * them).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#include <leasewheel/lock.h>

#include "cli_util.h"
#include "lwtls.h"
#include "redis_server.h"
#include "tls.h" /* tls_available() */
#include "tls_certs.h"
#include "tool_util.h"

#define MAX_CLIENTS 5000u
#define MAX_SAMPLES 100000u

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

const char *const run_names[RUN_KINDS] = {"tcp", "tls", "tls-nocache", "tls-noresume"};

volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* --- options --------------------------------------------------------------- */

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
    opterr = 0; /* our own messages, one line each */
    while ((opt = getopt_long(argc, argv, ":vh", long_opts, NULL)) != -1) {
        switch (opt) {
        case O_RUNS:
            if (parse_runs(optarg, o))
                return tool_usage_error("lwtls", "--runs: '%s' is not a list of tcp, tls, tls-nocache, "
                                                 "tls-noresume (each once)",
                                        optarg);
            break;
        case O_SAMPLES:
            if (cli_parse_u32(optarg, 0, MAX_SAMPLES, &o->samples))
                return tool_usage_error("lwtls", "--samples: '%s' is not 0..100000", optarg);
            break;
        case O_CLIENTS:
            if (cli_parse_u32(optarg, 0, MAX_CLIENTS, &o->clients))
                return tool_usage_error("lwtls", "--clients: '%s' is not 0..5000", optarg);
            break;
        case O_LOCKS:
            if (cli_parse_u32(optarg, 1, MAX_LOCKS, &o->locks))
                return tool_usage_error("lwtls", "--locks: '%s' is not 1..64", optarg);
            break;
        case O_LEASE:
            if (cli_parse_u32(optarg, 3 * LW_DEFAULT_TICK_MS, 600000, &o->lease_ms))
                return tool_usage_error("lwtls", "--lease-ms: '%s' is not 300..600000", optarg);
            break;
        case O_RECONNECT:
            if (cli_parse_u32(optarg, 1, 60000, &o->reconnect_min_ms))
                return tool_usage_error("lwtls", "--reconnect-min-ms: '%s' is not 1..60000", optarg);
            break;
        case O_SERVER_AUTH: o->server_auth = 1; break;
        case O_JSON: o->json = optarg; break;
        case 'v': o->verbose = 1; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default: return tool_bad_option("lwtls", opt, argv);
        }
    }
    if (optind < argc)
        return tool_usage_error("lwtls", "unexpected argument '%s'", argv[optind]);
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

/* Whether a TLS run is asked for: 1, or 0.  A library built without TLS
 * has them dropped (said): -1 when then nothing is left to run. */
static int tls_runs(struct opts *o)
{
    int any_tls = o->runs[RUN_TLS] || o->runs[RUN_TLS_NOCACHE] || o->runs[RUN_TLS_NORESUME];

    if (any_tls && !tls_available()) {
        fprintf(stderr, "lwtls: this leasewheel was built without TLS: the tcp run only\n");
        o->runs[RUN_TLS] = o->runs[RUN_TLS_NOCACHE] = o->runs[RUN_TLS_NORESUME] = any_tls = 0;
        if (!o->runs[RUN_TCP])
            return -1;
    }
    return any_tls;
}

/* The loop's thread writes to sockets (lock.h): SIGPIPE ignored; SIGINT
 * and SIGTERM end the run. */
static void catch_signals(void)
{
    struct sigaction sa;

    signal(SIGPIPE, SIG_IGN);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* What the TLS runs need: the throwaway CA and certificates, and
 * tls-noresume's context.  0, or 2 (said; nothing left behind). */
static int prepare_tls(struct opts *o, int any_tls, struct tls_certs *certs)
{
    if (any_tls) {
        fprintf(stderr, "lwtls: making a throwaway CA and certificates for TLS\n");
        if (tls_certs_make(certs)) {
            fprintf(stderr, "lwtls: could not make certificates (is openssl installed?)\n");
            return 2;
        }
    }
    if (o->runs[RUN_TLS_NORESUME] && !(o->ssl_ctx = make_ssl_ctx(o, certs))) {
        tls_certs_remove(certs);
        return 2;
    }
    return 0;
}

/* The tables and the checks' line (stdout), the JSON: the exit status,
 * 0, 1 (a check failed), or 2 (the JSON could not be written). */
static int report(const struct opts *o, const struct run *runs, unsigned n)
{
    char load[64];
    int status = 0;

    if (o->samples)
        print_setup(o, runs, n);
    if (o->clients)
        print_storm(o, runs, n);
    for (unsigned i = 0; i < n; i++)
        if ((runs[i].done_storm && !runs[i].storm.ok) || runs[i].interrupted)
            status = 1;
    cli_load_average(load, sizeof load);
    printf("\n%s; load average at the end: %s\n",
           status ? "CHECKS FAILED (see the checks column)"
                  : "checks: no lock lost, every acquire succeeded, every client connected and "
                    "renewing again, every lock held at the end",
           load);
    if (o->json && write_json(o, runs, n))
        status = 2;
    return status;
}

int main(int argc, char **argv)
{
    static struct run runs[RUN_KINDS];
    struct tls_certs certs;
    struct ev_loop *loop;
    struct opts o;
    unsigned n = 0;
    char load[64];
    int status, any_tls;

    memset(&certs, 0, sizeof certs);
    if ((status = parse_args(argc, argv, &o)) != 0)
        return status == 1 ? 0 : status;
    if ((any_tls = tls_runs(&o)) < 0)
        return 0;
    catch_signals();
    if (raise_nofile((rlim_t)o.clients * 2 + 256) || prepare_tls(&o, any_tls, &certs))
        return 2;
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
    for (int k = 0; k < RUN_KINDS && !interrupted && !status; k++) {
        if (!o.runs[k])
            continue;
        status = do_run(loop, &o, (enum run_kind)k, &certs, n, &runs[n]);
        n++;
    }
    if (!status)
        status = report(&o, runs, n);
    ev_loop_destroy(loop);
    free_ssl_ctx(o.ssl_ctx);
    tls_certs_remove(&certs);
    return status;
}
