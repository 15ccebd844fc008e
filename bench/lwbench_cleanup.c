/*
 * bench/lwbench_cleanup.c - the keys of earlier runs that ended before they
 * could delete their own (kill -9, a crash, a host that went down): found
 * with SCAN, judged by the run their name names, removed with UNLINK.
 * lwbench --cleanup does only this; a run against a Redis it did not start
 * does it first, for at most CLEANUP_AT_START_S (lwbench_main.c).
 *
 * A run's keys start with "lwbench:<host>:<pid>:<start>" (run_prefix());
 * a fair lock's companions, which Redisson's layout makes only while an
 * acquire waits in its queue (lwbench's never wait), put their own prefix
 * before the name ("redisson_lock_queue:", "redisson_lock_timeout:",
 * "leasewheel_lock_place:").  A run is gone when <host> is this host's
 * name and no process <pid> runs here, or the one that runs started at
 * another time than <start> (the pid was given again).  Nothing else is
 * taken for gone: the pid of a run on another host means nothing here,
 * and a process that runs (or that /proc does not show) may be the run.
 * lwbench 0.4 named its keys "lwbench:<pid>:<8 hex digits>:..." with no
 * host, and counted fencing tokens in "redisson_lock_token:{lwbench:...}":
 * those are counted and left.
 *
 * SCAN <cursor> MATCH *lwbench:* COUNT 1000 on each master, a page at a
 * time; a page's keys of gone runs are UNLINKed before the next page is
 * asked for, one UNLINK per key, pipelined (a cluster's page holds keys
 * of many slots).  Bounded by pages (DBSIZE's worth, with room) and by
 * time; SIGINT and SIGTERM stop it between pages.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <leasewheel/wheel.h>

#include "engine.h"
#include "lwbench.h"
#include "pipeline.h"

#define SCAN_COUNT 1000u
#define KEY_MAX 1024u /* longer keys are not lwbench's */
#define RUNS_KEPT 256u

/* The run a key's name names. */
struct run_id {
    char host[LWB_HOST_MAX + 1];
    int pid;
    unsigned long long start;
};

enum key_kind { KEY_NOT_OURS = 0,
                KEY_GONE,
                KEY_LIVE,
                KEY_OTHER_HOST,
                KEY_OLD_FORM };

/* The first n bytes of s are digits (1 to 20 of them). */
static int all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 20)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int host_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

/* 0.4's "lwbench:<pid>:<8 hex>:<r|p><digits>:" at s (after "lwbench:"). */
static int old_form(const char *s, const char *end)
{
    const char *c = memchr(s, ':', (size_t)(end - s));

    if (!c || !all_digits(s, (size_t)(c - s)) || end - c < 12 || c[9] != ':' ||
        (c[10] != 'r' && c[10] != 'p'))
        return 0;
    for (int i = 1; i <= 8; i++)
        if (!strchr("0123456789abcdef", c[i]) || !c[i])
            return 0;
    return 1;
}

/*
 * What key (len bytes) is: KEY_NOT_OURS, KEY_OLD_FORM, or KEY_LIVE with
 * *id filled in (the caller judges the run).  A companion's prefix and a
 * hash tag's '{' before "lwbench:" are skipped.
 */
static enum key_kind parse_key(const char *key, size_t len, struct run_id *id)
{
    static const char *const companions[] = {"redisson_lock_queue:", "redisson_lock_timeout:",
                                             "leasewheel_lock_place:", "redisson_lock_token:"};
    const char *s = key, *end = key + len, *c1, *c2, *c3;
    unsigned long long pid;

    for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++)
        if ((size_t)(end - s) > strlen(companions[i]) &&
            !memcmp(s, companions[i], strlen(companions[i]))) {
            s += strlen(companions[i]);
            break;
        }
    if (s < end && *s == '{')
        s++;
    if ((size_t)(end - s) < 8 || memcmp(s, "lwbench:", 8))
        return KEY_NOT_OURS;
    s += 8;
    /* <host>:<pid>:<start>: */
    if (!(c1 = memchr(s, ':', (size_t)(end - s))) || !(c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1))) ||
        !(c3 = memchr(c2 + 1, ':', (size_t)(end - c2 - 1))) || c1 == s ||
        (size_t)(c1 - s) > LWB_HOST_MAX || !all_digits(c1 + 1, (size_t)(c2 - c1 - 1)) ||
        !all_digits(c2 + 1, (size_t)(c3 - c2 - 1)))
        return old_form(s, end) ? KEY_OLD_FORM : KEY_NOT_OURS;
    for (const char *h = s; h < c1; h++)
        if (!host_byte(*h))
            return KEY_NOT_OURS;
    pid = strtoull(c1 + 1, NULL, 10);
    if (pid == 0 || pid > 0x7fffffffull) /* no process's */
        return KEY_NOT_OURS;
    memcpy(id->host, s, (size_t)(c1 - s));
    id->host[c1 - s] = 0;
    id->pid = (int)pid;
    id->start = strtoull(c2 + 1, NULL, 10);
    return KEY_LIVE;
}

/* Whether run id is gone (see the head comment): KEY_GONE, KEY_LIVE or
 * KEY_OTHER_HOST. */
static enum key_kind judge(const struct run_id *id, const char *host)
{
    unsigned long long start;

    if (strcmp(id->host, host))
        return KEY_OTHER_HOST;
    if (kill(id->pid, 0) == -1 && errno == ESRCH)
        return KEY_GONE;
    start = proc_start(id->pid);
    return start && start != id->start ? KEY_GONE : KEY_LIVE;
}

/* The runs met so far, each judged once. */
struct runs {
    struct run_id id[RUNS_KEPT];
    enum key_kind kind[RUNS_KEPT];
    unsigned n;
    int overflow; /* more runs than kept: judged key by key */
};

static enum key_kind judge_once(struct runs *r, const struct run_id *id, const char *host,
                                struct cleanup *c)
{
    enum key_kind k;

    for (unsigned i = 0; i < r->n; i++)
        if (r->id[i].pid == id->pid && r->id[i].start == id->start &&
            !strcmp(r->id[i].host, id->host))
            return r->kind[i];
    k = judge(id, host);
    if (r->n == RUNS_KEPT) {
        r->overflow = 1;
        return k;
    }
    r->id[r->n] = *id;
    r->kind[r->n++] = k;
    if (k == KEY_GONE && c->npids < CLEANUP_PIDS)
        c->pids[c->npids++] = id->pid;
    if (k == KEY_LIVE && c->nlive_pids < CLEANUP_PIDS)
        c->live_pids[c->nlive_pids++] = id->pid;
    c->runs_removed += k == KEY_GONE;
    c->runs_live += k == KEY_LIVE;
    c->runs_other += k == KEY_OTHER_HOST;
    return k;
}

/* One page of SCAN's answer. */
struct page {
    char cursor[32];
    char **keys;
    size_t *lens;
    size_t n;
    int bad;
};

static void page_free(struct page *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->keys[i]);
    free(p->keys);
    free(p->lens);
    p->keys = NULL;
    p->lens = NULL;
    p->n = 0;
}

static void on_scan(const redisReply *r, void *arg)
{
    struct page *p = arg;
    const redisReply *ks;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY ||
        r->element[0]->len >= sizeof p->cursor) {
        p->bad = 1;
        return;
    }
    snprintf(p->cursor, sizeof p->cursor, "%s", r->element[0]->str);
    ks = r->element[1];
    if (!(p->keys = calloc(ks->elements + 1, sizeof *p->keys)) ||
        !(p->lens = calloc(ks->elements + 1, sizeof *p->lens))) {
        p->bad = 1;
        return;
    }
    for (size_t i = 0; i < ks->elements; i++) {
        const redisReply *k = ks->element[i];

        if (k->type != REDIS_REPLY_STRING || k->len > KEY_MAX)
            continue;
        if (!(p->keys[p->n] = malloc(k->len + 1))) {
            p->bad = 1;
            return;
        }
        memcpy(p->keys[p->n], k->str, k->len);
        p->keys[p->n][k->len] = 0;
        p->lens[p->n++] = k->len;
    }
}

static void on_dbsize(const redisReply *r, void *arg)
{
    if (r->type == REDIS_REPLY_INTEGER)
        *(long long *)arg = r->integer;
}

/* UNLINK the n keys at idx of page p, pipelined.  0 or -1. */
static int unlink_keys(struct engine *e, const struct page *p, const size_t *idx, size_t n)
{
    struct request *reqs = calloc(n, sizeof *reqs);
    struct pipeline pl = {.e = e, .reqs = reqs, .n = (uint32_t)n, .window = (uint32_t)n};
    int rc = reqs ? 0 : -1;

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = request_command(&reqs[i], 2, (const char *[]){"UNLINK", p->keys[idx[i]]},
                             (size_t[]){6, p->lens[idx[i]]});
    if (rc == 0 && (pipe_run(&pl) < 0 || atomic_load(&pl.failed)))
        rc = -1;
    pipe_free_reqs(reqs, (uint32_t)n);
    return rc;
}

/* Judge page p's keys, UNLINK those of gone runs.  0 or -1. */
static int sort_page(struct engine *e, const struct page *p, struct runs *runs,
                     const char *host, struct cleanup *c)
{
    size_t *gone = calloc(p->n + 1, sizeof *gone), ngone = 0;
    int rc = 0;

    if (!gone)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        struct run_id id;
        enum key_kind k = parse_key(p->keys[i], p->lens[i], &id);

        if (k == KEY_NOT_OURS)
            continue;
        c->scanned++;
        if (k == KEY_LIVE)
            k = judge_once(runs, &id, host, c);
        if (k == KEY_GONE)
            gone[ngone++] = i;
        else if (k == KEY_LIVE)
            c->live++;
        else if (k == KEY_OTHER_HOST)
            c->other_host++;
        else
            c->old_form++;
    }
    if (ngone && unlink_keys(e, p, gone, ngone) == 0)
        c->removed += ngone;
    else if (ngone)
        rc = -1;
    free(gone);
    return rc;
}

/* One master: its pages until the cursor comes back to 0, the page bound
 * or the deadline.  0, 1 stopped short (bound, deadline or signal), -1
 * failed (c->why). */
static int clean_node(const struct target *t, const char *nhost, int nport, uint64_t deadline,
                      struct runs *runs, const char *host, struct cleanup *c)
{
    struct engine *e = NULL;
    struct page p = {.cursor = "0"};
    long long dbsize = -1;
    uint64_t pages = 0, max_pages;
    int rc = -1;

    if (target_node(t, nhost, nport, &e) ||
        node_call(e, on_dbsize, &dbsize, 1, (const char *[]){"DBSIZE"}) || dbsize < 0) {
        snprintf(c->why, sizeof c->why, "cleanup: %s:%d did not answer DBSIZE", nhost, nport);
        goto out;
    }
    /* SCAN visits about COUNT buckets a call; a table has at most twice
     * the keys' buckets, two while it is resized. */
    max_pages = 4 * (uint64_t)dbsize / SCAN_COUNT + 64;
    do {
        if (pages++ == max_pages || lw_clock_now() > deadline || nap(t, 0)) {
            c->interrupted = stop_signal() != 0;
            rc = 1;
            goto out;
        }
        page_free(&p);
        if (node_call(e, on_scan, &p, 6,
                      (const char *[]){"SCAN", p.cursor, "MATCH", "*lwbench:*", "COUNT",
                                       "1000"}) ||
            p.bad) {
            snprintf(c->why, sizeof c->why, "cleanup: SCAN on %s:%d failed", nhost, nport);
            goto out;
        }
        if (sort_page(e, &p, runs, host, c)) {
            snprintf(c->why, sizeof c->why, "cleanup: UNLINK on %s:%d failed", nhost, nport);
            goto out;
        }
    } while (strcmp(p.cursor, "0"));
    rc = 0;
out:
    page_free(&p);
    engine_free(e);
    return rc;
}

int cleanup_stale(const struct target *t, double budget_s, struct cleanup *c)
{
    uint64_t deadline = lw_clock_now() + (uint64_t)(budget_s * 1e9);
    struct runs *runs = calloc(1, sizeof *runs);
    char host[LWB_HOST_MAX + 1];
    int rc = 0;

    memset(c, 0, sizeof *c);
    if (!runs) {
        snprintf(c->why, sizeof c->why, "cleanup: out of memory");
        return -1;
    }
    run_host(host, sizeof host);
    if (!t->cluster) {
        rc = clean_node(t, t->host, t->port, deadline, runs, host, c);
    } else {
        for (unsigned m = 0; rc == 0 && m < t->nmasters; m++)
            rc = clean_node(t, t->masters[m].host, t->masters[m].port, deadline, runs, host, c);
    }
    c->complete = rc == 0;
    c->runs_uncounted = runs->overflow;
    free(runs);
    return rc < 0 ? -1 : 0;
}

/* " (pids 1, 2, 3...)" of n (of runs) into buf. */
static const char *pid_list(char *buf, size_t size, const int *pids, unsigned n, unsigned runs)
{
    size_t k = (size_t)snprintf(buf, size, " (pid%s", n > 1 ? "s" : "");

    for (unsigned i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s %d", i ? "," : "", pids[i]);
    if (k < size)
        snprintf(buf + k, size - k, "%s)", runs > n ? "..." : "");
    return n ? buf : "";
}

/* "run" or "runs", "key" or "keys". */
static const char *runs_word(unsigned n)
{
    return n == 1 ? "run" : "runs";
}

static const char *keys_word(uint64_t n)
{
    return n == 1 ? "key" : "keys";
}

void cleanup_say(FILE *f, const char *what, const struct cleanup *c, int all)
{
    char host[LWB_HOST_MAX + 1], pids[128];

    run_host(host, sizeof host);
    if (c->removed)
        fprintf(f, "%s: removed %llu %s of %u%s earlier %s of this host (%s) whose process is "
                   "gone%s\n",
                what, (unsigned long long)c->removed, keys_word(c->removed), c->runs_removed,
                c->runs_uncounted ? "+" : "", runs_word(c->runs_removed), host,
                pid_list(pids, sizeof pids, c->pids, c->npids, c->runs_removed));
    else if (all)
        fprintf(f, "%s: no key of a run that is gone (%llu lwbench %s looked at)\n", what,
                (unsigned long long)c->scanned, keys_word(c->scanned));
    if (c->live && all)
        fprintf(f, "%s: left %llu %s of %u %s still running here%s\n", what,
                (unsigned long long)c->live, keys_word(c->live), c->runs_live,
                runs_word(c->runs_live),
                pid_list(pids, sizeof pids, c->live_pids, c->nlive_pids, c->runs_live));
    if (c->other_host && all)
        fprintf(f, "%s: left %llu %s of %u %s of other hosts (lwbench --cleanup there removes "
                   "them once they are gone)\n",
                what, (unsigned long long)c->other_host, keys_word(c->other_host),
                c->runs_other, runs_word(c->runs_other));
    if (c->old_form)
        fprintf(f, "%s: left %llu %s of lwbench 0.4 or older (lwbench:<pid>:..., "
                   "redisson_lock_token:{lwbench:...}), which name no host: see lwbench(1)\n",
                what, (unsigned long long)c->old_form, keys_word(c->old_form));
    if (!c->complete && !c->interrupted)
        fprintf(f, "%s: stopped before the end of the keyspace (its time or its page bound): "
                   "lwbench --cleanup again goes on\n",
                what);
}
