/*
 * tests/soak.h - what the soak's two parts share.
 *
 * soak.c        options, the Redis it runs on, the held locks, the checks
 *               and the verdict, main
 * soak_churn.c  the churn threads: other names locked and unlocked all
 *               the time, every way the API offers, on two clients
 */
#ifndef LW_TESTS_SOAK_H
#define LW_TESTS_SOAK_H

#include <stdint.h>

struct lw_client;
struct churn;

/* The kinds of churn operation, counted apart. */
enum churn_kind {
    CHURN_LOCK,         /* lw_lock, lw_unlock */
    CHURN_TRY,          /* lw_trylock with a short wait, watchdog */
    CHURN_REENTER,      /* lw_lock twice (the second a try), unlock twice */
    CHURN_LEASE,        /* an explicit lease, blocking */
    CHURN_ASYNC,        /* lw_acquire_async and lw_unlock_async, own owner */
    CHURN_KINDS
};

struct churn_config {
    struct lw_client *clients[2]; /* each operation picks one of them */
    const char *prefix;           /* names are "<prefix>:churn:<i>" */
    unsigned threads;
    unsigned names;               /* fewer names than threads x 2: contention */
    uint32_t lease_ms;            /* the explicit leases */
};

struct churn_totals {
    uint64_t pairs;               /* acquires that were unlocked again */
    uint64_t contended;           /* try-locks that found another owner */
    uint64_t errors;              /* results no operation should give */
    uint64_t overlaps;            /* two owners inside one name at once */
    uint64_t by_kind[CHURN_KINDS];/* pairs by kind */
    uint64_t slowest_ns;          /* the slowest operation that ended */
    uint64_t oldest_running_ns;   /* the oldest still running (0: none) */
    char first_error[192];        /* "" when none */
};

/* An operation running for long: which, where, in which call. */
struct churn_stuck {
    unsigned thread, client;      /* client: 0 A, 1 B */
    enum churn_kind kind;
    const char *call;             /* the API call it is in */
    uint64_t running_ns;
    char name[160];               /* the lock's name */
};

/* Start the threads.  0, or -1 with a message on stderr; either way *out
 * is then for churn_stop and churn_free (NULL when out of memory). */
int churn_start(const struct churn_config *cfg, struct churn **out);

/* The counters so far, from any thread. */
void churn_totals(struct churn *ch, struct churn_totals *out);

/* Up to max operations running for over older_than_ns into out; how many.
 * From any thread. */
int churn_stuck(struct churn *ch, uint64_t older_than_ns, struct churn_stuck *out, int max);

/* Ask the threads to stop and wait up to timeout_s for them.  0, or -1
 * when one is still inside an operation (stuck: it is left alone). */
int churn_stop(struct churn *ch, double timeout_s);

/* Free the handles and the threads' memory; after churn_stop returned 0,
 * before the clients are freed. */
void churn_free(struct churn *ch);

const char *churn_kind_name(enum churn_kind k);

#endif
