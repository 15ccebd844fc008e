/*
 * core/kind.h - the kinds of lease the watchdog renews, as a table.
 *
 * The watchdog (watchdog.c) keeps one wheel of entries, one renewal FIFO,
 * one in-flight cap, at-risk, hold caps and lost reporting for every lease
 * it renews, and cuts batches (one kind each) per node in a cluster.  What
 * differs between a plain lock, a read hold and a write hold of a
 * read-write lock is only what goes on the wire and what comes back, and
 * that is what a kind says:
 *
 *   renew, renew_node  the scripts renewing a batch of its entries: with
 *                      the names declared in KEYS (one Redis, or one entry
 *                      routed by its slot), or a cluster node's batch with
 *                      the names in ARGV (names from any slot of the node);
 *   drop, drop_node    the scripts removing the holds of lost entries
 *                      (SCRIPT_NONE: none, the lease ends them);
 *   put                an entry's keys and arguments in a batch;
 *   put_call           a renewal call's arguments shared by its entries;
 *   renewed            an entry's answer in a renewal's reply.
 *
 * A batch on the wire is, for either script of a pair: the entries' keys
 * (in KEYS, or first in ARGV for a node script), then the call's own
 * arguments (renewals: the lease in ms; drops: the publish command; then
 * the client id; then a renewal's put_call(), if any), then the entries'
 * arguments, where a hold's field
 * "<client id>:<owner>" goes as the owner alone (the script puts the id
 * in front: ~40 bytes less a renewal).  A kind's scripts read that
 * layout; put() says what an entry adds to each part.
 *
 * A kind is one file (kind_lock.c, kind_read.c, kind_write.c,
 * kind_permit.c, kind_place.c) holding its table, and one line in
 * lw_kinds[] (kinds.c); a fair lock held is a lock's table under its own
 * name (kind_lock.c), and so is a leader's term under a lock delay.
 * A kind's lease is the client's terms[kind]: the watchdog's, but a
 * place's (fair_place_ms); a term's lease_str, what its renewals ask
 * Redis for, is the lease and the lock delay.
 * Its scripts are in
 * scripts.c's table, with the others the engine loads.
 */
#ifndef LW_CORE_KIND_H
#define LW_CORE_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

struct lw_client;
struct entry;

/* The kinds, lw_kinds[]'s order (struct lw_lock's and struct entry's
 * `kind`).  A plain lock is 0: a handle made zeroed is a lock. */
enum lease_kind_id { KIND_LOCK,
                     KIND_READ,
                     KIND_WRITE,
                     KIND_PERMIT,
                     KIND_FAIR,  /* a fair lock held: renewed as a lock */
                     KIND_PLACE, /* a fair lock's waiter's place */
                     KIND_TERM,  /* a term under a lock delay: renewed as
                                    a lock, its PEXPIRE the lease and the
                                    delay, never dropped */
                     KIND_COUNT };

/* A kind without a drop script. */
#define SCRIPT_NONE 0xff

/* One argument of a batch: its bytes by reference (valid until the batch
 * is submitted), or copied into the batch's text at `off` (ref NULL). */
struct batch_arg {
    const char *ref;
    size_t off;
    size_t len;
};

struct arg_list {
    struct batch_arg *v;
    uint32_t n, cap;
};

/* A batch's arguments while it is formatted, grown on demand and kept
 * between batches (client->wd.args).  `failed`: out of memory on the way. */
struct batch_args {
    struct arg_list keys, call, entry;
    char *text;
    size_t text_len, text_cap;
    const char **argv; /* the call's arguments, assembled */
    size_t *lens;
    uint32_t argv_cap;
    int failed;
};

struct lease_kind {
    const char *noun;                           /* in the log: "lock", "read lock", "write lock" */
    const char *label;                          /* short: "lock", "read", "write" */
    uint8_t renew, renew_node, drop, drop_node; /* enum script_id */
    /* e's keys (batch_key()) and arguments (batch_arg()) in a batch; node:
     * a cluster node's batch (its node script's layout). */
    void (*put)(const struct lw_client *c, const struct entry *e, int node,
                struct batch_args *a);
    /* A renewal call's own arguments after the lease and the client id,
     * once a call whatever its entries (NULL: none): what every entry of
     * the call shares (a permit's publish command, a place's wait).
     * Never a time: the scripts read Redis's. */
    void (*put_call)(const struct lw_client *c, struct batch_args *a);
    /* e's answer in a renewal reply: 1 renewed, 0 lost (gone, not ours),
     * -1 (a node batch) its node serves it no more: sent again alone. */
    int (*renewed)(const redisReply *r);
    /* Its expiry is a time in Redis (a permit's score, a place), which
     * our scripts judge by Redis's clock but Redisson's clients by their
     * own: in a mixed fleet valid_until is less the allowance for their
     * skew (permit_clock_skew_ms, 0 unless asked for). */
    uint8_t client_clocks;
    /* Not a hold but a waiter's place (a fair lock's queue): on_lost and
     * on_risk, which speak of locks held, are not called for it (the lease
     * callbacks are), and it counts in no lock total (locks_held,
     * at_risk). */
    uint8_t not_held;
};

extern const struct lease_kind lw_kind_lock, lw_kind_read, lw_kind_write, lw_kind_permit,
    lw_kind_fair, lw_kind_place, lw_kind_term;
extern const struct lease_kind *const lw_kinds[KIND_COUNT];

/* kind.c: building a batch's arguments. */
struct batch_args *batch_args_new(void);
void batch_args_free(struct batch_args *a);
void batch_args_clear(struct batch_args *a);
/* Add a key, a call argument or an entry argument, by reference (bytes
 * that outlive the batch's submission: an entry's name, the client's
 * strings), or copied (key_copy(), arg_copy()).  Once per renewal: the
 * common case (room enough) inline, the growing in kind.c. */
void batch_push_ref(struct batch_args *a, struct arg_list *l, const char *p, size_t len);
void batch_push_copy(struct batch_args *a, struct arg_list *l, const char *p, size_t len);

static inline void batch_ref(struct batch_args *a, struct arg_list *l, const char *p,
                             size_t len)
{
    if (l->n < l->cap) {
        struct batch_arg *arg = &l->v[l->n++];

        arg->ref = p;
        arg->len = len;
    } else {
        batch_push_ref(a, l, p, len);
    }
}

static inline void batch_copy(struct batch_args *a, struct arg_list *l, const char *p,
                              size_t len)
{
    if (l->n < l->cap && a->text_len + len <= a->text_cap) {
        struct batch_arg *arg = &l->v[l->n++];

        memcpy(a->text + a->text_len, p, len);
        arg->ref = NULL;
        arg->off = a->text_len;
        arg->len = len;
        a->text_len += len;
    } else {
        batch_push_copy(a, l, p, len);
    }
}

static inline void batch_key(struct batch_args *a, const char *p, size_t len)
{
    batch_ref(a, &a->keys, p, len);
}

static inline void batch_key_copy(struct batch_args *a, const char *p, size_t len)
{
    batch_copy(a, &a->keys, p, len);
}

static inline void batch_call(struct batch_args *a, const char *p, size_t len)
{
    batch_ref(a, &a->call, p, len);
}

static inline void batch_arg(struct batch_args *a, const char *p, size_t len)
{
    batch_ref(a, &a->entry, p, len);
}

static inline void batch_arg_copy(struct batch_args *a, const char *p, size_t len)
{
    batch_copy(a, &a->entry, p, len);
}
/* A key made of n parts, copied. */
void batch_key_cat(struct batch_args *a, const char *const *parts, const size_t *lens, int n);
/* Keys, call arguments, entry arguments into a->argv/lens; their count,
 * or -1 (out of memory, now or on the way). */
int batch_assemble(struct batch_args *a);

/* The common answers: an integer 1, 0 or -1 (anything else: 0). */
int kind_renewed_integer(const redisReply *r);

#endif
