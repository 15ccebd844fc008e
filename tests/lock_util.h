/*
 * tests/lock_util.h - shared by the lock tests: a client on the fixture's
 * server, lost-lock recording, sleeping, and a MONITOR reader.
 */
#ifndef LW_TESTS_LOCK_UTIL_H
#define LW_TESTS_LOCK_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <leasewheel.h>

#include "engine_util.h"
#include "time_util.h"

#ifdef LW_TEST_EMBEDDED
/*
 * The same tests with every client on the caller's loop: each client gets
 * a loop run by a thread of the test's (loop_util.h), is created and freed
 * on that thread, and the test's bodies make their calls, blocking ones
 * included, from their own threads as they are.
 */
#include "loop_util.h"

#define MAX_EMBEDDED 16

static struct {
    pthread_mutex_t lock;
    struct lw_client *client[MAX_EMBEDDED];
    struct loop_runner *runner[MAX_EMBEDDED];
} embedded = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct embedded_call {
    struct lw_client_config cfg;
    struct lw_client *client;
    int rc;
};

static inline void embedded_new_on_loop(void *arg)
{
    struct embedded_call *call = arg;

    call->rc = lw_client_new(&call->cfg, &call->client);
}

static inline void embedded_free_on_loop(void *arg)
{
    struct embedded_call *call = arg;

    call->rc = lw_client_free(call->client);
}

static inline int embedded_client_new(const struct lw_client_config *cfg,
                                      struct lw_client **out)
{
    struct embedded_call call = {0};
    struct loop_runner *r;
    int slot;

    if (!cfg || !out)
        return lw_client_new(cfg, out); /* the library's answer to NULL */
    call.cfg = *cfg;
    r = runner_start();
    call.cfg.loop = r->loop;
    runner_call(r, embedded_new_on_loop, &call);
    if (call.rc) {
        runner_stop(r);
        return call.rc;
    }
    pthread_mutex_lock(&embedded.lock);
    for (slot = 0; slot < MAX_EMBEDDED && embedded.client[slot]; slot++)
        ;
    cr_assert_lt(slot, MAX_EMBEDDED, "too many embedded clients at once");
    embedded.client[slot] = call.client;
    embedded.runner[slot] = r;
    pthread_mutex_unlock(&embedded.lock);
    *out = call.client;
    return 0;
}

/* Free on the client's loop thread, then stop that loop.  A client freed
 * before (a handle keeps it) has no loop left: the library answers. */
static inline int embedded_client_free(struct lw_client *c)
{
    struct embedded_call call = {.client = c};
    struct loop_runner *r = NULL;
    int slot;

    pthread_mutex_lock(&embedded.lock);
    for (slot = 0; c && slot < MAX_EMBEDDED; slot++)
        if (embedded.client[slot] == c) {
            r = embedded.runner[slot];
            break;
        }
    pthread_mutex_unlock(&embedded.lock);
    if (!r)
        return lw_client_free(c);
    runner_call(r, embedded_free_on_loop, &call);
    if (call.rc == 0) {
        pthread_mutex_lock(&embedded.lock);
        embedded.client[slot] = NULL;
        embedded.runner[slot] = NULL;
        pthread_mutex_unlock(&embedded.lock);
        runner_stop(r);
    }
    return call.rc;
}

#define lw_client_new embedded_client_new
#define lw_client_free embedded_client_free
#endif

/* Lost locks, as on_lost saw them. */
struct lost_log {
    _Atomic int count;
    _Atomic int reason;
    _Atomic uint64_t at_ns;     /* when the last one was reported */
    char name[64];
};

static inline void record_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct lost_log *log = arg;

    (void)owner;
    if (len < sizeof log->name) {
        memcpy(log->name, name, len);
        log->name[len] = 0;
    }
    atomic_store(&log->reason, reason);
    atomic_store(&log->at_ns, lw_clock_now());
    atomic_fetch_add(&log->count, 1);
}

/* A client of the fixture's server: 10 ms ticks, the given watchdog lease. */
static inline void client_config(struct lw_client_config *cfg, uint32_t lease_ms, struct lost_log *log)
{
    lw_client_config_init(cfg);
    cfg->port = srv.port;
    cfg->tick_ms = 10;
    cfg->watchdog_timeout_ms = lease_ms;
    cfg->command_timeout_ms = 5000;
#ifdef LW_TEST_TLS
    cfg->tls.enable = 1;
    cfg->tls.ca_file = certs.ca_file;
    cfg->tls.cert_file = certs.client_cert;
    cfg->tls.key_file = certs.client_key;
#endif
    if (log) {
        memset(log, 0, sizeof *log);
        cfg->on_lost = record_lost;
        cfg->lost_arg = log;
    }
}

static inline struct lw_client *new_client(uint32_t lease_ms, struct lost_log *log)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, log);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

static inline struct lw_lock *new_lock(struct lw_client *c, const char *name)
{
    struct lw_lock *l = NULL;

    cr_assert_eq(lw_lock_new(c, name, strlen(name), &l), 0);
    return l;
}

/* Redis's answer as an integer (a status or string parsed), -1000 on none. */
static inline long long redis_int(const char *fmt, const char *arg)
{
    redisReply *r = redis_server_command(&srv, fmt, arg);
    long long v = -1000;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    if (r)
        freeReplyObject(r);
    return v;
}

/* PUBSUB NUMSUB channel: how many listen on it (-1: no answer). */
static inline long long redis_subscribers(const char *channel)
{
    redisReply *r = redis_server_command(&srv, "PUBSUB NUMSUB %s", channel);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

/* Redis's answer as a string into buf ("" on none or nil). */
static inline const char *redis_str(const char *fmt, const char *arg, char *buf, size_t size)
{
    redisReply *r = redis_server_command(&srv, fmt, arg);

    buf[0] = 0;
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(buf, size, "%s", r->str);
    if (r)
        freeReplyObject(r);
    return buf;
}

/* An async call's outcome, for the test thread. */
struct outcome {
    struct tally tally;
    _Atomic int err;
    _Atomic int64_t value;
    _Atomic uint64_t at_ns;
};

static inline void on_outcome(int err, int64_t value, void *arg)
{
    struct outcome *o = arg;

    atomic_store(&o->err, err);
    atomic_store(&o->value, value);
    atomic_store(&o->at_ns, lw_clock_now());
    tally_add(&o->tally, err);
}


/* An async call's done callback that only counts; arg is a struct tally. */
static inline void count_outcome(int err, int64_t value, void *arg)
{
    (void)value;
    tally_add(arg, err);
}

#endif
