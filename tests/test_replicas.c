/*
 * test_replicas.c - first acquires acknowledged by replicas
 * (acquire_replicas, WAIT on the side lane): a master and a replica of
 * it, both private servers (tests/fixtures/redis_server.h).  The replica is
 * cut off with SIGSTOP, which WAIT cannot tell from a replica that is slow
 * or far away.  Read, write and permit acquires wait as a lock's do.
 *
 * Built twice, as test_lock is: with every client on the caller's loop
 * too (LW_TEST_EMBEDDED, see lock_util.h).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "lock_util.h"

static struct redis_server rep; /* srv (lock_util.h) is the master */

#define WAIT_MS 600u

static int link_up(void)
{
    redisReply *r = redis_server_command(&rep, "INFO replication");
    int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");

    if (r)
        freeReplyObject(r);
    return up;
}

/* The replica is in step: a write of ours, on one connection, then WAIT
 * for it (5 s at most).  "master_link_status:up" comes earlier: until its
 * first acknowledgement, a fresh replica counts for no WAIT. */
static int replica_in_step(void)
{
    struct timeval tv = {5, 0};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
    redisReply *r;
    int ok = 0;

    if (!rc || rc->err) {
        if (rc)
            redisFree(rc);
        return 0;
    }
    redisSetTimeout(rc, (struct timeval){6, 0});
    if ((r = redisCommand(rc, "SET replicas:fixture 1")))
        freeReplyObject(r);
    if ((r = redisCommand(rc, "WAIT 1 5000"))) {
        ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
    }
    redisFree(rc);
    return ok;
}

static void pair_start(void)
{
    redisReply *r;

    server_start();
    cr_assert_eq(redis_server_start(&rep, NULL), 0, "the replica did not start");
    /* A full sync at once, not after Redis's default 5 s delay. */
    r = redis_server_command(&srv, "CONFIG SET repl-diskless-sync-delay 0");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redis_server_command(&rep, "REPLICAOF 127.0.0.1 %d", srv.port);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "REPLICAOF refused");
    freeReplyObject(r);
    cr_assert(wait_until(link_up(), 10000), "the replica never caught up");
    cr_assert(replica_in_step(), "the replica never acknowledged");
}

static void pair_stop(void)
{
    redis_server_stop(&rep);
    server_stop();
}

#define PAIR_TEST(name) Test(replicas, name, .init = pair_start, .fini = pair_stop, .timeout = 120)

static struct lw_client *replicas_client(uint32_t lease_ms, uint32_t replicas,
                                         struct lost_log *log)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    client_config(&cfg, lease_ms, log);
    cfg.acquire_replicas = replicas;
    cfg.acquire_replicas_timeout_ms = WAIT_MS;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    return c;
}

static long long on_replica(const char *fmt, const char *arg)
{
    redisReply *r = redis_server_command(&rep, fmt, arg);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1000;

    if (r)
        freeReplyObject(r);
    return v;
}

static struct lw_client_stats stats_of(struct lw_client *c)
{
    struct lw_client_stats s;

    lw_client_get_stats(c, &s);
    return s;
}

Test(replicas, config_is_checked)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    lw_client_config_init(&cfg);
    cr_assert_eq(cfg.acquire_replicas, 0);
    cr_assert_eq(cfg.acquire_replicas_timeout_ms, LW_DEFAULT_REPLICAS_TIMEOUT_MS);
    cfg.port = 1; /* never reached: the config is refused first */
    cfg.acquire_replicas = LW_MAX_ACQUIRE_REPLICAS + 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    cfg.acquire_replicas = 1;
    cfg.acquire_replicas_timeout_ms = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    cfg.acquire_replicas_timeout_ms = LW_MAX_TIMEOUT_MS + 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    cfg.acquire_replicas = 0; /* off: its timeout is not looked at */
    cfg.host = "leasewheel.invalid";
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ENOHOST);
}

/* (a) The replica is up: the acquire returns once it has the key. */
PAIR_TEST(acquire_is_on_the_replica_when_it_returns)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l = new_lock(c, "rep-a");
    uint64_t token = 0;
    int rc = lw_lock_set_fenced(l, 1);

    rc = rc ? rc : lw_lock_acquire(l, &token);

    cr_assert_eq(rc, 0, "%s", lw_strerror(rc));
    cr_assert_gt(token, 0);
    /* No wait: WAIT said the replica has it. */
    cr_assert_eq(on_replica("EXISTS %s", "rep-a"), 1, "the acquire is not on the replica");
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(stats_of(c).replicas_refused, 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* What the WAIT adds to an acquire with the replica up (logged only: a
 * shared machine's timings are no assertion). */
PAIR_TEST(acquire_time_with_and_without_replicas)
{
    enum { ROUNDS = 200 };
    double us[2];

    for (int with = 0; with < 2; with++) {
        struct lw_client *c = replicas_client(5000, (uint32_t)with, NULL);
        struct lw_lock *l = new_lock(c, "rep-time");
        uint64_t t0, total = 0;

        cr_assert_eq(lw_is_locked(l), 0);
        for (int i = 0; i < ROUNDS; i++) {
            t0 = lw_clock_now();
            cr_assert_eq(lw_lock_acquire(l, NULL), 0);
            total += lw_clock_now() - t0;
            cr_assert_eq(lw_unlock(l), 0);
        }
        us[with] = (double)total / ROUNDS / 1000.0;
        lw_lock_free(l);
        cr_assert_eq(lw_client_free(c), 0);
    }
    cr_log_info("acquire, mean of %d: %.0f us without replicas, %.0f us with acquire_replicas 1",
                ROUNDS, us[0], us[1]);
}

/* (b) The replica is cut off: the acquire fails after about the WAIT
 * timeout, and gives its hold back. */
PAIR_TEST(too_few_replicas_gives_the_hold_back)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l = new_lock(c, "rep-b");
    uint64_t t0, took;

    cr_assert_eq(lw_is_locked(l), 0); /* connected */
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    cr_assert_eq(lw_lock_acquire(l, NULL), LW_EREPLICAS);
    took = now_ms() - t0;
    cr_log_info("refused after %llu ms (WAIT timeout %u ms)", (unsigned long long)took, WAIT_MS);
    cr_assert_geq(took, WAIT_MS - 20);
    cr_assert_lt(took, WAIT_MS + 1000);
    cr_assert_eq(redis_int("EXISTS %s", "rep-b"), 0, "the hold was not given back");
    cr_assert_eq(stats_of(c).replicas_refused, 1);
    cr_assert_eq(stats_of(c).locks_held, 0);
    /* The same with a try-lock and an explicit lease. */
    cr_assert_eq(lw_trylock(l, 100, 2000, NULL), LW_EREPLICAS);
    cr_assert_eq(redis_int("EXISTS %s", "rep-b"), 0);
    cr_assert_eq(redis_server_signal(&rep, SIGCONT), 0);
    cr_assert(wait_until(link_up(), 10000));
    cr_assert(replica_in_step());
    cr_assert_eq(lw_lock_acquire(l, NULL), 0, "not acknowledged once the replica is back");
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(stats_of(c).replicas_refused, 2);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Many acquires at once while the replica is cut off share their WAITs:
 * they fail together after about one or two timeouts, not one timeout
 * after another. */
PAIR_TEST(acquires_waiting_together_share_a_wait)
{
    enum { N = 12 };
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l[N];
    struct outcome o[N];
    char name[32];
    uint64_t t0, took;

    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "rep-many-%d", i);
        l[i] = new_lock(c, name);
        tally_init(&o[i].tally);
    }
    cr_assert_eq(lw_is_locked(l[0]), 0);
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    for (int i = 0; i < N; i++) {
        cr_assert_eq(lw_acquire_async(l[i], 7, 0, 0, on_outcome, &o[i]), 0);
        if (i == N / 2)
            sleep_ms(WAIT_MS / 3); /* some come while the first WAIT blocks */
    }
    for (int i = 0; i < N; i++) {
        cr_assert_eq(tally_wait(&o[i].tally, 1, 10000), 1);
        cr_assert_eq(atomic_load(&o[i].err), LW_EREPLICAS);
    }
    took = now_ms() - t0;
    cr_log_info("%d acquires refused in %llu ms (WAIT timeout %u ms)", N,
                (unsigned long long)took, WAIT_MS);
    cr_assert_lt(took, 3 * WAIT_MS + 500, "the WAITs were not shared");
    cr_assert_eq(stats_of(c).replicas_refused, N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "rep-many-%d", i);
        cr_assert_eq(redis_int("EXISTS %s", name), 0);
        lw_lock_free(l[i]);
    }
    redis_server_signal(&rep, SIGCONT);
    cr_assert_eq(lw_client_free(c), 0);
}

struct blocked_acquire {
    struct lw_lock *lock;
    _Atomic int rc;
    _Atomic int done;
};

/* The id of the client blocked in WAIT on the master, or 0.  Blocked
 * (flags=b) now: cmd= names a client's last command, so the side
 * connection says cmd=wait from its previous acquire on, blocked or not. */
static long long waiting_client(void)
{
    redisReply *r = redis_server_command(&srv, "CLIENT LIST");
    long long id = 0;
    char *line, *save = NULL;

    for (line = r && r->type == REDIS_REPLY_STRING ? strtok_r(r->str, "\n", &save) : NULL;
         line; line = strtok_r(NULL, "\n", &save))
        if (strstr(line, " flags=b ") && strstr(line, " cmd=wait ") && !strncmp(line, "id=", 3))
            id = atoll(line + 3);
    if (r)
        freeReplyObject(r);
    return id;
}

static void *acquire_thread(void *arg)
{
    struct blocked_acquire *b = arg;

    atomic_store(&b->rc, lw_lock_acquire(b->lock, NULL));
    atomic_store(&b->done, 1);
    return NULL;
}

/* (c) While a WAIT blocks the side lane, the main connection is free:
 * renewals of the locks held go out on time, and a query answers at once. */
PAIR_TEST(a_blocked_wait_holds_no_renewal_up)
{
    enum { HELD = 50 };
    struct lost_log log;
    struct lw_client *c = replicas_client(300, 1, &log); /* renewals every 100 ms */
    struct lw_lock *held[HELD], *probe;
    struct blocked_acquire b = {0};
    struct lw_client_stats before, after;
    uint64_t worst_ns = 0, renewed;
    pthread_t t;
    char name[32];

    for (int i = 0; i < HELD; i++) {
        snprintf(name, sizeof name, "rep-held-%d", i);
        held[i] = new_lock(c, name);
        int rc = lw_acquire(held[i], 100 + (uint64_t)i, 0, 0, NULL);

        cr_assert_eq(rc, 0, "%s", lw_strerror(rc));
    }
    probe = new_lock(c, "rep-probe");
    b.lock = new_lock(c, "rep-blocked");
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    before = stats_of(c);
    cr_assert_eq(pthread_create(&t, NULL, acquire_thread, &b), 0);
    /* Its WAIT is out (or, on a slow day, over already). */
    cr_assert(wait_until(waiting_client() != 0 || atomic_load(&b.done), 5000), "no WAIT seen");
    while (!atomic_load(&b.done)) {
        uint64_t t0 = lw_clock_now();

        cr_assert_eq(lw_is_locked(probe), 0);
        if (lw_clock_now() - t0 > worst_ns)
            worst_ns = lw_clock_now() - t0;
        sleep_ms(10);
    }
    pthread_join(t, NULL);
    after = stats_of(c);
    renewed = after.renewals_confirmed - before.renewals_confirmed;
    cr_log_info("during a %u ms WAIT: worst query %.2f ms, %llu renewals confirmed, "
                "worst renewal lag %.2f ms",
                WAIT_MS, worst_ns / 1e6,
                (unsigned long long)renewed, after.worst_renewal_lag_ns / 1e6);
    cr_assert_eq(atomic_load(&b.rc), LW_EREPLICAS, "%s", lw_errname(atomic_load(&b.rc)));
    cr_assert_lt(worst_ns, WAIT_MS * 1000000ull / 4, "a query waited behind the WAIT");
    cr_assert_lt(after.worst_renewal_lag_ns, WAIT_MS * 1000000ull / 4,
                 "renewals waited behind the WAIT");
    cr_assert_geq(renewed, HELD * 3, "renewals did not go on while the WAIT blocked");
    cr_assert_eq(atomic_load(&log.count), 0, "a lock was lost");
    redis_server_signal(&rep, SIGCONT);
    for (int i = 0; i < HELD; i++) {
        cr_assert_eq(lw_unlock_owner(held[i], 100 + (uint64_t)i), 0);
        lw_lock_free(held[i]);
    }
    lw_lock_free(probe);
    lw_lock_free(b.lock);
    cr_assert_eq(lw_client_free(c), 0);
}

/* (d) A re-entry adds to a hold that waited already: it does not wait. */
PAIR_TEST(reentry_does_not_wait)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l = new_lock(c, "rep-d");
    uint64_t token = 0, again = 0, t0, took;

    cr_assert_eq(lw_lock_acquire(l, &token), 0);
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    cr_assert_eq(lw_lock_acquire(l, &again), 0);
    took = now_ms() - t0;
    cr_log_info("re-entry with the replica cut off: %llu ms", (unsigned long long)took);
    cr_assert_lt(took, WAIT_MS / 2, "the re-entry waited for the replica");
    cr_assert_eq(again, token);
    cr_assert_eq(lw_hold_count(l), 2);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_hold_count(l), 1);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(stats_of(c).replicas_refused, 0);
    redis_server_signal(&rep, SIGCONT);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

static void *unlock_later(void *arg)
{
    sleep_ms(200);
    cr_assert_eq(lw_unlock_owner(arg, 1), 0);
    return NULL;
}

/* A try-lock that waits for another owner's unlock, then for the replica. */
PAIR_TEST(trylock_waits_for_the_holder_then_the_replica)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l = new_lock(c, "rep-try");
    pthread_t t;

    cr_assert_eq(lw_acquire(l, 1, 0, 0, NULL), 0);
    cr_assert_eq(pthread_create(&t, NULL, unlock_later, l), 0);
    cr_assert_eq(lw_trylock(l, 5000, 0, NULL), 0);
    pthread_join(t, NULL);
    cr_assert_eq(on_replica("EXISTS %s", "rep-try"), 1);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Two replicas asked for, one there: never enough. */
PAIR_TEST(more_replicas_than_there_are_is_refused)
{
    struct lw_client *c = replicas_client(5000, 2, NULL);
    struct lw_lock *l = new_lock(c, "rep-two");
    struct outcome o;

    tally_init(&o.tally);
    cr_assert_eq(lw_acquire_async(l, 3, 0, 0, on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 10000), 1);
    cr_assert_eq(atomic_load(&o.err), LW_EREPLICAS);
    cr_assert_eq(redis_int("EXISTS %s", "rep-two"), 0);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Freeing the client while acquires wait for replicas ends them. */
PAIR_TEST(free_while_waiting_for_replicas)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *l = new_lock(c, "rep-free");
    struct outcome o[4];

    cr_assert_eq(lw_is_locked(l), 0);
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    for (int i = 0; i < 4; i++) {
        tally_init(&o[i].tally);
        cr_assert_eq(lw_acquire_async(l, 10 + (uint64_t)i, 0, 0, on_outcome, &o[i]), 0);
    }
    /* An acquire waits for the replica (the replica stopped: for ever). */
    cr_assert(wait_until(waiting_client() != 0, 5000), "no WAIT seen");
    cr_assert_eq(lw_client_free(c), 0);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(tally_wait(&o[i].tally, 1, 1000), 1);
        cr_assert_neq(atomic_load(&o[i].err), 0);
    }
    redis_server_signal(&rep, SIGCONT);
    lw_lock_free(l);
}

/* The side connection is lost under a blocked WAIT: the acquire is not
 * acknowledged (and given back) at once, and the next one connects again. */
PAIR_TEST(side_connection_lost_under_wait)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct blocked_acquire b = {0};
    long long id = 0;
    redisReply *r;
    pthread_t t;
    uint64_t t0;

    b.lock = new_lock(c, "rep-kill");
    cr_assert_eq(lw_lock_acquire(b.lock, NULL), 0); /* the side connection is up */
    cr_assert_eq(lw_unlock(b.lock), 0);
    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    cr_assert_eq(pthread_create(&t, NULL, acquire_thread, &b), 0);
    cr_assert(wait_until((id = waiting_client()) != 0, WAIT_MS / 2), "no WAIT seen");
    r = redis_server_command(&srv, "CLIENT KILL ID %lld", id);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    pthread_join(t, NULL);
    cr_log_info("refused %llu ms after the acquire began", (unsigned long long)(now_ms() - t0));
    cr_assert_eq(atomic_load(&b.rc), LW_EREPLICAS, "%s", lw_errname(atomic_load(&b.rc)));
    cr_assert_eq(redis_int("EXISTS %s", "rep-kill"), 0, "the hold was not given back");
    cr_assert_eq(redis_server_signal(&rep, SIGCONT), 0);
    cr_assert(replica_in_step());
    cr_assert_eq(lw_lock_acquire(b.lock, NULL), 0, "the side connection did not come back");
    cr_assert_eq(lw_unlock(b.lock), 0);
    lw_lock_free(b.lock);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A read or write lock's handle, or a semaphore's, named name. */
static struct lw_lock *rw_handle(struct lw_client *c, const char *name, int write)
{
    struct lw_lock *l = NULL;

    if (write)
        cr_assert_eq(lw_write_lock_new(c, name, strlen(name), &l), 0);
    else
        cr_assert_eq(lw_read_lock_new(c, name, strlen(name), &l), 0);
    return l;
}

/* Read and write acquires wait for the replica as a lock's do: with it
 * up, what they wrote is on it when they return; with it cut off, they
 * fail with LW_EREPLICAS after the WAIT and leave nothing on the master. */
PAIR_TEST(read_and_write_acquires_wait_for_the_replica)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_lock *w = rw_handle(c, "rep-w", 1), *r = rw_handle(c, "rep-r", 0);
    struct lw_lock *w2 = rw_handle(c, "rep-w2", 1), *r2 = rw_handle(c, "rep-r2", 0);
    char key[160];
    uint64_t token = 0, t0;
    int rc;

    cr_assert_eq(lw_lock_set_fenced(w, 1), 0);
    cr_assert_eq(rc = lw_lock_acquire(w, &token), 0, "%s", lw_strerror(rc));
    cr_assert_gt(token, 0);
    cr_assert_eq(on_replica("EXISTS %s", "rep-w"), 1, "the write acquire is not on the replica");
    cr_assert_eq(rc = lw_lock_acquire(r, NULL), 0, "%s", lw_strerror(rc));
    snprintf(key, sizeof key, "{rep-r}:%s:%llu:rwlock_timeout:1", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    cr_assert_eq(on_replica("EXISTS %s", key), 1, "the read hold's key is not on the replica");
    cr_assert_eq(lw_unlock(w), 0);
    cr_assert_eq(lw_unlock(r), 0);

    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    cr_assert_eq(rc = lw_lock_acquire(w2, NULL), LW_EREPLICAS, "%s", lw_strerror(rc));
    cr_assert_geq(now_ms() - t0, WAIT_MS - 20);
    cr_assert_eq(redis_int("EXISTS %s", "rep-w2"), 0, "the write hold was not given back");
    cr_assert_eq(rc = lw_trylock(r2, 100, 0, NULL), LW_EREPLICAS, "%s", lw_strerror(rc));
    cr_assert_eq(redis_int("EXISTS %s", "rep-r2"), 0, "the read hold was not given back");
    cr_assert_eq(stats_of(c).replicas_refused, 2);
    cr_assert_eq(stats_of(c).locks_held, 0);
    cr_assert_eq(redis_server_signal(&rep, SIGCONT), 0);
    lw_lock_free(w);
    lw_lock_free(r);
    lw_lock_free(w2);
    lw_lock_free(r2);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A permit acquire waits for the replica too: its permit is on the
 * replica when it returns; with the replica cut off it fails with
 * LW_EREPLICAS and its permits are given back. */
PAIR_TEST(permit_acquire_waits_for_the_replica)
{
    struct lw_client *c = replicas_client(5000, 1, NULL);
    struct lw_semaphore *sem = NULL;
    struct lw_permit p[2];
    int64_t n = -1;
    uint64_t t0;
    int rc;

    cr_assert_eq(lw_semaphore_new(c, "rep-s", 5, &sem), 0);
    cr_assert_eq(lw_semaphore_try_set(sem, 3), 1);
    cr_assert_eq(rc = lw_permit_acquire(sem, 1, 0, 0, p), 0, "%s", lw_strerror(rc));
    cr_assert_eq(on_replica("ZCARD %s", "{rep-s}:timeout"), 1,
                 "the permit is not on the replica");

    cr_assert_eq(redis_server_signal(&rep, SIGSTOP), 0);
    t0 = now_ms();
    cr_assert_eq(rc = lw_permit_acquire(sem, 2, 0, 2000, p), LW_EREPLICAS, "%s",
                 lw_strerror(rc));
    cr_assert_geq(now_ms() - t0, WAIT_MS - 20);
    cr_assert_eq(redis_int("ZCARD %s", "{rep-s}:timeout"), 1, "the permits were not given back");
    cr_assert_eq(lw_semaphore_available(sem, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(stats_of(c).replicas_refused, 1);
    cr_assert_eq(stats_of(c).locks_held, 1, "the first permit, renewed");
    cr_assert_eq(redis_server_signal(&rep, SIGCONT), 0);
    lw_semaphore_free(sem);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A fair lock's waiter answered after its wait was over (the master's
 * writes paused) leaves the queue its late acquire joined, on the side
 * lane its acquires take: the queue is empty once the call returns and
 * the leave has run. */
PAIR_TEST(a_fair_waiter_answered_late_leaves_the_queue)
{
    struct lw_client_config cfg;
    struct lw_client *holder = NULL, *c = replicas_client(5000, 1, NULL);
    struct lw_lock *held = NULL, *l = NULL;
    redisReply *r;

    client_config(&cfg, 5000, NULL);
    cr_assert_eq(lw_client_new(&cfg, &holder), 0);
    cr_assert_eq(lw_fair_lock_new(holder, "rep-f", 5, &held), 0);
    cr_assert_eq(lw_fair_lock_new(c, "rep-f", 5, &l), 0);
    cr_assert_eq(lw_acquire(held, 1, 0, 0, NULL), 0);
    r = redis_server_command(&srv, "CLIENT PAUSE 1000 WRITE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
    freeReplyObject(r);
    cr_assert_neq(lw_acquire(l, 1, 200, 0, NULL), 0);
    cr_assert(wait_until(redis_int("LLEN %s", "redisson_lock_queue:{rep-f}") == 0, 2000),
              "the late waiter stays in the queue");
    cr_assert_eq(lw_unlock_owner(held, 1), 0);
    lw_lock_free(l);
    lw_lock_free(held);
    cr_assert_eq(lw_client_free(c), 0);
    cr_assert_eq(lw_client_free(holder), 0);
}
