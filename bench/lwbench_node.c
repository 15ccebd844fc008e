/*
 * bench/lwbench_node.c - lwbench's connections to one node and the small
 * things every part of it uses: an engine with the target's credentials,
 * DB and TLS (target_engine(), target_node()), one command on it
 * (node_call()), pipelined DELs (struct deleter), a private TLS server's
 * certificates, sleeping until a signal, progress lines, a thread's CPU
 * time.  lwbench_target.c (the target) and lwbench_cluster.c (a cluster's
 * nodes) both call down into it; it calls neither.
 *
 * lwbench's own connections are engines (adapters/engine.h), one for each
 * question as a blocking hiredis connection was before: the engine does
 * TLS, hiredis 0.14 does not.
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

int node_engine(const char *host, int port, const char *username, const char *password,
                int db, const struct lw_tls_config *tls, const char *const *scripts,
                unsigned nscripts, uint32_t max_inflight, uint32_t command_timeout_ms,
                struct engine **e)
{
    struct engine_config cfg;

    engine_config_init(&cfg);
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
    return engine_new(&cfg, e);
}

int target_engine(const struct target *t, const char *host, int port,
                  const char *const *scripts, unsigned nscripts, uint32_t max_inflight,
                  struct engine **e)
{
    /* A minute: a busy shared machine is not a failure. */
    return node_engine(host, port, t->username, t->password, t->db, &t->tls, scripts, nscripts,
                       max_inflight, 60000, e);
}

int target_node(const struct target *t, const char *host, int port, struct engine **e)
{
    return node_engine(host, port, t->username, t->password, t->db, &t->tls, NULL, 0,
                       DELETE_CHUNK, 30000, e);
}

struct call_ctx {
    node_reply_fn *fn;
    void *arg;
    int error_reply;
};

static void call_done(struct request *req, const redisReply *r, int err, void *arg)
{
    struct call_ctx *c = arg;

    (void)req;
    if (err || !r)
        return;
    c->error_reply = r->type == REDIS_REPLY_ERROR;
    if (c->fn)
        c->fn(r, c->arg);
}

int node_call(struct engine *e, node_reply_fn *fn, void *arg, int argc, const char **argv)
{
    struct call_ctx c = {fn, arg, 0};
    struct request req;
    int rc;

    request_init(&req);
    if ((rc = request_command(&req, argc, argv, NULL)) == 0)
        rc = engine_call(e, &req, call_done, &c);
    request_clear(&req);
    return rc ? rc : c.error_reply ? LW_EREDIS
                                   : 0;
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

int key_name(char *buf, size_t n, const char *p, uint32_t i)
{
    return snprintf(buf, n, "%s:{%u}", p, i);
}

void run_host(char *buf, size_t n)
{
    char host[256] = "";
    size_t k = 0;

    if (gethostname(host, sizeof host - 1) || !host[0])
        snprintf(host, sizeof host, "localhost");
    for (const char *h = host; *h && k + 1 < n && k < LWB_HOST_MAX; h++, k++)
        buf[k] = (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') ||
                         (*h >= '0' && *h <= '9') || *h == '.' || *h == '-' || *h == '_'
                     ? *h
                     : '_';
    if (n)
        buf[k] = 0;
}

unsigned long long proc_start(int pid)
{
    char path[64], buf[1024], *paren;
    unsigned long long start;
    size_t got;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (!(f = fopen(path, "re")))
        return 0;
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    /* After the command name's ')': state is field 3, starttime 22. */
    if (!(paren = strrchr(buf, ')')) ||
        sscanf(paren + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &start) != 1)
        return 0;
    return start;
}

void run_prefix(char *buf, size_t n)
{
    char host[LWB_HOST_MAX + 1];

    run_host(host, sizeof host);
    snprintf(buf, n, "lwbench:%s:%d:%llu", host, (int)getpid(), proc_start((int)getpid()));
}

int deleter_open(struct deleter *d, const struct target *t, const char *host, int port)
{
    *d = (struct deleter){.bad = 0};
    if (!(d->reqs = calloc(DELETE_CHUNK, sizeof *d->reqs)) || !(d->p = calloc(1, sizeof *d->p)) ||
        target_node(t, host, port, &d->e)) {
        engine_free(d->e);
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
        request_clear(&d->reqs[i]);
        request_init(&d->reqs[i]);
    }
    d->queued = 0;
}

/* A read-write lock's hash with its readers' timeout keys (Redisson's
 * "{name}:<field>:rwlock_timeout:<i>", i up to the field's hold count;
 * "name:..." when the name has a '{', as lwbench's names have): every key
 * in the lock's slot.  The number deleted. */
static const char delete_read_holds[] =
    "local n = 0 "
    "if redis.call('type', KEYS[1]).ok == 'hash' then "
    "  local tag = string.find(KEYS[1], '{', 1, true) and KEYS[1] or '{' .. KEYS[1] .. '}' "
    "  local h = redis.call('hgetall', KEYS[1]) "
    "  for i = 1, #h, 2 do "
    "    local holds = tonumber(h[i + 1]) "
    "    if h[i] ~= 'mode' and holds then "
    "      for j = 1, holds do "
    "        n = n + redis.call('del', tag .. ':' .. h[i] .. ':rwlock_timeout:' .. j) "
    "      end "
    "    end "
    "  end "
    "end "
    "return n + redis.call('del', KEYS[1])";

void deleter_add(struct deleter *d, const char *p, uint32_t i)
{
    char name[LWB_NAME_MAX];

    if (d->bad)
        return;
    /* No token counter: lwbench's locks are not fenced (lw_lock_set_fenced()),
     * so they draw none and leave no key but their hash. */
    key_name(name, sizeof name, p, i);
    if (d->read_holds
            ? request_command(&d->reqs[d->queued], 4,
                              (const char *[]){"EVAL", delete_read_holds, "1", name}, NULL)
            : request_command(&d->reqs[d->queued], 2, (const char *[]){"DEL", name}, NULL)) {
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
    engine_free(d->e); /* first: it may still hold requests */
    pipe_free_reqs(d->reqs, DELETE_CHUNK);
    free(d->p);
    *d = (struct deleter){.bad = bad};
    return bad;
}

/* The stop signal nap() took, or 0: read on the main thread only. */
static int stopped_by;

int stop_signal(void)
{
    return stopped_by;
}

const char *sig_name(int sig)
{
    static char other[24];

    if (sig == SIGINT)
        return "SIGINT";
    if (sig == SIGTERM)
        return "SIGTERM";
    snprintf(other, sizeof other, "signal %d", sig);
    return other;
}

int nap(const struct target *t, double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    uint64_t end = lw_clock_now() + (uint64_t)(s * 1e9);

    if (stopped_by) /* once taken, every later nap says so at once */
        return 1;
    for (;;) {
        uint64_t now;
        int sig;

        if ((sig = sigtimedwait(&t->stop_signals, NULL, &ts)) > 0) {
            stopped_by = sig;
            return 1;
        }
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
