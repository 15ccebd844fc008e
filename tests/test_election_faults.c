/*
 * tests/test_election_faults.c - leader election through the fault model:
 * candidates and observers of one election, every one through a proxy,
 * while Redis is restarted empty and keeping its keys, connections are
 * killed (commands and pub/sub), Redis is stopped past the lease, and the
 * proxy holds every byte or refuses connections past it.
 *
 * The candidates (contender.c, --kind elect): two library clients
 * (lw_election_campaign(), resign after a term of 1 ms to 2 leases) and a
 * loop of lwlock --elect.  A candidate believes it leads from its
 * campaign's success until it resigns or is told it lost (the log's
 * enter, exit, lost; the term is the token).  The observers: three
 * library clients (lw_election_observe(): "seen" with the term, "sure"
 * with the no-other-leader-until, "vacant", "unknown") and lwlock
 * --observe --json.  The checker:
 *   - no two candidates' believed intervals overlap, and terms rise with
 *     every new leader;
 *   - an observer reports terms in increasing order, each one a candidate
 *     held (believed, or held in Redis with its campaign's answer lost:
 *     the leader's value names the candidate);
 *   - no observer contradiction: inside a no-other-until it reported
 *     (cut short by that leader's resign, which hands over at once), no
 *     other term is reported by it, nor believed by any candidate;
 *   - after each fault ends, a leader is elected within a lease, a tick
 *     and a round trip (and the lock delay), before the next fault; what
 *     it took is printed with the longest vacancy.
 * One pass of the faults by default (20-25 s); LW_ELECTION_SECONDS
 * repeats them for so long (docs/reliability.md's figures: 60).
 */
#include "lock_util.h"
#include "proxy.h"
#include "wait_child.h"

#define LAST_ARGS (char *)NULL
#include "contention_run.h"
#include "proxy_faults.h"

#define NAME "el0" /* prefix "el", one name */
#define NOBSERVERS 4 /* o0..o2, and lwlock --observe ("lw") */
#define MAX_REPORTS 20000
/* A leader within a lease, a tick and a round trip after a fault ends
 * (the bound, with the round trip its vacancies allow too): what
 * a fault held back runs when it ends, and a renewal of a holder that is
 * gone keeps the name a lease from then; the candidate behind looks again
 * a tick later, and is answered a round trip after that (ROUND_TRIP_MS:
 * a few ms measured, 3 times that under load, and more).  Most faults
 * are followed by a leader in 100-340 ms. */
#define ROUND_TRIP_MS 100
#define ELECTED_WITHIN_MS (LEASE_MS + CLIENT_TICK_MS + ROUND_TRIP_MS)
/* The faults this far apart, so that a vacancy inside the bound ends
 * before the next fault begins, and one past it is measured whole. */
#define FAULT_GAP_MS(delay_ms) (ELECTED_WITHIN_MS + (delay_ms) + 200)

static pid_t lw_observer = -1;

static void teardown(void)
{
    if (lw_observer > 0) {
        kill(lw_observer, SIGKILL);
        waitpid(lw_observer, NULL, 0);
    }
    proxy_faults_teardown();
}

static const struct fault election_faults[] = {PROXY_FAULTS};
#define NFAULTS (int)(sizeof election_faults / sizeof election_faults[0])

/* lwlock --observe --json NAME through the proxy, its lines to dir/lw.json. */
static pid_t start_lwlock_observer(void)
{
    char out[300], addr[32];
    pid_t pid = fork();
    int fd;

    cr_assert_geq(pid, 0);
    if (pid)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    snprintf(out, sizeof out, "%s/lw.json", dir);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", contender_port);
    if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0)
        dup2(fd, 1);
    execl(LWLOCK_PATH, LWLOCK_PATH, "-r", addr, "-W", "1200", "--observe", "--json", NAME,
          (char *)NULL);
    _exit(127);
}

/* ---- What the observers said ---- */

struct obs_report {
    const char *observer;
    long seq;
    char kind; /* 's' seen, 'v' vacant, 'u' unknown */
    uint64_t at, sure;
    long long term;
    char by[24]; /* the leader's value: a candidate's id */
};

static int by_observer_seq(const void *a, const void *b)
{
    const struct obs_report *x = a, *y = b;
    int c = strcmp(x->observer, y->observer);

    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The observers' reports, by observer and sequence: a "seen" line and
 * its "sure" line make one report. */
static struct obs_report *reports_of(const struct run *r, size_t *count)
{
    struct obs_report *out = calloc(MAX_REPORTS, sizeof *out);
    size_t n = 0;

    cr_assert_not_null(out);
    for (size_t i = 0; i < r->nrecs; i++) {
        const struct record *x = &r->recs[i];
        char k = !strcmp(x->kind, "seen")      ? 's'
                 : !strcmp(x->kind, "vacant")  ? 'v'
                 : !strcmp(x->kind, "unknown") ? 'u'
                                               : 0;

        if (!k)
            continue;
        cr_assert_lt(n, MAX_REPORTS);
        out[n++] = (struct obs_report){x->holder, x->round, k, x->ns, 0, x->extra};
    }
    qsort(out, n, sizeof *out, by_observer_seq);
    for (size_t i = 0; i < r->nrecs; i++) {
        const struct record *x = &r->recs[i];
        int sure = !strcmp(x->kind, "sure");

        if (!sure && strcmp(x->kind, "by"))
            continue;
        for (size_t j = 0; j < n; j++) {
            if (out[j].kind != 's' || out[j].seq != x->round || strcmp(out[j].observer, x->holder))
                continue;
            if (sure)
                out[j].sure = x->ns;
            else
                snprintf(out[j].by, sizeof out[j].by, "%s", x->name);
        }
    }
    *count = n;
    return out;
}

/* The interval in which a candidate believed it led in term, or NULL. */
static const struct interval *term_held(const struct run *r, long long term)
{
    for (size_t i = 0; i < r->nivs; i++)
        if (r->ivs[i].token == term)
            return &r->ivs[i];
    return NULL;
}

static int held_term(const struct run *r, long long term)
{
    return term_held(r, term) != NULL;
}

struct verdict {
    long reports, terms_back, terms_unheld, self_contradictions, contradictions;
    long held_unbelieved; /* a candidate's in Redis, its campaign's answer lost */
};

/* Whether id is a candidate's (the contenders that campaign). */
static int candidate_id(const char *id)
{
    return !strcmp(id, "c0") || !strcmp(id, "c1") || !strcmp(id, "l2");
}

/*
 * A leader reported with its no-other-until: no other leader before it,
 * unless the leader resigned first (a resign hands over at once: the
 * candidate logged its exit before it resigned).  Whatever this observer
 * reports next inside that, and any candidate believing another term
 * inside it, contradicts it.  A term no candidate believed (its
 * campaign's answer lost or too late) was given back by the library when
 * the answer came, or left to expire: a resign at a moment nobody logged,
 * and nobody led in it; only its order and its holder are checked.
 */
static void check_belief(const struct run *r, const struct obs_report *rep, size_t n, size_t i,
                         struct verdict *v)
{
    const struct obs_report *a = &rep[i];
    const struct interval *t = term_held(r, a->term);
    uint64_t until = a->sure;

    if (!t)
        return;
    if (!(t->lost_ns && t->end == t->lost_ns) && t->end < until)
        until = t->end; /* resigned */
    for (size_t j = i + 1; j < n && !strcmp(rep[j].observer, a->observer); j++)
        if (rep[j].at < until && rep[j].kind == 's' && rep[j].term != a->term) {
            fprintf(stderr, "election: %s said term %lld until +%.0f ms, then %lld at +%.0f\n",
                    a->observer, a->term, ms_between(a->at, until), rep[j].term,
                    ms_between(a->at, rep[j].at));
            v->self_contradictions++;
        }
    for (size_t k = 0; k < r->nivs; k++) {
        const struct interval *iv = &r->ivs[k];

        if (iv->token != a->term && iv->start < until && iv->end > a->at) {
            fprintf(stderr, "election: %s said term %lld alone until +%.0f ms; %s led term %lld "
                            "from +%.0f ms\n",
                    a->observer, a->term, ms_between(a->at, until), iv->holder, iv->token,
                    ms_between(a->at, iv->start));
            v->contradictions++;
        }
    }
}

static struct verdict check_observers(const struct run *r, const struct obs_report *rep, size_t n)
{
    struct verdict v = {0};

    for (size_t i = 0; i < n; i++) {
        const struct obs_report *a = &rep[i];
        int first = i == 0 || strcmp(rep[i - 1].observer, a->observer);

        v.reports++;
        if (a->kind != 's')
            continue;
        for (size_t j = i; !first && j-- > 0 && !strcmp(rep[j].observer, a->observer);)
            if (rep[j].kind == 's') {
                v.terms_back += rep[j].term > a->term;
                break;
            }
        /* A term no candidate believed: one's all the same (its value
         * says whose), when its campaign ran but the answer was lost or
         * came too late (the library gave it back, or let it expire). */
        if (!held_term(r, a->term) && candidate_id(a->by)) {
            v.held_unbelieved++;
        } else if (!held_term(r, a->term)) {
            fprintf(stderr, "election: %s said term %lld of '%s', no candidate's\n", a->observer,
                    a->term, a->by);
            v.terms_unheld++;
        }
        check_belief(r, rep, n, i, &v);
    }
    return v;
}

/* ---- lwlock --observe's lines ---- */

/* Its terms, in the order printed, into terms[], and how many of them
 * were a candidate's (by their value): their count. */
static size_t lwlock_terms(long long *terms, size_t max, size_t *candidates)
{
    char path[300], line[8192], value[24];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/lw.json", dir);
    cr_assert_not_null(f = fopen(path, "r"));
    *candidates = 0;
    while (fgets(line, sizeof line, f) && n < max)
        if (sscanf(line, "{\"term\": %lld, \"leader\": \"%*[^\"]\", \"value\": \"%23[^\"]\"",
                   &terms[n], value) == 2) {
            *candidates += candidate_id(value);
            n++;
        }
    fclose(f);
    return n;
}

/* ---- Vacancies ---- */

/* The longest time nobody believed it led, between the first term and
 * the last; and the longest from a fault's end to a leader (0 when one
 * led through it). */
static void vacancies(const struct run *r, double *longest, double *after_fault,
                      const char **which)
{
    uint64_t led_until = 0;

    *longest = *after_fault = 0;
    qsort(r->ivs, r->nivs, sizeof *r->ivs, by_name_start);
    for (size_t i = 0; i < r->nivs; i++) {
        if (led_until && r->ivs[i].start > led_until &&
            ms_between(led_until, r->ivs[i].start) > *longest)
            *longest = ms_between(led_until, r->ivs[i].start);
        if (r->ivs[i].end > led_until)
            led_until = r->ivs[i].end;
    }
    for (int f = 0; f < r->nfaults; f++) {
        uint64_t end = r->faults[f].end;
        double took = -1;

        for (size_t i = 0; i < r->nivs && took < 0; i++)
            if (r->ivs[i].end > end)
                took = r->ivs[i].start > end ? ms_between(end, r->ivs[i].start) : 0;
        cr_assert_geq(took, 0, "no leader after %s", r->faults[f].name);
        if (took > *after_fault) {
            *after_fault = took;
            *which = r->faults[f].name;
        }
    }
}

/* ---- The lock delay ---- */

/* Whether a fault that empties Redis (its keys, and so the delay, lost
 * with it) ran between from and to. */
static int emptied_between(const struct run *r, uint64_t from, uint64_t to)
{
    for (int f = 0; f < r->nfaults; f++)
        if (!strcmp(r->faults[f].name, "restart-empty") && r->faults[f].start < to &&
            r->faults[f].end > from)
            return 1;
    return 0;
}

/* Under a lock delay: a term whose leader was told it lost by its belief
 * running out (LW_LOST_EXPIRED, a library candidate's; never a resign)
 * is followed by the next no sooner than the delay after that - unless
 * Redis was emptied in between.  The terms checked, those let go for an
 * emptied Redis, and the shortest gap, through the pointers; the terms
 * that came too soon, returned. */
static int delay_kept(const struct run *r, int delay_ms, int *checked, int *emptied,
                      double *shortest)
{
    int early = 0;

    *checked = *emptied = 0;
    *shortest = -1;
    qsort(r->ivs, r->nivs, sizeof *r->ivs, by_name_start);
    for (size_t i = 0; i + 1 < r->nivs; i++) {
        const struct interval *lost = &r->ivs[i], *next = &r->ivs[i + 1];
        double gap;

        if (!lost->lost_ns || lost->lost_extra != LW_LOST_EXPIRED || lost->holder[0] != 'c')
            continue;
        gap = next->start > lost->lost_ns ? ms_between(lost->lost_ns, next->start) : 0;
        if (gap < delay_ms && emptied_between(r, lost->start, next->start)) {
            (*emptied)++;
            continue;
        }
        (*checked)++;
        if (*shortest < 0 || gap < *shortest)
            *shortest = gap;
        if (gap < delay_ms) {
            early++;
            fprintf(stderr, "election: term %lld of %s lost at %.0f ms, term %lld of %s %.0f ms "
                            "later (the delay: %d ms)\n",
                    lost->token, lost->holder, ms_between(r->ivs[0].start, lost->lost_ns),
                    next->token, next->holder, gap, delay_ms);
        }
    }
    return early;
}

/* ---- The test ---- */

/* The run of spec's candidates (their lock delay delay_ms) and observers
 * through every fault, checked; a leader within a lease, the delay and a
 * tick after each fault. */
static void election_run(const struct contender *spec, int n, int delay_ms)
{
    const char *env = getenv("LW_ELECTION_SECONDS"), *slowest = "";
    int seconds = env ? atoi(env) : 0;
    /* One pass is 20-25 s: DOWN_MS or less each, FAULT_GAP_MS apart. */
    int reps = seconds > 20 ? seconds / 20 : 1;
    long long lw[4096];
    size_t nreports, nlw, nlw_known = 0, nlw_candidates;
    struct overlap shown[MAX_SHOWN];
    size_t overlaps;
    int regressions, vacant_told = 0, early = 0, checked = 0, emptied = 0;
    double longest, after_fault, shortest = -1;
    struct obs_report *rep;
    struct verdict v;
    struct run r;

    lw_observer = start_lwlock_observer();
    run(spec, n, election_faults, NFAULTS, reps, FAULT_GAP_MS(delay_ms), &r);
    kill(lw_observer, SIGTERM);
    cr_assert_eq(wait_child(lw_observer, 10000), 0, "lwlock --observe ends with 0");
    lw_observer = -1;
    report(&r, election_faults, NFAULTS);

    overlaps = find_overlaps(r.ivs, r.nivs, shown, MAX_SHOWN);
    for (size_t i = 0; i < overlaps && i < MAX_SHOWN; i++)
        show_overlap(&shown[i]);
    regressions = token_regressions(r.ivs, r.nivs);
    rep = reports_of(&r, &nreports);
    v = check_observers(&r, rep, nreports);
    for (size_t i = 0; i < nreports; i++)
        vacant_told += rep[i].kind == 'v' && !strcmp(rep[i].observer, "o0");
    nlw = lwlock_terms(lw, sizeof lw / sizeof lw[0], &nlw_candidates);
    for (size_t i = 0; i < nlw; i++) {
        cr_assert(i == 0 || lw[i] > lw[i - 1], "lwlock --observe: term %lld after %lld", lw[i],
                  lw[i - 1]);
        nlw_known += held_term(&r, lw[i]);
    }
    if (delay_ms)
        early = delay_kept(&r, delay_ms, &checked, &emptied, &shortest);
    vacancies(&r, &longest, &after_fault, &slowest);
    fprintf(stderr,
            "election: %d s, %d faults: %zu terms, %d vacancies told (o0), %zu overlaps, %d "
            "terms not rising; observers: %ld reports, %ld terms back, %ld terms of no "
            "candidate, %ld reports of terms held unbelieved, %ld contradictions of their own, "
            "%ld by a candidate; lwlock --observe printed %zu terms (%zu believed); the longest "
            "vacancy %.0f ms (lease %d ms); a leader at most %.0f ms after a fault ended (%s)\n",
            seconds ? seconds : 20 * reps, r.nfaults, r.nivs, vacant_told, overlaps, regressions,
            v.reports, v.terms_back, v.terms_unheld, v.held_unbelieved, v.self_contradictions,
            v.contradictions, nlw, nlw_known, longest, LEASE_MS, after_fault, slowest);
    if (delay_ms)
        fprintf(stderr,
                "election: lock delay %d ms: %d terms lost by their lease, the next at least "
                "%.0f ms later; %d too soon; %d let go (Redis emptied)\n",
                delay_ms, checked, shortest, early, emptied);

    cr_assert_eq(overlaps, 0, "%zu overlapping leaders", overlaps);
    cr_assert_eq(regressions, 0, "%d terms not above the one before", regressions);
    cr_assert_eq(v.terms_back, 0);
    cr_assert_eq(v.terms_unheld, 0);
    cr_assert_eq(v.self_contradictions, 0);
    cr_assert_eq(v.contradictions, 0);
    cr_assert_eq(early, 0, "%d terms came within the lock delay of a lost one", early);
    cr_assert_eq(nlw_candidates, nlw, "lwlock --observe printed a term no candidate held");
    cr_assert_geq(nlw, 5, "lwlock --observe printed %zu terms", nlw);
    cr_assert_geq(r.nivs, 10, "%zu terms: a run without work proves nothing", r.nivs);
    cr_assert_leq(after_fault, ELECTED_WITHIN_MS + delay_ms, "no leader %.0f ms after %s ended",
                  after_fault, slowest);
    free(rep);
    free_run(&r);
}

Test(election_faults, candidates_and_observers_through_every_fault, .init = proxy_faults_setup,
     .fini = teardown, .timeout = 600)
{
    static const struct contender spec[] = {
        {"c0", "client", 300, 1000, 100, 0, "elect", 0, "el", 1, 0},
        {"c1", "client", 2 * LEASE_MS, 1000, 300, 0, "elect", 0, "el", 1, 0},
        {"l2", "lwloop", LEASE_MS, 1000, 200, 0, "elect", 0, "el", 1, 0},
        {"o0", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
        {"o1", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
        {"o2", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
    };

    election_run(spec, (int)(sizeof spec / sizeof spec[0]), 0);
}

/* Every candidate's terms under a lock delay of half a lease: the same
 * checks, and the delay's.  The library candidates' terms last up to two
 * leases, so that a fault finds one of them leading more often (a term
 * lost by its lease is what the delay is for; lwlock's losses carry no
 * reason in the log, and are not counted). */
Test(election_faults, a_lock_delay_through_every_fault, .init = proxy_faults_setup,
     .fini = teardown, .timeout = 600)
{
#define DELAYED(id_, mode_, hold_, idle_)                                                      \
    {                                                                                          \
        .id = id_, .mode = mode_, .hold_max_ms = hold_, .wait_ms = 1000, .idle_max_ms = idle_, \
        .kind = "elect", .prefix = "el", .names = 1, .lock_delay_ms = LEASE_MS / 2             \
    }
    static const struct contender spec[] = {
        DELAYED("c0", "client", 2 * LEASE_MS, 100),
        DELAYED("c1", "client", 2 * LEASE_MS, 300),
        DELAYED("l2", "lwloop", LEASE_MS, 200),
        {"o0", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
        {"o1", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
        {"o2", "observe", 1, 0, 0, 0, NULL, 0, "el", 1, 0},
    };
#undef DELAYED

    election_run(spec, (int)(sizeof spec / sizeof spec[0]), LEASE_MS / 2);
}
