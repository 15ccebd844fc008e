/*
 * test_abi.c - the library boundary: the version a program sees is the one
 * running, and lw_client_config / lw_client_stats can grow.  A program built
 * against an older header passes a smaller size, a newer one a larger size;
 * both must keep working with this library (docs/design.md, "The library
 * boundary").  The public API only, through the shared library.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <leasewheel.h>

#include "redis_server.h"

#define GUARD 0xa5
#define EXTRA 64

static struct redis_server srv;

static void server_start(void)
{
    cr_assert_eq(redis_server_start(&srv, NULL), 0, "redis-server did not start");
}

static void server_stop(void)
{
    redis_server_stop(&srv);
}

static int all_bytes(const void *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != v)
            return 0;
    return 1;
}

/* A client of the fixture's server that has made one round trip. */
static struct lw_client *new_client_from(const struct lw_client_config *cfg)
{
    struct lw_client *c = NULL;
    struct lw_lock *l = NULL;

    cr_assert_eq(lw_client_new(cfg, &c), 0);
    cr_assert_eq(lw_lock_new(c, "abi", 3, &l), 0);
    cr_assert_eq(lw_is_locked(l), 0, "the client does not work");
    lw_lock_free(l);
    return c;
}

static struct lw_client *new_client(void)
{
    struct lw_client_config cfg;

    lw_client_config_init(&cfg);
    cfg.port = srv.port;
    return new_client_from(&cfg);
}

Test(abi, version_is_the_headers)
{
    char s[32];

    cr_assert_str_eq(lw_version(), LW_VERSION_STRING);
    cr_assert_str_eq(lw_version(), LW_TEST_PROJECT_VERSION, "version.h is not meson's version");
    cr_assert_eq(lw_version_hex(), LW_VERSION_HEX);
    cr_assert_eq(LW_VERSION_HEX,
                 (LW_VERSION_MAJOR << 16) | (LW_VERSION_MINOR << 8) | LW_VERSION_PATCH);
    snprintf(s, sizeof s, "%d.%d.%d", LW_VERSION_MAJOR, LW_VERSION_MINOR, LW_VERSION_PATCH);
    cr_assert_str_eq(s, LW_VERSION_STRING);
}

/* An older header's stats end before lost_late: only that much is written. */
Test(abi, stats_older_size_writes_only_its_bytes, .init = server_start, .fini = server_stop)
{
    unsigned char buf[sizeof(struct lw_client_stats) + EXTRA];
    size_t old = offsetof(struct lw_client_stats, lost_late);
    struct lw_client *c = new_client();

    memset(buf, GUARD, sizeof buf);
    lw_client_get_stats_size(c, (struct lw_client_stats *)(void *)buf, old);
    cr_assert(all_bytes(buf + old, sizeof buf - old, GUARD), "wrote past the size given");
    /* A fresh client: no lock held, none lost. */
    cr_assert(all_bytes(buf, offsetof(struct lw_client_stats, renewals_sent), 0));
    cr_assert(all_bytes(buf + offsetof(struct lw_client_stats, lost_not_owner),
                        3 * sizeof(uint64_t), 0));
    lw_client_free(c);
}

/* A newer header's stats: the counters this library lacks read as zero. */
Test(abi, stats_newer_size_zeroes_the_rest, .init = server_start, .fini = server_stop)
{
    unsigned char buf[sizeof(struct lw_client_stats) + EXTRA];
    struct lw_client_stats *s = (struct lw_client_stats *)(void *)buf;
    struct lw_client *c = new_client();

    memset(buf, GUARD, sizeof buf);
    lw_client_get_stats_size(c, s, sizeof buf);
    cr_assert(all_bytes(buf + sizeof *s, EXTRA, 0), "a newer header's counters not zeroed");
    cr_assert_eq(s->locks_held, 0);
    cr_assert_eq(s->lost_expired, 0);
    lw_client_free(c);
}

/* An older header's config ends before `loop`: defaults for the rest, and
 * nothing past its size is read or written. */
Test(abi, config_older_size_gets_defaults, .init = server_start, .fini = server_stop)
{
    unsigned char buf[sizeof(struct lw_client_config) + EXTRA];
    struct lw_client_config *cfg = (struct lw_client_config *)(void *)buf, def;
    size_t old = offsetof(struct lw_client_config, loop);

    lw_client_config_init(&def);
    memset(buf, GUARD, sizeof buf);
    lw_client_config_init_size(cfg, old);
    cr_assert(all_bytes(buf + old, sizeof buf - old, GUARD), "wrote past the size given");
    cr_assert_eq(cfg->size, old);
    cr_assert_str_eq(cfg->host, def.host);
    cr_assert_eq(cfg->port, def.port);
    cr_assert_eq(cfg->watchdog_timeout_ms, def.watchdog_timeout_ms);
    cr_assert_eq(cfg->tick_ms, def.tick_ms);
    cr_assert_eq(cfg->slots, def.slots);
    cr_assert_null(cfg->on_lost);
    /* The guard bytes where `loop` would be are not a loop: they must
     * not be read. */
    cfg->port = srv.port;
    lw_client_free(new_client_from(cfg));
}

struct newer_config {
    struct lw_client_config cfg;
    unsigned char extra[EXTRA]; /* a newer header's fields */
};

Test(abi, config_newer_size_zero_extra_accepted, .init = server_start, .fini = server_stop)
{
    struct newer_config n;

    memset(&n, GUARD, sizeof n);
    lw_client_config_init_size(&n.cfg, sizeof n);
    cr_assert_eq(n.cfg.size, sizeof n);
    cr_assert(all_bytes(n.extra, sizeof n.extra, 0), "a newer header's fields not zeroed");
    n.cfg.port = srv.port;
    lw_client_free(new_client_from(&n.cfg));
}

Test(abi, config_newer_size_nonzero_extra_is_erange)
{
    struct lw_client *c = NULL;
    struct newer_config n;

    lw_client_config_init_size(&n.cfg, sizeof n);
    n.extra[EXTRA - 1] = 1; /* a setting this library would ignore */
    cr_assert_eq(lw_client_new(&n.cfg, &c), LW_ERANGE);
    cr_assert_null(c);
}

Test(abi, config_never_initialised_is_einval)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    lw_client_config_init(&cfg);
    cfg.size = 0;
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cr_assert_eq(lw_client_new(&cfg, &c), LW_EINVAL);
    cr_assert_null(c);
}

/* A header from before acquires acknowledged by replicas: its stats end
 * before replicas_refused (nothing written past them), and its config
 * before acquire_replicas (off, whatever follows in memory). */
Test(abi, before_acquire_replicas, .init = server_start, .fini = server_stop)
{
    unsigned char sbuf[sizeof(struct lw_client_stats) + EXTRA];
    unsigned char cbuf[sizeof(struct lw_client_config) + EXTRA];
    struct lw_client_config *cfg = (struct lw_client_config *)(void *)cbuf;
    size_t old_stats = offsetof(struct lw_client_stats, replicas_refused);
    size_t old_cfg = offsetof(struct lw_client_config, acquire_replicas);
    struct lw_client *c;

    memset(cbuf, GUARD, sizeof cbuf);
    lw_client_config_init_size(cfg, old_cfg);
    cr_assert(all_bytes(cbuf + old_cfg, sizeof cbuf - old_cfg, GUARD));
    cfg->port = srv.port;
    c = new_client_from(cfg); /* the guard bytes would be 0xa5a5a5a5 replicas */
    memset(sbuf, GUARD, sizeof sbuf);
    lw_client_get_stats_size(c, (struct lw_client_stats *)(void *)sbuf, old_stats);
    cr_assert(all_bytes(sbuf + old_stats, sizeof sbuf - old_stats, GUARD),
              "wrote past the size given");
    lw_client_free(c);
}

/* A lock lost under a 0.3 program's config: on_lost is called, and the
 * lease callbacks of 0.4 are not read (guard bytes where they would be:
 * a call through them would crash). */
static _Atomic int lost_calls;

static void count_lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)owner;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&lost_calls, 1);
}

Test(abi, before_lease_callbacks, .init = server_start, .fini = server_stop)
{
    unsigned char cbuf[sizeof(struct lw_client_config) + EXTRA];
    struct lw_client_config *cfg = (struct lw_client_config *)(void *)cbuf;
    size_t old_cfg = offsetof(struct lw_client_config, on_lease_lost);
    struct lw_client *c = NULL;
    struct lw_lock *l = NULL;
    redisReply *r;

    memset(cbuf, GUARD, sizeof cbuf);
    lw_client_config_init_size(cfg, old_cfg);
    cfg->port = srv.port;
    cfg->tick_ms = 10;
    cfg->watchdog_timeout_ms = 300;
    cfg->on_lost = count_lost;
    cr_assert_eq(lw_client_new(cfg, &c), 0);
    cr_assert_eq(lw_lock_new(c, "abi:lost", 8, &l), 0);
    cr_assert_eq(lw_lock_acquire(l, NULL), 0);
    r = redis_server_command(&srv, "DEL %s", "abi:lost");
    cr_assert(r && r->integer == 1);
    freeReplyObject(r);
    /* Lost at the next renewal, within a third of the lease: 2 s at most. */
    for (int i = 0; i < 400 && atomic_load(&lost_calls) == 0; i++) {
        struct timespec ts = {0, 5000000};

        nanosleep(&ts, NULL);
    }
    cr_assert_eq(atomic_load(&lost_calls), 1, "on_lost never called");
    lw_lock_free(l);
    lw_client_free(c);
}
