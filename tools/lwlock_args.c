/* tools/lwlock_args.c - lwlock's command line; see lwlock_args.h. */
#include "lwlock_args.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <leasewheel.h>

#include "duration.h"

#ifndef LWLOCK_VERSION
#define LWLOCK_VERSION "unknown"
#endif

#define DEFAULT_REDIS LWLOCK_DEFAULT_REDIS
#define MAX_MS LWLOCK_MAX_MS

/* The permits' block of --help: their own, so that other kinds' options
 * stay apart from them. */
static void usage_permits(FILE *to)
{
    fputs("      --permits N        hold one permit of the semaphore NAME instead of a\n"
          "                         lock (at most so many COMMANDs at once, across\n"
          "                         machines), creating NAME with N permits if it does\n"
          "                         not exist (an existing one keeps its count); the\n"
          "                         permit is renewed (-W) or fixed (-l) as a lock is;\n"
          "                         COMMAND sees LWLOCK_PERMIT (its id, 32 hex digits);\n"
          "                         not with --min-hold, --replicas or --status\n"
          "      --set-permits N    set the semaphore NAME's total (available plus\n"
          "                         acquired) to N, creating it; no COMMAND\n",
          to);
}

static void usage(FILE *to)
{
    fputs("Usage: lwlock [options] [--read | --write | --fair] NAME COMMAND [ARG...]\n"
          "       lwlock [options] --multi NAME1,NAME2,... COMMAND [ARG...]\n"
          "       lwlock [options] --status [--json] NAME\n"
          "       lwlock [options] --observe [--json] NAME\n"
          "       lwlock [options] --elect NAME [--value V] COMMAND [ARG...]\n"
          "       lwlock [options] --permits N NAME COMMAND [ARG...]\n"
          "       lwlock [options] --set-permits N NAME\n"
          "Hold the Redis lock NAME while COMMAND runs (flock(1) across machines), or\n"
          "say who holds it.\n"
          "\n"
          "      --read             hold the read lock of the read-write lock NAME\n"
          "                         (Redisson's RReadWriteLock): readers share it\n"
          "      --write            hold its write lock: alone, no reader nor writer\n"
          "      --fair             hold the fair lock NAME (Redisson's RFairLock):\n"
          "                         first come, first served across every client\n"
          "      --multi            hold every lock of NAME1,NAME2,... at once, or\n"
          "                         none: all or nothing, in one order for everyone\n"
          "      --fence            draw a fencing token (Redisson's RFencedLock: the\n"
          "                         name's counter, which stays in Redis) and pass it\n"
          "                         to COMMAND in LWLOCK_TOKEN; not with --read\n"
          "  -r, --redis ADDRESS    the Redis server: HOST:PORT or\n"
          "                         redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]\n"
          "                         (default: $LWLOCK_REDIS, else " DEFAULT_REDIS "),\n"
          "                         or the master Sentinel names MASTER:\n"
          "                         redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT]\n"
          "                         [,HOST[:PORT]...][/DB]#MASTER (sentinels' port\n"
          "                         26379 unless given; USER and PASSWORD are the\n"
          "                         master's; sentinels that want a password take it\n"
          "                         from $LWLOCK_SENTINEL_PASSWORD and\n"
          "                         $LWLOCK_SENTINEL_USERNAME); rediss:// and\n"
          "                         rediss-sentinel:// are the same over TLS\n",
          to);
    fputs("  -c, --cluster SEEDS    a Redis Cluster: HOST:PORT,HOST:PORT,... (some of\n"
          "                         its nodes); -r or $LWLOCK_REDIS then gives only\n"
          "                         USER and PASSWORD (redis://USER:PASSWORD@...)\n"
          "      --replicas N       the acquire counts only once N replicas have it\n"
          "                         (WAIT, 1 s at most); else the lock is given back\n"
          "                         and lwlock exits 69 (default 0: do not wait)\n"
          "  -w, --wait DURATION    wait at most so long for the lock: 0 tries once\n"
          "                         (default), -1 waits as long as it takes\n"
          "  -n, --nonblock         try once, do not wait: -w 0\n"
          "  -E, --conflict-exit-code N\n"
          "                         the exit status when the lock is not acquired within\n"
          "                         the wait (held by another), 0 to 255 (default 75)\n"
          "  -q, --quiet            say nothing when the lock is held by another (cron:\n"
          "                         the machines that lose stay silent); real failures\n"
          "                         are still said\n"
          "  -W, --watchdog DURATION\n"
          "                         the lease, renewed while COMMAND runs (default 30s)\n"
          "  -l, --lease DURATION   a fixed lease instead, never renewed: a deadline for\n"
          "                         COMMAND, which is signalled when it ends (exit 79)\n"
          "  -s, --signal SIG       sent to COMMAND when the lock is lost (default TERM)\n"
          "      --warn-signal SIG  sent to COMMAND when the lock turns at risk (renewals\n"
          "                         unconfirmed: less than half its lease sure to be\n"
          "                         left), once each time; nothing when it is safe again,\n"
          "                         -s's signal if it is lost (default: no warning)\n"
          "      --max-hold DURATION\n"
          "                         give the lock up after so long held: COMMAND then gets\n"
          "                         -s's signal and lwlock exits 79 (held too long); the\n"
          "                         lock expires at the end of its lease\n"
          "      --prefix PREFIX    the lock is PREFIX:NAME in Redis, so that a team's\n"
          "                         locks share a namespace (default: $LWLOCK_PREFIX,\n"
          "                         else none)\n"
          "      --min-hold DURATION\n"
          "                         when COMMAND ends sooner, the lock is not released\n"
          "                         but left to expire so long after it was acquired,\n"
          "                         so that a machine whose cron fires late finds it\n"
          "                         held (choose it longer than the spread of the\n"
          "                         machines' clocks and start times); not with --read\n"
          "                         or --write\n",
          to);
    usage_permits(to);
    fputs("      --status           take nothing: say whether NAME is free or held, as\n"
          "                         which kind (lock; read or write of a read-write\n"
          "                         lock; semaphore), by whom (the ids as stored) and\n"
          "                         for how long; exit 0 free, 1 held, 65 no lock nor\n"
          "                         semaphore, 69 unreachable\n"
          "      --observe          take nothing: say who leads the election NAME\n"
          "                         (term, leader, value), then a line at every change,\n"
          "                         until SIGTERM, SIGINT or SIGHUP (exit 0); never a\n"
          "                         leader past what it can vouch for (\"unknown\")\n"
          "      --elect NAME       campaign for leadership of the election NAME within\n"
          "                         -w's wait, run COMMAND while leader with LWLOCK_TERM\n"
          "                         (the term, a fencing token); leadership lost:\n"
          "                         COMMAND gets -s's signal and lwlock exits 79, not\n"
          "                         campaigning again; COMMAND exits: lwlock resigns\n"
          "      --value V          the leader's value, shown to observers (--elect)\n"
          "      --lock-delay DURATION\n"
          "                         leadership lost without a resign (lwlock killed,\n"
          "                         cut off) keeps NAME this long past -W's lease: no\n"
          "                         other candidate leads before then (--elect)\n"
          "      --json             --status's answer as one JSON object; --observe's,\n"
          "                         one a line\n"
          "  -v, --verbose          the library's log lines to stderr (connections lost\n"
          "                         and made again, the lock at risk, safe, lost)\n"
          "  -h, --help             show this help\n"
          "  -V, --version          show the version\n"
          "\n"
          "A DURATION is a number with a unit, ms, s, m, h or d (250ms, 1.5s, 30s, 5m,\n"
          "1h, 1d, 1h30m), or a bare number of milliseconds (not for -w: flock's -w 60\n"
          "is seconds, so -w wants a unit); at most 24d20h31m23s647ms.\n"
          "\n",
          to);
    /* In parts: C99 promises string literals of 4095 bytes only. */
    fputs("TLS (as redis-cli's; the server is verified unless --insecure):\n"
          "      --tls              connect over TLS (a rediss address implies it);\n"
          "                         with -c, to every node\n"
          "      --cacert FILE      trust the CA certificates in FILE (PEM)\n"
          "      --cacertdir DIR    trust those in DIR (hashed: openssl rehash);\n"
          "                         neither: the system's trusted CAs\n"
          "      --cert FILE        a client certificate (PEM) for servers that ask\n"
          "                         for one; with --key\n"
          "      --key FILE         its private key (PEM); with --cert\n"
          "      --sni NAME         the server name to send and to find in the\n"
          "                         certificate (default: the host connected to)\n"
          "      --insecure         verify nothing, neither the certificate nor the\n"
          "                         name (--cacert and --cacertdir are then unused)\n"
          "The sentinels are reached as the master is, TLS or not, with the same\n"
          "flags; LWLOCK_SENTINEL_TLS=0 reaches them without TLS.  Sentinels with TLS\n"
          "settings of their own are the library's config (sentinel_tls), not lwlock's.\n"
          "A TLS failure exits 69, saying why; COMMAND is not run.\n"
          "\n"
          "COMMAND runs with LWLOCK_NAME (the lock's name in Redis, PREFIX:NAME with a\n"
          "prefix) and, with --fence, LWLOCK_TOKEN (the lock's fencing token; with\n"
          "--multi, one per name) in its environment; with --elect, LWLOCK_TERM.\n"
          "SIGINT, SIGTERM and SIGHUP sent to lwlock are passed on to COMMAND.  The\n"
          "lock is released when COMMAND exits (with --min-hold, at the earliest so\n"
          "long after it was acquired).\n"
          "\n"
          "Exit status: COMMAND's own (128+N if killed by signal N), or the same for\n"
          "every kind, --status and --set-permits:\n"
          "  0   --status: NAME is free; --set-permits: done\n"
          "  1   --status: NAME is held\n"
          "  64  bad usage (a message says what); nothing was tried\n"
          "  65  NAME holds another kind of lock or another type of value: a plain lock\n"
          "      asked with --read or --write, a read-write lock without them, a lock\n"
          "      asked for permits, a semaphore's count or an application's value\n"
          "      (a list, a hash that is not a lock) asked as a lock; --status: a value\n"
          "      that is no lock nor semaphore; COMMAND is not run\n"
          "  69  Redis unreachable, refusing the connection (password, ACL, DB, TLS, not\n"
          "      Redis at all) or failing a command (out of memory, --replicas)\n"
          "  71  system error (fork, memory)\n"
          "  75  not acquired within the wait: held by another (-E changes it)\n"
          "  79  lock lost while COMMAND ran (--elect: leadership lost)\n"
          "  126/127 COMMAND not executable/found\n",
          to);
}

static int usage_error(FILE *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(FILE *err, const char *fmt, ...)
{
    va_list ap;

    fputs("lwlock: ", err);
    va_start(ap, fmt);
    vfprintf(err, fmt, ap);
    va_end(ap);
    fputs("\nTry 'lwlock --help' for more information.\n", err);
    return EXIT_USAGE;
}

/* Decimal digits with an optional '-', nothing else (strtoll alone would
 * take blanks, '+' and trailing junk), within [min, max]. */
static int parse_number(const char *s, long long min, long long max, long long *out)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    char *end;
    long long v;

    if (!isdigit((unsigned char)d[0]))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static const struct {
    const char *name;
    int sig;
} signal_names[] = {
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"ILL", SIGILL},
    {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT},
    {"BUS", SIGBUS},
    {"FPE", SIGFPE},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},
    {"ALRM", SIGALRM},
    {"TERM", SIGTERM},
    {"CHLD", SIGCHLD},
    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    {"URG", SIGURG},
    {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},
    {"IO", SIGIO},
    {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

/* TERM, SIGTERM, term, or a number; -1 when none of these. */
static int parse_signal(const char *s)
{
    long long n;

    if (parse_number(s, 1, SIGRTMAX, &n) == 0)
        return (int)n;
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
        if (strcasecmp(s, signal_names[i].name) == 0)
            return signal_names[i].sig;
    return -1;
}

const char *lwlock_signal_name(int sig, char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
        if (signal_names[i].sig == sig) {
            snprintf(buf, size, "SIG%s", signal_names[i].name);
            return buf;
        }
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

/* -r's or $LWLOCK_REDIS's value; 0, or the usage status after a message
 * naming it as `what`. */
static int parse_redis(const char *s, const char *what, struct lwlock_options *o, FILE *err)
{
    char why[300], shown[600];

    if (redis_url_parse(s, &o->redis, why, sizeof why)) {
        /* A password must not end up in a terminal's scrollback or a log. */
        redis_url_redact(s, shown, sizeof shown);
        return usage_error(err, "invalid %s '%s': %s", what, shown, why);
    }
    return 0;
}

enum { OPT_VERSION = 256,
       OPT_REPLICAS,
       OPT_WARN_SIGNAL,
       OPT_MAX_HOLD,
       OPT_PREFIX,
       OPT_MIN_HOLD,
       OPT_STATUS,
       OPT_OBSERVE,
       OPT_ELECT,
       OPT_VALUE,
       OPT_LOCK_DELAY,
       OPT_JSON,
       OPT_READ,
       OPT_WRITE,
       OPT_FAIR,
       OPT_MULTI,
       OPT_PERMITS,
       OPT_SET_PERMITS,
       OPT_FENCE };

static const struct option long_options[] = {
    {"redis", required_argument, NULL, 'r'},
    {"cluster", required_argument, NULL, 'c'},
    {"wait", required_argument, NULL, 'w'},
    {"lease", required_argument, NULL, 'l'},
    {"watchdog", required_argument, NULL, 'W'},
    {"signal", required_argument, NULL, 's'},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"warn-signal", required_argument, NULL, OPT_WARN_SIGNAL},
    {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
    {"min-hold", required_argument, NULL, OPT_MIN_HOLD},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"status", no_argument, NULL, OPT_STATUS},
    {"observe", no_argument, NULL, OPT_OBSERVE},
    {"elect", required_argument, NULL, OPT_ELECT},
    {"value", required_argument, NULL, OPT_VALUE},
    {"lock-delay", required_argument, NULL, OPT_LOCK_DELAY},
    {"read", no_argument, NULL, OPT_READ},
    {"write", no_argument, NULL, OPT_WRITE},
    {"fair", no_argument, NULL, OPT_FAIR},
    {"multi", no_argument, NULL, OPT_MULTI},
    {"fence", no_argument, NULL, OPT_FENCE},
    {"json", no_argument, NULL, OPT_JSON},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"nonblock", no_argument, NULL, 'n'},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    /* Permits */
    {"permits", required_argument, NULL, OPT_PERMITS},
    {"set-permits", required_argument, NULL, OPT_SET_PERMITS},
    TLS_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* One call's state. */
struct parse {
    struct lwlock_options *o;
    FILE *err;
    int seen_lease, seen_watchdog, seen_delay;
};

/* A duration option's value (duration.h: a bare number is ms) within
 * min_ms..MAX_MS into *ms: 0, or -1 after a message naming the option,
 * its range and the forms. */
static int duration_opt(struct parse *p, const char *opt, const char *arg, uint64_t min_ms,
                        uint64_t *ms)
{
    char range[100];

    if (duration_parse(arg, 1, min_ms, MAX_MS, ms) == 0)
        return 0;
    usage_error(p->err, "invalid %s '%s': %s%s (%s; a bare number is ms)", opt, arg,
                strcmp(opt, "-w/--wait") ? "" : "-1, or ",
                duration_range(min_ms, MAX_MS, range, sizeof range), DURATION_FORMS);
    return -1;
}

/* Whether -w's value is a bare number other than 0: refused, since
 * flock(1)'s "-w 60" is a minute and a bare number elsewhere in lwlock is
 * milliseconds; a script carried over from either would silently wait
 * 1000 times too long or too short. */
static int bare_wait(const char *arg)
{
    size_t n = strspn(arg, "0123456789");

    return n && (!arg[n] || (arg[n] == '.' && arg[n + 1 + strspn(arg + n + 1, "0123456789")] == 0)) &&
           strspn(arg, "0.") != strlen(arg);
}

/* --permits N (1..) or --set-permits N (0..): 0, or the usage status. */
static int take_permits(struct parse *p, int c, const char *arg)
{
    long long v;

    if (parse_number(arg, c == OPT_PERMITS, LWLOCK_MAX_PERMITS, &v))
        return usage_error(p->err, "invalid %s '%s' (%d to %lld)",
                           c == OPT_PERMITS ? "--permits" : "--set-permits", arg,
                           c == OPT_PERMITS, LWLOCK_MAX_PERMITS);
    *(c == OPT_PERMITS ? &p->o->permits : &p->o->set_permits) = v;
    return 0;
}

/* One option with its value; 0, or an exit status. */
static int take_option(struct parse *p, int c, const char *arg)
{
    struct lwlock_options *o = p->o;
    char why[400];
    long long v;
    uint64_t u;

    switch (tls_opt_take(&o->tls, c, arg, why, sizeof why)) {
    case 1:
        return 0;
    case -1:
        return usage_error(p->err, "%s", why);
    }
    if (c == OPT_PERMITS || c == OPT_SET_PERMITS)
        return take_permits(p, c, arg);
    switch (c) {
    case 'r':
        return parse_redis(arg, "Redis address", o, p->err);
    case 'c':
        if (redis_seeds_parse(arg, &o->cluster, why, sizeof why))
            return usage_error(p->err, "invalid cluster seeds '%s': %s", arg, why);
        return 0;
    case 'w':
        if (strcmp(arg, "-1") == 0) {
            o->wait_ms = -1;
            return 0;
        }
        if (bare_wait(arg) && strchr(arg, '.')) /* no fraction of a ms */
            return usage_error(p->err,
                               "-w/--wait '%s': give a unit, %ss: flock(1)'s -w counts "
                               "seconds, lwlock's other durations milliseconds",
                               arg, arg);
        if (bare_wait(arg))
            return usage_error(p->err,
                               "-w/--wait '%s': give a unit, %ss or %sms: flock(1)'s -w counts "
                               "seconds, lwlock's other durations milliseconds",
                               arg, arg, arg);
        if (duration_opt(p, "-w/--wait", arg, 0, &u))
            return EXIT_USAGE;
        o->wait_ms = (long long)u;
        return 0;
    case 'l':
    case 'W':
        if (duration_opt(p, c == 'l' ? "-l/--lease" : "-W/--watchdog", arg, LW_MIN_LEASE_MS, &u))
            return EXIT_USAGE;
        *(c == 'l' ? &p->seen_lease : &p->seen_watchdog) = 1;
        *(c == 'l' ? &o->lease_ms : &o->watchdog_ms) = (uint32_t)u;
        return 0;
    case 's':
        if ((o->lost_sig = parse_signal(arg)) < 0)
            return usage_error(p->err, "invalid signal '%s'", arg);
        return 0;
    case OPT_WARN_SIGNAL:
        if ((o->warn_sig = parse_signal(arg)) < 0)
            return usage_error(p->err, "invalid warning signal '%s'", arg);
        return 0;
    case OPT_MAX_HOLD:
        if (duration_opt(p, "--max-hold", arg, 1, &u))
            return EXIT_USAGE;
        o->max_hold_ms = u;
        return 0;
    case OPT_MIN_HOLD:
        if (duration_opt(p, "--min-hold", arg, 1, &u))
            return EXIT_USAGE;
        o->min_hold_ms = u;
        return 0;
    case 'v':
        o->verbose = 1;
        return 0;
    case 'q':
        o->quiet = 1;
        return 0;
    case OPT_PREFIX:
        o->prefix = arg;
        return 0;
    case OPT_STATUS:
        o->status = 1;
        return 0;
    case OPT_OBSERVE:
        o->observe = 1;
        return 0;
    case OPT_ELECT:
        o->elect = 1;
        o->name = arg;
        return 0;
    case OPT_VALUE:
        if (strlen(arg) > LW_ELECTION_VALUE_MAX)
            return usage_error(p->err, "--value must be at most %u bytes",
                               (unsigned)LW_ELECTION_VALUE_MAX);
        o->value = arg;
        return 0;
    case OPT_LOCK_DELAY:
        if (duration_opt(p, "--lock-delay", arg, 0, &u))
            return EXIT_USAGE;
        o->lock_delay_ms = (uint32_t)u;
        p->seen_delay = 1;
        return 0;
    case OPT_JSON:
        o->json = 1;
        return 0;
    case OPT_FENCE:
        o->fence = 1;
        return 0;
    case OPT_READ:
    case OPT_WRITE:
    case OPT_FAIR:
    case OPT_MULTI: {
        enum lwlock_kind k = c == OPT_READ    ? LWLOCK_READ
                             : c == OPT_WRITE ? LWLOCK_WRITE
                             : c == OPT_FAIR  ? LWLOCK_FAIR
                                              : LWLOCK_MULTI;

        if (o->kind != LWLOCK_PLAIN && o->kind != k)
            return usage_error(p->err, "--read, --write, --fair and --multi exclude each other");
        o->kind = k;
        return 0;
    }
    case 'n':
        o->wait_ms = 0;
        return 0;
    case 'E':
        if (parse_number(arg, 0, 255, &v))
            return usage_error(p->err, "invalid -E/--conflict-exit-code '%s' (0 to 255)", arg);
        o->conflict_exit = (int)v;
        return 0;
    case OPT_REPLICAS:
        if (parse_number(arg, 0, LWLOCK_MAX_REPLICAS, &v))
            return usage_error(p->err, "invalid replicas '%s' (0 to %d)", arg,
                               LWLOCK_MAX_REPLICAS);
        o->replicas = (uint32_t)v;
        return 0;
    default:
        return EXIT_USAGE;
    }
}

/* The defaults, with the address from $LWLOCK_REDIS (env) if set. */
static int default_options(struct lwlock_options *o, const char *env, FILE *err)
{
    memset(o, 0, sizeof *o);
    o->watchdog_ms = LW_DEFAULT_WATCHDOG_TIMEOUT_MS;
    o->lost_sig = SIGTERM;
    o->conflict_exit = EXIT_LOCKED;
    o->set_permits = -1;
    return parse_redis(env && *env ? env : DEFAULT_REDIS, "LWLOCK_REDIS", o, err);
}

/* The options before NAME: -1 at NAME, else the exit status. */
static int take_options(struct parse *p, int argc, char **argv, FILE *out)
{
    int c, rc;

    /* 0, not 1: see lwlock_args.h.  '+': options end at NAME, so
     * COMMAND's own are left alone; ':': report a missing value as ':'
     * and print our own messages. */
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:r:c:w:l:W:s:E:nqvVh", long_options, NULL)) != -1) {
        if (c == 'h') {
            usage(out);
            return 0;
        }
        if (c == OPT_VERSION || c == 'V') { /* -V: flock(1)'s */
            fputs("lwlock " LWLOCK_VERSION "\n", out);
            return 0;
        }
        if (c == ':')
            return usage_error(p->err, "option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            return optopt ? usage_error(p->err, "unknown option '-%c'", optopt)
                          : usage_error(p->err, "unknown option '%s'", argv[optind - 1]);
        if ((rc = take_option(p, c, optarg)))
            return rc;
    }
    return -1;
}

/* o->key from the prefix and NAME: -1, or the usage status. */
static int make_key(struct lwlock_options *o, const char *name, FILE *err)
{
    int n;

    if (name[0] == 0 || strlen(name) > LW_LOCK_NAME_MAX)
        return usage_error(err, "NAME must be 1 to %u bytes", LW_LOCK_NAME_MAX);
    if (o->prefix && !o->prefix[0])
        return usage_error(err, "an empty --prefix (or LWLOCK_PREFIX): leave it out instead");
    n = snprintf(o->key, sizeof o->key, "%s%s%s", o->prefix ? o->prefix : "",
                 o->prefix ? ":" : "", name);
    if (n < 0 || (size_t)n >= sizeof o->key)
        return usage_error(err, "PREFIX:NAME must be at most %u bytes", LW_LOCK_NAME_MAX);
    o->name = name;
    return -1;
}

/* Whether the name of len bytes at s is among the first n names of the
 * comma list at list. */
static int named_before(const char *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const char *comma = strchr(list, ',');
        size_t l = comma ? (size_t)(comma - list) : strlen(list);

        if (l == len && memcmp(list, s, len) == 0)
            return 1;
        list = comma + 1; /* i < n: there is a comma */
    }
    return 0;
}

/* --multi's NAME: names separated by commas, none empty nor twice (a set
 * holds each name once: the library refuses a list with one twice), each
 * with the prefix within the name limit, at most LW_MULTI_MAX.  -1, or
 * the usage status. */
static int check_names(struct lwlock_options *o, FILE *err)
{
    size_t pre = o->prefix ? strlen(o->prefix) + 1 : 0;
    const char *s = o->name;

    o->nnames = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);

        if (len == 0)
            return usage_error(err, "--multi: an empty name in %s", o->name);
        if (pre + len > LW_LOCK_NAME_MAX)
            return usage_error(err, "--multi: PREFIX:NAME must be at most %u bytes each",
                               LW_LOCK_NAME_MAX);
        if (named_before(o->name, o->nnames, s, len))
            return usage_error(err, "--multi: %.*s is named twice in %s", (int)len, s, o->name);
        if (++o->nnames > LW_MULTI_MAX)
            return usage_error(err, "--multi: at most %u names", LW_MULTI_MAX);
        if (!comma)
            return -1;
        s = comma + 1;
    }
}

/*
 * What goes with --permits and --set-permits: -1, or the usage status.
 * --min-hold is refused with --permits: a permit left to expire would
 * keep one of N slots taken for the rest of the time, not say "this job
 * ran"; --replicas: the semaphore's calls do not wait for replicas.
 */
static int check_permits(const struct lwlock_options *o, FILE *err)
{
    if (o->permits && o->set_permits >= 0)
        return usage_error(err, "--permits and --set-permits exclude each other");
    if (!o->permits && o->set_permits < 0)
        return -1;
    if (o->status)
        return usage_error(err, "--status takes no --permits or --set-permits (it says who "
                                "holds permits of NAME already)");
    if (o->permits && o->min_hold_ms)
        return usage_error(err, "--min-hold does not go with --permits: a permit is "
                                "released when COMMAND ends");
    if (o->replicas)
        return usage_error(err, "--replicas does not go with permits");
    return -1;
}

/*
 * --elect NAME [--value V] [--lock-delay D] COMMAND: NAME is --elect's
 * (the lease and the delay at most LW_MAX_LEASE_MS), COMMAND the first
 * word after the options.  Leadership is a lock of its own, renewed by
 * the watchdog (-W), its term the fencing token: no kind, permits,
 * --fence, fixed lease (it would end a leader's term at a deadline
 * nobody else sees), hold limits or replicas.  -1, or the usage status.
 */
static int elect_args(struct parse *p, int argc, char **argv)
{
    struct lwlock_options *o = p->o;
    char most[40];
    int rc;

    if (!o->elect)
        return usage_error(p->err, "%s goes with --elect", o->value ? "--value" : "--lock-delay");
    if (o->status || o->observe || o->json || o->kind != LWLOCK_PLAIN || o->permits ||
        o->set_permits >= 0 || o->fence || o->min_hold_ms || o->max_hold_ms || o->replicas ||
        p->seen_lease)
        return usage_error(p->err, "--elect campaigns for NAME alone: no --status, --observe, "
                                   "--json, --read, --write, --fair, --multi, --permits, "
                                   "--set-permits, --fence, --min-hold, --max-hold, "
                                   "--replicas or -l (leadership is renewed: -W)");
    if ((uint64_t)o->watchdog_ms + o->lock_delay_ms > LW_MAX_LEASE_MS)
        return usage_error(p->err, "-W's lease and --lock-delay together must be at most %s",
                           duration_format(LW_MAX_LEASE_MS, most, sizeof most));
    if ((rc = make_key(o, o->name, p->err)) >= 0)
        return rc;
    if (!o->value)
        o->value = "";
    if (optind >= argc)
        return usage_error(p->err, "missing COMMAND");
    o->command = argv + optind;
    return -1;
}

int lwlock_parse_args(int argc, char **argv, const char *env_redis, const char *env_prefix,
                      struct lwlock_options *o, FILE *out, FILE *err)
{
    struct parse p = {o, err, 0, 0};
    char why[300];
    int rc;

    if ((rc = default_options(o, env_redis, err)) || (rc = take_options(&p, argc, argv, out)) >= 0)
        return rc;
    if (p.seen_lease && p.seen_watchdog)
        return usage_error(err, "-l (a fixed lease) and -W (a renewed one) exclude each other");
    /* A fixed lease is never renewed: never at risk, and its end is
     * already the deadline. */
    if (p.seen_lease && o->warn_sig)
        return usage_error(err, "--warn-signal needs a renewed lease: a fixed one (-l) is "
                                "never at risk, it ends");
    if (p.seen_lease && o->max_hold_ms)
        return usage_error(err, "--max-hold needs a renewed lease: a fixed one (-l) is "
                                "already a deadline");
    if (o->min_hold_ms && o->max_hold_ms && o->min_hold_ms > o->max_hold_ms)
        return usage_error(err, "--min-hold is longer than --max-hold: a run is held at "
                                "least the one and at most the other");
    if (o->warn_sig && o->warn_sig == o->lost_sig)
        return usage_error(err, "--warn-signal %s is also the signal for a lost lock (-s): "
                                "COMMAND could not tell them apart",
                           lwlock_signal_name(o->warn_sig, why, sizeof why));
    if ((rc = check_permits(o, err)) >= 0)
        return rc;
    if (o->cluster.n && o->redis.sentinels.n)
        return usage_error(err, "-c (a cluster) and a redis-sentinel:// address exclude "
                                "each other");
    if (o->cluster.n && o->redis.db)
        return usage_error(err, "a cluster has only DB 0 (drop /%d from the Redis URL)",
                           o->redis.db);
    if (tls_opts_finish(&o->tls, o->redis.tls, why, sizeof why))
        return usage_error(err, "%s", why);
    if (!o->prefix && env_prefix && env_prefix[0])
        o->prefix = env_prefix;
    if (o->elect || o->value || p.seen_delay)
        return elect_args(&p, argc, argv);
    if (optind >= argc)
        return usage_error(err, "missing NAME");
    if ((rc = make_key(o, argv[optind], err)) >= 0)
        return rc;
    if (o->json && !o->status && !o->observe)
        return usage_error(err, "--json goes with --status or --observe");
    if (o->observe && (o->status || o->kind != LWLOCK_PLAIN || o->permits ||
                       o->set_permits >= 0 || o->fence))
        return usage_error(err, "--observe watches who leads NAME: no --status, --read, "
                                "--write, --fair, --multi, --permits, --set-permits or --fence");
    /* The library's lw_unlock_after() leaves only a lock to expire: a
     * read or write hold would be released at once, silently. */
    if (o->min_hold_ms && o->kind != LWLOCK_PLAIN)
        return usage_error(err, "--min-hold is for a plain lock: a read, write, fair or multi "
                                "lock cannot yet be left to expire (it would be released at "
                                "once)");
    if (o->status && o->kind != LWLOCK_PLAIN)
        return usage_error(err, "--status says what NAME holds, of any kind: no --read, "
                                "--write, --fair or --multi");
    if (o->fence && (o->kind == LWLOCK_READ || o->permits || o->set_permits >= 0 || o->status))
        return usage_error(err, "--fence draws a lock's fencing token: a read lock, permits "
                                "and --status have none");
    if ((o->permits || o->set_permits >= 0) && o->kind != LWLOCK_PLAIN)
        return usage_error(err, "--permits and --set-permits are a semaphore's: no --read, "
                                "--write, --fair or --multi");
    if (o->kind == LWLOCK_MULTI && (rc = check_names(o, err)) >= 0)
        return rc;
    /* The library's multi-locks do not wait for replicas (LW_ENOTSUP). */
    if (o->kind == LWLOCK_MULTI && o->replicas)
        return usage_error(err, "--replicas does not go with --multi");
    if (o->status || o->observe || o->set_permits >= 0) {
        if (optind + 1 < argc)
            return usage_error(err, "%s takes NAME only, no COMMAND",
                               o->status    ? "--status"
                               : o->observe ? "--observe"
                                            : "--set-permits");
        return -1;
    }
    if (optind + 1 >= argc)
        return usage_error(err, "missing COMMAND");
    o->command = argv + optind + 1;
    return -1;
}

int lwlock_check_env_files(struct lwlock_options *o, const char *sentinel_tls, FILE *err)
{
    char why[600];
    int plain = tls_sentinel_env(sentinel_tls, why, sizeof why);

    if (plain < 0 || tls_opts_files(&o->tls, why, sizeof why))
        return usage_error(err, "%s", why);
    o->plain_sentinels = plain;
    return -1;
}
