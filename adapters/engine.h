/*
 * adapters/engine.h - the transport: one Redis connection (or, in a
 * Redis Cluster, one per master), driven by a libev loop, that any thread
 * can send commands through.
 *
 * This is the interface core/ builds the locks on; it is not installed.
 *
 * Threads.  An engine runs on one libev loop: its own, on a thread it starts
 * (the default), or the caller's (embedded mode: cfg.loop set; nothing runs
 * on a thread of ours and the caller runs the loop).  The loop's thread is
 * the "engine thread".  hiredis is touched by the engine thread only.  Other
 * threads hand requests over through a lock-free queue and ev_async_send().
 *
 * Requests.  A request is a struct request the caller owns, holding a
 * command already in Redis's wire format (RESP).  engine_submit() queues
 * it and returns; its callback runs later on the engine thread, exactly once,
 * with the reply or an error.  engine_call() does the same and waits.
 * Commands are pipelined: the engine writes each as soon as it has it and
 * never waits for a reply before the next write, up to `max_inflight`
 * commands on the wire; the rest wait their turn in order (back-pressure).
 *
 * Order.  Requests from one thread reach Redis, and complete, in the order
 * that thread submitted them, but for two exceptions: a command answered
 * NOSCRIPT is sent again behind its SCRIPT LOAD, so it reaches Redis, and
 * completes, after commands submitted later; and an urgent request
 * (request_urgent(): the watchdog's renewals) is written before every
 * request without the mark that waits on its connection, whenever they
 * were submitted.
 *
 * Urgent requests.  Past what one Redis can serve, what waits to be
 * written waits longer and longer; renewals must not wait behind acquires.
 * Each connection keeps its urgent requests in a FIFO of their own,
 * written first, and `urgent_reserve` of its `max_inflight` slots are
 * theirs: other requests stop at max_inflight - urgent_reserve in flight,
 * and urgent ones do not wait for a full pipeline to drain by half (they
 * go whenever a slot is free).
 *
 * Failures.  Nothing hangs and nothing is dropped silently:
 *   - a command without a reply `command_timeout_ms` after it was written
 *     fails with LW_ETIMEDOUT, and so does everything else in flight: the
 *     connection is dropped and made again;
 *   - a request that waits `command_timeout_ms` for a connection (or for
 *     room in the pipeline) fails with the reason the last connection
 *     attempt failed (LW_ECONNREFUSED, LW_EAUTH, ...), or LW_ETIMEDOUT;
 *   - a connection that breaks fails its commands in flight with
 *     LW_ECONNLOST;
 *   - engine_free() fails everything still queued with LW_ESHUTDOWN.
 * Timeouts are checked at every tick of the engine's wheel, so a request
 * fails at most one tick after its time is up.
 *
 * Scripts.  The Lua scripts given at creation are loaded with SCRIPT LOAD
 * on every connection before any other command, and called with EVALSHA
 * (request_evalsha()).  A NOSCRIPT reply (Redis restarted or flushed
 * its scripts) loads the script again and re-sends the command, once.
 */
#ifndef LW_ADAPTERS_ENGINE_H
#define LW_ADAPTERS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "endpoint.h"
#include "log.h"
#include "request.h"

struct ev_loop;
struct engine;

/*
 * Called on the engine thread at every tick with the timers of
 * engine_wheel() that fell due (see lw_wheel_advance()).
 */
typedef void engine_tick_fn(struct engine *engine, struct lw_timer_list *due,
                            void *arg);

/* Cluster geometry. */
#define LW_CLUSTER_SLOTS 16384u
#define LW_ENGINE_MAX_SEEDS 64u
#define LW_ENGINE_MAX_SENTINELS 64u
#define LW_ENGINE_DEFAULT_SENTINEL_REFRESH_MS 1000u

/*
 * What a topology change did, for engine_topology_fn.  Bitmaps of
 * LW_CLUSTER_SLOTS bits (slot s is bit s % 8 of byte s / 8).
 */
struct topology_change {
    const uint8_t *failover; /* slots whose master changed by a failover: the
                                new master was the old one's replica (same
                                shard), so what the old master acknowledged
                                may not have reached it */
    const uint8_t *moved;    /* slots that moved to another shard (migration:
                                MIGRATE carried the keys) */
    unsigned failovers;      /* shards that failed over in this change */
};

/*
 * Called on the engine thread after a read of the slot map found it
 * changed since the previous read, before requests are routed by the new
 * map.  A MOVED patches the map at once and asks for a read: its change is
 * reported by that read (within about 100 ms), compared with the read
 * before, so nothing is reported twice or as a guess.  In Sentinel mode:
 * once when the first master is found (no slot, failovers 0), and at every
 * switch of master, as a failover of every slot (failovers 1).
 */
typedef void engine_topology_fn(const struct topology_change *change, void *arg);

#define LW_ENGINE_DEFAULT_MAX_INFLIGHT 4096u
#define LW_ENGINE_MAX_TIMEOUT_MS LW_ENDPOINT_MAX_TIMEOUT_MS
#define LW_ENGINE_MAX_INFLIGHT (1u << 20)
#define LW_ENGINE_MAX_SCRIPTS 64u
#define LW_ENGINE_DEFAULT_TOPOLOGY_REFRESH_MS 10000u

struct engine_config {
    struct endpoint node;         /* every data node's connection: the address
                                     (one Redis; ignored with seeds or
                                     sentinels), credentials, db (not in a
                                     cluster), timeouts, back-off */
    uint32_t max_inflight;        /* commands written but not answered, per
                                     link; 1..MAX */
    uint32_t urgent_reserve;      /* of those, the slots only urgent requests
                                     may take; 0 (default)..max_inflight - 1 */
    const char *const *scripts;   /* Lua bodies; script i is request_evalsha(i) */
    unsigned nscripts;            /* 0..LW_ENGINE_MAX_SCRIPTS */
    struct lw_wheel_config wheel; /* the engine's wheel: its tick paces timeouts */
    engine_tick_fn *on_tick;      /* may be NULL */
    void *tick_arg;
    struct ev_loop *loop;   /* embedded mode: run on this loop; NULL: own thread */
    uint32_t side_block_ms; /* commands on the side lane may block the
                               server this long (WAIT's timeout): they time
                               out that much after command_timeout_ms;
                               0..LW_ENGINE_MAX_TIMEOUT_MS */
    /* Redis Cluster: nseeds > 0 makes the engine a cluster client (see
     * "Clusters" below). */
    const char *const *seeds;        /* "host:port" each */
    unsigned nseeds;                 /* 0..LW_ENGINE_MAX_SEEDS */
    uint32_t topology_refresh_ms;    /* periodic slot map refresh; 0: default.
                                     With sentinels: how often they are asked
                                     again besides +switch-master; 0:
                                     LW_ENGINE_DEFAULT_SENTINEL_REFRESH_MS */
    engine_topology_fn *on_topology; /* may be NULL */
    void *topology_arg;
    /* Redis Sentinel: nsentinels > 0 finds the master through them (see
     * "Sentinel" below).  Not with seeds: a config with both is refused
     * (LW_EINVAL), neither half dropped. */
    const char *const *sentinels; /* "host:port" each */
    unsigned nsentinels;          /* 0..LW_ENGINE_MAX_SENTINELS */
    const char *sentinel_master;  /* the master's name (required with them) */
    struct endpoint sentinel;     /* the sentinels' connections: their own
                                     username and password (the address is
                                     each sentinel's; the db unused) */
    log_fn *log;                  /* the program's log hook (log.h), or NULL */
    void *log_arg;
    int log_level; /* the least severe level said: LOG_* */
};

/* Counters since creation.  Snapshots from any thread. */
struct engine_stats {
    uint64_t sent;               /* commands written, set-up commands included */
    uint64_t replies;            /* replies read */
    uint64_t error_replies;      /* of which Redis errors */
    uint64_t failed;             /* requests completed with an LW_E* code */
    uint64_t timeouts;           /* requests failed with LW_ETIMEDOUT */
    uint64_t reconnects;         /* connections made after the first */
    uint64_t script_reloads;     /* NOSCRIPT replies that loaded a script again */
    uint64_t waiting;            /* requests the engine holds, not yet written */
    uint64_t inflight;           /* commands on the wire now */
    uint64_t inflight_max;       /* the most ever on the wire at once */
    uint64_t topology_refreshes; /* cluster: slot maps read */
    uint64_t redirects;          /* cluster: MOVED and ASK replies followed */
    uint64_t unsettled;          /* cluster: TRYAGAIN, CLUSTERDOWN, LOADING, READONLY,
                                    MASTERDOWN replies (and refused connections to a
                                    failed master) retried */
    uint64_t switches;           /* Sentinel: switches to another master seen */
    uint64_t taken_late;         /* submitted requests found a tick late, their
                                    wake-up missed (engine.c, take_late()) */
    uint64_t tls_handshakes;     /* TLS handshakes done (the links') */
    uint64_t tls_resumed;        /* of which resumed a session */
    uint64_t host_sleeps;        /* the host was found to have slept (engine.c,
                                    "Time") */
};

/* engine_config_init - the defaults: endpoint_init()'s node (and
 * sentinels), the limits above, the default wheel, own thread. */
void engine_config_init(struct engine_config *cfg);

/*
 * engine_new - validate cfg, create an engine and start connecting.
 * Returns 0 and sets *out, or LW_EINVAL / LW_ERANGE (a bad field), LW_ENOHOST
 * (the host name does not resolve), LW_ENOMEM.  The connection is made in
 * the background: requests submitted before it is up wait for it, up to
 * the command timeout; but until a first connection has been set up, a
 * refused connection, a missing unix socket or a wrong password fails them
 * at once (LW_ECONNREFUSED, LW_ECONNECT, LW_EAUTH).  A request whose
 * caller waits (request_wait_until()) waits no longer than that wait,
 * and through a refusal or a missing socket (request_waits_through()).
 * In embedded mode call it on the loop's thread.
 */
int engine_new(const struct engine_config *cfg, struct engine **out);

/*
 * engine_free - stop the engine.  Every request not yet completed fails
 * with LW_ESHUTDOWN (callbacks run, blocked callers return), then the
 * connection, the thread and all memory go.  Requests submitted while it
 * runs fail with LW_ESHUTDOWN too; calls that start after it returned are
 * use-after-free.  In embedded mode call it on the loop's thread, outside
 * the engine's callbacks.  Returns 0 (NULL is ignored), or LW_EDEADLK and
 * does nothing when called from one of the engine's own callbacks (or, with
 * its own thread, on that thread; embedded, on any other thread).
 */
int engine_free(struct engine *engine);

/*
 * engine_submit - any thread: queue req; done(req, reply, err, arg) runs
 * on the engine thread once it completes.  req must stay valid and
 * untouched until then.  Returns 0, LW_EINVAL (NULL, no command and not a
 * task, script out
 * of range), LW_ESHUTDOWN.  On error done is not called.
 */
int engine_submit(struct engine *engine, struct request *req,
                  request_fn *done, void *arg);

/*
 * engine_call - any thread but the engine's: submit req and wait until it
 * completes.  done (may be NULL) runs first on the engine thread, where it
 * can read the reply.  Returns the request's error (0 when a reply came,
 * even a Redis error reply), or LW_EINVAL / LW_ESHUTDOWN as engine_submit,
 * or LW_EDEADLK on the engine thread.
 */
int engine_call(struct engine *engine, struct request *req,
                request_fn *done, void *arg);

/*
 * engine_queue_unwoken - for tests of the hand-over's safety net: what
 * engine_submit() does, less the wake-up (ev_async_send()), as a
 * submitter held up between the two leaves it.  req's fields are the
 * caller's to set (done, arg); the tick takes it (taken_late).
 */
void engine_queue_unwoken(struct engine *engine, struct request *req);

/* engine_on_thread - 1 when called on the engine thread. */
int engine_on_thread(const struct engine *engine);

/* engine_wheel - the engine's wheel: its owner is the engine thread. */
struct lw_wheel *engine_wheel(struct engine *engine);

/* engine_loop - the loop the engine runs on. */
struct ev_loop *engine_loop(struct engine *engine);

/*
 * engine_status - any thread: 0 while connected and set up, otherwise why
 * the last connection attempt failed (LW_ECONNREFUSED, LW_EAUTH, LW_ECONNECT
 * for any other reason, ...), or LW_ETIMEDOUT before the first attempt has
 * ended.  Requests that time out waiting for a connection fail with it.
 */
int engine_status(const struct engine *engine);

/*
 * engine_last_error - any thread: why the engine's last failed
 * connection attempt failed (any of its connections, and the pub/sub
 * router's and the sentinels' that share its report): the LW_E* code, 0
 * when none has yet, and a line with the address and the reason into buf
 * (len bytes; NUL-terminated).
 */
int engine_last_error(struct engine *engine, char *buf, size_t len);

/* engine_logger - the engine's log hook, for core's lines (log.h):
 * engine thread only. */
struct logger *engine_logger(struct engine *engine);

/* engine_report - record a failure the engine's user found (a server
 * that lacks a command it needs), as a connection's are: the last error
 * (engine_last_error()) and the log (kind LOG_SERVER, at level). */
void engine_report(struct engine *engine, int err, int level, const char *text);

/* engine_get_stats - any thread: snapshot the counters. */
void engine_get_stats(const struct engine *engine, struct engine_stats *out);

/*
 * Clusters.  Outside a cluster there is one node, index 0, and routing is
 * ignored.  In a cluster a request goes where its route says:
 *   - by slot (request_route_slot): to the master serving the slot,
 *     following MOVED (the map is patched at once and a full refresh is
 *     scheduled) and ASK (ASKING, then the command, on the target; the map
 *     is kept), and retrying replies that say the cluster is moving
 *     (TRYAGAIN, CLUSTERDOWN, LOADING, READONLY, MASTERDOWN, a refused
 *     connection to a failed master) with back-off until the request's
 *     command timeout, then LW_EUNSETTLED;
 *   - to a node (request_route_node): to that node only, for calls that
 *     batch keys of many slots on one master.  No redirect is followed: a
 *     MOVED/ASK or unsettled reply is handed to the callback as it is, and
 *     a node that is no longer a master (or gone) fails the request with
 *     LW_EUNSETTLED at once;
 *   - unrouted: to any master that is up.
 * Node indexes are small numbers, stable for an address and never reused.
 * At most 16 redirects per request, then LW_EUNSETTLED.  The retries'
 * back-off is jittered, 20 ms doubling to 200 ms.  Each master has its own
 * link: its own connection, pipeline, max_inflight and script SHAs; all
 * links together have at most 2 * max_inflight in flight, so a master that
 * stopped answering holds up only its own requests.  The slot map is read
 * with CLUSTER SHARDS (CLUSTER SLOTS before Redis 7) at start, every
 * topology_refresh_ms, and at most every 100 ms after a MOVED, an
 * unsettled reply or a lost connection.  A slot-routed request lost with
 * its connection is sent again (it may have run): route commands that are
 * not safe to repeat by node.  engine_status() in a cluster: 0 once a
 * map has been read, else why the seeds could not be asked.
 */

/* keyslot - the cluster slot of a key: CRC16 (XMODEM) of the key, or of
 * its hash tag (the bytes between the first '{' and the first '}' after
 * it, when there are any), modulo LW_CLUSTER_SLOTS. */
unsigned keyslot(const void *key, size_t len);

/* engine_is_cluster - 1 when configured with seeds.  Engine thread. */
int engine_is_cluster(const struct engine *engine);

/* engine_slot_node - engine thread: the node serving slot by the
 * current map, or -1 while it is not known.  0 outside a cluster. */
int engine_slot_node(const struct engine *engine, unsigned slot);

/* engine_node_count - engine thread: node indexes in use so far. */
unsigned engine_node_count(const struct engine *engine);
/* engine_master_count - engine thread: the nodes serving slots by the
 * current map (at least 1; 1 outside a cluster). */
unsigned engine_master_count(const struct engine *engine);

/* engine_node_addr - engine thread: a node's address; 0, LW_ERANGE for
 * an unknown index, or (Sentinel) LW_EUNSETTLED while no master is known.
 * Port 0: host is a unix socket's path.  host stays valid while the engine
 * lives (Sentinel: until the next switch; copy it). */
int engine_node_addr(const struct engine *engine, unsigned node, const char **host,
                     int *port);

/*
 * engine_node_stats - engine thread: one node's share of the counters:
 * sent, replies, error_replies, reconnects, script_reloads, redirects (the
 * MOVED and ASK replies it sent, followed), and its
 * waiting and inflight now, its side lane's included; the other fields are
 * 0 (they are the engine's alone).  A node without a link (a replica)
 * reads all 0.  Returns 0, or
 * LW_ERANGE for an unknown index.  Outside a cluster node 0 is the engine.
 */
int engine_node_stats(const struct engine *engine, unsigned node,
                      struct engine_stats *out);

/* engine_conn_node - engine thread: the node whose connection (either
 * lane) is number conn (request.sent_conn), or -1 when that connection
 * is no longer up.  0 outside a cluster while it is up.  For a command
 * that must follow another on the same connection (WAIT after a write):
 * route it to that node, on the same lane, and check its sent_conn. */
int engine_conn_node(const struct engine *engine, uint64_t conn);

/*
 * Sentinel.  With sentinels the engine has one link, as with one Redis, but
 * its address comes from the sentinels: before every connection attempt
 * they are asked in turn (SENTINEL get-master-addr-by-name, a short
 * timeout each; the one that answers goes first next time), and the node
 * named must say ROLE master before any request is written.  A replica
 * there, or a READONLY reply, means the master moved: the connection is
 * dropped (its requests in flight fail with LW_EUNSETTLED) and the
 * sentinels asked again after a back-off.  One sentinel is listened to for
 * +switch-master, and they are all asked again every topology_refresh_ms.
 * When they name another master (a switch): the old connection is let go
 * of at once and nothing read from it after counts, its requests in flight
 * fail with LW_EUNSETTLED (count in `unsettled`), those waiting go to the
 * new master (but those marked request_settle(), held back a refresh
 * period), and on_topology is told a failover of every slot
 * (failovers 1).  Until a master has been found, a round of sentinels that
 * all refused fails requests at once (LW_ECONNREFUSED, ...), as a refused
 * single node does; a master name no sentinel knows reads LW_EREDIS in
 * engine_status().
 */

/* engine_sharded_pubsub - engine thread: 1 when the cluster answered
 * CLUSTER SHARDS (Redis 7), so every master has SSUBSCRIBE/SPUBLISH. */
int engine_sharded_pubsub(const struct engine *engine);

/* engine_topology - the engine's topology (topology.h), whose questions
 * the pub/sub router asks; engine_endpoint - its data nodes' endpoint,
 * which the router's subscribers connect with.  Both live as long as the
 * engine. */
struct topology *engine_topology(struct engine *engine);
const struct endpoint *engine_endpoint(const struct engine *engine);

#endif
