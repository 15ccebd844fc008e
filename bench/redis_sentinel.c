/* bench/redis_sentinel.c - see redis_sentinel.h. */
#include "redis_sentinel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"

#define NNODES (REDIS_SENTINEL_DATA + REDIS_SENTINEL_SENTINELS)

/* Running and not SIGSTOPped: one that can answer. */
static int live(const struct redis_sentinel_node *n)
{
    return n->pid && !n->stopped;
}

static redisContext *connect_node(const struct redis_sentinel_node *n, const char *password,
                                  int timeout_ms)
{
    return live(n) ? fixture_connect(n->port, password, timeout_ms) : NULL;
}

static redisReply *vcommand(const struct redis_sentinel_node *n, const char *password,
                            const char *fmt, va_list ap)
{
    redisContext *rc = connect_node(n, password, 2000);
    redisReply *r;

    if (!rc)
        return NULL;
    r = redisvCommand(rc, fmt, ap);
    redisFree(rc);
    return r;
}

redisReply *redis_sentinel_command(const struct redis_sentinel *s, int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    if (i < 0 || i >= REDIS_SENTINEL_DATA)
        return NULL;
    va_start(ap, fmt);
    r = vcommand(&s->data[i], s->data_password, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *redis_sentinel_ask(const struct redis_sentinel *s, int j, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    if (j < 0 || j >= REDIS_SENTINEL_SENTINELS)
        return NULL;
    va_start(ap, fmt);
    r = vcommand(&s->sentinel[j], s->sentinel_password, fmt, ap);
    va_end(ap);
    return r;
}

/* Write path with the text; 0 or -1. */
static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;

    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "redis_sentinel: cannot write %s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

/* Data node i, a replica of master_port (0: a master). */
static pid_t spawn_data(const struct redis_sentinel *s, int i, int master_port)
{
    const struct redis_sentinel_node *n = &s->data[i];
    char conf[340], port[16], mport[16], log[340];
    char *argv[32] = {"redis-server", conf, "--port", port, "--bind", "127.0.0.1",
                      "--repl-diskless-sync-delay", "0", "--save", "", "--appendonly", "no",
                      "--dir", (char *)n->dir, "--logfile", log,
                      "--enable-debug-command", "local"};
    int k = 18;

    snprintf(conf, sizeof conf, "%s/redis.conf", n->dir);
    snprintf(port, sizeof port, "%d", n->port);
    snprintf(mport, sizeof mport, "%d", master_port);
    snprintf(log, sizeof log, "%s/redis.log", n->dir);
    if (s->data_password[0]) {
        argv[k++] = "--requirepass";
        argv[k++] = (char *)s->data_password;
        argv[k++] = "--masterauth";
        argv[k++] = (char *)s->data_password;
    }
    if (master_port) {
        argv[k++] = "--replicaof";
        argv[k++] = "127.0.0.1";
        argv[k++] = mport;
    }
    argv[k] = NULL;
    return fixture_spawn(argv, log);
}

static pid_t spawn_sentinel(const struct redis_sentinel_node *n)
{
    char conf[340], log[340];
    char *argv[] = {"redis-server", conf, "--sentinel", NULL};

    snprintf(conf, sizeof conf, "%s/sentinel.conf", n->dir);
    snprintf(log, sizeof log, "%s/redis.log", n->dir);
    return fixture_spawn(argv, log);
}

/* n was just spawned (pid set, < 0 on failure): wait (5 s) for PONG. */
static int wait_up(struct redis_sentinel_node *n, const char *password)
{
    return fixture_wait_up(&n->pid, &n->stopped, n->port, password);
}

static int launch_data(struct redis_sentinel *s, int i, int master_port)
{
    s->data[i].pid = spawn_data(s, i, master_port);
    if (wait_up(&s->data[i], s->data_password) == 0)
        return 0;
    fprintf(stderr, "redis_sentinel: data node %d did not start on port %d (see %s)\n", i,
            s->data[i].port, s->data[i].dir);
    return -1;
}

static int launch_sentinel(struct redis_sentinel *s, int j)
{
    s->sentinel[j].pid = spawn_sentinel(&s->sentinel[j]);
    if (wait_up(&s->sentinel[j], s->sentinel_password) == 0)
        return 0;
    fprintf(stderr, "redis_sentinel: sentinel %d did not start on port %d (see %s)\n", j,
            s->sentinel[j].port, s->sentinel[j].dir);
    return -1;
}

static int write_sentinel_conf(const struct redis_sentinel *s, int j, int master_port)
{
    const struct redis_sentinel_node *n = &s->sentinel[j];
    const char *name = s->master_name;
    char text[2048], path[340];
    int len;

    /* failover-timeout bounds a failover that stalls and spaces two
     * automatic ones (twice it): short, so that a test can fail over
     * again; parallel-syncs 2 reconfigures both replicas at once. */
    len = snprintf(text, sizeof text,
                   "port %d\nbind 127.0.0.1\ndir \"%s\"\nlogfile \"%s/redis.log\"\n"
                   "sentinel monitor %s 127.0.0.1 %d %d\n"
                   "sentinel down-after-milliseconds %s 1000\n"
                   "sentinel failover-timeout %s 6000\n"
                   "sentinel parallel-syncs %s 2\n",
                   n->port, n->dir, n->dir, name, master_port, REDIS_SENTINEL_QUORUM, name,
                   name, name);
    if (s->data_password[0])
        len += snprintf(text + len, sizeof text - (size_t)len, "sentinel auth-pass %s %s\n",
                        name, s->data_password);
    if (s->sentinel_password[0])
        len += snprintf(text + len, sizeof text - (size_t)len, "requirepass %s\n",
                        s->sentinel_password);
    if (len <= 0 || (size_t)len >= sizeof text)
        return -1;
    snprintf(path, sizeof path, "%s/sentinel.conf", n->dir);
    return write_file(path, text);
}

/* A string field of a flat "name value name value ..." reply, or NULL. */
static const char *field(const redisReply *r, const char *name)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t k = 0; k + 1 < r->elements; k += 2)
        if (r->element[k]->type == REDIS_REPLY_STRING &&
            r->element[k + 1]->type == REDIS_REPLY_STRING && !strcmp(r->element[k]->str, name))
            return r->element[k + 1]->str;
    return NULL;
}

/* Sentinel j names data node m as the master, sees it healthy, and knows
 * two healthy replicas and two other sentinels. */
static int sentinel_knows_all(const struct redis_sentinel *s, int j, int m)
{
    redisReply *r = redis_sentinel_ask(s, j, "SENTINEL MASTER %s", s->master_name);
    const char *port = field(r, "port"), *flags = field(r, "flags");
    const char *reps = field(r, "num-slaves"), *others = field(r, "num-other-sentinels");
    int ok = port && flags && reps && others && atoi(port) == s->data[m].port &&
             !strcmp(flags, "master") && atoi(reps) == REDIS_SENTINEL_DATA - 1 &&
             atoi(others) == REDIS_SENTINEL_SENTINELS - 1;

    freeReplyObject(r);
    if (!ok)
        return 0;
    r = redis_sentinel_ask(s, j, "SENTINEL REPLICAS %s", s->master_name);
    ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == REDIS_SENTINEL_DATA - 1;
    for (size_t k = 0; ok && k < r->elements; k++) {
        flags = field(r->element[k], "flags");
        ok = flags && !strcmp(flags, "slave");
    }
    freeReplyObject(r);
    return ok;
}

/* Every live replica says master_link_status:up. */
static int replicas_linked(const struct redis_sentinel *s)
{
    for (int i = 0; i < REDIS_SENTINEL_DATA; i++) {
        redisReply *r;
        int ok;

        if (!live(&s->data[i]) || redis_sentinel_role(s, i) != 0)
            continue;
        r = redis_sentinel_command(s, i, "INFO replication");
        ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
        freeReplyObject(r);
        if (!ok)
            return 0;
    }
    return 1;
}

static int start_all(struct redis_sentinel *s)
{
    int64_t deadline;

    for (int i = 0; i < REDIS_SENTINEL_DATA; i++)
        if (launch_data(s, i, i ? s->data[0].port : 0) != 0)
            return -1;
    for (deadline = fixture_now_ms() + 10000; !replicas_linked(s); fixture_sleep_ms(20))
        if (fixture_now_ms() > deadline) {
            fprintf(stderr, "redis_sentinel: replicas did not sync in 10 s\n");
            return -1;
        }
    /* The sentinels come last: each learns the replicas from the master's
     * first INFO, and one another from the hello messages (every 2 s). */
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++)
        if (write_sentinel_conf(s, j, s->data[0].port) != 0 || launch_sentinel(s, j) != 0)
            return -1;
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++)
        for (deadline = fixture_now_ms() + 20000; !sentinel_knows_all(s, j, 0); fixture_sleep_ms(50))
            if (fixture_now_ms() > deadline) {
                fprintf(stderr, "redis_sentinel: sentinel %d did not learn the setup in 20 s "
                        "(see %s)\n", j, s->sentinel[j].dir);
                return -1;
            }
    return 0;
}

/* Make the temporary directory and one directory per process in it, pick
 * the ports, and write the data nodes' (empty) confs. */
static int prepare(struct redis_sentinel *s)
{
    const char *tmp = getenv("TMPDIR");
    int ports[NNODES];

    snprintf(s->dir, sizeof s->dir, "%s/lw-sentinel-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        fprintf(stderr, "redis_sentinel: mkdtemp %s: %s\n", s->dir, strerror(errno));
        s->dir[0] = 0;
        return -1;
    }
    if (fixture_free_ports(ports, NNODES) != 0)
        return -1;
    for (int k = 0; k < NNODES; k++) {
        int is_data = k < REDIS_SENTINEL_DATA;
        struct redis_sentinel_node *n =
            is_data ? &s->data[k] : &s->sentinel[k - REDIS_SENTINEL_DATA];
        char conf[340];

        n->port = ports[k];
        snprintf(n->dir, sizeof n->dir, "%s/%s%d", s->dir, is_data ? "data" : "sentinel",
                 is_data ? k : k - REDIS_SENTINEL_DATA);
        if (mkdir(n->dir, 0700) != 0)
            return -1;
        /* A conf file of its own, so that Sentinel's CONFIG REWRITE after
         * a failover succeeds as it would in production. */
        snprintf(conf, sizeof conf, "%s/redis.conf", n->dir);
        if (is_data && write_file(conf, "# leasewheel test data node\n") != 0)
            return -1;
    }
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++)
        s->sentinel_port[j] = s->sentinel[j].port;
    return 0;
}

int redis_sentinel_start(struct redis_sentinel *s, const char *master_name,
                         const char *data_password, const char *sentinel_password)
{
    memset(s, 0, sizeof *s);
    snprintf(s->master_name, sizeof s->master_name, "%s", master_name ? master_name : "mymaster");
    if (data_password)
        snprintf(s->data_password, sizeof s->data_password, "%s", data_password);
    if (sentinel_password)
        snprintf(s->sentinel_password, sizeof s->sentinel_password, "%s", sentinel_password);
    /* A port may be taken between our pick and the server's bind: a few
     * attempts, each with fresh ports. */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (prepare(s) == 0 && start_all(s) == 0)
            return 0;
        redis_sentinel_stop(s);
    }
    return -1;
}

void redis_sentinel_stop(struct redis_sentinel *s)
{
    struct redis_sentinel_node *all[NNODES];

    for (int k = 0; k < NNODES; k++)
        all[k] = k < REDIS_SENTINEL_DATA ? &s->data[k] : &s->sentinel[k - REDIS_SENTINEL_DATA];
    /* Sentinels first, so that none reacts to the data nodes going away. */
    for (int k = NNODES - 1; k >= 0; k--)
        if (all[k]->pid) {
            kill(all[k]->pid, SIGCONT);
            kill(all[k]->pid, SIGTERM);
        }
    for (int k = NNODES - 1; k >= 0; k--)
        fixture_forget(&all[k]->pid, &all[k]->stopped, 5000);
    if (s->dir[0])
        fixture_remove_tree(s->dir);
    s->dir[0] = 0;
}

void redis_sentinel_addrs(const struct redis_sentinel *s, char *buf, size_t size)
{
    size_t off = 0;

    if (size)
        buf[0] = 0;
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS && off < size; j++) {
        int w = snprintf(buf + off, size - off, "%s127.0.0.1:%d", j ? "," : "",
                         s->sentinel[j].port);

        if (w < 0)
            break;
        off += (size_t)w;
    }
}

int redis_sentinel_node_by_port(const struct redis_sentinel *s, int port)
{
    for (int i = 0; i < REDIS_SENTINEL_DATA; i++)
        if (s->data[i].port == port)
            return i;
    return -1;
}

int redis_sentinel_role(const struct redis_sentinel *s, int i)
{
    return fixture_role(redis_sentinel_command(s, i, "ROLE"));
}

/* The data node sentinel j names, -1 when unknown, -2 when down. */
static int named_by(const struct redis_sentinel *s, int j)
{
    redisReply *r = redis_sentinel_ask(s, j, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                       s->master_name);
    int m = -2;

    if (r) {
        m = -1;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING)
            m = redis_sentinel_node_by_port(s, atoi(r->element[1]->str));
    }
    freeReplyObject(r);
    return m;
}

int redis_sentinel_master(const struct redis_sentinel *s)
{
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++) {
        int m = named_by(s, j);

        if (m != -2)
            return m;
    }
    return -1;
}

/* The node a majority of the live sentinels name, or -1. */
static int majority_master(const struct redis_sentinel *s)
{
    int named[REDIS_SENTINEL_SENTINELS], nlive = 0;

    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++)
        if ((named[j] = named_by(s, j)) != -2)
            nlive++;
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++) {
        int votes = 0;

        if (named[j] < 0)
            continue;
        for (int k = 0; k < REDIS_SENTINEL_SENTINELS; k++)
            votes += named[k] == named[j];
        if (2 * votes > nlive)
            return named[j];
    }
    return -1;
}

int redis_sentinel_wait_master(const struct redis_sentinel *s, int not_node, int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;

    for (;;) {
        int m = majority_master(s);

        if (m >= 0 && m != not_node && live(&s->data[m]) && redis_sentinel_role(s, m) == 1)
            return m;
        if (fixture_now_ms() > deadline)
            break;
        fixture_sleep_ms(50);
    }
    fprintf(stderr, "redis_sentinel: no new agreed master within %d ms\n", timeout_ms);
    return -1;
}

int redis_sentinel_failover(struct redis_sentinel *s)
{
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++) {
        redisReply *r = redis_sentinel_ask(s, j, "SENTINEL FAILOVER %s", s->master_name);
        int ok = r && r->type == REDIS_REPLY_STATUS;

        if (r && !ok)
            fprintf(stderr, "redis_sentinel: sentinel %d: SENTINEL FAILOVER: %s\n", j,
                    r->type == REDIS_REPLY_ERROR ? r->str : "?");
        freeReplyObject(r);
        if (ok)
            return 0;
        if (r)
            return -1; /* it answered no: another would say the same */
    }
    return -1;
}

int redis_sentinel_failover_when_ready(struct redis_sentinel *s, int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;

    while (redis_sentinel_failover(s) != 0) {
        if (fixture_now_ms() >= deadline)
            return -1;
        fixture_sleep_ms(250);
    }
    return 0;
}

static int signal_node(struct redis_sentinel_node *n, int sig)
{
    return fixture_signal(&n->pid, &n->stopped, sig);
}

int redis_sentinel_signal(struct redis_sentinel *s, int i, int sig)
{
    if (i < 0 || i >= REDIS_SENTINEL_DATA)
        return -1;
    return signal_node(&s->data[i], sig);
}

int redis_sentinel_signal_sentinel(struct redis_sentinel *s, int j, int sig)
{
    if (j < 0 || j >= REDIS_SENTINEL_SENTINELS)
        return -1;
    return signal_node(&s->sentinel[j], sig);
}

int redis_sentinel_restart_node(struct redis_sentinel *s, int i)
{
    int m = redis_sentinel_master(s);

    if (i < 0 || i >= REDIS_SENTINEL_DATA || m < 0 || m == i) {
        fprintf(stderr, "redis_sentinel: no other master to restart node %d under\n", i);
        return -1;
    }
    if (s->data[i].pid)
        signal_node(&s->data[i], SIGTERM);
    return launch_data(s, i, s->data[m].port);
}

int redis_sentinel_restart_sentinel(struct redis_sentinel *s, int j)
{
    if (j < 0 || j >= REDIS_SENTINEL_SENTINELS)
        return -1;
    if (s->sentinel[j].pid)
        signal_node(&s->sentinel[j], SIGTERM);
    return launch_sentinel(s, j);
}

/* ROLE's offset: a master's own, a replica's processed one (-1 when the
 * replica is not connected or the node is down).  *master = the role. */
static long long role_offset(const struct redis_sentinel *s, int i, int *master)
{
    redisReply *r = redis_sentinel_command(s, i, "ROLE");
    long long off = -1;

    *master = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
        r->element[0]->type == REDIS_REPLY_STRING) {
        *master = !strcmp(r->element[0]->str, "master");
        /* master: "master", offset, replicas; replica: "slave", host,
         * port, state, offset. */
        if (*master && r->element[1]->type == REDIS_REPLY_INTEGER)
            off = r->element[1]->integer;
        else if (!*master && r->elements >= 5 && r->element[3]->type == REDIS_REPLY_STRING &&
                 !strcmp(r->element[3]->str, "connected") &&
                 r->element[4]->type == REDIS_REPLY_INTEGER)
            off = r->element[4]->integer;
    }
    freeReplyObject(r);
    return off;
}

int redis_sentinel_wait_synced(const struct redis_sentinel *s, int timeout_ms)
{
    int64_t deadline = fixture_now_ms() + timeout_ms;
    int m = redis_sentinel_master(s), role;
    long long target;

    if (m < 0 || (target = role_offset(s, m, &role)) < 0 || role != 1) {
        fprintf(stderr, "redis_sentinel: no live master to wait for\n");
        return -1;
    }
    for (;;) {
        int behind = 0;

        for (int i = 0; i < REDIS_SENTINEL_DATA && !behind; i++) {
            long long off;

            if (i == m || !live(&s->data[i]))
                continue;
            off = role_offset(s, i, &role);
            if (role == 0 && off < target)
                behind = 1;
        }
        if (!behind)
            return 0;
        if (fixture_now_ms() > deadline)
            break;
        fixture_sleep_ms(20);
    }
    fprintf(stderr, "redis_sentinel: replicas not at offset %lld within %d ms\n", target,
            timeout_ms);
    return -1;
}

/* The address ("ip:port") replica i's replication link has on the master's
 * side: the link's local address on the replica (CLIENT LIST TYPE master,
 * laddr).  0 or -1. */
static int link_addr(const struct redis_sentinel *s, int i, char *buf, size_t size)
{
    redisReply *r = redis_sentinel_command(s, i, "CLIENT LIST TYPE master");
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, " laddr=") : NULL;
    size_t len;

    if (p) {
        p += strlen(" laddr=");
        len = strcspn(p, " \n");
        if (len > 0 && len < size) {
            memcpy(buf, p, len);
            buf[len] = 0;
        } else {
            p = NULL;
        }
    }
    freeReplyObject(r);
    return p ? 0 : -1;
}

int redis_sentinel_cut_replica(struct redis_sentinel *s, int i, int on)
{
    char addr[64];
    redisReply *r;
    int m;

    if (i < 0 || i >= REDIS_SENTINEL_DATA)
        return -1;
    if (!on)
        return s->data[i].stopped ? signal_node(&s->data[i], SIGCONT) : -1;
    if (redis_sentinel_role(s, i) != 0 || link_addr(s, i, addr, sizeof addr) != 0 ||
        (m = redis_sentinel_master(s)) < 0 || m == i) {
        fprintf(stderr, "redis_sentinel: node %d is not a linked replica\n", i);
        return -1;
    }
    if (signal_node(&s->data[i], SIGSTOP) != 0)
        return -1;
    /* The filter form answers the number of clients killed. */
    r = redis_sentinel_command(s, m, "CLIENT KILL ADDR %s", addr);
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
        fprintf(stderr, "redis_sentinel: CLIENT KILL ADDR %s on node %d: %s\n", addr, m,
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no such link");
        freeReplyObject(r);
        signal_node(&s->data[i], SIGCONT);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}
