/*
 * tests/soak_churn.c - the soak's churn: threads that lock and unlock
 * names of their own all the time while the held locks are renewed.
 *
 * Every operation picks a name, one of the two clients and a kind at
 * random (see enum churn_kind).  The names are few, so operations meet on
 * them: they wait on pub/sub for an unlock, find a name held by the other
 * client, or by the same client's other owners.  Holds are short, and
 * sometimes a little longer (up to 2 ms) so that waiters pile up.
 *
 * Checks on the way: every result is one the API promises (0, or
 * LW_ELOCKED for a try; a reentrant hold counts 2; ...); anything else is
 * an error, the first one is kept, and its thread stops - the main thread
 * then ends the soak.  Mutual exclusion is checked in process: a count per
 * name of the owners inside it; two at once is an overlap.  (Explicit
 * leases are long beside the holds, so none runs out inside one.)
 *
 * Async calls wait for their callback without a limit: the main thread
 * watches for operations that run too long (oldest_running_ns) and bounds
 * the wait for the threads at the end (churn_stop).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leasewheel/lock.h>
#include <leasewheel/wheel.h>

#include "soak.h"

#define ASYNC_OWNER_BASE (1ull << 40) /* above any thread id (lw_owner_self) */
#define TRY_WAIT_MAX_MS 50u
#define LONG_HOLD_MAX_US 2000u

/* An async call's completion, waited for by its thread. */
struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, err;
};

struct worker {
    struct churn *ch;
    pthread_t thread;
    uint64_t rng;
    uint64_t owner;                 /* the owner of its async calls */
    struct waiter wait;
    _Atomic uint64_t op_start_ns;   /* 0 between operations */
    _Atomic unsigned op_name, op_client, op_kind; /* the operation running */
    const char *_Atomic op_step;    /* the call it is in: what a stuck one shows */
    _Atomic int exited;
    int started;
};

struct churn {
    struct churn_config cfg;
    struct lw_lock **handles;       /* [client * names + name] */
    _Atomic int *inside;            /* owners inside each name */
    struct worker *workers;
    _Atomic int stop;
    _Atomic uint64_t pairs, contended, errors, overlaps, slowest_ns;
    _Atomic uint64_t by_kind[CHURN_KINDS];
    pthread_mutex_t err_mu;
    char first_error[192];
};

/* One operation in progress. */
struct op {
    struct worker *w;
    struct lw_lock *lock;
    unsigned name, client;
    enum churn_kind kind;
};

/* The call op is about to make, for churn_stuck(). */
static void at(struct op *op, const char *call)
{
    atomic_store(&op->w->op_step, call);
}

const char *churn_kind_name(enum churn_kind k)
{
    static const char *const names[CHURN_KINDS] = {"lock", "try", "reenter", "lease",
                                                   "async"};

    return (unsigned)k < CHURN_KINDS ? names[k] : "?";
}

static uint64_t next_rand(uint64_t *s)
{
    /* xorshift64*: plenty for picking, and no shared state. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};

    nanosleep(&ts, NULL);
}

static void atomic_max(_Atomic uint64_t *at, uint64_t v)
{
    uint64_t old = atomic_load(at);

    while (v > old && !atomic_compare_exchange_weak(at, &old, v))
        ;
}

/* Record an unexpected result rc of call `what`; returns -1 (stop). */
static int fail(struct op *op, const char *what, int rc)
{
    struct churn *ch = op->w->ch;

    if (atomic_fetch_add(&ch->errors, 1) == 0) {
        char result[96];

        if (rc < 0)
            snprintf(result, sizeof result, "%s", lw_strerror(rc));
        else
            snprintf(result, sizeof result, "returned %d", rc);
        pthread_mutex_lock(&ch->err_mu);
        snprintf(ch->first_error, sizeof ch->first_error, "%s (%s) on %s:churn:%u, client %c: %s",
                 what, churn_kind_name(op->kind), ch->cfg.prefix, op->name, "AB"[op->client],
                 result);
        pthread_mutex_unlock(&ch->err_mu);
    }
    return -1;
}

/* Inside the lock: check nobody else is, and sometimes stay a while. */
static void enter(struct op *op)
{
    if (atomic_fetch_add(&op->w->ch->inside[op->name], 1) != 0)
        atomic_fetch_add(&op->w->ch->overlaps, 1);
    if (next_rand(&op->w->rng) % 4 == 0)
        sleep_us(next_rand(&op->w->rng) % LONG_HOLD_MAX_US);
}

static void leave(struct op *op)
{
    atomic_fetch_sub(&op->w->ch->inside[op->name], 1);
}

/* A pair done: entered, left, unlocked. */
static int paired(struct op *op)
{
    atomic_fetch_add(&op->w->ch->pairs, 1);
    atomic_fetch_add(&op->w->ch->by_kind[op->kind], 1);
    return 0;
}

static int unlock_checked(struct op *op)
{
    int rc;

    at(op, "lw_unlock");
    rc = lw_unlock(op->lock);

    return rc ? fail(op, "lw_unlock", rc) : paired(op);
}

/* An acquire's outcome (rc, from the call named what): held elsewhere
 * throughout is fine; held, the critical section and a checked unlock. */
static int section(struct op *op, int rc, const char *what)
{
    if (rc == LW_ELOCKED) {
        atomic_fetch_add(&op->w->ch->contended, 1);
        return 0;
    }
    if (rc)
        return fail(op, what, rc);
    enter(op);
    leave(op);
    return unlock_checked(op);
}

static int op_lock(struct op *op)
{
    at(op, "lw_lock");
    return section(op, lw_lock_acquire(op->lock, NULL), "lw_lock");
}

/* Watchdog try-lock with a short wait: held elsewhere throughout is fine. */
static int op_try(struct op *op)
{
    int rc;

    at(op, "lw_trylock");
    rc = lw_trylock(op->lock, next_rand(&op->w->rng) % TRY_WAIT_MAX_MS, 0, NULL);

    return section(op, rc, "lw_trylock");
}

/* Twice by the same owner: the second acquire must not wait, the counts
 * must say 2 then 1. */
static int op_reenter(struct op *op)
{
    int rc;

    at(op, "lw_lock");
    if ((rc = lw_lock_acquire(op->lock, NULL)))
        return fail(op, "lw_lock", rc);
    enter(op);
    at(op, "reentrant lw_trylock");
    if ((rc = lw_trylock(op->lock, 0, 0, NULL)))
        return fail(op, "reentrant lw_trylock", rc);
    at(op, "lw_hold_count");
    if ((rc = lw_hold_count(op->lock)) != 2)
        return fail(op, "lw_hold_count after two acquires", rc);
    at(op, "first lw_unlock");
    if ((rc = lw_unlock(op->lock)))
        return fail(op, "first lw_unlock", rc);
    at(op, "lw_is_held");
    if ((rc = lw_is_held(op->lock)) != 1)
        return fail(op, "lw_is_held after one unlock of two", rc);
    leave(op);
    return unlock_checked(op);
}

/* An explicit lease, not renewed; unlocked long before it runs out. */
static int op_lease(struct op *op)
{
    uint32_t lease = op->w->ch->cfg.lease_ms;
    int rc;

    at(op, "lease acquire");
    rc = next_rand(&op->w->rng) & 1 ? lw_lock_lease(op->lock, lease, NULL)
                                    : lw_trylock(op->lock, TRY_WAIT_MAX_MS, lease, NULL);

    return section(op, rc, "lease acquire");
}

static void on_done(int err, int64_t value, void *arg)
{
    struct waiter *wt = arg;

    (void)value;
    pthread_mutex_lock(&wt->mu);
    wt->err = err;
    wt->done = 1;
    pthread_cond_signal(&wt->cv);
    pthread_mutex_unlock(&wt->mu);
}

/* The result of the async call just made (rc: what the call returned). */
static int await_done(struct waiter *wt, int rc)
{
    if (rc)
        return rc; /* refused: done never runs */
    pthread_mutex_lock(&wt->mu);
    while (!wt->done)
        pthread_cond_wait(&wt->cv, &wt->mu);
    wt->done = 0;
    rc = wt->err;
    pthread_mutex_unlock(&wt->mu);
    return rc;
}

/* The async twins with the worker's own owner, watchdog or a lease. */
static int op_async(struct op *op)
{
    struct worker *w = op->w;
    uint64_t lease = next_rand(&w->rng) & 1 ? 0 : w->ch->cfg.lease_ms;
    int rc;

    at(op, "lw_acquire_async");
    rc = await_done(&w->wait, lw_acquire_async(op->lock, w->owner, TRY_WAIT_MAX_MS * 2, lease,
                                               on_done, &w->wait));

    if (rc == LW_ELOCKED) {
        atomic_fetch_add(&w->ch->contended, 1);
        return 0;
    }
    if (rc)
        return fail(op, "lw_acquire_async", rc);
    enter(op);
    leave(op);
    at(op, "lw_unlock_async");
    rc = await_done(&w->wait, lw_unlock_async(op->lock, w->owner, on_done, &w->wait));
    return rc ? fail(op, "lw_unlock_async", rc) : paired(op);
}

static enum churn_kind pick_kind(uint64_t r)
{
    r %= 100;
    return r < 25 ? CHURN_LOCK : r < 50 ? CHURN_TRY : r < 65 ? CHURN_REENTER
         : r < 80 ? CHURN_LEASE : CHURN_ASYNC;
}

/* One random operation, timed.  0, or -1 after an error. */
static int one_op(struct worker *w)
{
    static int (*const run[CHURN_KINDS])(struct op *) = {op_lock, op_try, op_reenter, op_lease,
                                                         op_async};
    struct churn *ch = w->ch;
    struct op op = {.w = w, .name = (unsigned)(next_rand(&w->rng) % ch->cfg.names),
                    .client = (unsigned)(next_rand(&w->rng) & 1),
                    .kind = pick_kind(next_rand(&w->rng))};
    uint64_t t0 = lw_clock_now();
    int rc;

    op.lock = ch->handles[op.client * ch->cfg.names + op.name];
    atomic_store(&w->op_name, op.name);
    atomic_store(&w->op_client, op.client);
    atomic_store(&w->op_kind, (unsigned)op.kind);
    atomic_store(&w->op_start_ns, t0);
    rc = run[op.kind](&op);
    atomic_store(&w->op_start_ns, 0);
    atomic_max(&ch->slowest_ns, lw_clock_now() - t0);
    return rc;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    while (!atomic_load(&w->ch->stop) && one_op(w) == 0)
        ;
    atomic_store(&w->exited, 1);
    return NULL;
}

static int make_handles(struct churn *ch)
{
    char name[160];

    for (unsigned c = 0; c < 2; c++) {
        for (unsigned i = 0; i < ch->cfg.names; i++) {
            int rc;

            snprintf(name, sizeof name, "%s:churn:%u", ch->cfg.prefix, i);
            rc = lw_lock_new(ch->cfg.clients[c], name, strlen(name),
                             &ch->handles[c * ch->cfg.names + i]);
            if (rc) {
                fprintf(stderr, "soak: lw_lock_new: %s\n", lw_strerror(rc));
                return -1;
            }
        }
    }
    return 0;
}

static int start_workers(struct churn *ch)
{
    for (unsigned i = 0; i < ch->cfg.threads; i++) {
        struct worker *w = &ch->workers[i];

        w->ch = ch;
        w->rng = 0x9e3779b97f4a7c15ull * (i + 1);
        w->owner = ASYNC_OWNER_BASE + i;
        pthread_mutex_init(&w->wait.mu, NULL);
        pthread_cond_init(&w->wait.cv, NULL);
    }
    for (unsigned i = 0; i < ch->cfg.threads; i++) {
        struct worker *w = &ch->workers[i];

        if (pthread_create(&w->thread, NULL, worker_main, w)) {
            fprintf(stderr, "soak: could not start churn thread %u\n", i);
            return -1;
        }
        w->started = 1;
    }
    return 0;
}

int churn_start(const struct churn_config *cfg, struct churn **out)
{
    struct churn *ch = calloc(1, sizeof *ch);

    *out = ch;
    if (!ch)
        return -1;
    ch->cfg = *cfg;
    pthread_mutex_init(&ch->err_mu, NULL);
    ch->handles = calloc(2u * cfg->names, sizeof *ch->handles);
    ch->inside = calloc(cfg->names, sizeof *ch->inside);
    ch->workers = calloc(cfg->threads, sizeof *ch->workers);
    if (!ch->handles || !ch->inside || !ch->workers) {
        fprintf(stderr, "soak: out of memory for the churn\n");
        return -1;
    }
    if (make_handles(ch) || start_workers(ch))
        return -1;
    return 0;
}

void churn_totals(struct churn *ch, struct churn_totals *out)
{
    uint64_t now = lw_clock_now();

    memset(out, 0, sizeof *out);
    out->pairs = atomic_load(&ch->pairs);
    out->contended = atomic_load(&ch->contended);
    out->errors = atomic_load(&ch->errors);
    out->overlaps = atomic_load(&ch->overlaps);
    out->slowest_ns = atomic_load(&ch->slowest_ns);
    for (unsigned k = 0; k < CHURN_KINDS; k++)
        out->by_kind[k] = atomic_load(&ch->by_kind[k]);
    for (unsigned i = 0; i < ch->cfg.threads; i++) {
        uint64_t t0 = atomic_load(&ch->workers[i].op_start_ns);

        if (t0 && t0 < now && now - t0 > out->oldest_running_ns)
            out->oldest_running_ns = now - t0;
    }
    pthread_mutex_lock(&ch->err_mu);
    memcpy(out->first_error, ch->first_error, sizeof out->first_error);
    pthread_mutex_unlock(&ch->err_mu);
}

int churn_stuck(struct churn *ch, uint64_t older_than_ns, struct churn_stuck *out, int max)
{
    uint64_t now = lw_clock_now();
    int n = 0;

    for (unsigned i = 0; i < ch->cfg.threads && n < max; i++) {
        struct worker *w = &ch->workers[i];
        uint64_t t0 = atomic_load(&w->op_start_ns);

        if (!t0 || t0 >= now || now - t0 <= older_than_ns)
            continue;
        out[n] = (struct churn_stuck){
            .thread = i,
            .client = atomic_load(&w->op_client),
            .kind = (enum churn_kind)atomic_load(&w->op_kind),
            .call = atomic_load(&w->op_step),
            .running_ns = now - t0,
        };
        snprintf(out[n].name, sizeof out[n].name, "%s:churn:%u", ch->cfg.prefix,
                 atomic_load(&w->op_name));
        n++;
    }
    return n;
}

static int all_exited(const struct churn *ch)
{
    for (unsigned i = 0; i < ch->cfg.threads; i++)
        if (ch->workers[i].started && !atomic_load(&ch->workers[i].exited))
            return 0;
    return 1;
}

int churn_stop(struct churn *ch, double timeout_s)
{
    uint64_t until = lw_clock_now() + (uint64_t)(timeout_s * 1e9);

    if (!ch)
        return 0;
    atomic_store(&ch->stop, 1);
    while (!all_exited(ch) && lw_clock_now() < until)
        sleep_us(10000);
    if (!all_exited(ch))
        return -1;
    for (unsigned i = 0; i < ch->cfg.threads; i++)
        if (ch->workers[i].started)
            pthread_join(ch->workers[i].thread, NULL);
    return 0;
}

void churn_free(struct churn *ch)
{
    if (!ch)
        return;
    for (unsigned i = 0; ch->handles && i < 2u * ch->cfg.names; i++)
        lw_lock_free(ch->handles[i]);
    for (unsigned i = 0; ch->workers && i < ch->cfg.threads; i++) {
        pthread_mutex_destroy(&ch->workers[i].wait.mu);
        pthread_cond_destroy(&ch->workers[i].wait.cv);
    }
    pthread_mutex_destroy(&ch->err_mu);
    free(ch->handles);
    free((void *)ch->inside);
    free(ch->workers);
    free(ch);
}
