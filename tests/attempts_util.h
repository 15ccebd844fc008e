/*
 * tests/attempts_util.h - how many attempts the library sent, as Redis
 * counts them: every script of the library's goes by EVALSHA, so the
 * calls INFO commandstats reports for it, taken before and after a
 * wake-up, count the attempts it cost (a test's own scripts go by EVAL, or
 * are counted in).  Include after lock_util.h (the fixture's `srv`).
 */
#ifndef LW_TESTS_ATTEMPTS_UTIL_H
#define LW_TESTS_ATTEMPTS_UTIL_H

#include <stdlib.h>
#include <string.h>

/* EVALSHA calls Redis has run so far. */
static inline long long evalsha_calls(void)
{
    static const char key[] = "cmdstat_evalsha:calls=";
    redisReply *r = redis_server_command(&srv, "INFO commandstats");
    const char *p = r && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, key)
                        : NULL;
    long long n = p ? atoll(p + sizeof key - 1) : 0;

    if (r)
        freeReplyObject(r);
    return n;
}

/* Wait (at most 5 s) until Redis has run n EVALSHA calls since `start`:
 * the attempts a test knows were sent are all counted.  Before a wake-up,
 * the count to compare with is read only after this, never after a quiet
 * spell: on a loaded host an attempt can be on its way for longer than
 * any spell, and a count read before it lands adds it to the wake-up's. */
static inline void evalsha_reach(long long start, long long n)
{
    long long now = 0;

    if (!wait_until((now = evalsha_calls()) - start >= n, 5000))
        cr_assert_fail("%lld EVALSHA calls, not the %lld sent", now - start, n);
}

/* The count once none has run for 100 ms (at most 5 s), read after a
 * wake-up whose attempts were all answered: a further attempt, which
 * there should not be, had that long to show. */
static inline long long evalsha_settled(void)
{
    long long before = evalsha_calls(), now;

    for (int i = 0; i < 50; i++) {
        sleep_ms(100);
        if ((now = evalsha_calls()) == before)
            return now;
        before = now;
    }
    cr_assert_fail("the attempts never settled");
    return -1;
}

/*
 * A line of waiters whose attempts are all counted, for a test of how many
 * a wake-up costs.  The first waiter, started after `start` was read,
 * tries, subscribes (the expression `subscribed` turns 1) and tries again
 * once subscribed: two attempts, waited for here.  The waiters the test
 * starts next queue behind it without trying; the test then reads
 * something through the same engine queue and connection (one more
 * script), whose answer says they have queued and the first's last answer
 * is in: three calls since `start`.
 */
#define FIRST_WAITER_SETTLED(subscribed, start)                                \
    do {                                                                        \
        cr_assert(wait_until((subscribed) == 1, 5000), "never subscribed");    \
        evalsha_reach((start), 2);                                              \
    } while (0)

#endif
