/*
 * tests/proxy_faults.h - the faults of the fault model that need more
 * than contention_run.h's: Redis down past the lease (killed and started
 * empty, or shut down saving its keys), and a proxy in front of it
 * (tests/fixtures/proxy.h, px, which the includer starts) holding every
 * byte or refusing connections past the lease.  For test_fault_model.c
 * and test_election_faults.c; the includer includes contention_run.h
 * and proxy.h first.
 */
#ifndef LW_TESTS_PROXY_FAULTS_H
#define LW_TESTS_PROXY_FAULTS_H

#define DOWN_MS LONG_FAULT_MS /* past the lease: every holder is told during it */

static struct proxy *px;

/* The fixture's server, the contenders' log, and the proxy they all
 * connect through. */
static inline void proxy_faults_setup(void)
{
    server_start();
    contention_open();
    px = proxy_start(srv.port);
    cr_assert_not_null(px);
    contender_port = proxy_port(px);
}

static inline void proxy_faults_teardown(void)
{
    proxy_stop(px);
    contention_close();
    server_stop();
}

/* Redis killed, and started again empty DOWN_MS later: the clients'
 * requests wait for a connection meanwhile (their command timeout is
 * longer), and go to the empty server.  Its RDB file, if a restart that
 * kept the keys left one, goes first. */
static inline int fault_restart_empty(void)
{
    char rdb[400];
    int port = srv.port;

    snprintf(rdb, sizeof rdb, "%s/dump.rdb", srv.dir);
    if (redis_server_signal(&srv, SIGKILL))
        return 0;
    unlink(rdb);
    sleep_ms(DOWN_MS);
    return redis_server_restart(&srv) == 0 && srv.port == port;
}

/* SHUTDOWN SAVE, and started again from the RDB file DOWN_MS later: the
 * keys are back, the leases in them ran out meanwhile. */
static inline int fault_restart_keeping_late(void)
{
    return restart_keeping(1, DOWN_MS);
}

/* The proxy holds every byte, both ways, past the lease: requests written
 * meanwhile reach Redis late, and their replies later still. */
static inline int fault_proxy_hold(void)
{
    if (proxy_hold(px, 1))
        return 0;
    sleep_ms(DOWN_MS);
    return proxy_hold(px, 0) == 0;
}

/* The proxy drops every connection and holds the new ones in its listen
 * backlog past the lease: requests wait unwritten in the clients, and go
 * once it lets go. */
static inline int fault_proxy_refuse(void)
{
    if (proxy_hold(px, 1) || proxy_drop(px, 1))
        return 0;
    sleep_ms(DOWN_MS);
    return proxy_hold(px, 0) == 0;
}

/* The faults every proxy-fronted model runs, in this order (an array's
 * initializers; test_fault_model.c adds its own after them). */
#define PROXY_FAULTS                                                                  \
    {"restart-empty", fault_restart_empty}, {"restart-keeping", fault_restart_keeping_late}, \
        {"client-kill", fault_client_kill}, {"pubsub-kill", fault_pubsub_kill},            \
        {"sigstop-long", fault_stop_long}, {"proxy-hold", fault_proxy_hold},               \
        {"proxy-refuse", fault_proxy_refuse}

#endif
