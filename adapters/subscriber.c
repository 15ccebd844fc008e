/*
 * adapters/subscriber.c - the pub/sub connection (see subscriber.h).
 *
 * hiredis 0.14 routes a subscribed context's replies by channel: the
 * callback given with SUBSCRIBE gets the confirmation, every message, and
 * the UNSUBSCRIBE confirmation.  All of ours are one function whose
 * privdata is the subscriber; a context we have let go of is told apart
 * by `ac != sub->ac`, as in link.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libev.h>
#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "conn.h"
#include "subscriber.h"

struct lw_sub {
    char *host;
    char *unix_path;
    char *password;
    int port;
    double connect_timeout_s;
    struct ev_loop *loop;
    lw_sub_fn *on_event;
    void *arg;
    redisAsyncContext *ac;  /* the live connection, or NULL */
    int up;
    int ever_up;
    uint64_t reconnects;
    struct backoff backoff;
    ev_timer retry;         /* the back-off */
    ev_timer setup_timer;   /* connect + AUTH + PING must end in time */
};

static void sub_connect(struct lw_sub *sub);

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    sub_connect(w->data);
}

/* The connection is gone (ac already let go of): tell, and try again. */
static void went_down(struct lw_sub *sub)
{
    int was_up = sub->up;

    sub->up = 0;
    ev_timer_stop(sub->loop, &sub->setup_timer);
    ev_timer_set(&sub->retry, backoff_next(&sub->backoff) / 1000.0, 0.0);
    ev_timer_start(sub->loop, &sub->retry);
    if (was_up)
        sub->on_event(sub->arg, LW_SUB_DOWN, NULL, 0);
}

/* Let go of the live connection ourselves. */
static void drop(struct lw_sub *sub)
{
    redisAsyncContext *ac = sub->ac;

    sub->ac = NULL;
    if (ac)
        redisAsyncFree(ac);
    went_down(sub);
}

static void on_setup_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    drop(w->data);
}

static void on_setup_reply(redisAsyncContext *ac, void *reply_ptr, void *privdata)
{
    struct lw_sub *sub = privdata;
    redisReply *reply = reply_ptr;

    if (ac != sub->ac || !reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        drop(sub); /* wrong password, or a server that cannot pub/sub */
        return;
    }
    if (reply->type == REDIS_REPLY_STATUS && !strcmp(reply->str, "PONG")) {
        ev_timer_stop(sub->loop, &sub->setup_timer);
        backoff_reset(&sub->backoff);
        if (sub->ever_up)
            sub->reconnects++;
        sub->ever_up = sub->up = 1;
        sub->on_event(sub->arg, LW_SUB_UP, NULL, 0);
    }
}

static void on_connect(const redisAsyncContext *cac, int status)
{
    struct lw_sub *sub = cac->data;
    redisAsyncContext *ac = sub->ac;

    if (cac != ac)
        return;
    if (status != REDIS_OK) {
        sub->ac = NULL; /* hiredis frees it on return */
        went_down(sub);
        return;
    }
    /* If these fail the setup timer drops the connection: hiredis 0.14 does
     * not let a connect callback free its context. */
    if (sub->password)
        redisAsyncCommand(ac, on_setup_reply, sub, "AUTH %s", sub->password);
    redisAsyncCommand(ac, on_setup_reply, sub, "PING");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct lw_sub *sub = ac->data;

    (void)status;
    if (ac == sub->ac) {
        sub->ac = NULL; /* hiredis is freeing it */
        went_down(sub);
    }
}

static void sub_connect(struct lw_sub *sub)
{
    redisAsyncContext *ac = conn_start(sub->host, sub->port, sub->unix_path);

    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        went_down(sub);
        return;
    }
    ac->data = sub;
    sub->ac = ac;
    if (redisLibevAttach(sub->loop, ac) != REDIS_OK) {
        drop(sub);
        return;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    ev_timer_set(&sub->setup_timer, sub->connect_timeout_s, 0.0);
    ev_timer_start(sub->loop, &sub->setup_timer);
}

static void on_push(redisAsyncContext *ac, void *reply_ptr, void *privdata)
{
    struct lw_sub *sub = privdata;
    redisReply *reply = reply_ptr;
    const redisReply *kind, *channel;
    int event;

    if (ac != sub->ac || !reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
        return;
    kind = reply->element[0];
    channel = reply->element[1];
    if (kind->type != REDIS_REPLY_STRING || channel->type != REDIS_REPLY_STRING)
        return;
    if (!strcmp(kind->str, "message"))
        event = LW_SUB_MESSAGE;
    else if (!strcmp(kind->str, "subscribe"))
        event = LW_SUB_SUBSCRIBED;
    else if (!strcmp(kind->str, "unsubscribe"))
        event = LW_SUB_UNSUBSCRIBED;
    else
        return;
    sub->on_event(sub->arg, event, channel->str, channel->len);
}

static int send_sub(struct lw_sub *sub, const char *verb, const char *channel, size_t len)
{
    const char *argv[] = {verb, channel};
    size_t lens[] = {strlen(verb), len};

    if (!sub->up || !sub->ac)
        return LW_ECONNLOST;
    if (redisAsyncCommandArgv(sub->ac, on_push, sub, 2, argv, lens) != REDIS_OK)
        return LW_ECONNLOST;
    return 0;
}

int lw_sub_subscribe(struct lw_sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, "SUBSCRIBE", channel, len);
}

int lw_sub_unsubscribe(struct lw_sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, "UNSUBSCRIBE", channel, len);
}

int lw_sub_is_up(const struct lw_sub *sub)
{
    return sub->up;
}

uint64_t lw_sub_reconnects(const struct lw_sub *sub)
{
    return sub->reconnects;
}

static char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *failed = 1;
    return d;
}

int lw_sub_new(const struct lw_sub_config *cfg, struct lw_sub **out)
{
    struct lw_sub *sub = calloc(1, sizeof *sub);
    int failed = 0;

    if (!sub)
        return LW_ENOMEM;
    sub->host = dup_or_null(cfg->unix_path ? NULL : cfg->host, &failed);
    sub->unix_path = dup_or_null(cfg->unix_path, &failed);
    sub->password = dup_or_null(cfg->password, &failed);
    if (failed) {
        lw_sub_free(sub);
        return LW_ENOMEM;
    }
    sub->port = cfg->port;
    sub->connect_timeout_s = cfg->connect_timeout_ms / 1000.0;
    sub->loop = cfg->loop;
    sub->on_event = cfg->on_event;
    sub->arg = cfg->arg;
    sub->backoff.min_ms = cfg->reconnect_min_ms;
    sub->backoff.max_ms = cfg->reconnect_max_ms;
    sub->backoff.rng = xorshift_seed((uint64_t)(uintptr_t)sub ^ lw_clock_now());
    ev_init(&sub->retry, on_retry);
    sub->retry.data = sub;
    ev_init(&sub->setup_timer, on_setup_timeout);
    sub->setup_timer.data = sub;
    sub_connect(sub);
    *out = sub;
    return 0;
}

void lw_sub_free(struct lw_sub *sub)
{
    redisAsyncContext *ac;

    if (!sub)
        return;
    if (sub->loop) {
        ev_timer_stop(sub->loop, &sub->retry);
        ev_timer_stop(sub->loop, &sub->setup_timer);
    }
    ac = sub->ac;
    sub->ac = NULL;
    if (ac)
        redisAsyncFree(ac);
    free(sub->host);
    free(sub->unix_path);
    free(sub->password);
    free(sub);
}
