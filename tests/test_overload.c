/*
 * Held locks first (admission, core/admission.c): while the renewals are
 * behind, first acquires of watchdog locks wait in the client and fail
 * with LW_EOVERLOAD when their wait runs out; re-entries, unlocks and
 * queries still go; once the renewals catch up, first acquires go again.
 *
 * How the renewals fall behind, honestly: the client talks to Redis
 * through a proxy that stops forwarding (a partition), and renews one
 * lock per call, one call at a time.  The first renewal to fall due waits
 * for its reply; the others wait behind it, their backlog growing until it
 * passes the lease / 30 that closes admission.  The proxy lets go, the
 * replies come, the backlog is gone and admission opens again.
 */
#include <stdatomic.h>

#include "lock_util.h"
#include "proxy.h"

#define LEASE_MS 6000u /* closes at a backlog of 200 ms; opens after 2 s under 50 */

static struct lw_client *overload_client(struct proxy *p)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, LEASE_MS, NULL);
    cfg.port = proxy_port(p);
    cfg.renew_batch = 1;
    cfg.renew_batches_inflight = 1;
    cfg.command_timeout_ms = 20000; /* the held renewal waits, not fails */
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

/* Wait (bounded) until the client's overloaded gauge reads `on`. */
static int overloaded_becomes(struct lw_client *c, uint64_t on, int ms)
{
    struct lw_client_stats st;

    for (int i = 0; i < ms; i++) {
        lw_client_get_stats(c, &st);
        if (st.overloaded == on)
            return 1;
        sleep_ms(1);
    }
    return 0;
}

REDIS_TEST(overload, first_acquires_wait_while_renewals_are_behind)
{
    struct proxy *p = proxy_start(srv.port);
    struct lw_client *c;
    struct lw_lock *held[3], *fresh, *later, *after;
    struct outcome waiting = {0}, again = {0}, unlocked = {0}, query = {0};
    struct lw_client_stats st;
    uint64_t token, t0;
    int rc;

    cr_assert(p, "no proxy");
    c = overload_client(p);
    for (int i = 0; i < 3; i++) {
        char name[16];

        snprintf(name, sizeof name, "held%d", i);
        held[i] = new_lock(c, name);
        cr_assert_eq(lw_acquire(held[i], 1, 0, 0, &token), 0);
    }
    fresh = new_lock(c, "fresh");
    later = new_lock(c, "later");
    after = new_lock(c, "after");
    tally_init(&waiting.tally);
    tally_init(&again.tally);
    tally_init(&unlocked.tally);
    tally_init(&query.tally);

    /* Their renewals fall due a third of the lease on, and wait. */
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(overloaded_becomes(c, 1, 2 * LEASE_MS / 3 + 2000), "admission never closed");
    lw_client_get_stats(c, &st);
    cr_assert_gt(st.renewal_backlog_ns, LEASE_MS / 30 * 1000000ull);
    cr_assert_eq(st.overloads, 1);

    /* A single try fails at once; a wait of 100 ms after it; neither was
     * sent (the proxy holds nothing new for them). */
    cr_assert_eq(lw_acquire(fresh, 2, 0, 0, &token), LW_EOVERLOAD);
    t0 = lw_clock_now();
    rc = lw_acquire(fresh, 2, 100, 0, &token);
    cr_assert_eq(rc, LW_EOVERLOAD);
    cr_assert_geq(lw_clock_now() - t0, 100 * 1000000ull);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.overload_refused, 2);

    /* A long wait waits; a re-entry, an unlock and a query are sent. */
    cr_assert_eq(lw_acquire_async(later, 2, 30000, 0, on_outcome, &waiting), 0);
    cr_assert_eq(lw_acquire_async(held[0], 1, 0, 0, on_outcome, &again), 0);
    cr_assert_eq(lw_unlock_async(held[1], 1, on_outcome, &unlocked), 0);
    cr_assert_eq(lw_is_locked_async(held[2], on_outcome, &query), 0);
    cr_assert_eq(waiting.tally.done + again.tally.done + unlocked.tally.done +
                     query.tally.done,
                 0, "a call completed while Redis was cut off");

    /* The replies come; the backlog goes; admission opens. */
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert_eq(tally_wait(&again.tally, 1, 10000), 1);
    cr_assert_eq(atomic_load(&again.err), 0, "the re-entry: %s",
                 lw_strerror(atomic_load(&again.err)));
    cr_assert_eq(tally_wait(&unlocked.tally, 1, 10000), 1);
    cr_assert_eq(atomic_load(&unlocked.err), 0);
    cr_assert_eq(tally_wait(&query.tally, 1, 10000), 1);
    cr_assert_eq(atomic_load(&query.value), 1);
    cr_assert(overloaded_becomes(c, 0, 10000), "admission never opened again");
    cr_assert_eq(tally_wait(&waiting.tally, 1, 10000), 1);
    cr_assert_eq(atomic_load(&waiting.err), 0, "the waiting acquire: %s",
                 lw_strerror(atomic_load(&waiting.err)));
    cr_assert_eq(lw_acquire(after, 2, 0, 0, &token), 0);

    lw_client_get_stats(c, &st);
    cr_assert_eq(st.overload_refused, 2);
    cr_assert_eq(st.overloads, 1);
    cr_assert_eq(st.lost_expired + st.lost_errors + st.lost_not_owner, 0);
    cr_assert_eq(st.locks_held, 4); /* held0 (twice), held2, later, after */
    for (int i = 0; i < 3; i++)
        lw_lock_free(held[i]);
    lw_lock_free(fresh);
    lw_lock_free(later);
    lw_lock_free(after);
    lw_client_free(c);
    tally_destroy(&waiting.tally);
    tally_destroy(&again.tally);
    tally_destroy(&unlocked.tally);
    tally_destroy(&query.tally);
    proxy_stop(p);
}
