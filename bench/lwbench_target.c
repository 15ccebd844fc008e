/*
 * bench/lwbench_target.c - the Redis lwbench runs against: one server
 * (given, named by its sentinels, or private), or a cluster
 * (lwbench_cluster.c); its CPU, and deleting what lwbench made.
 * Connections to a node are lwbench_node.c's.
 *
 * On a server it did not start, lwbench touches only keys under its own
 * prefix ("lwbench:<host>:<pid>:<start>", run_prefix()) and deletes them
 * when it is done; what a run killed before that left, a later one (or
 * --cleanup) removes (lwbench_cleanup.c).
 *
 * With --tls and no -r the private redis-server serves TLS only, with a
 * throwaway CA and certificate made at run time (tests/fixtures'
 * tls_certs), which lwbench and its client then trust.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <leasewheel/wheel.h>

#include "engine.h"
#include "lwbench.h"
#include "pipeline.h"

/* The engine's last connection failure (its address and why) into buf,
 * or "". */
static const char *engine_why(struct engine *e, char *buf, size_t n)
{
    buf[0] = 0;
    if (e && !engine_last_error(e, buf, n))
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
    struct engine *e = NULL;
    int port, rc;

    last[0] = 0;
    if (redis_addr_split(o->url.sentinels.addr[j], host, sizeof host, &port))
        return LW_EINVAL;
    if ((rc = node_engine(host, port, o->sentinel_username, o->sentinel_password, 0,
                          o->plain_sentinels ? &plain : &t->tls, NULL, 0, 16, 30000, &e)))
        return rc;
    rc = node_call(e, on_master_addr, m, 3,
                   (const char *[]){"SENTINEL", "GET-MASTER-ADDR-BY-NAME", o->url.master});
    if (rc && rc != LW_EREDIS)
        engine_why(e, last, nlast);
    engine_free(e);
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
    struct engine *e = NULL;
    char last[300] = "";
    int rc = target_node(t, t->host, t->port, &e);

    if (rc == 0 && (rc = node_call(e, NULL, NULL, 1, (const char *[]){"PING"})) != 0)
        engine_why(e, last, sizeof last);
    engine_free(e);
    if (rc == 0)
        return 0;
    snprintf(why, n, "Redis at %s:%d does not answer PING%s: %s%s%s%s", t->host, t->port,
             t->password || t->db ? " (or refused the password or the DB)" : "",
             lw_strerror(rc), last[0] ? " (" : "", last, last[0] ? ")" : "");
    return -1;
}

int target_open(struct target *t, const struct opts *o, char *why, size_t n)
{
    int rc;

    run_prefix(t->prefix, sizeof t->prefix);
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
    struct engine *e = NULL;
    double s = -1;

    if (target_node(t, host, port, &e) == 0 &&
        node_call(e, on_info_cpu, &s, 2, (const char *[]){"INFO", "cpu"}))
        s = -1;
    engine_free(e);
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

int target_delete(const struct target *t, const char *p, uint32_t count, int read_holds)
{
    struct deleter d;

    if (t->cluster)
        return cluster_delete(t, p, count, read_holds);
    if (deleter_open(&d, t, t->host, t->port))
        return -1;
    d.read_holds = read_holds;
    for (uint32_t i = 0; i < count && !d.bad; i++)
        deleter_add(&d, p, i);
    return deleter_close(&d);
}
