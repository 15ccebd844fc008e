/*
 * adapters/subscriber.c - the pub/sub connection (see subscriber.h).
 *
 * The connection (conn.c) connects, authenticates, PINGs and reconnects;
 * the subscriber only adds the pub/sub commands and their events.  Every
 * reply comes to on_reply() in order.  Confirmations are pushes naming
 * their channel; an error reply names nothing, so the subscriber keeps
 * its commands in a FIFO (one channel per command) and pairs an error with
 * the oldest one.  A push that is a confirmation takes its command off the
 * FIFO; an "sunsubscribe" that matches no SUNSUBSCRIBE of ours is the
 * server dropping the channel (its slot moved).
 */
#include <stdlib.h>
#include <string.h>

#include <leasewheel/error.h>

#include "conn.h"
#include "queue.h"
#include "subscriber.h"

/* A (un)subscribe on the wire, not yet answered. */
struct pending {
    struct lw_qnode node; /* the subscriber's pending FIFO */
    int verb;             /* enum verb */
    size_t len;
    char channel[];
};

enum verb { SUBSCRIBE,
            UNSUBSCRIBE,
            SSUBSCRIBE,
            SUNSUBSCRIBE,
            VERB_COUNT };

static const char *const verb_cmd[VERB_COUNT] = {"SUBSCRIBE", "UNSUBSCRIBE", "SSUBSCRIBE",
                                                 "SUNSUBSCRIBE"};
/* The kind of their confirmations: the same words, lower case. */
static const char *const verb_push[VERB_COUNT] = {"subscribe", "unsubscribe", "ssubscribe",
                                                  "sunsubscribe"};

struct sub {
    struct conn conn;
    sub_fn *on_event;
    void *arg;
    int up;                  /* LW_SUB_UP told, LW_SUB_DOWN not yet */
    struct lw_queue pending; /* struct pending, oldest first */
};

static void tell(struct sub *sub, int event, const char *channel, size_t len,
                 const char *detail, size_t detail_len)
{
    sub->on_event(sub->arg, event, channel, len, detail, detail_len);
}

/* The oldest command, taken off the FIFO (NULL: none); the caller frees it. */
static struct pending *pop_oldest(struct sub *sub)
{
    return lw_item_of(lw_queue_pop(&sub->pending), struct pending, node);
}

static void forget_pending(struct sub *sub)
{
    struct pending *p;

    while ((p = pop_oldest(sub)))
        free(p);
}

static void on_up(void *arg)
{
    struct sub *sub = arg;

    sub->up = 1;
    tell(sub, LW_SUB_UP, NULL, 0, NULL, 0);
}

static void on_down(void *arg, int err)
{
    struct sub *sub = arg;
    int was_up = sub->up;

    (void)err; /* the user only needs to know that it is down */
    sub->up = 0;
    forget_pending(sub);
    if (was_up)
        tell(sub, LW_SUB_DOWN, NULL, 0, NULL, 0);
}

/* The oldest command, when it is verb on channel. */
static int head_is(const struct sub *sub, int verb, const char *channel, size_t len)
{
    const struct pending *p = lw_item_of(lw_queue_peek(&sub->pending), struct pending, node);

    return p && p->verb == verb && p->len == len && !memcmp(p->channel, channel, len);
}

/* An error reply answers the oldest command; a MOVED to SSUBSCRIBE is
 * "MOVED <slot> <host:port>". */
static void on_error(struct sub *sub, const redisReply *reply)
{
    struct pending *p = pop_oldest(sub);
    const char *detail, *addr;
    int event = LW_SUB_ERROR;

    if (!p) {
        conn_fail(&sub->conn, LW_ECONNLOST); /* out of step */
        return;
    }
    detail = reply->str;
    if (p->verb == SSUBSCRIBE && !strncmp(reply->str, "MOVED ", 6) &&
        (addr = strchr(reply->str + 6, ' '))) {
        event = LW_SUB_MOVED;
        detail = addr + 1;
    }
    tell(sub, event, p->channel, p->len, detail, strlen(detail));
    free(p);
}

/* Which verb's confirmation a push is, or -1 (a message, or unknown). */
static int push_verb(const char *kind)
{
    for (int v = 0; v < VERB_COUNT; v++)
        if (!strcmp(kind, verb_push[v]))
            return v;
    return -1;
}

/* A message's payload: ["message", channel, payload] (or "smessage"). */
static void on_message(struct sub *sub, const redisReply *channel, const redisReply *payload)
{
    if (payload->type == REDIS_REPLY_STRING)
        tell(sub, LW_SUB_MESSAGE, channel->str, channel->len, payload->str, payload->len);
    else /* not what a server sends: a message all the same, unread */
        tell(sub, LW_SUB_MESSAGE, channel->str, channel->len, NULL, 0);
}

static void on_push(struct sub *sub, const char *kind, const redisReply *const *elements)
{
    const redisReply *channel = elements[1];
    int verb = push_verb(kind);
    int confirms = verb >= 0 && head_is(sub, verb, channel->str, channel->len);
    int event;

    if (!strcmp(kind, "message") || !strcmp(kind, "smessage")) {
        on_message(sub, channel, elements[2]);
        return;
    }
    if (verb == SUNSUBSCRIBE && !confirms)
        event = LW_SUB_LOST; /* the server's own: the slot left this node */
    else if (!confirms)
        return; /* a confirmation of nothing we sent: ignore */
    else if (verb == SUBSCRIBE || verb == SSUBSCRIBE)
        event = LW_SUB_SUBSCRIBED;
    else
        event = LW_SUB_UNSUBSCRIBED;
    if (confirms)
        free(pop_oldest(sub));
    tell(sub, event, channel->str, channel->len, NULL, 0);
}

static void on_reply(void *arg, redisReply *reply)
{
    struct sub *sub = arg;
    const redisReply *kind, *channel;

    if (reply->type == REDIS_REPLY_ERROR) {
        on_error(sub, reply);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
        return;
    kind = reply->element[0];
    channel = reply->element[1];
    if (kind->type != REDIS_REPLY_STRING || channel->type != REDIS_REPLY_STRING)
        return;
    on_push(sub, kind->str, (const redisReply *const *)reply->element);
}

static int send_sub(struct sub *sub, int verb, const char *channel, size_t len)
{
    const char *argv[] = {verb_cmd[verb], channel};
    size_t lens[] = {strlen(verb_cmd[verb]), len};
    struct pending *p;
    int rc;

    if (!sub->up)
        return LW_ECONNLOST;
    if (!(p = malloc(sizeof *p + len)))
        return LW_ENOMEM;
    if ((rc = conn_send_argv(&sub->conn, 2, argv, lens))) {
        free(p);
        return rc;
    }
    p->verb = verb;
    p->len = len;
    memcpy(p->channel, channel, len);
    lw_queue_push(&sub->pending, &p->node);
    return 0;
}

int sub_subscribe(struct sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, SUBSCRIBE, channel, len);
}

int sub_unsubscribe(struct sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, UNSUBSCRIBE, channel, len);
}

int sub_ssubscribe(struct sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, SSUBSCRIBE, channel, len);
}

int sub_sunsubscribe(struct sub *sub, const char *channel, size_t len)
{
    return send_sub(sub, SUNSUBSCRIBE, channel, len);
}

int sub_is_up(const struct sub *sub)
{
    return sub->up;
}

void sub_follow(struct sub *sub, const char *host, int port)
{
    if (conn_held(&sub->conn)) {
        conn_connect(&sub->conn);
        return;
    }
    if (conn_is_at(&sub->conn, host, port))
        return;
    conn_fail(&sub->conn, LW_ECONNLOST); /* tells LW_SUB_DOWN */
    conn_connect(&sub->conn);            /* no back-off: it has somewhere to go */
}

int sub_new(const struct sub_config *cfg, struct sub **out)
{
    struct sub *sub = calloc(1, sizeof *sub);
    const struct conn_config cc = {
        .ep = cfg->ep,
        .host = cfg->host,
        .port = cfg->port,
        .loop = cfg->loop,
        .on_up = on_up,
        .on_down = on_down,
        .on_reply = on_reply,
        .arg = sub,
        .where = cfg->where,
        .where_arg = cfg->where_arg,
    };

    if (!sub)
        return LW_ENOMEM;
    if (conn_init(&sub->conn, &cc)) {
        sub_free(sub);
        return LW_ENOMEM;
    }
    sub->on_event = cfg->on_event;
    sub->arg = cfg->arg;
    conn_connect(&sub->conn);
    *out = sub;
    return 0;
}

void sub_free(struct sub *sub)
{
    if (!sub)
        return;
    conn_close(&sub->conn);
    conn_clear(&sub->conn);
    forget_pending(sub);
    free(sub);
}
