/*
 * tests/test_clock_seams.c - the two time faults no client's clock can
 * show, through the clock shim (tests/support/clockshim.h): a host that
 * slept, and a step of Redis's own clock.
 *
 * A host that slept.  A suspend stops CLOCK_MONOTONIC but not
 * CLOCK_BOOTTIME; a real one cannot run here.  lwlock holds a lock with
 * its COMMAND running; both are stopped (SIGSTOP) for longer than the
 * lease, so that the lease runs out in Redis, and lwlock is then given a
 * CLOCK_MONOTONIC that lags by the time stopped, as after a suspend, and
 * woken.  It must learn at once, before any renewal goes out, that its
 * lease is gone: it signals COMMAND within a tick or so, the loss says
 * "expired" (a renewal sent first would have found the key gone: "not
 * owner", what a client timed by CLOCK_MONOTONIC said a renewal period
 * later), and its log says the host slept.
 *
 * A step of Redis's clock.  redis-server runs under the shim, its wall
 * clock (TIME, key expiry) moved at run time.  A step ahead ends every
 * lease early, which no client can prevent; the client must notice it
 * from the next renewal's answer and report every lease on that node at
 * risk, or lost when the step may have ended it, and never believe a
 * lease whose key is gone.  A step back, and no step at all, report
 * nothing.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "clockshim.h"
#include "lock_util.h"
#include "proc_util.h"

static struct clockshim cs;

/* ---- A host that slept (lwlock) ---- */

static void setup_sleep(void)
{
    char path[300];

    server_start();
    make_test_dir("/tmp/lw-sleep-XXXXXX");
    cr_assert_eq(clockshim_create(&cs, path_in_dir("clock", path, sizeof path)), 0);
}

static void teardown_sleep(void)
{
    clockshim_destroy(&cs);
    remove_test_dir();
    server_stop();
}

/* The pid COMMAND wrote to "pid", once it did (bounded). */
static pid_t command_pid(void)
{
    char buf[32];

    cr_assert(wait_until(atoi(slurp("pid", buf, sizeof buf)) > 0, 5000), "COMMAND never ran");
    return (pid_t)atoi(buf);
}

/* lwlock (3 s lease, a 100 ms tick) holds "slept"; it and its COMMAND are
 * stopped 4 s, then woken as after a suspend of that long. */
Test(clock_seams, lwlock_learns_at_waking_that_its_lease_ran_out_while_the_host_slept,
     .init = setup_sleep, .fini = teardown_sleep, .timeout = 60)
{
    char port[16], preload[600], file[600], err[4096];
    const char *env[] = {preload, file, NULL};
    pid_t lwlock, command;
    uint64_t stopped, woken, ended;
    int code;

    snprintf(port, sizeof port, "127.0.0.1:%d", srv.port);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", CLOCKSHIM_PATH);
    snprintf(file, sizeof file, "%s=%s", CLOCKSHIM_ENV, cs.path);
    lwlock = start_child(LWLOCK_PATH,
                         ARGS("-v", "-r", port, "-W", "3s", "slept", "sh", "-c",
                              "echo $$ > pid; trap 'exit 0' TERM; "
                              "while :; do sleep 0.02; done"),
                         env, "out", "err");
    command = command_pid();
    cr_assert_eq(redis_int("EXISTS %s", "slept"), 1);

    cr_assert_eq(kill(lwlock, SIGSTOP), 0);
    cr_assert_eq(kill(command, SIGSTOP), 0);
    stopped = lw_clock_now();
    sleep_ms(4000); /* past the lease: Redis lets the key go */
    cr_assert(wait_until(redis_int("EXISTS %s", "slept") == 0, 2000), "the key outlived its lease");
    /* Its monotonic clock stood still meanwhile, as in a suspend. */
    clockshim_set_lag(&cs, lwlock, (int64_t)(lw_clock_now() - stopped));
    woken = lw_clock_now();
    cr_assert_eq(kill(command, SIGCONT), 0);
    cr_assert_eq(kill(lwlock, SIGCONT), 0);

    code = wait_child(lwlock, 10000);
    ended = lw_clock_now();
    slurp("err", err, sizeof err);
    fprintf(stderr, "clock_seams: lwlock told COMMAND and exited %.0f ms after waking\n",
            (double)(ended - woken) / 1e6);
    cr_assert_eq(code, 79, "lwlock exited %d:\n%s", code, err);
    cr_assert(strstr(err, "lost (expired)"), "not lost as expired at waking:\n%s", err);
    cr_assert(strstr(err, "the host slept"), "the sleep went unsaid:\n%s", err);
    /* A tick (100 ms), COMMAND's trap (a 20 ms sleep), and room. */
    cr_assert_lt(ended - woken, 1000000000u, "told %.0f ms after waking",
                 (double)(ended - woken) / 1e6);
    waitpid(command, NULL, WNOHANG);
}

/* ---- A step of Redis's clock ---- */

#define NLOCKS 40
#define LEASE_MS 3000
/* Under the lease: renewed every second, a lease has 2 to 3 s left when
 * the step comes; about half end with it, the rest shorten. */
#define STEP_MS 2500

static void setup_stepped(void)
{
    char path[300];

    make_test_dir("/tmp/lw-redisclock-XXXXXX");
    cr_assert_eq(clockshim_create(&cs, path_in_dir("clock", path, sizeof path)), 0);
    cr_assert_eq(clockshim_env_set(CLOCKSHIM_PATH, cs.path), 0);
    server_start(); /* it inherits the shim */
    clockshim_env_unset();
}

static void teardown_stepped(void)
{
    server_stop();
    clockshim_destroy(&cs);
    remove_test_dir();
}

/* What the holder was told, per lock ("rc:<i>"). */
struct told {
    _Atomic int lost[NLOCKS];
    _Atomic int reason[NLOCKS];
    _Atomic int risk[NLOCKS];
    _Atomic uint64_t lost_at[NLOCKS];
};

static int lock_index(const struct lw_lease *lease)
{
    int i = lease->len > 3 ? atoi(lease->name + 3) : -1;

    return i >= 0 && i < NLOCKS ? i : -1;
}

static void told_lost(const struct lw_lease *lease, int reason, void *arg)
{
    struct told *t = arg;
    int i = lock_index(lease);

    if (i < 0)
        return;
    atomic_store(&t->reason[i], reason);
    atomic_store(&t->lost_at[i], lw_clock_now());
    atomic_fetch_add(&t->lost[i], 1);
}

static void told_risk(const struct lw_lease *lease, int at_risk, uint64_t left_ms, void *arg)
{
    struct told *t = arg;
    int i = lock_index(lease);

    (void)left_ms;
    if (i >= 0 && at_risk)
        atomic_fetch_add(&t->risk[i], 1);
}

static uint64_t clock_jumps(struct lw_client *c)
{
    struct lw_client_stats st;

    lw_client_get_stats(c, &st);
    return st.redis_clock_jumps;
}

/*
 * 40 locks held with a 3 s lease, their renewals spread over the period
 * (in runs: a renewal answered twice a second or more).  For a second:
 * no step, nothing said.  Then Redis's clock steps 2.5 s ahead: the
 * holder notices it from the next renewal's answer, once; each lock it
 * still believes it holds is its own in Redis; every lease the step ended
 * (some taken meanwhile by another client, trying each name) is reported
 * lost, as expired or, when its own renewal answered first, not owner:
 * until the first answer after the step, the holder cannot know, and
 * another client may be inside already (docs/reliability.md); the rest were at risk and renewed at once, but those
 * whose renewal was on the wire then, which ran after the step.  Then the
 * clock steps back: nothing more is said.
 */
Test(clock_seams, a_step_of_redis_clock_is_noticed_and_no_lease_outlives_its_key,
     .init = setup_stepped, .fini = teardown_stepped, .timeout = 60)
{
    struct lw_client_config cfg;
    struct lw_client *holder = NULL, *asker;
    struct lw_lock *mine[NLOCKS], *theirs[NLOCKS];
    struct told t = {0};
    uint64_t stepped, noticed = 0, until;
    int lost = 0, held = 0, said_risk = 0, taken = 0, got[NLOCKS] = {0};

    client_config(&cfg, LEASE_MS, NULL);
    cfg.on_lease_lost = told_lost;
    cfg.lease_lost_arg = &t;
    cfg.on_lease_risk = told_risk;
    cfg.lease_risk_arg = &t;
    cr_assert_eq(lw_client_new(&cfg, &holder), 0);
    asker = new_client(LEASE_MS, NULL);
    for (int i = 0; i < NLOCKS; i++) {
        char name[16];

        snprintf(name, sizeof name, "rc:%d", i);
        mine[i] = new_lock(holder, name);
        theirs[i] = new_lock(asker, name);
        cr_assert_eq(lw_acquire(mine[i], 1, 0, 0, NULL), 0);
    }
    sleep_ms(1000);
    cr_assert_eq(clock_jumps(holder), 0, "a step seen where there was none");

    clockshim_set_offset(&cs, (int64_t)STEP_MS * 1000000);
    stepped = lw_clock_now();
    /* Another client takes what the step freed, while the holder learns. */
    until = stepped + 1500000000u;
    while (lw_clock_now() < until) {
        for (int i = 0; i < NLOCKS; i++)
            if (!got[i] && lw_acquire(theirs[i], 2, 0, 0, NULL) == 0)
                got[i] = 1, taken++;
        if (!noticed && clock_jumps(holder))
            noticed = lw_clock_now();
        sleep_ms(20);
    }
    cr_assert(noticed, "the step went unnoticed");
    fprintf(stderr, "clock_seams: the step noticed %.0f ms after it; %d locks taken by another\n",
            (double)(noticed - stepped) / 1e6, taken);
    /* The first renewal answered after the step tells: half a second at
     * most here (the locks' first renewals come in two runs), and room. */
    cr_assert_lt(noticed - stepped, 1500000000u);
    cr_assert_eq(clock_jumps(holder), 1, "one step, counted once");

    for (int i = 0; i < NLOCKS; i++) {
        char name[16], field[128];
        redisReply *r;
        int ours;

        snprintf(name, sizeof name, "rc:%d", i);
        snprintf(field, sizeof field, "%s:1", lw_client_id(holder));
        r = redis_server_command(&srv, "HEXISTS %s %s", name, field);
        ours = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (atomic_load(&t.lost[i])) {
            lost++;
            /* Expired: the step taken off it; or not owner: its own
             * renewal answered first, the name taken meanwhile. */
            cr_assert(atomic_load(&t.reason[i]) == LW_LOST_EXPIRED ||
                          atomic_load(&t.reason[i]) == LW_LOST_NOT_OWNER,
                      "rc:%d lost for %s", i, lw_lost_reason_name(atomic_load(&t.reason[i])));
            cr_assert_lt(atomic_load(&t.lost_at[i]) - stepped, 1500000000u,
                         "rc:%d told late", i);
        } else {
            held++;
            said_risk += atomic_load(&t.risk[i]) > 0;
            cr_assert(ours, "rc:%d is believed held, but its key is not the holder's", i);
            cr_assert(!got[i], "rc:%d was taken by another, and is believed held", i);
        }
    }
    fprintf(stderr, "clock_seams: %d lost, %d held (%d of them said at risk)\n",
            lost, held, said_risk);
    cr_assert_geq(lost, 1, "the step ended no lease: it proves nothing");
    cr_assert_geq(said_risk, 1, "no lease said at risk");

    clockshim_set_offset(&cs, 0); /* back 2 s: keys last longer, nobody gets in */
    sleep_ms(1500);
    cr_assert_eq(clock_jumps(holder), 1, "a step back said");
    for (int i = 0; i < NLOCKS; i++)
        cr_assert_leq(atomic_load(&t.lost[i]), 1);

    for (int i = 0; i < NLOCKS; i++) {
        lw_lock_free(mine[i]);
        lw_lock_free(theirs[i]);
    }
    cr_assert_eq(lw_client_free(holder), 0);
    cr_assert_eq(lw_client_free(asker), 0);
}
