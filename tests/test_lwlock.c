/*
 * tests/test_lwlock.c - the lwlock tool, run as a process against a real
 * redis-server: exit statuses, COMMAND's environment, mutual exclusion of
 * two lwlocks, lost locks and fixed leases, signals passed on, bad usage;
 * permits of a semaphore (--permits: two at once, a third refused or
 * waiting, the id in the zset, a lost permit; --set-permits);
 * the warning signal of a lock at risk (through tests/fixtures/proxy.h,
 * which makes the link go silent), --max-hold, -v's log lines; against a
 * TLS-only server (certificates made by tests/fixtures/tls_certs.h):
 * verification failures exit 69 with the reason on one line, a plain
 * lwlock at the TLS port too, within the connect timeout; --sni,
 * --insecure, --cacertdir, mutual TLS and LWLOCK_REDIS=rediss://.
 *
 * Each run's stdout and stderr go to files in the test's temporary
 * directory; stderr is copied to the test's own afterwards, so that a
 * sanitizer's report from lwlock lands in the test log.  Every wait has a
 * deadline, after which the process is killed and the test fails.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "http_peer.h"
#include "lock_util.h"
#include "proc_util.h"
#include "proxy.h"
#include "tls_certs.h"
#include "wait_child.h"

static char addr[64];  /* 127.0.0.1:<the fixture's port> */

static void make_dir(void)
{
    make_test_dir("/tmp/lwlock-test-XXXXXX");
    setenv("LWT_LWLOCK", LWLOCK_PATH, 1);
}

static void setup_redis(void)
{
    server_start();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv.port);
    setenv("LWT_ADDR", addr, 1);
    make_dir();
}

static void teardown_redis(void)
{
    remove_test_dir();
    server_stop();
}

#define LWLOCK_TEST(name) \
    Test(lwlock, name, .init = setup_redis, .fini = teardown_redis, .timeout = 120)

/* Start prog with args and extra "K=V" settings, output to out and err. */
static pid_t start(const char *prog, const char *const *args, const char *const *env)
{
    return start_child(prog, args, env, "out", "err");
}

/* Copy the last run's stderr to ours (sanitizer reports included). */
static void echo_stderr(void)
{
    echo_file("err", "lwlock stderr");
}

static pid_t start_lwlock(const char *const *args)
{
    return start(LWLOCK_PATH, args, NULL);
}

static int run(const char *const *args)
{
    return run_lwlock(args, NULL);
}

/* Hold the key as another client would, for ms. */
static void hold_elsewhere(const char *name, int ms)
{
    char pexpire[64];
    redisReply *r = redis_server_command(&srv, "HSET %s other:1 1", name);

    cr_assert_not_null(r);
    freeReplyObject(r);
    snprintf(pexpire, sizeof pexpire, "%d", ms);
    r = redis_server_command(&srv, "PEXPIRE %s %s", name, pexpire);
    cr_assert_not_null(r);
    freeReplyObject(r);
}

/* ---- Usage ---- */

Test(lwlock_usage, bad_usage_exits_64_with_a_message, .init = make_dir, .fini = remove_test_dir,
     .timeout = 120)
{
    const char *const *bad[] = {
        ARGS("-x", "n", "true"),
        ARGS("--bogus", "n", "true"),
        ARGS("n"),
        ARGS("-w"),
        ARGS("-w", "abc", "n", "true"),
        ARGS("-w", "-2", "n", "true"),
        ARGS("-w", "5x", "n", "true"),
        ARGS("-w", " 5", "n", "true"),
        ARGS("-w", "99999999999ms", "n", "true"),
        ARGS("-l", "5", "n", "true"),
        ARGS("-l", "0", "n", "true"),
        ARGS("-W", "-1", "n", "true"),
        ARGS("-W", "2147483648", "n", "true"),
        ARGS("-l", "1000", "-W", "1000", "n", "true"),
        ARGS("-r", "localhost", "n", "true"),
        ARGS("-r", "localhost:0", "n", "true"),
        ARGS("-r", "localhost:65536", "n", "true"),
        ARGS("-r", ":6379", "n", "true"),
        ARGS("-r", "localhost:port", "n", "true"),
        ARGS("-s", "BOGUS", "n", "true"),
        ARGS("-s", "0", "n", "true"),
        ARGS("-s", "SIG", "n", "true"),
        ARGS("", "true"),
        ARGS("--replicas", "-1", "n", "true"),
        ARGS("--replicas", "1001", "n", "true"),
        ARGS("--replicas", "one", "n", "true"),
        ARGS("--replicas"),
        ARGS("--warn-signal", "BOGUS", "n", "true"),
        ARGS("--warn-signal", "0", "n", "true"),
        ARGS("--warn-signal"),
        ARGS("--max-hold", "0", "n", "true"),
        ARGS("--max-hold", "-5", "n", "true"),
        ARGS("--max-hold", "1.0005s", "n", "true"),
        ARGS("--max-hold", "2147483648", "n", "true"),
        ARGS("--max-hold", "25d", "n", "true"),
        ARGS("-w", "1m1h", "n", "true"),
        ARGS("-w", "30S", "n", "true"),
        ARGS("-w", "1s1s", "n", "true"),
        ARGS("-w", "s", "n", "true"),
        ARGS("-W", "9ms", "n", "true"),
        ARGS("-l", "1 s", "n", "true"),
        ARGS("-E", "256", "n", "true"),
        ARGS("-E", "-1", "n", "true"),
        ARGS("-E", "x", "n", "true"),
        ARGS("-E"),
        ARGS("-q5", "n", "true"),
        ARGS("--prefix", "", "n", "true"),
        ARGS("--prefix"),
        ARGS("--min-hold", "0", "n", "true"),
        ARGS("--min-hold", "1x", "n", "true"),
        ARGS("--min-hold"),
        ARGS("--status", "n", "true"),
        ARGS("--json", "n", "true"),
        ARGS("--status"),
        ARGS("-w", "-1s", "n", "true"),
        ARGS("--max-hold"),
        ARGS("-v5", "n", "true"),
        ARGS("--read", "--write", "n", "true"),
        ARGS("--write", "--read", "n", "true"),
        ARGS("--multi", "a,,b", "true"),
        ARGS("--multi", ",a", "true"),
        ARGS("--multi", "a,", "true"),
        ARGS("--multi", "--read", "a,b", "true"),
        ARGS("--fair", "--multi", "a,b", "true"),
        ARGS("--multi", "--min-hold", "1s", "a,b", "true"),
        ARGS("--multi", "--status", "a,b"),
        ARGS("--multi", "--permits", "2", "a,b", "true"),
        ARGS("--multi", "a,a", "true"),
        ARGS("--multi", "a,b,c,b", "true"),
        ARGS("--prefix", "p", "--multi", "a,b,a", "true"),
        ARGS("--multi", "--replicas", "1", "a,b", "true"),
        ARGS("--multi", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,A,B,C,D,E,F,G,H,I,"
                        "J,K,L,M,N,O,P,Q,R,S,T,U,V,W,X,Y,Z,0,1,2,3,4,5,6,7,8,9,_,+,=",
             "true"),
        ARGS("--read", "--status", "n"),
        ARGS("--read=x", "n", "true"),
        ARGS("--write", "--min-hold", "1s", "n", "true"),
    };
    const struct {
        const char *const *args;
        const char *says;
    } said[] = {
        /* The warning would be the loss's signal (-s's, TERM by default). */
        {ARGS("--warn-signal", "TERM", "n", "true"), "also the signal for a lost lock"},
        {ARGS("-s", "usr1", "--warn-signal", "SIGUSR1", "n", "true"), "SIGUSR1 is also"},
        /* A fixed lease is never at risk, and is its own deadline. */
        {ARGS("-l", "1000", "--warn-signal", "USR1", "n", "true"), "--warn-signal needs a renewed"},
        {ARGS("--max-hold", "500", "-l", "1000", "n", "true"), "--max-hold needs a renewed"},
        {ARGS("--max-hold", "5x", "n", "true"),
         "invalid --max-hold '5x': 1ms to 24d20h31m23s647ms (250ms, 1.5s, 30s"},
        {ARGS("-w", "2x", "n", "true"), "invalid -w/--wait '2x': -1, or 0ms to 24d20h31m23s647ms"},
        /* flock(1)'s -w 60 is a minute: a bare number is refused there. */
        {ARGS("-w", "60", "n", "true"),
         "-w/--wait '60': give a unit, 60s or 60ms: flock(1)'s -w counts seconds"},
        {ARGS("--wait", "1.5", "n", "true"), "give a unit, 1.5s: flock(1)'s"},
        {ARGS("--watchdog=25d", "n", "true"), "invalid -W/--watchdog '25d': 10ms to"},
        {ARGS("-l", "5", "n", "true"), "a bare number is ms"},
        {ARGS("--warn-signal", "SIGNAL", "n", "true"), "invalid warning signal 'SIGNAL'"},
        /* A set holds each name once (the library refuses the list). */
        {ARGS("--multi", "x,y,x", "true"), "--multi: x is named twice in x,y,x"},
        {ARGS("--multi", "--replicas", "2", "x,y", "true"), "--replicas does not go with --multi"},
    };
    int code;

    code = run((const char *[]){NULL});
    cr_assert_eq(code, 64, "no arguments: %d", code);
    cr_assert(stderr_has("lwlock: "));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        code = run(bad[i]);
        cr_assert_eq(code, 64, "case %zu (%s ...): %d", i, bad[i][0], code);
        cr_assert(stderr_has("lwlock: "), "case %zu: a message", i);
    }
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        code = run(said[i].args);
        cr_assert_eq(code, 64, "said case %zu: %d", i, code);
        cr_assert(stderr_has(said[i].says), "said case %zu: no '%s'", i, said[i].says);
    }
    {
        char name[LW_LOCK_NAME_MAX];

        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = 0;
        cr_assert_eq(run(ARGS("--prefix", "ab", name, "true")), 64, "PREFIX:NAME too long");
        cr_assert(stderr_has("PREFIX:NAME must be at most"));
        cr_assert_eq(run_lwlock(ARGS(name, "true"), ARGS("LWLOCK_PREFIX=a")), 64);
        cr_assert(stderr_has("PREFIX:NAME must be at most"));
    }
    code = run_lwlock(ARGS("n", "true"), ARGS("LWLOCK_REDIS=nowhere"));
    cr_assert_eq(code, 64, "a bad LWLOCK_REDIS: %d", code);
    cr_assert(stderr_has("LWLOCK_REDIS"));
}

/* The address forms (-r, LWLOCK_REDIS) and cluster seeds (-c): each bad
 * one is refused with 64 and a message that says what is wrong. */
Test(lwlock_usage, bad_addresses_say_why, .init = make_dir, .fini = remove_test_dir, .timeout = 120)
{
    static const struct {
        const char *opt, *value, *says;
    } bad[] = {
        {"-r", "redis://", "no HOST"},
        {"-r", "redis://:6379", "no HOST"},
        {"-r", "redis://:@h", "empty PASSWORD"},
        {"-r", "redis://secret@h", "[USER]:PASSWORD@"},
        {"-r", "redis://h:0", "PORT '0'"},
        {"-r", "redis://h:65536", "PORT '65536'"},
        {"-r", "redis://h/db1", "DB 'db1'"},
        {"-r", "redis://h/65536", "DB '65536'"},
        {"-r", "redis://h/1?timeout=5", "DB '1?timeout=5'"},
        {"-r", "redis://%4:pw@h", "two hex digits"},
        {"-r", "redis://u:p%00w@h", "NUL"},
        {"-r", "rediss://", "no HOST after rediss://"},
        {"-r", "rediss://h/x", "DB 'x'"},
        {"-r", "REDISS://h:0", "PORT '0'"},
        {"-r", "redisss://h", "unknown scheme 'redisss://'"},
        {"-r", "http://h", "unknown scheme"},
        {"-r", "h", "no ':PORT'"},
        {"-r", "redis://[::1", "'['"},
        {"--cluster", "", "empty seed"},
        {"-c", "127.0.0.1:7000,", "empty seed"},
        {"-c", "127.0.0.1:7000,,127.0.0.1:7001", "empty seed"},
        {"-c", "127.0.0.1", "seed '127.0.0.1'"},
        {"-c", "127.0.0.1:70000", "PORT '70000'"},
        {"-c", "redis://127.0.0.1:7000", "seeds are HOST:PORT"},
        {"-r", "redis-sentinel://127.0.0.1:26379", "no #MASTER"},
        {"-r", "redis-sentinel://127.0.0.1:26379#", "empty MASTER"},
        {"-r", "redis-sentinel://h#two words", "blank"},
        {"-r", "redis-sentinel://#m", "no HOST"},
        {"-r", "redis-sentinel:///1#m", "no HOST"},
        {"-r", "redis-sentinel://h1,,h2#m", "empty sentinel"},
        {"-r", "redis-sentinel://h1,#m", "empty sentinel"},
        {"-r", "redis-sentinel://h1,:26379#m", "sentinel ':26379': no HOST"},
        {"-r", "redis-sentinel://h1:26379,h2:0#m", "sentinel 'h2:0': PORT '0'"},
        {"-r", "redis-sentinel://h:x#m", "PORT 'x'"},
        {"-r", "redis-sentinel://h/db#m", "DB 'db'"},
        {"-r", "redis-sentinel://h/65536#m", "DB '65536'"},
        {"-r", "redis-sentinel://h?sentinelMasterId=m", "#MASTER, not ?sentinelMasterId="},
        {"-r", "redis-sentinel://h/0?timeout=1#m", "query options"},
        {"-r", "redis-sentinel://secret@h#m", "[USER]:PASSWORD@"},
        {"-r", "rediss-sentinel://h", "no #MASTER"},
        {"-r", "rediss-sentinel://#m", "no HOST after rediss-sentinel://"},
        {"-r", "rediss-sentinel://h1,,h2#m", "empty sentinel"},
    };
    char many[LW_MAX_CLUSTER_SEEDS * 20 + 40] = "";
    char sentinels[LW_MAX_SENTINELS * 20 + 40] = "redis-sentinel://";
    int code;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        code = run(ARGS(bad[i].opt, bad[i].value, "n", "true"));
        cr_assert_eq(code, 64, "%s '%s': %d", bad[i].opt, bad[i].value, code);
        cr_assert(stderr_has(bad[i].says), "%s '%s': no '%s' in the message", bad[i].opt,
                  bad[i].value, bad[i].says);
    }
    /* A bad URL's credentials are not shown. */
    code = run(ARGS("-r", "redis://u:hunter2@h/x", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("'redis://***@h/x'") && !stderr_has("hunter2"));
    code = run(ARGS("-r", "redis://hunter2@h", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(!stderr_has("hunter2"));
    code = run_lwlock(ARGS("n", "true"), ARGS("LWLOCK_REDIS=redis://h/x"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("invalid LWLOCK_REDIS 'redis://h/x': DB 'x'"));

    /* A cluster has one database. */
    code = run(ARGS("-c", "127.0.0.1:7000", "-r", "redis://:pw@h/2", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("only DB 0"));

    /* At most LW_MAX_CLUSTER_SEEDS seeds (duplicates count once). */
    for (unsigned i = 0; i <= LW_MAX_CLUSTER_SEEDS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s127.0.0.1:%u",
                 i ? "," : "", 7000 + i);
    code = run(ARGS("-c", many, "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("more than"));

    /* At most LW_MAX_SENTINELS sentinels. */
    for (unsigned i = 0; i <= LW_MAX_SENTINELS; i++)
        snprintf(sentinels + strlen(sentinels), sizeof sentinels - strlen(sentinels),
                 "%s127.0.0.1:%u", i ? "," : "", 26379 + i);
    strcat(sentinels, "#m");
    code = run(ARGS("-r", sentinels, "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("more than 64 sentinels"));

    /* Sentinel or cluster, not both; and no password in the messages, even
     * one holding a '#' with no #MASTER after it. */
    code = run(ARGS("-c", "127.0.0.1:7000", "-r", "redis-sentinel://h#m", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("exclude each other"));
    code = run(ARGS("-r", "redis-sentinel://:hunter2@h:0#m", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("'redis-sentinel://***@h:0#m'") && !stderr_has("hunter2"));
    code = run(ARGS("-r", "redis-sentinel://:hun#ter2@h", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("%23") && !stderr_has("ter2"));
    code = run_lwlock(ARGS("n", "true"), ARGS("LWLOCK_REDIS=redis-sentinel://h"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("invalid LWLOCK_REDIS 'redis-sentinel://h': no #MASTER"));
}

/*
 * A good redis-sentinel:// address reaches the client: where nobody
 * listens, lwlock exits 69 naming the master and the sentinels, and
 * COMMAND does not run.  (The end-to-end runs with real sentinels are the
 * library's tests.)
 */
Test(lwlock_usage, sentinel_address_reaches_the_client, .init = make_dir, .fini = remove_test_dir,
     .timeout = 60)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), code;
    char url[128], says[128];

    /* A port the kernel just handed out, closed again: nobody listens. */
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    snprintf(url, sizeof url, "redis-sentinel://:pw@127.0.0.1:%d,[::1]:%d/2#the-master",
             ntohs(sa.sin_port), ntohs(sa.sin_port));
    snprintf(says, sizeof says, "master the-master of the sentinels at 127.0.0.1:%d,...",
             ntohs(sa.sin_port));
    code = run(ARGS("-r", url, "-w", "0", "job", "touch", "ran"));
    cr_assert_eq(code, 69, "%d", code);
    cr_assert(stderr_has(says), "no '%s'", says);
    cr_assert_not(exists("ran"));
}

/* Files the TLS flags can name, in the test directory: ca.pem (empty:
 * only the tools' checks read it) and the directory cadir. */
static void make_tls_files(void)
{
    char path[512];
    int fd = open(path_in_dir("ca.pem", path, sizeof path), O_WRONLY | O_CREAT, 0600);

    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(mkdir(path_in_dir("cadir", path, sizeof path), 0700), 0);
}

/* The TLS flags (redis-cli's): each bad use is refused with 64 and a
 * message that says why, before anything runs. */
Test(lwlock_usage, bad_tls_flags_say_why, .init = make_dir, .fini = remove_test_dir,
     .timeout = 120)
{
    const struct {
        const char *const *args;
        const char *says;
    } bad[] = {
        {ARGS("--cacert", "ca.pem"), "--cacert needs --tls"},
        {ARGS("--cacertdir", "cadir"), "--cacertdir needs --tls"},
        {ARGS("--sni", "redis.test"), "--sni needs --tls"},
        {ARGS("--insecure"), "--insecure needs --tls"},
        {ARGS("-r", "redis://h:1", "--cert", "ca.pem", "--key", "ca.pem"), "--cert needs --tls"},
        {ARGS("--tls", "--cert", "ca.pem"), "--cert needs --key"},
        {ARGS("-r", "rediss://h:1", "--key", "ca.pem"), "--key needs --cert"},
        {ARGS("-r", "rediss-sentinel://h#m", "--cert", "ca.pem"), "--cert needs --key"},
        {ARGS("--tls", "--cacert", "missing.pem"), "--cacert missing.pem: No such file"},
        {ARGS("--tls", "--cacert", "cadir"), "--cacert cadir: a directory"},
        {ARGS("--tls", "--cacertdir", "ca.pem"), "--cacertdir ca.pem: not a directory"},
        {ARGS("--tls", "--cert", "missing.pem", "--key", "ca.pem"), "--cert missing.pem"},
        {ARGS("--tls", "--cert", "ca.pem", "--key", "missing.pem"), "--key missing.pem"},
        {ARGS("--tls", "--cacert", ""), "--cacert needs a value"},
        {ARGS("--tls", "--sni", "a b"), "--sni NAME holds a blank"},
        {ARGS("--tls", "--cacert"), "'--cacert' needs a value"},
    };
    const char *argv[16];
    int code;

    make_tls_files();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = 0;

        for (; bad[i].args[n]; n++)
            argv[n] = bad[i].args[n];
        if (strcmp(argv[n - 1], "--cacert")) { /* not the one missing its value */
            argv[n++] = "n";
            argv[n++] = "touch";
            argv[n++] = "ran";
        }
        argv[n] = NULL;
        code = run(argv);
        cr_assert_eq(code, 64, "case %zu: %d", i, code);
        cr_assert(stderr_has(bad[i].says), "case %zu: no '%s' in the message", i, bad[i].says);
        cr_assert(stderr_has("lwlock: ") && stderr_has("Try 'lwlock --help'"), "case %zu", i);
        cr_assert_not(exists("ran"), "case %zu: COMMAND ran", i);
    }

    /* -r replaces $LWLOCK_REDIS, its TLS with it. */
    code = run_lwlock(ARGS("-r", "redis://h:1", "--cacert", "ca.pem", "n", "true"),
                      ARGS("LWLOCK_REDIS=rediss://h:1"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("--cacert needs --tls"));
    /* LWLOCK_SENTINEL_TLS: 0 or unset. */
    code = run_lwlock(ARGS("-r", "rediss-sentinel://h#m", "n", "true"),
                      ARGS("LWLOCK_SENTINEL_TLS=1"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("LWLOCK_SENTINEL_TLS must be 0"));
    /* No password in the messages. */
    code = run(ARGS("-r", "rediss://:hunter2@h/x", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("'rediss://***@h/x'") && !stderr_has("hunter2"));
    code = run(ARGS("-r", "rediss-sentinel://:hunter2@h", "n", "true"));
    cr_assert_eq(code, 64);
    cr_assert(stderr_has("'rediss-sentinel://***@h'") && !stderr_has("hunter2"));
}

/*
 * The TLS forms and flags that are good reach the client: where nobody
 * listens, lwlock exits 69 with one line naming the address (the
 * client's last error when it has one: the TLS reason, say), and COMMAND
 * does not run.  (Against TLS servers: lwlock_tls, below.)
 */
Test(lwlock_usage, tls_forms_reach_the_client, .init = make_dir, .fini = remove_test_dir,
     .timeout = 120)
{
    char plain[64], url[64], tls[64], pw[80], sentinel[80], env[100], at[32];
    int port = closed_port(), code;

    snprintf(plain, sizeof plain, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    snprintf(tls, sizeof tls, "rediss://127.0.0.1:%d", port);
    snprintf(pw, sizeof pw, "rediss://:pw@127.0.0.1:%d/2", port);
    snprintf(sentinel, sizeof sentinel, "rediss-sentinel://127.0.0.1:%d#m", port);
    snprintf(at, sizeof at, "127.0.0.1:%d", port);
    make_tls_files();
    {
        const char *const *good[] = {
            ARGS("-r", tls, "--cacert", "ca.pem", "--sni", "redis.test", "n", "touch", "ran"),
            /* As redis-cli: --insecure with --cacert is allowed. */
            ARGS("--tls", "-r", plain, "--insecure", "--cacert", "ca.pem", "n", "touch", "ran"),
            ARGS("--tls", "--cacertdir", "cadir", "--cert", "ca.pem", "--key", "ca.pem", "-r",
                 plain, "n", "touch", "ran"),
            /* --tls makes a redis:// address TLS, as redis-cli's. */
            ARGS("--tls", "-r", url, "n", "touch", "ran"),
            ARGS("-r", sentinel, "--insecure", "n", "touch", "ran"),
            ARGS("--tls", "-c", plain, "n", "touch", "ran"),
        };

        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            code = run(good[i]);
            cr_assert_eq(code, 69, "case %zu: %d", i, code);
            cr_assert(stderr_has(at), "case %zu: no '%s' in the message", i, at);
            cr_assert(stderr_one_line(), "case %zu: not one line", i);
            cr_assert_not(exists("ran"), "case %zu: COMMAND ran", i);
        }
    }
    snprintf(env, sizeof env, "LWLOCK_REDIS=%s", pw);
    code = run_lwlock(ARGS("n", "touch", "ran"), ARGS(env));
    cr_assert_eq(code, 69, "LWLOCK_REDIS=rediss://...: %d", code);
    cr_assert(stderr_has(at) && stderr_one_line() && !stderr_has(":pw@"));
    cr_assert_not(exists("ran"));
    /* Plain sentinels while the master is TLS. */
    code = run_lwlock(ARGS("-r", sentinel, "n", "touch", "ran"), ARGS("LWLOCK_SENTINEL_TLS=0"));
    cr_assert_eq(code, 69, "LWLOCK_SENTINEL_TLS=0: %d", code);
    cr_assert(stderr_has(at) && stderr_one_line());
    cr_assert_not(exists("ran"));
}

Test(lwlock_usage, help_and_version, .init = make_dir, .fini = remove_test_dir, .timeout = 60)
{
    char buf[16384];

    cr_assert_eq(run(ARGS("--version")), 0);
    cr_assert_str_eq(slurp("out", buf, sizeof buf), "lwlock " LWLOCK_VERSION "\n");
    cr_assert_eq(run(ARGS("-V")), 0, "-V, as flock(1)'s");
    cr_assert_str_eq(slurp("out", buf, sizeof buf), "lwlock " LWLOCK_VERSION "\n");
    cr_assert_eq(run(ARGS("-h")), 0);
    cr_assert(strstr(slurp("out", buf, sizeof buf), "Usage: lwlock"));
    cr_assert_eq(run(ARGS("--help")), 0);
    cr_assert(strstr(slurp("out", buf, sizeof buf), "--watchdog"));
    for (const char *const *f = ARGS("--warn-signal SIG", "--max-hold DURATION", "-v, --verbose",
                                     "-w, --wait DURATION", "250ms, 1.5s, 30s, 5m", "-n, --nonblock",
                                     "-V, --version", "not for -w",
                                     "-E, --conflict-exit-code N", "-q, --quiet",
                                     "--min-hold DURATION", "--prefix PREFIX", "--status",
                                     "--json", "--elect NAME", "--value V", "LWLOCK_TERM",
                                     "--lock-delay DURATION");
         *f; f++)
        cr_assert(strstr(buf, *f), "no '%s' in the help", *f);
    /* The TLS flags, as redis-cli's. */
    for (const char *const *f = ARGS("--tls", "--cacert FILE", "--cacertdir DIR", "--cert FILE",
                                     "--key FILE", "--sni NAME", "--insecure", "rediss://",
                                     "rediss-sentinel://", "LWLOCK_SENTINEL_TLS=0");
         *f; f++)
        cr_assert(strstr(buf, *f), "no '%s' in the help", *f);
    /* One table of exit statuses, --status's among them. */
    for (const char *const *f = ARGS("exit 0 free, 1 held, 65 no lock nor\n", "  64  bad usage",
                                     "  65  NAME holds another kind of lock or another type",
                                     "--status: a value\n      that is no lock nor semaphore",
                                     "  69  Redis unreachable, refusing the connection",
                                     "  75  not acquired within the wait", "  79  lock lost");
         *f; f++)
        cr_assert(strstr(buf, *f), "no '%s' in the help", *f);
}

/* The durations both tools take (tools/duration.h). */
Test(lwlock_usage, durations_with_units)
{
    static const struct {
        const char *s;
        uint64_t ms;
    } good[] = {
        {"0", 0},
        {"250", 250},
        {"250ms", 250},
        {"30s", 30000},
        {"5m", 300000},
        {"1h", 3600000},
        {"1d", 86400000},
        {"1h30m", 5400000},
        {"1m30s", 90000},
        {"2s500ms", 2500},
        {"1d1h1m1s1ms", 90061001},
        {"24d20h31m23s647ms", 2147483647},
        {"2147483647", 2147483647},
        {"1.5s", 1500},
        {"0.25s", 250},
        {"2.5m", 150000},
        {"1h0.5m", 3630000},
        {"0.001s", 1},
        {"1.25d", 108000000},
    };
    static const char *const bad[] = {
        "",
        "ms",
        "1.5",
        "1.0005s",
        "1.5ms",
        "1.s",
        ".5s",
        "1.5.5s",
        "0.0000000000001s",
        "1s0.5s",
        "1 s",
        " 1s",
        "1s ",
        "-1",
        "+1s",
        "1S",
        "1sec",
        "1m1h",
        "1s1s",
        "1ms1s",
        "1y",
        "2147483648",
        "24d20h31m23s648ms",
        "25d",
        "99999999999999999999999",
        "1hh",
        "1h1",
    };
    char buf[64];
    uint64_t ms;

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ms = 7;
        cr_assert_eq(duration_parse(good[i].s, 1, 0, LW_MAX_LEASE_MS, &ms), 0, "'%s'", good[i].s);
        cr_assert_eq(ms, good[i].ms, "'%s': %llu", good[i].s, (unsigned long long)ms);
        /* What the messages print reads back. */
        cr_assert_eq(duration_parse(duration_format(ms, buf, sizeof buf), 1, 0, LW_MAX_LEASE_MS,
                                    &ms),
                     0, "'%s'", buf);
        cr_assert_eq(ms, good[i].ms, "'%s' formatted as '%s'", good[i].s, buf);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ms = 7;
        cr_assert_eq(duration_parse(bad[i], 1, 0, LW_MAX_LEASE_MS, &ms), -1, "'%s'", bad[i]);
        cr_assert_eq(ms, 7, "'%s' set the value", bad[i]);
    }
    /* The bounds, and a bare number in seconds (lwbench's --duration-s). */
    cr_assert_eq(duration_parse("9ms", 1, 10, 100, &ms), -1);
    cr_assert_eq(duration_parse("101", 1, 10, 100, &ms), -1);
    cr_assert_eq(duration_parse("90", 1000, 0, 86400000, &ms), 0);
    cr_assert_eq(ms, 90000);
    cr_assert_eq(duration_parse("86401", 1000, 0, 86400000, &ms), -1);
    cr_assert_str_eq(duration_format(0, buf, sizeof buf), "0ms");
    cr_assert_str_eq(duration_range(10, 3600000, buf, sizeof buf), "10ms to 1h");
}

/* ---- Exit statuses ---- */

LWLOCK_TEST(command_status_passes_through)
{
    char buf[256], path[512];
    int fd;

    cr_assert_eq(run(ARGS("-r", addr, "job", "sh", "-c", "exit 3")), 3);
    cr_assert_eq(run(ARGS("-r", addr, "job", "true")), 0);
    cr_assert_eq(run(ARGS("-r", addr, "job", "sh", "-c", "kill -KILL $$")), 128 + SIGKILL);
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0, "released after a killed COMMAND");

    /* Options after NAME are COMMAND's. */
    cr_assert_eq(run(ARGS("-r", addr, "job", "echo", "-w", "5")), 0);
    cr_assert_str_eq(slurp("out", buf, sizeof buf), "-w 5\n");

    /* As shells: 127 not found, 126 not executable; with a message. */
    cr_assert_eq(run(ARGS("-r", addr, "job", "/nonexistent/command")), 127);
    cr_assert(stderr_has("lwlock: /nonexistent/command: "));
    fd = open(path_in_dir("plain", path, sizeof path), O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(run(ARGS("-r", addr, "job", path)), 126);
    cr_assert(stderr_has("lwlock: "));
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0, "released after exec failed");
}

/* COMMAND sees LWLOCK_NAME; with --fence LWLOCK_TOKEN too, the name's
 * fencing token, increasing; without it no LWLOCK_TOKEN (a stale one
 * from lwlock's own environment removed) and no counter made. */
LWLOCK_TEST(environment_has_name_and_increasing_token)
{
    char env[300], buf[256], name[64];
    unsigned long long t1 = 0, t2 = 0;

    /* The address from the environment; a stale LWLOCK_TOKEN is replaced. */
    snprintf(env, sizeof env, "LWLOCK_REDIS=%s", addr);
    cr_assert_eq(run_lwlock(ARGS("env/job", "sh", "-c",
                                 "echo \"$LWLOCK_NAME ${LWLOCK_TOKEN-none}\" > \"$LWT_DIR/env\""),
                            ARGS(env, "LWLOCK_TOKEN=stale")),
                 0);
    cr_assert_str_eq(slurp("env", buf, sizeof buf), "env/job none\n");
    cr_assert_eq(redis_int("EXISTS %s", "redisson_lock_token:{env/job}"), 0, "a counter made");
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(run_lwlock(ARGS("--fence", "env/job", "sh", "-c",
                                     "echo \"$LWLOCK_NAME $LWLOCK_TOKEN\" > \"$LWT_DIR/env\""),
                                ARGS(env, "LWLOCK_TOKEN=stale")),
                     0);
        cr_assert_eq(sscanf(slurp("env", buf, sizeof buf), "%63s %llu", name, i ? &t2 : &t1), 2,
                     "got '%s'", buf);
        cr_assert_str_eq(name, "env/job");
        cr_assert_eq(redis_int("EXISTS %s", "env/job"), 0, "released when COMMAND exited");
    }
    cr_assert_gt(t1, 0);
    cr_assert_gt(t2, t1, "tokens %llu then %llu", t1, t2);
}

LWLOCK_TEST(held_elsewhere_exits_75)
{
    uint64_t t0;
    int code;

    hold_elsewhere("busy", 20000);
    t0 = now_ms();
    code = run(ARGS("-r", addr, "busy", "touch", "ran"));
    cr_assert_eq(code, 75, "-w 0: %d", code);
    cr_assert_lt(now_ms() - t0, 5000);
    cr_assert(stderr_has("lwlock: "));

    t0 = now_ms();
    code = run(ARGS("-w", "300ms", "-r", addr, "busy", "touch", "ran"));
    cr_assert_eq(code, 75, "-w 300: %d", code);
    cr_assert_geq(now_ms() - t0, 300, "waited %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert_lt(now_ms() - t0, 5000);
    cr_assert_not(exists("ran"), "COMMAND never ran");
    cr_assert_eq(redis_int("HGET %s other:1", "busy"), 1, "the holder is untouched");
}

/* For cron on many machines: -q says nothing when the lock is merely
 * held by another, -E picks the status then, -n is -w 0; a real failure
 * (Redis unreachable) is still said, with its own status. */
LWLOCK_TEST(quiet_contention_for_cron)
{
    char buf[256], unreachable[64];
    int code;

    hold_elsewhere("cronjob", 20000);
    code = run(ARGS("-q", "-E", "0", "-r", addr, "cronjob", "touch", "ran"));
    cr_assert_eq(code, 0, "-q -E 0: %d", code);
    cr_assert_str_eq(slurp("err", buf, sizeof buf), "", "-q said '%s'", buf);
    code = run(ARGS("--quiet", "--conflict-exit-code=3", "-w", "200ms", "-r", addr, "cronjob",
                    "touch", "ran"));
    cr_assert_eq(code, 3, "--conflict-exit-code=3 after a wait: %d", code);
    cr_assert_str_eq(slurp("err", buf, sizeof buf), "");
    /* Without -q the line is there; -n is -w 0 even after a -w. */
    code = run(ARGS("-w", "-1", "-n", "-E", "42", "-r", addr, "cronjob", "touch", "ran"));
    cr_assert_eq(code, 42, "-n -E 42: %d", code);
    cr_assert(stderr_has("lwlock: cronjob: "));
    cr_assert_not(exists("ran"), "COMMAND never ran");
    /* Free: -E plays no part, COMMAND's status is lwlock's. */
    cr_assert_eq(run(ARGS("-q", "-E", "0", "-r", addr, "freejob", "sh", "-c", "exit 5")), 5);
    /* Unreachable: still said, and 69 whatever -E. */
    snprintf(unreachable, sizeof unreachable, "127.0.0.1:%d", closed_port());
    code = run(ARGS("-q", "-E", "0", "-r", unreachable, "cronjob", "touch", "ran"));
    cr_assert_eq(code, 69, "-q, unreachable: %d", code);
    cr_assert(stderr_has("lwlock: cannot "));
}

/* --prefix P (or $LWLOCK_PREFIX): the lock is P:NAME in Redis, and
 * COMMAND's LWLOCK_NAME says so; --prefix wins over the environment. */
LWLOCK_TEST(prefix_names_the_key)
{
    char cmd[256], buf[256], env[300];
    int code;

    snprintf(cmd, sizeof cmd,
             "{ redis-cli -p %d EXISTS team:job; echo \"$LWLOCK_NAME\"; } > \"$LWT_DIR/seen\"",
             srv.port);
    code = run(ARGS("--prefix", "team", "-r", addr, "job", "sh", "-c", cmd));
    cr_assert_eq(code, 0, "--prefix: %d", code);
    cr_assert_str_eq(slurp("seen", buf, sizeof buf), "1\nteam:job\n");
    snprintf(env, sizeof env, "LWLOCK_REDIS=%s", addr);
    code = run_lwlock(ARGS("job", "sh", "-c", cmd), ARGS(env, "LWLOCK_PREFIX=team"));
    cr_assert_eq(code, 0, "LWLOCK_PREFIX: %d", code);
    cr_assert_str_eq(slurp("seen", buf, sizeof buf), "1\nteam:job\n");
    code = run_lwlock(ARGS("--prefix=other", "job", "sh", "-c", cmd),
                      ARGS(env, "LWLOCK_PREFIX=team"));
    cr_assert_eq(code, 0, "--prefix over LWLOCK_PREFIX: %d", code);
    cr_assert_str_eq(slurp("seen", buf, sizeof buf), "0\nother:job\n");
    cr_assert_eq(redis_int("EXISTS %s", "team:job"), 0, "released");
    /* Held under the prefixed name: the message names it. */
    hold_elsewhere("team:busy", 20000);
    cr_assert_eq(run(ARGS("--prefix", "team", "-r", addr, "busy", "true")), 75);
    cr_assert(stderr_has("lwlock: team:busy: "));
}

/* RedissonLock's tryLockInnerAsync, as Redisson sends it (tests/test_hot.c
 * has it too): nil when it got the lock, else the holder's PTTL. */
static const char redisson_try_lock[] =
    "if ((redis.call('exists', KEYS[1]) == 0) or "
    "(redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; end; "
    "return redis.call('pttl', KEYS[1]);";

/* Redisson's tryLock on name as another client: -1 when it got the lock
 * (nil), else the holder's PTTL it was told. */
static long long redisson_tries(const char *name)
{
    redisReply *r = redis_server_command(&srv, "EVAL %s 1 %s 30000 redisson-0-0-0:1",
                                         redisson_try_lock, name);
    long long v;

    cr_assert_not_null(r);
    cr_assert(r->type == REDIS_REPLY_NIL || r->type == REDIS_REPLY_INTEGER, "reply type %d",
              r->type);
    v = r->type == REDIS_REPLY_NIL ? -1 : r->integer;
    freeReplyObject(r);
    return v;
}

/*
 * --min-hold (ShedLock's lockAtLeastFor): a COMMAND that ends sooner
 * leaves the lock held until so long after it was acquired.  A second
 * lwlock started right after is refused, and Redisson (EXISTS, its
 * tryLock) sees it held; once the time is up the second one gets it.
 */
LWLOCK_TEST(min_hold_keeps_a_quick_job_held)
{
    uint64_t t0 = now_ms();
    long long pttl;
    int code;

    code = run(ARGS("--min-hold", "3s", "-r", addr, "nightly", "true"));
    cr_assert_eq(code, 0, "the first: %d", code);
    /* lwlock did not wait the min-hold out itself: the key outlives it. */
    pttl = redis_int("PTTL %s", "nightly");
    cr_assert(pttl > 0 && pttl <= 3000, "left with PTTL %lld", pttl);
    code = run(ARGS("-r", addr, "nightly", "touch", "ran"));
    cr_assert_eq(code, 75, "the late one: %d", code);
    cr_assert_not(exists("ran"));
    cr_assert_eq(redis_int("EXISTS %s", "nightly"), 1, "Redisson's isLocked");
    pttl = redisson_tries("nightly");
    cr_assert(pttl > 0 && pttl <= 3000, "Redisson's tryLock: PTTL %lld", pttl);
    cr_assert(wait_until(redis_int("EXISTS %s", "nightly") == 0, 8000), "never expired");
    cr_assert_geq(now_ms() - t0, 2900, "expired after %llu ms",
                  (unsigned long long)(now_ms() - t0));
    code = run(ARGS("-r", addr, "nightly", "touch", "ran"));
    cr_assert_eq(code, 0, "after the min-hold: %d", code);
    cr_assert(exists("ran"));

    /* A COMMAND that runs past it: released at once, as without. */
    code = run(ARGS("--min-hold", "100ms", "--max-hold", "1m", "-r", addr, "nightly", "sleep",
                    "0.3"));
    cr_assert_eq(code, 0, "%d", code);
    cr_assert_eq(redis_int("EXISTS %s", "nightly"), 0, "released at once");
    cr_assert_eq(redisson_tries("nightly"), -1, "Redisson gets it");

    /* At least, at most: the one no longer than the other. */
    cr_assert_eq(run(ARGS("--min-hold", "2m", "--max-hold", "1m", "-r", addr, "n", "true")), 64);
    cr_assert(stderr_has("--min-hold is longer than --max-hold"));
}

/* The lock's field says which host and lwlock process hold it:
 * "<host>-<pid>-<random>:<owner>". */
LWLOCK_TEST(field_names_the_host_and_process)
{
    char cmd[256], fields[256], ppid[32], host[256] = "", want[320];

    snprintf(cmd, sizeof cmd,
             "redis-cli -p %d HKEYS whojob > \"$LWT_DIR/fields\"; echo $PPID > \"$LWT_DIR/ppid\"",
             srv.port);
    cr_assert_eq(run(ARGS("-r", addr, "whojob", "sh", "-c", cmd)), 0);
    cr_assert_eq(gethostname(host, sizeof host - 1), 0);
    slurp("ppid", ppid, sizeof ppid);
    ppid[strcspn(ppid, "\n")] = 0;
    snprintf(want, sizeof want, "%s-%s-", host, ppid);
    slurp("fields", fields, sizeof fields);
    if (strlen(want) + 8 <= LW_CLIENT_ID_MAX && !strchr(host, ':'))
        cr_assert(strncmp(fields, want, strlen(want)) == 0, "field '%s', not '%s...'", fields,
                  want);
    cr_assert_eq(strchr(fields, ':'), strrchr(fields, ':'), "one ':' in '%s'", fields);
}

/* Run `lwlock -r addr --status [--json] name`: its exit status; its
 * stdout in out[n]. */
static int status_of(const char *name, int json, char *out, size_t n)
{
    int code = json ? run(ARGS("-r", addr, "--status", "--json", name))
                    : run(ARGS("-r", addr, "--status", name));

    slurp("out", out, n);
    return code;
}

static void redis_do(const char *cmd)
{
    redisReply *r = redis_server_command(&srv, cmd);

    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", cmd, r ? r->str : "no reply");
    freeReplyObject(r);
}

/*
 * --status: free, a lock (lwlock's own, seen from its COMMAND), the read
 * and the write side of Redisson's read-write lock and its permit
 * semaphore (written in Redisson's layout, shared notes: a hash with
 * "mode"; a count beside the zset {NAME}:timeout of raw 16-byte ids), and
 * a key of another type; as text and as JSON.  Taking nothing.
 */
LWLOCK_TEST(status_says_who_holds_what)
{
    char out[4096], cmd[300], host[256] = "";
    int code;

    cr_assert_eq(status_of("nothing", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "nothing: free\n");
    cr_assert_eq(status_of("nothing", 1, out, sizeof out), 0);
    cr_assert(strstr(out, "\"state\": \"free\", \"kind\": \"free\", \"type\": \"none\"") &&
                  strstr(out, "\"ttl_ms\": -2"), "%s", out);
    cr_assert_eq(redis_int("EXISTS %s", "nothing"), 0, "--status took nothing");

    /* Held by an lwlock: its COMMAND asks. */
    snprintf(cmd, sizeof cmd,
             "%s -r %s --status held > \"$LWT_DIR/st\"; echo $? >> \"$LWT_DIR/st\"",
             LWLOCK_PATH, addr);
    cr_assert_eq(run(ARGS("-r", addr, "held", "sh", "-c", cmd)), 0);
    slurp("st", out, sizeof out);
    gethostname(host, sizeof host - 1);
    cr_assert(strncmp(out, "held: held as a lock, ", 22) == 0 && strstr(out, " ms left\n  ") &&
                  strstr(out, host) && strstr(out, "  1 hold\n1\n"),
              "%s", out);

    /* Redisson's read lock: two readers. */
    redis_do("HSET rw mode read 3f1c-uuid:12 2 77aa-uuid:5 1");
    redis_do("PEXPIRE rw 20000");
    cr_assert_eq(status_of("rw", 0, out, sizeof out), 1);
    cr_assert(strstr(out, "rw: held as a read lock (read-write lock), ") &&
                  strstr(out, "  3f1c-uuid:12  2 holds\n  77aa-uuid:5  1 hold\n"),
              "%s", out);
    cr_assert_eq(status_of("rw", 1, out, sizeof out), 1);
    cr_assert(strstr(out, "\"kind\": \"read\"") &&
                  strstr(out, "{\"id\": \"3f1c-uuid:12\", \"count\": 2, \"ttl_ms\": ") &&
                  strstr(out, "\"holders_total\": 2, \"waiters\": [], \"waiters_total\": 0}"),
              "%s", out);
    /* ... and its write lock. */
    redis_do("HSET rww mode write 3f1c-uuid:12:write 1");
    cr_assert_eq(status_of("rww", 0, out, sizeof out), 1);
    cr_assert(strstr(out, "rww: held as a write lock (read-write lock), no expiry\n"
                          "  3f1c-uuid:12:write  1 hold\n"),
              "%s", out);

    /* A fair lock's queue, in turn: a Redisson waiter (no place), then a
     * leasewheel one (its place's lease); free, it is the first's turn. */
    {
        long long now = (long long)time(NULL) * 1000;
        redisReply *r = redis_server_command(
            &srv, "EVAL %s 0 %lld",
            "redis.call('rpush', 'redisson_lock_queue:{fq}', 'java-1:2', 'web-7-ab:7') "
            "redis.call('zadd', 'redisson_lock_timeout:{fq}', ARGV[1] + 300000, 'java-1:2', "
            "  ARGV[1] + 600000, 'web-7-ab:7') "
            "redis.call('zadd', 'leasewheel_lock_place:{fq}', ARGV[1] + 4000, 'web-7-ab:7')",
            now);

        cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s", r ? r->str : "no reply");
        freeReplyObject(r);
    }
    cr_assert_eq(status_of("fq", 0, out, sizeof out), 1, "a waiter's turn is not free");
    cr_assert(strstr(out, "fq: free, the first waiter's turn\n  waiting, in turn:\n"
                          "    1. java-1:2  in line ") &&
                  strstr(out, " ms more\n    2. web-7-ab:7  in line ") &&
                  strstr(out, " ms more unless renewed, place "),
              "%s", out);
    cr_assert_eq(status_of("fq", 1, out, sizeof out), 1);
    cr_assert(strstr(out, "\"state\": \"held\"") &&
                  strstr(out, "\"waiters\": [{\"id\": \"java-1:2\", \"give_up_ms\": ") &&
                  strstr(out, "\"place_ms\": null}, {\"id\": \"web-7-ab:7\"") &&
                  strstr(out, "\"waiters_total\": 2}"),
              "%s", out);

    /* Redisson's expirable permits: 2 available, one taken for a minute
     * (its id 16 raw bytes: shown as hex), one that never expires. */
    redis_do("SET sem 2");
    {
        redisReply *r = redis_server_command(
            &srv, "ZADD {sem}:timeout %lld %b 922337203685477 %s",
            (long long)time(NULL) * 1000 + 60000, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"
                                                   "\x0b\x0c\x0d\x0e\x0f\xff",
            (size_t)16, "0123456789abcdef0123456789abcdef");

        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 2);
        freeReplyObject(r);
    }
    cr_assert_eq(status_of("sem", 0, out, sizeof out), 1);
    cr_assert(strstr(out, "sem: a semaphore, 2 permits available, 2 taken, no expiry\n"
                          "  permit ids, random: COMMAND gets its own in LWLOCK_PERMIT\n") &&
                  strstr(out, "  0102030405060708090a0b0c0d0e0fff  ") &&
                  strstr(out, "  0123456789abcdef0123456789abcdef  never expires\n"),
              "%s", out);
    cr_assert_eq(status_of("sem", 1, out, sizeof out), 1);
    cr_assert(strstr(out, "\"kind\": \"permits\"") && strstr(out, "\"permits\": 2") &&
                  strstr(out, "\"ttl_ms\": -1}"),
              "%s", out);
    /* None taken: free to take. */
    redis_do("SET sem2 5");
    cr_assert_eq(status_of("sem2", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "sem2: a semaphore, 5 permits available, 0 taken, no expiry\n");

    /* Not a lock nor a semaphore: a list, a string that is no count, an
     * application's hash. */
    redis_do("HSET ahash f v");
    cr_assert_eq(status_of("ahash", 0, out, sizeof out), 65);
    cr_assert_str_eq(out, "ahash holds a hash that is not a lock\n");
    cr_assert_eq(status_of("ahash", 1, out, sizeof out), 65);
    cr_assert(strstr(out, "\"state\": \"held\", \"kind\": \"other\", \"type\": \"hash\"") &&
                  strstr(out, "\"holders\": [], \"holders_total\": 0"),
              "%s", out);
    redis_do("RPUSH alist x");
    cr_assert_eq(status_of("alist", 0, out, sizeof out), 65);
    cr_assert_str_eq(out, "alist holds a list, not a lock\n");
    redis_do("SET astring hello");
    cr_assert_eq(status_of("astring", 0, out, sizeof out), 65);
    cr_assert_str_eq(out, "astring holds a string, not a lock\n");
    cr_assert_eq(status_of("astring", 1, out, sizeof out), 65);
    cr_assert(strstr(out, "\"state\": \"held\", \"kind\": \"other\", \"type\": \"string\""),
              "%s", out);

    /* With a prefix, the prefixed name; unreachable: 69. */
    code = run(ARGS("-r", addr, "--prefix", "team", "--status", "x"));
    cr_assert_eq(code, 0);
    cr_assert_str_eq(slurp("out", out, sizeof out), "team:x: free\n");
    snprintf(cmd, sizeof cmd, "127.0.0.1:%d", closed_port());
    code = run(ARGS("-r", cmd, "--status", "x"));
    cr_assert_eq(code, 69, "unreachable: %d", code);
    cr_assert(stderr_has("lwlock: cannot read x at "));
}

/* Durations with units reach the lock: -w waits so long, -W is the
 * lease Redis sees while COMMAND runs, -l's fixed one too. */
LWLOCK_TEST(durations_with_units_reach_the_lock)
{
    char cmd[256], buf[64];
    uint64_t t0;
    long pttl;
    int code;

    hold_elsewhere("busy", 20000);
    t0 = now_ms();
    code = run(ARGS("-w", "400ms", "-r", addr, "busy", "touch", "ran"));
    cr_assert_eq(code, 75, "-w 400ms: %d", code);
    cr_assert_geq(now_ms() - t0, 400, "waited %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert_not(exists("ran"));
    /* A fraction of a unit: flock(1)'s -w 0.5, with its unit. */
    t0 = now_ms();
    code = run(ARGS("-w", "0.5s", "-r", addr, "busy", "touch", "ran"));
    cr_assert_eq(code, 75, "-w 0.5s: %d", code);
    cr_assert_geq(now_ms() - t0, 500, "waited %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert_not(exists("ran"));

    snprintf(cmd, sizeof cmd, "redis-cli -p %d PTTL unitjob > \"$LWT_DIR/pttl\"", srv.port);
    for (const char *const *lease = ARGS("-W", "2m", "-l", "2m"); *lease; lease += 2) {
        code = run(ARGS(lease[0], lease[1], "-r", addr, "unitjob", "sh", "-c", cmd));
        cr_assert_eq(code, 0, "%s 2m: %d", lease[0], code);
        pttl = atol(slurp("pttl", buf, sizeof buf));
        cr_assert(pttl > 60000 && pttl <= 120000, "%s 2m: PTTL %ld", lease[0], pttl);
    }
}

/* redis://: the DB is the one the lock lives in; the password is sent. */
LWLOCK_TEST(redis_url_selects_db_and_authenticates)
{
    struct redis_server locked;
    char url[128], cmd[256];
    char buf[64];
    int code;

    /* The lock is in DB 3 while COMMAND runs (redis-cli looks). */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/3", srv.port);
    snprintf(cmd, sizeof cmd, "redis-cli -p %d -n 3 EXISTS dbjob > \"$LWT_DIR/db\"", srv.port);
    code = run(ARGS("-r", url, "dbjob", "sh", "-c", cmd));
    cr_assert_eq(code, 0, "%d", code);
    cr_assert_str_eq(slurp("db", buf, sizeof buf), "1\n");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/", srv.port);
    cr_assert_eq(run(ARGS("-r", url, "dbjob", "true")), 0, "a bare '/' is DB 0");

    /* A server with a password: the right one (%-encoded here) gets in,
     * a wrong one exits 69 saying so; LWLOCK_REDIS takes the URL too. */
    cr_assert_eq(redis_server_start(&locked, "p@ss"), 0);
    snprintf(url, sizeof url, "redis://:p%%40ss@127.0.0.1:%d", locked.port);
    code = run(ARGS("-r", url, "authjob", "true"));
    snprintf(url, sizeof url, "LWLOCK_REDIS=redis://:p%%40ss@127.0.0.1:%d/1", locked.port);
    /* COMMAND sees LWLOCK_REDIS without the password, the address kept. */
    int code_env = run_lwlock(ARGS("authjob", "sh", "-c", "env > \"$LWT_DIR/env\""), ARGS(url));
    char env_seen[8192];
    slurp("env", env_seen, sizeof env_seen);
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", locked.port);
    int code_wrong = run(ARGS("-r", url, "authjob", "true"));
    int said = stderr_has(lw_strerror(LW_EAUTH));
    redis_server_stop(&locked);
    cr_assert_eq(code, 0, "the right password: %d", code);
    cr_assert_eq(code_env, 0, "the right password in LWLOCK_REDIS: %d", code_env);
    cr_assert_null(strstr(env_seen, "p%40ss"), "the password reached COMMAND: %s", env_seen);
    snprintf(url, sizeof url, "\nLWLOCK_REDIS=redis://127.0.0.1:%d/1\n", locked.port);
    cr_assert_not_null(strstr(env_seen, url), "LWLOCK_REDIS not passed on, address kept: %s",
                       env_seen);
    cr_assert_eq(code_wrong, 69, "a wrong password: %d", code_wrong);
    cr_assert(said, "a wrong password: says '%s'", lw_strerror(LW_EAUTH));
}

/*
 * --replicas N asks the client for acquires N replicas acknowledged: this
 * server has none, so --replicas 1 cannot be met; lwlock exits 69, COMMAND
 * does not run and the lock is not left held.  --replicas 0 is the default.
 */
LWLOCK_TEST(replicas_option_reaches_the_client)
{
    int code;

    cr_assert_eq(run(ARGS("-r", addr, "--replicas", "0", "job", "true")), 0);
    code = run(ARGS("-r", addr, "--replicas", "1", "job", "touch", "ran"));
    cr_assert_eq(code, 69, "%d", code);
    cr_assert(stderr_has("lwlock: cannot "));
    cr_assert_not(exists("ran"));
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0, "the lock is not left held");
}

/* Before its first connection the library reports a refused connection
 * at once, not at the end of the command timeout (3 s by default). */
LWLOCK_TEST(unreachable_redis_exits_69)
{
    char closed[64], why[80];
    uint64_t t0;
    int code;

    snprintf(closed, sizeof closed, "127.0.0.1:%d", closed_port());
    t0 = now_ms();
    code = run(ARGS("-r", closed, "job", "touch", "ran"));
    cr_assert_eq(code, 69, "%d", code);
    cr_assert_lt(now_ms() - t0, 2000, "took %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert(stderr_has(lw_strerror(LW_ECONNREFUSED)));
    cr_assert(stderr_has(closed) && stderr_one_line());
    /* And why, from the client: lw_client_last_error()'s line. */
    snprintf(why, sizeof why, "(%s: ", closed);
    cr_assert(stderr_has(why), "no '%s'", why);
    cr_assert_not(exists("ran"));
}

/* A set-up that Redis refuses for good, or a port that is not Redis: 69
 * at once (not after the 3 s command timeout), on one line, with the
 * command and Redis's words as redis-cli gives them; COMMAND does not
 * run. */
LWLOCK_TEST(set_up_refusals_exit_69_at_once_in_redis_words)
{
    struct http_peer peer;
    char db[64], acl[64], http[64];
    redisReply *r;
    const struct {
        const char *url;
        const char *says, *said;
    } cases[] = {
        {db, lw_strerror(LW_ENODB), "SELECT 99: ERR DB index is out of range"},
        {acl, lw_strerror(LW_ENOPERM), "SCRIPT LOAD: NOPERM "},
        {http, lw_strerror(LW_EPROTO), "It answered \"HTTP/1.1 400 Bad Request\""},
    };

    r = redis_server_command(&srv, "ACL SETUSER noload on >pw ~* &* +@all -script|load");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    http_peer_start(&peer);
    snprintf(db, sizeof db, "redis://127.0.0.1:%d/99", srv.port);
    snprintf(acl, sizeof acl, "redis://noload:pw@127.0.0.1:%d", srv.port);
    snprintf(http, sizeof http, "127.0.0.1:%d", peer.port);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t t0 = now_ms();
        int code = run(ARGS("-r", cases[i].url, "job", "touch", "ran"));
        uint64_t took = now_ms() - t0;

        cr_assert_eq(code, 69, "case %zu: %d", i, code);
        cr_assert_lt(took, 2000, "case %zu took %llu ms", i, (unsigned long long)took);
        cr_assert(stderr_has(cases[i].says) && stderr_has(cases[i].said) && stderr_one_line(),
                  "case %zu: no '%s' nor '%s'", i, cases[i].says, cases[i].said);
        cr_assert_not(exists("ran"));
    }
    http_peer_stop(&peer);
}

/* TLS at a plain port: refused, not waited on (the handshake times out
 * at the connect timeout), 69 with the reason on one line; COMMAND does
 * not run. */
LWLOCK_TEST(tls_at_a_plain_port_exits_69_saying_why)
{
    char why[96];
    int code;

    code = run(ARGS("--tls", "--insecure", "-r", addr, "job", "touch", "ran"));
    cr_assert_eq(code, 69, "%d", code);
    snprintf(why, sizeof why, "(%s: ", addr);
    if (LW_HAVE_TLS)
        cr_assert(stderr_has(lw_strerror(LW_ETLS)) && stderr_has(why) && stderr_one_line(),
                  "no '%s' and the reason", why);
    else
        cr_assert(stderr_has("built without TLS") && stderr_one_line());
    cr_assert_not(exists("ran"));
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0);
}

/* ---- Against a TLS server ---- */

#if LW_HAVE_TLS
static struct tls_certs certs;

/* A TLS-only server presenting `which`; client certificates optional, so
 * that both kinds of client get in. */
static void start_tls_server(enum tls_certs_server which)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, which, "optional");

    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0, "no TLS server");
    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv.port);
}

static void setup_tls(void)
{
    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    start_tls_server(TLS_CERTS_SERVER);
    make_dir();
}

static void teardown_tls(void)
{
    remove_test_dir();
    redis_server_stop(&srv);
    tls_certs_remove(&certs);
}

#define LWLOCK_TLS_TEST(name) \
    Test(lwlock_tls, name, .init = setup_tls, .fini = teardown_tls, .timeout = 120)

/* lwlock args (and env) must exit 69 with one line on stderr naming the
 * server and saying `says`, and not run COMMAND ("touch ran"). */
static void expect_refused(const char *const *args, const char *const *env, const char *says)
{
    int code = run_lwlock(args, env);

    cr_assert_eq(code, 69, "%d", code);
    cr_assert(stderr_has(says), "no '%s'", says);
    cr_assert(stderr_has(addr) && stderr_one_line(), "not one line naming %s", addr);
    cr_assert_not(exists("ran"), "COMMAND ran");
}

/* lwlock args (and env) must take the lock and run COMMAND ("touch
 * ran"); "ran" is removed again. */
static void expect_ran(const char *const *args, const char *const *env)
{
    char path[512];
    int code = run_lwlock(args, env);

    cr_assert_eq(code, 0, "%d", code);
    cr_assert(exists("ran"), "COMMAND did not run");
    unlink(path_in_dir("ran", path, sizeof path));
    cr_assert_eq(redis_int("EXISTS %s", "job"), 0, "released");
}

/* An unknown CA: refused with OpenSSL's reason; --insecure accepts it. */
LWLOCK_TLS_TEST(unknown_ca_exits_69_and_insecure_accepts_it)
{
    expect_refused(ARGS("--tls", "--cacert", certs.other_ca_file, "-r", addr, "job", "touch",
                        "ran"),
                   NULL, "certificate verify failed");
    cr_assert(stderr_has(lw_strerror(LW_ETLS)));
    expect_ran(ARGS("--tls", "--insecure", "--cacert", certs.other_ca_file, "-r", addr, "job",
                    "touch", "ran"),
               NULL);
}

/* The CA as a hashed directory; mutual TLS with an address from
 * LWLOCK_REDIS (rediss:// means --tls). */
LWLOCK_TLS_TEST(cacertdir_and_lwlock_redis_rediss)
{
    char env[100];

    expect_ran(ARGS("--tls", "--cacertdir", certs.ca_dir, "-r", addr, "job", "touch", "ran"),
               NULL);
    snprintf(env, sizeof env, "LWLOCK_REDIS=rediss://%s", addr);
    expect_ran(ARGS("--cacert", certs.ca_file, "--cert", certs.client_cert, "--key",
                    certs.client_key, "job", "touch", "ran"),
               ARGS(env));
    /* Without --cacert, the system's trust store: it knows no test CA. */
    expect_refused(ARGS("job", "touch", "ran"), ARGS(env), "certificate verify failed");
}

/* A plain lwlock at the TLS port: refused within the connect timeout
 * (lwlock's, the library's 2 s), never left waiting. */
LWLOCK_TLS_TEST(a_plain_lwlock_at_a_tls_port_exits_69)
{
    uint64_t t0 = now_ms();

    expect_refused(ARGS("-r", addr, "job", "touch", "ran"), NULL, "TLS port");
    cr_assert_lt(now_ms() - t0, 2000 + 1500, "took %llu ms",
                 (unsigned long long)(now_ms() - t0));
}

/* A server whose certificate's only name is redis.test: connecting to
 * 127.0.0.1 fails its name check, --sni redis.test mends it, another
 * name does not. */
LWLOCK_TLS_TEST(sni_mends_a_host_name_mismatch)
{
    redis_server_stop(&srv);
    start_tls_server(TLS_CERTS_NAMED);
    expect_refused(ARGS("--tls", "--cacert", certs.ca_file, "-r", addr, "job", "touch", "ran"),
                   NULL, "mismatch");
    expect_ran(ARGS("--tls", "--cacert", certs.ca_file, "--sni", "redis.test", "-r", addr, "job",
                    "touch", "ran"),
               NULL);
    expect_refused(ARGS("--tls", "--cacert", certs.ca_file, "--sni", "other.test", "-r", addr,
                        "job", "touch", "ran"),
                   NULL, "hostname mismatch");
}
#endif

/* ---- Mutual exclusion ---- */

/* Two shells, each running 8 lwlocks in a row on one name; a critical
 * section that overlaps another finds its marker directory taken. */
#define ROUNDS 8
static const char loop_script[] =
    "i=0; while [ $i -lt 8 ]; do "
    "\"$LWT_LWLOCK\" -w -1 -W 2000 -r \"$LWT_ADDR\" mutex sh -c "
    "'mkdir \"$LWT_DIR/inside\" || exit 99; sleep 0.02; rmdir \"$LWT_DIR/inside\"'; "
    "echo $? >> \"$LWT_DIR/rounds.$1\"; i=$((i + 1)); done";

LWLOCK_TEST(two_lwlocks_never_overlap)
{
    pid_t a = start("/bin/sh", ARGS("-c", loop_script, "sh", "a"), NULL);
    pid_t b = start("/bin/sh", ARGS("-c", loop_script, "sh", "b"), NULL);
    char buf[256];
    int ca = wait_child(a, 60000), cb = wait_child(b, 60000);

    echo_stderr();
    cr_assert_eq(ca, 0);
    cr_assert_eq(cb, 0);
    cr_assert_str_eq(slurp("rounds.a", buf, sizeof buf), "0\n0\n0\n0\n0\n0\n0\n0\n");
    cr_assert_str_eq(slurp("rounds.b", buf, sizeof buf), "0\n0\n0\n0\n0\n0\n0\n0\n");
    cr_assert_eq(redis_int("EXISTS %s", "mutex"), 0);
    cr_assert_eq(redis_int("EXISTS %s", "redisson_lock_token:{mutex}"), 0, "a key left behind");
}

/* ---- Lost locks, leases, signals ---- */

/* Start lwlock with args and wait until its COMMAND has set its trap. */
static pid_t start_until_ready(const char *const *args)
{
    pid_t pid = start_lwlock(args);

    if (!wait_until(exists("ready"), 10000)) {
        wait_child(pid, 0);
        echo_stderr();
        cr_assert(0, "COMMAND never got ready");
    }
    return pid;
}

/* The key deleted behind lwlock's back: COMMAND gets SIGTERM, lwlock 79. */
LWLOCK_TEST(lost_lock_signals_command)
{
    pid_t pid = start_until_ready(ARGS("-W", "300", "-r", addr, "lost", "sh", "-c",
                                       TRAPPING("TERM", "0")));
    char buf[64];
    int code;

    cr_assert_eq(redis_int("DEL %s", "lost"), 1);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert(stderr_has("lost"));
}

LWLOCK_TEST(lost_lock_sends_the_chosen_signal)
{
    pid_t pid = start_until_ready(ARGS("-W", "300", "-s", "SIGUSR1", "-r", addr, "lost", "sh",
                                       "-c", TRAPPING("USR1", "0")));
    uint64_t t0;
    char buf[512];
    int code;

    cr_assert_eq(redis_int("DEL %s", "lost"), 1);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "USR1\n");

    /* By number: 9 cannot be trapped, so COMMAND ends long before its
     * sleep would. */
    unlink(path_in_dir("ready", buf, sizeof buf));
    pid = start_until_ready(ARGS("-W", "300", "-s", "9", "-r", addr, "lost", "sh", "-c",
                                 "touch \"$LWT_DIR/ready\"; exec sleep 30"));
    t0 = now_ms();
    cr_assert_eq(redis_int("DEL %s", "lost"), 1);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_lt(now_ms() - t0, 5000);
}

/* --multi: every name held while COMMAND runs (LWLOCK_NAME the list, and
 * with --fence LWLOCK_TOKEN each name's token in its order), none left
 * after; a set with one name held elsewhere is not taken at all (75). */
LWLOCK_TEST(multi_holds_every_name_or_none)
{
    char buf[256], script[512], names[64];
    unsigned long long t[3] = {0};

    snprintf(script, sizeof script,
             "echo \"$LWLOCK_NAME $LWLOCK_TOKEN\" > \"$LWT_DIR/env\"; "
             "\"$LWT_LWLOCK\" -r %s -n -q c true; echo $? > \"$LWT_DIR/held\"",
             addr);
    cr_assert_eq(run(ARGS("-r", addr, "--fence", "--multi", "a,b,c", "sh", "-c", script)), 0);
    cr_assert_eq(sscanf(slurp("env", buf, sizeof buf), "%63s %llu,%llu,%llu", names, &t[0],
                        &t[1], &t[2]),
                 4, "'%s'", buf);
    cr_assert_str_eq(names, "a,b,c");
    for (int i = 0; i < 3; i++)
        cr_assert_gt(t[i], 0, "'%s'", buf);
    cr_assert_str_eq(slurp("held", buf, sizeof buf), "75\n", "c was not held");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(redis_int("EXISTS %s", (const char *[]){"a", "b", "c"}[i]), 0);

    hold_elsewhere("b", 5000);
    cr_assert_eq(run(ARGS("-r", addr, "--multi", "a,b,c", "true")), 75);
    cr_assert_eq(redis_int("EXISTS %s", "a"), 0, "a was left held");
    cr_assert_eq(redis_int("EXISTS %s", "c"), 0, "c was left held");
}

/* Two shells, each running lwlock --multi over the same four names in
 * opposite orders, up to a thousand times each or for 40 s, whichever
 * comes first (a loaded machine, or a sanitizer, runs fewer): every run
 * gets its set within its wait, and COMMAND never finds the other inside
 * (mkdir as a test of who is in).  An overlap exits 99, a run that did
 * not get its set lwlock's own code, so that slowness, which only ends
 * the loop sooner, is never taken for either; and enough runs must have
 * come to prove anything. */
LWLOCK_TEST(multi_opposite_orders_as_processes)
{
    char loop[1024], buf[32];
    pid_t a, b;
    int code_a, code_b, runs_a, runs_b;

    snprintf(loop, sizeof loop,
             "end=$(($(date +%%s) + 40)); i=0; "
             "while [ $i -lt 1000 ] && [ $(date +%%s) -lt $end ]; do i=$((i + 1)); "
             "\"$LWT_LWLOCK\" -r %s -w 10s --multi \"$1\" sh -c "
             "'mkdir \"$LWT_DIR/in\" || exit 99; rmdir \"$LWT_DIR/in\"' || exit $?; "
             "echo $i > \"$LWT_DIR/runs.$2\"; done",
             addr);
    a = start("/bin/sh", ARGS("-c", loop, "sh", "n1,n2,n3,n4", "a"), NULL);
    b = start("/bin/sh", ARGS("-c", loop, "sh", "n4,n3,n2,n1", "b"), NULL);
    code_a = wait_child(a, 120000);
    code_b = wait_child(b, 120000);
    runs_a = atoi(slurp("runs.a", buf, sizeof buf));
    runs_b = atoi(slurp("runs.b", buf, sizeof buf));
    fprintf(stderr, "lwlock: opposite orders, %d and %d runs\n", runs_a, runs_b);
    cr_assert_neq(code_a, 99, "COMMAND found the other inside, run %d", runs_a + 1);
    cr_assert_neq(code_b, 99, "COMMAND found the other inside, run %d", runs_b + 1);
    cr_assert_eq(code_a, 0, "a run exited %d (-1: the loop never ended)", code_a);
    cr_assert_eq(code_b, 0, "a run exited %d (-1: the loop never ended)", code_b);
    cr_assert_geq(runs_a + runs_b, 100, "too few runs to prove anything");
}

/* lwlock killed with SIGKILL: nothing renews the lock any more, and
 * COMMAND gets the loss's signal at once (a parent-death signal), long
 * before the lock's lease could end and another lwlock take it. */
LWLOCK_TEST(killed_lwlock_stops_command)
{
    pid_t pid = start_until_ready(ARGS("-W", "3s", "-r", addr, "orphan", "sh", "-c",
                                       TRAPPING("TERM", "0")));
    uint64_t t0 = now_ms();
    char buf[512];

    cr_assert_eq(redis_int("EXISTS %s", "orphan"), 1);
    kill(pid, SIGKILL);
    wait_child(pid, 5000);
    cr_assert(wait_until(exists("sig"), 5000), "COMMAND was never signalled");
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert_lt(now_ms() - t0, 2000, "signalled only after the lease could have ended");
    cr_assert_eq(redis_int("EXISTS %s", "orphan"), 1, "the lock outlived COMMAND's signal");

    /* The chosen signal, for a COMMAND that cannot trap it: gone too. */
    unlink(path_in_dir("ready", buf, sizeof buf));
    unlink(path_in_dir("sig", buf, sizeof buf));
    pid = start_until_ready(ARGS("-W", "3s", "-s", "USR1", "-r", addr, "orphan2", "sh", "-c",
                                 TRAPPING("USR1", "0")));
    kill(pid, SIGKILL);
    wait_child(pid, 5000);
    cr_assert(wait_until(exists("sig"), 5000), "COMMAND was never signalled");
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "USR1\n");
}

/* ---- Permits (--permits, --set-permits) ---- */

Test(lwlock_usage, permits_bad_usage_exits_64, .init = make_dir, .fini = remove_test_dir,
     .timeout = 60)
{
    const char *const *bad[] = {
        ARGS("--permits", "0", "n", "true"),
        ARGS("--permits", "-1", "n", "true"),
        ARGS("--permits", "two", "n", "true"),
        ARGS("--permits", "1000000001", "n", "true"),
        ARGS("--permits"),
        ARGS("--permits", "2", "n"),
        ARGS("--set-permits", "-1", "n"),
        ARGS("--set-permits", "3", "n", "true"),
        ARGS("--set-permits", "3"),
        ARGS("--permits", "2", "--set-permits", "3", "n"),
        ARGS("--permits", "2", "--min-hold", "1s", "n", "true"),
        ARGS("--permits", "2", "--replicas", "1", "n", "true"),
        ARGS("--permits", "2", "--status", "n"),
        ARGS("--set-permits", "2", "--status", "n"),
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int code = run(bad[i]);

        cr_assert_eq(code, 64, "case %zu: %d", i, code);
        cr_assert(stderr_has("lwlock: "), "case %zu: no message", i);
    }
}

/* A COMMAND that says it is in (in.$1, and its LWLOCK_PERMIT in permit.$1)
 * and stays until $LWT_DIR/go.$1 exists (at most 20 s). */
#define PERMIT_HOLDER                                                                      \
    "echo \"$LWLOCK_NAME $LWLOCK_PERMIT ${LWLOCK_TOKEN-none}\" > \"$LWT_DIR/permit.$1\"; " \
    "touch \"$LWT_DIR/in.$1\"; i=0; "                                                      \
    "while [ ! -e \"$LWT_DIR/go.$1\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done"

static pid_t start_permit_holder(const char *sem, const char *id, const char *wait)
{
    return start_lwlock(ARGS("-r", addr, "-w", wait, "--permits", "2", sem, "sh", "-c",
                             PERMIT_HOLDER, "sh", id));
}

static void let_out(const char *id)
{
    char name[16], path[512];
    int fd;

    snprintf(name, sizeof name, "go.%s", id);
    fd = open(path_in_dir(name, path, sizeof path), O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
}

/* The permit a holder saw: LWLOCK_NAME and 32 hex digits, no token; it
 * is in the semaphore's zset as 16 raw bytes while COMMAND runs. */
static void check_permit_seen(const char *sem, const char *id)
{
    char file[16], buf[256], name[64], hex[64], token[32];
    struct lw_permit p;
    redisReply *r;

    snprintf(file, sizeof file, "permit.%s", id);
    cr_assert_eq(sscanf(slurp(file, buf, sizeof buf), "%63s %63s %31s", name, hex, token), 3,
                 "'%s'", buf);
    cr_assert_str_eq(name, sem);
    cr_assert_eq(strlen(hex), 32, "LWLOCK_PERMIT '%s'", hex);
    cr_assert_eq(strspn(hex, "0123456789abcdef"), 32, "LWLOCK_PERMIT '%s'", hex);
    cr_assert_str_eq(token, "none", "a permit has no fencing token");
    cr_assert_eq(lw_permit_from_hex(hex, &p), 0);
    snprintf(name, sizeof name, "{%s}:timeout", sem);
    r = redis_server_command(&srv, "ZSCORE %s %b", name, p.id, sizeof p.id);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "permit %s not in %s", hex, name);
    freeReplyObject(r);
}

static int wait_in(const char *id)
{
    char name[16];

    snprintf(name, sizeof name, "in.%s", id);
    return wait_until(exists(name), 10000);
}

/* N = 2: two COMMANDs run at once, a third is refused (-n: 75) or waits
 * until one leaves; the semaphore is created with 2 and keeps its count. */
LWLOCK_TEST(permits_two_at_once_third_waits)
{
    pid_t a = start_permit_holder("pool", "a", "0"), b = start_permit_holder("pool", "b", "0"), c;
    int code;

    cr_assert(wait_in("a") && wait_in("b"), "both permits held at once");
    check_permit_seen("pool", "a");
    check_permit_seen("pool", "b");
    cr_assert_eq(redis_int("GET %s", "pool"), 0);
    cr_assert_eq(redis_int("ZCARD %s", "{pool}:timeout"), 2);

    code = run(ARGS("-r", addr, "-n", "--permits", "2", "pool", "touch", "ran"));
    cr_assert_eq(code, 75, "-n with none free: %d", code);
    cr_assert(stderr_has("lwlock: pool: no permit free"));
    cr_assert_not(exists("ran"));
    code = run(ARGS("-r", addr, "-q", "-E", "3", "-w", "200ms", "--permits", "2", "pool", "true"));
    cr_assert_eq(code, 3, "-q -E 3 -w 200ms: %d", code);

    c = start_permit_holder("pool", "c", "20s");
    cr_assert_not(wait_until(exists("in.c"), 300), "a third got in with none free");
    let_out("a");
    cr_assert_eq(wait_child(a, 10000), 0);
    cr_assert(wait_in("c"), "the waiter got the permit given back");
    let_out("b");
    let_out("c");
    cr_assert_eq(wait_child(b, 10000), 0);
    cr_assert_eq(wait_child(c, 10000), 0);
    echo_stderr();
    cr_assert_eq(redis_int("GET %s", "pool"), 2, "every permit given back");
    cr_assert_eq(redis_int("ZCARD %s", "{pool}:timeout"), 0);
}

/* An existing semaphore keeps its count; --set-permits sets the total
 * (available + acquired), creating it; --prefix names it. */
LWLOCK_TEST(set_permits_sets_the_total)
{
    pid_t a;
    int code;

    cr_assert_eq(run(ARGS("-r", addr, "--set-permits", "5", "jobs")), 0);
    cr_assert_eq(redis_int("GET %s", "jobs"), 5);
    cr_assert_eq(run(ARGS("-r", addr, "--permits", "2", "jobs", "true")), 0);
    cr_assert_eq(redis_int("GET %s", "jobs"), 5, "--permits 2 left an existing count alone");

    a = start_lwlock(ARGS("-r", addr, "--permits", "5", "jobs", "sh", "-c", PERMIT_HOLDER, "sh",
                          "a"));
    cr_assert(wait_in("a"));
    cr_assert_eq(redis_int("GET %s", "jobs"), 4);
    cr_assert_eq(run(ARGS("-r", addr, "--set-permits", "3", "jobs")), 0);
    cr_assert_eq(redis_int("GET %s", "jobs"), 2, "3 in all, one of them acquired");
    let_out("a");
    code = wait_child(a, 10000);
    echo_stderr();
    cr_assert_eq(code, 0);
    cr_assert_eq(redis_int("GET %s", "jobs"), 3);

    cr_assert_eq(run(ARGS("-r", addr, "--prefix", "team", "--set-permits", "0", "jobs")), 0);
    cr_assert_eq(redis_int("GET %s", "team:jobs"), 0);
    code = run(ARGS("-r", addr, "-n", "--prefix", "team", "--permits", "4", "jobs", "true"));
    cr_assert_eq(code, 75, "0 permits: %d", code);
}

/* The permit taken from the zset while COMMAND runs: the watchdog finds
 * it gone, COMMAND gets the signal, lwlock exits 79 and nothing is given
 * back twice. */
LWLOCK_TEST(lost_permit_signals_command)
{
    pid_t pid = start_until_ready(ARGS("-W", "300", "--permits", "2", "-r", addr, "lostsem", "sh",
                                       "-c", TRAPPING("TERM", "0")));
    char buf[512];
    int code;

    cr_assert_eq(redis_int("ZCARD %s", "{lostsem}:timeout"), 1);
    cr_assert_eq(redis_int("DEL %s", "{lostsem}:timeout"), 1);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert(stderr_has("permit of lostsem lost"));
    cr_assert_eq(redis_int("GET %s", "lostsem"), 1, "the lost permit was not given back");
    cr_assert_eq(redis_int("EXISTS %s", "{lostsem}:timeout"), 0, "and never added back");

    /* A fixed lease (-l) ends: 79 too; the expired permit stays in the zset
     * until an acquire reclaims it, and --status says it expired. */
    code = run(ARGS("-l", "300ms", "--permits", "1", "-r", addr, "fixed", "sleep", "3"));
    cr_assert_eq(code, 79, "-l 300ms: %d", code);
    cr_assert(stderr_has("permit of fixed lost (the lease ended)"));
    /* lwlock ended COMMAND before the score (less the drift and the skew
     * allowance, counted from the acquire's stamp): it passes soon after. */
    cr_assert(wait_until((run(ARGS("-r", addr, "--status", "fixed")),
                          strstr(slurp("out", buf, sizeof buf), " ms ago (given back")),
                         2000),
              "%s", buf);
    code = run(ARGS("-r", addr, "--status", "fixed"));
    cr_assert_eq(code, 1, "--status: %d", code);
    cr_assert(strstr(slurp("out", buf, sizeof buf), " ms ago (given back at the next acquire)\n"),
              "%s", buf);
    cr_assert_eq(run(ARGS("-r", addr, "-n", "--permits", "1", "fixed", "true")), 0,
                 "the expired permit was reclaimed");
}

/* SIGTERM to lwlock reaches COMMAND; lwlock exits as COMMAND did and
 * releases the lock. */
LWLOCK_TEST(sigterm_is_passed_on)
{
    pid_t pid = start_until_ready(ARGS("-r", addr, "fwd", "sh", "-c", TRAPPING("TERM", "7")));
    char buf[64];
    int code;

    cr_assert_eq(redis_int("EXISTS %s", "fwd"), 1);
    kill(pid, SIGTERM);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 7, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert_eq(redis_int("EXISTS %s", "fwd"), 0);
}

/* SIGINT during a wait ends it: 130, and COMMAND never runs. */
LWLOCK_TEST(sigint_interrupts_the_wait)
{
    pid_t pid;
    int code;

    hold_elsewhere("busy", 20000);
    pid = start_lwlock(ARGS("-w", "-1", "-r", addr, "busy", "touch", "ran"));
    /* Waiting for sure once it listens on the lock's channel. */
    cr_assert(wait_until(redis_subscribers("redisson_lock__channel:{busy}") == 1, 10000));
    kill(pid, SIGINT);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 128 + SIGINT, "%d", code);
    cr_assert(stderr_has("interrupted"));
    cr_assert_not(exists("ran"));
}

/* A fixed lease is a deadline: COMMAND is signalled at its end, lwlock 79. */
LWLOCK_TEST(fixed_lease_is_a_deadline)
{
    uint64_t t0 = now_ms();
    pid_t pid = start_until_ready(ARGS("-l", "400", "-r", addr, "lease", "sh", "-c",
                                       TRAPPING("TERM", "0")));
    char buf[64];
    int code = wait_child(pid, 5000);

    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_geq(now_ms() - t0, 400 - 400 / 100 - 2, "before the lease less the drift");
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");

    /* lwlock ends COMMAND a little before Redis ends the lease (the drift
     * allowance: counted from before the acquire was written). */
    cr_assert(wait_until(redis_int("EXISTS %s", "lease") == 0, 2000), "never expired");
    /* Done within the lease: COMMAND's status, and released. */
    cr_assert_eq(run(ARGS("-l", "5000", "-r", addr, "lease", "sh", "-c", "exit 4")), 4);
    cr_assert_eq(redis_int("EXISTS %s", "lease"), 0);
}

static struct proxy *start_proxy(char *via, size_t size);

/*
 * A fixed lease starts when Redis runs the acquire, and its reply may come
 * much later: the deadline counts from before the acquire was written,
 * never from the reply.  Redis holds the acquire back (CLIENT PAUSE WRITE)
 * until the proxy between them stops forwarding, runs it then, and the
 * reply waits 700 ms in the proxy.  COMMAND is signalled within the
 * lease of the moment the lock was seen taken (counted from the reply,
 * it would be 700 ms later).
 */
LWLOCK_TEST(fixed_lease_counts_from_before_a_late_reply)
{
    char via[64], buf[64];
    struct proxy *px = start_proxy(via, sizeof via);
    uint64_t taken, told;
    pid_t pid;
    int code;

    freeReplyObject(redis_server_command(&srv, "CLIENT PAUSE %s WRITE", "10000"));
    pid = start_lwlock(ARGS("-l", "1500", "-r", via, "late", "sh", "-c", TRAPPING("TERM", "0")));
    cr_assert(wait_until(blocked_clients() == 1, 5000), "the acquire never reached Redis");
    cr_assert_eq(proxy_hold(px, 1), 0);
    freeReplyObject(redis_server_command(&srv, "CLIENT UNPAUSE"));
    cr_assert(wait_until(redis_int("EXISTS %s", "late") == 1, 3000), "it never ran");
    taken = now_ms();
    sleep_ms(700); /* the reply's delay: time that must pass */
    cr_assert_eq(proxy_hold(px, 0), 0);
    cr_assert(wait_until(exists("sig"), 5000), "COMMAND never signalled");
    told = now_ms();
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert_lt(told - taken, 1500, "COMMAND ran %llu ms past the lock's start",
                 (unsigned long long)(told - taken));
    proxy_stop(px);
}

/* COMMAND gets the descriptors lwlock was given, not lwlock's own (the
 * signalfd, the pipe, the library's sockets). */
LWLOCK_TEST(command_gets_only_the_callers_descriptors)
{
    char path[512], buf[4096];
    int fd = open(path_in_dir("fd5", path, sizeof path), O_WRONLY | O_CREAT, 0600);
    pid_t pid;

    cr_assert_geq(fd, 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* Only 0-2 and 5 (whatever this process has open besides). */
        dup2(fd, 5);
        close_range(3, 4, 0);
        close_range(6, ~0u, 0);
        fd = open("/dev/null", O_RDONLY);
        if (fd > 0) {
            dup2(fd, 0);
            close(fd);
        }
        redirect(1, "out");
        redirect(2, "err");
        execl(LWLOCK_PATH, LWLOCK_PATH, "-r", addr, "fds", "sh", "-c",
              "echo kept >&5; ls -l /proc/$$/fd > \"$LWT_DIR/fds\"", (char *)NULL);
        _exit(120);
    }
    close(fd);
    cr_assert_eq(wait_child(pid, 20000), 0);
    echo_stderr();
    cr_assert_str_eq(slurp("fd5", buf, sizeof buf), "kept\n");
    slurp("fds", buf, sizeof buf);
    cr_assert_not(strstr(buf, "socket:"), "%s", buf);
    cr_assert_not(strstr(buf, "pipe:"), "%s", buf);
    cr_assert_not(strstr(buf, "signalfd"), "%s", buf);
}

/* COMMAND ends under the lock, then Redis stops and the unlock waits past
 * the lease: the loss came after COMMAND, so its status stands. */
LWLOCK_TEST(lease_running_out_during_the_release_is_not_a_loss)
{
    char script[160];

    snprintf(script, sizeof script, "kill -STOP %d; (sleep 2; kill -CONT %d) &", (int)srv.pid,
             (int)srv.pid);
    cr_assert_eq(run(ARGS("-r", addr, "-W", "1000", "job", "sh", "-c", script)), 0);
    cr_assert(stderr_has("expired while being released"));
    redis_server_signal(&srv, SIGCONT); /* in case the background shell did not */
}

/* ---- At risk, held too long, the log ---- */

/* A COMMAND (sh -c) that appends each USR1 and TERM it gets to DIR/sigs,
 * with the time (ms), in order; exits 0 at TERM, else 5 once DIR/done
 * appears.  DIR/ready appears once its traps are set.  (Its short sleeps
 * let sh run a trap within 50 ms.) */
#define RECORDING                                                                         \
    "trap 'echo USR1 $(date +%s%3N) >> \"$LWT_DIR/sigs\"' USR1; "                         \
    "trap 'echo TERM $(date +%s%3N) >> \"$LWT_DIR/sigs\"; exit 0' TERM; "                 \
    "touch \"$LWT_DIR/ready\"; "                                                           \
    "while [ ! -e \"$LWT_DIR/done\" ]; do sleep 0.05; done; exit 5"

/* The signals DIR/sigs has, names only, "USR1 TERM " say; the time of
 * the first of each kind in *usr1 and *term (0: none). */
static const char *signals_seen(char *names, size_t size, unsigned long long *usr1,
                                unsigned long long *term)
{
    char buf[1024], sig[8];
    unsigned long long t;
    const char *p = slurp("sigs", buf, sizeof buf);
    int n;

    names[0] = 0;
    *usr1 = *term = 0;
    while (sscanf(p, "%7s %llu%n", sig, &t, &n) == 2) {
        snprintf(names + strlen(names), size - strlen(names), "%s ", sig);
        if (strcmp(sig, "USR1") == 0 && !*usr1)
            *usr1 = t;
        if (strcmp(sig, "TERM") == 0 && !*term)
            *term = t;
        p += n;
    }
    return names;
}

static void touch(const char *name)
{
    char path[512];
    int fd = open(path_in_dir(name, path, sizeof path), O_WRONLY | O_CREAT, 0600);

    cr_assert_geq(fd, 0);
    close(fd);
}

/* A proxy in front of the fixture's Redis, and its address for -r. */
static struct proxy *start_proxy(char *via, size_t size)
{
    struct proxy *px = proxy_start(srv.port);

    cr_assert_not_null(px);
    snprintf(via, size, "127.0.0.1:%d", proxy_port(px));
    return px;
}

/* 1 once key (a lock lwlock holds) is seen renewed n times within ms: its
 * PTTL, falling between renewals, jumps up by over 100 ms on the least
 * seen since the last jump. */
static int renewals_seen(const char *key, int n, long ms)
{
    uint64_t until = now_ms() + (uint64_t)ms;
    long long least = -1;

    while (n > 0 && now_ms() < until) {
        long long p = redis_int("PTTL %s", key);

        if (p > 0 && least > 0 && p > least + 100) {
            n--;
            least = p;
        } else if (p > 0 && (least < 0 || p < least)) {
            least = p;
        }
        sleep_ms(5);
    }
    return n == 0;
}

/*
 * The link goes silent (the proxy holds every byte, closes nothing) and
 * stays so: the lock turns at risk when less than half its 2 s lease is
 * sure to be left, and COMMAND gets --warn-signal's USR1; then it is lost
 * (expired, a tick before the lease can have run out), and COMMAND gets
 * SIGTERM, the warning well before (it had the rest of the lease to
 * prepare), and lwlock exits 79 with its one line, nothing for the warning.
 */
LWLOCK_TEST(warn_signal_comes_before_the_loss)
{
    char via[64], names[64];
    struct proxy *px = start_proxy(via, sizeof via);
    unsigned long long usr1, term;
    pid_t pid = start_until_ready(ARGS("-W", "2000", "--warn-signal", "USR1", "-r", via,
                                       "risky", "sh", "-c", RECORDING));
    int code;

    cr_assert(renewals_seen("risky", 1, 5000), "never renewed");
    cr_assert_eq(proxy_hold(px, 1), 0);
    code = wait_child(pid, 10000);
    proxy_stop(px);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(signals_seen(names, sizeof names, &usr1, &term), "USR1 TERM ");
    cr_assert_geq(term - usr1, 300, "the warning %llu ms before the loss", term - usr1);
    cr_assert(stderr_has("lost (expired)") && stderr_one_line());
}

/*
 * Silent for less than the lease: the warning once each time the lock
 * turns at risk (the link is freed as soon as COMMAND has it), nothing
 * when it is safe again, no loss; lwlock exits with COMMAND's status.
 * Twice, the second episode warned as the first.
 */
LWLOCK_TEST(warn_signal_without_a_loss)
{
    char via[64], names[64], buf[512];
    struct proxy *px = start_proxy(via, sizeof via);
    unsigned long long usr1, term;
    pid_t pid = start_until_ready(ARGS("-W", "3000", "--warn-signal", "usr1", "-r", via,
                                       "risky", "sh", "-c", RECORDING));
    uint64_t held[2];
    int warned[2], code;

    cr_assert(renewals_seen("risky", 1, 5000), "never renewed");
    for (int i = 0; i < 2; i++) {
        uint64_t t0 = now_ms();

        cr_assert_eq(proxy_hold(px, 1), 0);
        warned[i] = wait_until(strlen(slurp("sigs", buf, sizeof buf)) > 0 && (i == 0 ||
                                   strchr(buf, '\n') != strrchr(buf, '\n')),
                               5000);
        cr_assert_eq(proxy_hold(px, 0), 0);
        held[i] = now_ms() - t0;
        /* Renewed again: safe.  Two renewals seen: the second comes a
         * third of a lease after the first, whose reply is in by then. */
        cr_assert(renewals_seen("risky", 2, 10000), "not renewed after the silence");
    }
    touch("done");
    code = wait_child(pid, 10000);
    proxy_stop(px);
    echo_stderr();
    cr_assert(warned[0] && warned[1], "warned: %d %d", warned[0], warned[1]);
    cr_assert_lt(held[0], 3000, "silent %llu ms", (unsigned long long)held[0]);
    cr_assert_lt(held[1], 3000, "silent %llu ms", (unsigned long long)held[1]);
    cr_assert_eq(code, 5, "%d", code);
    cr_assert_str_eq(signals_seen(names, sizeof names, &usr1, &term), "USR1 USR1 ");
    cr_assert(!*slurp("err", buf, sizeof buf), "said: %s", buf);
    cr_assert_eq(redis_int("EXISTS %s", "risky"), 0, "released");
}

/*
 * --max-hold: the lock is given up after so long held; COMMAND gets
 * SIGTERM (-s's signal), lwlock exits 79 saying "held too long", and the
 * key stays in Redis, to expire at the end of its lease by itself.
 */
LWLOCK_TEST(max_hold_gives_the_lock_up)
{
    uint64_t t0 = now_ms(), took;
    pid_t pid = start_lwlock(ARGS("--max-hold", "600", "-r", addr, "capped", "sh", "-c",
                                  TRAPPING("TERM", "0")));
    char buf[64], path[512];
    int code = wait_child(pid, 10000);
    long long ttl;

    took = now_ms() - t0;
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert(took >= 600 && took < 3000, "ended after %llu ms", (unsigned long long)took);
    cr_assert(stderr_has("held too long") && stderr_one_line());
    cr_assert_eq(redis_int("EXISTS %s", "capped"), 1, "the key stays");
    ttl = redis_int("PTTL %s", "capped");
    cr_assert(ttl > 20000 && ttl <= 30000, "PTTL %lld: the watchdog lease, not renewed", ttl);

    /* -s's signal, with -W's lease. */
    unlink(path_in_dir("ready", path, sizeof path));
    pid = start_until_ready(ARGS("--max-hold", "300", "-W", "2000", "-s", "USR1", "-r", addr,
                                 "capped2", "sh", "-c", TRAPPING("USR1", "0")));
    code = wait_child(pid, 10000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "USR1\n");
    cr_assert(stderr_has("held too long"));
    cr_assert_eq(redis_int("EXISTS %s", "capped2"), 1);
    /* Within the hold: COMMAND's status, and released. */
    cr_assert_eq(run(ARGS("--max-hold", "5000", "-r", addr, "capped3", "sh", "-c", "exit 4")), 4);
    cr_assert_eq(redis_int("EXISTS %s", "capped3"), 0);
}

/* Kill lwlock's connections (CLIENT KILL TYPE normal: the command link;
 * the fixture's own is skipped). */
static void kill_clients(void)
{
    redisReply *r = redis_server_command(&srv, "CLIENT KILL TYPE normal");

    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1, "killed none");
    freeReplyObject(r);
}

/* Normal clients connected to the server, the fixture's own (the one
 * asking) included; -1 on no answer. */
static int normal_clients(void)
{
    redisReply *r = redis_server_command(&srv, "CLIENT LIST TYPE normal");
    int n = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *p = r->str; (p = strchr(p, '\n')) != NULL; p++)
            n++;
    }
    freeReplyObject(r);
    return n;
}

/*
 * -v: the library's log lines on stderr, "lwlock: LEVEL: ...": a
 * connection killed (warn) and made again (info).  Without -v, nothing.
 */
LWLOCK_TEST(verbose_logs_the_connection_lost_and_restored)
{
    char restored[128], buf[8192];
    pid_t pid;
    int code;

    /* Quiet: the same, without -v (the reconnect seen in CLIENT LIST's
     * count coming back). */
    pid = start_until_ready(ARGS("-r", addr, "logged", "sh", "-c", RECORDING));
    kill_clients();
    cr_assert(wait_until(normal_clients() >= 2, 10000), "lwlock never connected again");
    touch("done");
    code = wait_child(pid, 10000);
    echo_stderr();
    cr_assert_eq(code, 5, "%d", code);
    cr_assert(!*slurp("err", buf, sizeof buf), "said: %s", buf);

    unlink(path_in_dir("ready", buf, sizeof buf));
    unlink(path_in_dir("done", buf, sizeof buf));
    pid = start_until_ready(ARGS("-v", "-r", addr, "logged", "sh", "-c", RECORDING));
    kill_clients();
    snprintf(restored, sizeof restored, "lwlock: info: %s: connection restored\n", addr);
    cr_assert(wait_until(stderr_has(restored), 10000), "no '%s'", restored);
    touch("done");
    code = wait_child(pid, 10000);
    echo_stderr();
    cr_assert_eq(code, 5, "%d", code);
    snprintf(restored, sizeof restored, "lwlock: warn: %s: ", addr);
    cr_assert(stderr_has(restored), "no '%s'", restored);
    cr_assert_eq(redis_int("EXISTS %s", "logged"), 0, "released");
}

/* ---- Read-write locks: --read, --write ---- */

/* COMMAND for a holder that waits for the file $1 (a bounded wait) after
 * saying it runs with the file $2; it prints $LWLOCK_TOKEN, or "none". */
static const char hold_until[] =
    "echo \"${LWLOCK_TOKEN-none}\" > \"$LWT_DIR/token.$2\"; touch \"$LWT_DIR/$2\"; i=0; "
    "while [ ! -e \"$LWT_DIR/$1\" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done";

/* lwlock with kind (--read or --write, fenced) and wait around
 * hold_until: started, and waited for until its COMMAND runs when
 * `running` is set. */
static pid_t start_rw_holder(const char *kind, const char *wait, const char *go, const char *tag,
                          int running)
{
    /* A writer draws a token; a reader has none (--fence is refused). */
    pid_t pid = strcmp(kind, "--write")
                    ? start_lwlock(ARGS(kind, "-w", wait, "-r", addr, "rw", "sh", "-c",
                                        hold_until, "sh", go, tag))
                    : start_lwlock(ARGS(kind, "--fence", "-w", wait, "-r", addr, "rw", "sh", "-c",
                                        hold_until, "sh", go, tag));

    if (running && !wait_until(exists(tag), 10000)) {
        wait_child(pid, 0);
        echo_stderr();
        cr_assert(0, "%s %s never ran", kind, tag);
    }
    return pid;
}

static void touch_file(const char *name)
{
    char path[512];
    int fd = open(path_in_dir(name, path, sizeof path), O_WRONLY | O_CREAT, 0600);

    cr_assert_geq(fd, 0);
    close(fd);
}

/* Readers share the lock; a writer is refused while they read, waits for
 * them (-w) and then holds it alone; LWLOCK_TOKEN is a write's only. */
LWLOCK_TEST(readers_share_a_writer_waits_and_excludes)
{
    char buf[64];
    pid_t r1 = start_rw_holder("--read", "0", "go1", "r1", 1), r2, w;
    int code;

    r2 = start_rw_holder("--read", "0", "go1", "r2", 1);
    cr_assert_str_eq(slurp("token.r1", buf, sizeof buf), "none\n", "no LWLOCK_TOKEN for a read");
    code = run(ARGS("--write", "-r", addr, "rw", "touch", "ran"));
    cr_assert_eq(code, 75, "--write while read: %d", code);
    cr_assert(stderr_has("lwlock: rw: "));
    /* A waiting writer: subscribed, not running, until both readers leave. */
    w = start_rw_holder("--write", "20s", "go2", "w", 0);
    cr_assert(wait_until(redis_subscribers("redisson_rwlock:{rw}") >= 1, 10000), "writer waits");
    cr_assert_not(exists("w"), "the writer ran beside readers");
    touch_file("go1");
    cr_assert_eq(wait_child(r1, 10000), 0);
    cr_assert_eq(wait_child(r2, 10000), 0);
    cr_assert(wait_until(exists("w"), 10000), "the writer got it after the readers");
    cr_assert_gt(strtoull(slurp("token.w", buf, sizeof buf), NULL, 10), 0, "token '%s'", buf);
    /* Held for writing: readers and writers are refused, -n, -E, -q. */
    code = run(ARGS("--read", "-n", "-r", addr, "rw", "touch", "ran"));
    cr_assert_eq(code, 75, "--read while written: %d", code);
    code = run(ARGS("--read", "-q", "-E", "9", "-r", addr, "rw", "touch", "ran"));
    cr_assert_eq(code, 9, "--read -q -E 9: %d", code);
    cr_assert_str_eq(slurp("err", buf, sizeof buf), "", "-q said '%s'", buf);
    code = run(ARGS("--write", "-n", "-E", "0", "-r", addr, "rw", "touch", "ran"));
    cr_assert_eq(code, 0, "--write -n -E 0: %d", code);
    code = run(ARGS("-w", "100ms", "--read", "-r", addr, "rw", "touch", "ran"));
    cr_assert_eq(code, 75, "--read -w 100ms: %d", code);
    cr_assert_not(exists("ran"), "COMMAND ran beside the writer");
    touch_file("go2");
    cr_assert_eq(wait_child(w, 10000), 0);
    echo_stderr();
    cr_assert_eq(redis_int("EXISTS %s", "rw"), 0, "released");
    cr_assert_eq(run(ARGS("--write", "-r", addr, "rw", "sh", "-c", "exit 4")), 4);
}

/* A lock of the other kind under NAME: refused with 65 and one line,
 * COMMAND not run, the holder untouched. */
LWLOCK_TEST(the_other_kind_is_refused)
{
    redisReply *r;
    char buf[512];
    int code;

    hold_elsewhere("plain", 20000);
    for (int i = 0; i < 2; i++) {
        code = run(ARGS(i ? "--write" : "--read", "-w", "5s", "-r", addr, "plain", "touch", "ran"));
        cr_assert_eq(code, 65, "%s on a lock: %d", i ? "--write" : "--read", code);
        slurp("err", buf, sizeof buf);
        cr_assert(strstr(buf, "another kind"), "said '%s'", buf);
        cr_assert_eq(strchr(buf, '\n'), buf + strlen(buf) - 1, "one line: '%s'", buf);
    }
    cr_assert_eq(redis_int("HLEN %s", "plain"), 1, "the lock untouched");
    r = redis_server_command(&srv, "HSET rwheld mode read other:1 1");
    cr_assert_not_null(r);
    freeReplyObject(r);
    cr_assert_eq(redis_int("PEXPIRE %s 20000", "rwheld"), 1);
    code = run(ARGS("-w", "5s", "-r", addr, "rwheld", "touch", "ran"));
    cr_assert_eq(code, 65, "a lock on a read-write lock: %d", code);
    cr_assert(stderr_has("another kind"));
    cr_assert_not(exists("ran"), "COMMAND ran");
    cr_assert_eq(redis_int("HLEN %s", "rwheld"), 2, "the read-write lock untouched");
}

/* A name that holds another type of Redis value: for every kind, 65 and
 * one line that names the type and what was asked, with Redis's words;
 * COMMAND not run, the value untouched.  --multi names the name. */
LWLOCK_TEST(another_type_is_named_and_refused)
{
    static const struct {
        const char *flag, *name, *says;
    } cases[] = {
        {NULL, "astring", "astring holds a string, not a lock (Redis: WRONGTYPE "},
        {"--read", "alist", "alist holds a list, not a read-write lock (Redis: WRONGTYPE "},
        {"--write", "aset", "aset holds a set, not a read-write lock (Redis: WRONGTYPE "},
        {"--fair", "azset", "azset holds a sorted set, not a lock (Redis: WRONGTYPE "},
        {"--permits=2", "astring", "astring holds a string, not a semaphore (Redis: WRONGTYPE "},
        {"--permits=2", "ahash",
         "ahash holds a hash that is not a lock, nor a semaphore (Redis: WRONGTYPE "},
        {NULL, "ahash", "ahash holds a hash that is not a lock (Redis: WRONGTYPE "},
        {"--fair", "ahash", "ahash holds a hash that is not a lock (Redis: WRONGTYPE "},
        {"--write", "ahash", "ahash holds a hash that is not a lock (Redis: WRONGTYPE "},
        {NULL, "numstr",
         "numstr holds a semaphore (5 permits available, 0 taken), not a lock (Redis: "
         "WRONGTYPE "},
        {"--read", "numstr", "numstr holds a semaphore (5 permits available, 0 taken), not a "
                             "read-write lock (Redis: WRONGTYPE "},
        {"--multi", "free1,alist", "alist holds a list, not a lock (Redis: WRONGTYPE "},
    };
    char buf[1024];

    redis_do("SET astring hello");
    redis_do("RPUSH alist x");
    redis_do("SADD aset x");
    redis_do("ZADD azset 1 x");
    redis_do("HSET ahash f v");
    redis_do("SET numstr 5");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int code = cases[i].flag
                       ? run(ARGS(cases[i].flag, "-r", addr, cases[i].name, "touch", "ran"))
                       : run(ARGS("-r", addr, cases[i].name, "touch", "ran"));

        slurp("err", buf, sizeof buf);
        cr_assert_eq(code, 65, "%s %s: %d, '%s'", cases[i].flag, cases[i].name, code, buf);
        cr_assert(strncmp(buf, "lwlock: ", 8) == 0 && strstr(buf, cases[i].says),
                  "%s: said '%s'", cases[i].name, buf);
        cr_assert_eq(strchr(buf, '\n'), buf + strlen(buf) - 1, "one line: '%s'", buf);
        cr_assert_not(exists("ran"), "COMMAND ran");
    }
    cr_assert_eq(redis_int("STRLEN %s", "astring"), 5, "the string untouched");
    cr_assert_eq(redis_int("GET %s", "numstr"), 5, "the count untouched");
    cr_assert_eq(redis_int("HLEN %s", "ahash"), 1, "the hash untouched");
    cr_assert_eq(redis_int("EXISTS %s", "free1"), 0, "--multi left a name held");
}

/*
 * Issue 42's "exit codes that disagree", one by one: each is said by the
 * one table (lwlock_args.h), at once, and --status says of each name what
 * lwlock's refusal says.  A lock asked for permits is 65 whether it is
 * --permits or --set-permits; a string holding a number is a semaphore's
 * count to both; an application's hash is 65 at once even with a wait
 * (it was 75 after the wait, or never with -w -1), for every kind of
 * lock; a --multi list naming a name twice is bad usage.
 */
LWLOCK_TEST(one_table_of_exit_statuses)
{
    char out[1024];
    uint64_t t0;
    int code;

    hold_elsewhere("lk1", 20000);
    code = run(ARGS("-r", addr, "--permits", "2", "lk1", "touch", "ran"));
    cr_assert_eq(code, 65, "--permits on a lock: %d", code);
    cr_assert(stderr_has("lk1 holds a lock, not a semaphore (Redis: WRONGTYPE "));
    code = run(ARGS("-r", addr, "--set-permits", "3", "lk1"));
    cr_assert_eq(code, 65, "--set-permits on a lock: %d", code);
    cr_assert(stderr_has("lk1 holds a lock, not a semaphore (Redis: WRONGTYPE ") &&
              stderr_one_line());
    cr_assert_eq(redis_int("HLEN %s", "lk1"), 1, "the lock untouched");

    redis_do("SET numstr 5");
    code = run(ARGS("-r", addr, "numstr", "touch", "ran"));
    cr_assert_eq(code, 65, "a lock on a count: %d", code);
    cr_assert(stderr_has("numstr holds a semaphore (5 permits available, 0 taken), not a lock"));
    code = run(ARGS("-r", addr, "--status", "numstr"));
    cr_assert_eq(code, 0, "--status of a count: %d", code);
    cr_assert_str_eq(slurp("out", out, sizeof out),
                     "numstr: a semaphore, 5 permits available, 0 taken, no expiry\n");
    cr_assert_eq(run(ARGS("-r", addr, "--permits", "9", "numstr", "true")), 0,
                 "a count is a semaphore's to --permits");
    cr_assert_eq(redis_int("GET %s", "numstr"), 5, "its count kept, and given back");

    redis_do("HSET ahash f v");
    for (const char *const *kind = ARGS("--fair", "--read", "--write", "--multi", "-v"); *kind;
         kind++) {
        t0 = now_ms();
        code = run(ARGS(*kind, "-w", "10s", "-r", addr, "ahash", "touch", "ran"));
        cr_assert_eq(code, 65, "%s on an application's hash: %d", *kind, code);
        cr_assert_lt(now_ms() - t0, 5000, "%s waited %llu ms", *kind,
                     (unsigned long long)(now_ms() - t0));
        cr_assert(stderr_has("ahash holds a hash that is not a lock (Redis: WRONGTYPE "), "%s",
                  *kind);
    }
    code = run(ARGS("-r", addr, "--status", "ahash"));
    cr_assert_eq(code, 65, "--status of an application's hash: %d", code);
    cr_assert_str_eq(slurp("out", out, sizeof out), "ahash holds a hash that is not a lock\n");
    cr_assert_eq(redis_int("HLEN %s", "ahash"), 1, "the hash untouched");
    cr_assert_not(exists("ran"), "COMMAND ran");

    code = run(ARGS("-r", addr, "--multi", "a,a", "true"));
    cr_assert_eq(code, 64, "--multi a,a: %d", code);
    cr_assert(stderr_has("--multi: a is named twice in a,a"));
}

/* Another error of Redis's, in its words: out of memory. */
LWLOCK_TEST(redis_errors_in_its_words)
{
    int code;

    redis_do("CONFIG SET maxmemory 1");
    code = run(ARGS("-r", addr, "full", "touch", "ran"));
    redis_do("CONFIG SET maxmemory 0");
    cr_assert_eq(code, 69, "%d", code);
    cr_assert(stderr_has("lwlock: cannot acquire full at ") &&
                  stderr_has("Redis answered a lock command with an error (Redis: OOM command "
                             "not allowed when used memory > 'maxmemory'"),
              "no words of Redis");
    cr_assert_not(exists("ran"), "COMMAND ran");
}

/* --status --json says a UTF-8 name as it is (JSON is UTF-8), a byte that
 * is no part of a UTF-8 character as \u00XX. */
LWLOCK_TEST(status_json_keeps_utf8)
{
    char out[1024];

    cr_assert_eq(status_of("отчёт", 1, out, sizeof out), 0);
    cr_assert(strstr(out, "{\"name\": \"отчёт\", ") == out, "%s", out);
    cr_assert_eq(status_of("bad\xff\xc3(", 1, out, sizeof out), 0);
    cr_assert(strstr(out, "{\"name\": \"bad\\u00ff\\u00c3(\", ") == out, "%s", out);
    cr_assert_eq(status_of("tab\there", 1, out, sizeof out), 0);
    cr_assert(strstr(out, "\"tab\\u0009here\""), "%s", out);
}

/* Text is for a terminal: a name's or a holder's byte that is not
 * printable (ESC, a control character, no UTF-8) is shown as \xNN, so
 * that what anyone wrote to Redis cannot move the cursor or recolour it;
 * UTF-8 as it is. */
LWLOCK_TEST(status_text_escapes_bytes)
{
    char out[1024];

    cr_assert_eq(status_of("bad\x1b[2J\xff", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "bad\\x1b[2J\\xff: free\n");
    cr_assert_eq(status_of("a\\b", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "a\\\\b: free\n");
    /* An id that is not text is hex already (lw_name_status()). */
    redis_do("HSET held \x1b]0;pwned\x07:1 1");
    cr_assert_eq(status_of("held", 0, out, sizeof out), 1);
    cr_assert(strstr(out, "\n  1b5d303b70776e6564073a31  1 hold\n"), "%s", out);
    cr_assert_null(strchr(out, 0x1b), "%s", out);
    cr_assert_eq(status_of("отчёт", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "отчёт: free\n");
}

/* The lines lwlock has written to "out" so far. */
static int out_lines(char *buf, size_t size)
{
    int n = 0;

    slurp("out", buf, size);
    for (const char *p = buf; (p = strchr(p, '\n')); p++)
        n++;
    return n;
}

/* --observe --json: every term of a run, in order, a line each (flushed:
 * read while it runs), each leader with its no-other-until; SIGTERM ends
 * it with 0. */
LWLOCK_TEST(observe_prints_every_term_in_order)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_election *e = NULL;
    char out[4096], want[128];
    uint64_t terms[3];
    pid_t pid = start_lwlock(ARGS("-r", addr, "--observe", "--json", "el"));
    const char *p;

    cr_assert(wait_until(out_lines(out, sizeof out) == 1, 10000), "the first line: %s", out);
    cr_assert_str_eq(out, "{\"state\": \"none\"}\n");
    cr_assert_eq(lw_election_new(c, "el", 2, &e), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(lw_election_campaign(e, "v", 1, 0, &terms[i]), 0);
        cr_assert(wait_until(out_lines(out, sizeof out) == 2 + 2 * i, 5000), "%s", out);

        cr_assert_eq(lw_election_resign(e), 0);
        cr_assert(wait_until(out_lines(out, sizeof out) == 3 + 2 * i, 5000), "%s", out);
    }
    kill(pid, SIGTERM);
    cr_assert_eq(wait_child(pid, 5000), 0, "SIGTERM ends it with 0");
    echo_stderr();
    p = out;
    for (int i = 0; i < 3; i++) {
        p = strchr(p, '\n') + 1;
        snprintf(want, sizeof want, "{\"term\": %llu, \"leader\": \"", (unsigned long long)terms[i]);
        cr_assert(!strncmp(p, want, strlen(want)), "line %d: %s", 2 + 2 * i, p);
        cr_assert(strstr(p, "\"value\": \"v\", \"sure_until_ms\": "), "%s", p);
        p = strchr(p, '\n') + 1;
        cr_assert(!strncmp(p, "{\"state\": \"none\"}\n", 18), "a vacancy: %s", p);
    }
    cr_assert(terms[0] < terms[1] && terms[1] < terms[2]);
    /* --status says a leader's term and value too. */
    cr_assert_eq(lw_election_campaign(e, "v", 1, 0, &terms[0]), 0);
    cr_assert_eq(run(ARGS("-r", addr, "--status", "--json", "el")), 1);
    slurp("out", out, sizeof out);
    snprintf(want, sizeof want, "\"term\": %llu, \"value\": \"v\"", (unsigned long long)terms[0]);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert_eq(run(ARGS("-r", addr, "--status", "el")), 1);
    slurp("out", out, sizeof out);
    snprintf(want, sizeof want, "  term %llu, value \"v\"\n", (unsigned long long)terms[0]);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert_eq(lw_election_resign(e), 0);
    lw_election_free(e);
    lw_client_free(c);
}

Test(lwlock_usage, observe_takes_name_only, .init = make_dir, .fini = remove_test_dir,
     .timeout = 120)
{
    cr_assert_eq(run(ARGS("--observe", "n", "true")), 64);
    cr_assert_eq(run(ARGS("--observe", "--status", "n")), 64);
    cr_assert_eq(run(ARGS("--observe", "--read", "n")), 64);
    cr_assert_eq(run(ARGS("--observe", "--permits", "2", "n")), 64);
}

/* ---- --elect ---- */

/* A leader's COMMAND: its name and term to $LWT_DIR/<$1>, then ready,
 * then it waits (bounded) for $LWT_DIR/go. */
static const char leader_script[] =
    "echo \"$LWLOCK_NAME $LWLOCK_TERM\" > \"$LWT_DIR/$1\"; touch \"$LWT_DIR/ready\"; i=0; "
    "while [ ! -e \"$LWT_DIR/go\" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done";

/* The term a leader's COMMAND wrote to file, after its name. */
static unsigned long long term_in(const char *file, const char *name)
{
    char buf[256], seen[64];
    unsigned long long term = 0;

    cr_assert_eq(sscanf(slurp(file, buf, sizeof buf), "%63s %llu", seen, &term), 2, "'%s'", buf);
    cr_assert_str_eq(seen, name);
    return term;
}

/* --elect: COMMAND runs while leader, with LWLOCK_NAME and LWLOCK_TERM,
 * the value beside the lock; a second candidate waits (-w) in the fair
 * lock's queue, and leads once the first's COMMAND exits (the resign wakes
 * it), with a higher term; the last resign leaves nothing behind but the
 * term counter. */
LWLOCK_TEST(elect_leads_while_command_runs_and_resigns_at_exit)
{
    pid_t a = start_until_ready(ARGS("-r", addr, "-W", "3s", "--elect", "el", "--value", "alpha",
                                     "sh", "-c", leader_script, "sh", "a"));
    pid_t b;
    char buf[64];
    int code;

    cr_assert_str_eq(redis_str("HGET el %s", "leasewheel:value", buf, sizeof buf), "alpha");
    b = start_child(LWLOCK_PATH,
                    ARGS("-r", addr, "-w", "60s", "--elect", "el", "--value", "beta", "sh", "-c",
                         "echo \"$LWLOCK_NAME $LWLOCK_TERM\" > \"$LWT_DIR/b\"", "sh"),
                    NULL, "out.b", "err.b");
    cr_assert(wait_until(redis_int("LLEN %s", "redisson_lock_queue:{el}") == 1, 10000),
              "the second candidate waits in the fair lock's queue");
    cr_assert_not(exists("b"), "the second ran while the first led");
    touch("go");
    code = wait_child(a, 10000);
    echo_stderr();
    cr_assert_eq(code, 0, "the first: %d", code);
    code = wait_child(b, 10000);
    echo_file("err.b", "second lwlock stderr");
    cr_assert_eq(code, 0, "the second: %d", code);
    cr_assert_gt(term_in("b", "el"), term_in("a", "el"));
    cr_assert_eq(redis_int("EXISTS %s", "el"), 0, "resigned: lock, term and value gone");
}

/* Leadership lost (the lock deleted behind lwlock's back): COMMAND gets
 * the loss signal, lwlock exits 79 and does not campaign again. */
LWLOCK_TEST(elect_lost_signals_command_and_exits_79)
{
    pid_t pid = start_until_ready(ARGS("-r", addr, "-W", "300", "--elect", "el", "sh", "-c",
                                       TRAPPING("TERM", "0")));
    char buf[64];
    int code;

    cr_assert_str_eq(redis_str("HGET el %s", "leasewheel:value", buf, sizeof buf), "");
    cr_assert_eq(redis_int("DEL %s", "el"), 1);
    code = wait_child(pid, 5000);
    echo_stderr();
    cr_assert_eq(code, 79, "%d", code);
    cr_assert_str_eq(slurp("sig", buf, sizeof buf), "TERM\n");
    cr_assert(stderr_has("leadership of el lost"));
    cr_assert_eq(redis_int("EXISTS %s", "el"), 0, "no campaign again");
}

/* --lock-delay: a leader killed (no resign) keeps the name the delay
 * past its lease, as Redis's PTTL says from the start; the next
 * candidate leads no sooner. */
LWLOCK_TEST(elect_lock_delay_keeps_a_killed_leaders_name)
{
    pid_t a = start_until_ready(ARGS("-r", addr, "-W", "1s", "--lock-delay", "3s", "--elect", "el",
                                     "sh", "-c", leader_script, "sh", "a"));
    long long pttl = redis_int("PTTL %s", "el");
    uint64_t killed, took_ms;
    int code;

    cr_assert(pttl > 1000 && pttl <= 4000, "PTTL %lld: the lease and the delay", pttl);
    killed = lw_clock_now();
    cr_assert_eq(kill(a, SIGKILL), 0);
    wait_child(a, 5000);
    touch("go"); /* its COMMAND, orphaned, ends */
    code = run(ARGS("-r", addr, "-W", "1s", "-w", "20s", "--elect", "el", "true"));
    took_ms = (lw_clock_now() - killed) / 1000000u;
    echo_stderr();
    cr_assert_eq(code, 0, "%d", code);
    cr_assert_geq(took_ms, 3000, "led %llu ms after the kill", (unsigned long long)took_ms);
    cr_assert_lt(took_ms, 10000, "led %llu ms after the kill", (unsigned long long)took_ms);
}

/* Held by another within the wait: 75 (or -E's), COMMAND not run. */
LWLOCK_TEST(elect_not_elected_within_the_wait_exits_75)
{
    hold_elsewhere("el", 20000);
    cr_assert_eq(run(ARGS("-r", addr, "-w", "200ms", "--elect", "el", "touch", "ran")), 75);
    cr_assert(stderr_has("not elected within the wait"));
    cr_assert_eq(run(ARGS("-r", addr, "-q", "-E", "3", "--elect", "el", "touch", "ran")), 3);
    cr_assert_not(exists("ran"), "COMMAND never ran");
}

Test(lwlock_usage, elect_takes_name_value_and_command, .init = make_dir,
     .fini = remove_test_dir, .timeout = 120)
{
    cr_assert_eq(run(ARGS("--elect", "n")), 64, "no COMMAND");
    cr_assert(stderr_has("missing COMMAND"));
    cr_assert_eq(run(ARGS("--value", "v", "n", "true")), 64, "--value without --elect");
    cr_assert_eq(run(ARGS("--elect", "n", "-l", "3s", "true")), 64, "a fixed lease");
    cr_assert_eq(run(ARGS("--elect", "n", "--read", "true")), 64);
    cr_assert_eq(run(ARGS("--elect", "n", "--permits", "2", "true")), 64);
    cr_assert_eq(run(ARGS("--elect", "n", "--observe", "true")), 64);
    cr_assert_eq(run(ARGS("--elect", "n", "--fence", "true")), 64);
    cr_assert_eq(run(ARGS("--elect", "", "true")), 64, "an empty NAME");
    cr_assert_eq(run(ARGS("--lock-delay", "1s", "n", "true")), 64, "--lock-delay without --elect");
    cr_assert(stderr_has("--lock-delay goes with --elect"));
    cr_assert_eq(run(ARGS("--lock-delay", "soon", "--elect", "n", "true")), 64);
    cr_assert_eq(run(ARGS("-W", "24d", "--lock-delay", "1d", "--elect", "n", "true")), 64,
                 "the lease and the delay past the longest lease");
    cr_assert(stderr_has("together must be at most"));
}
