/*
 * bench/lwbench_target.c - the Redis lwbench runs against, and the small
 * things around it: Redis's CPU, deleting what lwbench made, sleeping
 * until a signal, progress lines, a thread's CPU time.
 *
 * On a server it did not start, lwbench touches only keys under its own
 * prefix ("lwbench:<pid>:<random>") and deletes them when it is done.
 *
 * lwbench's own connections are engines (adapters/engine.h) with the
 * target's credentials, DB and TLS, one for each question as a blocking
 * hiredis connection was before: the engine does TLS, hiredis 0.14 does
 * not.  With --tls and no -r the private redis-server serves TLS only, with
 * a throwaway CA and certificate made at run time (tests/fixtures'
 * tls_certs), which lwbench and its client then trust.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel/wheel.h>

#include "engine.h"
#include "lwbench.h"
#include "pipeline.h"

/* An engine on host:port as whom, which DB, which TLS. */
static int open_engine(const char *host, int port, const char *username, const char *password,
                       int db, const struct lw_tls_config *tls, const char *const *scripts,
                       unsigned nscripts, uint32_t max_inflight, uint32_t command_timeout_ms,
                       struct lw_engine **e)
{
    struct lw_engine_config cfg;

    lw_engine_config_init(&cfg);
    cfg.node.host = host;
    cfg.node.port = port;
    cfg.node.username = username;
    cfg.node.password = password;
    cfg.node.db = db;
    cfg.node.tls = *tls;
    cfg.node.connect_timeout_ms = 5000; /* a TLS handshake on a busy machine */
    cfg.node.command_timeout_ms = command_timeout_ms;
    cfg.scripts = scripts;
    cfg.nscripts = nscripts;
    cfg.max_inflight = max_inflight;
    return lw_engine_new(&cfg, e);
}

int target_engine(const struct target *t, const char *host, int port,
                  const char *const *scripts, unsigned nscripts, uint32_t max_inflight,
                  struct lw_engine **e)
{
    /* A minute: a busy shared machine is not a failure. */
    return open_engine(host, port, t->username, t->password, t->db, &t->tls, scripts, nscripts,
                       max_inflight, 60000, e);
}

int target_node(const struct target *t, const char *host, int port, struct lw_engine **e)
{
    return open_engine(host, port, t->username, t->password, t->db, &t->tls, NULL, 0,
                       DELETE_CHUNK, 30000, e);
}

struct call_ctx {
    node_reply_fn *fn;
    void *arg;
    int error_reply;
};

static void call_done(struct lw_request *req, const redisReply *r, int err, void *arg)
{
    struct call_ctx *c = arg;

    (void)req;
    if (err || !r)
        return;
    c->error_reply = r->type == REDIS_REPLY_ERROR;
    if (c->fn)
        c->fn(r, c->arg);
}

int node_call(struct lw_engine *e, node_reply_fn *fn, void *arg, int argc, const char **argv)
{
    struct call_ctx c = {fn, arg, 0};
    struct lw_request req;
    int rc;

    lw_request_init(&req);
    if ((rc = lw_request_command(&req, argc, argv, NULL)) == 0)
        rc = lw_engine_call(e, &req, call_done, &c);
    lw_request_clear(&req);
    return rc ? rc : c.error_reply ? LW_EREDIS : 0;
}

/* The engine's last connection failure (its address and why) into buf,
 * or "". */
static const char *engine_why(struct lw_engine *e, char *buf, size_t n)
{
    buf[0] = 0;
    if (e && !lw_engine_last_error(e, buf, n))
        buf[0] = 0;
    return buf;
}

/* What the sentinel said about the master. */
struct master_addr {
    char host[256];
    int port;
    int found;
    char error[160]; /* an error reply's text */
};

static void on_master_addr(const redisReply *r, void *arg)
{
    struct master_addr *m = arg;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
        snprintf(m->host, sizeof m->host, "%s", r->element[0]->str);
        m->port = atoi(r->element[1]->str);
        m->found = 1;
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(m->error, sizeof m->error, "%s", r->str);
    }
}

/* Ask sentinel j of o's URL for the master: with the sentinels'
 * credentials, and the data nodes' TLS unless $LWLOCK_SENTINEL_TLS=0.
 * 0 when it answered (m says what), else an LW_E* code (*last: why its
 * connection failed, or ""). */
static int ask_sentinel(const struct target *t, const struct opts *o, unsigned j,
                        struct master_addr *m, char *last, size_t nlast)
{
    static const struct lw_tls_config plain;
    char host[REDIS_URL_HOST_MAX];
    struct lw_engine *e = NULL;
    int port, rc;

    last[0] = 0;
    if (redis_addr_split(o->url.sentinels.addr[j], host, sizeof host, &port))
        return LW_EINVAL;
    if ((rc = open_engine(host, port, o->sentinel_username, o->sentinel_password, 0,
                          o->plain_sentinels ? &plain : &t->tls, NULL, 0, 16, 30000, &e)))
        return rc;
    rc = node_call(e, on_master_addr, m, 3,
                   (const char *[]){"SENTINEL", "GET-MASTER-ADDR-BY-NAME", o->url.master});
    if (rc && rc != LW_EREDIS)
        engine_why(e, last, nlast);
    lw_engine_free(e);
    return rc == LW_EREDIS ? 0 : rc;
}

/* -r redis-sentinel://: the master the first sentinel that answers names
 * (lwbench's own connections go there; the client asks on its own). */
static int sentinel_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    char last[300];

    snprintf(why, n, "no sentinel answered (or took $LWLOCK_SENTINEL_PASSWORD)");
    for (unsigned j = 0; j < o->url.sentinels.n; j++) {
        struct master_addr m = {.found = 0};
        int rc = ask_sentinel(t, o, j, &m, last, sizeof last);

        if (rc == 0 && m.found) {
            snprintf(t->host, sizeof t->host, "%s", m.host);
            t->port = m.port;
            return 0;
        }
        if (rc == 0)
            snprintf(why, n, "sentinel %s does not know master '%s'%s%s",
                     o->url.sentinels.addr[j], o->url.master, m.error[0] ? ": " : "", m.error);
        else if (last[0])
            snprintf(why, n, "no sentinel answered (or took $LWLOCK_SENTINEL_PASSWORD): %s",
                     last);
    }
    return TARGET_UNAVAILABLE;
}

int target_private_tls(struct target *t, struct fixture_tls *ft, char *why, size_t n)
{
    progress("making a throwaway CA and server certificate for TLS");
    if (tls_certs_make(&t->certs)) {
        snprintf(why, n, "could not make certificates for a private TLS server (is openssl "
                         "installed?)");
        return -1;
    }
    /* The server asks no client certificate; lwbench trusts its CA. */
    *ft = tls_certs_server_tls(&t->certs, TLS_CERTS_SERVER, "no");
    t->tls = (struct lw_tls_config){.enable = 1, .ca_file = t->certs.ca_file};
    return 0;
}

/* One Redis: -r's (or the master its sentinels name), or a private
 * redis-server, TLS-only with --tls. */
static int single_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    struct fixture_tls ft;

    if (o->url.sentinels.n) {
        return sentinel_open(t, o, why, n);
    } else if (o->redis) {
        snprintf(t->host, sizeof t->host, "%s", o->url.host);
        t->port = o->url.port;
    } else {
        if (o->tls.enable && target_private_tls(t, &ft, why, n))
            return -1;
        if (redis_server_start_tls(&t->server, NULL, o->tls.enable ? &ft : NULL)) {
            snprintf(why, n, "could not start a private redis-server (is it installed?)");
            return -1;
        }
        snprintf(t->host, sizeof t->host, "127.0.0.1");
        t->port = t->server.port;
        t->private_server = 1;
    }
    return 0;
}

/* PING t's Redis (in a cluster its first master) as lwbench's own
 * connections will talk to it.  0, or -1 with why. */
static int ping(const struct target *t, char *why, size_t n)
{
    struct lw_engine *e = NULL;
    char last[300] = "";
    int rc = target_node(t, t->host, t->port, &e);

    if (rc == 0 && (rc = node_call(e, NULL, NULL, 1, (const char *[]){"PING"})) != 0)
        engine_why(e, last, sizeof last);
    lw_engine_free(e);
    if (rc == 0)
        return 0;
    snprintf(why, n, "Redis at %s:%d does not answer PING%s: %s%s%s%s", t->host, t->port,
             t->password || t->db ? " (or refused the password or the DB)" : "",
             lw_strerror(rc), last[0] ? " (" : "", last, last[0] ? ")" : "");
    return -1;
}

int target_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    struct timespec now;
    int rc;

    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(t->prefix, sizeof t->prefix, "lwbench:%d:%08lx", (int)getpid(),
             (unsigned long)(now.tv_nsec ^ now.tv_sec) & 0xffffffffUL);
    t->username = o->url.username[0] ? o->url.username : NULL;
    t->password = o->url.password[0] ? o->url.password : NULL;
    t->db = o->url.db;
    t->tls = o->tls; /* a private TLS server's CA instead: target_private_tls() */
    if ((rc = o->cluster ? cluster_open(t, o, why, n) : single_open(t, o, why, n)))
        return rc;
    if (ping(t, why, n)) {
        target_close(t);
        return TARGET_UNAVAILABLE;
    }
    return 0;
}

void target_close(struct target *t)
{
    if (t->server.pid)
        redis_server_stop(&t->server);
    cluster_close(t);
    tls_certs_remove(&t->certs);
}

static double info_field(const char *info, const char *name)
{
    const char *at = strstr(info, name);

    return at ? strtod(at + strlen(name), NULL) : -1;
}

static void on_info_cpu(const redisReply *r, void *arg)
{
    double *s = arg;

    if (r->type == REDIS_REPLY_STRING) {
        double sys = info_field(r->str, "used_cpu_sys:");
        double user = info_field(r->str, "used_cpu_user:");

        if (sys >= 0 && user >= 0)
            *s = sys + user;
    }
}

/* One server's CPU seconds, or -1. */
static double server_cpu_s(const struct target *t, const char *host, int port)
{
    struct lw_engine *e = NULL;
    double s = -1;

    if (target_node(t, host, port, &e) == 0 &&
        node_call(e, on_info_cpu, &s, 2, (const char *[]){"INFO", "cpu"}))
        s = -1;
    lw_engine_free(e);
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

int deleter_open(struct deleter *d, const struct target *t, const char *host, int port)
{
    *d = (struct deleter){.bad = 0};
    if (!(d->reqs = calloc(DELETE_CHUNK, sizeof *d->reqs)) || !(d->p = calloc(1, sizeof *d->p)) ||
        target_node(t, host, port, &d->e)) {
        lw_engine_free(d->e);
        free(d->reqs);
        free(d->p);
        *d = (struct deleter){.bad = -1};
        return -1;
    }
    return 0;
}

/* Send the queued DELs and wait for their replies (integers). */
static void deleter_flush(struct deleter *d)
{
    if (!d->queued || d->bad)
        return;
    *d->p = (struct pipeline){.e = d->e, .reqs = d->reqs, .n = d->queued, .window = d->queued};
    /* Not finished within a minute: the requests stay the engine's until
     * deleter_close() frees it. */
    if (pipe_run(d->p) < 0) {
        d->bad = -1;
        return;
    }
    if (atomic_load(&d->p->failed))
        d->bad = -1;
    for (uint32_t i = 0; i < d->queued; i++) {
        lw_request_clear(&d->reqs[i]);
        lw_request_init(&d->reqs[i]);
    }
    d->queued = 0;
}

void deleter_add(struct deleter *d, const char *p, uint32_t i)
{
    char name[128], token[136], redisson[160];

    if (d->bad)
        return;
    /* The token key as it was named first, and as Redisson names it
     * (prefix:{name}): one of them is there, both in the lock's slot. */
    key_name(name, sizeof name, p, i);
    snprintf(token, sizeof token, "{%s}:token", name);
    snprintf(redisson, sizeof redisson, "redisson_lock_token:{%s}", name);
    if (lw_request_command(&d->reqs[d->queued], 4,
                           (const char *[]){"DEL", name, token, redisson}, NULL)) {
        d->bad = -1;
        return;
    }
    if (++d->queued == DELETE_CHUNK)
        deleter_flush(d);
}

int deleter_close(struct deleter *d)
{
    int bad;

    deleter_flush(d);
    bad = d->bad;
    lw_engine_free(d->e); /* first: it may still hold requests */
    pipe_free_reqs(d->reqs, DELETE_CHUNK);
    free(d->p);
    *d = (struct deleter){.bad = bad};
    return bad;
}

int target_delete(const struct target *t, const char *p, uint32_t count)
{
    struct deleter d;

    if (t->cluster)
        return cluster_delete(t, p, count);
    if (deleter_open(&d, t, t->host, t->port))
        return -1;
    for (uint32_t i = 0; i < count && !d.bad; i++)
        deleter_add(&d, p, i);
    return deleter_close(&d);
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
