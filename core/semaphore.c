/*
 * core/semaphore.c - semaphore handles and the calls on them
 * (<leasewheel/semaphore.h> says what they promise).
 *
 * Every call is a sem_op, as a lock call is a struct op (client_base.h),
 * but simpler: no owners, no hand-over.  The calling thread checks the arguments (and
 * for an acquire draws the permits' ids: 16 bytes each from getrandom());
 * the engine thread does the rest.  Unlike a lock's op, a sem_op is
 * formatted again before every attempt, on the engine thread: its scripts
 * carry the publish command, which follows the pub/sub mode the engine
 * thread keeps.  They carry no time: a permit's expiry is Redis's TIME +
 * its lease, read by the script (only Redis's clock times a lease).
 *
 * An acquire that finds too few permits waits in this client's line for
 * the name (waiters.c, counting: a release wakes the waiters its permits
 * serve) and tries again when woken, or at the
 * nearest expiry its attempt was answered, or gives up at its deadline.
 * One answered when less than a tick of its lease is sure to be left
 * gives its permits back (SOP_UNDO) and fails with LW_ETIMEDOUT: Redis
 * ran it late, and another client may reclaim them any moment.  With
 * acquire_replicas, an acquire goes over the side lane and its permits
 * are the caller's only once a WAIT there counted enough replicas
 * (replicas.c); else they go back the same way (LW_EREPLICAS).
 *
 * Rule for the engine thread, as in lock.c: engine_submit() there may
 * complete the request at once, so it is the last thing done with an op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "container.h"
#include "client_base.h"
#include "call.h"
#include "publish.h"
#include "scripts.h"
#include "refs.h"
#include "reply.h"
#include "replicas.h"
#include "tag.h"
#include "waiters.h"
#include "watchdog.h"

#define SEM_CHANNEL_PREFIX "redisson_sc"
#define SEM_TIMEOUT_SUFFIX "timeout"
/* Redisson's score for a permit that never expires. */
#define SEM_NEVER_MS 922337203685477ll

struct lw_semaphore {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op in progress */
    char *timeout_key;     /* {name}:timeout */
    size_t timeout_len;
    char *channel; /* redisson_sc:{name} */
    size_t channel_len;
    unsigned slot; /* name, timeout key and channel share it */
    size_t len;
    char name[];
};

enum sem_op_kind { SOP_ACQUIRE,
                   SOP_RELEASE,
                   SOP_UNDO, /* an acquire answered too late, or not acknowledged by
                 enough replicas: its permits go back */
                   SOP_TRY_SET,
                   SOP_SET,
                   SOP_ADD,
                   SOP_AVAILABLE,
                   SOP_ACQUIRED };

/* A semaphore call: the call (call.h), and what only a semaphore's has. */
struct sem_op {
    struct call call;
    struct lw_semaphore *sem;
    struct lw_permit *permits; /* acquire: the caller's, filled in; release:
                                  the ids (an async release's: its own copy,
                                  after the op) */
    int64_t amount;            /* set, try-set: the permits; add: the delta */
    unsigned n;                /* permits acquired or released */
    uint8_t held_back;         /* a release: the watchdog holds its permits'
                                  renewals back until it completes */
};

static struct sem_op *op_of(struct call *call)
{
    return lw_container_of(call, struct sem_op, call);
}

static void sem_attempt(struct sem_op *op)
{
    call_attempt(&op->call);
}

static void sem_complete(struct sem_op *op, int err, int64_t value)
{
    call_complete(&op->call, err, value);
}

/* ---- Handles ---- */

static void sem_unref(struct lw_semaphore *sem)
{
    if (atomic_fetch_sub_explicit(&sem->refs, 1, memory_order_acq_rel) == 1) {
        client_unref(sem->client);
        free(sem->timeout_key);
        free(sem->channel);
        free(sem);
    }
}

int lw_semaphore_new(struct lw_client *c, const void *name, size_t len,
                     struct lw_semaphore **out)
{
    struct lw_semaphore *sem;

    if (!c || !name || !out || len == 0)
        return LW_EINVAL;
    if (len > LW_LOCK_NAME_MAX)
        return LW_ERANGE;
    if (!(sem = calloc(1, sizeof *sem + len + 1)))
        return LW_ENOMEM;
    if (client_ref(c)) {
        free(sem);
        return LW_ESHUTDOWN;
    }
    sem->client = c;
    sem->len = len;
    memcpy(sem->name, name, len);
    atomic_init(&sem->refs, 1);
    sem->slot = keyslot(name, len);
    sem->channel = tag_key(SEM_CHANNEL_PREFIX ":", name, len, "", &sem->channel_len);
    sem->timeout_key = tag_key("", name, len, ":" SEM_TIMEOUT_SUFFIX, &sem->timeout_len);
    if (!sem->channel || !sem->timeout_key) {
        sem_unref(sem);
        return LW_ENOMEM;
    }
    *out = sem;
    return 0;
}

void lw_semaphore_free(struct lw_semaphore *sem)
{
    if (sem)
        sem_unref(sem);
}

/* ---- Permit ids ---- */

char *lw_permit_hex(const struct lw_permit *permit, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (unsigned i = 0; i < LW_PERMIT_ID_LEN; i++) {
        out[2 * i] = digits[permit->id[i] >> 4];
        out[2 * i + 1] = digits[permit->id[i] & 15];
    }
    out[LW_PERMIT_HEX_LEN] = '\0';
    return out;
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int lw_permit_from_hex(const char *hex, struct lw_permit *out)
{
    struct lw_permit p;

    if (!hex || !out || strlen(hex) != LW_PERMIT_HEX_LEN)
        return LW_EINVAL;
    for (unsigned i = 0; i < LW_PERMIT_ID_LEN; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return LW_EINVAL;
        p.id[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = p;
    return 0;
}

uint64_t lw_permit_owner(const struct lw_permit *permit)
{
    return permit_tag(permit->id);
}

/* n fresh ids from the kernel's generator: two clients drawing the same
 * 128 bits would share a permit, so no weaker fallback. */
static int random_ids(struct lw_permit *permits, unsigned n)
{
    uint8_t *b = permits->id;
    size_t want = (size_t)n * LW_PERMIT_ID_LEN, got = 0;

    while (got < want) {
        ssize_t r = getrandom(b + got, want - got, 0);

        if (r <= 0)
            return LW_ENOTSUP;
        got += (size_t)r;
    }
    return 0;
}

/* ---- Ending an op (engine thread) ---- */

static void release_watchdog(struct lw_client *c, struct sem_op *op, int begin, int rc);

/* Before a semaphore call ends (call.h's `ending`): a release lets its
 * permits' renewals go, however it ended, and a waiter leaves its line. */
static void ending(struct call *call, int err)
{
    struct sem_op *op = op_of(call);

    if (op->held_back) {
        op->held_back = 0;
        release_watchdog(call->client, op, 0, err);
    }
    if (call->w.link.chan)
        waiters_leave(call->client, &call->w, WAIT_PASS, call->w.look_ns);
}

/* ---- Formatting (engine thread, before every attempt) ---- */

#define SEM_ARGS_MAX (3 + 4 + LW_MAX_PERMITS_AT_ONCE)

/* The script with the semaphore's three keys, args[] after them, then the
 * n permit ids of the op (n may be 0). */
static int format_script(struct sem_op *op, int script, int nargs, const char **args,
                         unsigned n)
{
    const struct lw_semaphore *sem = op->sem;
    const char **argv = malloc(SEM_ARGS_MAX * sizeof *argv);
    size_t *lens = malloc(SEM_ARGS_MAX * sizeof *lens);
    int argc = 0, rc;

    if (!argv || !lens) {
        free(argv);
        free(lens);
        return LW_ENOMEM;
    }
    argv[argc] = sem->name, lens[argc++] = sem->len;
    argv[argc] = sem->timeout_key, lens[argc++] = sem->timeout_len;
    argv[argc] = sem->channel, lens[argc++] = sem->channel_len;
    for (int i = 0; i < nargs; i++)
        argv[argc] = args[i], lens[argc++] = strlen(args[i]);
    for (unsigned i = 0; i < n; i++)
        argv[argc] = (const char *)op->permits[i].id, lens[argc++] = LW_PERMIT_ID_LEN;
    rc = request_evalsha(&op->call.req, script, 3, argc, argv, lens);
    free(argv);
    free(lens);
    return rc;
}

/* The op's command.  It carries no time: the scripts read Redis's, and
 * an acquire's permits are scored Redis's TIME + their lease, which
 * counts from the command's last write (however late that is). */
static int format_command(struct sem_op *op)
{
    const char *publish = client_publish_command(op->sem->client);
    char a[24], b[24];

    request_clear(&op->call.req);
    snprintf(a, sizeof a, "%lld", (long long)op->amount);
    switch (op->call.kind) {
    case SOP_ACQUIRE:
        snprintf(a, sizeof a, "%u", op->n);
        snprintf(b, sizeof b, "%llu", (unsigned long long)call_lease_ms(&op->call));
        return format_script(op, SCRIPT_SEM_ACQUIRE, 3, (const char *[]){a, b, publish}, op->n);
    case SOP_RELEASE:
    case SOP_UNDO:
        return format_script(op, SCRIPT_SEM_RELEASE, 1, (const char *[]){publish}, op->n);
    case SOP_TRY_SET:
        return format_script(op, SCRIPT_SEM_TRY_SET, 2, (const char *[]){a, publish}, 0);
    case SOP_SET:
        return format_script(op, SCRIPT_SEM_SET, 2, (const char *[]){a, publish}, 0);
    case SOP_ADD:
        return format_script(op, SCRIPT_SEM_ADD, 2, (const char *[]){a, publish}, 0);
    default:
        return format_script(op, SCRIPT_SEM_COUNTS, 1, (const char *[]){publish}, 0);
    }
}

/* Format the op's command for this attempt, routed by its slot (call.h's
 * `format`): its scripts carry the publish command, which follows the
 * pub/sub mode the engine thread keeps. */
static int format_attempt(struct call *call)
{
    struct sem_op *op = op_of(call);
    int rc = format_command(op);

    if (rc)
        return rc;
    request_route_slot(&call->req, op->sem->slot);
    if (call->kind == SOP_ACQUIRE)
        request_settle(&call->req); /* Sentinel: not at once after a switch */
    /* An acquire that replicas must acknowledge goes where its WAIT will
     * follow it (replicas.c); giving permits back waits for nothing. */
    call->req.lane =
        call->kind == SOP_ACQUIRE && call->client->replicas ? LW_LANE_SIDE : LW_LANE_MAIN;
    return 0;
}

/* ---- Replies (engine thread) ---- */

/* Too few permits were free; nearest is when the first expiry is due
 * (retry_at()). */
static void acquire_short(struct lw_client *c, struct sem_op *op, int64_t nearest)
{
    uint64_t now = lw_clock_now();
    int live;

    if (now >= op->call.w.deadline_ns) {
        sem_complete(op, waiters_timed_out(c), 0);
        return;
    }
    if (op->call.w.woken) { /* a release came while this attempt was out */
        sem_attempt(op);
        return;
    }
    if (!op->call.w.link.chan &&
        (live = waiters_join(c, &op->call.w, op->sem->channel, op->sem->channel_len)) != 0) {
        if (live < 0)
            sem_complete(op, LW_ENOMEM, 0);
        else
            sem_attempt(op);
        return;
    }
    op->call.w.state = WAIT_WAITING;
    op->call.w.look_ns = holder_retry_at(now, nearest, op->call.w.deadline_ns);
    waiters_arm(c, &op->call.w, waiters_first(&op->call.w) ? op->call.w.look_ns : UINT64_MAX);
}

/* Until when an acquire's permits are sure, their lease counting from
 * from_ns (the acquire's last write: the script scored them later, by
 * Redis's clock): less the drift, and less the mixed fleet's allowance
 * (permit_clock_skew_ms, 0 unless asked for; client.c caps it at a
 * quarter of the watchdog's lease, a lease of the caller's at a quarter
 * of its own): a Redisson client, which reclaims by its own clock, may
 * reclaim them that much early when its clock runs ahead of Redis's. */
static uint64_t permits_sure_until(const struct lw_client *c, const struct sem_op *op,
                                   uint64_t from_ns)
{
    uint64_t lease_ms = call_lease_ms(&op->call);
    uint64_t skew_ms = c->terms[KIND_PERMIT].skew_ms;

    if (skew_ms > lease_ms / 4)
        skew_ms = lease_ms / 4;
    return lease_valid_until(lease_ms, from_ns) - skew_ms * 1000000u;
}

/* The acquire's permits go back (SOP_UNDO), and it fails with err
 * (call.h's `undo`). */
static void give_back(struct call *call, int err)
{
    if (call->w.link.chan)
        waiters_leave(call->client, &call->w, WAIT_PASS, call->w.look_ns);
    call->kind = SOP_UNDO;
    call->waits = 0;
    call->undo_err = err;
    call_attempt(call);
}

/* The permits are the caller's.  With lease 0 the watchdog renews each
 * from now on. */
static void acquire_done(struct lw_client *c, struct sem_op *op, uint64_t from_ns)
{
    if (op->call.until_out) /* the caller's, before done runs */
        *op->call.until_out = permits_sure_until(c, op, from_ns);
    if (op->call.lease_ms == 0)
        for (unsigned i = 0; i < op->n; i++)
            watchdog_permit_acquired(c, op->sem->name, op->sem->len, op->sem->slot,
                                     op->permits[i].id, from_ns);
    sem_complete(op, 0, op->n);
}

/* Its replicas acknowledged the acquire (call.h's `acked`): the permits
 * are the caller's unless the WAIT took too long. */
static void acquire_acked(struct call *call)
{
    struct sem_op *op = op_of(call);

    if (!call_undo_if_late(call, permits_sure_until(call->client, op, call->from_ns)))
        acquire_done(call->client, op, call->from_ns);
}

/* The permits are ours, unless the reply came too late to be of use:
 * then they go back.  With acquire_replicas, once enough replicas have
 * them.  `left` were free after them: the waiters behind that they serve
 * try now (should the replicas refuse, the permits' release wakes them
 * again). */
static void acquire_got(struct lw_client *c, struct sem_op *op, int64_t left)
{
    uint64_t from_ns = request_lease_from(&op->call.req);

    if (call_undo_if_late(&op->call, permits_sure_until(c, op, from_ns)))
        return;
    if (op->call.w.link.chan)
        waiters_leave(c, &op->call.w, left >= 0 ? left : WAIT_PASS, op->call.w.look_ns);
    if (c->replicas) {
        op->call.from_ns = from_ns;
        call_wait_replicas(&op->call);
    } else {
        acquire_done(c, op, from_ns);
    }
}

/* A release is about to be sent (begin) or was answered (end: rc 0
 * released, LW_ENOPERMIT gone anyway, else unknown): the watchdog holds
 * the permits' renewals back meanwhile, and forgets them once they are
 * gone. */
static void release_watchdog(struct lw_client *c, struct sem_op *op, int begin, int rc)
{
    for (unsigned i = 0; i < op->n; i++) {
        const uint8_t *id = op->permits[i].id;

        if (begin)
            watchdog_permit_release_begin(c, op->sem->name, op->sem->len, id);
        else
            watchdog_permit_release_end(c, op->sem->name, op->sem->len, id,
                                        rc == 0 || rc == LW_ENOPERMIT);
    }
}

static void acquire_reply(struct lw_client *c, struct sem_op *op, const redisReply *reply)
{
    int64_t status;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1) {
        sem_complete(op, LW_EREPLY, 0);
        return;
    }
    status = reply_integer(reply->element[0]);
    if (status < 0)
        sem_complete(op, LW_ENOSEM, 0);
    else if (status == 1)
        acquire_got(c, op, reply->elements >= 2 ? reply_integer(reply->element[1]) : -1);
    else if (reply->elements >= 2)
        acquire_short(c, op, reply_integer(reply->element[1]));
    else
        sem_complete(op, LW_EREPLY, 0);
}

/* {-1} or {1, available, acquired}. */
static void counts_reply(struct sem_op *op, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1)
        sem_complete(op, LW_EREPLY, 0);
    else if (reply_integer(reply->element[0]) < 0)
        sem_complete(op, LW_ENOSEM, 0);
    else if (reply->elements < 3)
        sem_complete(op, LW_EREPLY, 0);
    else
        sem_complete(op, 0, reply_integer(reply->element[op->call.kind == SOP_AVAILABLE ? 1 : 2]));
}

static void release_begin(struct lw_client *c, struct sem_op *op)
{
    release_watchdog(c, op, 1, 0);
    op->held_back = 1; /* ending() lets them go */
    sem_attempt(op);
}

static void acquire_begin(struct lw_client *c, struct sem_op *op)
{
    if (!waiters_queue(c, &op->call.w, op->sem->channel, op->sem->channel_len))
        sem_attempt(op);
}

/* A semaphore call's first step (call.h's `begin`). */
static void begin(struct call *call)
{
    if (call->kind == SOP_ACQUIRE)
        acquire_begin(call->client, op_of(call));
    else if (call->kind == SOP_RELEASE)
        release_begin(call->client, op_of(call));
    else
        call_attempt(call);
}

/* A semaphore call's answer (call.h's `reply`): reply, or none (err). */
static void on_reply(struct call *call, const redisReply *reply, int err)
{
    struct sem_op *op = op_of(call);
    struct lw_client *c = call->client;

    if (op->call.kind == SOP_UNDO) { /* given back or not, the acquire failed */
        sem_complete(op, op->call.undo_err, 0);
        return;
    }
    /* An acquire that could not reach Redis, or was not answered, while
     * its wait goes on: again.  One that ran unanswered took its permits
     * already: the copy sent again carries the same ids, finds them and
     * takes no more. */
    if (call_retry(call, err)) {
        sem_attempt(op);
        return;
    }
    if (err || reply->type == REDIS_REPLY_ERROR) {
        sem_complete(op, err ? err : reply_error(reply, &op->call.said), 0);
        return;
    }
    switch (op->call.kind) {
    case SOP_ACQUIRE: acquire_reply(c, op, reply); break;
    case SOP_RELEASE:
        err = reply_integer(reply) < 0 ? LW_ENOPERMIT : 0;
        sem_complete(op, err, err ? 0 : op->n);
        break;
    case SOP_AVAILABLE:
    case SOP_ACQUIRED: counts_reply(op, reply); break;
    default: sem_complete(op, 0, reply_integer(reply)); break;
    }
}

/* The semaphore calls' row (call.h): messages on redisson_sc:{name}
 * carry counts of permits (waiters.c). */
static void ref_sem(struct call *call)
{
    atomic_fetch_add_explicit(&op_of(call)->sem->refs, 1, memory_order_relaxed);
}

static void unref_sem(struct call *call)
{
    sem_unref(op_of(call)->sem);
}

static const struct call_class sem_calls = {
    .ref = ref_sem,
    .unref = unref_sem,
    .begin = begin,
    .format = format_attempt,
    .reply = on_reply,
    .acked = acquire_acked,
    .undo = give_back,
    .ending = ending,
    .counts = 1,
};

/* ---- Starting an op (calling thread) ---- */

static int check_acquire(const struct lw_client *c, unsigned n, uint64_t lease_ms,
                         const struct lw_permit *permits)
{
    if (!permits || n == 0)
        return LW_EINVAL;
    if (n > LW_MAX_PERMITS_AT_ONCE)
        return LW_ERANGE;
    return call_check_lease(c, lease_ms);
}

/* Run op (zeroed but for its kind, n, amount and permits, and its
 * caller's fields) on sem: a task on the engine thread first. */
static int run_op(struct lw_semaphore *sem, struct sem_op *op, uint64_t wait_ms,
                  int64_t *value)
{
    if (!sem) {
        call_discard(&op->call);
        return LW_EINVAL;
    }
    op->sem = sem;
    call_init(&op->call, &sem_calls, sem->client, op->call.kind, op->n);
    op->call.task = 1;
    op->call.waits = op->call.kind == SOP_ACQUIRE;
    op->call.start_ns = lw_clock_now();
    waiters_set_wait(&op->call.w, wait_ms);
    return call_run(&op->call, value);
}

/* A blocking call: op on the stack, set up by the caller but for sem. */
static int run_blocking(struct lw_semaphore *sem, struct sem_op *op, uint64_t wait_ms,
                        int64_t *value)
{
    op->call.blocking = 1;
    return run_op(sem, op, wait_ms, value);
}

/* An async op of kind, with room for n permits' ids after it (a
 * release's own copy). */
static struct sem_op *new_async(int kind, lw_done_fn *done, void *arg, unsigned n)
{
    struct sem_op *op = calloc(1, sizeof *op + (size_t)n * sizeof(struct lw_permit));

    if (op) {
        op->call.heap = 1;
        op->call.kind = (uint8_t)kind;
        op->call.done = done;
        op->call.arg = arg;
    }
    return op;
}

/* ---- The API ---- */

/* A set-up call or a query, blocking: kind with amount; its value. */
static int simple_call(struct lw_semaphore *sem, int kind, int64_t amount, int64_t *value)
{
    struct sem_op op;

    memset(&op, 0, sizeof op); /* {0} would set an atomic from an int */
    op.call.kind = (uint8_t)kind;
    op.amount = amount;
    return run_blocking(sem, &op, 0, value);
}

int lw_semaphore_try_set(struct lw_semaphore *sem, int64_t permits)
{
    int64_t v = 0;
    int rc = simple_call(sem, SOP_TRY_SET, permits, &v);

    return rc ? rc : (int)v;
}

int lw_semaphore_set(struct lw_semaphore *sem, int64_t permits)
{
    return simple_call(sem, SOP_SET, permits, NULL);
}

int lw_semaphore_add(struct lw_semaphore *sem, int64_t delta, int64_t *available)
{
    return simple_call(sem, SOP_ADD, delta, available);
}

int lw_semaphore_available(struct lw_semaphore *sem, int64_t *out)
{
    if (!out)
        return LW_EINVAL;
    return simple_call(sem, SOP_AVAILABLE, 0, out);
}

int lw_semaphore_acquired(struct lw_semaphore *sem, int64_t *out)
{
    if (!out)
        return LW_EINVAL;
    return simple_call(sem, SOP_ACQUIRED, 0, out);
}

/* An acquire's terms checked, and its permits' ids drawn into permits:
 * 0 or the error. */
static int acquire_terms(struct lw_semaphore *sem, unsigned n, uint64_t lease_ms,
                         struct lw_permit *permits)
{
    int rc;

    if (!sem)
        return LW_EINVAL;
    if ((rc = check_acquire(sem->client, n, lease_ms, permits)))
        return rc;
    return random_ids(permits, n);
}

/* op (zeroed) as an acquire of n permits into permits; until_ns (or
 * NULL) gets the permits' sure end. */
static void set_acquire(struct sem_op *op, unsigned n, uint64_t lease_ms,
                        struct lw_permit *permits, uint64_t *until_ns)
{
    op->call.kind = SOP_ACQUIRE;
    op->n = n;
    op->call.lease_ms = lease_ms;
    op->permits = permits;
    op->call.until_out = until_ns;
}

static int acquire_blocking(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                            uint64_t lease_ms, struct lw_permit *permits, uint64_t *until_ns)
{
    struct sem_op op;
    int rc;

    if ((rc = acquire_terms(sem, n, lease_ms, permits)))
        return rc;
    memset(&op, 0, sizeof op);
    set_acquire(&op, n, lease_ms, permits, until_ns);
    return run_blocking(sem, &op, wait_ms, NULL);
}

int lw_permit_acquire(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms, uint64_t lease_ms,
                      struct lw_permit *permits)
{
    return acquire_blocking(sem, n, wait_ms, lease_ms, permits, NULL);
}

int lw_permit_acquire_until(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                            uint64_t lease_ms, struct lw_permit *permits, uint64_t *until_ns)
{
    return until_ns ? acquire_blocking(sem, n, wait_ms, lease_ms, permits, until_ns)
                    : LW_EINVAL;
}

int lw_permit_release(struct lw_semaphore *sem, const struct lw_permit *permits, unsigned n)
{
    struct sem_op op;

    if (!permits || n == 0)
        return LW_EINVAL;
    if (n > LW_MAX_PERMITS_AT_ONCE)
        return LW_ERANGE;
    memset(&op, 0, sizeof op);
    op.call.kind = SOP_RELEASE;
    op.n = n;
    op.permits = (struct lw_permit *)permits; /* only read */
    return run_blocking(sem, &op, 0, NULL);
}

/* An acquire, asynchronous; until_ns (or NULL) as above. */
static int acquire_async(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                         uint64_t lease_ms, struct lw_permit *permits, uint64_t *until_ns,
                         lw_done_fn *done, void *arg)
{
    struct sem_op *op;
    int rc;

    if ((rc = acquire_terms(sem, n, lease_ms, permits)))
        return rc;
    if (!(op = new_async(SOP_ACQUIRE, done, arg, 0)))
        return LW_ENOMEM;
    set_acquire(op, n, lease_ms, permits, until_ns);
    return run_op(sem, op, wait_ms, NULL);
}

int lw_permit_acquire_async(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                            uint64_t lease_ms, struct lw_permit *permits, lw_done_fn *done,
                            void *arg)
{
    return acquire_async(sem, n, wait_ms, lease_ms, permits, NULL, done, arg);
}

int lw_permit_acquire_until_async(struct lw_semaphore *sem, unsigned n, uint64_t wait_ms,
                                  uint64_t lease_ms, struct lw_permit *permits,
                                  uint64_t *until_ns, lw_done_fn *done, void *arg)
{
    return until_ns ? acquire_async(sem, n, wait_ms, lease_ms, permits, until_ns, done, arg)
                    : LW_EINVAL;
}

int lw_permit_release_async(struct lw_semaphore *sem, const struct lw_permit *permits,
                            unsigned n, lw_done_fn *done, void *arg)
{
    struct sem_op *op;

    if (!permits || n == 0)
        return LW_EINVAL;
    if (n > LW_MAX_PERMITS_AT_ONCE)
        return LW_ERANGE;
    if (!(op = new_async(SOP_RELEASE, done, arg, n)))
        return LW_ENOMEM;
    op->permits = (struct lw_permit *)(op + 1); /* its own copy */
    memcpy(op->permits, permits, (size_t)n * sizeof *permits);
    op->n = n;
    return run_op(sem, op, 0, NULL);
}
