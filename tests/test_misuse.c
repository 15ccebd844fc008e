/*
 * tests/test_misuse.c - wrong calls and wrong data give error codes, not
 * crashes: unlocking twice or as another owner, freeing a client with
 * locks held and handles still in use, keys of the wrong type, connection
 * errors, running out of memory, a wrong Sentinel configuration.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_util.h"

REDIS_TEST(misuse, unlock_twice)
{
    struct lw_client *c = new_client(30000, NULL);
    struct lw_lock *l = new_lock(c, "twice");
    struct outcome o;

    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    cr_assert_eq(lw_unlock(l), 0);
    cr_assert_eq(lw_unlock(l), LW_ENOTOWNER);
    /* The same through the async call. */
    tally_init(&o.tally);
    cr_assert_eq(lw_unlock_async(l, lw_owner_self(), on_outcome, &o), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 5000), 1);
    cr_assert_eq(atomic_load(&o.err), LW_ENOTOWNER);
    tally_destroy(&o.tally);
    cr_assert_eq(lw_is_locked(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(misuse, unlock_by_another_owner_or_client)
{
    struct lw_client *a = new_client(30000, NULL), *b = new_client(30000, NULL);
    struct lw_lock *la = new_lock(a, "theirs"), *lb = new_lock(b, "theirs");
    uint64_t token = 0;

    cr_assert_eq(lw_acquire(la, 1, 0, 0, &token), 0);
    cr_assert_eq(lw_unlock_owner(la, 2), LW_ENOTOWNER, "another owner, same client");
    cr_assert_eq(lw_unlock_owner(lb, 1), LW_ENOTOWNER, "the same owner id, another client");
    cr_assert_eq(lw_unlock(lb), LW_ENOTOWNER);
    cr_assert_eq(lw_trylock(lb, 0, 0, NULL), LW_ELOCKED, "still held");
    cr_assert_eq(lw_unlock_owner(la, 1), 0);
    lw_lock_free(la);
    lw_lock_free(lb);
    lw_client_free(a);
    lw_client_free(b);
}

REDIS_TEST(misuse, free_client_with_locks_held_then_use_handles)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1000, &lost);
    struct lw_lock *w = new_lock(c, "watched"), *f = new_lock(c, "fixed"), *l = NULL, *fair = NULL;
    struct lw_name_status st;
    int64_t ttl = 0;
    uint64_t token;

    cr_assert_eq(lw_lock_acquire(w, NULL), 0);
    cr_assert_eq(lw_lock_lease(f, 5000, NULL), 0);
    cr_assert_eq(lw_fair_lock_new(c, "fair", 4, &fair), 0);
    cr_assert_eq(lw_client_free(c), 0, "freeing with locks held is allowed");

    /* The handles outlive the client: every call is refused, nothing runs. */
    cr_assert_eq(lw_lock_acquire(w, NULL), LW_ESHUTDOWN);
    cr_assert_eq(lw_trylock(w, 0, 0, &token), LW_ESHUTDOWN);
    cr_assert_eq(lw_unlock(w), LW_ESHUTDOWN);
    cr_assert_eq(lw_is_held(w), LW_ESHUTDOWN);
    cr_assert_eq(lw_remaining_ttl(f, &ttl), LW_ESHUTDOWN);
    cr_assert_eq(lw_force_unlock(f), LW_ESHUTDOWN);
    cr_assert_eq(lw_acquire_async(w, 1, 0, 0, NULL, NULL), LW_ESHUTDOWN);
    cr_assert_eq(lw_unlock_async(w, 1, NULL, NULL), LW_ESHUTDOWN);
    /* Refused before anything is formatted: a fair lock's command reads the
     * engine's pub/sub mode, and a bad lease is not the first thing wrong. */
    cr_assert_eq(lw_is_locked(fair), LW_ESHUTDOWN);
    cr_assert_eq(lw_name_status(fair, &st), LW_ESHUTDOWN);
    cr_assert_eq(lw_trylock(fair, 0, 1, NULL), LW_ESHUTDOWN, "a bad lease, after the client");
    lw_lock_free(fair);
    cr_assert_eq(lw_lock_new(c, "late", 4, &l), LW_ESHUTDOWN);
    cr_assert_null(l);
    cr_assert_eq(lw_client_free(c), LW_ESHUTDOWN, "freed twice");

    /* Not released, not renewed: the watchdog lock expires after its lease,
     * and nobody was told it was lost. */
    cr_assert_eq(redis_int("EXISTS %s", "watched"), 1);
    cr_assert(wait_until(redis_int("EXISTS %s", "watched") == 0, 3000));
    cr_assert_eq(redis_int("EXISTS %s", "fixed"), 1, "the fixed lease runs on");
    cr_assert_eq(atomic_load(&lost.count), 0);
    lw_lock_free(w);
    lw_lock_free(f); /* the last handle: the client's memory goes too */
}

REDIS_TEST(misuse, wrong_type_keys_are_ewrongtype_and_lose_only_their_lock)
{
    struct lost_log lost;
    struct lw_client *c = new_client(1500, &lost);
    struct lw_lock *locks[20];
    char name[16];

    /* A key that holds a string: every call on it says LW_EWRONGTYPE,
     * and Redis's words. */
    freeReplyObject(redis_server_command(&srv, "SET str x"));
    locks[0] = new_lock(c, "str");
    cr_assert_eq(lw_lock_acquire(locks[0], NULL), LW_EWRONGTYPE);
    cr_assert_eq(lw_trylock(locks[0], 0, 5000, NULL), LW_EWRONGTYPE);
    cr_assert_eq(lw_unlock(locks[0]), LW_EWRONGTYPE);
    cr_assert(strncmp(lw_reply_error(), "WRONGTYPE ", 10) == 0, "%s", lw_reply_error());
    cr_assert_eq(lw_is_held(locks[0]), LW_EWRONGTYPE);
    cr_assert_eq(lw_hold_count(locks[0]), LW_EWRONGTYPE);
    cr_assert_eq(lw_is_locked(locks[0]), 1, "EXISTS works on any type");
    lw_lock_free(locks[0]);

    /* Held locks renewed in one batch; one key turns into a list. */
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "wt:%d", i);
        locks[i] = new_lock(c, name);
        cr_assert_eq(lw_lock_acquire(locks[i], NULL), 0);
    }
    freeReplyObject(redis_server_command(&srv, "DEL wt:7"));
    freeReplyObject(redis_server_command(&srv, "RPUSH wt:7 x"));
    cr_assert(wait_until(atomic_load(&lost.count) > 0, 2000));
    sleep_ms(1500); /* a lease: the others are renewed meanwhile */
    cr_assert_eq(atomic_load(&lost.count), 1);
    cr_assert_str_eq(lost.name, "wt:7");
    cr_assert_eq(atomic_load(&lost.reason), LW_LOST_NOT_OWNER);
    for (int i = 0; i < 20; i++) {
        if (i != 7)
            cr_assert_eq(lw_is_held(locks[i]), 1, "wt:%d lost with the bad key", i);
        lw_lock_free(locks[i]);
    }
    lw_client_free(c);
}

/* A client with cfg (300 ms command timeout): its first lock call fails
 * with want. */
static void expect_lock_error(struct lw_client_config *cfg, int want)
{
    struct lw_client *c = NULL;
    struct lw_lock *l;
    int rc;

    cfg->command_timeout_ms = 300;
    cr_assert_eq(lw_client_new(cfg, &c), 0);
    l = new_lock(c, "unreachable");
    rc = lw_lock_acquire(l, NULL);
    cr_assert_eq(rc, want, "%s", lw_errname(rc));
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(misuse, connect_failure_of_another_kind_is_econnect)
{
    struct lw_client_config cfg;
    char path[320];

    /* A unix socket path that does not exist: neither refused nor a host. */
    snprintf(path, sizeof path, "%s/no-such.sock", srv.dir);
    client_config(&cfg, 30000, NULL);
    cfg.unix_path = path;
    expect_lock_error(&cfg, LW_ECONNECT);
}

Test(misuse, unix_path_longer_than_a_socket_address_is_erange)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    char path[LW_UNIX_PATH_MAX + 2];

    /* hiredis would cut it short and connect to another socket. */
    memset(path, 'p', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = 0;
    lw_client_config_init(&cfg);
    cfg.unix_path = path;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE);
    cr_assert_null(c);
}

/* Sentinel mode's configuration: with cluster seeds, no master name, too
 * many sentinels, bad addresses. */
Test(misuse, sentinel_config_is_checked)
{
    static const char *const good[] = {"127.0.0.1:26379"};
    static const char *const bad[] = {"127.0.0.1"};
    static const char *const bad_port[] = {"127.0.0.1:70000"};
    static const char *many[LW_MAX_SENTINELS + 1];
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    lw_client_config_init(&cfg);
    cfg.sentinels = good;
    cfg.nsentinels = 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "no master name");
    cfg.sentinel_master = "";
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "an empty master name");
    cfg.sentinel_master = "mymaster";
    cfg.cluster_seeds = good;
    cfg.cluster_nseeds = 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "with cluster seeds");
    cfg.cluster_seeds = NULL;
    cfg.cluster_nseeds = 0;
    for (unsigned i = 0; i <= LW_MAX_SENTINELS; i++)
        many[i] = good[0];
    cfg.sentinels = many;
    cfg.nsentinels = LW_MAX_SENTINELS + 1;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE, "too many sentinels");
    cfg.nsentinels = 1;
    cfg.sentinels = NULL;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "no list");
    cfg.sentinels = bad;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "no port");
    cfg.sentinels = bad_port;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_ERANGE, "port out of range");
    cfg.sentinels = good;
    cfg.nsentinels = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "a list, but a count of 0");
    cfg.sentinels = NULL;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL, "a master name, no sentinels");
    cr_assert_null(c);
}

/* Sentinel mode where no sentinel listens: the first acquire hears so at
 * once, as with a refused single node. */
Test(misuse, no_sentinel_listening_refuses_at_once)
{
    static const char *const none[] = {"127.0.0.1:1", "127.0.0.1:2"};
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;
    uint64_t t0;
    int rc;

    lw_client_config_init(&cfg);
    cfg.sentinels = none;
    cfg.nsentinels = 2;
    cfg.sentinel_master = "mymaster";
    cfg.reconnect_min_ms = 20;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert_eq(lw_lock_new(c, "x", 1, &l), 0);
    /* A round of refusals (seen once one is; the other follows at once:
     * a refused connect to 127.0.0.1 is immediate). */
    cr_assert(wait_until(lw_client_last_error(c, NULL, 0) == LW_ECONNREFUSED, 5000),
              "no refusal");
    t0 = now_ms();
    rc = lw_trylock(l, 0, 0, NULL);
    cr_assert_eq(rc, LW_ECONNREFUSED, "%s", lw_strerror(rc));
    cr_assert_lt(now_ms() - t0, 1000);
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* Nothing listens, and the next attempt is seconds away: every call
 * hears so at once, not when that attempt fails (an acquire's request,
 * sent from its step on the engine thread, once waited for it). */
Test(misuse, every_call_is_refused_at_once_between_attempts)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l;

    lw_client_config_init(&cfg);
    cfg.port = 1; /* nothing listens on 127.0.0.1:1 */
    cfg.reconnect_min_ms = 3000;
    cfg.reconnect_max_ms = 6000;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert_eq(lw_lock_new(c, "x", 1, &l), 0);
    /* The first attempt refused; the next in 1.5-3 s. */
    cr_assert(wait_until(lw_client_last_error(c, NULL, 0) == LW_ECONNREFUSED, 1000),
              "the first attempt not refused");
    for (int i = 0; i < 6; i++) {
        uint64_t t0 = now_ms();
        int rc = i % 3 == 0   ? lw_lock_acquire(l, NULL)
                 : i % 3 == 1 ? lw_trylock(l, 0, 0, NULL)
                              : lw_trylock(l, 200, 0, NULL);

        cr_assert_eq(rc, LW_ECONNREFUSED, "call %d: %s", i, lw_strerror(rc));
        cr_assert_lt(now_ms() - t0, 1000, "call %d took %llu ms", i,
                     (unsigned long long)(now_ms() - t0));
    }
    lw_lock_free(l);
    cr_assert_eq(lw_client_free(c), 0);
}

/* A database the server does not have, or an ACL user who may not load
 * the scripts: refusals that hold, so the first call fails at once (not
 * at its 30 s command timeout) with lw_client_last_error() in Redis's
 * words, as redis-cli says them. */
static void expect_refusal(struct lw_client_config *cfg, int want, const char *said)
{
    struct lw_client *c = NULL;
    struct lw_lock *l;
    uint64_t t0 = now_ms();
    char why[256];
    int rc;

    cfg->command_timeout_ms = 30000;
    cr_assert_eq(lw_client_new(cfg, &c), 0);
    l = new_lock(c, "refused");
    rc = lw_lock_acquire(l, NULL);
    cr_assert_eq(rc, want, "%s", lw_errname(rc));
    cr_assert_lt(now_ms() - t0, 5000, "took %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert_eq(lw_client_last_error(c, why, sizeof why), want);
    cr_assert(strstr(why, said), "\"%s\" does not say \"%s\"", why, said);
    lw_lock_free(l);
    lw_client_free(c);
}

REDIS_TEST(misuse, a_database_redis_refuses_is_enodb_at_once)
{
    struct lw_client_config cfg;

    client_config(&cfg, 30000, NULL);
    cfg.db = 100; /* the server has 16 */
    expect_refusal(&cfg, LW_ENODB, "SELECT 100: ERR DB index is out of range");
}

REDIS_TEST(misuse, an_acl_user_without_script_load_is_enoperm_at_once)
{
    struct lw_client_config cfg;
    redisReply *r = redis_server_command(&srv, "ACL SETUSER noload on >pw ~* &* +@all "
                                               "-script|load");

    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    client_config(&cfg, 30000, NULL);
    cfg.username = "noload";
    cfg.password = "pw";
    expect_refusal(&cfg, LW_ENOPERM, "SCRIPT LOAD: NOPERM ");
}

/* ---- Out of memory ---- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

/* Take every byte malloc can still give under the address-space limit.
 * Returns the hogs, chained through their first word. */
static void *exhaust_memory(void)
{
    void *hogs = NULL;

    for (size_t size = 1u << 20; size >= 16; size /= 4)
        for (int i = 0; i < 200000; i++) {
            void **p = malloc(size);

            if (!p)
                break;
            *p = hogs;
            hogs = p;
        }
    return hogs;
}

static void free_hogs(void *hogs)
{
    while (hogs) {
        void *next = *(void **)hogs;

        free(hogs);
        hogs = next;
    }
}

/* In a child of the test: a client, then no memory left.  The exit status
 * says which check failed (0: none). */
static int out_of_memory_child(void)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL, *c2 = NULL;
    struct lw_lock *l = NULL, *l2 = NULL;
    struct rlimit lim;
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    void *hogs;
    int rc = 0;

    client_config(&cfg, 30000, NULL);
    if (!f || fscanf(f, "%ld", &pages) != 1 || lw_client_new(&cfg, &c) ||
        lw_lock_new(c, "mem", 3, &l))
        return 10;
    fclose(f);
    lim.rlim_cur = lim.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
    if (setrlimit(RLIMIT_AS, &lim))
        return 11;
    hogs = exhaust_memory();
    if (lw_lock_new(c, "more", 4, &l2) != LW_ENOMEM)
        rc = 1;
    else if (lw_acquire_async(l, 1, 0, 0, NULL, NULL) != LW_ENOMEM)
        rc = 2;
    else if (lw_client_new(&cfg, &c2) != LW_ENOMEM)
        rc = 3;
    free_hogs(hogs);
    /* Memory back: the client still works. */
    if (rc == 0 && (lw_lock_acquire(l, NULL) != 0 || lw_unlock(l) != 0))
        rc = 4;
    lw_lock_free(l);
    lw_client_free(c);
    return rc;
}

REDIS_TEST(misuse, out_of_memory_is_enomem)
{
#ifdef SANITIZED
    cr_log_info("skipped: the sanitizers' allocators do not fail softly under RLIMIT_AS");
#else
    int status = 0;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(out_of_memory_child());
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child died of signal %d", WTERMSIG(status));
    cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed", WEXITSTATUS(status));
#endif
}
