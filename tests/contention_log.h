/*
 * tests/contention_log.h - what the contenders write (contender.c says
 * how), read back: the summary each prints at its end, and the log of
 * their critical sections, judged: each holder-round is an interval
 * [enter, min(exit, lost)] on each of its names (a multi-lock's set: one
 * per name) (a holder believes it holds until it leaves or is told it
 * lost the lock).  Two intervals of different holders on one
 * lock that overlap are a violation; on a read-write lock, two that
 * overlap with a writer among them; on a semaphore, more inside at once
 * than its permits.  Shared by test_contention and test_fault_model (one
 * Redis), test_cluster_tools (a Redis Cluster) and test_sentinel_tools (a
 * Sentinel setup).
 */
#ifndef LW_TESTS_CONTENTION_LOG_H
#define LW_TESTS_CONTENTION_LOG_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#define MAX_RECORDS 50000 /* a run writes a few thousand lines */

/* The counts a contender printed at its end; a client's connections'
 * too (an lwloop's are 0). */
struct summary {
    long rounds, acquired, busy, errors, lost, lost_elsewhere, clashes, unlock_errors, other;
    long reconnects, tls_handshakes, tls_resumed;
};

/* Its summary line from the file at path: 1, or 0 when there is none. */
static inline int read_summary_file(const char *path, struct summary *s)
{
    char id[16];
    FILE *f = fopen(path, "r");
    int n = 0;

    if (f) {
        n = fscanf(f,
                   "summary %15s rounds %ld acquired %ld busy %ld errors %ld lost %ld "
                   "lost_elsewhere %ld clashes %ld unlock_errors %ld other %ld last_error %*s "
                   "reconnects %ld tls_handshakes %ld tls_resumed %ld",
                   id, &s->rounds, &s->acquired, &s->busy, &s->errors, &s->lost,
                   &s->lost_elsewhere, &s->clashes, &s->unlock_errors, &s->other,
                   &s->reconnects, &s->tls_handshakes, &s->tls_resumed);
        fclose(f);
    }
    return n == 13;
}

struct record {
    char kind[12], name[24], holder[16];
    long round;
    uint64_t ns;
    long long extra;
};

static inline struct record *read_log(const char *log_path, size_t *count)
{
    struct record *recs = calloc(MAX_RECORDS, sizeof *recs);
    FILE *f = fopen(log_path, "r");
    char line[256];
    size_t n = 0;

    cr_assert(recs && f);
    while (fgets(line, sizeof line, f)) {
        struct record *r = &recs[n];

        cr_assert_lt(n, MAX_RECORDS);
        cr_assert_eq(sscanf(line, "%11s %23s %15s %ld %" SCNu64 " %lld", r->kind, r->name,
                            r->holder, &r->round, &r->ns, &r->extra),
                     6, "bad log line: %s", line);
        n++;
    }
    fclose(f);
    *count = n;
    return recs;
}

/* One holder-round on one name: a multi-lock's round logs each of its
 * names, each an interval of its own (grouped by holder and round only,
 * a set's second name went unchecked, its lines taken for the first's). */
static inline int by_holder_round(const struct record *x, const struct record *y)
{
    int c = strcmp(x->holder, y->holder);

    if (c)
        return c;
    if (x->round != y->round)
        return (x->round > y->round) - (x->round < y->round);
    return strcmp(x->name, y->name);
}

static inline int by_holder_round_time(const void *a, const void *b)
{
    const struct record *x = a, *y = b;
    int c = by_holder_round(x, y);

    return c ? c : (x->ns > y->ns) - (x->ns < y->ns);
}

/* A holder-round: it believed it held name from start to end. */
struct interval {
    const char *name, *holder;
    long round;
    uint64_t start, end;
    uint64_t lost_ns; /* when told, 0 when never */
    long long lost_extra; /* the lost line's extra: a client's LW_LOST_* */
    long long token;
};

/* The interval of the records recs[0..n) of one holder-round on one
 * name; 0 when it never entered there. */
static inline int make_interval(const struct record *recs, size_t n, struct interval *iv)
{
    uint64_t exit_ns = 0;

    memset(iv, 0, sizeof *iv);
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];

        if (!strcmp(r->kind, "enter") && !iv->start) {
            iv->start = r->ns;
            iv->name = r->name;
            iv->token = r->extra;
        } else if (!strcmp(r->kind, "exit") && !exit_ns) {
            exit_ns = r->ns;
        } else if (!strcmp(r->kind, "lost") && !iv->lost_ns) {
            iv->lost_ns = r->ns;
            iv->lost_extra = r->extra;
        }
    }
    if (!iv->start)
        return 0;
    iv->holder = recs[0].holder;
    iv->round = recs[0].round;
    /* Neither left nor told: it believes it holds to this day. */
    iv->end = exit_ns ? exit_ns : UINT64_MAX;
    if (iv->lost_ns && iv->lost_ns < iv->end)
        iv->end = iv->lost_ns;
    return 1;
}

/* Sorts recs; the intervals of the contenders' rounds (not of lost lines
 * outside a round, round -1, nor the injector's). */
static inline struct interval *intervals(struct record *recs, size_t n, size_t *count)
{
    struct interval *ivs = calloc(n + 1, sizeof *ivs);
    size_t k = 0;

    cr_assert_not_null(ivs);
    qsort(recs, n, sizeof *recs, by_holder_round_time);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && !by_holder_round(&recs[i], &recs[j]); j++)
            ;
        if (recs[i].round >= 0 && strcmp(recs[i].holder, "injector") &&
            make_interval(&recs[i], j - i, &ivs[k]))
            k++;
    }
    *count = k;
    return ivs;
}

static inline int by_name_start(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->start > y->start) - (x->start < y->start);
}

/* Two holders inside at once: a entered first. */
struct overlap {
    const struct interval *a, *b;
};

/* Sorts ivs by name and start; every two intervals of different holders
 * on one name that overlap (a entered first) and that pick() takes are
 * counted, the first max of them in out. */
static inline size_t overlaps_where(struct interval *ivs, size_t n,
                                    int (*pick)(const struct interval *a,
                                                const struct interval *b),
                                    struct overlap *out, size_t max)
{
    size_t k = 0;

    qsort(ivs, n, sizeof *ivs, by_name_start);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n && !strcmp(ivs[i].name, ivs[j].name) &&
                               ivs[j].start < ivs[i].end;
             j++) {
            if (!strcmp(ivs[i].holder, ivs[j].holder) || !pick(&ivs[i], &ivs[j]))
                continue;
            if (k < max)
                out[k] = (struct overlap){&ivs[i], &ivs[j]};
            k++;
        }
    return k;
}

static inline int any_two(const struct interval *a, const struct interval *b)
{
    (void)a;
    (void)b;
    return 1;
}

/* Sorts ivs by name and start; up to max overlaps in out, the count of
 * all of them returned. */
static inline size_t find_overlaps(struct interval *ivs, size_t n, struct overlap *out, size_t max)
{
    return overlaps_where(ivs, n, any_two, out, max);
}

/* Enters whose fencing token is not above the one before on the name
 * (ivs sorted by name and start): the counter went back. */
static inline int token_regressions(const struct interval *ivs, size_t n)
{
    int k = 0;

    for (size_t i = 1; i < n; i++)
        k += !strcmp(ivs[i].name, ivs[i - 1].name) && ivs[i].token <= ivs[i - 1].token;
    return k;
}

static inline double ms_between(uint64_t from, uint64_t to)
{
    return ((double)to - (double)from) / 1e6;
}

/* What the old holder a did after b got in: a loss told after another
 * holder entered is a loss reported too late, by that much. */
static inline void show_overlap(const struct overlap *o)
{
    const struct interval *a = o->a, *b = o->b;
    const char *what = a->end == UINT64_MAX              ? "never left nor was told"
                       : a->lost_ns && a->end == a->lost_ns ? "was told lost"
                                                            : "left";

    fprintf(stderr,
            "  overlap on %s: %s#%ld (token %lld) entered %.1f ms after %s#%ld (token %lld), "
            "which %s %.1f ms later\n",
            a->name, b->holder, b->round, b->token, ms_between(a->start, b->start), a->holder,
            a->round, a->token, what, a->end == UINT64_MAX ? 0.0 : ms_between(b->start, a->end));
}

/* ---- What may be inside together ---- */

/* A writer of a read-write lock: its holder id says so, "?w..." (lw0: a
 * loop of lwlock --write; cw0: a client's write lock), a reader "?r...". */
static inline int is_writer(const struct interval *iv)
{
    return iv->holder[1] == 'w';
}

static inline int with_a_writer(const struct interval *a, const struct interval *b)
{
    return is_writer(a) || is_writer(b);
}

static inline int two_readers(const struct interval *a, const struct interval *b)
{
    return !with_a_writer(a, b);
}

/* The overlaps of ivs (sorted here by name and start): those with a
 * writer in *bad (the first max of them in shown), those of two readers
 * in *shared. */
static inline void rw_overlaps(struct interval *ivs, size_t n, struct overlap *shown, size_t max,
                               size_t *bad, size_t *shared)
{
    *bad = overlaps_where(ivs, n, with_a_writer, shown, max);
    *shared = overlaps_where(ivs, n, two_readers, NULL, 0);
}

struct edge {
    uint64_t at;
    int delta; /* +1 enter, -1 leave */
};

/* Leaving first at a tie: a section that ends as another starts is not
 * inside with it. */
static inline int by_time_leave_first(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;

    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->delta - y->delta;
}

/* The most sections of different holder-rounds inside at once (one name);
 * most_inside_at(): and in *at when that was first reached. */
static inline int most_inside_at(const struct interval *ivs, size_t n, uint64_t *at)
{
    struct edge *e = calloc(2 * n + 1, sizeof *e);
    int inside = 0, most = 0;

    cr_assert_not_null(e);
    for (size_t i = 0; i < n; i++) {
        e[2 * i] = (struct edge){ivs[i].start, 1};
        e[2 * i + 1] = (struct edge){ivs[i].end, -1};
    }
    qsort(e, 2 * n, sizeof *e, by_time_leave_first);
    for (size_t i = 0; i < 2 * n; i++)
        if ((inside += e[i].delta) > most) {
            most = inside;
            if (at)
                *at = e[i].at;
        }
    free(e);
    return most;
}

static inline int most_inside(const struct interval *ivs, size_t n)
{
    return most_inside_at(ivs, n, NULL);
}

#endif
