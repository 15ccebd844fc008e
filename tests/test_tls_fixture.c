/*
 * tests/test_tls_fixture.c - the TLS side of the fixtures
 * (tests/fixtures/tls_certs.h, and the TLS modes of redis_server.h,
 * redis_cluster.h, redis_sentinel.h) and the proxy (proxy.h): the
 * certificates say what the header promises; a TLS server answers
 * redis-cli --tls with a client certificate and refuses one without; a
 * restart with the second generation refuses a CA1 client and takes a CA2
 * one; a TLS cluster is created and ok, names its TLS ports, fails over,
 * migrates and reshards; a TLS Sentinel setup names the TLS master and
 * fails over; the proxy forwards, holds (a partition), resumes and drops.
 * Every wait is bounded; every process is stopped by pid.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "fixture_util.h"
#include "proxy.h"
#include "redis_cluster.h"
#include "redis_sentinel.h"
#include "redis_server.h"
#include "tls_certs.h"

static struct tls_certs certs;
static struct redis_server srv;
static struct redis_cluster cl;
static struct redis_sentinel st;
static char out[16384];

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
    double t0 = now_s();

    cr_assert_eq(tls_certs_make(&certs), 0, "no certificates");
    cr_log_info("certificates: %.3f s", now_s() - t0);
}

static void teardown(void)
{
    redis_sentinel_stop(&st);
    redis_cluster_stop(&cl);
    redis_server_stop(&srv);
    tls_certs_remove(&certs);
}

/* `redis-cli --tls ... -p port args...` with the CA ca and the client
 * certificate cert/key (NULL: none); its exit status, its output in out. */
static int cli(const char *ca, const char *cert, const char *key, int port, const char *arg0,
               const char *arg1, const char *arg2)
{
    const char *args[] = {arg0, arg1, arg2, NULL};

    return tls_certs_cli(ca, cert, key, port, args, out, sizeof out);
}

/* redis-cli's PING over TLS got PONG. */
static int cli_pong(const char *ca, const char *cert, const char *key, int port)
{
    return cli(ca, cert, key, port, "PING", NULL, NULL) == 0 && !strcmp(out, "PONG\n");
}

/* `openssl verify` with the arguments: 0 when it accepts. */
static int verify(const char *a0, const char *a1, const char *a2, const char *a3,
                  const char *a4)
{
    char *argv[] = {"openssl", "verify", (char *)a0, (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4, NULL};
    pid_t pid = fixture_spawn(argv, "/dev/null");

    return pid < 0 ? -1 : fixture_reap(pid, 10000);
}

Test(tls_fixture, certificates, .init = setup, .fini = teardown, .timeout = 60)
{
    double t0;

    cr_assert_eq(certs.dir[0], '/');
    cr_assert_eq(verify("-CAfile", certs.ca_file, "-verify_ip", "127.0.0.1", certs.server_cert),
                 0);
    cr_assert_eq(verify("-CAfile", certs.ca_file, "-verify_hostname", "localhost",
                        certs.server_cert),
                 0);
    cr_assert_eq(verify("-CApath", certs.ca_dir, "-verify_ip", "127.0.0.1", certs.server_cert),
                 0, "ca_dir is not hashed");
    cr_assert_neq(verify("-CAfile", certs.ca_file, "-verify_ip", "127.0.0.1", certs.named_cert),
                  0, "the named certificate matches 127.0.0.1");
    cr_assert_eq(verify("-CAfile", certs.ca_file, "-verify_hostname", "redis.test",
                        certs.named_cert),
                 0);
    cr_assert_eq(verify("-CAfile", certs.ca_file, "-purpose", "sslclient", certs.client_cert), 0);
    cr_assert_neq(verify("-CAfile", certs.ca_file, "-purpose", "sslserver", certs.client_cert), 0,
                  "the client certificate is a server's");
    cr_assert_neq(verify("-CAfile", certs.other_ca_file, "-purpose", "sslserver",
                         certs.server_cert),
                  0, "the other CA is related");
    cr_assert_eq(certs.ca2_file[0], 0);

    t0 = now_s();
    cr_assert_eq(tls_certs_make_gen2(&certs), 0);
    cr_log_info("second generation: %.3f s", now_s() - t0);
    cr_assert_eq(verify("-CAfile", certs.ca2_file, "-verify_ip", "127.0.0.1",
                        certs.server2_cert),
                 0);
    cr_assert_eq(verify("-CAfile", certs.ca2_file, "-purpose", "sslclient", certs.client2_cert),
                 0);
    cr_assert_neq(verify("-CAfile", certs.ca_file, "-purpose", "sslclient", certs.client2_cert),
                  0, "CA1 trusts CA2's client");
    cr_assert_neq(verify("-CAfile", certs.ca2_file, "-purpose", "sslclient", certs.client_cert),
                  0, "CA2 trusts CA1's client");

    /* Replacing a file: the copy, not a link. */
    char dst[TLS_CERTS_PATH + 8];
    struct stat a, b;
    snprintf(dst, sizeof dst, "%s/in_use.crt", certs.dir);
    cr_assert_eq(tls_certs_replace(dst, certs.client_cert), 0);
    cr_assert_eq(verify("-CAfile", certs.ca_file, dst, NULL, NULL), 0);
    cr_assert_eq(tls_certs_replace(dst, certs.client2_cert), 0);
    cr_assert_eq(verify("-CAfile", certs.ca2_file, dst, NULL, NULL), 0);
    cr_assert(stat(dst, &a) == 0 && stat(certs.client2_cert, &b) == 0 && a.st_size == b.st_size);

    char dir[sizeof certs.dir];
    snprintf(dir, sizeof dir, "%s", certs.dir);
    tls_certs_remove(&certs);
    cr_assert(stat(dir, &a) != 0, "%s left behind", dir);
}

/* A plain connection to a TLS port gets no reply. */
static int plain_ping_fails(int port)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, (struct timeval){1, 0});
    redisReply *r;
    int fails;

    if (!c || c->err) {
        redisFree(c);
        return 1;
    }
    redisSetTimeout(c, (struct timeval){1, 0});
    r = redisCommand(c, "PING");
    fails = !r || r->type != REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(c);
    return fails;
}

Test(tls_fixture, server, .init = setup, .fini = teardown, .timeout = 60)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    struct fixture_tls bad = tls;
    redisReply *r;
    double t0;

    bad.cert_file = "server.crt";
    cr_assert_eq(redis_server_start_tls(&srv, NULL, &bad), -1, "a relative path was taken");
    redis_server_stop(&srv);

    t0 = now_s();
    cr_assert_eq(redis_server_start_tls(&srv, "pw", &tls), 0);
    cr_log_info("TLS server start: %.3f s", now_s() - t0);
    cr_assert(srv.tls.on);
    /* The fixture's own commands: the unix socket, plain. */
    r = redis_server_command(&srv, "CONFIG GET tls-port");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_assert_eq(atoi(r->element[1]->str), srv.port);
    freeReplyObject(r);
    r = redis_server_command(&srv, "CONFIG GET port");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_assert_str_eq(r->element[1]->str, "0", "a plain TCP port is open");
    freeReplyObject(r);
    cr_assert(plain_ping_fails(srv.port), "plain text answered on the TLS port");

    /* Mutual TLS: with the client certificate, PONG (after AUTH); without
     * one, refused. */
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, srv.port, "-a", "pw",
                     "PING"),
                 0, "%s", out);
    cr_assert(strstr(out, "PONG"), "%s", out);
    cr_assert_neq(cli(certs.ca_file, NULL, NULL, srv.port, "-a", "pw", "PING"), 0, "%s", out);
    cr_assert_null(strstr(out, "PONG"), "no client certificate, yet: %s", out);
    cr_log_info("without a client certificate: %s", out);
    /* A server the CA does not vouch for. */
    cr_assert_neq(cli(certs.other_ca_file, certs.client_cert, certs.client_key, srv.port, "-a",
                      "pw", "PING"),
                  0, "%s", out);

    /* A restart keeps TLS. */
    cr_assert_eq(redis_server_restart(&srv), 0);
    cr_assert(plain_ping_fails(srv.port));
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, srv.port, "-a", "pw",
                     "PING"),
                 0, "%s", out);
    cr_assert(strstr(out, "PONG"), "%s", out);
    redis_server_stop(&srv);

    /* The named certificate, client certificates not asked for. */
    tls = tls_certs_server_tls(&certs, TLS_CERTS_NAMED, "no");
    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0);
    cr_assert(cli_pong(certs.ca_file, NULL, NULL, srv.port), "%s", out);
    cr_assert_eq(cli(certs.ca_file, NULL, NULL, srv.port, "--sni", "redis.test", "PING"), 0);
    cr_assert_str_eq(out, "PONG\n");
    r = redis_server_command(&srv, "PING");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* A rotation: the server restarts trusting CA2 only, with CA2's
 * certificate; CA1's client is refused, CA2's taken. */
Test(tls_fixture, rotation, .init = setup, .fini = teardown, .timeout = 60)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    int port;

    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0);
    port = srv.port;
    cr_assert(cli_pong(certs.ca_file, certs.client_cert, certs.client_key, srv.port), "%s", out);
    cr_assert_eq(tls_certs_make_gen2(&certs), 0);
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER2, "yes");
    cr_assert_eq(redis_server_restart_tls(&srv, &tls), 0);
    cr_assert_eq(srv.port, port, "the port changed");
    cr_assert(cli_pong(certs.ca2_file, certs.client2_cert, certs.client2_key, srv.port), "%s",
              out);
    cr_assert(!cli_pong(certs.ca2_file, certs.client_cert, certs.client_key, srv.port),
              "CA1's client taken");
    cr_assert(!cli_pong(certs.ca_file, certs.client2_cert, certs.client2_key, srv.port),
              "CA1 trusts the new server");
    /* NULL keeps the settings. */
    cr_assert_eq(redis_server_restart_tls(&srv, NULL), 0);
    cr_assert(cli_pong(certs.ca2_file, certs.client2_cert, certs.client2_key, srv.port), "%s",
              out);
}

/* In out (redis-cli's lines), "name\nvalue\n" somewhere. */
static int has_field(const char *name, int value)
{
    char want[64];

    snprintf(want, sizeof want, "\n%s\n%d\n", name, value);
    return strstr(out, want) != NULL;
}

/* The number of slots node m serves in node 0's view (CLUSTER SLOTS). */
static int slots_of(int m)
{
    redisReply *r = redis_cluster_command(&cl, 0, "CLUSTER SLOTS");
    int n = 0;

    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
        redisReply *e = r->element[k];

        if (e->elements >= 3 && e->element[2]->elements >= 2 &&
            e->element[2]->element[1]->integer == cl.node[m].port)
            n += (int)(e->element[1]->integer - e->element[0]->integer + 1);
    }
    freeReplyObject(r);
    return n;
}

Test(tls_fixture, cluster, .init = setup, .fini = teardown, .timeout = 180)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    int masters[3], n = 0, slot, m, rep, succ;
    redisReply *r;
    double t0;

    t0 = now_s();
    cr_assert_eq(redis_cluster_start_tls(&cl, 3, 1, &tls), 0);
    cr_log_info("TLS cluster start: %.2f s", now_s() - t0);
    cr_assert_eq(cl.nnodes, 6);
    for (int i = 0; i < cl.nnodes; i++) {
        cr_assert(plain_ping_fails(cl.node[i].port), "node %d answered plain text", i);
        if (redis_cluster_is_master(&cl, i) == 1)
            masters[n++] = i;
    }
    cr_assert_eq(n, 3);

    /* Over TLS: CLUSTER SHARDS names each node's TLS port as "tls-port"
     * and gives no "port"; CLUSTER SLOTS names the TLS ports. */
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, cl.node[0].port,
                     "CLUSTER", "SHARDS", NULL),
                 0, "%s", out);
    for (int i = 0; i < cl.nnodes; i++)
        cr_assert(has_field("tls-port", cl.node[i].port), "node %d's port not in %s", i, out);
    cr_assert_null(strstr(out, "\nport\n"), "a plain port in %s", out);
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, cl.node[1].port,
                     "CLUSTER", "SLOTS", NULL),
                 0, "%s", out);
    /* The masters only: a replica whose replication offset is still 0 (no
     * write yet) is left out (Redis 7.0's isReplicaAvailable()). */
    for (int k = 0; k < 3; k++) {
        char want[32];

        snprintf(want, sizeof want, "\n%d\n", cl.node[masters[k]].port);
        cr_assert(strstr(out, want), "node %d's port not in %s", masters[k], out);
    }
    /* After a write on each master, the replicas' offsets are no longer 0:
     * CLUSTER SLOTS over TLS names them too, by their TLS ports. */
    for (int k = 0; k < 3; k++) {
        r = redis_cluster_command(&cl, masters[k], "FLUSHALL");
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    int seen = 0;
    for (int64_t end = fixture_now_ms() + 10000; seen < cl.nnodes && fixture_now_ms() < end;
         fixture_sleep_ms(100)) {
        cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, cl.node[2].port,
                         "CLUSTER", "SLOTS", NULL),
                     0, "%s", out);
        seen = 0;
        for (int i = 0; i < cl.nnodes; i++) {
            char want[32];

            snprintf(want, sizeof want, "\n%d\n", cl.node[i].port);
            seen += strstr(out, want) != NULL;
        }
    }
    cr_assert_eq(seen, cl.nnodes, "CLUSTER SLOTS: %s", out);

    cr_assert_eq(cli(certs.ca_file, NULL, NULL, cl.node[0].port, "PING", NULL, NULL), 1,
                 "no client certificate, yet: %s", out);

    /* A manual failover, then a master killed: the replicas take over
     * (over the TLS bus), and it comes back as a replica. */
    m = masters[0];
    slot = redis_cluster_first_slot(&cl, m);
    rep = redis_cluster_replica_of(&cl, m);
    cr_assert(slot >= 0 && rep >= 0);
    t0 = now_s();
    cr_assert_eq(redis_cluster_failover(&cl, slot), rep);
    cr_log_info("TLS CLUSTER FAILOVER: %.2f s", now_s() - t0);
    cr_assert_eq(redis_cluster_wait_ok(&cl, 20000), 0);
    m = masters[1];
    slot = redis_cluster_first_slot(&cl, m);
    rep = redis_cluster_replica_of(&cl, m);
    cr_assert(slot >= 0 && rep >= 0);
    t0 = now_s();
    cr_assert_eq(redis_cluster_signal(&cl, m, SIGKILL), 0);
    succ = redis_cluster_wait_slot_master(&cl, slot, m, 20000);
    cr_log_info("TLS failover after SIGKILL: %.2f s", now_s() - t0);
    cr_assert_eq(succ, rep);
    cr_assert_eq(redis_cluster_restart_node(&cl, m), 0);
    cr_assert_eq(redis_cluster_wait_ok(&cl, 20000), 0);
    for (int i = 0; i < 100 && redis_cluster_is_master(&cl, m) != 0; i++)
        fixture_sleep_ms(50);
    cr_assert_eq(redis_cluster_is_master(&cl, m), 0);

    /* Keys migrate (MIGRATE over TLS), and redis-cli --tls reshards. */
    r = redis_cluster_command(&cl, 0, "CLUSTER KEYSLOT {a}");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    slot = (int)r->integer;
    freeReplyObject(r);
    int from = redis_cluster_slot_master(&cl, slot, -1), to = -1;
    for (int i = 0; i < cl.nnodes && to < 0; i++)
        if (i != from && redis_cluster_is_master(&cl, i) == 1)
            to = i;
    cr_assert(from >= 0 && to >= 0);
    for (int k = 0; k < 5; k++) {
        r = redis_cluster_command(&cl, from, "SET {a}%d v", k);
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    cr_assert_eq(redis_cluster_migrate_slot(&cl, slot, from, to, 2, NULL, NULL), 0);
    cr_assert_eq(redis_cluster_wait_slot_master(&cl, slot, from, 10000), to);
    r = redis_cluster_command(&cl, to, "CLUSTER COUNTKEYSINSLOT %d", slot);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 5);
    freeReplyObject(r);
    int before = slots_of(to);
    t0 = now_s();
    cr_assert_eq(redis_cluster_reshard(&cl, from, to, 10), 0);
    cr_log_info("TLS reshard of 10 slots: %.2f s", now_s() - t0);
    cr_assert_eq(slots_of(to), before + 10);
}

Test(tls_fixture, sentinel, .init = setup, .fini = teardown, .timeout = 180)
{
    struct fixture_tls tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    char want[64];
    double t0;
    int m;

    t0 = now_s();
    cr_assert_eq(redis_sentinel_start_tls(&st, NULL, "dpw", NULL, &tls), 0);
    cr_log_info("TLS sentinel setup start: %.2f s", now_s() - t0);
    for (int i = 0; i < REDIS_SENTINEL_DATA; i++)
        cr_assert(plain_ping_fails(st.data[i].port), "data node %d answered plain text", i);
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++)
        cr_assert(plain_ping_fails(st.sentinel[j].port), "sentinel %d answered plain text", j);

    /* Over TLS, every sentinel names the master's TLS port. */
    snprintf(want, sizeof want, "127.0.0.1\n%d\n", st.data[0].port);
    for (int j = 0; j < REDIS_SENTINEL_SENTINELS; j++) {
        cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, st.sentinel[j].port,
                         "SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.master_name),
                     0, "%s", out);
        cr_assert_str_eq(out, want, "sentinel %d", j);
    }
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, st.sentinel[0].port,
                     "SENTINEL", "REPLICAS", st.master_name),
                 0, "%s", out);
    cr_assert(has_field("port", st.data[1].port) && has_field("port", st.data[2].port), "%s",
              out);
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, st.sentinel[0].port,
                     "SENTINEL", "SENTINELS", st.master_name),
                 0, "%s", out);
    cr_assert(has_field("port", st.sentinel[1].port) && has_field("port", st.sentinel[2].port),
              "%s", out);
    cr_assert_eq(redis_sentinel_master(&st), 0);

    /* A cut replica catches up; a write reaches the replicas. */
    redisReply *r = redis_sentinel_command(&st, 0, "SET k v");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(redis_sentinel_wait_synced(&st, 5000), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&st, 2, 1), 0);
    cr_assert_eq(redis_sentinel_cut_replica(&st, 2, 0), 0);
    cr_assert_eq(redis_sentinel_wait_synced(&st, 10000), 0);

    /* The master killed: a replica is promoted over TLS; the old master
     * comes back as a replica. */
    t0 = now_s();
    cr_assert_eq(redis_sentinel_signal(&st, 0, SIGKILL), 0);
    m = redis_sentinel_wait_master(&st, 0, 20000);
    cr_log_info("TLS Sentinel failover after SIGKILL: %.2f s", now_s() - t0);
    cr_assert(m == 1 || m == 2, "no new master (%d)", m);
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, st.sentinel[1].port,
                     "SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.master_name),
                 0, "%s", out);
    cr_assert_eq(atoi(out + 10), st.data[m].port, "%s", out);
    cr_assert_eq(redis_sentinel_restart_node(&st, 0), 0);
    for (int k = 0; k < 200 && redis_sentinel_role(&st, 0) != 0; k++)
        fixture_sleep_ms(50);
    cr_assert_eq(redis_sentinel_role(&st, 0), 0, "the old master is no replica");
    cr_assert_eq(redis_sentinel_wait_synced(&st, 10000), 0);

    /* A sentinel restarts with its rewritten conf, TLS still on. */
    cr_assert_eq(redis_sentinel_signal_sentinel(&st, 2, SIGKILL), 0);
    cr_assert_eq(redis_sentinel_restart_sentinel(&st, 2), 0);
    cr_assert(plain_ping_fails(st.sentinel[2].port));
    cr_assert_eq(cli(certs.ca_file, certs.client_cert, certs.client_key, st.sentinel[2].port,
                     "SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.master_name),
                 0, "%s", out);
    cr_assert_eq(atoi(out + 10), st.data[m].port, "%s", out);
}

/* A connection to 127.0.0.1:port, or -1. */
static int dial(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Wait up to ms for fd to be readable: 1 and what was read into buf
 * (NUL-terminated; empty at EOF), 0 on timeout. */
static int wait_read(int fd, int ms, char *buf, size_t size)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;

    buf[0] = 0;
    if (poll(&p, 1, ms) != 1)
        return 0;
    n = recv(fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return 1;
}

static int send_ping(int fd)
{
    return send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6;
}

Test(tls_fixture, proxy, .fini = teardown, .timeout = 60)
{
    char buf[256];
    struct proxy *p;
    int a, b, c;

    cr_assert_eq(redis_server_start(&srv, NULL), 0);
    p = proxy_start(srv.port);
    cr_assert_not_null(p);
    cr_assert_gt(proxy_port(p), 0);

    /* Forwards, each connection on its own. */
    a = dial(proxy_port(p));
    b = dial(proxy_port(p));
    cr_assert(a >= 0 && b >= 0);
    cr_assert(send_ping(a) && wait_read(a, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");
    cr_assert(send_ping(b) && wait_read(b, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");
    cr_assert_eq(proxy_open(p), 2);

    /* Held: a PING gets no answer within 500 ms, and the connection is
     * still open (no EOF, no reset); a new connection connects, but is
     * not served. */
    cr_assert_eq(proxy_hold(p, 1), 0);
    cr_assert(send_ping(a));
    cr_assert_eq(wait_read(a, 500, buf, sizeof buf), 0, "answered while held: %s", buf);
    cr_assert_eq(proxy_open(p), 2);
    c = dial(proxy_port(p));
    cr_assert_geq(c, 0, "no connect while held");
    cr_assert(send_ping(c));
    cr_assert_eq(wait_read(c, 300, buf, sizeof buf), 0);
    int err = 0;
    socklen_t len = sizeof err;
    cr_assert_eq(getsockopt(a, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    cr_assert_eq(err, 0);

    /* Resumed: the held PINGs' answers arrive. */
    cr_assert_eq(proxy_hold(p, 0), 0);
    cr_assert(wait_read(a, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");
    cr_assert(wait_read(c, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");
    cr_assert_eq(proxy_open(p), 3);
    cr_assert_eq(proxy_accepted(p), 3);

    /* A client's close closes its connection only. */
    close(b);
    for (int k = 0; k < 100 && proxy_open(p) != 2; k++)
        fixture_sleep_ms(10);
    cr_assert_eq(proxy_open(p), 2);
    cr_assert(send_ping(a) && wait_read(a, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");

    /* Dropped: EOF on both. */
    cr_assert_eq(proxy_drop(p, 0), 0);
    cr_assert(wait_read(a, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "", "not closed");
    cr_assert(wait_read(c, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "");
    cr_assert_eq(proxy_open(p), 0);
    close(a);
    close(c);

    /* New connections go on; with RST this time. */
    a = dial(proxy_port(p));
    cr_assert(send_ping(a) && wait_read(a, 2000, buf, sizeof buf));
    cr_assert_str_eq(buf, "+PONG\r\n");
    cr_assert_eq(proxy_drop(p, 1), 0);
    struct pollfd pf = {.fd = a, .events = POLLIN};
    cr_assert_eq(poll(&pf, 1, 2000), 1);
    cr_assert(recv(a, buf, sizeof buf, 0) < 0 && errno == ECONNRESET, "no reset");
    close(a);

    /* TLS passes through. */
    struct fixture_tls tls;
    cr_assert_eq(tls_certs_make(&certs), 0);
    tls = tls_certs_server_tls(&certs, TLS_CERTS_SERVER, "yes");
    redis_server_stop(&srv);
    cr_assert_eq(redis_server_start_tls(&srv, NULL, &tls), 0);
    cr_assert_eq(proxy_set_target(p, srv.port), 0);
    cr_assert(cli_pong(certs.ca_file, certs.client_cert, certs.client_key, proxy_port(p)), "%s",
              out);
    int port = proxy_port(p);
    proxy_stop(p);
    cr_assert_lt(dial(port), 0, "the proxy still listens");
}
