/*
 * Round trips through the engine against redis-benchmark, in one run.
 *
 *   roundtrip/engine/D          an application thread keeps max(8*D, 512)
 *                               INCRs outstanding through the engine, whose
 *                               pipeline holds at most D (max_inflight = D);
 *   roundtrip/redis-benchmark/D redis-benchmark -c 1 -P D, the same INCR,
 *                               against the same server;
 *   roundtrip/hiredis-libev/D   the same libraries without the engine: one
 *                               thread, hiredis's async API on a libev loop,
 *                               D commands written, D replies awaited
 *                               (redis-benchmark's pattern).  What the engine
 *                               itself costs is the distance to this one.
 *
 * Both report items_per_second (commands per second).  The server is a
 * private redis-server on a free loopback port, started here.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>

#include "engine.h"
#include "redis_server.h"
#include "shim.h"

#define KEY "lw:bench:counter"

static struct redis_server server;

/* Unpipelined round trips are slow: fewer of them per iteration. */
static int commands_per_iteration(int depth)
{
    return depth < 10 ? 20000 : 50000;
}

/* The window: the engine thread counts completions, the application thread
 * sleeps on the count (a futex) when the window is full. */
struct window {
    _Atomic uint32_t done;
    _Atomic uint32_t wake_at;  /* wake the sleeper once done reaches it */
    _Atomic int sleeping;
    _Atomic uint32_t failed;
};

static void on_done(struct request *req, const redisReply *reply, int err, void *arg)
{
    struct window *w = arg;
    uint32_t done = atomic_fetch_add(&w->done, 1) + 1;

    (void)req;
    if (err || reply->type != REDIS_REPLY_INTEGER)
        atomic_fetch_add(&w->failed, 1);
    if (atomic_load(&w->sleeping) && (int32_t)(done - atomic_load(&w->wake_at)) >= 0) {
        atomic_store(&w->sleeping, 0);
        syscall(SYS_futex, &w->done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

/* Sleep until at least `target` requests have completed. */
static void wait_done(struct window *w, uint32_t target)
{
    uint32_t seen;

    while ((int32_t)((seen = atomic_load(&w->done)) - target) < 0) {
        atomic_store(&w->wake_at, target);
        atomic_store(&w->sleeping, 1);
        seen = atomic_load(&w->done);
        if ((int32_t)(seen - target) >= 0)
            break;
        syscall(SYS_futex, &w->done, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    }
    atomic_store(&w->sleeping, 0);
}

/* N round trips with at most `slots` outstanding; returns seconds. */
static double run_window(struct engine *e, struct request *reqs, uint32_t slots,
                         uint32_t n, struct window *w)
{
    uint32_t base = atomic_load(&w->done);
    uint64_t start = lw_clock_now();

    for (uint32_t i = 0; i < n; i++) {
        /* Window full: sleep until half of it has come back (one wake-up
         * per slots/2 replies).  Replies come in order, so slot i % slots
         * is then free. */
        if (i - (atomic_load(&w->done) - base) >= slots)
            wait_done(w, base + i - slots / 2);
        engine_submit(e, &reqs[i % slots], on_done, w);
    }
    wait_done(w, base + n);
    return (double)(lw_clock_now() - start) / 1e9;
}

static void bm_engine(struct lwb_state *st)
{
    uint32_t depth = (uint32_t)lwb_arg(st, 0), n = commands_per_iteration((int)depth);
    /* The application queues well ahead of the pipeline, as a busy server
     * would: the engine writes the next command the moment there is room,
     * and the application thread wakes once per `slots / 2` replies. */
    uint32_t slots = 8 * depth > 512 ? 8 * depth : 512;
    struct engine_config cfg;
    struct engine *e;
    struct request cmd, *reqs = calloc(slots, sizeof *reqs);
    struct window w = {0};
    const char *argv[] = {"INCR", KEY};
    int64_t total = 0;

    engine_config_init(&cfg);
    cfg.node.port = server.port;
    cfg.max_inflight = depth;
    cfg.node.command_timeout_ms = 60000;
    request_init(&cmd);
    if (engine_new(&cfg, &e) || request_command(&cmd, 2, argv, NULL)) {
        lwb_error(st, "engine set-up failed");
        return;
    }
    for (uint32_t i = 0; i < slots; i++) {
        reqs[i].cmd = cmd.cmd; /* shared, read-only */
        reqs[i].len = cmd.len;
    }
    run_window(e, reqs, slots, 1000, &w); /* connect and warm up */
    while (lwb_keep_running(st)) {
        lwb_set_iteration_time(st, run_window(e, reqs, slots, n, &w));
        total += n;
    }
    lwb_set_items(st, total);
    if (atomic_load(&w.failed))
        lwb_error(st, "some commands failed");
    engine_free(e);
    request_clear(&cmd);
    free(reqs);
}

static void bm_redis_benchmark(struct lwb_state *st)
{
    int depth = (int)lwb_arg(st, 0), n = depth < 10 ? 20000 * depth : 200000;
    char cmd[256], line[512];
    int64_t total = 0;

    snprintf(cmd, sizeof cmd,
             "redis-benchmark -h 127.0.0.1 -p %d -c 1 -P %d -n %d --csv INCR " KEY
             " 2>/dev/null", server.port, depth, n);
    while (lwb_keep_running(st)) {
        FILE *p = popen(cmd, "r");
        double rps = 0;

        while (p && fgets(line, sizeof line, p))
            if (!strncmp(line, "\"INCR", 5))
                sscanf(strchr(line, ',') + 2, "%lf", &rps);
        if (p)
            pclose(p);
        if (rps <= 0) {
            lwb_error(st, "redis-benchmark gave no result");
            return;
        }
        lwb_set_iteration_time(st, n / rps);
        total += n;
    }
    lwb_set_items(st, total);
}

struct raw {
    struct ev_loop *loop;
    const char *cmd;
    size_t len;
    int depth, inflight;
    long left;
};

static void raw_write_batch(redisAsyncContext *ac, struct raw *r);

static void raw_reply(redisAsyncContext *ac, void *reply, void *arg)
{
    struct raw *r = arg;

    if (!reply) {
        ev_break(r->loop, EVBREAK_ALL);
        return;
    }
    if (--r->inflight == 0) {
        if (r->left > 0)
            raw_write_batch(ac, r);
        else
            ev_break(r->loop, EVBREAK_ALL);
    }
}

static void raw_write_batch(redisAsyncContext *ac, struct raw *r)
{
    for (int i = 0; i < r->depth && r->left > 0; i++, r->left--, r->inflight++)
        redisAsyncFormattedCommand(ac, raw_reply, r, r->cmd, r->len);
}

static void bm_hiredis_libev(struct lwb_state *st)
{
    struct raw r = {.loop = ev_loop_new(EVFLAG_AUTO), .depth = (int)lwb_arg(st, 0)};
    redisAsyncContext *ac = redisAsyncConnect("127.0.0.1", server.port);
    char *cmd;
    int len = redisFormatCommand(&cmd, "INCR %s", KEY);
    int64_t total = 0;

    if (!ac || ac->err || len < 0 || redisLibevAttach(r.loop, ac) != REDIS_OK) {
        lwb_error(st, "hiredis set-up failed");
        return;
    }
    r.cmd = cmd;
    r.len = (size_t)len;
    while (lwb_keep_running(st)) {
        uint64_t start = lw_clock_now();

        r.left = commands_per_iteration(r.depth);
        raw_write_batch(ac, &r);
        ev_run(r.loop, 0);
        lwb_set_iteration_time(st, (double)(lw_clock_now() - start) / 1e9);
        total += commands_per_iteration(r.depth);
    }
    lwb_set_items(st, total);
    redisAsyncFree(ac);
    redisFreeCommand(cmd);
    ev_loop_destroy(r.loop);
}

int main(int argc, char **argv)
{
    static const int64_t depths[] = {1, 16, 64, 256};
    int rc;

    if (redis_server_start(&server, NULL))
        return 1;
    lwb_register("roundtrip/engine", bm_engine, depths, 4, LWB_MANUAL_TIME, 1.0);
    lwb_register("roundtrip/redis-benchmark", bm_redis_benchmark, depths, 4,
                 LWB_MANUAL_TIME, 1.0);
    lwb_register("roundtrip/hiredis-libev", bm_hiredis_libev, depths, 4, LWB_MANUAL_TIME,
                 1.0);
    rc = lwb_run(argc, argv);
    redis_server_stop(&server);
    return rc;
}
