/*
 * tests/fuzz/fuzz_lwlock_args.c - lwlock's command line
 * (tools/lwlock_args.c) and the Redis addresses it takes
 * (tools/redis_url.c).
 *
 * Input: NUL-separated pieces; the first is $LWLOCK_REDIS (empty: unset),
 * the others are argv[1..] (argv[0] is "lwlock").
 *
 * Oracle: the result is one of the three kinds, each with its output and
 * nothing else: -1 (go on) with NAME and COMMAND inside argv and every
 * option in its documented range (the address, credentials, DB, cluster
 * seeds, a Sentinel URL's sentinels and master, and the TLS flags
 * included), silent; 0 with the help or the version
 * on out; 64 with one "lwlock: ..." message and the hint on err.  argv is
 * left as it was.  And parsing is repeatable: the same argv parsed again,
 * after a parse that stopped inside a group of short options of another
 * argv since freed, gives the same result (getopt's hidden state is reset;
 * ASan sees a use-after-free if it is not).
 */
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include <leasewheel.h>

#include "fuzz_util.h"
#include "lwlock_args.h"

/* One parse's result and output. */
struct parsed {
    int rc;
    struct lwlock_options o;
    char *out, *err;
    size_t out_len, err_len;
};

static void parse(int argc, char **argv, const char *env, struct parsed *p)
{
    FILE *out = open_memstream(&p->out, &p->out_len);
    FILE *err = open_memstream(&p->err, &p->err_len);

    FUZZ_CHECK(out && err, "open_memstream");
    p->rc = lwlock_parse_args(argc, argv, env, NULL, &p->o, out, err);
    fclose(out);
    fclose(err);
}

static void parsed_free(struct parsed *p)
{
    free(p->out);
    free(p->err);
}

static int ends_with(const char *s, size_t len, const char *end)
{
    size_t n = strlen(end);

    return len >= n && memcmp(s + len - n, end, n) == 0;
}

/* How lwlock names the signal in its messages; cut short, still a string. */
static void check_signal_name(int sig)
{
    char buf[24], tiny[4];

    lwlock_signal_name(sig, buf, sizeof buf);
    FUZZ_CHECK(strncmp(buf, "SIG", 3) == 0 || strncmp(buf, "signal ", 7) == 0, "'%s'", buf);
    FUZZ_CHECK(lwlock_signal_name(sig, tiny, sizeof tiny) == tiny && strlen(tiny) < sizeof tiny,
               "a 4-byte buffer");
}

/* redis-sentinel://: 1..LW_MAX_SENTINELS distinct "host:port", a master
 * name of one word without '@', no host or port of its own, no -c. */
static void check_sentinels(const struct lwlock_options *o)
{
    const struct redis_seeds *s = &o->redis.sentinels;
    char host[REDIS_URL_HOST_MAX];
    int port;

    FUZZ_CHECK(s->n <= LW_MAX_SENTINELS && !o->cluster.n, "%u sentinels, %u seeds", s->n,
               o->cluster.n);
    FUZZ_CHECK(!o->redis.host[0] && o->redis.port == 0, "a host besides the sentinels");
    FUZZ_CHECK(o->redis.master[0] && strlen(o->redis.master) < sizeof o->redis.master &&
                   !strpbrk(o->redis.master, " \t\n\r\v\f@#"),
               "master '%s'", o->redis.master);
    for (unsigned i = 0; i < s->n; i++) {
        FUZZ_CHECK(s->ptr[i] == s->addr[i], "sentinel pointer %u", i);
        FUZZ_CHECK(redis_addr_split(s->addr[i], host, sizeof host, &port) == 0 &&
                       !strchr(host, ','),
                   "sentinel '%s'", s->addr[i]);
        for (unsigned j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(s->addr[i], s->addr[j]), "sentinel '%s' twice", s->addr[i]);
    }
}

/* p points into one of argv's strings (an option's value, or what follows
 * its '='). */
static int in_argv(const char *p, int argc, char **argv)
{
    for (int k = 1; k < argc; k++)
        if (p >= argv[k] && p <= argv[k] + strlen(argv[k]))
            return 1;
    return 0;
}

/* The TLS flags (tls_opts.h): values from argv, not empty; the others
 * only with TLS, which a rediss address turns on; --cert with --key. */
static void check_tls(const struct lwlock_options *o, int argc, char **argv)
{
    const struct lw_tls_config *t = &o->tls;
    const char *const values[] = {t->ca_file, t->ca_dir, t->cert_file, t->key_file,
                                  t->server_name};

    FUZZ_CHECK(t->enable == 0 || t->enable == 1, "enable %d", t->enable);
    FUZZ_CHECK(t->insecure == 0 || t->insecure == 1, "insecure %d", t->insecure);
    FUZZ_CHECK(!o->redis.tls || t->enable, "a rediss address without TLS");
    FUZZ_CHECK(!t->ssl_ctx && !o->plain_sentinels, "ssl_ctx or plain_sentinels set");
    FUZZ_CHECK(!t->cert_file == !t->key_file, "--cert without --key or the reverse");
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (!values[i])
            continue;
        FUZZ_CHECK(t->enable, "value %zu without TLS", i);
        FUZZ_CHECK(values[i][0] && in_argv(values[i], argc, argv), "value %zu not from argv",
                   i);
    }
    FUZZ_CHECK(!t->insecure || t->enable, "--insecure without TLS");
    FUZZ_CHECK(!t->server_name ||
                   (strlen(t->server_name) <= TLS_SNI_MAX &&
                    !strpbrk(t->server_name, " \t\n\r\v\f")),
               "--sni '%s'", t->server_name);
}

/* --multi's list names each name once (the library refuses a name
 * twice, which lwlock must say as bad usage). */
static int names_distinct(const char *list)
{
    for (const char *a = list; a; a = strchr(a, ',') ? strchr(a, ',') + 1 : NULL) {
        size_t la = strcspn(a, ",");

        for (const char *b = strchr(a, ','); b; b = strchr(b + 1, ','))
            if (strcspn(b + 1, ",") == la && !strncmp(a, b + 1, la))
                return 0;
    }
    return 1;
}

/* -1: the options within their ranges, NAME and COMMAND from argv. */
static void check_go_on(const struct parsed *p, int argc, char **argv)
{
    const struct lwlock_options *o = &p->o;
    int k = 1;

    while (k < argc && argv[k] != o->name)
        k++;
    /* --elect NAME: NAME is its value, COMMAND the rest of argv */
    if (o->elect)
        FUZZ_CHECK(in_argv(o->name, argc, argv) && o->command && o->command[0] &&
                       o->command > argv && o->command < argv + argc && o->value &&
                       strlen(o->value) <= LW_ELECTION_VALUE_MAX && !o->status && !o->observe &&
                       !o->json && o->kind == LWLOCK_PLAIN && !o->permits &&
                       o->set_permits < 0 && !o->fence && !o->lease_ms && !o->min_hold_ms &&
                       !o->max_hold_ms && !o->replicas &&
                       (uint64_t)o->watchdog_ms + o->lock_delay_ms <= LW_MAX_LEASE_MS,
                   "--elect with NAME/COMMAND not from argv, with another mode, or a lock "
                   "delay past the longest lease");
    /* --status, --observe, --set-permits: NAME, no COMMAND */
    else if (o->status || o->observe || o->set_permits >= 0)
        FUZZ_CHECK(k == argc - 1 && !o->command,
                   "--status, --observe or --set-permits with a COMMAND");
    else
        FUZZ_CHECK(k < argc - 1 && o->command == argv + k + 1, "NAME/COMMAND not from argv");
    FUZZ_CHECK(!o->value || o->elect, "--value without --elect");
    FUZZ_CHECK(!o->lock_delay_ms || o->elect, "--lock-delay without --elect");
    FUZZ_CHECK(!o->json || o->status || o->observe, "--json without --status or --observe");
    FUZZ_CHECK(!o->observe || (!o->status && o->kind == LWLOCK_PLAIN && !o->permits &&
                               o->set_permits < 0 && !o->fence),
               "--observe with --status, a kind, permits or --fence");
    FUZZ_CHECK(!o->status || o->kind == LWLOCK_PLAIN, "--status with --read or --write");
    FUZZ_CHECK(!o->min_hold_ms || o->kind == LWLOCK_PLAIN, "--min-hold with --read or --write");
    FUZZ_CHECK(!o->min_hold_ms || !o->permits, "--min-hold with --permits");
    FUZZ_CHECK((!o->permits && o->set_permits < 0) || o->kind == LWLOCK_PLAIN,
               "--permits or --set-permits with --read or --write");
    FUZZ_CHECK(o->name[0] && strlen(o->name) <= LW_LOCK_NAME_MAX, "NAME of %zu bytes",
               strlen(o->name));
    FUZZ_CHECK(o->kind != LWLOCK_MULTI || (!o->replicas && names_distinct(o->name)),
               "--multi '%s' with a name twice or --replicas", o->name);
    FUZZ_CHECK(o->prefix ? o->prefix[0] && in_argv(o->prefix, argc, argv) &&
                               strlen(o->prefix) + 1 + strlen(o->name) == strlen(o->key) &&
                               !strncmp(o->key, o->prefix, strlen(o->prefix)) &&
                               !strcmp(o->key + strlen(o->prefix) + 1, o->name)
                         : !strcmp(o->key, o->name),
               "key '%s' of prefix '%s' and NAME '%s'", o->key, o->prefix ? o->prefix : "",
               o->name);
    if (o->redis.sentinels.n)
        check_sentinels(o);
    else
        FUZZ_CHECK(o->redis.host[0] && strlen(o->redis.host) < sizeof o->redis.host &&
                       o->redis.port >= 1 && o->redis.port <= 65535 && !o->redis.master[0],
                   "host '%s', port %d", o->redis.host, o->redis.port);
    FUZZ_CHECK(o->redis.db >= 0 && o->redis.db <= 65535, "db %d", o->redis.db);
    FUZZ_CHECK(strlen(o->redis.username) < sizeof o->redis.username &&
                   strlen(o->redis.password) < sizeof o->redis.password,
               "credentials");
    FUZZ_CHECK(o->cluster.n <= LW_MAX_CLUSTER_SEEDS, "%u seeds", o->cluster.n);
    FUZZ_CHECK(!o->cluster.n || o->redis.db == 0, "a cluster with db %d", o->redis.db);
    for (unsigned i = 0; i < o->cluster.n; i++) {
        const char *colon = strrchr(o->cluster.addr[i], ':');

        FUZZ_CHECK(o->cluster.ptr[i] == o->cluster.addr[i], "seed pointer %u", i);
        FUZZ_CHECK(colon && colon > o->cluster.addr[i] && atoi(colon + 1) >= 1 &&
                       atoi(colon + 1) <= 65535 && !strchr(o->cluster.addr[i], ','),
                   "seed '%s'", o->cluster.addr[i]);
    }
    FUZZ_CHECK(o->wait_ms >= -1 && o->wait_ms <= LWLOCK_MAX_MS, "wait %lld", o->wait_ms);
    FUZZ_CHECK(o->lease_ms == 0 || (o->lease_ms >= LW_MIN_LEASE_MS &&
                                    o->lease_ms <= LWLOCK_MAX_MS),
               "lease %u", o->lease_ms);
    FUZZ_CHECK(o->watchdog_ms >= LW_MIN_LEASE_MS && o->watchdog_ms <= LWLOCK_MAX_MS,
               "watchdog %u", o->watchdog_ms);
    FUZZ_CHECK(o->lost_sig >= 1 && o->lost_sig <= SIGRTMAX, "signal %d", o->lost_sig);
    FUZZ_CHECK(o->replicas <= LWLOCK_MAX_REPLICAS, "replicas %u", o->replicas);
    FUZZ_CHECK(o->warn_sig == 0 || (o->warn_sig >= 1 && o->warn_sig <= SIGRTMAX &&
                                    o->warn_sig != o->lost_sig),
               "warning signal %d (lost %d)", o->warn_sig, o->lost_sig);
    FUZZ_CHECK(o->max_hold_ms <= LWLOCK_MAX_MS, "max hold %llu",
               (unsigned long long)o->max_hold_ms);
    FUZZ_CHECK(!o->lease_ms || (!o->warn_sig && !o->max_hold_ms),
               "a fixed lease with --warn-signal or --max-hold");
    FUZZ_CHECK(o->verbose == 0 || o->verbose == 1, "verbose %d", o->verbose);
    FUZZ_CHECK(o->quiet == 0 || o->quiet == 1, "quiet %d", o->quiet);
    FUZZ_CHECK(o->min_hold_ms <= LWLOCK_MAX_MS &&
                   (!o->max_hold_ms || o->min_hold_ms <= o->max_hold_ms),
               "min hold %llu, max hold %llu", (unsigned long long)o->min_hold_ms,
               (unsigned long long)o->max_hold_ms);
    FUZZ_CHECK(o->conflict_exit >= 0 && o->conflict_exit <= 255, "-E %d", o->conflict_exit);
    check_tls(o, argc, argv);
    FUZZ_CHECK(p->out_len == 0 && p->err_len == 0, "printed something");
    check_signal_name(o->lost_sig);
}

static void check_result(const struct parsed *p, int argc, char **argv)
{
    if (p->rc == -1) {
        check_go_on(p, argc, argv);
    } else if (p->rc == 0) {
        FUZZ_CHECK(p->err_len == 0, "0 with an error message");
        /* The help, or the one line "lwlock <version>". */
        FUZZ_CHECK(strncmp(p->out, "Usage: lwlock", 13) == 0 ||
                       (strncmp(p->out, "lwlock ", 7) == 0 &&
                        strchr(p->out, '\n') == p->out + p->out_len - 1),
                   "0 without help or version: '%s'", p->out);
    } else {
        FUZZ_CHECK(p->rc == EXIT_USAGE, "exit status %d", p->rc);
        FUZZ_CHECK(p->out_len == 0, "64 with something on out");
        FUZZ_CHECK(strncmp(p->err, "lwlock: ", 8) == 0 &&
                       ends_with(p->err, p->err_len,
                                 "\nTry 'lwlock --help' for more information.\n"),
                   "64 with '%s'", p->err);
    }
}

/* The same address: the sentinels' pointers point into each one's own. */
static int same_url(const struct redis_url *a, const struct redis_url *b)
{
    return !memcmp(a, b, offsetof(struct redis_url, sentinels)) &&
           a->sentinels.n == b->sentinels.n &&
           !memcmp(a->sentinels.addr, b->sentinels.addr, sizeof a->sentinels.addr) &&
           !memcmp(a->master, b->master, sizeof a->master);
}

static int same(const struct parsed *a, const struct parsed *b)
{
    if (a->rc != b->rc || a->out_len != b->out_len || a->err_len != b->err_len ||
        memcmp(a->out, b->out, a->out_len) || memcmp(a->err, b->err, a->err_len))
        return 0;
    return a->rc != -1 ||
           (same_url(&a->o.redis, &b->o.redis) &&
            a->o.cluster.n == b->o.cluster.n &&
            !memcmp(a->o.cluster.addr, b->o.cluster.addr, sizeof a->o.cluster.addr) &&
            a->o.wait_ms == b->o.wait_ms && a->o.lease_ms == b->o.lease_ms &&
            a->o.watchdog_ms == b->o.watchdog_ms && a->o.lost_sig == b->o.lost_sig &&
            a->o.replicas == b->o.replicas && a->o.conflict_exit == b->o.conflict_exit &&
            a->o.quiet == b->o.quiet &&
            a->o.min_hold_ms == b->o.min_hold_ms && a->o.status == b->o.status &&
            a->o.kind == b->o.kind &&
            a->o.json == b->o.json && !memcmp(&a->o.tls, &b->o.tls, sizeof a->o.tls) &&
            a->o.name == b->o.name && a->o.prefix == b->o.prefix && a->o.command == b->o.command);
}

/* A parse that returns inside "-hw5" (at -h), the argv then freed: what
 * getopt remembers of it must not reach the next parse. */
static void parse_and_free_group(void)
{
    char *args[] = {strdup("lwlock"), strdup("-hw5"), NULL};
    struct parsed p = {0};

    FUZZ_CHECK(args[0] && args[1], "out of memory");
    parse(2, args, NULL, &p);
    FUZZ_CHECK(p.rc == 0, "-hw5: %d", p.rc);
    parsed_free(&p);
    free(args[0]);
    free(args[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char prog[] = "lwlock";
    struct fuzz_pieces f;
    struct parsed first = {0}, again = {0};
    char **argv, **copy, *env;
    int argc;

    fuzz_split(data, size, 0, &f);
    /* The first piece is the environment's; argv is "lwlock", the other
     * pieces, NULL. */
    argv = f.p;
    argc = f.n;
    env = argv[0];
    argv[0] = prog;
    copy = malloc(((size_t)argc + 1) * sizeof *copy);
    FUZZ_CHECK(copy, "out of memory");
    memcpy(copy, argv, ((size_t)argc + 1) * sizeof *copy);
    parse(argc, argv, env, &first);
    FUZZ_CHECK(memcmp(copy, argv, ((size_t)argc + 1) * sizeof *copy) == 0, "argv changed");
    check_result(&first, argc, argv);
    parse_and_free_group();
    parse(argc, argv, env, &again);
    FUZZ_CHECK(same(&first, &again), "parsed twice: %d then %d", first.rc, again.rc);
    parsed_free(&first);
    parsed_free(&again);
    argv[0] = env;
    fuzz_pieces_free(&f);
    free(copy);
    return 0;
}
