/*
 * bench/redis_cluster.h - a private Redis Cluster for tests and benchmarks.
 *
 * redis_cluster_start() runs masters * (1 + replicas_per_master)
 * `redis-server --cluster-enabled yes` on free 127.0.0.1 ports, each in its
 * own directory under one fresh temporary directory (own nodes.conf,
 * persistence off, DEBUG allowed from loopback, --cluster-node-timeout 1000,
 * --repl-diskless-sync-delay 0, no replica migration, and a replica may
 * always fail over however long it was cut off: tests cut replicas off on
 * purpose), joins them with `redis-cli --cluster create --cluster-replicas
 * R --cluster-yes`, and waits until every node says cluster_state:ok and
 * all nodes agree on who serves every slot.  Each server dies with the
 * thread that started it (PR_SET_PDEATHSIG); every wait is bounded.
 *
 * Nodes are numbered 0..nnodes-1 in start order; which of them are masters
 * changes with failovers, so ask (redis_cluster_is_master,
 * redis_cluster_slot_master) rather than remember.  Right after start,
 * nodes 0..masters-1 are the masters (redis-cli's order).
 *
 * Measured on a 2-core machine shared with other jobs, 3 masters + 3
 * replicas: start (servers up, create, every node ok and agreeing,
 * replicas synced) 2.2 s; from SIGKILL of a master until every live node
 * names its replica as the slots' master 2.4 s (node timeout 1 s, failure
 * report, election).  Give waits 10-20 s of slack.  Each cluster is six
 * servers: run one at a time (Criterion: --jobs 1).
 *
 * Traffic goes to 127.0.0.1 only.  Functions return 0 / a node index on
 * success and -1 on failure, with a message on stderr.
 */
#ifndef LW_BENCH_REDIS_CLUSTER_H
#define LW_BENCH_REDIS_CLUSTER_H

#include <sys/types.h>

#include <hiredis/hiredis.h>

#define REDIS_CLUSTER_MAX_NODES 12
#define REDIS_CLUSTER_SLOTS 16384

struct redis_cluster_node {
    pid_t pid;           /* 0 when not running */
    int stopped;         /* SIGSTOPped by redis_cluster_signal(): counts as
                            down for the waits and commands until SIGCONT */
    int port;            /* client port */
    int bus_port;        /* cluster bus port (--cluster-port) */
    char dir[300];       /* its working directory (nodes.conf, redis.log) */
    char id[41];         /* its cluster node id, once joined */
};

struct redis_cluster {
    int nnodes;
    int masters;                 /* as created; failovers do not change it */
    int replicas_per_master;
    char dir[256];               /* the temporary directory holding all */
    struct redis_cluster_node node[REDIS_CLUSTER_MAX_NODES];
};

/*
 * redis_cluster_start - start and create a cluster of masters masters with
 * replicas_per_master replicas each (masters >= 3, as redis-cli requires),
 * and wait (20 s at most) until it is ok everywhere.  On failure everything
 * started is stopped again.
 */
int redis_cluster_start(struct redis_cluster *c, int masters, int replicas_per_master);

/* redis_cluster_stop - stop every node (even SIGSTOPped ones) and remove
 * the temporary directory.  Safe on a zeroed or already stopped cluster. */
void redis_cluster_stop(struct redis_cluster *c);

/*
 * redis_cluster_command - one command to node i on a fresh connection (2 s
 * timeout).  The reply (free with freeReplyObject), or NULL when node i is
 * down (killed or stopped) or did not answer.
 */
redisReply *redis_cluster_command(const struct redis_cluster *c, int i, const char *fmt, ...);

/* redis_cluster_seeds - "127.0.0.1:P0,127.0.0.1:P1,..." of all nodes into
 * buf (for lw_client_config.cluster_seeds-style lists and -c options). */
void redis_cluster_seeds(const struct redis_cluster *c, char *buf, size_t size);

/* redis_cluster_is_master - 1 when node i says ROLE master, 0 when it is a
 * replica, -1 when down. */
int redis_cluster_is_master(const struct redis_cluster *c, int i);

/*
 * redis_cluster_slot_master - the node serving slot in node ask's view
 * (CLUSTER SLOTS), or -1.  ask < 0: the first live node's view.
 */
int redis_cluster_slot_master(const struct redis_cluster *c, int slot, int ask);

/* redis_cluster_replica_of - a live node replicating master m (ROLE), or
 * -1.  Use it to pick the replica to cut off or to promote. */
int redis_cluster_replica_of(const struct redis_cluster *c, int m);

/* redis_cluster_node_by_port - the index of the node on port, or -1. */
int redis_cluster_node_by_port(const struct redis_cluster *c, int port);

/*
 * redis_cluster_signal - send sig to node i (SIGKILL, SIGSTOP, SIGCONT,
 * SIGTERM).  After SIGKILL or SIGTERM the node is reaped and counts as down;
 * its directory (and nodes.conf) stays for redis_cluster_restart_node().
 * After SIGSTOP it counts as down too (commands to it return NULL at once,
 * the waits leave it out, so one can wait for its replica to take over
 * while it is stopped) until SIGCONT.
 */
int redis_cluster_signal(struct redis_cluster *c, int i, int sig);

/*
 * redis_cluster_restart_node - start node i again on its ports with its
 * nodes.conf, so it rejoins as the same node (a failed-over master comes
 * back as a replica of its successor).  Waits for PING only: follow with
 * redis_cluster_wait_ok().
 */
int redis_cluster_restart_node(struct redis_cluster *c, int i);

/*
 * redis_cluster_wait_ok - wait up to timeout_ms until every live (not killed,
 * not stopped) node
 * reports cluster_state:ok and all of them name the same live master for
 * every slot (CLUSTER SLOTS).  0, or -1 on timeout.
 */
int redis_cluster_wait_ok(const struct redis_cluster *c, int timeout_ms);

/*
 * redis_cluster_wait_slot_master - wait up to timeout_ms until every live
 * node names one and the same live master for slot, other than not_node
 * (-1: any).  After killing a master m: wait_slot_master(c, slot, m, 15000)
 * returns its successor.  The node index, or -1 on timeout.
 */
int redis_cluster_wait_slot_master(const struct redis_cluster *c, int slot, int not_node,
                                   int timeout_ms);

/*
 * redis_cluster_first_slot - the lowest slot node m serves in its own view,
 * or -1.  Handy to find "a slot of that master".
 */
int redis_cluster_first_slot(const struct redis_cluster *c, int m);

/*
 * redis_cluster_failover - a graceful failover of the master serving slot
 * to its replica (CLUSTER FAILOVER on the replica), waited for until every
 * live node names the replica (10 s).  Redis drops a manual failover that
 * has not finished within 5 s, which a loaded machine can make it miss: it
 * is asked again, three times at most.  The new master's index, or -1.
 */
int redis_cluster_failover(struct redis_cluster *c, int slot);

/* The steps of redis_cluster_migrate_slot(), passed to its hook. */
enum redis_cluster_step {
    REDIS_CLUSTER_MARKED,     /* IMPORTING on the target, MIGRATING on the
                                 source; no key moved yet (ASK for new keys) */
    REDIS_CLUSTER_KEYS_SOME,  /* one MIGRATE of up to `batch` keys done, more
                                 may remain on the source (ASK / TRYAGAIN) */
    REDIS_CLUSTER_KEYS_DONE,  /* every key moved; SETSLOT NODE not yet sent */
    REDIS_CLUSTER_ASSIGNED    /* SETSLOT NODE sent to every master: done */
};

/* A hook between steps; return non-zero to abort the migration there (the
 * slot is left half-migrated, as a crashed operator would leave it). */
typedef int redis_cluster_hook(struct redis_cluster *c, enum redis_cluster_step step,
                               void *arg);

/*
 * redis_cluster_migrate_slot - move slot from master `from` to master `to`
 * by hand, as redis-cli does: CLUSTER SETSLOT IMPORTING / MIGRATING,
 * GETKEYSINSLOT + MIGRATE ... KEYS in batches of batch keys (>= 1), then
 * SETSLOT NODE on the target, the source and the other masters.  hook (may
 * be NULL) runs after each step.  0, 1 when the hook aborted, -1 on error.
 */
int redis_cluster_migrate_slot(struct redis_cluster *c, int slot, int from, int to, int batch,
                               redis_cluster_hook *hook, void *arg);

/*
 * redis_cluster_reshard - move nslots slots from master from to master to
 * with `redis-cli --cluster reshard` (keys and all; 60 s at most), then
 * wait for agreement.  0 or -1.
 */
int redis_cluster_reshard(struct redis_cluster *c, int from, int to, int nslots);

#endif
