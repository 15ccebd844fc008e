/*
 * tests/test_election.c - leader election (<leasewheel/election.h>) on a
 * real Redis: campaign, proclaim, resign, the one-read leader, the
 * leader's belief (sure_until), a leader lost (its lock deleted; cut off
 * past its lease, term after term), and a Redisson RLock on the name
 * (tests/redisson_lock.h, verbatim).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel/election.h>

#include "lock_util.h"
#include "proxy.h"
#include "redisson_lock.h"

#define NAME "leader"

static struct lw_election *candidate(struct lw_client *c)
{
    struct lw_election *e = NULL;

    cr_assert_eq(lw_election_new(c, NAME, strlen(NAME), &e), 0);
    return e;
}

static struct lw_leader read_leader(struct lw_election *e)
{
    struct lw_leader l;
    int rc = lw_election_leader(e, &l);

    cr_assert_eq(rc, 0, "%s: %s", lw_strerror(rc), lw_reply_error());
    return l;
}

REDIS_TEST(election, campaign_proclaim_resign)
{
    struct lost_log lost;
    struct lw_client *c = new_client(3000, &lost);
    struct lw_election *e = candidate(c);
    struct lw_leader l;
    uint64_t term = 0;

    cr_assert_eq(lw_election_sure_until(e), 0, "not elected yet");
    l = read_leader(e);
    cr_assert_eq(l.held, 0, "vacant");
    cr_assert_eq(lw_election_campaign(e, "host-a:80", 9, 0, &term), 0);
    cr_assert_gt(term, 0);
    cr_assert_eq(lw_election_term(e), term);
    cr_assert_gt(lw_election_sure_until(e), lw_clock_now(), "believed, from the acquire");
    l = read_leader(e);
    cr_assert(l.held && l.term == term);
    cr_assert_str_eq(l.value, "host-a:80");
    cr_assert(strchr(l.leader, ':'), "the holder's field: %s", l.leader);
    cr_assert_eq(lw_election_proclaim(e, "host-a:81", 9), 0);
    l = read_leader(e);
    cr_assert_str_eq(l.value, "host-a:81");
    cr_assert_eq(l.term, term, "a proclaim keeps the term");
    cr_assert_eq(lw_election_resign(e), 0);
    cr_assert_eq(lw_election_sure_until(e), 0, "no belief once resigned");
    cr_assert_eq(read_leader(e).held, 0);
    cr_assert_eq(lw_election_proclaim(e, "late", 4), LW_ENOTOWNER);
    cr_assert_eq(lw_election_resign(e), LW_ENOTOWNER);
    cr_assert_eq(atomic_load(&lost.count), 0);
    lw_election_free(e);
    lw_client_free(c);
}

/* The belief holds across renewals: sure_until moves on while leading. */
REDIS_TEST(election, the_belief_moves_on_with_renewals)
{
    struct lw_client *c = new_client(1000, NULL);
    struct lw_election *e = candidate(c);
    uint64_t first;

    cr_assert_eq(lw_election_campaign(e, "v", 1, 0, NULL), 0);
    first = lw_election_sure_until(e);
    cr_assert(wait_until(lw_election_sure_until(e) > first + 200000000ull, 3000),
              "renewals push the belief on");
    cr_assert_eq(lw_election_resign(e), 0);
    lw_election_free(e);
    lw_client_free(c);
}

struct elected {
    _Atomic int done;
    _Atomic int err;
    _Atomic uint64_t term;
    _Atomic uint64_t at_ns; /* when the campaign ended */
};

static void on_elected(int err, int64_t value, void *arg)
{
    struct elected *el = arg;

    atomic_store(&el->err, err);
    atomic_store(&el->term, (uint64_t)value);
    atomic_store(&el->at_ns, lw_clock_now());
    atomic_store(&el->done, 1);
}

REDIS_TEST(election, the_next_candidate_leads_once_the_leader_resigns)
{
    struct lw_client *a = new_client(3000, NULL), *b = new_client(3000, NULL);
    struct lw_election *ea = candidate(a), *eb = candidate(b);
    struct elected el = {0};
    uint64_t ta = 0;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &ta), 0);
    cr_assert_eq(lw_election_campaign(eb, "b", 1, 0, NULL), LW_ELOCKED, "a try, not the leader");
    cr_assert_eq(lw_election_proclaim(eb, "b", 1), LW_ENOTOWNER);
    cr_assert_eq(lw_election_campaign_async(eb, "b", 1, 10000, on_elected, &el), 0);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&el.done), 0, "waits while a leads");
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(atomic_load(&el.done), 3000), "b leads after a resigned");
    cr_assert_eq(atomic_load(&el.err), 0);
    cr_assert_eq(atomic_load(&el.term), ta + 1, "the next term");
    cr_assert_str_eq(read_leader(ea).value, "b", "a reads b's value");
    cr_assert_eq(lw_election_resign(eb), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_client_free(a);
    lw_client_free(b);
}

/* A leader freed resigns: the next candidate needs no lease to run out. */
REDIS_TEST(election, a_leader_freed_resigns)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_election *e = candidate(c), *f = candidate(c);

    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, NULL), 0);
    lw_election_free(e);
    cr_assert_eq(lw_election_campaign(f, "b", 1, 0, NULL), 0, "free at once");
    cr_assert_eq(lw_election_resign(f), 0);
    lw_election_free(f);
    lw_client_free(c);
}

/* Leadership removed under the leader (DEL, as a forceUnlock or an
 * operator would): the watchdog finds it lost, tells on_lost, and the
 * belief falls to 0. */
REDIS_TEST(election, a_leader_lost_believes_nothing)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1000, &lost);
    struct lw_election *e = candidate(c);

    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, NULL), 0);
    cr_assert_eq(redis_int("DEL %s", NAME), 1);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 3000), "told lost");
    cr_assert_eq(lw_election_sure_until(e), 0);
    cr_assert_eq(lw_election_resign(e), LW_ENOTOWNER);
    lw_election_free(e);
    lw_client_free(c);
}

REDIS_TEST(election, terms_rise_across_a_flushall)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_election *e = candidate(c);
    uint64_t before = 0, after = 0;

    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, &before), 0);
    cr_assert_eq(lw_election_resign(e), 0);
    freeReplyObject(redis_server_command(&srv, "FLUSHALL"));
    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, &after), 0);
    cr_assert_gt(after, before);
    cr_assert_eq(lw_election_resign(e), 0);
    lw_election_free(e);
    lw_client_free(c);
}

/* Redisson's RLock on the name, its acquire verbatim: excluded by a
 * leader, and excluding candidates; the leader's read names it, without
 * a term. */
REDIS_TEST(election, a_redisson_rlock_and_candidates_exclude_each_other)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_election *e = candidate(c);
    struct lw_leader l;
    redisReply *r;

    r = redis_server_command(&srv, "SCRIPT LOAD %s", RS_LOCK_TRY);
    cr_assert(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, RS_LOCK_TRY_SHA));
    freeReplyObject(r);
    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, NULL), 0);
    r = redis_server_command(&srv, "EVALSHA %s 1 %s 30000 %s", RS_LOCK_TRY_SHA, NAME,
                             "uuid-1:42");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0, "the RLock is refused");
    freeReplyObject(r);
    cr_assert_eq(lw_election_resign(e), 0);
    r = redis_server_command(&srv, "EVALSHA %s 1 %s 30000 %s", RS_LOCK_TRY_SHA, NAME,
                             "uuid-1:42");
    cr_assert(r && r->type == REDIS_REPLY_NIL, "the RLock got it");
    freeReplyObject(r);
    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, NULL), LW_ELOCKED);
    l = read_leader(e);
    cr_assert(l.held && l.term == 0);
    cr_assert_str_eq(l.leader, "uuid-1:42");
    lw_election_free(e);
    lw_client_free(c);
}

REDIS_TEST(election, bad_arguments)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_election *e = candidate(c), *none = NULL;
    char *big = calloc(1, LW_ELECTION_VALUE_MAX + 1);

    cr_assert_eq(lw_election_new(c, NAME, strlen(NAME), NULL), LW_EINVAL);
    cr_assert_eq(lw_election_new(c, "", 0, &none), LW_EINVAL);
    cr_assert_eq(lw_election_campaign(NULL, "a", 1, 0, NULL), LW_EINVAL);
    cr_assert_eq(lw_election_campaign(e, NULL, 1, 0, NULL), LW_EINVAL);
    cr_assert_eq(lw_election_campaign(e, big, LW_ELECTION_VALUE_MAX + 1, 0, NULL), LW_ERANGE);
    cr_assert_eq(lw_election_leader(e, NULL), LW_EINVAL);
    cr_assert_eq(lw_election_sure_until(NULL), 0);
    cr_assert_eq(lw_election_campaign(e, big, LW_ELECTION_VALUE_MAX, 0, NULL), 0,
                 "the longest value");
    cr_assert_eq(read_leader(e).value_len, LW_ELECTION_VALUE_MAX);
    cr_assert_eq(lw_election_resign(e), 0);
    free(big);
    lw_election_free(e);
    lw_client_free(c);
}

/* An elected name reads as a lock held by its leader (lw_name_status(),
 * lwlock --status), not as some other hash. */
REDIS_TEST(election, the_name_status_is_a_lock)
{
    struct lw_client *c = new_client(3000, NULL);
    struct lw_election *e = candidate(c);
    struct lw_lock *l = new_lock(c, NAME);
    struct lw_name_status st;

    cr_assert_eq(lw_election_campaign(e, "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_name_status(l, &st), 0);
    cr_assert_eq(st.kind, LW_NAME_LOCK);
    cr_assert_eq(st.nholders, 1);
    cr_assert_eq(st.term, lw_election_term(e), "the leader's term");
    cr_assert_str_eq(st.value, "a");
    cr_assert_eq(lw_trylock(l, 0, 0, NULL), LW_ELOCKED, "a plain lock waits for the leader");
    cr_assert_eq(lw_election_resign(e), 0);
    lw_lock_free(l);
    lw_election_free(e);
    lw_client_free(c);
}

/* What an observer was told, in order. */
#define TOLD_MAX 64
struct told {
    pthread_mutex_t lock;
    int n;
    int state[TOLD_MAX];
    uint64_t term[TOLD_MAX];
    char value[TOLD_MAX][16];
    uint64_t sure[TOLD_MAX];
};

static void on_observed(int state, const struct lw_leader *l, void *arg)
{
    struct told *t = arg;

    pthread_mutex_lock(&t->lock);
    if (t->n < TOLD_MAX) {
        t->state[t->n] = state;
        t->term[t->n] = l->term;
        snprintf(t->value[t->n], sizeof t->value[0], "%.15s", l->value);
        t->sure[t->n] = l->sure_until_ns;
        t->n++;
    }
    pthread_mutex_unlock(&t->lock);
}

static int told_count(struct told *t)
{
    int n;

    pthread_mutex_lock(&t->lock);
    n = t->n;
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* etcd's observe order: vacant, then each leader and value as they come,
 * terms rising, each told once; and the metrics' election figures. */
REDIS_TEST(election, an_observer_sees_every_term_in_order)
{
    struct lw_client *a = new_client(3000, NULL), *o = new_client(3000, NULL);
    struct lw_election *ea = candidate(a), *eb = candidate(a), *eo = candidate(o);
    struct told t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct lw_client_stats st;
    uint64_t ta = 0, tb = 0;

    cr_assert_eq(lw_election_observe(eo, on_observed, &t), 0);
    cr_assert_eq(lw_election_observe(eo, on_observed, &t), LW_EBUSY);
    cr_assert(wait_until(told_count(&t) == 1, 3000));
    lw_client_get_stats(o, &st);
    cr_assert_eq(st.election_observers, 1);
    cr_assert_eq(t.state[0], LW_OBSERVED_VACANT);
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &ta), 0);
    cr_assert(wait_until(told_count(&t) == 2, 3000), "told the leader by its message");
    cr_assert_eq(lw_election_proclaim(ea, "a2", 2), 0);
    cr_assert(wait_until(told_count(&t) == 3, 3000), "told the new value");
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(told_count(&t) == 4, 3000), "told the vacancy");
    cr_assert_eq(lw_election_campaign(eb, "b", 1, 0, &tb), 0);
    cr_assert(wait_until(told_count(&t) == 5, 3000));
    sleep_ms(100); /* nothing more to tell */
    cr_assert_eq(lw_election_unobserve(eo), 0);
    cr_assert_eq(told_count(&t), 5);
    cr_assert_eq(t.state[1], LW_OBSERVED_LEADER);
    cr_assert_eq(t.term[1], ta);
    cr_assert_str_eq(t.value[1], "a");
    cr_assert(t.sure[1] > 0);
    cr_assert_eq(t.term[2], ta);
    cr_assert_str_eq(t.value[2], "a2");
    cr_assert_eq(t.state[3], LW_OBSERVED_VACANT);
    cr_assert_eq(t.state[4], LW_OBSERVED_LEADER);
    cr_assert_eq(t.term[4], tb);
    cr_assert_gt(tb, ta);
    cr_assert_eq(lw_election_resign(eb), 0);
    cr_assert_eq(lw_election_unobserve(eo), LW_EINVAL, "not observing any more");
    /* The metrics' figures: a's two terms; o's one vacancy after a
     * leader (not the first, before any), and no observer left. */
    lw_client_get_stats(a, &st);
    cr_assert_eq(st.election_terms, 2);
    lw_client_get_stats(o, &st);
    cr_assert_eq(st.election_vacancies, 1);
    cr_assert_eq(st.election_observers, 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_election_free(eo);
    lw_client_free(a);
    lw_client_free(o);
}

/* A leadership that ends without a message (its key deleted: an expiry
 * says nothing either) is seen at the end of the observer's belief, that
 * is within the lease it read. */
REDIS_TEST(election, an_observer_sees_a_silent_vacancy_by_its_belief)
{
    struct lw_client *a = new_client(1000, NULL), *o = new_client(1000, NULL);
    struct lw_election *ea = candidate(a), *eo = candidate(o);
    struct told t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    uint64_t deleted_ns, term = 0;
    int n;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &term), 0);
    cr_assert_eq(lw_election_observe(eo, on_observed, &t), 0);
    cr_assert(wait_until(told_count(&t) == 1, 3000));
    cr_assert_eq(t.state[0], LW_OBSERVED_LEADER);
    cr_assert_eq(t.term[0], term);
    deleted_ns = lw_clock_now();
    cr_assert_eq(redis_int("DEL %s", NAME), 1); /* no message says so */
    cr_assert(wait_until((n = told_count(&t)) == 2, 5000), "the vacancy is seen");
    cr_assert_eq(t.state[1], LW_OBSERVED_VACANT);
    cr_assert_lt(lw_clock_now() - deleted_ns, 3000000000ull, "within the lease it read, and more");
    cr_assert_eq(lw_election_unobserve(eo), 0);
    lw_election_free(ea);
    lw_election_free(eo);
    lw_client_free(a);
    lw_client_free(o);
}

/* A leader cut off (a proxy holding every byte) past its lease is told
 * it lost, within its lease: it campaigned after waiting on the channel
 * (another led first), as a contender of the fault model does; and told
 * again in its next term on the same handle (the first loss once
 * silenced every later one: the fault model's checker found it). */
REDIS_TEST(election, a_leader_cut_off_is_told_within_its_lease_every_term)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client_config cfg;
    struct lw_client *c = NULL, *other = new_client(3000, NULL);
    struct lw_election *e, *first = candidate(other);
    struct elected el = {0};
    struct lost_log lost;
    uint64_t cut;

    cr_assert_not_null(p);
    client_config(&cfg, 1200, &lost);
    cfg.port = proxy_port(p);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    e = candidate(c);
    cr_assert_eq(lw_election_campaign(first, "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_election_campaign_async(e, "b", 1, 10000, on_elected, &el), 0);
    sleep_ms(100);
    cr_assert_eq(lw_election_resign(first), 0);
    cr_assert(wait_until(atomic_load(&el.done), 3000));
    cr_assert_eq(atomic_load(&el.err), 0);
    sleep_ms(100);
    cr_assert_eq(proxy_hold(p, 1), 0);
    cut = lw_clock_now();
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 3000), "never told");
    cr_assert_lt(atomic_load(&lost.at_ns) - cut, 1300000000ull, "told %.0f ms after the cut",
                 (atomic_load(&lost.at_ns) - cut) / 1e6);
    cr_assert_eq(lw_election_sure_until(e), 0);
    cr_assert_eq(proxy_hold(p, 0), 0);
    /* Again, on the same handle: a second term, cut off too. */
    cr_assert(wait_until(redis_int("EXISTS %s", NAME) == 0, 3000));
    cr_assert_eq(lw_election_campaign(e, "b", 1, 1000, NULL), 0);
    sleep_ms(100);
    cr_assert_eq(proxy_hold(p, 1), 0);
    cut = lw_clock_now();
    cr_assert(wait_until(atomic_load(&lost.count) == 2, 3000), "never told the second time");
    cr_assert_lt(atomic_load(&lost.at_ns) - cut, 1300000000ull, "told %.0f ms after the cut",
                 (atomic_load(&lost.at_ns) - cut) / 1e6);
    cr_assert_eq(proxy_hold(p, 0), 0);
    lw_election_free(e);
    lw_election_free(first);
    lw_client_free(c);
    lw_client_free(other);
    proxy_stop(p);
}

/* ---- Campaigns in the fair lock's queue ---- */

#define QUEUE "redisson_lock_queue:{" NAME "}"

/* A client of the fixture's server whose waiters' places last place_ms. */
static struct lw_client *queue_client(uint32_t place_ms)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, 3000, NULL);
    cfg.fair_place_ms = place_ms;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* First come, first served across clients: b queued before c leads
 * before it, whichever client hears first; the queue's keys go with its
 * last waiter. */
REDIS_TEST(election, campaigns_wait_in_the_fair_queue_in_order)
{
    struct lw_client *a = new_client(3000, NULL), *b = queue_client(3000),
                     *c = queue_client(3000);
    struct lw_election *ea = candidate(a), *eb = candidate(b), *ec = candidate(c);
    struct elected elb = {0}, elc = {0};
    uint64_t ta = 0;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &ta), 0);
    cr_assert_eq(lw_election_campaign_async(eb, "b", 1, 10000, on_elected, &elb), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 1, 3000), "b queued");
    cr_assert_eq(lw_election_campaign_async(ec, "c", 1, 10000, on_elected, &elc), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 2, 3000), "c queued behind b");
    cr_assert_eq(lw_election_set_queued(eb, 0), LW_EBUSY, "campaigning: too late to change");
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(atomic_load(&elb.done), 3000), "b leads after a resigned");
    cr_assert_eq(atomic_load(&elb.err), 0);
    cr_assert_eq(atomic_load(&elb.term), ta + 1);
    cr_assert_eq(atomic_load(&elc.done), 0, "c waits its turn");
    cr_assert_str_eq(read_leader(ea).value, "b");
    cr_assert_eq(lw_election_resign(eb), 0);
    cr_assert(wait_until(atomic_load(&elc.done), 3000), "c leads after b resigned");
    cr_assert_eq(atomic_load(&elc.term), ta + 2);
    cr_assert_eq(lw_election_resign(ec), 0);
    cr_assert_eq(redis_int("EXISTS %s", NAME), 0);
    cr_assert_eq(redis_int("EXISTS %s", QUEUE), 0, "the queue went with its last waiter");
    cr_assert_eq(redis_int("EXISTS %s", "redisson_lock_timeout:{" NAME "}"), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_election_free(ec);
    lw_client_free(a);
    lw_client_free(b);
    lw_client_free(c);
}

/* A candidate that dies in the queue (its client gone, sending nothing)
 * drops out within its place's lease: the one behind it leads then, not
 * after its give-up time (minutes). */
REDIS_TEST(election, a_dead_candidate_drops_out_of_the_queue)
{
    struct lw_client *a = new_client(3000, NULL), *dead = queue_client(600),
                     *c = queue_client(600);
    struct lw_election *ea = candidate(a), *ed = candidate(dead), *ec = candidate(c);
    struct elected eld = {0}, elc = {0};
    uint64_t resigned;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_election_campaign_async(ed, "d", 1, 300000, on_elected, &eld), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 1, 3000));
    cr_assert_eq(lw_election_campaign_async(ec, "c", 1, 300000, on_elected, &elc), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 2, 3000));
    lw_election_free(ed);
    cr_assert_eq(lw_client_free(dead), 0); /* its campaign fails, nothing sent */
    resigned = lw_clock_now();
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(atomic_load(&elc.done), 5000), "c never led");
    cr_assert_eq(atomic_load(&elc.err), 0);
    cr_assert_lt(lw_clock_now() - resigned, 3000000000ull, "c led %.0f ms after the resign",
                 (lw_clock_now() - resigned) / 1e6);
    cr_assert_str_eq(read_leader(ea).value, "c");
    cr_assert_eq(lw_election_resign(ec), 0);
    lw_election_free(ea);
    lw_election_free(ec);
    lw_client_free(a);
    lw_client_free(c);
}

/* A campaign answered after its wait was over (Redis ran it late, its
 * writes paused) leaves the queue it joined then: nobody renews that
 * place, and the candidates behind it would wait out its lease (the
 * fault model's vacancies of a lease after the proxy held every byte). */
REDIS_TEST(election, a_campaign_answered_after_its_wait_leaves_the_queue)
{
    struct lw_client *a = new_client(3000, NULL), *b = queue_client(3000);
    struct lw_election *ea = candidate(a), *eb = candidate(b);
    redisReply *r;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, NULL), 0);
    r = redis_server_command(&srv, "CLIENT PAUSE 1000 WRITE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
    freeReplyObject(r);
    cr_assert_neq(lw_election_campaign(eb, "b", 1, 200, NULL), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 0, 2000),
              "b's place stays in the queue");
    cr_assert_eq(lw_election_resign(ea), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_client_free(a);
    lw_client_free(b);
}

/* Unqueued (lw_election_set_queued(e, 0)): the campaign waits in its
 * client's line, and the queue stays empty. */
REDIS_TEST(election, an_unqueued_campaign_waits_in_its_client)
{
    struct lw_client *a = new_client(3000, NULL), *b = new_client(3000, NULL);
    struct lw_election *ea = candidate(a), *eb = candidate(b);
    struct elected el = {0};

    cr_assert_eq(lw_election_set_queued(eb, 0), 0);
    cr_assert_eq(lw_election_set_queued(eb, 0), 0, "again: nothing to change");
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, NULL), 0);
    cr_assert_eq(lw_election_campaign_async(eb, "b", 1, 10000, on_elected, &el), 0);
    cr_assert(wait_until(redis_subscribers("redisson_lock__channel:{" NAME "}") == 1, 3000),
              "b waits on the lock's channel");
    cr_assert_eq(redis_int("EXISTS %s", QUEUE), 0, "no queue");
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(atomic_load(&el.done), 3000));
    cr_assert_eq(atomic_load(&el.err), 0);
    cr_assert_eq(lw_election_resign(eb), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_client_free(a);
    lw_client_free(b);
}

/* ---- A lock delay (Chubby's, Consul's) ---- */

/* The kind of the last lease a delay_client() lost. */
static _Atomic int lost_kind = -1;

static void record_lease_kind(const struct lw_lease *l, int reason, void *arg)
{
    (void)reason;
    atomic_store((_Atomic int *)arg, l->kind);
}

/* A client of port (the server's, or a proxy's) whose terms keep the
 * name delay_ms past a lost leader's lease. */
static struct lw_client *delay_client(uint32_t lease_ms, uint32_t delay_ms, int port,
                                      struct lost_log *lost)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, lost);
    cfg.port = port;
    cfg.election_lock_delay_ms = delay_ms;
    cfg.on_lease_lost = record_lease_kind;
    cfg.lease_lost_arg = &lost_kind;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* A leader cut off (a proxy holding every byte) is told it lost within
 * its lease, but Redis keeps the name the delay longer: the candidate
 * waiting in the queue leads no sooner than the delay after that, as
 * Redis's PTTL said from the start (the lease and the delay). */
REDIS_TEST(election, a_lost_leader_keeps_the_name_for_the_lock_delay)
{
    enum { LEASE = 1200,
           DELAY = 2000 };
    struct proxy *p = proxy_start(srv.port);
    struct lost_log lost;
    struct lw_client *a, *b = new_client(3000, NULL);
    struct lw_election *ea, *eb = candidate(b);
    struct elected el = {0};
    uint64_t ta = 0, lost_at, gap_ms;
    long long pttl;

    cr_assert_not_null(p);
    a = delay_client(LEASE, DELAY, proxy_port(p), &lost);
    ea = candidate(a);
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &ta), 0);
    pttl = redis_int("PTTL %s", NAME);
    cr_assert(pttl > LEASE && pttl <= LEASE + DELAY, "PTTL %lld: the lease and the delay", pttl);
    cr_assert_eq(lw_election_campaign_async(eb, "b", 1, 20000, on_elected, &el), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 1, 3000), "b queued");
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 3000), "a never told it lost");
    lost_at = atomic_load(&lost.at_ns);
    cr_assert_eq(atomic_load(&lost_kind), LW_LEASE_TERM, "lost a %s",
                 lw_lease_kind_name(atomic_load(&lost_kind)));
    cr_assert_eq(lw_election_sure_until(ea), 0);
    cr_assert(wait_until(atomic_load(&el.done), 10000), "b never led");
    cr_assert_eq(atomic_load(&el.err), 0);
    cr_assert_eq(atomic_load(&el.term), ta + 1);
    gap_ms = (atomic_load(&el.at_ns) - lost_at) / 1000000u;
    cr_assert_geq(gap_ms, DELAY, "b led %llu ms after a was told it lost",
                  (unsigned long long)gap_ms);
    cr_assert_lt(gap_ms, DELAY + LEASE + 3000, "b led %llu ms after a was told it lost",
                 (unsigned long long)gap_ms);
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(lw_election_resign(eb), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_client_free(a);
    lw_client_free(b);
    proxy_stop(p);
}

/* A leader that lost its term campaigns again while Redis still keeps
 * the term for it (the delay): it does not re-enter that term, whose
 * number its deposed work may still carry, but waits for the next. */
REDIS_TEST(election, a_lost_leader_campaigning_again_waits_for_a_new_term)
{
    struct proxy *p = proxy_start(srv.port);
    struct lost_log lost;
    struct lw_client *a;
    struct lw_election *ea;
    uint64_t ta = 0, again = 0;

    cr_assert_not_null(p);
    a = delay_client(1200, 3000, proxy_port(p), &lost);
    ea = candidate(a);
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, &ta), 0);
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(wait_until(atomic_load(&lost.count) == 1, 3000), "never told it lost");
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(redis_int("EXISTS %s", NAME), 1, "the delay keeps the lost term");
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, NULL), LW_ELOCKED, "re-entered a lost term");
    cr_assert_eq(lw_election_campaign(ea, "a", 1, 10000, &again), 0);
    cr_assert_eq(again, ta + 1, "term %llu after %llu", (unsigned long long)again,
                 (unsigned long long)ta);
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert_eq(redis_int("EXISTS %s", NAME), 0);
    lw_election_free(ea);
    lw_client_free(a);
    proxy_stop(p);
}

/* The delay is for a leader lost, not for one that gave up: a resign
 * hands over at once, however long the delay. */
REDIS_TEST(election, a_resign_hands_over_at_once_under_a_lock_delay)
{
    struct lw_client *a = delay_client(3000, 60000, srv.port, NULL), *b = new_client(3000, NULL);
    struct lw_election *ea = candidate(a), *eb = candidate(b);
    struct elected el = {0};
    uint64_t resigned;

    cr_assert_eq(lw_election_campaign(ea, "a", 1, 0, NULL), 0);
    cr_assert_gt(redis_int("PTTL %s", NAME), 3000);
    cr_assert_eq(lw_election_campaign_async(eb, "b", 1, 20000, on_elected, &el), 0);
    cr_assert(wait_until(redis_int("LLEN %s", QUEUE) == 1, 3000), "b queued");
    resigned = lw_clock_now(); /* b may lead before the resign's answer is back */
    cr_assert_eq(lw_election_resign(ea), 0);
    cr_assert(wait_until(atomic_load(&el.done), 10000), "b never led");
    cr_assert_eq(atomic_load(&el.err), 0);
    cr_assert_lt(atomic_load(&el.at_ns) - resigned, 3000000000ull, "b led %.0f ms after",
                 (atomic_load(&el.at_ns) - resigned) / 1e6);
    cr_assert_eq(lw_election_resign(eb), 0);
    lw_election_free(ea);
    lw_election_free(eb);
    lw_client_free(a);
    lw_client_free(b);
}

Test(election, a_lock_delay_past_the_longest_lease_is_refused)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    lw_client_config_init(&cfg);
    cfg.watchdog_timeout_ms = 30000;
    cfg.election_lock_delay_ms = LW_MAX_LEASE_MS - 29999;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    cr_assert_null(c);
}
