/*
 * adapters/sentinel.c - where the master is, by Redis Sentinel (see
 * "Sentinel" in engine.h and docs/design.md).
 *
 * A topology (topology.h) of one link, node 0, like a single Redis (it
 * shares topology.c's one-link reports), whose address we find.  The
 * link asks us before every attempt (link_where); we hold
 * it while the sentinels are asked, in turn (SENTINEL MASTER for the
 * config epoch and SENTINEL get-master-addr-by-name, SENTINEL_TIMEOUT_MS
 * at most for each: pipelined
 * in the set-up of a connection to that sentinel, or sent on the one left
 * open to the sentinel that answered last), and let it go to the address
 * named.  The sentinel that answered goes first next time.  A
 * second connection listens to one sentinel for +switch-master, and every
 * refresh the sentinels are asked again, so a switch is seen even when its
 * message was missed.
 *
 * Whatever question brings a new address (a reconnect's, the message's,
 * the periodic one), a master other than the one we had, at a higher
 * config epoch than any heard of (may_switch()), is a switch:
 * the link lets go of its connection without reading another byte, its
 * requests in flight fail as unsettled, and on_topology hears of a
 * failover of every slot, which is what core's cluster code re-checks
 * held locks on.  The link's ROLE check (the link set's check_role) and
 * READONLY replies say a node is no master any more: demoted().
 *
 * Connections are re-made (conn_clear, conn_init) only from our own
 * timers, never inside their callbacks: a connection's read loop still
 * holds it while its callbacks run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "counter.h"
#include "engine.h"
#include "link.h"
#include "topology.h"

#define SENTINEL_TIMEOUT_MS 1000u /* a sentinel that takes longer is skipped */

/* +switch-master comes from each sentinel once it has adopted the new
 * master; the leader of a failover, though, publishes it only at the end
 * (its replicas reconfigured), while it names the promoted replica from
 * +promoted-slave on: that one makes us ask. */
static const char subscribe_cmd[] =
    "*3\r\n$9\r\nSUBSCRIBE\r\n$14\r\n+switch-master\r\n$15\r\n+promoted-slave\r\n";

struct sentinel {
    struct topology t;
    struct link_set *ls;
    struct link *link; /* node 0's, to the master */
    char *host[LW_ENGINE_MAX_SENTINELS];
    int port[LW_ENGINE_MAX_SENTINELS];
    unsigned order[LW_ENGINE_MAX_SENTINELS]; /* the one that answered first */
    unsigned n;
    char *name;
    char *ask_cmd; /* SENTINEL get-master-addr-by-name <name> */
    size_t ask_len;
    char *epoch_cmd; /* SENTINEL MASTER <name>: its config-epoch */
    size_t epoch_len;
    struct endpoint ep; /* the sentinels' credentials and patience */
    double refresh_s;
    uint64_t settle_ns; /* acquires wait this long after a switch */

    /* A round of questions. */
    struct conn ask;
    int asking;             /* a round is under way */
    unsigned tried;         /* sentinels asked in it so far */
    unsigned failed_rounds; /* in a row */
    int answer;             /* this sentinel's: 1 an address, -1 none */
    unsigned replies;       /* to this question: the epoch's, the address's */
    int got_epoch_ok;
    uint64_t got_epoch;
    char *got_host;
    int got_port;
    int ask_again;         /* +switch-master during a round: another */
    unsigned prefer;       /* 1 + the sentinel to ask first next round */
    int round_err;         /* why the last sentinel gave no address */
    struct xorshift rng;   /* the rounds' back-off jitter */
    int fail_err;          /* before any master: fail requests at once */
    ev_timer step;         /* the next sentinel, or the next round */
    ev_timer ask_deadline; /* this sentinel's answer must come by then */
    ev_timer periodic;

    /* The master. */
    char *master_host; /* NULL until named */
    int master_port;
    uint64_t epoch; /* the highest config epoch heard of */
    int demoted;    /* the master named said it is none */
    int fresh;      /* named since the link last connected */
    int link_waits; /* the link is held for an address */

    /* After a switch: acquires held back until settled_ns. */
    struct fifo held;
    uint64_t settled_ns;
    ev_timer settle;

    /* +switch-master */
    struct conn watch;
    int watching; /* watch initialised */

    uint8_t every_slot[LW_CLUSTER_SLOTS / 8];
    uint8_t no_slot[LW_CLUSTER_SLOTS / 8];
};

/* --- configuration ------------------------------------------------------ */

int sentinel_check(const struct engine_config *cfg)
{
    int rc;

    if (cfg->nsentinels > LW_ENGINE_MAX_SENTINELS)
        return LW_ERANGE;
    if (!cfg->sentinels || !cfg->sentinel_master || !cfg->sentinel_master[0])
        return LW_EINVAL;
    for (unsigned i = 0; i < cfg->nsentinels; i++)
        if ((rc = parse_addr(cfg->sentinels[i], NULL, NULL)))
            return rc;
    return tls_check(&cfg->sentinel.tls);
}

static struct sentinel *of(const struct topology *t)
{
    return (struct sentinel *)t;
}

/* --- the master ---------------------------------------------------------- */

static void tell_topology(struct sentinel *s, const uint8_t *failover, unsigned failovers)
{
    struct topology_change change = {failover, s->no_slot, failovers};

    topology_tell(&s->t, &change);
}

static void ask_soon(struct sentinel *s);

/* The main link's where: the address named since its last attempt, or
 * hold it and ask (every reconnect asks again: the master may have moved
 * while we were away). */
static int main_where(struct sentinel *s, const char **host, int *port)
{
    if (s->fresh && s->master_host) {
        s->fresh = 0;
        *host = s->master_host;
        *port = s->master_port;
        return 0;
    }
    s->link_waits = 1;
    ask_soon(s);
    return 1;
}

/* The side link's where (acquires that wait for replicas): the master
 * named last, without taking the main link's turn; none yet: hold it
 * until named() lets it go. */
static int side_where(struct sentinel *s, const char **host, int *port)
{
    if (!s->master_host) {
        ask_soon(s);
        return 1;
    }
    *host = s->master_host;
    *port = s->master_port;
    return 0;
}

static int link_where(struct topology *t, struct link *l, const char **host, int *port)
{
    return l->is_side ? side_where(of(t), host, port) : main_where(of(t), host, port);
}

/* The settle timer: the held acquires go to the link (those that wait
 * for replicas to its side link), in order. */
static void on_settled(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct sentinel *s = w->data;
    struct request *req;

    (void)loop;
    (void)revents;
    while ((req = fifo_pop(&s->held)))
        link_queue(s->link, req, 0);
    link_pump(s->link);
}

/* A request taken in: to the link, unless it is an acquire held back
 * after a switch (request_settle()). */
static void route(struct topology *t, struct request *req, int front)
{
    struct sentinel *s = of(t);

    if (req->settle && ev_is_active(&s->settle) && lw_clock_now() < s->settled_ns)
        fifo_push(&s->held, req);
    else
        link_queue(s->link, req, front);
}

static size_t held(const struct topology *t)
{
    return of(t)->held.count;
}

/*
 * After a switch, acquires wait settle_ns before they go to the new master
 * (renewals, which re-check held locks, go at once).  Other clients that
 * have not seen the switch yet may still take a lock on the old master,
 * which the new one does not have: an acquire here now would give a second
 * holder.  Once they see the switch their re-check tells them they lost it;
 * waiting a refresh period (every client asks that often) lets them.
 * Acquires already waiting on the link are held back too.
 */
static void hold_back(struct sentinel *s, struct link *l)
{
    struct fifo all = fifo_take(&l->waiting);
    struct request *req;

    while ((req = fifo_pop(&all)))
        fifo_push(req->settle ? &s->held : &l->waiting, req);
}

static void settle_acquires(struct sentinel *s)
{
    hold_back(s, s->link);
    if (s->link->side)
        hold_back(s, s->link->side);
    s->settled_ns = lw_clock_now() + s->settle_ns;
    ev_timer_stop(s->ls->loop, &s->settle);
    ev_timer_set(&s->settle, s->settle_ns / 1e9, 0.0);
    ev_timer_start(s->ls->loop, &s->settle);
}

/*
 * Another master: the old one's connections (the main one and the side
 * lane's, whose WAIT must not answer for the new master either) go now,
 * before anything else they sent is read, and without a new attempt yet:
 * a connect refused at once would run on_down while the old master's
 * requests are still listed, and a side connection still READY there
 * would take the acquires a callback resubmits.  Both are down before any
 * callback runs; what was in flight fails as unsettled (a reply, if any
 * came, would be the demoted master's); core re-checks every held lock on
 * the new master; then both connect to it.
 */
static void switch_master(struct sentinel *s)
{
    struct link *l = s->link;

    count_add(&s->ls->count.switches, 1);
    s->fresh = 1;
    s->link_waits = 0;
    s->demoted = 0;
    link_drop(l);
    settle_acquires(s);
    link_fail_inflight(l, LW_EUNSETTLED);
    tell_topology(s, s->every_slot, 1);
    link_connect(l);
    if (l->side) /* a callback may have made it just now: connected already */
        link_connect(l->side);
}

/*
 * Whether an answer naming another master than ours may switch us.
 * get-master-addr-by-name carries no epoch and the sentinels adopt a new
 * master up to a hello period apart, so a sentinel that has not caught up
 * names the old master after another named the new one: only a higher
 * config epoch than any heard of moves us.  The same epoch with another
 * address comes only from sentinels whose configuration was reset
 * (SENTINEL REMOVE, MONITOR): followed once the master we have said it is
 * none; a lower epoch never.
 */
static int may_switch(const struct sentinel *s, uint64_t epoch)
{
    return epoch > s->epoch || (epoch == s->epoch && s->demoted);
}

/* A sentinel named host:port, at config epoch `epoch`.  An answer that
 * may not switch us (may_switch) counts as naming the master we have. */
static void named(struct sentinel *s, const char *host, int port, uint64_t epoch)
{
    int first = !s->master_host;
    int same = !first && s->master_port == port && !strcmp(s->master_host, host);
    struct link *side;
    char *copy;

    s->fail_err = 0;
    if (!first && !same && !may_switch(s, epoch))
        same = 1;
    else if (first || epoch > s->epoch)
        s->epoch = epoch;
    if (!same) {
        if (!(copy = strdup(host)))
            return; /* the next question tries again */
        if (first)
            log_say(s->ls->log, LOG_FAILOVER, LOG_INFO,
                    "Sentinel: master %s is at %s:%d (config epoch %llu)", s->name, host, port,
                    (unsigned long long)s->epoch);
        else
            log_say(s->ls->log, LOG_FAILOVER, LOG_WARN,
                    "Sentinel: master %s switched from %s:%d to %s:%d (config epoch %llu): "
                    "held locks are checked on it",
                    s->name, s->master_host, s->master_port, host, port,
                    (unsigned long long)s->epoch);
        free(s->master_host);
        s->master_host = copy;
        s->master_port = port;
        if (!first) {
            switch_master(s);
            return;
        }
    }
    if (s->link_waits) {
        s->link_waits = 0;
        s->fresh = 1;
        link_connect(s->link);
    }
    side = s->link->side;
    if (side && link_held(side))
        link_connect(side);
    if (first) /* subscribers waiting for an address may go */
        tell_topology(s, s->no_slot, 0);
}

/* --- asking -------------------------------------------------------------- */

/* The question: SENTINEL MASTER (the config epoch), then
 * get-master-addr-by-name, which names the promoted replica as soon as
 * the leader of a failover has the new epoch (SENTINEL MASTER's ip and
 * port stay the old master's until its end).  Pipelined, a sentinel
 * answers both in one go; were its view to change between them, the
 * epoch read first is the older: an address paired with too low an epoch
 * is at worst not followed, never followed back. */
static int send_question(struct sentinel *s)
{
    s->replies = 0;
    s->got_epoch_ok = 0;
    if (conn_send(&s->ask, s->epoch_cmd, s->epoch_len) ||
        conn_send(&s->ask, s->ask_cmd, s->ask_len))
        return -1;
    return 0;
}

static void on_ask_setup(void *arg)
{
    send_question(arg);
}

/* SENTINEL MASTER's answer: field, value, ... with "config-epoch". */
static void read_epoch(struct sentinel *s, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *f = reply->element[i], *v = reply->element[i + 1];

        if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
            !strcmp(f->str, "config-epoch")) {
            s->got_epoch = strtoull(v->str, NULL, 10);
            s->got_epoch_ok = 1;
            return;
        }
    }
}

/* The answer: [host, port], or nil (no such master), or an error; good
 * only with the epoch before it. */
static void read_answer(struct sentinel *s, const redisReply *reply)
{
    s->answer = -1;
    s->round_err = LW_EREDIS;
    if (!s->got_epoch_ok || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING)
        return;
    free(s->got_host);
    if (!(s->got_host = strdup(reply->element[0]->str)))
        return;
    s->got_port = atoi(reply->element[1]->str);
    if (s->got_port >= 1 && s->got_port <= 65535)
        s->answer = 1;
}

static void next_step(struct sentinel *s, double delay);

/* A question on an open connection answered (one asked in the set-up is
 * done when the PING's answer follows: on_ask_up). */
static void on_ask_reply(void *arg, redisReply *reply)
{
    struct sentinel *s = arg;

    if (s->replies++ == 0) {
        read_epoch(s, reply);
        return;
    }
    read_answer(s, reply);
    if (conn_is_ready(&s->ask))
        next_step(s, 0.0);
}

static void next_step(struct sentinel *s, double delay)
{
    ev_timer_stop(s->ls->loop, &s->step);
    ev_timer_set(&s->step, delay, 0.0);
    ev_timer_start(s->ls->loop, &s->step);
}

/* The PING after the question was answered: this sentinel is done.  The
 * connection stays open for the next question: a client asks every
 * refresh, and a connection per question would cost the sentinel a
 * connect, an AUTH and a close each time. */
static void on_ask_up(void *arg)
{
    next_step(arg, 0.0);
}

static void on_ask_down(void *arg, int err)
{
    struct sentinel *s = arg;

    s->answer = -1;
    s->round_err = err;
    conn_close(&s->ask); /* ours to move on, not its own retry */
    next_step(s, 0.0);
}

static void on_ask_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct sentinel *s = w->data;

    (void)loop;
    (void)revents;
    conn_fail(&s->ask, LW_ETIMEDOUT); /* on_ask_down moves on */
}

/* Ask the sentinel at order[tried]: on the open connection when it is to
 * that one, else on a new one with the question in its set-up. */
static void ask_next(struct sentinel *s)
{
    unsigned i = s->order[s->tried];
    const struct conn_config cc = {
        .ep = &s->ep,
        .host = s->host[i],
        .port = s->port[i],
        .loop = s->ls->loop,
        .on_setup = on_ask_setup,
        .on_up = on_ask_up,
        .on_down = on_ask_down,
        .on_reply = on_ask_reply,
        .arg = s,
    };

    s->answer = 0;
    ev_timer_set(&s->ask_deadline, s->ep.connect_timeout_ms / 1000.0, 0.0);
    ev_timer_start(s->ls->loop, &s->ask_deadline);
    if (conn_is_ready(&s->ask) && conn_is_at(&s->ask, s->host[i], s->port[i]) &&
        send_question(s) == 0)
        return;
    conn_close(&s->ask);
    conn_clear(&s->ask);
    if (conn_init(&s->ask, &cc)) {
        on_ask_down(s, LW_ENOMEM);
        return;
    }
    conn_connect(&s->ask);
}

/* The sentinel at order[k] answered: it goes first from now on. */
static void to_front(struct sentinel *s, unsigned k)
{
    unsigned i = s->order[k];

    memmove(s->order + 1, s->order, k * sizeof *s->order);
    s->order[0] = i;
}

/* Nobody answered: wait (the back-off, backoff.h, over the rounds)
 * before the next.  Before any master was found, a round of refusals fails
 * requests at once, as a refused single node does. */
static void round_failed(struct sentinel *s)
{
    unsigned r = ++s->failed_rounds;
    uint32_t ms = backoff_delay_ms(s->ep.reconnect_min_ms, s->ep.reconnect_max_ms, r - 1,
                                   &s->rng);
    int err = s->round_err;

    if (!link_is_up(s->link))
        atomic_store_explicit(&s->ls->status, err, memory_order_relaxed);
    if (!s->master_host && conn_is_hard_failure(err)) {
        s->fail_err = err;
        link_fail_waiting(s->link, err); /* acquires waiting for replicas too */
    }
    next_step(s, ms / 1000.0);
}

/* The step timer: start a round, ask the next sentinel, or end the round. */
static void on_step(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct sentinel *s = w->data;

    (void)loop;
    (void)revents;
    ev_timer_stop(s->ls->loop, &s->ask_deadline);
    if (!s->asking) {
        for (unsigned k = 0; s->prefer && k < s->n; k++)
            if (s->order[k] == s->prefer - 1)
                to_front(s, k);
        s->prefer = 0;
        s->asking = 1;
        s->tried = 0;
        ask_next(s);
        return;
    }
    if (s->answer == 1) {
        s->asking = 0;
        s->failed_rounds = 0;
        to_front(s, s->tried);
        named(s, s->got_host, s->got_port, s->got_epoch);
        if (s->ask_again) { /* its question may predate the message */
            s->ask_again = 0;
            ask_soon(s);
        }
        return;
    }
    if (++s->tried < s->n) {
        ask_next(s);
        return;
    }
    s->asking = 0;
    round_failed(s);
}

/* Start a round now, unless one is under way or waits out its back-off. */
static void ask_soon(struct sentinel *s)
{
    if (!s->asking && !ev_is_active(&s->step))
        next_step(s, 0.0);
}

static void on_periodic(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ask_soon(w->data);
}

/* l's node is no master (its ROLE, or a READONLY): drop l's connection
 * (its requests in flight fail as unsettled); the link's back-off, then
 * its where hook asks; ask now as well, so that a switch is known (and
 * reported) before it reconnects. */
static void demoted(struct topology *t, struct link *l)
{
    struct sentinel *s = of(t);

    s->demoted = 1;
    link_fail(l, LW_EUNSETTLED);
    ask_soon(s);
}

/* The master we were told of was demoted under us: this request, and
 * everything after it on the wire, is unsettled, not failed. */
static int link_error(struct topology *t, struct link *l, struct request *req,
                      const redisReply *reply)
{
    if (strncmp(reply->str, "READONLY", 8))
        return 0;
    demoted(t, l); /* first: a resubmit must not go there */
    count_add(&t->ls->count.unsettled, 1);
    links_complete(t->ls, req, NULL, LW_EUNSETTLED);
    return 1;
}

/* --- +switch-master ------------------------------------------------------ */

/* The listener follows the sentinel that answered last. */
static int watch_where(void *arg, const char **host, int *port)
{
    struct sentinel *s = arg;

    *host = s->host[s->order[0]];
    *port = s->port[s->order[0]];
    return 0;
}

static void on_watch_up(void *arg)
{
    struct sentinel *s = arg;

    conn_send(&s->watch, subscribe_cmd, sizeof subscribe_cmd - 1);
    ask_soon(s); /* a switch while we were not listening */
}

static void on_watch_down(void *arg, int err)
{
    (void)arg;
    (void)err; /* it reconnects by itself, to whichever sentinel is first */
}

/*
 * "message" "+switch-master" "<name> <old ip> <old port> <new ip> <new port>",
 * or "message" "+promoted-slave" "slave <ip>:<port> <ip> <port> @ <name> ..."
 *
 * Either makes us ask, at once or right after a round under way (its
 * question may have been answered before the switch), and ask first the
 * sentinel that published it, which has the new master and its epoch:
 * another may not have caught up yet.  The message itself switches
 * nothing: it carries no config epoch, so a late one could not be ordered
 * against an answer already taken.
 */
static void on_watch_reply(void *arg, redisReply *reply)
{
    struct sentinel *s = arg;
    const redisReply *msg;
    size_t n = strlen(s->name);

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING ||
        strcmp(reply->element[0]->str, "message"))
        return; /* a confirmation */
    msg = reply->element[2];
    if (msg->type != REDIS_REPLY_STRING)
        return;
    if (!strcmp(reply->element[1]->str, "+switch-master") &&
        (msg->len <= n || memcmp(msg->str, s->name, n) || msg->str[n] != ' '))
        return; /* another master's */
    for (unsigned i = 0; i < s->n; i++)
        if (conn_is_at(&s->watch, s->host[i], s->port[i]))
            s->prefer = i + 1;
    if (s->asking)
        s->ask_again = 1;
    ask_soon(s);
}

/* --- life ---------------------------------------------------------------- */

static char *format_ask(const char *what, const char *name, size_t *len)
{
    const char *argv[] = {"SENTINEL", what, name};
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, 3, argv, NULL);

    if (n < 0)
        return NULL;
    *len = (size_t)n;
    return cmd;
}

static int copy_sentinels(struct sentinel *s, const struct engine_config *cfg)
{
    uint32_t timeout = cfg->sentinel.connect_timeout_ms;
    int rc;

    for (; s->n < cfg->nsentinels; s->n++) {
        if (parse_addr(cfg->sentinels[s->n], &s->host[s->n], &s->port[s->n]))
            return LW_ENOMEM;
        s->order[s->n] = s->n;
    }
    s->name = strdup(cfg->sentinel_master);
    s->ask_cmd = format_ask("get-master-addr-by-name", cfg->sentinel_master, &s->ask_len);
    s->epoch_cmd = format_ask("MASTER", cfg->sentinel_master, &s->epoch_len);
    if (!s->name || !s->ask_cmd || !s->epoch_cmd)
        return LW_ENOMEM;
    if ((rc = endpoint_copy(&s->ep, &cfg->sentinel)))
        return rc;
    s->ep.report = s->ls->ep->report; /* one report for the engine's connections */
    s->ep.connect_timeout_ms = timeout < SENTINEL_TIMEOUT_MS ? timeout : SENTINEL_TIMEOUT_MS;
    return 0;
}

static void init_timers(struct sentinel *s)
{
    ev_init(&s->step, on_step);
    s->step.data = s;
    ev_init(&s->periodic, on_periodic);
    s->periodic.data = s;
    ev_init(&s->ask_deadline, on_ask_deadline);
    s->ask_deadline.data = s;
    ev_init(&s->settle, on_settled);
    s->settle.data = s;
}

/* The listener for +switch-master. */
static int init_watch(struct sentinel *s)
{
    const struct conn_config wc = {
        .ep = &s->ep,
        .loop = s->ls->loop,
        .on_up = on_watch_up,
        .on_down = on_watch_down,
        .on_reply = on_watch_reply,
        .arg = s,
        .where = watch_where,
        .where_arg = s,
    };

    s->watching = 1; /* free_sentinel clears it, even half made */
    return conn_init(&s->watch, &wc) ? LW_ENOMEM : 0;
}

static void start(struct topology *t)
{
    struct sentinel *s = of(t);

    ev_timer_set(&s->periodic, s->refresh_s, s->refresh_s);
    ev_timer_start(s->ls->loop, &s->periodic);
    link_connect(s->link); /* held: asks */
    conn_connect(&s->watch);
}

static void stop(struct topology *t)
{
    struct sentinel *s = of(t);
    struct ev_loop *loop = s->ls->loop;

    ev_timer_stop(loop, &s->step);
    ev_timer_stop(loop, &s->periodic);
    ev_timer_stop(loop, &s->ask_deadline);
    ev_timer_stop(loop, &s->settle);
    links_fail_all(s->ls, &s->held, LW_ESHUTDOWN);
    conn_close(&s->ask);
    conn_close(&s->watch);
}

static void free_sentinel(struct topology *t)
{
    struct sentinel *s = of(t);

    conn_clear(&s->ask);
    if (s->watching)
        conn_clear(&s->watch);
    for (unsigned i = 0; i < s->n; i++)
        free(s->host[i]);
    free(s->name);
    redisFreeCommand(s->ask_cmd);
    redisFreeCommand(s->epoch_cmd);
    endpoint_clear(&s->ep);
    free(s->got_host);
    free(s->master_host);
    free(s);
}

static int fails_at_once(const struct topology *t)
{
    const struct sentinel *s = of(t);

    return s->fail_err ? s->fail_err : conn_fails_at_once(&s->link->conn);
}

/* Node 0 is the master the sentinels named last: LW_EUNSETTLED while none
 * is known. */
static int node_addr(const struct topology *t, unsigned node, const char **host, int *port)
{
    const struct sentinel *s = of(t);

    if (node != 0)
        return LW_ERANGE;
    if (!s->master_host)
        return LW_EUNSETTLED;
    *host = s->master_host;
    *port = s->master_port;
    return 0;
}

static const struct topology_ops sentinel_ops = {
    .start = start,
    .route = route,
    .held = held,
    .fails_at_once = fails_at_once,
    .stop = stop,
    .free = free_sentinel,
    .link_where = link_where,
    .link_up = one_link_up,
    .link_down = one_link_down,
    .link_error = link_error,
    .link_expired = one_link_expired,
    .link_demoted = demoted,
    .is_cluster = one_node_is_cluster,
    .sharded = one_node_is_cluster,
    .slot_node = one_node_slot_node,
    .node_count = one_node_count,
    .master_count = one_node_count,
    .node_addr = node_addr,
};

int sentinel_new(const struct engine_config *cfg, struct link_set *ls,
                 struct topology **out)
{
    struct sentinel *s = calloc(1, sizeof *s);
    int rc;

    if (!s)
        return LW_ENOMEM;
    s->t.ops = &sentinel_ops;
    s->t.ls = s->ls = ls;
    s->t.on_change = cfg->on_topology;
    s->t.change_arg = cfg->topology_arg;
    *out = ls->topo = &s->t;
    ls->check_role = 1; /* a node named may have been demoted since */
    s->refresh_s = (cfg->topology_refresh_ms ? cfg->topology_refresh_ms
                                             : LW_ENGINE_DEFAULT_SENTINEL_REFRESH_MS) /
                   1000.0;
    s->rng = xorshift_seed((uint64_t)(uintptr_t)s ^ lw_clock_now());
    memset(s->every_slot, 0xff, sizeof s->every_slot);
    init_timers(s);
    /* A refresh period, so that every client has asked again; at most half
     * the command timeout, so that a held acquire still has time. */
    s->settle_ns = (uint64_t)(s->refresh_s * 1e9);
    if (s->settle_ns > cfg->node.command_timeout_ms * 500000ull)
        s->settle_ns = cfg->node.command_timeout_ms * 500000ull;
    if ((rc = copy_sentinels(s, cfg)) || (rc = links_select_db(ls)) ||
        (rc = links_reserve(ls, 1)))
        return rc;
    if (!(s->link = link_new(ls, 0, NULL, 0))) /* its address: link_where */
        return LW_ENOMEM;
    return init_watch(s);
}
