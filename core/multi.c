/*
 * core/multi.c - multi-locks: lock handles of one client held by one
 * owner all at once, or none (<leasewheel/multi.h> says what they
 * promise).
 *
 * A handle keeps its locks in one order for every client, slot first and
 * then the name's bytes, cut into groups: one group on one Redis (every
 * key may go in one script), a group per slot in a cluster (a script's
 * keys share a slot).  A group is taken by one script (SCRIPT_MULTI_LOCK),
 * all or none, its names as their own handles would take them.
 *
 * An acquire (a multi_op) takes the groups one after another, in order:
 *
 *   TAKE ---- all taken ----------------------------> done
 *    |  \---- refused, or failed: the groups taken go back (GIVE_BACK, one
 *    |        SCRIPT_MULTI_RELEASE each), then
 *    |          failed: done with its error;
 *    |          refused: wait in the refusing name's line (waiters.c, on
 *    |          its channel, as its own lock's waiters do, its timer at
 *    |          the holder's PTTL), and TAKE again from the first group.
 *    \-- taken twice (a cluster's unsettled retry ran it again): the
 *        surplus holds go back (TRIM), and it goes on.
 *
 * Since every client takes the groups in the same order, each whole, and
 * gives everything back when refused, no two acquires hold part each and
 * wait for each other.  A group whose reply never came may have run:
 * its names are marked unsure (holds.c), as a lock's unanswered acquire.
 * With the watchdog, the groups' leases run from their first writes while
 * the later groups are taken: an acquire done when less than a tick of
 * the earliest is sure to be left gives everything back (LW_ETIMEDOUT).
 *
 * Held with the watchdog, each name is the watchdog's entry as its own
 * lock's would be, and the owner's holds of the set are a struct
 * multi_set, one per (handle, owner) in the client's table, whose lease
 * set (watchdog.h) the entries join: the first lease lost is reported
 * with the set, and multi_lost() then releases the set's holds on the
 * other names.  A release of a set found lost sends nothing (its holds
 * are gone or given back) and fails with LW_ENOTOWNER, as a lost lock's.
 *
 * Threads.  The calling thread checks and sorts (lw_multi_new()) and
 * hands ops over; everything else runs on the engine thread, and the last
 * thing done with an op is submitting its request (which may complete it
 * at once), as in lock.c.
 */
#include <stdlib.h>
#include <string.h>

#include <leasewheel/multi.h>
#include <uthash.h>

#include "client_base.h"
#include "lock_op.h"
#include "container.h"
#include "holds.h"
#include "multi.h"
#include "call.h"
#include "owner.h"
#include "publish.h"
#include "scripts.h"
#include "refs.h"
#include "reply.h"
#include "waiters.h"
#include "watchdog.h"
#include "way.h"

struct lw_multi {
    struct lw_client *client;
    _Atomic uint32_t refs; /* the handle, plus one per op and per set */
    size_t n, ngroups;
    size_t *ends;  /* group g is locks[g ? ends[g - 1] : 0 .. ends[g]) */
    size_t *given; /* locks[i] was given at given[i] (tokens' order) */
    struct lw_lock *locks[];
};

/* The owner's watchdog holds of a handle's set (engine thread). */
struct set_key {
    const struct lw_multi *m;
    uint64_t owner;
};

struct multi_set {
    struct lease_set lease; /* the watchdog's view: first */
    UT_hash_handle hh;      /* in c->multi_sets, by key */
    struct set_key key;
    uint32_t holds; /* acquires of the set not released yet */
};

enum mop_kind { MOP_ACQUIRE,
                MOP_RELEASE };

enum mop_phase { PH_TAKE,
                 PH_GIVE_BACK,
                 PH_TRIM,
                 PH_RELEASE };

/* A multi-lock call: the call (call.h), and what only a multi-lock's
 * has. */
struct multi_op {
    struct call call;
    struct lw_multi *m;
    uint64_t *tokens_out; /* the caller's, in its order, or NULL */
    int end_err;          /* a give-back ends the acquire in it; 0: wait */
    uint8_t again;        /* a give-back is followed by taking again at once
                             (a group could not reach Redis: waiters_retry()) */
    uint8_t phase;        /* enum mop_phase */
    size_t group;         /* the group on the wire */
    size_t taken;         /* groups taken, from the first */
    size_t refused;       /* the lock whose line it waits in */
    int64_t pttl;         /* its holder's lease left, as answered */
    uint32_t count;       /* a release's holds per name */
    uint64_t *tokens;     /* n, the handle's order */
    uint32_t *holds;      /* n: taken (acquire), or to give back (trim) */
};

static void take(struct multi_op *op);
static void send_release(struct multi_op *op);
static struct multi_op *new_op(struct lw_multi *m, int kind, uint64_t owner);

/* ---- The handle ---- */

static void multi_unref(struct lw_multi *m)
{
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < m->n; i++)
        lock_unref(m->locks[i]);
    free(m->ends);
    free(m->given);
    free(m);
}

static void multi_ref(struct lw_multi *m)
{
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

/* The one order: slot (a cluster's; one Redis: none), then the name. */
static int order(const struct lw_lock *a, const struct lw_lock *b, int by_slot)
{
    size_t len = a->len < b->len ? a->len : b->len;
    int r;

    if (by_slot && a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    if ((r = memcmp(a->name, b->name, len)) != 0)
        return r;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Sort m's locks (few: insertion) keeping where each was given, then cut
 * the groups. */
static int sort_and_group(struct lw_multi *m, int by_slot)
{
    for (size_t i = 0; i < m->n; i++)
        m->given[i] = i;
    for (size_t i = 1; i < m->n; i++) {
        for (size_t j = i; j > 0 && order(m->locks[j - 1], m->locks[j], by_slot) > 0; j--) {
            struct lw_lock *l = m->locks[j];
            size_t g = m->given[j];

            m->locks[j] = m->locks[j - 1];
            m->given[j] = m->given[j - 1];
            m->locks[j - 1] = l;
            m->given[j - 1] = g;
        }
    }
    for (size_t i = 1; i < m->n; i++)
        if (order(m->locks[i - 1], m->locks[i], 0) == 0 && m->locks[i - 1]->slot == m->locks[i]->slot)
            return LW_EINVAL; /* a name twice */
    for (size_t i = 1; i <= m->n; i++)
        if (i == m->n || (by_slot && m->locks[i]->slot != m->locks[i - 1]->slot))
            m->ends[m->ngroups++] = i;
    return 0;
}

static int check_locks(struct lw_lock *const *locks, size_t n)
{
    if (!locks)
        return LW_EINVAL;
    if (n == 0 || n > LW_MULTI_MAX)
        return LW_ERANGE;
    for (size_t i = 0; i < n; i++) {
        if (!locks[i] || locks[i]->client != locks[0]->client ||
            !locks[i]->way->multi_mode)
            return LW_EINVAL;
    }
    if (atomic_load_explicit(&locks[0]->client->freed, memory_order_acquire))
        return LW_ESHUTDOWN;
    return locks[0]->client->replicas ? LW_ENOTSUP : 0;
}

int lw_multi_new(struct lw_lock *const *locks, size_t n, struct lw_multi **out)
{
    struct lw_multi *m;
    int rc = out ? check_locks(locks, n) : LW_EINVAL;

    if (rc)
        return rc;
    if (!(m = calloc(1, sizeof *m + n * sizeof m->locks[0])))
        return LW_ENOMEM;
    m->ends = calloc(n, sizeof *m->ends);
    m->given = calloc(n, sizeof *m->given);
    if (!m->ends || !m->given) {
        free(m->ends);
        free(m->given);
        free(m);
        return LW_ENOMEM;
    }
    m->client = locks[0]->client;
    m->n = n;
    memcpy(m->locks, locks, n * sizeof locks[0]);
    if ((rc = sort_and_group(m, m->client->cluster)) != 0) {
        free(m->ends);
        free(m->given);
        free(m);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        lock_ref(m->locks[i]);
    atomic_init(&m->refs, 1);
    *out = m;
    return 0;
}

void lw_multi_free(struct lw_multi *m)
{
    if (m)
        multi_unref(m);
}

/* ---- Sets held with the watchdog ---- */

static struct multi_set *find_set(struct lw_client *c, const struct lw_multi *m, uint64_t owner)
{
    struct set_key key;
    struct multi_set *s = NULL;

    memset(&key, 0, sizeof key);
    key.m = m;
    key.owner = owner;
    HASH_FIND(hh, c->multi_sets, &key, sizeof key, s);
    return s;
}

static void free_set(struct lw_client *c, struct multi_set *s)
{
    struct lw_multi *m = (struct lw_multi *)s->key.m;

    for (size_t i = 0; i < m->n && c->wheel; i++)
        watchdog_set_leave(c, m->locks[i], s->key.owner, &s->lease);
    HASH_DEL(c->multi_sets, s);
    free(s);
    multi_unref(m);
}

/* One of the set's leases was lost (reported already, with the set): the
 * set's holds on every name go back, quietly; the owner's release will
 * find it lost. */
static void multi_lost(struct lw_client *c, struct lease_set *ls, const char *name, size_t len)
{
    struct multi_set *s = lw_container_of(ls, struct multi_set, lease);
    struct lw_multi *m = (struct lw_multi *)s->key.m;
    struct multi_op *op;

    (void)name;
    (void)len; /* its field is gone: giving it back is a no-op (-1) */
    /* The other entries stay in the set until released: a loss of one of
     * them meanwhile is the set's, told already. */
    if (c->closing || !(op = new_op(m, MOP_RELEASE, s->key.owner)))
        return;           /* the holds end with their leases: nothing renews them now */
    op->count = s->holds; /* nobody is told: it has no callback */
    multi_ref(m);
    op->phase = PH_RELEASE;
    op->group = 0;
    for (size_t i = 0; i < m->n; i++)
        watchdog_unlock_begin(c, m->locks[i], op->call.owner);
    send_release(op);
}

/* The acquire of every name is done, with the watchdog: its entries join
 * the owner's set (made at its first acquire). */
static void join_set(struct lw_client *c, struct multi_op *op)
{
    struct lw_multi *m = op->m;
    struct multi_set *s = find_set(c, m, op->call.owner);

    if (s && !s->lease.lost) {
        s->holds++;
        return;
    }
    if (s) /* lost, and not yet released by its owner: a new set */
        free_set(c, s);
    if (!(s = calloc(1, sizeof *s)))
        return; /* renewed, not as a set: each name is lost on its own */
    s->key.m = m;
    s->key.owner = op->call.owner;
    s->holds = 1;
    s->lease.multi = m;
    s->lease.on_lost = multi_lost;
    multi_ref(m);
    HASH_ADD(hh, c->multi_sets, key, sizeof s->key, s);
    for (size_t i = 0; i < m->n; i++)
        watchdog_set_join(c, m->locks[i], op->call.owner, &s->lease);
}

void multi_shutdown(struct lw_client *c)
{
    struct multi_set *s, *tmp;

    HASH_ITER(hh, c->multi_sets, s, tmp) {
        free_set(c, s);
    }
}

/* ---- Ending an op (engine thread) ---- */

static struct multi_op *op_of(struct call *call)
{
    return lw_container_of(call, struct multi_op, call);
}

static void complete(struct multi_op *op, int err)
{
    call_complete(&op->call, err, 0);
}

/* Before a multi-lock call ends (call.h's `ending`): it leaves the line it
 * waits in, with the names (the holder's next look after its lease) or
 * without. */
static void ending(struct call *call, int err)
{
    struct lw_client *c = call->client;

    if (call->w.link.chan)
        waiters_leave(c, &call->w, err ? WAIT_PASS : -1,
                      lw_clock_now() + call_lease_ms(call) * 1000000u + c->tick_ns);
}

/* ---- Commands ---- */

static size_t group_start(const struct lw_multi *m, size_t g)
{
    return g ? m->ends[g - 1] : 0;
}

static char mode_of(const struct lw_lock *lock)
{
    return lock->way->multi_mode;
}

/* Format group g's script: take (counts NULL) or release counts[i] holds
 * of each name. */
static int format_group(struct multi_op *op, size_t g, const uint32_t *counts)
{
    const struct lw_multi *m = op->m;
    struct lw_client *c = m->client;
    size_t from = group_start(m, g), k = m->ends[g] - from, argc, at = 0;
    const char **argv = calloc(4 * k + 2, sizeof *argv);
    size_t *lens = calloc(4 * k + 2, sizeof *lens);
    char field[FIELD_MAX], lease[24], (*nums)[12] = calloc(k, sizeof *nums), modes[LW_MULTI_MAX];
    size_t flen = client_field(c, op->call.owner, field);
    int rc = LW_ENOMEM;

    if (argv && lens && nums) {
        for (size_t i = 0; i < k; i++) { /* KEYS: the name, then its token key or channel */
            const struct lw_lock *lock = m->locks[from + i];

            argv[at] = lock->name, lens[at++] = lock->len;
            if (counts)
                argv[at] = lock->channel, lens[at++] = lock->channel_len;
            else
                argv[at] = lock_token_key(lock, &lens[at]), at++;
            modes[i] = mode_of(lock);
        }
        if (!counts) {
            snprintf(lease, sizeof lease, "%llu",
                     (unsigned long long)call_lease_ms(&op->call));
            argv[at] = lease, lens[at++] = strlen(lease);
            argv[at] = field, lens[at++] = flen;
        } else {
            argv[at] = field, lens[at++] = flen;
            argv[at] = client_publish_command(c), lens[at] = strlen(argv[at]), at++;
        }
        for (size_t i = 0; i < k; i++) {
            argv[at] = &modes[i], lens[at++] = 1;
            if (counts) {
                argv[at] = nums[i];
                lens[at++] = (size_t)snprintf(nums[i], sizeof nums[i], "%u", counts[from + i]);
            }
        }
        argc = at;
        request_clear(&op->call.req);
        rc = request_evalsha(&op->call.req, counts ? SCRIPT_MULTI_RELEASE : SCRIPT_MULTI_LOCK,
                             (int)(2 * k), (int)argc, argv, lens);
        request_route_slot(&op->call.req, m->locks[from]->slot);
        if (!counts)
            request_settle(&op->call.req); /* Sentinel: not at once after a switch */
        /* A take waits for Redis until the acquire's wait ends; a
         * release, a give-back or a trim as every request. */
        op->call.waits = !counts;
    }
    free(argv);
    free(lens);
    free(nums);
    return rc;
}

static void submit(struct multi_op *op)
{
    call_send(&op->call);
}

/* ---- Taking ---- */

/* Format the next group to take (op->group): call.h's `format`. */
static int format_take(struct call *call)
{
    struct multi_op *op = op_of(call);

    op->phase = PH_TAKE;
    return format_group(op, op->group, NULL);
}

/* Send the next group to take. */
static void take(struct multi_op *op)
{
    call_attempt(&op->call);
}

/* From the first group again (woken, or the holder's lease ran out):
 * call.h's `again`. */
static void take_again(struct call *call)
{
    struct multi_op *op = op_of(call);

    op->group = 0;
    op->taken = 0;
    op->call.from_ns = UINT64_MAX;
    take(op);
}

/* Give back the groups taken (one hold of each name), then end in err,
 * or (err 0) wait for op->refused. */
static void give_back(struct multi_op *op, int err);

static void wait_turn(struct lw_client *c, struct multi_op *op)
{
    const struct lw_lock *lock = op->m->locks[op->refused];
    uint64_t now = lw_clock_now();
    int live = 0;

    if (now >= op->call.w.deadline_ns) {
        complete(op, waiters_timed_out(c));
        return;
    }
    if (c->closing) {
        complete(op, LW_ESHUTDOWN);
        return;
    }
    /* In another name's line: that one was taken since; this one's now. */
    if (op->call.w.link.chan && op->call.w.link.chan != channel_find(c, lock->channel, lock->channel_len))
        waiters_leave(c, &op->call.w, WAIT_PASS, 0);
    if (!op->call.w.link.chan && (live = waiters_join(c, &op->call.w, lock->channel, lock->channel_len))) {
        if (live < 0)
            complete(op, LW_ENOMEM);
        else
            take_again(&op->call); /* an unlock may have gone unheard */
        return;
    }
    if (op->call.w.woken) { /* an unlock came while the attempt was out */
        take_again(&op->call);
        return;
    }
    op->call.w.state = WAIT_WAITING;
    waiters_arm(c, &op->call.w,
                waiters_first(&op->call.w) ? holder_retry_at(now, op->pttl, op->call.w.deadline_ns)
                                           : UINT64_MAX);
}

static void after_give_back(struct multi_op *op)
{
    if (op->end_err) {
        complete(op, op->end_err);
    } else if (op->again) {
        op->again = 0;
        take_again(&op->call);
    } else {
        wait_turn(op->m->client, op);
    }
}

static void give_back(struct multi_op *op, int err)
{
    op->end_err = err;
    if (op->taken == 0) {
        after_give_back(op);
        return;
    }
    for (size_t i = 0; i < group_start(op->m, op->taken); i++)
        op->holds[i] = 1;
    op->phase = PH_GIVE_BACK;
    op->group = 0;
    send_release(op);
}

/* Every name is taken: the holds are the owner's. */
static void all_taken(struct lw_client *c, struct multi_op *op)
{
    struct lw_multi *m = op->m;

    /* The earliest of the groups' leases: names the watchdog renews
     * already are not at stake, but a set is taken whole or not at all. */
    if (call_undo_if_late(&op->call,
                          lease_valid_until(call_lease_ms(&op->call), op->call.from_ns)))
        return;
    for (size_t i = 0; i < m->n; i++) {
        watchdog_acquired(c, m->locks[i], op->call.owner, op->holds[i], op->call.from_ns,
                          op->call.lease_ms == 0, op->call.max_hold_ms);
        if (op->call.lease_ms)
            holds_acquired(c, m->locks[i], op->call.owner, op->holds[i],
                           call_lease_end(&op->call));
        if (op->tokens_out)
            op->tokens_out[m->given[i]] = op->tokens[i];
    }
    if (op->call.until_out) /* the caller's, before done runs */
        *op->call.until_out = lease_valid_until(call_lease_ms(&op->call), op->call.from_ns);
    if (!op->call.lease_ms)
        join_set(c, op);
    complete(op, 0);
}

/* A group's surplus holds, when it may have run twice (a cluster's
 * unsettled retry, or an earlier acquire of the owner's unanswered): more
 * than the owner's watchdog holds and this one.  Noted in op->holds as
 * the count to give back; 1 when there is any. */
static int surplus(struct lw_client *c, struct multi_op *op, size_t from, size_t to,
                   uint32_t *counts)
{
    int any = 0;

    for (size_t i = from; i < to; i++) {
        const struct lw_lock *lock = op->m->locks[i];
        uint32_t expect = watchdog_holds(c, lock, op->call.owner) + 1;

        counts[i] = 0;
        if (!op->call.lease_ms && !holds_has(c, lock, op->call.owner, lw_clock_now()) &&
            op->holds[i] > expect) {
            counts[i] = op->holds[i] - expect;
            op->holds[i] = expect;
            any = 1;
        }
    }
    return any;
}

/* The group was taken: {1, token, holds, ...}. */
static void group_taken(struct lw_client *c, struct multi_op *op, const redisReply *r)
{
    struct lw_multi *m = op->m;
    size_t from = group_start(m, op->group), to = m->ends[op->group];
    uint64_t from_ns = request_lease_from(&op->call.req);
    int resent = op->call.req.unsettled != 0;

    for (size_t i = from; i < to; i++) {
        op->tokens[i] = (uint64_t)reply_integer(r->element[1 + 2 * (i - from)]);
        op->holds[i] = (uint32_t)reply_integer(r->element[2 + 2 * (i - from)]);
        if (!op->call.lease_ms && holds_take_unsure(c, m->locks[i], op->call.owner, lw_clock_now()))
            resent = 1;
    }
    if (from_ns < op->call.from_ns)
        op->call.from_ns = from_ns;
    op->taken = op->group + 1;
    if (resent) {
        uint32_t *counts = calloc(m->n, sizeof *counts);

        if (counts && surplus(c, op, from, to, counts)) {
            op->phase = PH_TRIM;
            if (format_group(op, op->group, counts) == 0) {
                free(counts);
                submit(op);
                return;
            }
        }
        free(counts);
    }
    if (++op->group == m->ngroups)
        all_taken(c, op);
    else
        take(op);
}

/* A group whose reply never came may have run: its names' holds are
 * unsure (holds.c), for the owner's next acquire to count with. */
static void group_unanswered(struct lw_client *c, const struct multi_op *op)
{
    const struct lw_multi *m = op->m;

    if (op->call.lease_ms || !op->call.req.sent_conn)
        return; /* its lease ends it; never written, never run */
    for (size_t i = group_start(m, op->group); i < m->ends[op->group]; i++) {
        uint64_t until = watchdog_renews(c, m->locks[i], op->call.owner)
                             ? UINT64_MAX
                             : lw_clock_now() + 2 * c->lease_ms * 1000000u;

        holds_unsure(c, m->locks[i], op->call.owner, until);
    }
}

static void take_reply(struct lw_client *c, struct multi_op *op, const redisReply *r, int err)
{
    size_t k = op->m->ends[op->group] - group_start(op->m, op->group);
    int64_t status, i;

    if (err) {
        group_unanswered(c, op);
        /* Redis could not be reached, or did not answer, and the wait
         * goes on: what was taken goes back, and it takes again (a group
         * that may have run counts as sent before: group_unanswered()'s
         * mark). */
        op->again = (uint8_t)waiters_retry(c, &op->call.w, &op->call.req, err);
        give_back(op, op->again ? 0 : err);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
        give_back(op, LW_EREPLY);
        return;
    }
    status = reply_integer(r->element[0]);
    i = reply_integer(r->element[1]);
    if (status == 1 && r->elements == 1 + 2 * k) {
        group_taken(c, op, r);
    } else if (status == 0 && r->elements == 3 && i >= 1 && (size_t)i <= k) {
        op->refused = group_start(op->m, op->group) + (size_t)i - 1;
        op->pttl = reply_integer(r->element[2]);
        give_back(op, 0);
    } else if (status == -1) {
        give_back(op, LW_EWRONGKIND);
    } else if (status == -3) {
        give_back(op, lw_clock_now() < op->call.w.deadline_ns ? LW_EDEADLK : LW_ELOCKED);
    } else {
        give_back(op, LW_EREPLY);
    }
}

/* ---- Releasing: a release, a give-back, a trim ---- */

/* Send op->group's release: op->holds[i] holds of each name (a give-back
 * or a trim), or op->count (a release). */
static void send_release(struct multi_op *op)
{
    int rc;

    if (op->phase == PH_RELEASE)
        for (size_t i = group_start(op->m, op->group); i < op->m->ends[op->group]; i++)
            op->holds[i] = op->count;
    if ((rc = format_group(op, op->group, op->holds))) {
        complete(op, rc);
        return;
    }
    submit(op);
}

/* A release's group answered (left: the holds left per name, -1 where
 * the owner held none), or failed (r NULL: it may not have run). */
static void release_reply(struct lw_client *c, struct multi_op *op, const redisReply *r,
                          int err)
{
    struct lw_multi *m = op->m;
    size_t from = group_start(m, op->group), to = m->ends[op->group];
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == to - from;

    for (size_t i = from; i < to; i++) {
        int64_t left = ok ? reply_integer(r->element[i - from]) : UNLOCK_UNKNOWN;

        watchdog_unlock_end(c, m->locks[i], op->call.owner, left);
        if (ok)
            holds_released(c, m->locks[i], op->call.owner, left);
        if (!op->end_err && left == -1)
            op->end_err = LW_ENOTOWNER;
    }
    if (!ok && !op->end_err)
        op->end_err = err ? err : LW_EREPLY;
    if (++op->group < m->ngroups)
        send_release(op);
    else
        complete(op, op->end_err);
}

/* A release's first step: the owner's set, if it holds one, loses a hold
 * (a set lost was given back already: nothing is sent), and the
 * watchdog holds the names' renewals back while their last holds go. */
static void start_release(struct lw_client *c, struct multi_op *op)
{
    struct lw_multi *m = op->m;
    struct multi_set *s = find_set(c, m, op->call.owner);

    if (s && s->lease.lost) {
        if (--s->holds == 0)
            free_set(c, s);
        complete(op, LW_ENOTOWNER);
        return;
    }
    if (s && --s->holds == 0)
        free_set(c, s);
    for (size_t i = 0; i < m->n; i++)
        watchdog_unlock_begin(c, m->locks[i], op->call.owner);
    op->phase = PH_RELEASE;
    op->count = 1;
    op->group = 0;
    send_release(op);
}

/* A multi-lock call's first step (call.h's `begin`). */
static void begin(struct call *call)
{
    if (call->kind == MOP_ACQUIRE)
        take_again(call);
    else
        start_release(call->client, op_of(call));
}

/* A multi-lock call's answer (call.h's `reply`): reply, or none (err). */
static void on_reply(struct call *call, const redisReply *reply, int err)
{
    struct multi_op *op = op_of(call);
    struct lw_client *c = call->client;

    if (!err && reply->type == REDIS_REPLY_ERROR)
        err = reply_error(reply, &op->call.said);
    switch (op->phase) {
    case PH_TAKE: take_reply(c, op, reply, err); return;
    case PH_TRIM: /* what stays is a hold nobody renews: its lease ends it */
        if (++op->group == op->m->ngroups)
            all_taken(c, op);
        else
            take(op);
        return;
    case PH_GIVE_BACK:
        if (err) /* its holds may be left: the next take counts them */
            group_unanswered(c, op);
        if (++op->group < op->taken)
            send_release(op);
        else
            after_give_back(op);
        return;
    default: release_reply(c, op, err ? NULL : reply, err); return;
    }
}

/* The multi-lock calls' row (call.h): a refused acquire waits in the
 * refusing name's line, as that lock's waiters do. */
static void ref_multi(struct call *call)
{
    multi_ref(op_of(call)->m);
}

static void unref_multi(struct call *call)
{
    multi_unref(op_of(call)->m);
}

/* Give back what was taken, then end in err (call.h's `undo`). */
static void undo(struct call *call, int err)
{
    give_back(op_of(call), err);
}

static const struct call_class multi_calls = {
    .ref = ref_multi,
    .unref = unref_multi,
    .begin = begin,
    .format = format_take,
    .reply = on_reply,
    .again = take_again,
    .undo = undo,
    .ending = ending,
};

/* ---- Starting an op (calling thread) ---- */

static struct multi_op *new_op(struct lw_multi *m, int kind, uint64_t owner)
{
    struct multi_op *op;

    if (!m || !(op = calloc(1, sizeof *op + m->n * (sizeof *op->tokens + sizeof *op->holds))))
        return NULL;
    call_init(&op->call, &multi_calls, m->client, kind, WAIT_ALL);
    op->call.heap = 1;
    op->call.task = 1;
    op->call.owner = owner;
    op->m = m;
    op->tokens = (uint64_t *)(op + 1);
    op->holds = (uint32_t *)(op->tokens + m->n);
    return op;
}

static int acquire(struct lw_multi *m, uint64_t owner, uint64_t wait_ms, uint64_t lease_ms,
                   uint64_t *tokens, uint64_t *until_ns, lw_done_fn *done, void *arg,
                   int blocking)
{
    struct multi_op *op;
    int rc;

    if (!m)
        return LW_EINVAL;
    if ((rc = call_check_lease(m->client, lease_ms)))
        return rc;
    if (!(op = new_op(m, MOP_ACQUIRE, owner)))
        return LW_ENOMEM;
    op->call.lease_ms = lease_ms;
    op->tokens_out = tokens;
    op->call.until_out = until_ns;
    op->call.done = done;
    op->call.arg = arg;
    op->call.blocking = (uint8_t)blocking;
    waiters_set_wait(&op->call.w, wait_ms);
    op->call.max_hold_ms = m->client->max_hold_ms;
    return call_run(&op->call, NULL);
}

static int release(struct lw_multi *m, uint64_t owner, lw_done_fn *done, void *arg,
                   int blocking)
{
    struct multi_op *op = new_op(m, MOP_RELEASE, owner);

    if (!m)
        return LW_EINVAL;
    if (!op)
        return LW_ENOMEM;
    op->call.done = done;
    op->call.arg = arg;
    op->call.blocking = (uint8_t)blocking;
    return call_run(&op->call, NULL);
}

/* ---- The API ---- */

int lw_multi_acquire(struct lw_multi *m, uint64_t owner, uint64_t wait_ms, uint64_t lease_ms,
                     uint64_t *tokens)
{
    return acquire(m, owner, wait_ms, lease_ms, tokens, NULL, NULL, NULL, 1);
}

int lw_multi_acquire_until(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                           uint64_t lease_ms, uint64_t *tokens, uint64_t *until_ns)
{
    return acquire(m, owner, wait_ms, lease_ms, tokens, until_ns, NULL, NULL, 1);
}

int lw_multi_lock(struct lw_multi *m)
{
    return lw_multi_acquire(m, lw_owner_self(), LW_WAIT_FOREVER, 0, NULL);
}

int lw_multi_try_lock(struct lw_multi *m, uint64_t wait_ms, uint64_t lease_ms)
{
    return lw_multi_acquire(m, lw_owner_self(), wait_ms, lease_ms, NULL);
}

int lw_multi_unlock_owner(struct lw_multi *m, uint64_t owner)
{
    return release(m, owner, NULL, NULL, 1);
}

int lw_multi_unlock(struct lw_multi *m)
{
    return lw_multi_unlock_owner(m, lw_owner_self());
}

int lw_multi_acquire_async(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                           uint64_t lease_ms, uint64_t *tokens, lw_done_fn *done, void *arg)
{
    return acquire(m, owner, wait_ms, lease_ms, tokens, NULL, done, arg, 0);
}

int lw_multi_acquire_until_async(struct lw_multi *m, uint64_t owner, uint64_t wait_ms,
                                 uint64_t lease_ms, uint64_t *tokens, uint64_t *until_ns,
                                 lw_done_fn *done, void *arg)
{
    return acquire(m, owner, wait_ms, lease_ms, tokens, until_ns, done, arg, 0);
}

int lw_multi_unlock_async(struct lw_multi *m, uint64_t owner, lw_done_fn *done, void *arg)
{
    return release(m, owner, done, arg, 0);
}
