/*
 * tests/test_tls.c - TLS on a single node, against real TLS-only
 * redis-server processes (tests/fixtures: the certificates are made with
 * openssl at run time).
 *
 *   - mutual TLS: a lock, the watchdog renewing it over several leases, a
 *     waiter woken by pub/sub over TLS, unlock; a read hold, a write hold
 *     and a permit renewed and released the same way;
 *   - verification fails with LW_ETLS and OpenSSL's reason, at once (well
 *     before the command timeout): an unknown CA, a host name mismatch (and
 *     server_name mending it), no client certificate where one is required;
 *     insecure skips it, ca_dir serves as ca_file does;
 *   - a plain client at a TLS port and TLS at a plain port are refused
 *     within the connect timeout, never waited on;
 *   - a caller's own SSL_CTX is used as it is (its trust, its client
 *     certificate), with the name still checked;
 *   - reconnects resume the TLS session; a server that fails a handshake
 *     offering one (no session cache) is offered none again;
 *   - rotation: the client's files replaced on disk and the server
 *     restarted trusting only the new CA: the running client reconnects
 *     with the new files and its lock's renewals go on;
 *   - a rotation that fails (a key that does not match, a certificate
 *     half-written) is reported once per change of the files, in
 *     lw_client_last_error() and the log, and the previous files stay in
 *     use.
 *
 * The faults (restart, SIGSTOP, CLIENT KILL, a partition...) are
 * test_fault_matrix.c's, built again over TLS (fault_matrix_tls).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "lock_util.h"
#include "log_util.h"
#include "tls_certs.h"

static struct tls_certs certs;
static struct redis_server plain; /* a second server, plain, when a test needs one */

#define SLACK_MS 1500 /* "at once": well under the command timeout */

static void tls_server(enum tls_certs_server which, const char *auth)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, which, auth);

    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0, "no TLS server");
}

static void setup(void)
{
    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    tls_server(TLS_CERTS_SERVER, "yes");
}

static void teardown(void)
{
    redis_server_stop(&plain);
    redis_server_stop(&srv);
    tls_certs_remove(&certs);
}

#define TLS_TEST(name) Test(tls, name, .init = setup, .fini = teardown, .timeout = 120)

/* A client of srv over mutual TLS with the test CA. */
static void tls_config(struct lw_client_config *cfg, uint32_t lease_ms, struct lost_log *log)
{
    client_config(cfg, lease_ms, log);
    cfg->command_timeout_ms = 10000; /* failures must come much sooner */
    cfg->tls.enable = 1;
    cfg->tls.ca_file = certs.ca_file;
    cfg->tls.cert_file = certs.client_cert;
    cfg->tls.key_file = certs.client_key;
}

/* The first acquire of a client made from cfg: its result, how long it
 * took, and the client's last error. */
struct first {
    int rc;
    uint64_t ms;
    int last_err;
    char why[256];
};

static struct first first_acquire(const struct lw_client_config *cfg)
{
    struct first f = {0};
    struct lw_client *c;
    struct lw_lock *l;
    uint64_t t0;

    cr_assert_eq(lw_client_new(cfg, &c), 0);
    l = new_lock(c, "tls:first");
    t0 = now_ms();
    f.rc = lw_lock_acquire(l, NULL);
    f.ms = now_ms() - t0;
    f.last_err = lw_client_last_error(c, f.why, sizeof f.why);
    if (f.rc == 0)
        cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
    return f;
}

/* A failure at once, LW_ETLS, whose reason says `want`. */
static void expect_tls_failure(const struct lw_client_config *cfg, const char *want)
{
    struct first f = first_acquire(cfg);

    cr_assert_eq(f.rc, LW_ETLS, "%s (%s)", lw_errname(f.rc), f.why);
    cr_assert_lt(f.ms, SLACK_MS, "took %llu ms", (unsigned long long)f.ms);
    cr_assert_eq(f.last_err, LW_ETLS);
    cr_assert(strstr(f.why, want), "reason \"%s\", not \"%s\"", f.why, want);
    cr_log_info("refused in %llu ms: %s", (unsigned long long)f.ms, f.why);
}

/* A waiter on another client, woken by the unlock's message. */
struct waiter {
    struct lw_lock *lock;
    int rc;
    uint64_t waited_ms;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    uint64_t t0 = now_ms();

    w->rc = lw_trylock(w->lock, 10000, 0, NULL);
    w->waited_ms = now_ms() - t0;
    if (w->rc == 0)
        lw_unlock(w->lock);
    return NULL;
}

TLS_TEST(lock_renew_wake_unlock)
{
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *a, *b;
    struct lw_client_stats st;
    struct waiter w = {0};
    pthread_t t;
    struct lw_lock *la;
    uint64_t t0, unlocked_ms;

    tls_config(&cfg, 600, &log);
    cr_assert_eq(lw_client_new(&cfg, &a), 0);
    tls_config(&cfg, 600, NULL);
    cfg.tls.ca_file = NULL;
    cfg.tls.ca_dir = certs.ca_dir; /* the same CA, hashed in a directory */
    cr_assert_eq(lw_client_new(&cfg, &b), 0);
    la = new_lock(a, "tls:lock");
    w.lock = new_lock(b, "tls:lock");
    cr_assert_eq(lw_lock_acquire(la, NULL), 0);
    sleep_ms(2000); /* three leases and more */
    lw_client_get_stats(a, &st);
    cr_assert_geq(st.renewals_confirmed, 6, "%llu renewals",
                  (unsigned long long)st.renewals_confirmed);
    cr_assert_eq(atomic_load(&log.count), 0, "lost: %s", lw_lost_reason_name(log.reason));
    cr_assert_eq(lw_is_held(la), 1);
    t0 = now_ms();
    cr_assert_eq(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    /* b waits on the lock's channel: in line, the channel subscribed. */
    cr_assert(wait_until((lw_client_get_stats(b, &st),
                          st.waiters == 1 &&
                              redis_subscribers("redisson_lock__channel:{tls:lock}") >= 1),
                         5000),
              "b never waited on the channel");
    unlocked_ms = now_ms() - t0;
    cr_assert_eq(lw_unlock(la), 0);
    pthread_join(t, NULL);
    cr_assert_eq(w.rc, 0, "%s", lw_errname(w.rc));
    /* Woken by the message, not by the lease running out (600 ms). */
    cr_assert_lt(w.waited_ms, unlocked_ms + 400, "waited %llu ms, unlocked at %llu ms",
                 (unsigned long long)w.waited_ms, (unsigned long long)unlocked_ms);
    lw_client_get_stats(a, &st);
    cr_assert_gt(st.tls_handshakes, 0);
    lw_lock_free(la);
    lw_lock_free(w.lock);
    lw_client_free(a);
    lw_client_free(b);
}

/* The other kinds over TLS: a read hold, a write hold and a permit, each
 * renewed by the watchdog over three leases and more, then released. */
TLS_TEST(read_write_and_permit_renewed_and_released)
{
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *rl, *wl;
    struct lw_semaphore *sem;
    struct lw_permit permit;
    int64_t n = -1;
    uint64_t token = 0, t0;
    char key[200];

    tls_config(&cfg, 600, &log);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert_eq(lw_read_lock_new(c, "tls:rw", 6, &rl), 0);
    cr_assert_eq(lw_write_lock_new(c, "tls:w", 5, &wl), 0);
    cr_assert_eq(lw_semaphore_new(c, "tls:sem", 7, &sem), 0);
    t0 = now_ms();
    cr_assert_eq(lw_lock_acquire(rl, NULL), 0);
    cr_assert_eq(lw_lock_set_fenced(wl, 1), 0);
    cr_assert_eq(lw_lock_acquire(wl, &token), 0);
    cr_assert_gt(token, 0, "a write hold's fencing token");
    cr_assert_eq(lw_semaphore_try_set(sem, 2), 1);
    cr_assert_eq(lw_permit_acquire(sem, 1, 0, 0, &permit), 0);
    /* Each is renewed every 200 ms: after 2 s, nine times or so. */
    cr_assert(wait_until((lw_client_get_stats(c, &st),
                          now_ms() - t0 >= 2000 && st.renewals_confirmed >= 3 * 6),
                         6000),
              "%llu renewals", (unsigned long long)st.renewals_confirmed);
    cr_assert_eq(atomic_load(&log.count), 0, "lost: %s", lw_lost_reason_name(log.reason));
    snprintf(key, sizeof key, "{tls:rw}:%s:%llu:rwlock_timeout:1", lw_client_id(c),
             (unsigned long long)lw_owner_self());
    cr_assert_gt(redis_int("PTTL %s", key), 0, "the read hold's timeout key is renewed");
    cr_assert_gt(redis_int("PTTL %s", "tls:rw"), 0);
    cr_assert_gt(redis_int("PTTL %s", "tls:w"), 0);
    cr_assert_eq(lw_is_held(rl), 1);
    cr_assert_eq(lw_is_held(wl), 1);
    cr_assert_eq(lw_semaphore_acquired(sem, &n), 0);
    cr_assert_eq(n, 1, "the permit, renewed, is still acquired");
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 3);
    cr_assert_gt(st.tls_handshakes, 0);

    cr_assert_eq(lw_unlock(rl), 0);
    cr_assert_eq(lw_unlock(wl), 0);
    cr_assert_eq(lw_permit_release(sem, &permit, 1), 0);
    cr_assert_eq(redis_int("EXISTS %s", "tls:rw"), 0);
    cr_assert_eq(redis_int("EXISTS %s", key), 0);
    cr_assert_eq(redis_int("EXISTS %s", "tls:w"), 0);
    cr_assert_eq(lw_semaphore_available(sem, &n), 0);
    cr_assert_eq(n, 2);
    lw_client_get_stats(c, &st);
    cr_assert_eq(st.locks_held, 0);
    lw_lock_free(rl);
    lw_lock_free(wl);
    lw_semaphore_free(sem);
    lw_client_free(c);
}

/* A fair lock over TLS: held and renewed, a second client's waiter
 * queued with its place renewed (three place leases and more), woken on
 * its own channel by the unlock. */
TLS_TEST(fair_lock_queued_renewed_and_woken)
{
    struct lw_client_config cfg;
    struct lw_client *a, *b;
    struct lw_client_stats st;
    struct lw_lock *fa, *fb;
    struct outcome o = {0};

    tls_config(&cfg, 600, NULL);
    cfg.fair_place_ms = 300;
    cr_assert_eq(lw_client_new(&cfg, &a), 0);
    cr_assert_eq(lw_client_new(&cfg, &b), 0);
    cr_assert_eq(lw_fair_lock_new(a, "tls:fair", 8, &fa), 0);
    cr_assert_eq(lw_fair_lock_new(b, "tls:fair", 8, &fb), 0);
    cr_assert_eq(lw_lock_acquire(fa, NULL), 0);
    tally_init(&o.tally);
    cr_assert_eq(lw_acquire_async(fb, 2, 10000, 0, on_outcome, &o), 0);
    cr_assert(wait_until(redis_int("LLEN %s", "redisson_lock_queue:{tls:fair}") == 1, 3000),
              "b never queued");
    /* Its place (300 ms) renewed every 100 ms, the holder's lease every
     * 200 ms: after a second, both many times. */
    cr_assert(wait_until((lw_client_get_stats(b, &st), st.renewals_confirmed >= 8), 5000),
              "the place was not renewed: %llu", (unsigned long long)st.renewals_confirmed);
    cr_assert_eq(tally_wait(&o.tally, 1, 0), 0, "b got in while a held it");
    cr_assert_eq(lw_unlock(fa), 0);
    cr_assert_eq(tally_wait(&o.tally, 1, 3000), 1, "b was not woken");
    cr_assert_eq(atomic_load(&o.err), 0);
    cr_assert_eq(lw_unlock_owner(fb, 2), 0);
    lw_client_get_stats(b, &st);
    cr_assert_gt(st.tls_handshakes, 0);
    tally_destroy(&o.tally);
    lw_lock_free(fa);
    lw_lock_free(fb);
    lw_client_free(a);
    lw_client_free(b);
}

TLS_TEST(unknown_ca_is_refused_at_once)
{
    struct lw_client_config cfg;

    tls_config(&cfg, 3000, NULL);
    cfg.tls.ca_file = certs.other_ca_file;
    expect_tls_failure(&cfg, "certificate verify failed");
}

TLS_TEST(the_system_store_does_not_know_the_test_ca)
{
    struct lw_client_config cfg;

    tls_config(&cfg, 3000, NULL);
    cfg.tls.ca_file = NULL; /* the system's trust store */
    expect_tls_failure(&cfg, "certificate verify failed");
}

TLS_TEST(host_name_mismatch_then_server_name)
{
    struct lw_client_config cfg;
    struct first f;

    redis_server_stop(&srv);
    tls_server(TLS_CERTS_NAMED, "no"); /* its only name: redis.test */
    tls_config(&cfg, 3000, NULL);
    expect_tls_failure(&cfg, "mismatch"); /* 127.0.0.1 is not in it */
    cfg.tls.server_name = "redis.test";
    f = first_acquire(&cfg);
    cr_assert_eq(f.rc, 0, "%s (%s)", lw_errname(f.rc), f.why);
    cfg.tls.server_name = "other.test";
    expect_tls_failure(&cfg, "hostname mismatch");
}

TLS_TEST(a_client_certificate_is_required)
{
    struct lw_client_config cfg;

    tls_config(&cfg, 3000, NULL);
    cfg.tls.cert_file = cfg.tls.key_file = NULL;
    expect_tls_failure(&cfg, "certificate required");
}

TLS_TEST(insecure_verifies_nothing)
{
    struct lw_client_config cfg;
    struct first f;

    tls_config(&cfg, 3000, NULL);
    cfg.tls.ca_file = certs.other_ca_file;
    cfg.tls.server_name = "other.test";
    cfg.tls.insecure = 1;
    f = first_acquire(&cfg);
    cr_assert_eq(f.rc, 0, "%s (%s)", lw_errname(f.rc), f.why);
}

/* An SSL_CTX of the caller's, trusting ca_file and presenting the client
 * certificate when with_cert. */
static SSL_CTX *callers_ctx(const char *ca_file, int with_cert)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    cr_assert(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    cr_assert_eq(SSL_CTX_load_verify_locations(ctx, ca_file, NULL), 1);
    if (with_cert) {
        cr_assert_eq(SSL_CTX_use_certificate_chain_file(ctx, certs.client_cert), 1);
        cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, certs.client_key, SSL_FILETYPE_PEM), 1);
    }
    return ctx;
}

/* tls.ssl_ctx: the caller's context decides trust and the certificate
 * presented (the file settings are not used); the name is checked still. */
TLS_TEST(a_context_of_the_callers_is_used_as_it_is)
{
    struct lw_client_config cfg;
    SSL_CTX *good = callers_ctx(certs.ca_file, 1), *no_cert = callers_ctx(certs.ca_file, 0),
            *other_ca = callers_ctx(certs.other_ca_file, 1);
    struct first f;

    client_config(&cfg, 3000, NULL);
    cfg.command_timeout_ms = 10000;
    cfg.tls.enable = 1;
    cfg.tls.ssl_ctx = good;
    f = first_acquire(&cfg);
    cr_assert_eq(f.rc, 0, "%s (%s)", lw_errname(f.rc), f.why);
    cfg.tls.server_name = "other.test";
    expect_tls_failure(&cfg, "hostname mismatch");
    cfg.tls.server_name = NULL;
    cfg.tls.ssl_ctx = other_ca;
    expect_tls_failure(&cfg, "certificate verify failed");
    cfg.tls.ssl_ctx = no_cert;
    expect_tls_failure(&cfg, "certificate required");
    SSL_CTX_free(good);
    SSL_CTX_free(no_cert);
    SSL_CTX_free(other_ca);
}

TLS_TEST(a_plain_client_at_a_tls_port_is_refused)
{
    struct lw_client_config cfg;
    struct first f;

    client_config(&cfg, 3000, NULL);
    cfg.command_timeout_ms = 10000;
    f = first_acquire(&cfg);
    cr_assert_eq(f.rc, LW_ECONNECT, "%s (%s)", lw_errname(f.rc), f.why);
    cr_assert_lt(f.ms, SLACK_MS, "took %llu ms", (unsigned long long)f.ms);
    cr_assert(strstr(f.why, "TLS port"), "%s", f.why);
    cr_log_info("refused in %llu ms: %s", (unsigned long long)f.ms, f.why);
}

TLS_TEST(tls_at_a_plain_port_is_refused_within_the_connect_timeout)
{
    struct lw_client_config cfg;
    struct first f;

    cr_assert_eq(redis_server_start(&plain, NULL), 0);
    tls_config(&cfg, 3000, NULL);
    cfg.port = plain.port;
    cfg.connect_timeout_ms = 500;
    f = first_acquire(&cfg);
    cr_assert_eq(f.rc, LW_ETLS, "%s (%s)", lw_errname(f.rc), f.why);
    cr_assert_lt(f.ms, 500 + SLACK_MS, "took %llu ms", (unsigned long long)f.ms);
    cr_assert(strstr(f.why, "not a TLS port"), "%s", f.why);
    cr_log_info("refused in %llu ms: %s", (unsigned long long)f.ms, f.why);
}

/* Kill the clients' connections (not the subscribers'), and wait until
 * l's client answers again (up to 2 s). */
static void kill_and_wait(struct lw_lock *l)
{
    redisReply *r = redis_server_command(&srv, "CLIENT KILL TYPE normal");
    int64_t ttl;

    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1, "nothing killed");
    freeReplyObject(r);
    for (int j = 0; j < 100 && lw_remaining_ttl(l, &ttl) != 0; j++)
        sleep_ms(20); /* the call in flight at the kill fails: again */
}

/* After ms, l is still held and was renewed more than twice since
 * `before`, with nothing lost; then l is unlocked, l and c freed. */
static void renewed_over(struct lw_client *c, struct lw_lock *l, struct lost_log *log,
                         const struct lw_client_stats *before, unsigned ms)
{
    struct lw_client_stats after;

    sleep_ms(ms);
    lw_client_get_stats(c, &after);
    cr_assert_eq(atomic_load(&log->count), 0, "lost: %s", lw_lost_reason_name(log->reason));
    cr_assert_gt(after.renewals_confirmed, before->renewals_confirmed + 2, "%llu -> %llu",
                 (unsigned long long)before->renewals_confirmed,
                 (unsigned long long)after.renewals_confirmed);
    cr_assert_eq(lw_is_held(l), 1);
    cr_assert_eq(lw_unlock(l), 0);
    lw_lock_free(l);
    lw_client_free(c);
}

/* Kill the client's command connection n times; each reconnect resumes. */
TLS_TEST(reconnects_resume_the_session)
{
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *l;
    int64_t ttl;

    tls_config(&cfg, 3000, NULL);
    cfg.reconnect_min_ms = 10;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "tls:resume");
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0); /* connected */
    for (int i = 0; i < 5; i++)
        kill_and_wait(l);
    lw_client_get_stats(c, &st);
    cr_log_info("%llu handshakes, %llu resumed, %llu reconnects",
                (unsigned long long)st.tls_handshakes, (unsigned long long)st.tls_resumed,
                (unsigned long long)st.reconnects);
    cr_assert_geq(st.reconnects, 5);
    cr_assert_geq(st.tls_resumed, 5, "%llu of %llu resumed", (unsigned long long)st.tls_resumed,
                  (unsigned long long)st.tls_handshakes);
    lw_lock_free(l);
    lw_client_free(c);
}

/* A server that fails a handshake offering a session (Redis without its
 * session cache, client certificates required: an "internal error"
 * alert): the client tries again at once without one, and offers none
 * after, so each reconnect is one full handshake, not a failure and a
 * back-off.  The back-off is made long so that waiting it would show. */
TLS_TEST(a_server_that_refuses_sessions_is_offered_none_again)
{
    static const char *const no_cache[] = {"--tls-session-caching", "no", NULL};
    struct fixture_tls tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_client_stats st;
    struct lw_lock *l;
    uint64_t worst = 0;
    int64_t ttl;

    redis_server_stop(&srv);
    cr_assert_eq(redis_server_start_tls_args(&srv, NULL, &tls, no_cache), 0);
    tls_config(&cfg, 3000, NULL);
    cfg.reconnect_min_ms = 2000; /* the first back-off: 1 to 2 s, the next 2 to 4 */
    cfg.reconnect_max_ms = 8000;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "tls:no-cache");
    cr_assert_eq(lw_remaining_ttl(l, &ttl), 0); /* connected */
    for (int i = 0; i < 3; i++) {
        redisReply *r = redis_server_command(&srv, "CLIENT KILL TYPE normal");
        uint64_t t0 = now_ms(), took;

        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1, "nothing killed");
        freeReplyObject(r);
        for (int j = 0; j < 200 && lw_remaining_ttl(l, &ttl) != 0; j++)
            sleep_ms(20);
        took = now_ms() - t0;
        worst = took > worst ? took : worst;
    }
    lw_client_get_stats(c, &st);
    cr_log_info("%llu reconnects, %llu handshakes, %llu resumed; worst %llu ms",
                (unsigned long long)st.reconnects, (unsigned long long)st.tls_handshakes,
                (unsigned long long)st.tls_resumed, (unsigned long long)worst);
    cr_assert_geq(st.reconnects, 3);
    cr_assert_eq(st.tls_resumed, 0);
    /* A reconnect waits the first back-off only: a refused session's
     * failure and the second back-off would add 2 s or more. */
    cr_assert_lt(worst, 2000 + 800, "a refused session cost a back-off");
    lw_lock_free(l);
    lw_client_free(c);
}

/*
 * Rotation: the client reads its CA, certificate and key from files of its
 * own; a new generation (CA2, signed client and server certificates)
 * replaces them on disk, and the server restarts trusting only CA2, with
 * its data (SAVE first: the lock is still there).  The client, never
 * restarted, reconnects with the new files and renews on.
 */
TLS_TEST(rotated_files_are_used_without_a_restart)
{
    char ca[TLS_CERTS_PATH + 8], cert[TLS_CERTS_PATH + 8], key[TLS_CERTS_PATH + 8];
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *c;
    struct lw_client_stats before;
    struct fixture_tls tls2;
    struct lw_lock *l;
    redisReply *r;

    snprintf(ca, sizeof ca, "%s/my-ca.crt", certs.dir);
    snprintf(cert, sizeof cert, "%s/my-client.crt", certs.dir);
    snprintf(key, sizeof key, "%s/my-client.key", certs.dir);
    cr_assert_eq(tls_certs_replace(ca, certs.ca_file), 0);
    cr_assert_eq(tls_certs_replace(cert, certs.client_cert), 0);
    cr_assert_eq(tls_certs_replace(key, certs.client_key), 0);
    tls_config(&cfg, 3000, &log);
    cfg.tls.ca_file = ca;
    cfg.tls.cert_file = cert;
    cfg.tls.key_file = key;
    cfg.reconnect_min_ms = 20;
    cfg.reconnect_max_ms = 200;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "tls:rotate");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    /* A renewal on the first generation. */
    cr_assert(wait_until((lw_client_get_stats(c, &before), before.renewals_confirmed >= 1), 5000),
              "no renewal on the first generation");

    cr_assert_eq(tls_certs_make_gen2(&certs), 0);
    cr_assert_eq(tls_certs_replace(ca, certs.ca2_file), 0);
    cr_assert_eq(tls_certs_replace(cert, certs.client2_cert), 0);
    cr_assert_eq(tls_certs_replace(key, certs.client2_key), 0);
    r = redis_server_command(&srv, "SAVE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SAVE failed");
    freeReplyObject(r);
    tls2 = tls_certs_server_tls(&certs, TLS_CERTS_SERVER2, "yes");
    cr_assert_eq(redis_server_restart_tls(&srv, &tls2), 0);
    lw_client_get_stats(c, &before);

    /* more than a lease: renewals must have gone on */
    renewed_over(c, l, &log, &before, 4000);
}

/* Force a reconnect; the client's last error must then be LW_ETLS saying
 * `want` (its reload failed) and the log must have said it once. */
static void expect_reload_reported(struct lw_client *c, struct lw_lock *l, const char *want)
{
    char why[256] = "";
    int err = 0;

    kill_and_wait(l);
    for (int i = 0; i < 100; i++) {
        if ((err = lw_client_last_error(c, why, sizeof why)) == LW_ETLS && strstr(why, want))
            break;
        sleep_ms(20);
    }
    cr_assert_eq(err, LW_ETLS, "%s (%s)", lw_errname(err), why);
    cr_assert(strstr(why, want), "reason \"%s\", not \"%s\"", why, want);
    cr_assert(strstr(why, "previous ones kept"), "%s", why);
    cr_assert_eq(logged_times(want, LW_LOG_WARN), 1, "not logged once as a warning: %s", why);
    cr_log_info("reported: %s", why);
}

/*
 * A rotation that fails: the client's key replaced by one that does not
 * match its certificate, then its certificate by half of one.  The next
 * connection after each change reports it (LW_ETLS and the reason, in
 * lw_client_last_error() and the log, as a warning), and goes on with the
 * previous files, as the lock's renewals do; a reconnect with the files
 * unchanged says nothing more.
 */
TLS_TEST(a_reload_that_fails_is_reported_and_the_previous_files_kept)
{
    char cert[TLS_CERTS_PATH + 8], key[TLS_CERTS_PATH + 8];
    struct lw_client_config cfg;
    struct lost_log log;
    struct lw_client *c;
    struct lw_client_stats before;
    struct lw_lock *l;
    FILE *f;

    snprintf(cert, sizeof cert, "%s/my-client.crt", certs.dir);
    snprintf(key, sizeof key, "%s/my-client.key", certs.dir);
    cr_assert_eq(tls_certs_replace(cert, certs.client_cert), 0);
    cr_assert_eq(tls_certs_replace(key, certs.client_key), 0);
    tls_config(&cfg, 1000, &log);
    cfg.tls.cert_file = cert;
    cfg.tls.key_file = key;
    cfg.reconnect_min_ms = 20;
    cfg.reconnect_max_ms = 200;
    cfg.log = on_log;
    logged.n = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    l = new_lock(c, "tls:reload");
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    lw_client_get_stats(c, &before);

    cr_assert_eq(tls_certs_replace(key, certs.server_key), 0); /* another key */
    expect_reload_reported(c, l, "key values mismatch");
    kill_and_wait(l); /* the files unchanged: not said again */
    sleep_ms(300);
    cr_assert_eq(logged_times("key values mismatch", LW_LOG_WARN), 1);

    cr_assert(f = fopen(cert, "w"));
    cr_assert_eq(fputs("-----BEGIN CERTIFICATE-----\nMIIB\n", f) >= 0, 1); /* half written */
    fclose(f);
    expect_reload_reported(c, l, "loading the certificate");

    renewed_over(c, l, &log, &before, 1500); /* more than a lease */
}
