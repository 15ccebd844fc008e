/*
 * docs/examples/leader.c - leader election per key: a process leads while
 * it holds the lock, and steps down as soon as it may not.
 *
 * Run several of these with the same name: one leads, the others wait for
 * the lock, and when the leader stops (or dies, and its lease runs out)
 * one of them takes over.  The leader's work here is a counter it bumps
 * every 100 ms ("term 2: step 14"); a real leader would pass the fencing
 * token (which grows with every new term) to whatever it writes, so that
 * a store can refuse a deposed leader's late writes.
 *
 * Stepping down.  The watchdog renews the lock; two callbacks say when it
 * may not:
 *   on_risk  renewals are unconfirmed and less than half the lease is sure
 *            to be left: the leader pauses (it may still be told it is
 *            safe again, and resume);
 *   on_lost  the lock is gone (deleted, taken over, expired, failover):
 *            the leader stops at once and campaigns again.
 * They run on the client's engine thread: they only set flags here, which
 * the leading loop looks at before each step.
 *
 * Usage: leader [port [name [lease_ms]]]
 *   Redis at 127.0.0.1:port (default 6379), the lock "leader:<name>"
 *   (default "leader:reports"), a watchdog lease of lease_ms (default
 *   30000: renewed every 10 s).  Runs until SIGINT or SIGTERM, then
 *   resigns (unlocks) and exits 0.
 * Build: cc -o leader leader.c $(pkg-config --cflags --libs leasewheel)
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leasewheel.h>

static volatile sig_atomic_t stopping;
static atomic_int lost_reason; /* 0, or why the lock was lost */
static atomic_int at_risk;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)arg;
    atomic_store(&lost_reason, reason);
}

static void risk(const char *name, size_t len, uint64_t owner, int risky, uint64_t left_ms,
                 void *arg)
{
    (void)owner;
    (void)arg;
    atomic_store(&at_risk, risky);
    if (risky)
        printf("%.*s at risk (%" PRIu64 " ms sure): pausing\n", (int)len, name, left_ms);
    else
        printf("%.*s safe again (%" PRIu64 " ms sure): resuming\n", (int)len, name, left_ms);
    fflush(stdout);
}

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* Lead until the lock is lost or we are told to stop. */
static void lead(struct lw_lock *lock, uint64_t token)
{
    unsigned step = 0;
    int reason = 0; /* stays 0 if told to stop before leading a step */

    printf("leading (term %" PRIu64 ")\n", token);
    fflush(stdout);
    while (!stopping && !(reason = atomic_load(&lost_reason))) {
        if (!atomic_load(&at_risk)) /* at risk: do nothing a new leader might undo */
            step++;
        nap_ms(100);
    }
    if (reason) {
        /* The lock is not ours any more: no unlock to send. */
        printf("stepped down after %u steps: lost (%s)\n", step, lw_lost_reason_name(reason));
    } else {
        int rc = lw_unlock(lock);

        printf("resigned after %u steps%s%s\n", step, rc ? ": unlock failed: " : "",
               rc ? lw_strerror(rc) : "");
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *who = argc > 2 ? argv[2] : "reports";
    struct lw_client_config cfg;
    struct lw_client *client;
    struct lw_lock *lock;
    char name[256];
    int rc;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(name, sizeof name, "leader:%s", who);
    lw_client_config_init(&cfg);
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    if (argc > 3)
        cfg.watchdog_timeout_ms = (uint32_t)strtoul(argv[3], NULL, 10);
    cfg.on_lost = lost;
    cfg.on_risk = risk;
    if ((rc = lw_client_new(&cfg, &client)) ||
        (rc = lw_lock_new(client, name, strlen(name), &lock)) ||
        (rc = lw_lock_set_fenced(lock, 1))) { /* its terms: fencing tokens */
        fprintf(stderr, "leader: %s\n", lw_strerror(rc));
        return 1;
    }
    printf("campaigning for %s\n", name);
    while (!stopping) {
        uint64_t token;

        atomic_store(&lost_reason, 0);
        atomic_store(&at_risk, 0);
        /* Wait a second at a time, to notice a signal; lease 0: the watchdog. */
        rc = lw_trylock(lock, 1000, 0, &token);
        if (rc == 0)
            lead(lock, token);
        else if (rc != LW_ELOCKED) { /* Redis unreachable, ...: try again */
            fprintf(stderr, "leader: %s\n", lw_strerror(rc));
            nap_ms(1000);
        }
    }
    lw_lock_free(lock);
    lw_client_free(client);
    return 0;
}
