/*
 * adapters/subscriber.c - the pub/sub connection (see subscriber.h).
 *
 * The connection (conn.c) connects, authenticates, PINGs and reconnects;
 * the subscriber only adds the pub/sub commands and their events.
 * hiredis 0.14 routes a subscribed context's replies by channel: the
 * callback given with SUBSCRIBE gets the confirmation, every message, and
 * the UNSUBSCRIBE confirmation; conn.c hands all of them to on_push().
 */
#include <stdlib.h>
#include <string.h>

#include <leasewheel/error.h>

#include "conn.h"
#include "subscriber.h"

struct lw_sub {
    struct lw_conn conn;
    lw_sub_fn *on_event;
    void *arg;
    int up;   /* LW_SUB_UP told, LW_SUB_DOWN not yet */
};

static void on_up(void *arg)
{
    struct lw_sub *sub = arg;

    sub->up = 1;
    sub->on_event(sub->arg, LW_SUB_UP, NULL, 0);
}

static void on_down(void *arg, int err)
{
    struct lw_sub *sub = arg;
    int was_up = sub->up;

    (void)err; /* the user only needs to know that it is down */
    sub->up = 0;
    if (was_up)
        sub->on_event(sub->arg, LW_SUB_DOWN, NULL, 0);
}

static void on_push(void *arg, redisReply *reply)
{
    struct lw_sub *sub = arg;
    const redisReply *kind, *channel;
    int event;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
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

    if (!sub->up)
        return LW_ECONNLOST;
    return conn_send_argv(&sub->conn, 2, argv, lens);
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
    return sub->conn.reconnects;
}

int lw_sub_new(const struct lw_sub_config *cfg, struct lw_sub **out)
{
    struct lw_sub *sub = calloc(1, sizeof *sub);
    const struct conn_config cc = {
        CONN_CONFIG_FROM(cfg),
        .loop = cfg->loop,
        .on_up = on_up,
        .on_down = on_down,
        .on_reply = on_push,
        .arg = sub,
    };

    if (!sub)
        return LW_ENOMEM;
    if (conn_init(&sub->conn, &cc)) {
        lw_sub_free(sub);
        return LW_ENOMEM;
    }
    sub->on_event = cfg->on_event;
    sub->arg = cfg->arg;
    conn_connect(&sub->conn);
    *out = sub;
    return 0;
}

void lw_sub_free(struct lw_sub *sub)
{
    if (!sub)
        return;
    conn_close(&sub->conn);
    conn_clear(&sub->conn);
    free(sub);
}
