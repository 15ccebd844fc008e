/*
 * docs/examples/leader.c - leader election (<leasewheel/election.h>): a
 * process leads while it is elected, and steps down as soon as it may not.
 *
 * Run several of these with the same name: one leads, the others wait to
 * take over, and when the leader stops (or dies, and its lease runs out)
 * one of them does.  Each campaigns with its pid as its value, which
 * `lwlock --observe leader:reports` shows with the term.  The leader's
 * work here is a counter it bumps every 100 ms; a real leader would pass
 * the term (which grows with every new one) to whatever it writes, so
 * that a store can refuse a deposed leader's late writes, and check
 * lw_election_sure_until() before each side effect, as lead() does.
 *
 * Stepping down.  The watchdog renews the leadership; two callbacks say
 * when it may not:
 *   on_risk  renewals are unconfirmed and less than half the lease is sure
 *            to be left: the leader pauses (it may still be told it is
 *            safe again, and resume);
 *   on_lost  leadership is gone (deleted, taken over, expired, failover):
 *            the leader stops at once and campaigns again.
 * They run on the client's engine thread: they only set flags here, which
 * the leading loop looks at before each step.
 *
 * Usage: leader [port [name [lease_ms]]]
 *   Redis at 127.0.0.1:port (default 6379), the election "leader:<name>"
 *   (default "leader:reports"), a watchdog lease of lease_ms (default
 *   30000: renewed every 10 s).  Runs until SIGINT or SIGTERM, then
 *   resigns and exits 0.
 * Build: cc -o leader leader.c $(pkg-config --cflags --libs leasewheel)
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Lead until leadership is lost or we are told to stop. */
static void lead(struct lw_election *e, uint64_t term)
{
    unsigned step = 0;
    int reason = 0; /* stays 0 if told to stop before leading a step */

    printf("leading (term %" PRIu64 ")\n", term);
    fflush(stdout);
    while (!stopping && !(reason = atomic_load(&lost_reason))) {
        /* At risk, or not sure to lead: do nothing a new leader might
         * undo. */
        if (!atomic_load(&at_risk) && lw_clock_now() < lw_election_sure_until(e))
            step++;
        nap_ms(100);
    }
    if (reason) {
        /* Not leading any more: no resign to send. */
        printf("stepped down after %u steps: lost (%s)\n", step, lw_lost_reason_name(reason));
    } else {
        int rc = lw_election_resign(e); /* the work stopped first */

        printf("resigned after %u steps%s%s\n", step, rc ? ": resign failed: " : "",
               rc ? lw_strerror(rc) : "");
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *who = argc > 2 ? argv[2] : "reports";
    struct lw_client_config cfg;
    struct lw_client *client;
    struct lw_election *e;
    char name[256], value[32];
    int rc;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(name, sizeof name, "leader:%s", who);
    snprintf(value, sizeof value, "pid %ld", (long)getpid());
    lw_client_config_init(&cfg);
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    if (argc > 3)
        cfg.watchdog_timeout_ms = (uint32_t)strtoul(argv[3], NULL, 10);
    cfg.on_lost = lost;
    cfg.on_risk = risk;
    if ((rc = lw_client_new(&cfg, &client)) ||
        (rc = lw_election_new(client, name, strlen(name), &e))) {
        fprintf(stderr, "leader: %s\n", lw_strerror(rc));
        return 1;
    }
    printf("campaigning for %s\n", name);
    while (!stopping) {
        uint64_t term;

        atomic_store(&lost_reason, 0);
        atomic_store(&at_risk, 0);
        /* Wait a second at a time, to notice a signal. */
        rc = lw_election_campaign(e, value, strlen(value), 1000, &term);
        if (rc == 0)
            lead(e, term);
        else if (rc != LW_ELOCKED) { /* Redis unreachable, ...: try again */
            fprintf(stderr, "leader: %s\n", lw_strerror(rc));
            nap_ms(1000);
        }
    }
    lw_election_free(e);
    lw_client_free(client);
    return 0;
}
