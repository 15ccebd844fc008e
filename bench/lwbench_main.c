/*
 * bench/lwbench_main.c - the sizing tool: how many watchdog locks one process
 * and one Redis carry at a given lease, and with which tick, slots, batch
 * and in-flight cap.
 *
 *   lwbench [--locks N] [--kind lock|read|write|permit|fair] [--lease-ms MS] [--tick-ms MS] [--slots N]
 *           [--batch N] [--inflight N] [--duration-s S] [-r ADDRESS]
 *           [-c [SEEDS]] [--json FILE] [--plot FILE.png] [--sweep]
 *           [--ceiling | --no-ceiling] [--cleanup | --no-cleanup]
 *           [--tls] [--cacert FILE] [--cacertdir DIR] [--cert FILE]
 *           [--key FILE] [--sni NAME] [--insecure] [-v]
 *
 * -r takes HOST:PORT, redis[s]://... or redis[s]-sentinel://...#MASTER
 * (tools/redis_url.h); the TLS flags are redis-cli's (tools/tls_opts.h)
 * and end up in opts.tls.
 *
 * One sizing run (lwbench_run.c) of --locks, each followed by its ceiling
 * (lwbench_ceiling.c), or with --sweep a series of them: the count
 * doubles until a run does not hold, then is bisected (to within
 * SWEEP_PRECISION) between the largest that held and the smallest that did
 * not.  Progress goes to stderr, the table to stdout.  The ceiling floods
 * a Redis lwbench did not start only with --ceiling, said at the start and
 * FLOOD_NOTICE_NS before the first flood (ceiling_opts()).  On such a
 * Redis the keys earlier runs of this host left when killed are removed
 * first (lwbench_cleanup.c; --cleanup does only that).
 *
 * Exit status: 0 the run held (sweep: some count held), 1 it did not,
 * (a run whose acquires admission refused past the Redis's capacity, and
 * that kept every lock it got, held: 0, and a sweep stops there),
 * 69 Redis did not answer or refused lwbench (a TLS failure, AUTH: as
 * lwlock's 69, with one line on stderr saying why), 2 another failure (a
 * private server that did not start, ...), 64 bad usage.  SIGINT or SIGTERM
 * end the run within a second (blocked in every thread, taken by nap()):
 * what was measured is reported, "interrupted", the keys deleted, and the
 * process ends by the signal (a shell's 130 or 143: stopped()).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/lock.h>
#include <leasewheel/multi.h>
#include <leasewheel/semaphore.h>
#include <leasewheel/wheel.h>

#include "cli_util.h"
#include "duration.h"
#include "lwbench.h"
#include "tool_util.h"
#include "redis_url.h"
#include "tls_opts.h"

#define MAX_STEPS 24
#define CLEANUP_AT_START_S 10.0 /* a run's look for earlier runs' keys */
#define CLEANUP_S 600.0         /* --cleanup's */
#define SWEEP_PRECISION 0.05    /* bisect until the bracket is this narrow */
#define MAX_LOCKS 50000000u

static const char usage_text[] =
    "usage: lwbench [options]\n"
    "Holds N watchdog locks on Redis for a while and reports whether one\n"
    "process and one Redis carry them: renewals/s needed and achieved, renewal\n"
    "lag against the tick, locks lost, CPU and memory, and the same run's\n"
    "ceiling (a raw pipelined flood of the same renew script).\n"
    "\n"
    "  --locks N         locks to hold (default 200000; with --sweep, the first count)\n"
    "  --lease-ms MS     watchdog lease (default 30000); renewed every lease/3\n"
    "  --tick-ms MS      the wheel's tick (default 100)\n"
    "                    (both take a unit too: 30s, 250ms; a bare number is ms)\n"
    "  --slots N         the wheel's slots (default 512)\n"
    "  --batch N         keys per renewal call (default 100, at most 1000)\n"
    "  --inflight N      renewal calls unanswered at once (default 64)\n"
    "  --duration-s S    how long to hold them (default 30); measured over whole\n"
    "                    renewal periods when S holds at least one.  A bare\n"
    "                    number is seconds (0.5 too); or with a unit: 90s, 2m\n"
    "  -r, --redis ADDRESS\n"
    "                    a running Redis, HOST:PORT or\n"
    "                    redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (only keys under\n"
    "                    lwbench:<host>:<pid>:... are made: Keys, below);\n"
    "                    default: start a private redis-server on a free loopback\n"
    "                    port, stop it afterwards.  Or the master Sentinel names\n"
    "                    MASTER: redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT]\n"
    "                    [,HOST[:PORT]...][/DB]#MASTER (USER and PASSWORD are the\n"
    "                    master's; the sentinels' are $LWLOCK_SENTINEL_USERNAME and\n"
    "                    $LWLOCK_SENTINEL_PASSWORD); rediss:// and rediss-sentinel://\n"
    "                    are the same over TLS\n"
    "  -c, --cluster [SEEDS]\n"
    "                    Redis Cluster: the given one (SEEDS: HOST:PORT,HOST:PORT,...,\n"
    "                    or else -r's HOST:PORT; -r's USER and PASSWORD are used), or\n"
    "                    without either a private one on loopback (3 masters, 3\n"
    "                    replicas), stopped afterwards.  Adds per-master renewals/s,\n"
    "                    keys per renewal call and the cluster ceiling (every\n"
    "                    master's flood at once, summed)\n"
    "  --json FILE       the results as JSON too\n"
    "  --plot FILE.png   with --sweep: lag and renewals/s against lock count (gnuplot)\n"
    "  --sweep           grow the lock count until renewals fall behind; report the\n"
    "                    largest count that held\n"
    "  -v, --verbose     the library's log lines to stderr (connections lost and\n"
    "                    made again, locks at risk, lost)\n"
    "  --clients N       split the locks between N clients (default 1, at most\n"
    "                    256), each with its own engine thread and connections,\n"
    "                    as N processes would be: a fleet's short batches\n"
    "  --no-ceiling      skip the ceiling's floods on lwbench's own Redis (each\n"
    "                    drives Redis to 100% of a core for a few seconds); the\n"
    "                    table then has no ceiling, ratio or capacity estimate\n"
    "  --ceiling         flood a Redis lwbench did not start too (-r, LWLOCK_REDIS,\n"
    "                    -c SEEDS), which it does not by default: said first, and\n"
    "                    the first flood 5 s later, counted down (Ctrl-C stops it)\n"
    "  -h, --help        this help (the Redis address is -r, as lwlock's, not\n"
    "                    redis-cli's -h)\n"
    "  --version         lwbench's version\n"
    "\n"
    "LWLOCK_REDIS, when set and there is no -r, is the address (with a password\n"
    "in a redis:// URL), as lwlock reads it.  Under the table: the ceiling's\n"
    "capacity estimate (ceiling x lease/3), the capacity measured when a limit\n"
    "was found (a count that did not hold, or admission's refusals), and the\n"
    "count to plan for: 70% of the measured capacity, or what held when no\n"
    "limit was reached, and never over 70% of the estimate (docs/tuning.md).\n"
    "\n";
/* The keys on a given Redis: a block of its own (C99's 4095 bytes). */
static const char usage_keys_text[] =
    "Keys, on a Redis lwbench did not start:\n"
    "  every key a run makes starts with lwbench:<host>:<pid>:<start>: and is\n"
    "  deleted when the run ends (SIGINT and SIGTERM too). What a run killed\n"
    "  before that left (kill -9), the next run from this host removes first,\n"
    "  looking for at most 10 s; or:\n"
    "  --cleanup         remove the keys of runs of this host whose process is\n"
    "                    gone (SCAN, UNLINK), say how many, and run nothing;\n"
    "                    another host's keys are left, its pids mean nothing here\n"
    "  --no-cleanup      do not look for them before the run\n"
    "\n";
/* What is held: its own block, so that other kinds slot in. */
static const char usage_kind_text[] =
    "What is held:\n"
    "  --kind KIND       lock (default): watchdog locks; read: read holds of\n"
    "                    read-write locks (Redisson's RReadWriteLock: each renewal\n"
    "                    also renews the hold's timeout key); write: their write\n"
    "                    holds; permit: permits of semaphores whose permits expire\n"
    "                    (Redisson's RPermitExpirableSemaphore), --locks then\n"
    "                    counting permits (one Redis or Sentinel, no --cluster);\n"
    "                    fair: fair locks (Redisson's RFairLock), held and\n"
    "                    renewed as locks, each acquire through its queue;\n"
    "                    multi: multi-locks, each a set of --names-per-lock\n"
    "                    locks taken at once, --locks counting the names.\n"
    "                    The ceiling floods that kind's renew script; with\n"
    "                    --cluster, read and write need --no-ceiling\n"
    "  --per-semaphore N with --kind permit: permits of one semaphore (default 100,\n"
    "                    at most 1000): --locks 100000 holds 1000 semaphores' permits\n"
    "  --names-per-lock K with --kind multi: names of one multi-lock (default 4,\n"
    "                    at most 64): --locks 200000 holds 50000 sets\n"
    "\n";
/* In two: C99 promises string literals of 4095 bytes only. */
static const char usage_tls_text[] =
    "TLS (as redis-cli's; the server is verified unless --insecure):\n"
    "  --tls             connect over TLS (a rediss -r implies it); with -c, to\n"
    "                    every node.  Without -r or seeds the private redis-server\n"
    "                    (or cluster) serves TLS only, with a throwaway CA and\n"
    "                    certificate made with openssl for the run, and trusts that\n"
    "                    CA alone (the other TLS flags are then unused)\n"
    "  --cacert FILE     trust the CA certificates in FILE (PEM)\n"
    "  --cacertdir DIR   trust those in DIR (hashed: openssl rehash); neither: the\n"
    "                    system's trusted CAs\n"
    "  --cert FILE       a client certificate (PEM) for servers that ask for one;\n"
    "                    with --key\n"
    "  --key FILE        its private key (PEM); with --cert\n"
    "  --sni NAME        the server name to send and to find in the certificate\n"
    "                    (default: the host connected to)\n"
    "  --insecure        verify nothing, neither the certificate nor the name\n"
    "                    (--cacert and --cacertdir are then unused)\n"
    "The sentinels are reached as the master is, TLS or not, with the same flags;\n"
    "LWLOCK_SENTINEL_TLS=0 reaches them without TLS (sentinels with TLS settings of\n"
    "their own: the library's sentinel_tls).  The table's first line says\n"
    "\"over TLS\" when the run is: the client's connections and lwbench's own\n"
    "(PING, INFO, CLUSTER SLOTS, the ceiling's floods, deleting its keys).\n";

/* The end of --help, apart, for the same reason. */
static const char usage_status[] =
    "\n"
    "A run holds when every lock was acquired, none was lost, and renewal lag p99\n"
    "stayed under lease/6.  Asked for more locks than the Redis can renew, the\n"
    "client refuses the extra acquires (LW_EOVERLOAD) and keeps what it holds:\n"
    "the run then says how many it held and refused, and holds if none of\n"
    "those it held was lost (exit 0; the count held is the client's measured\n"
    "capacity at this lease).  Exit status: 0 held, 1 not held, 69 Redis\n"
    "unreachable or refusing lwbench (TLS, AUTH; one line on stderr says why),\n"
    "2 another failure, 64 usage.  SIGINT or SIGTERM: what was measured so far\n"
    "is printed, \"interrupted\", the keys deleted, and lwbench ends by the\n"
    "signal (a shell's status 130 or 143).\n";

static int usage_error(const char *fmt, const char *arg)
{
    return tool_usage_error("lwbench", fmt, arg);
}

enum { O_LOCKS = 256,
       O_LEASE,
       O_TICK,
       O_SLOTS,
       O_BATCH,
       O_INFLIGHT,
       O_DURATION,
       O_JSON,
       O_PLOT,
       O_SWEEP,
       O_NO_CEILING,
       O_CLIENTS,
       O_VERSION,
       O_KIND,
       O_PER_SEMAPHORE,
       O_NAMES_PER_LOCK,
       O_CLEANUP,
       O_NO_CLEANUP,
       O_CEILING,
       O_REDIS = 'r',
       O_CLUSTER = 'c' };

static const struct option long_opts[] = {
    {"locks", required_argument, NULL, O_LOCKS},
    {"lease-ms", required_argument, NULL, O_LEASE},
    {"tick-ms", required_argument, NULL, O_TICK},
    {"slots", required_argument, NULL, O_SLOTS},
    {"batch", required_argument, NULL, O_BATCH},
    {"inflight", required_argument, NULL, O_INFLIGHT},
    {"duration-s", required_argument, NULL, O_DURATION},
    {"redis", required_argument, NULL, O_REDIS},
    {"cluster", optional_argument, NULL, O_CLUSTER},
    {"json", required_argument, NULL, O_JSON},
    {"plot", required_argument, NULL, O_PLOT},
    {"sweep", no_argument, NULL, O_SWEEP},
    {"no-ceiling", no_argument, NULL, O_NO_CEILING},
    {"ceiling", no_argument, NULL, O_CEILING},
    {"cleanup", no_argument, NULL, O_CLEANUP},
    {"no-cleanup", no_argument, NULL, O_NO_CLEANUP},
    {"clients", required_argument, NULL, O_CLIENTS},
    {"version", no_argument, NULL, O_VERSION},
    /* What is held */
    {"kind", required_argument, NULL, O_KIND},
    {"per-semaphore", required_argument, NULL, O_PER_SEMAPHORE},
    {"names-per-lock", required_argument, NULL, O_NAMES_PER_LOCK},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    TLS_LONG_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* A duration option in ms (duration.h: a bare number is ms) within
 * min..max into *out; 0, or -1. */
static int duration_ms(const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t ms;

    if (duration_parse(arg, 1, min, max, &ms))
        return -1;
    *out = (uint32_t)ms;
    return 0;
}

/* --duration-s: seconds, a fraction allowed ("0.5"), or a duration with
 * its unit ("90s", "2m", "500ms"): 0.1 s to a day. */
static int duration_s(const char *arg, double *out)
{
    uint64_t ms;

    if (cli_parse_seconds(arg, 0.1, 86400, out) == 0)
        return 0;
    if (duration_parse(arg, 1000, 100, 86400000, &ms))
        return -1;
    *out = (double)ms / 1000;
    return 0;
}

/* One numeric option into its field; 0, or -1 when out of range. */
static int numeric_opt(int opt, const char *arg, struct opts *o)
{
    switch (opt) {
    case O_LOCKS: return cli_parse_u32(arg, 1, MAX_LOCKS, &o->locks);
    case O_LEASE: return duration_ms(arg, LW_MIN_LEASE_MS, LW_MAX_LEASE_MS, &o->lease_ms);
    case O_TICK: return duration_ms(arg, 1, LW_MAX_TICK_MS, &o->tick_ms);
    case O_SLOTS: return cli_parse_u32(arg, 1, LW_MAX_SLOTS, &o->slots);
    case O_BATCH: return cli_parse_u32(arg, 1, LW_MAX_RENEW_BATCH, &o->batch);
    case O_INFLIGHT: return cli_parse_u32(arg, 1, 4096, &o->inflight);
    case O_CLIENTS: return cli_parse_u32(arg, 1, LWB_MAX_CLIENTS, &o->clients);
    default: return duration_s(arg, &o->duration_s);
    }
}

/* A numeric option's bad value: 64, after a message naming the option
 * and its range. */
static int numeric_error(int opt, const char *arg)
{
    static const struct {
        int opt;
        const char *name, *range;
    } ranges[] = {
        {O_LOCKS, "--locks", "1 to 50000000"},
        {O_LEASE, "--lease-ms", "10ms to 24d20h31m23s647ms: 250ms, 30s, 1h30m; a bare number is ms"},
        {O_TICK, "--tick-ms", "1ms to 1m: 10ms, 1s; a bare number is ms"},
        {O_SLOTS, "--slots", "1 to 65536"},
        {O_BATCH, "--batch", "1 to 1000"},
        {O_INFLIGHT, "--inflight", "1 to 4096"},
        {O_CLIENTS, "--clients", "1 to 256"},
        {O_DURATION, "--duration-s", "0.1 to 86400 seconds, or 100ms to 1d: 90s, 2m, 1h30m"},
    };

    char what[300];

    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (ranges[i].opt == opt) {
            snprintf(what, sizeof what, "invalid %s '%s' (%s)", ranges[i].name, arg,
                     ranges[i].range);
            return usage_error("%s", what);
        }
    return usage_error("%s: not a number in range for its option", arg);
}

/* -r's value (or $LWLOCK_REDIS's, what says which). */
static int redis_from(const char *arg, const char *what, struct opts *o)
{
    char why[300], shown[600];

    if (redis_url_parse(arg, &o->url, why, sizeof why)) {
        char line[1400];

        /* Not the password: it would stay in the terminal or the log. */
        redis_url_redact(arg, shown, sizeof shown);
        snprintf(line, sizeof line, "invalid %s '%s': %s", what, shown, why);
        return usage_error("%s", line);
    }
    o->redis = arg;
    return 0;
}

static int redis_opt(const char *arg, struct opts *o)
{
    return redis_from(arg, "Redis address", o);
}

/* Without -r (or --cluster's seeds), $LWLOCK_REDIS as lwlock reads it:
 * the address, with the password a redis:// URL carries. */
static int env_redis(struct opts *o)
{
    const char *env = getenv("LWLOCK_REDIS");

    if (o->redis || o->seeds.n || !env || !env[0])
        return 0;
    return redis_from(env, "LWLOCK_REDIS", o);
}

/* --cluster, with its seeds when given: "--cluster=S", "-cS", or the next
 * argument when it is not an option ("-c S": lwbench takes no operands,
 * so that is unambiguous). */
static int cluster_opt(int argc, char **argv, struct opts *o)
{
    const char *arg = optarg;
    char why[400];

    o->cluster = 1;
    if (!arg && optind < argc && argv[optind][0] != '-')
        arg = argv[optind++];
    if (arg && redis_seeds_parse(arg, &o->seeds, why, sizeof why)) {
        char line[1400];

        snprintf(line, sizeof line, "invalid cluster seeds '%.600s': %s", arg, why);
        return usage_error("%s", line);
    }
    return 0;
}

void lwbench_log(int level, const char *message, void *arg)
{
    (void)arg;
    fprintf(stderr, "lwbench: %s: %s\n", lw_log_level_name(level), message);
}

/* The TLS flags together, with -r's scheme; $LWLOCK_SENTINEL_TLS; the
 * files named.  0, or 64 (said). */
static int tls_args(struct opts *o)
{
    char why[600];

    if (tls_opts_finish(&o->tls, o->url.tls, why, sizeof why) ||
        (o->plain_sentinels = tls_sentinel_env(getenv("LWLOCK_SENTINEL_TLS"), why,
                                               sizeof why)) < 0 ||
        tls_opts_files(&o->tls, why, sizeof why))
        return usage_error("%s", why);
    return 0;
}

/* --kind, --per-semaphore and --names-per-lock: 0, or 64 (said). */
static int kind_opt(int opt, const char *arg, struct opts *o)
{
    if (opt == O_PER_SEMAPHORE) {
        if (cli_parse_u32(arg, 1, LW_MAX_PERMITS_AT_ONCE, &o->per_semaphore) == 0)
            return 0;
        return usage_error("invalid --per-semaphore '%s' (1 to 1000)", arg);
    }
    if (opt == O_NAMES_PER_LOCK) {
        if (cli_parse_u32(arg, 1, LW_MULTI_MAX, &o->names_per_lock) == 0)
            return 0;
        return usage_error("invalid --names-per-lock '%s' (1 to 64)", arg);
    }
    for (enum lwb_kind k = LWB_KIND_LOCK; k <= LWB_KIND_MULTI; k++)
        if (!strcmp(arg, lwb_kind_name(k))) {
            o->kind = k;
            return 0;
        }
    return usage_error("invalid --kind '%s' (lock, read, write, permit, fair or multi)", arg);
}

/* What goes with --kind permit: 0, or 64 (said). */
static int check_kind(const struct opts *o)
{
    if (o->kind != LWB_KIND_PERMIT)
        return 0;
    if (o->cluster)
        return usage_error("%s: --kind permit runs on one Redis (or Sentinel's master)",
                           "--cluster");
    return 0;
}

/* Whether the ceiling floods: on lwbench's own Redis unless --no-ceiling,
 * on a given one (-r, LWLOCK_REDIS, -c SEEDS: a shared one, production's
 * perhaps) only with --ceiling.  0, or 64 (said). */
static int ceiling_opts(struct opts *o)
{
    if (o->ceiling && o->no_ceiling)
        return usage_error("%s", "--ceiling and --no-ceiling exclude each other");
    o->given = o->redis || o->seeds.n;
    if (o->given && !o->ceiling && !o->no_ceiling)
        o->no_ceiling = o->no_ceiling_given = 1;
    return 0;
}

/* --cleanup: on a given Redis, alone.  0, or 64 (said). */
static int check_cleanup(const struct opts *o)
{
    if (!o->cleanup)
        return 0;
    if (!o->redis && !o->seeds.n)
        return usage_error("%s: needs a Redis lwbench did not start (-r, LWLOCK_REDIS or -c "
                           "SEEDS): a private one holds no earlier run's keys",
                           "--cleanup");
    if (o->sweep || o->json || o->plot || o->no_cleanup)
        return usage_error("%s runs nothing: not with --sweep, --json, --plot or --no-cleanup",
                           "--cleanup");
    return 0;
}

/* 0 to run, 1 help shown, 64 bad usage (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    char why[300];
    int opt, rc;

    *o = (struct opts){.locks = 200000, .lease_ms = LW_DEFAULT_WATCHDOG_TIMEOUT_MS, .tick_ms = LW_DEFAULT_TICK_MS, .slots = LW_DEFAULT_SLOTS, .batch = LW_DEFAULT_RENEW_BATCH, .inflight = LW_DEFAULT_RENEW_BATCHES_INFLIGHT, .duration_s = 30, .clients = 1, .per_semaphore = LWB_DEFAULT_PER_SEMAPHORE, .names_per_lock = LWB_DEFAULT_NAMES_PER_LOCK};
    /* Our own messages, one line each (tool_bad_option()). */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":hvr:c::", long_opts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage_text, stdout);
            fputs(usage_keys_text, stdout);
            fputs(usage_kind_text, stdout);
            fputs(usage_tls_text, stdout);
            fputs(usage_status, stdout);
            return 1;
        }
        if (opt == '?' || opt == ':')
            return tool_bad_option("lwbench", opt, argv);
        if ((rc = tls_opt_take(&o->tls, opt, optarg, why, sizeof why)) < 0)
            return usage_error("%s", why);
        if (rc)
            continue;
        if (opt == O_VERSION) {
            puts("lwbench " LWBENCH_VERSION);
            return 1;
        }
        if (opt == O_KIND || opt == O_PER_SEMAPHORE || opt == O_NAMES_PER_LOCK) {
            if ((rc = kind_opt(opt, optarg, o)))
                return rc;
        } else if (opt == O_SWEEP)
            o->sweep = 1;
        else if (opt == O_NO_CEILING || opt == O_CEILING)
            *(opt == O_CEILING ? &o->ceiling : &o->no_ceiling) = 1;
        else if (opt == O_CLEANUP || opt == O_NO_CLEANUP)
            *(opt == O_CLEANUP ? &o->cleanup : &o->no_cleanup) = 1;
        else if (opt == 'v')
            o->verbose = 1;
        else if (opt == O_REDIS || opt == O_CLUSTER) {
            if ((rc = opt == O_REDIS ? redis_opt(optarg, o) : cluster_opt(argc, argv, o)))
                return rc;
        } else if (opt == O_JSON || opt == O_PLOT)
            *(opt == O_JSON ? &o->json : &o->plot) = optarg;
        else if (numeric_opt(opt, optarg, o))
            return numeric_error(opt, optarg);
    }
    if (optind < argc)
        return usage_error("unexpected argument %s", argv[optind]);
    if ((rc = env_redis(o)))
        return rc;
    if ((rc = check_cleanup(o)))
        return rc;
    if (o->plot && (!o->sweep || strchr(o->plot, '\'')))
        return usage_error("--plot %s: needs --sweep, and a file name without quotes",
                           o->plot);
    if (o->cluster && o->url.sentinels.n)
        return usage_error("%s", "--cluster and a redis-sentinel:// -r exclude each other");
    if (o->url.sentinels.n) {
        const char *user = getenv("LWLOCK_SENTINEL_USERNAME");
        const char *pass = getenv("LWLOCK_SENTINEL_PASSWORD");

        o->sentinel_username = user && user[0] ? user : NULL;
        o->sentinel_password = pass && pass[0] ? pass : NULL;
    }
    if (o->cluster && o->url.db)
        return usage_error("%s", "a cluster has only DB 0 (drop /DB from the -r URL)");
    if ((rc = tls_args(o)) || (rc = check_kind(o)) || (rc = ceiling_opts(o)))
        return rc;
    if (o->cluster && o->kind != LWB_KIND_LOCK && o->kind != LWB_KIND_FAIR &&
        o->kind != LWB_KIND_MULTI && !o->no_ceiling)
        return usage_error("--kind %s with --cluster: the cluster ceiling floods locks only "
                           "(add --no-ceiling)",
                           lwb_kind_name(o->kind));
    if (o->locks < o->clients)
        return usage_error("%s: at least one lock per client", "--clients");
    if ((uint64_t)o->lease_ms < 3ull * o->tick_ms)
        return usage_error("%s: the lease must be at least 3 ticks", "--lease-ms");
    return 0;
}

/* The sweep's next count: double until a run fails, then bisect (on a
 * log scale) between the largest held and the smallest failed.  0: done. */
static uint32_t next_count(uint32_t held, uint32_t failed)
{
    if (!failed)
        return held >= MAX_LOCKS / 2 ? 0 : held * 2;
    if (failed <= held + 1 || (held && (double)failed / held < 1 + SWEEP_PRECISION))
        return 0;
    return held ? (uint32_t)sqrt((double)held * failed) : failed / 2;
}

/* The runs: one, or the sweep's.  Returns how many, 0 on a failure. */
static unsigned run_all(const struct opts *o, struct target *t, struct run_result *runs,
                        uint32_t *largest_held)
{
    uint32_t locks = o->locks, failed = 0;
    unsigned n = 0;
    char why[256];

    *largest_held = 0;
    while (locks && n < (o->sweep ? MAX_STEPS : 1u)) {
        struct run_result *r = &runs[n];

        if (o->sweep)
            progress("sweep step %u: %u locks", n + 1, locks);
        if (sizing_run(o, t, locks, n, r, why, sizeof why)) {
            fprintf(stderr, "lwbench: %s\n", why);
            return 0;
        }
        n++;
        if (r->interrupted) /* cut short: it says nothing of the count */
            break;
        if (r->held && r->refused) { /* at capacity: more would be refused too */
            if (r->acquired > *largest_held) /* a smaller count may have held whole */
                *largest_held = r->acquired;
            break;
        }
        if (r->held && locks > *largest_held)
            *largest_held = locks;
        else if (!r->held && (!failed || locks < failed))
            failed = locks;
        if (stop_signal()) /* in its ceiling: the run itself stands */
            break;
        locks = next_count(*largest_held, failed);
    }
    return n;
}

static int report(const struct opts *o, const struct target *t, const struct run_result *runs,
                  unsigned n, uint32_t largest_held, FILE *json)
{
    int rc = 0;

    report_table(o, t, runs, n, largest_held);
    if (json && report_json(json, o->json, o, t, runs, n, largest_held))
        rc = 2; /* said */
    if (o->plot && report_plot(o->plot, o, runs, n)) {
        fprintf(stderr, "lwbench: gnuplot could not draw %s\n", o->plot);
        rc = 2;
    }
    return rc;
}

/* Check the client config before spending time on the ceiling. */
static int config_ok(const struct opts *o)
{
    struct lw_client_config cfg;
    struct lw_client *c;
    int rc;

    client_config(o, &cfg);
    cfg.log = NULL; /* a check of the settings: its connection is not the run's */
    if ((rc = lw_client_new(&cfg, &c)) == 0) {
        lw_client_free(c);
        return 1;
    }
    if (rc == LW_ENOTSUP && o->tls.enable)
        fprintf(stderr, "lwbench: --tls: this leasewheel was built without TLS\n");
    else
        fprintf(stderr, "lwbench: %s\n", lw_strerror(rc));
    return 0;
}

/* The end of a process a signal stopped, once it has said what it
 * measured and deleted its keys: as the signal would have ended it, so
 * that a shell sees 128 + the signal (130 for SIGINT, 143 for SIGTERM)
 * and a script's loop stops as it does when Ctrl-C ends any command. */
static int stopped(int sig)
{
    sigset_t one;

    fflush(NULL);
    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig); /* pending: blocked until the next line */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    return 128 + sig; /* not reached */
}

/* --cleanup: the keys of gone runs of this host removed, said on stdout.
 * 0 the whole keyspace was seen, 1 not (its bound), 69 Redis refused. */
static int cleanup_only(const struct target *t)
{
    char what[320];
    struct cleanup c;

    snprintf(what, sizeof what, "lwbench --cleanup: %s %s:%d", t->cluster ? "cluster" : "Redis",
             t->host, t->port);
    if (cleanup_stale(t, CLEANUP_S, &c)) {
        fprintf(stderr, "lwbench: %s (removed %llu keys before)\n", c.why,
                (unsigned long long)c.removed);
        return 69;
    }
    cleanup_say(stdout, what, &c, 1);
    return c.complete ? 0 : 1;
}

/* Before a run on a Redis lwbench did not start: what earlier runs of this
 * host left when they were killed, removed; said on stderr when any was
 * found or the look was cut short.  A failure is said and the run goes on
 * (an ACL without SCAN, say). */
static void cleanup_first(const struct target *t)
{
    struct cleanup c;

    if (cleanup_stale(t, CLEANUP_AT_START_S, &c)) {
        fprintf(stderr, "lwbench: %s: earlier runs' keys not looked for (--no-cleanup skips "
                        "the look)\n",
                c.why);
        return;
    }
    if (c.removed || c.old_form || (!c.complete && !c.interrupted))
        cleanup_say(stderr, "lwbench", &c, 0);
}

/* The results file opened before a run that ended with none: removed,
 * not left empty. */
static void close_unused(FILE *json, const char *path)
{
    if (json) {
        fclose(json);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    static struct run_result runs[MAX_STEPS];
    struct target t = {0};
    struct opts o;
    uint32_t largest_held;
    unsigned n;
    char why[256];
    FILE *json = NULL;
    int rc = parse_args(argc, argv, &o);

    if (rc)
        return rc == 1 ? 0 : rc;
    if (!config_ok(&o))
        return 64;
    /* A results file that cannot be written fails now, not after the run. */
    if (o.json && !(json = tool_json_open("lwbench", o.json)))
        return 2;
    /* Blocked in every thread (they inherit it), taken by nap(). */
    sigemptyset(&t.stop_signals);
    sigaddset(&t.stop_signals, SIGINT);
    sigaddset(&t.stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &t.stop_signals, NULL);
    if ((rc = target_open(&t, &o, why, sizeof why))) {
        fprintf(stderr, "lwbench: %s\n", why);
        target_close(&t);
        close_unused(json, o.json);
        return rc == TARGET_UNAVAILABLE ? 69 : 2;
    }
    if (o.cleanup) {
        rc = cleanup_only(&t);
        target_close(&t);
        if (stop_signal())
            fprintf(stderr, "lwbench: interrupted by %s\n", sig_name(stop_signal()));
        return stop_signal() ? stopped(stop_signal()) : rc;
    }
    if (!t.private_server && !o.no_cleanup)
        cleanup_first(&t);
    if (stop_signal()) {
        fprintf(stderr, "lwbench: interrupted by %s before the first run\n",
                sig_name(stop_signal()));
        target_close(&t);
        close_unused(json, o.json);
        return stopped(stop_signal());
    }
    if (o.no_ceiling_given && !o.cleanup)
        fprintf(stderr,
                "lwbench: %s is not lwbench's own: no ceiling floods it (--ceiling asks for "
                "them)\n",
                t.cluster ? "the cluster" : "the Redis");
    else if (o.given && !o.no_ceiling) /* --ceiling: said, the first flood waits */
        fprintf(stderr,
                "lwbench: --ceiling: after each run, the ceiling floods %s with the renew "
                "script: its CPU goes to 100%% of a core for a few seconds; the first flood "
                "starts no sooner than %.0f s from now (Ctrl-C stops lwbench, which deletes "
                "its keys)\n",
                t.cluster ? "every master of the cluster" : "this Redis",
                (double)FLOOD_NOTICE_NS / 1e9);
    t.warned_at = o.given && !o.no_ceiling ? lw_clock_now() : 0;
    n = run_all(&o, &t, runs, &largest_held);
    target_close(&t);
    if (n == 0) {
        close_unused(json, o.json);
        return stop_signal() ? stopped(stop_signal()) : 2;
    }
    rc = report(&o, &t, runs, n, largest_held, json);
    if (stop_signal()) {
        fprintf(stderr, "lwbench: interrupted by %s: what was measured until then is above; %s\n",
                sig_name(stop_signal()),
                t.private_server ? "the private Redis is stopped, its keys with it"
                                 : "the run's keys are deleted");
        return stopped(stop_signal());
    }
    return rc ? rc : (o.sweep ? largest_held > 0 : runs[0].held) ? 0
                                                                 : 1;
}
