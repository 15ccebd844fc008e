/*
 * tests/test_metrics.c - lw_client_format_metrics(): its length contract
 * (as snprintf's), and its text scraped over HTTP on loopback and read by
 * Prometheus's own parser (check_metrics.py, Debian's
 * python3-prometheus-client): from docs/examples/metrics_server.c, and
 * from a client of the test's, whose lw_client_get_stats() taken just
 * before and just after the formatting bound every figure; in a cluster,
 * the per-node figures, asked for from a thread of the test's (a task on
 * the engine thread) and from the engine thread itself; the figures by
 * kind of lease (a lock, a read and a write lock, a permit), which add
 * up to the totals.
 */
#include <stdlib.h>

#include "lock_util.h"
#include "metrics_util.h"
#include "cluster_util.h"
#include "redis_cluster.h"

REDIS_TEST(metrics, length_contract)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "contract");
    char small[64], *full, *buf;
    int n;

    cr_assert_eq(lw_client_format_metrics(NULL, small, sizeof small), LW_EINVAL);
    cr_assert_eq(lw_client_format_metrics(NULL, NULL, 0), LW_EINVAL);
    cr_assert_eq(lw_client_format_metrics(c, NULL, 1), LW_EINVAL);
    cr_assert_eq(lw_is_locked(l), 0); /* connected: the figures stand still */
    full = format_all(c, &n);
    cr_assert_eq(full[n - 1], '\n');
    cr_assert(strstr(full, "\nleasewheel_locks_held 0\n"));
    buf = malloc((size_t)n + 64);
    cr_assert(buf);
    /* Buffers too small, to one byte short, and just large enough: never
     * a byte past len, always NUL-terminated, the length needed returned. */
    size_t lens[] = {1, 2, 7, 63, 64, 500, (size_t)n / 2, (size_t)n - 1, (size_t)n,
                     (size_t)n + 1};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t len = lens[i];

        memset(buf, 'x', (size_t)n + 64);
        cr_assert_eq(lw_client_format_metrics(c, buf, len), n, "len %zu", len);
        cr_assert_eq(buf[len - 1], 0, "len %zu", len);
        cr_assert_eq(strlen(buf), len - 1 < (size_t)n ? len - 1 : (size_t)n);
        for (size_t j = len; j < (size_t)n + 64; j++)
            cr_assert_eq(buf[j], 'x', "len %zu: byte %zu written", len, j);
        /* The locks' families come first, and they do not move here. */
        cr_assert_eq(memcmp(buf, full, len - 1 < 1000 ? len - 1 : 1000), 0);
    }
    memset(small, 'x', sizeof small);
    cr_assert_eq(lw_client_format_metrics(c, small, 0), n);
    cr_assert_eq(small[0], 'x', "len 0: nothing written");
    free(buf);
    free(full);
    lw_lock_free(l);
    lw_client_free(c);
}

/* --- the checker, and one scrape served ---------------------------------- */

struct checker {
    pid_t pid;
    int out; /* its stdout */
};

/* Start check_metrics.py on http://127.0.0.1:port/metrics. */
static void checker_start(struct checker *ck, int port, int cluster)
{
    char url[64];
    char *argv[] = {PYTHON_PATH, CHECK_METRICS_PATH, url, cluster ? "--cluster" : NULL, NULL};

    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    ck->out = spawn_reading(argv, &ck->pid);
}

/* Its output (it must pass), in a buffer to free. */
static char *checker_finish(struct checker *ck)
{
    char *out = read_all(ck->out);

    cr_assert_eq(wait_child(ck->pid, 30000), 0, "check_metrics.py failed (stderr above)");
    cr_assert(strstr(out, "\nok: "), "%s", out);
    return out;
}

/* A sample's value in the checker's output: the line "key value". */
static double sample(const char *out, const char *key)
{
    size_t len = strlen(key);

    for (const char *at = out; (at = strstr(at, key)); at += len)
        if ((at == out || at[-1] == '\n') && at[len] == ' ')
            return strtod(at + len + 1, NULL);
    cr_assert_fail("no sample %s in:\n%s", key, out);
    return -1;
}

/* The example's scrape has the counts its test asserts: renewals, acquires
 * and holds ended. */
static int example_counted(const char *out)
{
    return sample(out, "leasewheel_renewals_total{result=\"confirmed\"}") >= 3 &&
           sample(out, "leasewheel_acquire_wait_seconds_count") >= 5 &&
           sample(out, "leasewheel_hold_time_seconds_count") >= 2;
}

/* The figures the histograms count, from a snapshot. */
static uint64_t lag_count(const struct lw_client_stats *s)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        n += s->renewal_lag[i];
    return n;
}

/* What the scrape said lies between the two snapshots. */
#define cr_assert_between(v, lo, hi) \
    cr_assert((double)(lo) <= (v) && (v) <= (double)(hi), "%s = %g, not in [%g, %g]", #v, (v), (double)(lo), (double)(hi))

/* Each histogram's figures against the snapshots' counters. */
static void check_histograms(const char *out, const struct lw_client_stats *b,
                             const struct lw_client_stats *a)
{
    cr_assert_between(sample(out, "leasewheel_acquire_wait_seconds_count"), b->acquires,
                      a->acquires);
    cr_assert_between(sample(out, "leasewheel_hold_time_seconds_count"), b->holds_ended,
                      a->holds_ended);
    cr_assert_between(sample(out, "leasewheel_renewal_lag_seconds_count"), lag_count(b),
                      lag_count(a));
}

REDIS_TEST(metrics, scrape_matches_stats)
{
    struct lw_client *c = new_client(600, NULL);
    struct lw_lock *held[5], *churn = new_lock(c, "churn");
    struct lw_client_stats b, a, st;
    struct checker ck;
    int port, fd = listen_any(&port);
    char name[32], *out;
    double v;

    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "held:%d", i);
        held[i] = new_lock(c, name);
        cr_assert_eq(lw_lock_acquire(held[i], NULL), 0);
    }
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(lw_trylock(churn, 0, 0, NULL), 0);
        cr_assert_eq(lw_unlock(churn), 0);
    }
    /* Renewals every 200 ms: each lock renewed at least once. */
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.renewals_confirmed >= 5), 5000),
              "%llu renewals", (unsigned long long)st.renewals_confirmed);
    checker_start(&ck, port, 0);
    serve_one(fd, c, &b, &a);
    out = checker_finish(&ck);
    close(fd);

    cr_assert_eq(sample(out, "leasewheel_locks_held"), 5);
    cr_assert_eq(b.locks_held, 5);
    v = sample(out, "leasewheel_renewals_total{result=\"confirmed\"}");
    cr_assert_between(v, b.renewals_confirmed, a.renewals_confirmed);
    cr_assert_geq(v, 5, "every lock renewed at least once");
    v = sample(out, "leasewheel_renewals_total{result=\"sent\"}");
    cr_assert_between(v, b.renewals_sent, a.renewals_sent);
    v = sample(out, "leasewheel_renew_calls_total");
    cr_assert_between(v, b.renew_batches, a.renew_batches);
    check_histograms(out, &b, &a);
    cr_assert_eq(sample(out, "leasewheel_acquire_wait_seconds_count"), 15);
    cr_assert_eq(sample(out, "leasewheel_hold_time_seconds_count"), 10);
    cr_assert_eq(sample(out, "leasewheel_locks_lost_total{reason=\"expired\"}"), 0);
    cr_assert_eq(sample(out, "leasewheel_locks_at_risk"), 0);
    cr_assert_gt(sample(out, "leasewheel_commands_sent_total"), 15);
    cr_assert_gt(sample(out, "leasewheel_acquire_wait_seconds_sum"), 0);
    cr_assert_gt(sample(out, "leasewheel_hold_time_seconds_sum"), 0);
    cr_assert_null(strstr(out, "leasewheel_node_"), "per node in a cluster only");
    free(out);
    lw_lock_free(churn);
    for (int i = 0; i < 5; i++)
        lw_lock_free(held[i]);
    lw_client_free(c);
}

/* --- by kind of lease ----------------------------------------------------- */

static const char *const kind_label[] = {"lock", "read", "write", "permit"};

/* A per-kind sample's value in out (the checker's lines or the text:
 * labels in the same order), e.g. ("lease_renewals_total", "read",
 * ",result=\"confirmed\""). */
static double kind_sample(const char *out, const char *family, const char *kind,
                          const char *more)
{
    char key[160];

    snprintf(key, sizeof key, "leasewheel_%s{kind=\"%s\"%s}", family, kind, more);
    return sample(out, key);
}

/* Every kind's renewals confirmed at least once, by the text. */
static int every_kind_renewed(struct lw_client *c)
{
    int len, all = 1;
    char *text = format_all(c, &len);

    for (int k = 0; k < 4; k++)
        all = all && kind_sample(text, "lease_renewals_total", kind_label[k],
                                 ",result=\"confirmed\"") >= 1;
    free(text);
    return all;
}

/* A lock, a read lock, a write lock and a permit held: each kind's
 * series says its own, and the kinds add up to the totals (the lock
 * families, unchanged) as the snapshots around the scrape bound them;
 * then the permit lost, counted under its kind and in the total. */
REDIS_TEST(metrics, kinds_are_counted_apart)
{
    static const char *const names[] = {"kinds:lock", "kinds:rw-r", "kinds:rw-w"};
    int (*make[3])(struct lw_client *, const void *, size_t, struct lw_lock **) = {
        lw_lock_new, lw_read_lock_new, lw_write_lock_new};
    struct lw_client *c = new_client(600, NULL);
    struct lw_lock *l[3];
    struct lw_semaphore *sem;
    struct lw_permit permit;
    struct lw_client_stats b, a, st;
    struct checker ck;
    int port, fd = listen_any(&port), len;
    double confirmed = 0, sent = 0;
    char *out, *text;

    for (int k = 0; k < 3; k++) {
        cr_assert_eq(make[k](c, names[k], strlen(names[k]), &l[k]), 0);
        cr_assert_eq(lw_lock_acquire(l[k], NULL), 0);
    }
    cr_assert_eq(lw_semaphore_new(c, "kinds:sem", 9, &sem), 0);
    cr_assert_eq(lw_semaphore_try_set(sem, 3), 1);
    cr_assert_eq(lw_permit_acquire(sem, 1, 0, 0, &permit), 0);
    cr_assert(wait_until(every_kind_renewed(c), 5000), "a kind never renewed");

    checker_start(&ck, port, 0);
    serve_one(fd, c, &b, &a);
    out = checker_finish(&ck);
    close(fd);
    cr_assert_eq(sample(out, "leasewheel_locks_held"), 4, "the total, as before");
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(kind_sample(out, "leases_held", kind_label[k], ""), 1, "%s", kind_label[k]);
        cr_assert_eq(kind_sample(out, "leases_at_risk", kind_label[k], ""), 0);
        cr_assert_eq(kind_sample(out, "leases_lost_total", kind_label[k],
                                 ",reason=\"not_owner\""), 0);
        confirmed += kind_sample(out, "lease_renewals_total", kind_label[k],
                                 ",result=\"confirmed\"");
        sent += kind_sample(out, "lease_renewals_total", kind_label[k], ",result=\"sent\"");
    }
    cr_assert_between(confirmed, b.renewals_confirmed, a.renewals_confirmed);
    cr_assert_between(sent, b.renewals_sent, a.renewals_sent);
    free(out);

    /* The permit's id removed behind its back: lost at its next renewal. */
    redis_int("DEL %s", "{kinds:sem}:timeout");
    cr_assert(wait_until((lw_client_get_stats(c, &st), st.lost_not_owner == 1), 3000),
              "the permit never lost");
    text = format_all(c, &len);
    cr_assert_eq(kind_sample(text, "leases_lost_total", "permit", ",reason=\"not_owner\""), 1);
    cr_assert_eq(kind_sample(text, "leases_lost_total", "lock", ",reason=\"not_owner\""), 0);
    cr_assert_eq(kind_sample(text, "leases_held", "permit", ""), 0);
    cr_assert_eq(kind_sample(text, "leases_held", "read", ""), 1);
    cr_assert_eq(sample(text, "leasewheel_locks_lost_total{reason=\"not_owner\"}"), 1);
    cr_assert_eq(sample(text, "leasewheel_locks_held"), 3);
    free(text);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(lw_unlock(l[k]), 0);
        lw_lock_free(l[k]);
    }
    lw_semaphore_free(sem);
    lw_client_free(c);
}

/* --- the example --------------------------------------------------------- */

REDIS_TEST(metrics, example_scraped)
{
    char redis_port[16];
    char *argv[] = {METRICS_SERVER_PATH, redis_port, "0", "60", NULL};
    struct checker ck;
    pid_t pid;
    int out_fd, port;
    char *out;

    snprintf(redis_port, sizeof redis_port, "%d", srv.port);
    out_fd = spawn_reading(argv, &pid);
    port = example_port(out_fd);
    /* A renewal a second: scraped until the counts asserted below are in
     * (at most 40 scrapes, 250 ms apart). */
    for (int i = 0;; i++) {
        checker_start(&ck, port, 0);
        out = checker_finish(&ck);
        if (example_counted(out) || i == 40)
            break;
        free(out);
        sleep_ms(250);
    }

    /* Three held, and the fourth, taken and given back every 100 ms, may
     * be held at that moment. */
    cr_assert_geq(sample(out, "leasewheel_locks_held"), 3);
    cr_assert_leq(sample(out, "leasewheel_locks_held"), 4);
    cr_assert_geq(sample(out, "leasewheel_renewals_total{result=\"confirmed\"}"), 3);
    cr_assert_geq(sample(out, "leasewheel_acquire_wait_seconds_count"), 5);
    cr_assert_geq(sample(out, "leasewheel_hold_time_seconds_count"), 2);
    cr_assert_eq(sample(out, "leasewheel_locks_lost_total{reason=\"errors\"}"), 0);
    free(out);
    kill(pid, SIGTERM);
    cr_assert_eq(wait_child(pid, 10000), 0, "metrics_server did not stop cleanly");
    close(out_fd);
}

/* --- a cluster ---------------------------------------------------------- */

static struct redis_cluster cl;

static void cluster_setup(void)
{
    cr_assert_eq(redis_cluster_start(&cl, 3, 0), 0, "the cluster did not start");
}

static void cluster_teardown(void)
{
    redis_cluster_stop(&cl);
}

/* On the engine thread (an async call's callback): the text, read there
 * directly, not through a task it would wait for. */
struct on_engine {
    struct lw_client *client;
    struct tally done;
    _Atomic int len;
    _Atomic int per_node;
    char *text; /* handed to the test thread with done */
};

static void format_on_engine(int err, int64_t value, void *arg)
{
    struct on_engine *oe = arg;
    char *buf = malloc(1 << 16);

    (void)err;
    (void)value;
    if (buf) {
        atomic_store(&oe->len, lw_client_format_metrics(oe->client, buf, 1 << 16));
        atomic_store(&oe->per_node, strstr(buf, "leasewheel_node_commands_sent_total{node=\"127.0.0.1:") != NULL);
        oe->text = buf;
    }
    tally_add(&oe->done, 0);
}

/* The sum of a per-node family's samples, how many nodes it has, and the
 * least of them (least may be NULL). */
static double node_sum_least(const char *out, const char *name, int *nodes, double *least)
{
    char key[96];
    double sum = 0;

    *nodes = 0;
    snprintf(key, sizeof key, "\n%s{node=\"127.0.0.1:", name);
    for (const char *at = out; (at = strstr(at, key)); at++) {
        double v = strtod(strchr(at, '}') + 2, NULL);

        sum += v;
        if (least && (*nodes == 0 || v < *least))
            *least = v;
        ++*nodes;
    }
    return sum;
}

static double node_sum(const char *out, const char *name, int *nodes)
{
    return node_sum_least(out, name, nodes, NULL);
}

Test(metrics, cluster_per_node, .init = cluster_setup, .fini = cluster_teardown,
     .timeout = 120)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *held[12], *moved;
    struct lw_client_stats b, a;
    struct on_engine oe = {0};
    struct checker ck;
    int port, fd = listen_any(&port), nodes, slot, from, to;
    char name[32], *out;
    redisReply *r;

    cluster_client_config(&cfg, &cl, 0);
    cfg.watchdog_timeout_ms = 600;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    for (int i = 0; i < 12; i++) { /* on every master, surely */
        snprintf(name, sizeof name, "spread:%d", i);
        held[i] = new_lock(c, name);
        cr_assert_eq(lw_lock_acquire(held[i], NULL), 0);
    }
    /* A redirect: the slot of "moved" goes to another master behind the
     * client's back; its next acquire is answered MOVED by the old one. */
    cr_assert(r = redis_cluster_command(&cl, 0, "CLUSTER KEYSLOT moved"));
    slot = (int)r->integer;
    freeReplyObject(r);
    cr_assert_geq(from = redis_cluster_slot_master(&cl, slot, -1), 0);
    to = (from + 1) % 3;
    moved = new_lock(c, "moved");
    cr_assert_eq(lw_trylock(moved, 0, 0, NULL), 0);
    cr_assert_eq(lw_unlock(moved), 0);
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 10, NULL, NULL), 0);
    cr_assert_eq(lw_trylock(moved, 0, 0, NULL), 0);
    cr_assert_eq(lw_unlock(moved), 0);
    sleep_ms(300);

    /* From this thread: the nodes' figures through a task. */
    checker_start(&ck, port, 1);
    serve_one(fd, c, &b, &a);
    out = checker_finish(&ck);
    close(fd);
    cr_assert_eq(sample(out, "leasewheel_locks_held"), 12);
    cr_assert_eq(sample(out, "leasewheel_cluster_masters"), 3);
    check_histograms(out, &b, &a);
    cr_assert_leq(node_sum(out, "leasewheel_node_commands_sent_total", &nodes),
                  sample(out, "leasewheel_commands_sent_total"));
    cr_assert_eq(nodes, 3, "%s", out);
    cr_assert_leq(node_sum(out, "leasewheel_node_replies_total", &nodes),
                  sample(out, "leasewheel_replies_total"));
    cr_assert_eq(nodes, 3);
    cr_assert_geq(sample(out, "leasewheel_redirects_total"), 1);
    cr_assert_eq(node_sum(out, "leasewheel_node_redirects_total", &nodes),
                 sample(out, "leasewheel_redirects_total"));
    snprintf(name, sizeof name, "127.0.0.1:%d", cl.node[from].port);
    {
        char key[96];

        snprintf(key, sizeof key, "leasewheel_node_redirects_total{node=\"%s\"}", name);
        cr_assert_geq(sample(out, key), 1, "the MOVED is counted on the node that said it");
    }
    /* The watchdog's renewal calls, by the node they went to: each master
     * renews some of the 12 locks, and every call is counted on one (the
     * nodes are read after the snapshot before, the total after them). */
    {
        double least = 0, calls = node_sum_least(out, "leasewheel_node_renew_calls_total",
                                                 &nodes, &least);

        cr_assert_eq(nodes, 3, "%s", out);
        cr_assert_gt(least, 0, "a master with locks had no renewal calls");
        cr_assert_geq(calls, (double)b.renew_batches);
        cr_assert_leq(calls, sample(out, "leasewheel_renew_calls_total"));
    }
    free(out);

    /* From the engine thread: read there, no task to wait for. */
    tally_init(&oe.done);
    oe.client = c;
    cr_assert_eq(lw_is_locked_async(held[0], format_on_engine, &oe), 0);
    cr_assert(tally_wait(&oe.done, 1, 10000), "the callback never ran");
    cr_assert_gt(oe.len, 0);
    cr_assert_lt(oe.len, 1 << 16);
    cr_assert(oe.per_node);
    /* There the nodes and the total are read at one moment: equal. */
    cr_assert_eq(node_sum(oe.text, "leasewheel_node_renew_calls_total", &nodes),
                 sample(oe.text, "leasewheel_renew_calls_total"), "%s", oe.text);
    cr_assert_eq(nodes, 3);
    free(oe.text);
    tally_destroy(&oe.done);

    lw_lock_free(moved);
    for (int i = 0; i < 12; i++)
        lw_lock_free(held[i]);
    lw_client_free(c);
}
