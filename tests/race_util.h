/*
 * tests/race_util.h - contention inside the test: threads of two clients
 * take turns on a few locks and count the times two were inside one at
 * once, while the test does its worst to the servers (the cluster and
 * Sentinel tests).  Include after <criterion/criterion.h>, <leasewheel.h>
 * and time_util.h.
 */
#ifndef LW_TESTS_RACE_UTIL_H
#define LW_TESTS_RACE_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define RACE_THREADS 4
#define RACE_LOCKS 3

static struct {
    _Atomic int stop;
    _Atomic int inside[RACE_LOCKS];
    _Atomic int overlaps, rounds, errors;
    struct lw_client *client[2];
    const char *names; /* a printf format for the lock's number */
} race;

/* One thread: try-lock (200 ms) each lock in turn, 2 ms inside. */
static void *race_thread(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct lw_lock *l[RACE_LOCKS];
    char name[32];

    for (int k = 0; k < RACE_LOCKS; k++) {
        snprintf(name, sizeof name, race.names, k);
        cr_assert_eq(lw_lock_new(race.client[id % 2], name, strlen(name), &l[k]), 0);
    }
    for (int i = 0; !atomic_load(&race.stop); i++) {
        int k = i % RACE_LOCKS, rc = lw_acquire(l[k], (uint64_t)id + 1, 200, 0, NULL);

        if (rc == LW_ELOCKED)
            continue;
        if (rc) {
            atomic_fetch_add(&race.errors, 1);
            sleep_ms(20);
            continue;
        }
        if (atomic_fetch_add(&race.inside[k], 1) != 0)
            atomic_fetch_add(&race.overlaps, 1);
        sleep_ms(2);
        atomic_fetch_sub(&race.inside[k], 1);
        atomic_fetch_add(&race.rounds, 1);
        lw_unlock_owner(l[k], (uint64_t)id + 1);
    }
    for (int k = 0; k < RACE_LOCKS; k++)
        lw_lock_free(l[k]);
    return NULL;
}

/* Start the threads on clients a and b, on locks named by `names`. */
static inline void race_start(pthread_t *t, struct lw_client *a, struct lw_client *b,
                              const char *names)
{
    memset(&race, 0, sizeof race);
    race.client[0] = a;
    race.client[1] = b;
    race.names = names;
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_create(&t[i], NULL, race_thread, (void *)(intptr_t)i);
}

/* Stop them, free both clients; never an overlap, and some progress. */
static inline void race_stop(pthread_t *t, const char *what)
{
    atomic_store(&race.stop, 1);
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    cr_log_info("%s: %d rounds, %d errors, %d overlaps", what, race.rounds, race.errors,
                race.overlaps);
    cr_assert_eq(race.overlaps, 0);
    cr_assert_gt(race.rounds, 50);
    cr_assert_eq(lw_client_free(race.client[0]), 0);
    cr_assert_eq(lw_client_free(race.client[1]), 0);
}

#endif
