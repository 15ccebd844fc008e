/*
 * tests/test_time_faults.c - a client's wall clock as a fault: one whose
 * clock is stepped back or ahead, or skewed from the start, must never
 * put two holders in one lock, a writer beside anyone, or more holders
 * than permits in a semaphore.
 *
 * A lease timed by Redis (PEXPIRE: locks, read-write locks, fair locks,
 * multi-locks) does not care what time a client thinks it is.  One whose
 * expiry a client writes with its own wall clock does: a permit's, in a
 * zset scored by epoch ms, that every acquire, renewal and release
 * reclaims up to the caller's "now".  A holder whose clock went back
 * writes expiries already past (the renewal's ZADD GT keeps the old one,
 * which runs out); one whose clock went ahead reclaims at its renewal
 * every permit but those it renews, its own included; an asker whose
 * clock went ahead reclaims permits that are still held, one whose clock
 * went back takes a permit that has run out as it is written; a clock
 * behind from the start writes every permit expired.  A fair lock's queue is timed by the clients too (Redisson's
 * layout), but its holder by Redis: its order may suffer, not exclusion.
 *
 * Fifteen contenders (contender.c) run at once, two or three per kind on
 * names of their own, each kind with at least one under a moved clock
 * (libfaketime preloaded, its timestamp file written by the test; see
 * contention_run.h's preload_clock()):
 *   lk   a plain lock: ll0 (lwlock, moved), cl1;
 *   rw   a read-write lock: cr0 reading (moved), lw1 writing (lwlock,
 *        moved), cw2 writing, lr3 reading (lwlock);
 *   fq   a fair lock: cf0 (moved), lf1 (lwlock);
 *   sa   a semaphore of 1 permit: la0 (lwlock, moved), ca1;
 *   sb   a semaphore of 2: cb0 (moved), cb1, lb2 (lwlock);
 *   ms   multi-locks over two of three names: cm0 (moved), lm1 (lwlock
 *        --multi).
 * Each test is one clock case, STEP_S seconds (over ten leases) each way:
 *   a holder's clock stepped back, or ahead, just after it entered (the
 *        moved ones hold a lease and more, the others come and go), and
 *        set right once it left;
 *   an asker's, stepped while it is outside and the others fill the lock
 *        (they hold long, it asks all the time in short sections), set
 *        right after a lease and more of asking;
 *   skewed behind, or ahead, from the start (the file written before the
 *        contenders start; they hold and ask alike).
 * Every step and setting right is a line of the log ("step", "restore":
 * the contender, the offset), the case a fault from its start to its end.
 * Then, for each kind: no overlap of two holders of a lock (every name of
 * a multi-lock), no writer beside anyone, never more inside than permits;
 * no holder told it lost its lease (no other fault was injected); enough
 * sections for the run to prove anything, and every moved contender's
 * clock moved while it held or asked.  One line per kind and case says
 * how many sections ran, how many overlaps, and how many were inside at
 * most.  A first test checks the premise: a moved clock moves in a
 * running process, its monotonic clocks do not.
 */
#include "lock_util.h"

#include <errno.h>
#include <math.h>

#define LAST_ARGS (char *)NULL
#include "contention_run.h"

#define STEP_S 15           /* over ten leases: a step no renewal hides */
#define CASE_MS 6500        /* the steps' bound: a holder's takes a section */
#define ASK_MS (LEASE_MS + 400) /* an asker's clock stays moved so long */
#define SKEW_MS 5000        /* a skewed run's span after the warm-up */
#define GAP_MS 300          /* after the case, before the contenders stop */
#define MIN_SECTIONS 5      /* a kind with fewer proves nothing */
#define READER_IDLE_MS 900  /* more idle for readers: writers get in too */
#define WAIT_MS (2 * LEASE_MS + 500) /* an acquire waits out a long section */

/* ---- The contenders ---- */

enum group { G_LOCK, G_RW, G_FAIR, G_SEM1, G_SEM2, G_MULTI, NGROUPS };

static const struct {
    const char *prefix;
    int permits; /* a semaphore's; 0: exclusive (a writer's, for rw) */
} groups[NGROUPS] = {
    {"lk", 0}, {"rw", 0}, {"fq", 0}, {"sa", 1}, {"sb", 2}, {"ms", 0},
};

struct member {
    const char *id, *mode, *kind;
    enum group group;
    int names; /* its names: prefix0 .. */
    int moved; /* under a clock of its own */
};

static const struct member members[] = {
    {"ll0", "lwloop", NULL, G_LOCK, 1, 1},     {"cl1", "client", NULL, G_LOCK, 1, 0},
    {"cr0", "client", "read", G_RW, 1, 1},     {"lw1", "lwloop", "write", G_RW, 1, 1},
    {"cw2", "client", "write", G_RW, 1, 0},    {"lr3", "lwloop", "read", G_RW, 1, 0},
    {"cf0", "client", "fair", G_FAIR, 1, 1},   {"lf1", "lwloop", "fair", G_FAIR, 1, 0},
    {"la0", "lwloop", NULL, G_SEM1, 1, 1},     {"ca1", "client", NULL, G_SEM1, 1, 0},
    {"cb0", "client", NULL, G_SEM2, 1, 1},     {"cb1", "client", NULL, G_SEM2, 1, 0},
    {"lb2", "lwloop", NULL, G_SEM2, 1, 0},     {"cm0", "client", "multi", G_MULTI, 3, 1},
    {"lm1", "lwloop", "multi", G_MULTI, 3, 0},
};
#define NMEMBERS (int)(sizeof members / sizeof members[0])

/* ---- The clock cases ---- */

enum role { HOLDER, ASKER, SKEW };

struct clock_case {
    const char *name;
    enum role role;
    int offset_s; /* the moved clocks' offset from the true one */
};

/* How a contender holds and asks: sections of hold_min..hold_max ms, idle
 * 0..idle_max after each. */
struct pace {
    int hold_min, hold_max, idle_max;
};

/* A holder's clock moves in its section: the moved ones hold long, their
 * renewals (a third of a lease apart) on the moved clock while the
 * others ask, who come and go.  A permit's holder holds longer than the
 * expiry its last renewal on the true clock wrote, so that an asker
 * finds it run out while it holds; a lock's a lease and more, which
 * leaves the others more room.  An asker's moves while the others hold:
 * they hold long, it asks all the time.  Skewed from the start, every
 * contender holds and asks alike. */
static struct pace pace_of(enum role role, int moved, int permits)
{
    switch (role) {
    case HOLDER: return !moved   ? (struct pace){1, 100, 50}
                        : permits ? (struct pace){3 * LEASE_MS / 2, 2 * LEASE_MS, 600}
                                  : (struct pace){LEASE_MS, 3 * LEASE_MS / 2, 600};
    case ASKER: return moved ? (struct pace){1, 100, 100} : (struct pace){600, 1500, 100};
    default: return (struct pace){1, LEASE_MS, 200};
    }
}

static const struct clock_case *current;

/* The contenders of the current case, and their clocks' file names. */
static struct contender spec[NMEMBERS];
static char clock_names[NMEMBERS][24];

static void build_spec(const struct clock_case *cc)
{
    for (int i = 0; i < NMEMBERS; i++) {
        const struct member *m = &members[i];
        struct pace p = pace_of(cc->role, m->moved, groups[m->group].permits);

        /* Readers share, and a writer waits for none of them to be inside:
         * they leave it room. */
        if (m->kind && !strcmp(m->kind, "read"))
            p.idle_max += READER_IDLE_MS;
        snprintf(clock_names[i], sizeof clock_names[i], "%s.clock", m->id);
        spec[i] = (struct contender){
            .id = m->id,
            .mode = m->mode,
            .hold_min_ms = p.hold_min,
            .hold_max_ms = p.hold_max,
            .wait_ms = WAIT_MS,
            .idle_max_ms = p.idle_max,
            .kind = m->kind,
            .permits = groups[m->group].permits,
            .prefix = groups[m->group].prefix,
            .names = m->names,
            .clock = m->moved ? clock_names[i] : NULL,
        };
    }
}

/* ---- Moving a clock ---- */

/* The clock file `name` (in dir) says offset_s: written aside and renamed
 * over it, so that libfaketime, which reads it at every reading of the
 * wall clock, never reads half of it. */
static void set_clock_file(const char *name, int offset_s)
{
    char path[320], tmp[330], text[16];
    int n = snprintf(text, sizeof text, "%+ds\n", offset_s), fd;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, (size_t)n), n);
    close(fd);
    cr_assert_eq(rename(tmp, path), 0, "%s: %s", path, strerror(errno));
}

static void set_clock(int i, int offset_s)
{
    set_clock_file(clock_names[i], offset_s);
}

/* A line of the injector's: kind "step" or "restore", the contender, the
 * case's sequence number, the offset. */
static void log_step(const char *kind, int i, int offset_s)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s injector 0 %" PRIu64 " %d\n", kind,
                     members[i].id, lw_clock_now(), offset_s);

    cr_assert_eq(write(log_fd, line, (size_t)n), n);
}

static void move_clock(int i, int offset_s)
{
    set_clock(i, offset_s);
    log_step(offset_s ? "step" : "restore", i, offset_s);
}

/* ---- Who is inside, from the log as it grows ---- */

struct tail {
    int fd;
    char buf[16384];
    size_t len;
    int inside[NMEMBERS]; /* between its enter and its exit (or loss) */
    long enters[NMEMBERS];
};

static int member_of(const char *id)
{
    for (int i = 0; i < NMEMBERS; i++)
        if (!strcmp(members[i].id, id))
            return i;
    return -1;
}

/* Reads what the contenders appended since the last call. */
static void tail_read(struct tail *t)
{
    ssize_t n;

    while ((n = read(t->fd, t->buf + t->len, sizeof t->buf - 1 - t->len)) > 0) {
        char *line = t->buf, *nl;

        t->len += (size_t)n;
        t->buf[t->len] = 0;
        while ((nl = strchr(line, '\n'))) {
            char kind[12], name[24], holder[16];
            long round;
            int i;

            *nl = 0;
            if (sscanf(line, "%11s %23s %15s %ld", kind, name, holder, &round) == 4 &&
                round >= 0 && (i = member_of(holder)) >= 0) {
                if (!strcmp(kind, "enter")) {
                    t->inside[i] = 1;
                    t->enters[i]++;
                } else if (!strcmp(kind, "exit") || !strcmp(kind, "lost")) {
                    t->inside[i] = 0;
                }
            }
            line = nl + 1;
        }
        t->len -= (size_t)(line - t->buf);
        memmove(t->buf, line, t->len);
    }
}

/* Whether the others of i's kind fill it: as many inside as it has
 * permits, or one of an exclusive kind (a read-write lock: anyone). */
static int others_fill(const struct tail *t, int i)
{
    int k = 0, cap = groups[members[i].group].permits;

    for (int j = 0; j < NMEMBERS; j++)
        k += j != i && members[j].group == members[i].group && t->inside[j];
    return k >= (cap ? cap : 1);
}

/* ---- The faults ---- */

#define HOLDER_CYCLES 1 /* one long section each */
#define ASKER_CYCLES 3

/*
 * Every moved contender at once, each on its own: a holder's clock moves
 * at its next enter and is set right once it left; an asker's moves while
 * it is outside and the others fill the lock, and is set right ASK_MS
 * later, once it is outside again.  Bounded by CASE_MS: whatever is
 * still moved then is set right.  Steps per contender counted in steps[].
 */
static int steps[NMEMBERS];

static int fault_steps(void)
{
    const int cycles = current->role == HOLDER ? HOLDER_CYCLES : ASKER_CYCLES;
    struct tail t = {.fd = open(log_path, O_RDONLY | O_CLOEXEC)};
    long seen[NMEMBERS];
    uint64_t moved_at[NMEMBERS] = {0}, until = now_ms() + CASE_MS;
    int moved[NMEMBERS] = {0}, done = 0;

    cr_assert_geq(t.fd, 0);
    tail_read(&t);
    for (int i = 0; i < NMEMBERS; i++)
        seen[i] = t.enters[i];
    while (done < NMEMBERS && now_ms() < until) {
        tail_read(&t);
        done = 0;
        for (int i = 0; i < NMEMBERS; i++) {
            if (!members[i].moved || steps[i] >= cycles) {
                done += !moved[i];
                continue;
            }
            if (!moved[i] && current->role == HOLDER && t.enters[i] > seen[i] && t.inside[i]) {
                move_clock(i, current->offset_s);
                moved[i] = 1;
            } else if (!moved[i] && current->role == ASKER && !t.inside[i] &&
                       others_fill(&t, i)) {
                move_clock(i, current->offset_s);
                moved[i] = 1;
                moved_at[i] = now_ms();
            } else if (moved[i] && !t.inside[i] &&
                       (current->role == HOLDER || now_ms() >= moved_at[i] + ASK_MS)) {
                move_clock(i, 0);
                moved[i] = 0;
                steps[i]++;
                seen[i] = t.enters[i];
            }
        }
        sleep_ms(2);
    }
    for (int i = 0; i < NMEMBERS; i++) {
        if (moved[i]) { /* the bound came first: it counts, it was moved */
            move_clock(i, 0);
            steps[i]++;
        }
    }
    close(t.fd);
    return 1;
}

/* Skewed from the start: the files were written before the contenders
 * started; the case lasts SKEW_MS. */
static int fault_skew(void)
{
    sleep_ms(SKEW_MS);
    for (int i = 0; i < NMEMBERS; i++)
        steps[i] += members[i].moved;
    return 1;
}

/* ---- The run and its verdict ---- */

static void setup(void)
{
    server_start();
    contention_open();
    memset(steps, 0, sizeof steps);
}

/* The moved contenders gone (killed, when a failed assertion left them
 * running), and what libfaketime kept of them. */
static void teardown(void)
{
    for (int i = 0; i < ncontenders; i++) {
        int st;

        if (!contenders[i].clock || contenders[i].pid <= 0)
            continue;
        /* Still our child (not reaped by stop_contenders()): killed. */
        if (waitpid(contenders[i].pid, &st, WNOHANG) == 0) {
            kill(contenders[i].pid, SIGKILL);
            waitpid(contenders[i].pid, &st, 0);
        }
        forget_clock(contenders[i].pid);
    }
    ncontenders = 0;
    contention_close();
    server_stop();
}

/* The intervals of r on names beginning with prefix, in a new array. */
static struct interval *on_names(const struct run *r, const char *prefix, size_t *n)
{
    struct interval *out = calloc(r->nivs + 1, sizeof *out);

    cr_assert_not_null(out);
    *n = 0;
    for (size_t i = 0; i < r->nivs; i++)
        if (!strncmp(r->ivs[i].name, prefix, strlen(prefix)))
            out[(*n)++] = r->ivs[i];
    return out;
}

/* The intervals among ivs[0..n) that are writers' (want 1) or readers'
 * (want 0), in a new array. */
static struct interval *of_side(const struct interval *ivs, size_t n, int want, size_t *k)
{
    struct interval *out = calloc(n + 1, sizeof *out);

    cr_assert_not_null(out);
    *k = 0;
    for (size_t i = 0; i < n; i++)
        if (is_writer(&ivs[i]) == want)
            out[(*k)++] = ivs[i];
    return out;
}

static int reader_and_writer(const struct interval *a, const struct interval *b)
{
    return is_writer(a) != is_writer(b);
}

/* Sections of moved contenders that began while their clock was moved,
 * or were inside when it moved (from the injector's step and restore
 * lines; a skewed clock is moved from the start). */
static long moved_sections(const struct run *r, const struct interval *ivs, size_t n)
{
    long k = 0;

    for (size_t i = 0; i < n; i++) {
        int m = member_of(ivs[i].holder);
        uint64_t from = 0;

        if (m < 0 || !members[m].moved)
            continue;
        if (current->role == SKEW) {
            k++;
            continue;
        }
        for (size_t j = 0; j < r->nrecs; j++) {
            const struct record *rec = &r->recs[j];

            if (strcmp(rec->holder, "injector") || strcmp(rec->name, ivs[i].holder))
                continue;
            if (!strcmp(rec->kind, "step")) {
                from = rec->ns;
            } else if (!strcmp(rec->kind, "restore") && from) {
                if (ivs[i].start < rec->ns && ivs[i].end > from) {
                    k++;
                    break;
                }
                from = 0;
            }
        }
    }
    return k;
}

/* The injector's step and restore lines for the contenders of group g,
 * with the overlaps' moments: what a reader of the failure needs. */
static void show_steps(const struct run *r, enum group g)
{
    for (size_t j = 0; j < r->nrecs; j++) {
        const struct record *rec = &r->recs[j];
        int m = member_of(rec->name);

        if (!strcmp(rec->holder, "injector") && m >= 0 && members[m].group == g)
            fprintf(stderr, "  %s %s %+lld s at %" PRIu64 " ns\n", rec->kind, rec->name,
                    rec->extra, rec->ns);
    }
}

static void show_overlaps(const struct overlap *shown, size_t n)
{
    for (size_t i = 0; i < n && i < MAX_SHOWN; i++) {
        show_overlap(&shown[i]);
        fprintf(stderr, "    (%s#%ld entered at %" PRIu64 " ns, %s#%ld at %" PRIu64 " ns)\n",
                shown[i].a->holder, shown[i].a->round, shown[i].a->start, shown[i].b->holder,
                shown[i].b->round, shown[i].b->start);
    }
}

/* The sections inside at `at`, and how each ended. */
static void show_inside_at(const struct interval *ivs, size_t n, uint64_t at)
{
    for (size_t i = 0; i < n; i++)
        if (ivs[i].start <= at && ivs[i].end > at)
            fprintf(stderr, "    %s#%ld on %s: entered at %" PRIu64 " ns, %s at %" PRIu64 " ns\n",
                    ivs[i].holder, ivs[i].round, ivs[i].name, ivs[i].start,
                    ivs[i].lost_ns && ivs[i].end == ivs[i].lost_ns ? "told lost" : "left",
                    ivs[i].end);
}

/* What a kind saw: its sections, those of moved contenders under their
 * moved clock, those told lost while inside, the violations, and the most
 * inside at once. */
struct verdict {
    size_t sections;
    long moved, told;
    size_t overlaps;
    int most;
};

static struct verdict verdict_of(const struct run *r, const struct interval *ivs, size_t n)
{
    struct verdict v = {n, moved_sections(r, ivs, n), 0, 0, 0};

    for (size_t i = 0; i < n; i++)
        v.told += ivs[i].lost_ns && ivs[i].end == ivs[i].lost_ns;
    return v;
}

/* The kind's line: what a note quotes.  And no section was told lost:
 * nothing but clocks moved in these runs, and a lease timed by Redis does
 * not care (a permit's holder whose clock went ahead reclaimed its own
 * permit at its first renewal, and heard it was lost; whether a waiter
 * got in before it heard is a race of a millisecond). */
static void say(const char *kind, const struct verdict *v, const char *overlaps_are,
                const char *most_is)
{
    cr_expect_eq(v->told, 0, "%s, %s: %ld sections told lost, with no fault but a clock's",
                 current->name, kind, v->told);
    fprintf(stderr,
            "time-faults: %-13s %-10s %4zu sections (%ld under a moved clock, %ld told lost), "
            "%zu %s, at most %d %s\n",
            current->name, kind, v->sections, v->moved, v->told, v->overlaps, overlaps_are,
            v->most, most_is);
}

/* An exclusive kind on prefix: no two holders of a name at once. */
static void judge_exclusive(const struct run *r, enum group g, const char *kind)
{
    struct overlap shown[MAX_SHOWN];
    size_t n;
    struct interval *ivs = on_names(r, groups[g].prefix, &n);
    struct verdict v = verdict_of(r, ivs, n);

    v.overlaps = find_overlaps(ivs, n, shown, MAX_SHOWN);
    v.most = most_inside(ivs, n);
    if (g == G_MULTI) { /* per name: each of its three */
        v.most = 0;
        for (int k = 0; k < 3; k++) {
            char name[8];
            size_t m = 0;
            struct interval *one = calloc(n + 1, sizeof *one);

            cr_assert_not_null(one);
            snprintf(name, sizeof name, "%s%d", groups[g].prefix, k);
            for (size_t i = 0; i < n; i++)
                if (!strcmp(ivs[i].name, name))
                    one[m++] = ivs[i];
            v.most = most_inside(one, m) > v.most ? most_inside(one, m) : v.most;
            free(one);
        }
    }
    say(kind, &v, "overlaps", g == G_MULTI ? "inside a name" : "inside");
    if (v.overlaps) {
        show_overlaps(shown, v.overlaps);
        show_steps(r, g);
    }
    cr_expect_eq(v.overlaps, 0, "%s, %s: %zu overlaps of two holders", current->name, kind,
                 v.overlaps);
    cr_expect_geq(v.sections, MIN_SECTIONS, "%s, %s: %zu sections prove nothing",
                  current->name, kind, v.sections);
    free(ivs);
}

/* The read-write lock: no writer beside anyone; a line for each side.
 * Its two moved contenders, a reader and a writer, hold it most of a
 * holder's case in turn, and a writer waits for every reader to leave:
 * the lock as a whole has MIN_SECTIONS, each side two at least (a moved
 * contender's and another's). */
static void judge_rw(const struct run *r)
{
    struct overlap shown[MAX_SHOWN];
    size_t n, nr, nw, bad, shared, rw_mixed;
    struct interval *ivs = on_names(r, groups[G_RW].prefix, &n);
    struct interval *readers = of_side(ivs, n, 0, &nr), *writers = of_side(ivs, n, 1, &nw);
    struct verdict vr = verdict_of(r, readers, nr), vw = verdict_of(r, writers, nw);

    vr.most = most_inside(readers, nr);
    vw.most = most_inside(writers, nw);
    rw_mixed = overlaps_where(ivs, n, reader_and_writer, NULL, 0);
    rw_overlaps(ivs, n, shown, MAX_SHOWN, &bad, &shared);
    vr.overlaps = rw_mixed;
    vw.overlaps = bad;
    say("read", &vr, "beside a writer", "readers inside");
    say("write", &vw, "with a writer", "writers inside");
    if (bad) {
        show_overlaps(shown, bad);
        show_steps(r, G_RW);
    }
    cr_expect_eq(bad, 0, "%s: %zu overlaps with a writer", current->name, bad);
    cr_expect_geq(n, MIN_SECTIONS, "%s, read-write: %zu sections prove nothing", current->name,
                  n);
    cr_expect_geq(nr, 2, "%s, read: %zu sections prove nothing", current->name, nr);
    cr_expect_geq(nw, 2, "%s, write: %zu sections prove nothing", current->name, nw);
    free(readers);
    free(writers);
    free(ivs);
}

/* A semaphore: never more inside than permits, and (of 2) both used at
 * some moment, else sharing went unproved. */
static void judge_sem(const struct run *r, enum group g, const char *kind)
{
    size_t n;
    struct interval *ivs = on_names(r, groups[g].prefix, &n);
    int permits = groups[g].permits;
    uint64_t at = 0;
    struct verdict v = verdict_of(r, ivs, n);
    size_t over = 0;

    v.most = most_inside_at(ivs, n, &at);
    /* The sections that entered with permits or more already inside. */
    for (size_t i = 0; i < n; i++) {
        int inside = 0;

        for (size_t j = 0; j < n; j++)
            inside += j != i && ivs[j].start <= ivs[i].start && ivs[j].end > ivs[i].start;
        over += inside >= permits;
    }
    v.overlaps = over;
    say(kind, &v, "entered a full semaphore", "inside");
    if (v.most > permits) {
        fprintf(stderr, "  %d inside at %" PRIu64 " ns with %d permits:\n", v.most, at, permits);
        show_inside_at(ivs, n, at);
        show_steps(r, g);
    }
    cr_expect_leq(v.most, permits, "%s, %s: %d inside at once with %d permits", current->name,
                  kind, v.most, permits);
    cr_expect_geq(v.sections, MIN_SECTIONS, "%s, %s: %zu sections prove nothing", current->name,
                  kind, v.sections);
    if (permits > 1)
        cr_expect_geq(v.most, 2, "%s, %s: the permits were never used at once", current->name,
                      kind);
    free(ivs);
}

static void run_case(const struct clock_case *cc)
{
    const struct fault fault = {cc->name, cc->role == SKEW ? fault_skew : fault_steps};
    struct run r;

    current = cc;
    build_spec(cc);
    for (int i = 0; i < NMEMBERS; i++) {
        if (!members[i].moved)
            continue;
        set_clock(i, cc->role == SKEW ? cc->offset_s : 0);
        if (cc->role == SKEW)
            log_step("step", i, cc->offset_s);
    }
    run(spec, NMEMBERS, &fault, 1, 1, GAP_MS, &r);
    report(&r, &fault, 1);
    cr_assert_eq(count_faults(r.faults, r.nfaults, cc->name), 1);
    judge_exclusive(&r, G_LOCK, "lock");
    judge_rw(&r);
    judge_exclusive(&r, G_FAIR, "fair");
    judge_sem(&r, G_SEM1, "permits/1");
    judge_sem(&r, G_SEM2, "permits/2");
    judge_exclusive(&r, G_MULTI, "multi");
    for (int i = 0; i < NMEMBERS; i++)
        cr_expect(!members[i].moved || steps[i] > 0,
                  "%s: %s's clock never moved (it never held or asked as the case needs)",
                  cc->name, members[i].id);
    free_run(&r);
}

/* ---- The premise ---- */

/* What a process under a moved clock reads, a line per line it is sent:
 * its wall clock and CLOCK_BOOTTIME, each less CLOCK_MONOTONIC, and
 * CLOCK_MONOTONIC itself (seconds). */
static const char clock_reader[] =
    "import sys, time\n"
    "for _ in sys.stdin:\n"
    "    m = time.monotonic()\n"
    "    print(time.time() - m, time.clock_gettime(time.CLOCK_BOOTTIME) - m, m, flush=True)\n";

struct reading {
    double wall, boot, mono; /* wall and boot less mono */
    uint64_t before, after;  /* our CLOCK_MONOTONIC around it, ns */
};

static void read_clocks(int to, FILE *from, struct reading *r)
{
    r->before = lw_clock_now();
    cr_assert_eq(write(to, "\n", 1), 1);
    cr_assert_eq(fscanf(from, "%lf %lf %lf", &r->wall, &r->boot, &r->mono), 3,
                 "the clock reader said nothing (is python3 there?)");
    r->after = lw_clock_now();
}

/*
 * The tests' premise, checked: a process started as a moved contender is
 * (contention_run.h's preload_clock()) reads the wall clock its file says,
 * and a step of the file moves it while it runs, by as much; its
 * CLOCK_MONOTONIC and CLOCK_BOOTTIME (the log's clock, the library's
 * timing of leases) stay true.  Without it the cases below would pass for
 * want of a moved clock.
 */
Test(time_faults, a_clock_file_moves_a_running_process, .init = setup, .fini = teardown,
     .timeout = 30)
{
    static const int offsets[3] = {0, -STEP_S, STEP_S};
    const struct contender c = {.id = "reader", .clock = "reader.clock"};
    struct reading rd[3];
    int in[2], out[2], st;
    pid_t pid;
    FILE *from;

    set_clock_file(c.clock, 0);
    cr_assert_eq(pipe(in), 0);
    cr_assert_eq(pipe(out), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        preload_clock(&c);
        execl(PYTHON_PATH, PYTHON_PATH, "-c", clock_reader, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    from = fdopen(out[0], "r");
    cr_assert_not_null(from);
    for (int i = 0; i < 3; i++) {
        set_clock_file(c.clock, offsets[i]);
        read_clocks(in[1], from, &rd[i]);
    }
    close(in[1]);
    fclose(from);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    forget_clock(pid);
    fprintf(stderr,
            "time-faults: a moved clock: wall less monotonic %.3f s, then %+.3f s, then "
            "%+.3f s; boot time less monotonic %.4f, %.4f, %.4f s\n",
            rd[0].wall, rd[1].wall - rd[0].wall, rd[2].wall - rd[0].wall, rd[0].boot,
            rd[1].boot, rd[2].boot);
    for (int i = 1; i < 3; i++) {
        cr_expect(fabs(rd[i].wall - rd[0].wall - offsets[i]) < 0.5,
                  "the wall clock moved %.3f s, not %+d s", rd[i].wall - rd[0].wall, offsets[i]);
        cr_expect(fabs(rd[i].boot - rd[0].boot) < 0.05, "CLOCK_BOOTTIME moved: %.4f, then %.4f s",
                  rd[0].boot, rd[i].boot);
    }
    for (int i = 0; i < 3; i++)
        cr_expect(rd[i].mono * 1e9 >= (double)rd[i].before - 1e6 &&
                      rd[i].mono * 1e9 <= (double)rd[i].after + 1e6,
                  "CLOCK_MONOTONIC moved: %.6f s, ours %.6f..%.6f s", rd[i].mono,
                  rd[i].before / 1e9, rd[i].after / 1e9);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the clock reader: status %d", st);
}

/* ---- The cases ---- */

#define TIME_TEST(name) Test(time_faults, name, .init = setup, .fini = teardown, .timeout = 60)

TIME_TEST(holder_stepped_back)
{
    run_case(&(struct clock_case){"holder-back", HOLDER, -STEP_S});
}

TIME_TEST(holder_stepped_ahead)
{
    run_case(&(struct clock_case){"holder-ahead", HOLDER, STEP_S});
}

TIME_TEST(asker_stepped_back)
{
    run_case(&(struct clock_case){"asker-back", ASKER, -STEP_S});
}

TIME_TEST(asker_stepped_ahead)
{
    run_case(&(struct clock_case){"asker-ahead", ASKER, STEP_S});
}

TIME_TEST(skewed_behind_from_the_start)
{
    run_case(&(struct clock_case){"skew-behind", SKEW, -STEP_S});
}

TIME_TEST(skewed_ahead_from_the_start)
{
    run_case(&(struct clock_case){"skew-ahead", SKEW, STEP_S});
}
