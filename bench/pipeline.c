/*
 * bench/pipeline.c - see pipeline.h.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scripts.h"
#include "pipeline.h"

#define WAIT_LIMIT_NS (60ull * 1000000000ull) /* a run that takes longer failed */

static int reply_ok(const struct pipeline *p, const redisReply *r)
{
    if (p->ones == 0)
        return r->type == REDIS_REPLY_INTEGER;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != p->ones + (p->stamped ? 1u : 0u))
        return 0;
    if (p->stamped && r->element[p->ones]->type != REDIS_REPLY_INTEGER)
        return 0;
    for (size_t i = 0; i < p->ones; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER ||
            (r->element[i]->integer != 1 && !(p->zeros_ok && r->element[i]->integer == 0)))
            return 0;
    return 1;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "done_word() takes the low half");

/* The futex word: the low 32 bits of done, which is what waiters watch. */
static uint32_t *done_word(struct pipeline *p)
{
    return (uint32_t *)&p->done; /* little-endian: the low half */
}

static void finish_one(struct pipeline *p, int err)
{
    if (err) {
        int none = 0;

        atomic_fetch_add(&p->failed, 1);
        atomic_compare_exchange_strong(&p->first_err, &none, err);
    }
    atomic_fetch_add(&p->done, 1);
    syscall(SYS_futex, done_word(p), FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void on_reply(struct request *req, const redisReply *r, int err, void *arg);

/* Submit the next request, if any: any thread.  Counted as submitted
 * before the caller counts itself done, so that done == submitted means
 * nothing is on the wire (see pipe_stop()). */
static void submit_next(struct pipeline *p)
{
    uint64_t i;
    int rc;

    if (atomic_load(&p->stop) || (i = atomic_fetch_add(&p->next, 1)) >= p->total)
        return;
    atomic_fetch_add(&p->submitted, 1);
    if ((rc = engine_submit(p->e, &p->reqs[i % p->n], on_reply, p)))
        finish_one(p, rc);
}

/* The first bad reply, in words, for pipe_why(): an error's text, or the
 * array's size and its first element that is not a 1 (or 0). */
static void note_bad(struct pipeline *p, const redisReply *r)
{
    int none = 0;
    size_t i = 0;

    if (!atomic_compare_exchange_strong(&p->bad_noted, &none, 1))
        return;
    if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS) {
        snprintf(p->bad_reply, sizeof p->bad_reply, "'%.80s'", r->str);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        snprintf(p->bad_reply, sizeof p->bad_reply, "reply type %d", r->type);
        return;
    }
    while (i < p->ones && i < r->elements && r->element[i]->type == REDIS_REPLY_INTEGER &&
           (r->element[i]->integer == 1 || (p->zeros_ok && r->element[i]->integer == 0)))
        i++;
    snprintf(p->bad_reply, sizeof p->bad_reply, "%zu elements, element %zu: %lld", r->elements,
             i, i < r->elements && r->element[i]->type == REDIS_REPLY_INTEGER
                    ? r->element[i]->integer : -999);
}

static void on_reply(struct request *req, const redisReply *r, int err, void *arg)
{
    struct pipeline *p = arg;

    (void)req;
    if (!err && !reply_ok(p, r)) {
        note_bad(p, r);
        err = 1;
    }
    submit_next(p);
    finish_one(p, err);
}

/* Sleep until done reaches `until` (or equals submitted when until is 0),
 * at most WAIT_LIMIT_NS from start.  0 or -1. */
static int wait_done(struct pipeline *p, uint64_t until, uint64_t start)
{
    for (;;) {
        uint64_t done = atomic_load(&p->done);
        struct timespec ts = {.tv_sec = 1};

        if (until ? done >= until : done == atomic_load(&p->submitted))
            return 0;
        if (lw_clock_now() - start > WAIT_LIMIT_NS)
            return -1;
        syscall(SYS_futex, done_word(p), FUTEX_WAIT_PRIVATE, (uint32_t)done, &ts, NULL, 0);
    }
}

static void launch(struct pipeline *p, uint64_t total)
{
    p->total = total;
    atomic_store(&p->stop, 0);
    atomic_store(&p->next, 0);
    atomic_store(&p->submitted, 0);
    atomic_store(&p->done, 0);
    for (uint32_t i = 0; i < p->window && i < total; i++)
        submit_next(p);
}

double pipe_run(struct pipeline *p)
{
    uint64_t start = lw_clock_now();

    launch(p, p->n);
    if (wait_done(p, p->n, start))
        return -1;
    return (double)(lw_clock_now() - start) / 1e9;
}

void pipe_start(struct pipeline *p)
{
    launch(p, PIPE_FOREVER);
}

int pipe_stop(struct pipeline *p)
{
    atomic_store(&p->stop, 1);
    return wait_done(p, 0, lw_clock_now());
}

const char *pipe_why(struct pipeline *p, char *buf, size_t n)
{
    int err = atomic_load(&p->first_err);

    snprintf(buf, n, "%llu requests failed, first: %s%s%s",
             (unsigned long long)atomic_load(&p->failed),
             err == 1 ? "unexpected reply" : lw_errname(err),
             atomic_load(&p->bad_noted) ? " " : "", atomic_load(&p->bad_noted) ? p->bad_reply : "");
    return buf;
}

void pipe_free_reqs(struct request *reqs, uint32_t n)
{
    for (uint32_t i = 0; reqs && i < n; i++)
        request_clear(&reqs[i]);
    free(reqs);
}

int pipe_scripts_engine(const char *host, int port, uint32_t max_inflight,
                        struct engine **e)
{
    struct engine_config cfg;

    engine_config_init(&cfg);
    cfg.node.host = host;
    cfg.node.port = port;
    cfg.scripts = lw_lock_scripts;
    cfg.nscripts = SCRIPT_COUNT;
    cfg.max_inflight = max_inflight;
    cfg.node.command_timeout_ms = 60000;
    return engine_new(&cfg, e);
}
