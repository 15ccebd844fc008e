/*
 * bench/redis_sentinel.h - a private Redis Sentinel setup for tests.
 *
 * redis_sentinel_start() runs one master and two replicas (`redis-server`
 * with --repl-diskless-sync-delay 0, replicas started with --replicaof,
 * persistence off, DEBUG allowed from loopback, each with a redis.conf of
 * its own so that Sentinel's CONFIG REWRITE works) and three sentinels
 * (`redis-server sentinel.conf --sentinel`, the conf writable in their
 * directory: `sentinel monitor NAME 127.0.0.1 PORT 2`,
 * down-after-milliseconds 1000, failover-timeout 6000, parallel-syncs 2),
 * all on free 127.0.0.1 ports, each in its own directory under one fresh
 * temporary directory.  It returns once the master is up, both replicas
 * are in sync (master_link_status:up) and every sentinel names the master
 * and sees both replicas healthy and the two other sentinels.  Every server
 * dies with the thread that started it (PR_SET_PDEATHSIG); every wait is
 * bounded.
 *
 * Data nodes are numbered 0..2 (node 0 is the first master), sentinels
 * 0..2.  Which data node is the master changes with failovers: ask
 * (redis_sentinel_master, redis_sentinel_wait_master, redis_sentinel_role)
 * rather than remember.
 *
 * Measured on a 2-core machine shared with other jobs: start (servers up,
 * replicas synced, every sentinel knowing the two replicas and the two
 * other sentinels) 2.7-3.9 s, most of it the sentinels' hello messages
 * (every 2 s); from SIGKILL of the master until a majority of the
 * sentinels name a replica and its ROLE says master 2.3-2.4 s (down-after
 * 1 s, quorum, leader election, promotion).  SENTINEL FAILOVER promotes a
 * replica within 0.3 s and the sentinels name it after 1.1 s, but the old
 * master, still running, goes on taking writes for 11.2-11.3 s: Sentinel tells
 * it to follow the new master only once it has reported ROLE master for
 * 8 s (4 hello periods) after the switch.  Those writes are then lost.
 * Give waits 10-20 s of slack.  Each setup is six servers: run one at a
 * time (Criterion: --jobs 1).
 *
 * Passwords: data_password makes every data node require it (requirepass)
 * and use it towards its master (masterauth), and the sentinels use it
 * (auth-pass); sentinel_password makes the sentinels require it
 * (requirepass in their conf; they use it among themselves too).  The
 * helpers here AUTH on their own.
 *
 * Traffic goes to 127.0.0.1 only.  Functions return 0 / an index on
 * success and -1 on failure, with a message on stderr.
 */
#ifndef LW_BENCH_REDIS_SENTINEL_H
#define LW_BENCH_REDIS_SENTINEL_H

#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#define REDIS_SENTINEL_DATA 3      /* one master, two replicas */
#define REDIS_SENTINEL_SENTINELS 3
#define REDIS_SENTINEL_QUORUM 2

struct redis_sentinel_node {
    pid_t pid;          /* 0 when not running */
    int stopped;        /* SIGSTOPped (or cut off): counts as down for the
                           waits and commands until SIGCONT */
    int port;
    char dir[300];      /* its working directory (conf, log) */
};

struct redis_sentinel {
    char dir[256];                 /* the temporary directory holding all */
    char master_name[64];          /* as monitored, default "mymaster" */
    char data_password[64];        /* "" when none */
    char sentinel_password[64];    /* "" when none */
    struct redis_sentinel_node data[REDIS_SENTINEL_DATA];
    struct redis_sentinel_node sentinel[REDIS_SENTINEL_SENTINELS];
    int sentinel_port[REDIS_SENTINEL_SENTINELS]; /* = sentinel[j].port */
};

/*
 * redis_sentinel_start - start it all and wait (20 s at most) until the
 * sentinels know the master, both replicas and each other.  master_name
 * NULL: "mymaster"; either password may be NULL (none).  On failure
 * everything started is stopped again.
 */
int redis_sentinel_start(struct redis_sentinel *s, const char *master_name,
                         const char *data_password, const char *sentinel_password);

/* redis_sentinel_stop - stop every process (even SIGSTOPped ones) and
 * remove the temporary directory.  Safe on a zeroed or stopped setup. */
void redis_sentinel_stop(struct redis_sentinel *s);

/*
 * redis_sentinel_command - one command to data node i on a fresh connection
 * (AUTH first with the data password; 2 s timeout).  The reply (free it with
 * freeReplyObject), or NULL when node i is down (killed, stopped, cut off)
 * or did not answer.
 */
redisReply *redis_sentinel_command(const struct redis_sentinel *s, int i, const char *fmt, ...);

/* redis_sentinel_ask - the same to sentinel j (AUTH with the sentinel
 * password). */
redisReply *redis_sentinel_ask(const struct redis_sentinel *s, int j, const char *fmt, ...);

/* redis_sentinel_addrs - "127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2" of the
 * sentinels into buf. */
void redis_sentinel_addrs(const struct redis_sentinel *s, char *buf, size_t size);

/* redis_sentinel_node_by_port - the data node on port, or -1. */
int redis_sentinel_node_by_port(const struct redis_sentinel *s, int port);

/* redis_sentinel_role - 1 when data node i says ROLE master, 0 when it is
 * a replica, -1 when down. */
int redis_sentinel_role(const struct redis_sentinel *s, int i);

/*
 * redis_sentinel_master - the data node the first live sentinel names
 * (SENTINEL GET-MASTER-ADDR-BY-NAME), or -1 when none answers or it names
 * no data node of ours.
 */
int redis_sentinel_master(const struct redis_sentinel *s);

/*
 * redis_sentinel_wait_master - wait up to timeout_ms until a majority of
 * the live sentinels name one and the same live data node other than
 * not_node (-1: any) and that node's ROLE says master.  After killing the
 * master m: wait_master(s, m, 20000) returns its successor.  The node
 * index, or -1 on timeout.
 */
int redis_sentinel_wait_master(const struct redis_sentinel *s, int not_node, int timeout_ms);

/* redis_sentinel_failover - SENTINEL FAILOVER through the first live
 * sentinel that accepts it (a forced failover, no agreement needed).  0,
 * or -1 (e.g. -INPROG: one is under way). */
int redis_sentinel_failover(struct redis_sentinel *s);

/* redis_sentinel_failover_when_ready - redis_sentinel_failover() every
 * 250 ms until a sentinel takes it (-INPROG while the last failover is
 * wound up, -NOGOODSLAVE until a replica is seen healthy again), for at
 * most timeout_ms.  0, or -1 on timeout. */
int redis_sentinel_failover_when_ready(struct redis_sentinel *s, int timeout_ms);

/*
 * redis_sentinel_signal - send sig to data node i (SIGKILL, SIGTERM,
 * SIGSTOP, SIGCONT).  After SIGKILL or SIGTERM the node is reaped and
 * counts as down; its directory stays for redis_sentinel_restart_node().
 * After SIGSTOP it counts as down (commands to it return NULL at once, the
 * waits leave it out) until SIGCONT.  Sentinel marks a stopped node
 * +sdown after 1 s.
 */
int redis_sentinel_signal(struct redis_sentinel *s, int i, int sig);

/*
 * redis_sentinel_restart_node - start the (killed) data node i again on its
 * port as a replica of the master the sentinels name now (which must be
 * another node), and wait for PING.  Sentinel sees it again within a few
 * seconds; follow with redis_sentinel_wait_synced() for its data.
 */
int redis_sentinel_restart_node(struct redis_sentinel *s, int i);

/*
 * redis_sentinel_signal_sentinel - send sig to sentinel j, as above.  A
 * sentinel SIGSTOPped for more than 2 s enters TILT mode for 30 s after
 * SIGCONT (it acts on nothing then); kill it instead to take it out of
 * the vote.
 */
int redis_sentinel_signal_sentinel(struct redis_sentinel *s, int j, int sig);

/* redis_sentinel_restart_sentinel - start the (killed) sentinel j again on
 * its port with its conf (as Sentinel rewrote it) and wait for PING. */
int redis_sentinel_restart_sentinel(struct redis_sentinel *s, int j);

/*
 * redis_sentinel_wait_synced - wait up to timeout_ms until every live
 * replica of the current master (ROLE slave, link connected) has processed
 * the master's replication offset as read at the call.  0, or -1 on
 * timeout or when no live master answers.
 */
int redis_sentinel_wait_synced(const struct redis_sentinel *s, int timeout_ms);

/*
 * redis_sentinel_cut_replica - on != 0: cut replica i off replication.  It
 * is SIGSTOPped and the master then drops its replication link (CLIENT
 * KILL ADDR of that link), because a stopped replica alone would still
 * apply what waits in its socket buffer when it runs again: writes after
 * the cut never reach it.  It counts as down here (as after SIGSTOP), and
 * in Sentinel's view it is +sdown after 1 s: it answers no PING, and no
 * sentinel will promote it while cut.  on == 0: SIGCONT; it reconnects and
 * catches up (partial resync), and the sentinels see it again after about a
 * second; a replica let go on right after its master was killed may be
 * promoted without the writes it missed (less than 10 s cut off, with
 * down-after 1 s).  0 or -1 (i is not a live replica).
 */
int redis_sentinel_cut_replica(struct redis_sentinel *s, int i, int on);

#endif
