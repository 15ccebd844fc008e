/*
 * bench/lwtls_storm.c - lwtls's second measurement, the reconnect storm: N
 * clients on one loop holding watchdog locks, every connection killed at
 * once, each client timed until it is connected and renewing again
 * (lwtls.c says how, and what is checked).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cli_util.h"
#include "lwtls.h"
#include "redis_server.h"

#define OWNER 1u
#define COLD_LIMIT_S 60 /* the longest the cold start may take */
#define WAVE 50u        /* clients created at once at the start */

/* Run the loop until CLOCK_MONOTONIC reaches t (or a signal came). */
static void run_until(struct ev_loop *loop, ev_timer *wake, uint64_t t)
{
    uint64_t now;

    while (!interrupted && (now = cli_now_ns()) < t) {
        ev_now_update(loop);
        ev_timer_stop(loop, wake);
        ev_timer_set(wake, (double)(t - now) / 1e9, 0.0);
        ev_timer_start(loop, wake);
        ev_run(loop, EVRUN_ONCE);
    }
    ev_timer_stop(loop, wake);
}

/* One loop iteration, woken by t at the latest. */
static void run_once(struct ev_loop *loop, ev_timer *wake, uint64_t t)
{
    uint64_t now = cli_now_ns();

    ev_now_update(loop);
    ev_timer_stop(loop, wake);
    ev_timer_set(wake, now < t ? (double)(t - now) / 1e9 : 0.0, 0.0);
    ev_timer_start(loop, wake);
    ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, wake);
}

/* When the loop's poll blocked (the last prepare watcher) and woke (the
 * first check watcher): the iteration's busy time is the rest. */
static struct {
    uint64_t blocked, woke;
} busy_mark;

static void on_blocking(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    busy_mark.blocked = cli_now_ns();
}

static void on_woken(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    if (!busy_mark.woke)
        busy_mark.woke = cli_now_ns();
}

static void on_wake(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

struct storm;

struct bclient {
    struct storm *st;
    struct lw_client *c;
    struct lw_lock *locks[MAX_LOCKS];
    int answered, cmd_up, polling;
    unsigned restored; /* connections restored since the kill */
    uint64_t up_ns;    /* from the kill: both connections up again; 0 not yet */
    uint64_t renew_ns; /* from the kill: a renewal confirmed; 0 not yet */
    uint64_t base_reconnects, base_confirmed, base_handshakes, base_resumed, base_risk;
};

struct storm {
    const struct opts *o;
    struct bclient *cl;
    unsigned n;
    int after_kill;
    uint64_t start_ns, kill_ns, cold_end_ns;
    unsigned answered, answer_failed, renewing;
    uint64_t acquired, acquire_failed, lost;
    uint64_t failed_attempts; /* connection attempts failed after the kill */
    unsigned *pending;        /* clients to poll: a connection restored, no renewal yet */
    unsigned npending;
    struct ev_loop *loop; /* every client's, embedded */
    ev_timer wake;        /* run_until(), run_once() */
    struct storm_result *res;
    uint64_t *up, *renew; /* the clients' times, for their spreads */
    double self0, redis0; /* the CPU clocks at the kill; redis0 -1: unknown */
};

static void on_log(int level, const char *message, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    if (st->o->verbose)
        fprintf(stderr, "lwtls: %s: %s\n", lw_log_level_name(level), message);
    if (!st->after_kill)
        return;
    /* A failed attempt's line ends "(LW_E...)"; the kill's own say
     * LW_ECONNLOST. */
    if (strstr(message, "(LW_E") && !strstr(message, "(LW_ECONNLOST)"))
        st->failed_attempts++;
    if (!strstr(message, "connection restored"))
        return;
    if (++b->restored == 2)
        b->up_ns = cli_now_ns() - st->kill_ns;
    if (!b->polling && !b->renew_ns) {
        b->polling = 1;
        st->pending[st->npending++] = (unsigned)(b - st->cl);
    }
}

static void on_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    struct storm *st = arg;

    (void)owner;
    if (st->lost++ < 5)
        fprintf(stderr, "lwtls: lock %.*s lost: %s\n", (int)len, name,
                lw_lost_reason_name(reason));
}

static void on_answer(int err, int64_t value, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    (void)value;
    if (err) {
        char last[300];

        if (!st->answer_failed++) {
            lw_client_last_error(b->c, last, sizeof last);
            fprintf(stderr, "lwtls: a client's first call failed: %s%s%s\n", lw_strerror(err),
                    last[0] ? ": " : "", last);
        }
        return;
    }
    b->answered = 1;
    if (++st->answered == st->n)
        st->cold_end_ns = cli_now_ns();
}

static void on_acquired(int err, int64_t value, void *arg)
{
    struct bclient *b = arg;
    struct storm *st = b->st;

    (void)value;
    if (!err) {
        st->acquired++;
        return;
    }
    if (!st->acquire_failed++)
        fprintf(stderr, "lwtls: an acquire failed: %s\n", lw_strerror(err));
}

static void lock_name(char *buf, size_t n, unsigned index, unsigned client, unsigned lock)
{
    snprintf(buf, n, "lwtls:%d:%u:%u:%u", (int)getpid(), index, client, lock);
}

/*
 * The locks whose hold is gone from Redis (HEXISTS of each lock's field,
 * pipelined on lwtls's own connection), whatever their clients know: a
 * loop held up by a long iteration can leave a lock expired in Redis and
 * not yet reported lost.  -1 when Redis did not answer.
 */
static long long count_gone(redisContext *rc, const struct storm *st, unsigned index)
{
    unsigned locks = st->o->locks;
    long long gone = 0;

    for (unsigned i = 0; i < st->n; i++) {
        const char *id = lw_client_id(st->cl[i].c);
        char name[96];

        for (unsigned j = 0; j < locks; j++) {
            lock_name(name, sizeof name, index, i, j);
            if (redisAppendCommand(rc, "HEXISTS %s %s:%u", name, id, OWNER) != REDIS_OK)
                return -1;
        }
        for (unsigned j = 0; j < locks; j++) {
            redisReply *r;

            if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
                return -1;
            gone += r->type != REDIS_REPLY_INTEGER || r->integer != 1;
            freeReplyObject(r);
        }
    }
    return gone;
}

/* Poll the clients with a connection restored and no renewal yet. */
static void poll_pending(struct storm *st)
{
    struct lw_client_stats s;
    unsigned k = 0;

    for (unsigned i = 0; i < st->npending; i++) {
        struct bclient *b = &st->cl[st->pending[i]];

        lw_client_get_stats(b->c, &s);
        if (!b->cmd_up && s.reconnects > b->base_reconnects) {
            /* The command connection is up again since the last poll: what
             * is confirmed from now on went out on it. */
            b->cmd_up = 1;
            b->base_confirmed = s.renewals_confirmed;
        } else if (b->cmd_up && s.renewals_confirmed > b->base_confirmed) {
            b->renew_ns = cli_now_ns() - st->kill_ns;
            b->polling = 0;
            st->renewing++;
            continue;
        }
        st->pending[k++] = st->pending[i];
    }
    st->npending = k;
}

/* The storm's memory and its result's starting values.  0, or 2 (said). */
static int storm_open(struct storm *st)
{
    struct storm_result *res = st->res;

    memset(res, 0, sizeof *res);
    res->clients = st->o->clients;
    res->locks = st->o->locks;
    res->self_cpu_s = res->redis_cpu_s = -1;
    res->killed_normal = res->killed_pubsub = -1;
    st->cl = calloc(st->n, sizeof *st->cl);
    st->pending = calloc(st->n, sizeof *st->pending);
    st->up = calloc(st->n, sizeof *st->up);
    st->renew = calloc(st->n, sizeof *st->renew);
    if (!st->cl || !st->pending || !st->up || !st->renew) {
        fprintf(stderr, "lwtls: out of memory\n");
        return 2;
    }
    return 0;
}

static void storm_close(struct storm *st)
{
    for (unsigned i = 0; st->cl && i < st->n; i++) {
        for (unsigned j = 0; j < st->o->locks; j++)
            lw_lock_free(st->cl[i].locks[j]);
        if (st->cl[i].c)
            lw_client_free(st->cl[i].c);
    }
    free(st->cl);
    free(st->pending);
    free(st->up);
    free(st->renew);
}

/* The clients' configuration: embedded on the storm's loop, the run's
 * TLS, the lease and back-off asked for, lost locks and log lines told. */
static void client_config(struct lw_client_config *cfg, struct storm *st, enum run_kind k,
                          const struct tls_certs *certs, const struct redis_server *srv)
{
    const struct opts *o = st->o;

    lw_client_config_init(cfg);
    cfg->host = "127.0.0.1";
    cfg->port = srv->port;
    cfg->loop = st->loop;
    cfg->watchdog_timeout_ms = o->lease_ms;
    cfg->tls = client_tls(o, k, certs);
    cfg->reconnect_min_ms = o->reconnect_min_ms;
    if (cfg->reconnect_max_ms < cfg->reconnect_min_ms)
        cfg->reconnect_max_ms = cfg->reconnect_min_ms;
    cfg->on_lost = on_lost;
    cfg->lost_arg = st;
    cfg->log = on_log;
    cfg->log_level = LW_LOG_INFO;
}

/* Client i, its locks' handles, and its first call.  0, or 2 (said). */
static int open_client(struct storm *st, struct lw_client_config *cfg, unsigned index,
                       unsigned i)
{
    struct bclient *b = &st->cl[i];
    int err, status = 0;

    b->st = st;
    cfg->log_arg = b;
    if ((err = lw_client_new(cfg, &b->c)) != 0) {
        fprintf(stderr, "lwtls: lw_client_new: %s\n", lw_strerror(err));
        return 2;
    }
    for (unsigned j = 0; j < st->o->locks && !status; j++) {
        char name[96];

        lock_name(name, sizeof name, index, i, j);
        if ((err = lw_lock_new(b->c, name, strlen(name), &b->locks[j])) != 0) {
            fprintf(stderr, "lwtls: lw_lock_new: %s\n", lw_strerror(err));
            status = 2;
        }
    }
    if (!status && (err = lw_is_locked_async(b->locks[0], on_answer, b)) != 0) {
        fprintf(stderr, "lwtls: lw_is_locked_async: %s\n", lw_strerror(err));
        status = 2;
    }
    return status;
}

/* Cold start: WAVE clients at a time, a first call each, answered before
 * the next wave; every client answered (res->cold_ns).  0, or 2 (said). */
static int cold_start(struct storm *st, struct lw_client_config *cfg, unsigned index)
{
    uint64_t end;
    int status = 0;

    fprintf(stderr, "lwtls:   %u clients connecting, %u at a time...\n", st->n, WAVE);
    st->start_ns = cli_now_ns();
    end = st->start_ns + (uint64_t)COLD_LIMIT_S * 1000000000u;
    for (unsigned i = 0; i < st->n && !status && !interrupted && !st->answer_failed; i++) {
        status = open_client(st, cfg, index, i);
        if ((i + 1) % WAVE && i + 1 < st->n)
            continue;
        while (!status && !interrupted && st->answered + st->answer_failed <= i &&
               cli_now_ns() < end)
            run_once(st->loop, &st->wake, end);
    }
    if (status || interrupted)
        return status;
    if (st->answered < st->n) {
        fprintf(stderr, "lwtls: %u of %u clients never answered a first call\n",
                st->n - st->answered, st->n);
        return 2;
    }
    st->res->cold_ns = st->cold_end_ns - st->start_ns;
    return 0;
}

/* The locks, in L groups spread over a renewal period; then on to halfway
 * to the next renewals (at once if the acquires took longer).  0, or 2
 * (said). */
static int take_locks(struct storm *st)
{
    const struct opts *o = st->o;
    uint64_t period = (uint64_t)o->lease_ms * 1000000u / 3, gap = period / o->locks, t0;
    int status = 0;

    fprintf(stderr, "lwtls:   %u locks...\n", st->n * o->locks);
    t0 = cli_now_ns();
    for (unsigned j = 0; j < o->locks && !interrupted && !status; j++) {
        run_until(st->loop, &st->wake, t0 + j * gap);
        for (unsigned i = 0; i < st->n && !status; i++) {
            int err = lw_acquire_async(st->cl[i].locks[j], OWNER, 0, 0, on_acquired, &st->cl[i]);

            if (err) {
                fprintf(stderr, "lwtls: lw_acquire_async: %s\n", lw_strerror(err));
                status = 2;
            }
        }
    }
    while (!status && !interrupted && st->acquired + st->acquire_failed < (uint64_t)st->n * o->locks)
        run_once(st->loop, &st->wake, cli_now_ns() + 100000000u);
    run_until(st->loop, &st->wake, t0 + period - gap / 2);
    return status;
}

/* Each client's counters noted and the CPU clocks read, then every
 * connection killed from lwtls's own (rc). */
static void kill_all(struct storm *st, redisContext *rc)
{
    struct storm_result *res = st->res;
    struct lw_client_stats s;

    for (unsigned i = 0; i < st->n; i++) {
        struct bclient *b = &st->cl[i];

        lw_client_get_stats(b->c, &s);
        b->base_reconnects = s.reconnects;
        b->base_handshakes = s.tls_handshakes;
        b->base_resumed = s.tls_resumed;
        b->base_risk = s.went_at_risk;
    }
    st->redis0 = cli_redis_cpu_s(rc);
    st->self0 = cli_process_cpu_s();
    fprintf(stderr, "lwtls:   killing every connection...\n");
    st->after_kill = 1;
    st->kill_ns = cli_now_ns();
    for (int t = 0; t < 2; t++) {
        redisReply *r = redisCommand(rc, t ? "CLIENT KILL TYPE pubsub" : "CLIENT KILL TYPE normal");

        if (r && r->type == REDIS_REPLY_INTEGER)
            *(t ? &res->killed_pubsub : &res->killed_normal) = r->integer;
        else
            fprintf(stderr, "lwtls: CLIENT KILL: %s\n",
                    r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
    }
}

/* One loop iteration, woken by end at the latest; the longest busy time
 * kept: before the poll blocked, and after it woke. */
static void timed_iteration(struct storm *st, uint64_t end)
{
    uint64_t busy, t = cli_now_ns();

    busy_mark.blocked = busy_mark.woke = 0;
    run_once(st->loop, &st->wake, end);
    busy = cli_now_ns() - t;
    if (busy_mark.woke && busy_mark.blocked >= t && busy_mark.woke >= busy_mark.blocked)
        busy -= busy_mark.woke - busy_mark.blocked;
    if (busy > st->res->longest_iteration_ns)
        st->res->longest_iteration_ns = busy;
}

/* Every client renewing again: the time since the kill, and the CPU both
 * sides spent on it. */
static void all_renewing(struct storm *st, redisContext *rc)
{
    struct storm_result *res = st->res;

    res->all_renewing_ns = cli_now_ns() - st->kill_ns;
    res->self_cpu_s = cli_process_cpu_s() - st->self0;
    if (st->redis0 >= 0 && (res->redis_cpu_s = cli_redis_cpu_s(rc)) >= 0)
        res->redis_cpu_s -= st->redis0;
    fprintf(stderr, "lwtls:   every client renewing again after %.0f ms; watching the "
                    "locks to the end of a lease...\n",
            (double)res->all_renewing_ns / 1e6);
}

/* From the kill until a lease and two ticks later.  Whatever a client
 * does (a connection restored, a renewal confirmed) happens in a loop
 * iteration: poll after each. */
static void watch(struct storm *st, redisContext *rc)
{
    uint64_t end = st->kill_ns + (uint64_t)st->o->lease_ms * 1000000u +
                   2u * LW_DEFAULT_TICK_MS * 1000000u;
    ev_prepare blocking;
    ev_check woken;
    int cpu_taken = 0;

    ev_prepare_init(&blocking, on_blocking);
    ev_set_priority(&blocking, EV_MINPRI);
    ev_check_init(&woken, on_woken);
    ev_set_priority(&woken, EV_MAXPRI);
    ev_prepare_start(st->loop, &blocking);
    ev_check_start(st->loop, &woken);
    while (!interrupted && cli_now_ns() < end) {
        timed_iteration(st, end);
        poll_pending(st);
        if (!cpu_taken && st->renewing == st->n) {
            all_renewing(st, rc);
            cpu_taken = 1;
        }
    }
    ev_prepare_stop(st->loop, &blocking);
    ev_check_stop(st->loop, &woken);
}

/* What came of it: the counters since the kill, the spreads, Redis's word
 * on the locks, the checks. */
static void collect(struct storm *st, redisContext *rc, unsigned index)
{
    struct storm_result *res = st->res;
    struct lw_client_stats s;
    unsigned nup = 0, nrenew = 0;

    for (unsigned i = 0; i < st->n; i++) {
        struct bclient *b = &st->cl[i];

        lw_client_get_stats(b->c, &s);
        res->reconnects += s.reconnects - b->base_reconnects;
        res->handshakes += s.tls_handshakes - b->base_handshakes;
        res->resumed += s.tls_resumed - b->base_resumed;
        res->went_at_risk += s.went_at_risk - b->base_risk;
        res->held_end += s.locks_held;
        res->lost += s.lost_not_owner + s.lost_errors + s.lost_expired + s.lost_failover +
                     s.lost_held_too_long;
        if (b->up_ns)
            st->up[nup++] = b->up_ns;
        if (b->renew_ns)
            st->renew[nrenew++] = b->renew_ns;
    }
    if (st->lost > res->lost)
        res->lost = st->lost;
    if ((res->gone = count_gone(rc, st, index)) < 0)
        fprintf(stderr, "lwtls: Redis did not say which locks it still holds\n");
    else if ((uint64_t)res->gone > res->lost)
        res->lost = (uint64_t)res->gone;
    res->acquire_failed = st->acquire_failed;
    res->failed_attempts = st->failed_attempts;
    res->up = spread_of(st->up, nup);
    res->renew = spread_of(st->renew, nrenew);
    res->ok = res->lost == 0 && res->gone == 0 && res->acquire_failed == 0 && nup == st->n &&
              nrenew == st->n && res->held_end == (uint64_t)st->n * st->o->locks && !interrupted;
}

/* Create the clients, take the locks, kill every connection, watch them
 * come back. */
int run_storm(struct ev_loop *loop, const struct opts *o, enum run_kind k,
              const struct tls_certs *certs, const struct redis_server *srv,
              redisContext *rc, unsigned index, struct run *run)
{
    struct storm st = {.o = o, .n = o->clients, .loop = loop, .res = &run->storm};
    struct lw_client_config cfg;
    int status;

    ev_init(&st.wake, on_wake);
    if ((status = storm_open(&st)) == 0) {
        client_config(&cfg, &st, k, certs, srv);
        status = cold_start(&st, &cfg, index);
    }
    if (!status && !interrupted)
        status = take_locks(&st);
    if (!status && !interrupted) {
        kill_all(&st, rc);
        watch(&st, rc);
        collect(&st, rc, index);
        run->done_storm = 1;
    }
    run->interrupted = interrupted;
    storm_close(&st);
    return status;
}
