/*
 * tests/test_dashboard.c - docs/grafana/leasewheel.json against the
 * metrics a client really exports (check_dashboard.py says what it
 * checks): every name its panels and variables query is a series of a
 * live scrape of docs/examples/metrics_server, on a private redis-server,
 * or, for the per-node families a client writes in a cluster only, of a
 * scrape of a client of the test's on a private Redis Cluster.  The
 * checker also plants faults in copies of the dashboard (a misspelt
 * metric, a panel without targets, ...) and must catch each.
 */
#include <stdlib.h>

#include "lock_util.h"
#include "metrics_util.h"
#include "cluster_util.h"
#include "redis_cluster.h"

static struct redis_cluster cl;
static pid_t example; /* metrics_server, 0 once stopped */

/* Both: metrics_server's redis-server (srv), and a cluster. */
static void servers_start(void)
{
    server_start();
    cr_assert_eq(redis_cluster_start(&cl, 3, 0), 0, "the cluster did not start");
}

/* metrics_server too, when a failed assertion left it running: it holds
 * the test's stderr, which meson waits on until it closes. */
static void servers_stop(void)
{
    if (example > 0) {
        kill(example, SIGKILL);
        wait_child(example, 10000);
    }
    redis_cluster_stop(&cl);
    server_stop();
}

/* A client on the cluster holding locks on every master, so that every
 * per-node family has samples. */
static struct lw_client *cluster_client(struct lw_lock **held, int n)
{
    char name[32];
    struct lw_client_config cfg;
    struct lw_client *c = NULL;

    cluster_client_config(&cfg, &cl, 0);
    cfg.watchdog_timeout_ms = 600;
    cr_assert_eq(lw_client_new(&cfg, &c), 0);
    for (int i = 0; i < n; i++) { /* 12 names: on every master, surely */
        snprintf(name, sizeof name, "dash:%d", i);
        held[i] = new_lock(c, name);
        cr_assert_eq(lw_lock_acquire(held[i], NULL), 0);
    }
    return c;
}

Test(dashboard, queries_only_exported_metrics, .init = servers_start, .fini = servers_stop,
     .timeout = 120)
{
    char redis_port[16], example_url[64], cluster_url[64];
    char *example_argv[] = {METRICS_SERVER_PATH, redis_port, "0", "60", NULL};
    char *check_argv[] = {PYTHON_PATH, CHECK_DASHBOARD_PATH, DASHBOARD_PATH, example_url,
                          cluster_url, "--self-check", NULL};
    struct lw_lock *held[12];
    struct lw_client_stats b, a;
    struct lw_client *c;
    pid_t checker;
    int example_out, fd, port, check_out, st;
    char *out;

    snprintf(redis_port, sizeof redis_port, "%d", srv.port);
    example_out = spawn_reading(example_argv, &example);
    snprintf(example_url, sizeof example_url, "http://127.0.0.1:%d/metrics",
             example_port(example_out));
    c = cluster_client(held, 12);
    fd = listen_any(&port);
    snprintf(cluster_url, sizeof cluster_url, "http://127.0.0.1:%d/metrics", port);

    /* The checker scrapes metrics_server, then this thread's one answer. */
    check_out = spawn_reading(check_argv, &checker);
    serve_one(fd, c, &b, &a);
    out = read_all(check_out);
    cr_assert_eq(wait_child(checker, 60000), 0, "check_dashboard.py failed (stderr above):\n%s",
                 out);
    cr_assert(strstr(out, "\nok: "), "%s", out);
    /* Not only the totals: the per-node and histogram series were there. */
    cr_assert(strstr(out, "\nleasewheel_node_reconnects_total\n"), "%s", out);
    cr_assert(strstr(out, "\nleasewheel_renewal_lag_seconds_bucket\n"), "%s", out);
    cr_assert(strstr(out, "caught no_targets:"), "%s", out);
    cr_assert(strstr(out, "caught misspell:"), "%s", out);
    /* A gauge, or a counter not made a rate, on a per-second axis. */
    cr_assert(strstr(out, "caught gauge_per_second:"), "%s", out);
    cr_assert(strstr(out, "caught counter_not_rated:"), "%s", out);
    cr_log_info("%s", out);
    free(out);
    close(fd);

    kill(example, SIGTERM);
    st = wait_child(example, 10000); /* reaped, or killed and reaped */
    example = 0;
    cr_assert_eq(st, 0, "metrics_server did not stop cleanly");
    close(example_out);
    for (int i = 0; i < 12; i++)
        lw_lock_free(held[i]);
    lw_client_free(c);
}
