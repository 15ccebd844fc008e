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

/* The count once none has run for 100 ms (at most 5 s): the waiters'
 * attempts are answered, and each waits for a message or a timer far
 * away (the holders' leases are long). */
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

#endif
