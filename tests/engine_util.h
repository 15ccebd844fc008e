/*
 * tests/engine_util.h - shared by the engine's tests: the redis-server
 * fixture and a tally of completions that a test thread can wait on.
 */
#ifndef LW_TESTS_ENGINE_UTIL_H
#define LW_TESTS_ENGINE_UTIL_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "engine.h"
#include "redis_server.h"

/* The fixture: one private server per test. */
static struct redis_server srv;

#ifdef LW_TEST_TLS
/*
 * The same tests over TLS: the server serves TLS only on TCP and asks
 * every client for a certificate (mutual TLS); clients (lock_util.h) trust
 * the test CA and present the client certificate.  The tests' own
 * connections to the server go over its unix socket (plain).
 */
#include "tls_certs.h"

static struct tls_certs certs;

static inline void server_start(void)
{
    struct fixture_tls tls;

    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0, "redis-server did not start");
}

static inline void server_stop(void)
{
    redis_server_stop(&srv);
    tls_certs_remove(&certs);
}
#else
static inline void server_start(void)
{
    cr_assert_eq(redis_server_start(&srv, NULL), 0, "redis-server did not start");
}

static inline void server_stop(void)
{
    redis_server_stop(&srv);
}
#endif

/* Clients whose command the server holds back (a CLIENT PAUSE's, a
 * BLPOP's), from INFO clients; -1 on no answer. */
static inline long long blocked_clients(void)
{
    redisReply *r = redis_server_command(&srv, "INFO %s", "clients");
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "blocked_clients:") : NULL;
    long long n = p ? atoll(p + strlen("blocked_clients:")) : -1;

    freeReplyObject(r);
    return n;
}

/* A test with its own server, started before and stopped after it. */
#define REDIS_TEST(suite, name) \
    Test(suite, name, .init = server_start, .fini = server_stop, .timeout = 120)

static inline void engine_config(struct engine_config *cfg)
{
    engine_config_init(cfg);
    cfg->node.port = srv.port;
    cfg->wheel.tick_ns = 10 * 1000000ull;
    cfg->node.command_timeout_ms = 10000;
}

/* Completions counted under a lock; the test thread waits, bounded. */
struct tally {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int failed;
    int last_err;
};

static inline void tally_init(struct tally *t)
{
    pthread_condattr_t attr;

    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &attr);
    pthread_condattr_destroy(&attr);
}

static inline void tally_add(struct tally *t, int err)
{
    pthread_mutex_lock(&t->lock);
    t->done++;
    if (err) {
        t->failed++;
        t->last_err = err;
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* Wait until `n` have completed or `ms` have passed; returns the count. */
static inline int tally_wait(struct tally *t, int n, int ms)
{
    struct timespec until;
    int done;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->lock);
    while (t->done < n && pthread_cond_timedwait(&t->cond, &t->lock, &until) == 0)
        ;
    done = t->done;
    pthread_mutex_unlock(&t->lock);
    return done;
}

static inline void tally_destroy(struct tally *t)
{
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
}

/* A request's callback that only counts. */
static inline void count_done(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)req;
    (void)reply;
    tally_add(arg, err);
}

/* Format argv (NULL-terminated) into req. */
#define set_cmd(req, ...)                                                           \
    do {                                                                            \
        const char *argv_[] = {__VA_ARGS__};                                        \
        request_init(req);                                                          \
        cr_assert_eq(request_command((req), sizeof argv_ / sizeof argv_[0],         \
                                     argv_, NULL), 0);                              \
    } while (0)

/* A blocking PING; 0 when PONG came back. */
static inline void pong_check(struct request *req, const redisReply *reply, int err, void *arg)
{
    (void)req;
    *(int *)arg = !err && reply->type == REDIS_REPLY_STATUS && !strcmp(reply->str, "PONG");
}

static inline int ping(struct engine *e)
{
    struct request req;
    int pong = 0, rc;

    set_cmd(&req, "PING");
    rc = engine_call(e, &req, pong_check, &pong);
    request_clear(&req);
    return rc ? rc : pong ? 0 : -1000;
}

/* Ping until it works: at most `tries` times, 50 ms apart. */
static inline int ping_until_up(struct engine *e, int tries)
{
    int rc = -1;

    for (int i = 0; i < tries && (rc = ping(e)) != 0; i++) {
        struct timespec ts = {0, 50 * 1000000L};

        nanosleep(&ts, NULL);
    }
    return rc;
}

#endif
