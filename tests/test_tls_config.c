/*
 * tests/test_tls_config.c - the TLS settings a client refuses, before any
 * connection: nothing here needs a server.  Built in every build, and in
 * the one without TLS (scripts/test.sh, build/notls), where asking for TLS
 * is LW_ENOTSUP.
 */
#include <string.h>

#include <criterion/criterion.h>

#include <leasewheel.h>

/* lw_client_new's verdict on cfg; a client it makes is freed at once. */
static int verdict(const struct lw_client_config *cfg)
{
    struct lw_client *c = NULL;
    int rc = lw_client_new(cfg, &c);

    if (rc == 0)
        lw_client_free(c);
    return rc;
}

static void config(struct lw_client_config *cfg)
{
    lw_client_config_init(cfg);
    cfg->port = 1; /* nothing is connected to here */
    cfg->connect_timeout_ms = 100;
}

Test(tls_config, enabling_it_depends_on_the_build)
{
    struct lw_client_config cfg;

    config(&cfg);
    cfg.tls.enable = 1;
    cr_assert_eq(verdict(&cfg), LW_HAVE_TLS ? 0 : LW_ENOTSUP);
    cfg.tls.ca_file = "/nonexistent/ca.crt"; /* loaded on first use, not here */
    cr_assert_eq(verdict(&cfg), LW_HAVE_TLS ? 0 : LW_ENOTSUP);
}

Test(tls_config, settings_without_enable_are_refused)
{
    struct lw_client_config cfg;

    config(&cfg);
    cfg.tls.ca_file = "ca.crt";
    cr_assert_eq(verdict(&cfg), LW_EINVAL, "a CA without tls.enable");
    config(&cfg);
    cfg.tls.insecure = 1;
    cr_assert_eq(verdict(&cfg), LW_EINVAL, "insecure without tls.enable");
}

Test(tls_config, a_certificate_needs_its_key)
{
    struct lw_client_config cfg;

    if (!LW_HAVE_TLS)
        return;
    config(&cfg);
    cfg.tls.enable = 1;
    cfg.tls.cert_file = "client.crt";
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
    cfg.tls.cert_file = NULL;
    cfg.tls.key_file = "client.key";
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
}

Test(tls_config, not_over_a_unix_socket)
{
    struct lw_client_config cfg;

    if (!LW_HAVE_TLS)
        return;
    config(&cfg);
    cfg.unix_path = "/nonexistent/redis.sock";
    cfg.tls.enable = 1;
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
}

Test(tls_config, the_sentinels_own_settings_only_when_asked_for)
{
    static const char *const sentinels[] = {"127.0.0.1:1"};
    struct lw_client_config cfg;

    config(&cfg);
    cfg.sentinel_tls.enable = 1; /* without sentinel_tls_own */
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
    config(&cfg);
    cfg.sentinel_tls_own = 1; /* without sentinels */
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
    config(&cfg);
    cfg.sentinels = sentinels;
    cfg.nsentinels = 1;
    cfg.sentinel_master = "m";
    cfg.sentinel_tls_own = 2;
    cr_assert_eq(verdict(&cfg), LW_EINVAL);
    cfg.sentinel_tls_own = 1;
    cfg.sentinel_tls.enable = 1;
    cfg.sentinel_tls.cert_file = "client.crt"; /* without its key */
    cr_assert_eq(verdict(&cfg), LW_HAVE_TLS ? LW_EINVAL : LW_ENOTSUP);
    cfg.sentinel_tls.cert_file = NULL;
    cr_assert_eq(verdict(&cfg), LW_HAVE_TLS ? 0 : LW_ENOTSUP);
}

Test(tls_config, the_last_error_says_why_and_where)
{
    struct lw_client_config cfg;
    struct lw_client *c;
    struct lw_lock *lock;
    char why[256];

    config(&cfg);
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert_eq(lw_client_last_error(c, NULL, 1), LW_EINVAL);
    lw_client_free(c);

    lw_client_config_init(&cfg);
    cfg.unix_path = "/nonexistent/redis.sock";
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    cr_assert_eq(lw_lock_new(c, "x", 1, &lock), 0);
    cr_assert_eq(lw_lock_acquire(lock, NULL), LW_ECONNECT); /* at once: no such socket */
    cr_assert_eq(lw_client_last_error(c, why, sizeof why), LW_ECONNECT);
    cr_assert(strstr(why, "/nonexistent/redis.sock: No such file or directory"), "%s", why);
    cr_assert_eq(lw_client_last_error(c, why, 8), LW_ECONNECT);
    cr_assert_eq(strlen(why), 7, "cut to fit: %s", why);
    lw_lock_free(lock);
    lw_client_free(c);
}
