/*
 * bench/lwbench_target.c - the Redis lwbench runs against, and the small
 * things around it: Redis's CPU, deleting what lwbench made, sleeping
 * until a signal, progress lines, a thread's CPU time.
 *
 * On a server it did not start, lwbench touches only keys under its own
 * prefix ("lwbench:<pid>:<random>") and deletes them when it is done.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <leasewheel/wheel.h>

#include "cli_util.h"
#include "engine.h"
#include "lwbench.h"

#define DELETE_CHUNK 1000u /* DELs pipelined before reading their replies */

/* The command's reply is not an error. */
static int command_ok(redisContext *rc, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;
    int ok;

    va_start(ap, fmt);
    r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    ok = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    return ok;
}

redisContext *target_connect(const struct target *t, const char *host, int port)
{
    redisContext *rc = cli_connect(host, port);

    if (!rc)
        return NULL;
    if ((t->password && !(t->username ? command_ok(rc, "AUTH %s %s", t->username, t->password)
                                      : command_ok(rc, "AUTH %s", t->password))) ||
        (t->db && !command_ok(rc, "SELECT %d", t->db))) {
        redisFree(rc);
        return NULL;
    }
    return rc;
}

static redisContext *connect_sync(const struct target *t)
{
    return target_connect(t, t->host, t->port);
}

int target_engine(const struct target *t, const char *host, int port,
                  const char *const *scripts, unsigned nscripts, uint32_t max_inflight,
                  struct lw_engine **e)
{
    struct lw_engine_config cfg;

    lw_engine_config_init(&cfg);
    cfg.node.host = host;
    cfg.node.port = port;
    cfg.node.username = t->username;
    cfg.node.password = t->password;
    cfg.node.db = t->db;
    cfg.scripts = scripts;
    cfg.nscripts = nscripts;
    cfg.max_inflight = max_inflight;
    cfg.node.command_timeout_ms = 60000; /* a busy shared machine is not a failure */
    return lw_engine_new(&cfg, e);
}

/* Sentinel j of o's URL, connected (and authenticated), or NULL. */
static redisContext *sentinel_connect(const struct opts *o, unsigned j)
{
    char host[REDIS_URL_HOST_MAX];
    redisContext *rc;
    int port;

    if (redis_addr_split(o->url.sentinels.addr[j], host, sizeof host, &port) ||
        !(rc = cli_connect(host, port)))
        return NULL;
    if (o->sentinel_password &&
        !(o->sentinel_username
              ? command_ok(rc, "AUTH %s %s", o->sentinel_username, o->sentinel_password)
              : command_ok(rc, "AUTH %s", o->sentinel_password))) {
        redisFree(rc);
        return NULL;
    }
    return rc;
}

/* -r redis-sentinel://: the master the first sentinel that answers names
 * (lwbench's own connections go there; the client asks on its own). */
static int sentinel_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    snprintf(why, n, "no sentinel answered (or took $LWLOCK_SENTINEL_PASSWORD)");
    for (unsigned j = 0; j < o->url.sentinels.n; j++) {
        redisContext *rc = sentinel_connect(o, j);
        redisReply *r = rc ? redisCommand(rc, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                          o->url.master)
                           : NULL;
        int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                 r->element[0]->type == REDIS_REPLY_STRING &&
                 r->element[1]->type == REDIS_REPLY_STRING;

        if (ok) {
            snprintf(t->host, sizeof t->host, "%s", r->element[0]->str);
            t->port = atoi(r->element[1]->str);
        } else if (r) {
            snprintf(why, n, "sentinel %s does not know master '%s'%s%s",
                     o->url.sentinels.addr[j], o->url.master,
                     r->type == REDIS_REPLY_ERROR ? ": " : "",
                     r->type == REDIS_REPLY_ERROR ? r->str : "");
        }
        freeReplyObject(r);
        redisFree(rc);
        if (ok)
            return 0;
    }
    return -1;
}

/* One Redis: -r's (or the master its sentinels name), or a private
 * redis-server. */
static int single_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    if (o->url.sentinels.n) {
        return sentinel_open(t, o, why, n);
    } else if (o->redis) {
        snprintf(t->host, sizeof t->host, "%s", o->url.host);
        t->port = o->url.port;
    } else {
        /* The private redis-server.  With --tls (o->tls.enable) it is to
         * serve TLS, with certificates the client then trusts: the test
         * fixtures' part (tests/fixtures), refused in target_open() until
         * they have it. */
        if (redis_server_start(&t->server, NULL)) {
            snprintf(why, n, "could not start a private redis-server (is it installed?)");
            return -1;
        }
        snprintf(t->host, sizeof t->host, "127.0.0.1");
        t->port = t->server.port;
        t->private_server = 1;
    }
    return 0;
}

int target_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    struct timespec now;
    redisContext *rc;

    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(t->prefix, sizeof t->prefix, "lwbench:%d:%08lx", (int)getpid(),
             (unsigned long)(now.tv_nsec ^ now.tv_sec) & 0xffffffffUL);
    t->username = o->url.username[0] ? o->url.username : NULL;
    t->password = o->url.password[0] ? o->url.password : NULL;
    t->db = o->url.db;
    /*
     * TLS (o->tls): the client's connections have it (client_config()),
     * lwbench's own do not yet: target_connect(), sentinel_connect() and
     * target_engine() (PING, INFO, deleting keys, the ceiling's floods)
     * are plain TCP, and the private redis-server (single_open()) and
     * cluster (cluster_open()) serve no TLS.  Drop this once they do.
     */
    if (o->tls.enable) {
        snprintf(why, n, "TLS: lwbench's own connections (PING, INFO, the ceiling, deleting "
                         "its keys) and its private servers do not do TLS yet");
        return -1;
    }
    if (o->cluster ? cluster_open(t, o, why, n) : single_open(t, o, why, n))
        return -1;
    if (!(rc = connect_sync(t)) || !command_ok(rc, "PING")) {
        snprintf(why, n, "Redis at %s:%d does not answer PING%s", t->host, t->port,
                 t->password || t->db ? " (or refused the password or the DB)" : "");
        redisFree(rc);
        target_close(t);
        return -1;
    }
    redisFree(rc);
    return 0;
}

void target_close(struct target *t)
{
    if (t->server.pid)
        redis_server_stop(&t->server);
    cluster_close(t);
}

static double info_field(const char *info, const char *name)
{
    const char *at = strstr(info, name);

    return at ? strtod(at + strlen(name), NULL) : -1;
}

/* One server's CPU seconds, or -1. */
static double server_cpu_s(const struct target *t, const char *host, int port)
{
    redisContext *rc = target_connect(t, host, port);
    redisReply *r = rc ? redisCommand(rc, "INFO cpu") : NULL;
    double s = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        double sys = info_field(r->str, "used_cpu_sys:");
        double user = info_field(r->str, "used_cpu_user:");

        if (sys >= 0 && user >= 0)
            s = sys + user;
    }
    if (r)
        freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return s;
}

double target_cpu_s(const struct target *t)
{
    double sum = 0;

    if (!t->cluster)
        return server_cpu_s(t, t->host, t->port);
    /* A cluster: the masters' together (the replicas' replication is not
     * the renewals' cost). */
    for (unsigned i = 0; i < t->nmasters; i++) {
        double s = server_cpu_s(t, t->masters[i].host, t->masters[i].port);

        if (s < 0)
            return -1;
        sum += s;
    }
    return sum;
}

int key_name(char *buf, size_t n, const char *p, uint32_t i)
{
    return snprintf(buf, n, "%s:%u", p, i);
}

int read_replies(redisContext *rc, uint32_t count)
{
    int bad = 0;

    for (uint32_t i = 0; i < count; i++) {
        redisReply *r = NULL;

        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
            return -1;
        bad |= r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
    }
    return bad ? -1 : 0;
}

void append_delete(redisContext *rc, const char *p, uint32_t i)
{
    char name[128];

    /* The token key as it was named first, and as Redisson names it
     * (prefix:{name}): one of them is there, both in the lock's slot. */
    key_name(name, sizeof name, p, i);
    redisAppendCommand(rc, "DEL %s {%s}:token redisson_lock_token:{%s}", name, name, name);
}

int target_delete(const struct target *t, const char *p, uint32_t count)
{
    redisContext *rc;
    uint32_t queued = 0;
    int bad;

    if (t->cluster)
        return cluster_delete(t, p, count);
    rc = connect_sync(t);
    bad = rc ? 0 : -1;
    for (uint32_t i = 0; !bad && i < count; i++) {
        append_delete(rc, p, i);
        if (++queued == DELETE_CHUNK || i + 1 == count) {
            bad = read_replies(rc, queued);
            queued = 0;
        }
    }
    if (rc)
        redisFree(rc);
    return bad;
}

int nap(const struct target *t, double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    uint64_t end = lw_clock_now() + (uint64_t)(s * 1e9);

    for (;;) {
        uint64_t now;

        if (sigtimedwait(&t->stop_signals, NULL, &ts) > 0)
            return 1;
        if (errno != EINTR || (now = lw_clock_now()) >= end)
            return 0;
        ts.tv_sec = (time_t)((end - now) / 1000000000u);
        ts.tv_nsec = (long)((end - now) % 1000000000u);
    }
}

void progress(const char *fmt, ...)
{
    static const char *const ends[] = {"\n", "\033[K\r"};
    int tty = isatty(STDERR_FILENO);
    va_list ap;

    va_start(ap, fmt);
    fputs("lwbench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(ends[tty], stderr);
    va_end(ap);
}

double thread_cpu_s(int tid)
{
    char path[64], buf[1024], *paren;
    unsigned long long utime, stime;
    FILE *f;
    size_t got;

    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (!(f = fopen(path, "r")))
        return -1;
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    /* After the command name's ')': state is field 3, utime 14, stime 15. */
    if (!(paren = strrchr(buf, ')')) ||
        sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}
