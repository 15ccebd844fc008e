/*
 * leasewheel/lock.h - Redis distributed locks whose leases renew themselves.
 *
 * A client (struct lw_client) is one connection for commands, one for
 * pub/sub (with acquire_replicas, one more for acquires), and an engine
 * thread that owns them.  Locks are named; a handle (struct lw_lock) names
 * one, and any number of threads may use the same handle at once.
 *
 * Owners.  Who holds a lock is an owner id: by default the calling thread
 * (lw_owner_self()); the *_async calls take it explicitly.  Locks are
 * reentrant: the same owner may acquire again, and must unlock as many
 * times.
 *
 * Leases.  A lock acquired with lease 0 is held until unlocked: the
 * client's watchdog renews its lease (watchdog_timeout_ms) every third of
 * it.  A lock acquired with an explicit lease is never renewed: it expires
 * on its own unless unlocked before.  A lease must be at least three ticks
 * of the client's wheel and LW_MIN_LEASE_MS (LW_ELEASE), and at most
 * LW_MAX_LEASE_MS (LW_ERANGE).  A reentrant acquire never shortens the
 * lease the lock has.
 *
 * Lost locks.  A watchdog lock can be lost: the key was deleted or taken
 * over behind the client's back (LW_LOST_NOT_OWNER), renewals failed twice
 * in a row (LW_LOST_ERRORS), or its lease would run out before a renewal
 * could be confirmed (LW_LOST_EXPIRED).  The client then stops renewing
 * it, calls on_lost once, and from then on the owner does not hold it.
 * An owner that keeps working under a lost lock works without mutual
 * exclusion; on_lost is where to stop it.  Read and write holds and
 * permits are watchdog leases too: on_lost reports them as locks, and
 * on_lease_lost (added in 0.4) with their kind (struct lw_lease).
 *
 * valid_until.  Each confirmed renewal (and the acquire) proves the lease
 * lasts until valid_until = the time the command was sent + the lease -
 * a clock-drift allowance (1% of the lease + 2 ms): until then the key
 * cannot have expired in Redis, whatever the network did after.  A lease
 * running out is reported lost up to one tick *before* valid_until, so
 * on_lost runs while nobody else can hold the lock yet, unless the engine
 * thread is held up (stats: lost_late), Redis's data is lost (FLUSHALL, a
 * restart without persistence, failover), or this process was paused.
 *
 * Wire format (compatible with Redisson's RLock): the lock is a hash at the
 * lock's name with one field, "<client id>:<owner id>", holding the hold
 * count; the key's PEXPIRE is the lease; the final unlock deletes the key
 * and publishes "0" on its channel.  The channel and the fencing token's
 * counter are named as Redisson names them: "redisson_lock__channel:{<name>}"
 * and "redisson_lock_token:{<name>}", or without the added braces when the
 * name has a '{' of its own.  A lock leaves nothing in Redis once released
 * or expired, but for a fenced one (lw_lock_set_fenced(): Redisson's
 * RFencedLock) its counter: counted up by every first acquire, made at
 * Redis's clock in microseconds when missing, never deleted.
 *
 * Waiting.  A lock held by somebody else is waited for on its pub/sub
 * channel (one subscription per name, shared by its waiters) and tried
 * again at an unlock message, or when the holder's lease runs out.
 *
 * A wait covers reaching Redis (since 0.5).  An acquire with a wait that
 * ends (wait_ms neither 0 nor LW_WAIT_FOREVER), of every kind (locks,
 * read and write locks, fair locks, permits, multi-locks; blocking or
 * async), keeps trying to reach a Redis that is down, restarting or
 * refusing connections until its wait runs out: its attempts wait for a
 * connection (before a first connection too) and are sent again when
 * Redis could not be reached or did not answer, and it gets the lock if
 * Redis comes back in time and the lock is free.  It returns by its
 * deadline, within a tick (and a round trip for an attempt already on the
 * wire: up to the command timeout when Redis stopped answering without
 * closing the connection): LW_ELOCKED when Redis's last word was that
 * the lock is held, or, when no connection to Redis is up then, why not
 * (LW_ECONNREFUSED, LW_ETIMEDOUT, ...): a Redis that cannot be asked is
 * never told as a lock held.  A wrong password or a TLS failure fails at
 * once.  A Redis that came back is found at the connection's next
 * attempt (reconnect_max_ms apart at most).  A try (wait_ms 0) asks once
 * and a wait without end fails as any call does (at once, before a first
 * connection): nothing would end it on a Redis never to be reached.
 *
 * Fairness.  Within one client, waiting is first come first served: an
 * acquire for a name on which this client already has waiters queues
 * behind them (unless its owner holds the lock: a reentrant acquire never
 * waits), an unlock message wakes the oldest waiter only (a read-write
 * lock's: see lw_read_lock_new()), and a waiter that
 * gives up (its wait_ms ran out, an error) passes its turn to the next.
 * When the last hold is released and the oldest waiter of the same client
 * is waiting (not at that moment sending an attempt of its own), the lock
 * is handed to it in the unlock's own script: it never becomes free in
 * between, a fenced lock's token still increases, and no message is
 * published;
 * otherwise the unlock frees it and the waiter tries, as any waiter does.
 * With acquire_replicas set there is no hand-over: every last unlock frees
 * the lock and publishes, and the oldest waiter takes it with its own
 * attempt, which its replicas then acknowledge.  A hand-over would be a
 * first hold written by the unlock, on the main connection, where no WAIT
 * could count it (WAIT counts its own connection's writes; acquires and
 * their WAIT take a connection of their own).  The queue and its order
 * stay; a turn costs the unlock, the attempt and the WAIT.
 * Between clients there is no order: whichever client's attempt reaches
 * Redis first after an unlock wins, as with Redisson's RLock.
 *
 * Admission.  Held locks come first.  A Redis renews only so many locks a
 * second; past that, renewals wait, and every lock acquired then makes
 * them wait longer, until leases run out.  So the client watches how long
 * the oldest renewal that fell due has waited to be sent (its backlog,
 * read at every tick with renewals due).  When that passes
 * max(watchdog_timeout / 30, 2 ticks), the client is overloaded: first
 * acquires of watchdog locks are not sent, and wait in the client until
 * the backlog has stayed under max(watchdog_timeout / 120, 1 tick) for a
 * whole renewal period (watchdog_timeout / 3; twice that, up to 16 times,
 * each time it closes again within 8 periods of opening).  An
 * acquire whose wait time (wait_ms; 0 for a single try) runs out while it
 * waits so fails with LW_EOVERLOAD: "the client's Redis cannot renew more
 * locks now"; it was never sent, so nothing is to be given back.  Never
 * held back: re-entries (the owner holds the lock: no more renewals),
 * unlocks, queries, locks with a lease of their own (never renewed), and
 * an acquire already waiting for an unlock.  Renewals themselves go before
 * acquires on every connection.  While no connection is up the client is
 * never overloaded: calls fail with the connection's error, as before.
 * Stats: overloaded, overloads, overload_refused, renewal_backlog_ns; a
 * log line (warn) when it begins, (info) when it ends.  Why these bounds,
 * and what to do when it fires: docs/design.md, docs/tuning.md.
 *
 * Threads.  Every function is thread-safe.  Blocking calls must not run on
 * the engine thread (inside callbacks): they return LW_EDEADLK there.
 * Callbacks (done, on_lost) run on the engine thread; keep them short.
 *
 * The caller's loop.  With config.loop set, the client starts no thread:
 * it runs on that libev loop, and the thread that runs the loop is the
 * engine thread.  Create the client on that thread (before the loop runs
 * or in one of its callbacks), and free it there, outside the client's
 * callbacks.  The API is the same: async calls and on_lost run their
 * callbacks on the loop, and so they need it running.  Blocking calls on
 * the loop's thread return LW_EDEADLK at once, in a callback or not: they
 * would wait for the loop they keep from running; from other threads they
 * work while the loop runs.  The client's watchers keep ev_run() from
 * returning until lw_client_free().  The loop's thread writes to sockets:
 * ignore SIGPIPE there (as any socket code must), or a write to a
 * connection Redis closed kills the process.
 */
#ifndef LEASEWHEEL_LOCK_H
#define LEASEWHEEL_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include <leasewheel/error.h>
#include <leasewheel/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lw_client;
struct lw_lock;

#define LW_DEFAULT_WATCHDOG_TIMEOUT_MS 30000u
#define LW_DEFAULT_RENEW_BATCH 100u
#define LW_DEFAULT_RENEW_BATCHES_INFLIGHT 64u
#define LW_DEFAULT_TICK_MS 100u
#define LW_DEFAULT_SLOTS 512u
#define LW_MAX_RENEW_BATCH 1000u             /* keys per renewal script call */
#define LW_MAX_RENEW_BATCHES_INFLIGHT 65536u /* renewal calls unanswered */
#define LW_MAX_TICK_MS 60000u                /* the wheel's tick: one minute */
#define LW_MAX_SLOTS 65536u                  /* the wheel's slots */
#define LW_MIN_LEASE_MS 10u                  /* and at least 3 ticks */
#define LW_MAX_LEASE_MS 2147483647u          /* about 24.8 days */
#define LW_LOCK_NAME_MAX 1024u               /* bytes; names are binary-safe */
#define LW_CLIENT_ID_MAX 64u                 /* bytes, no ':' */
#define LW_UNIX_PATH_MAX 107u                /* bytes: a sockaddr_un's, less the NUL */
#define LW_MAX_TIMEOUT_MS 3600000u           /* one hour */
#define LW_MAX_INFLIGHT (1u << 20)
#define LW_WAIT_FOREVER UINT64_MAX
#define LW_MAX_CLUSTER_SEEDS 64u
#define LW_DEFAULT_TOPOLOGY_REFRESH_MS 10000u
#define LW_MAX_SENTINELS 64u
#define LW_DEFAULT_REPLICAS_TIMEOUT_MS 1000u
#define LW_MAX_ACQUIRE_REPLICAS 64u        /* acquire_replicas */
#define LW_DEFAULT_PERMIT_CLOCK_SKEW_MS 0u /* changed in 0.5: was 1000 */
/* A fair lock's waiters (lw_fair_lock_new()): the wait every client of the
 * lock counts its queue's give-up times with (Redisson's
 * fairLockWaitTimeout), and the lease of a waiter's place. */
#define LW_DEFAULT_FAIR_WAIT_MS 300000u
#define LW_DEFAULT_FAIR_PLACE_MS 5000u

/* Why a lock was lost (on_lost, stats). */
enum lw_lost_reason {
    LW_LOST_NOT_OWNER = 1,     /* a renewal found the lock gone or held by another */
    LW_LOST_ERRORS = 2,        /* two renewals in a row failed (timeout, no connection) */
    LW_LOST_EXPIRED = 3,       /* the lease ran out before a renewal was confirmed */
    LW_LOST_FAILOVER = 4,      /* a failover: the new master does not have it (the
                                  old one acknowledged it, then lost it with the
                                  replication it had not yet sent) */
    LW_LOST_HELD_TOO_LONG = 5, /* held max_hold_ms (lw_lock_set_max_hold()):
                                  no longer renewed; it expires at the end of
                                  the lease it has, which is the holder's
                                  time to stop */
};

/* lw_lost_reason_name - "not owner", "errors", "expired", "failover",
 * "held too long"; "unknown" else. */
LW_API const char *lw_lost_reason_name(int reason);

/*
 * A watchdog lock was lost.  Runs on the engine thread, once per lock
 * (owner, name); name is valid during the call only.  Leases of every
 * kind are reported so (a read or write hold by its name and owner, a
 * permit by its semaphore's name and lw_permit_owner()); on_lease_lost
 * (lw_lease_lost_fn) says which kind too.
 */
typedef void lw_lost_fn(const char *name, size_t len, uint64_t owner, int reason,
                        void *arg);

/*
 * A watchdog lock became at risk (at_risk 1), or is safe again (0).  At
 * risk: the lease the client can prove (until valid_until) is down to less
 * than half the lease, for a renewal failed, timed out, is unanswered yet
 * (two ticks after it fell due at least) or went out late (or, after a
 * failover, its lock is being checked on the new master; or a step of
 * Redis's clock was seen).  Safe again: a renewal was confirmed.  left_ms is what is
 * left of the proven lease then.  An at-risk lock either becomes safe
 * again or is lost (on_lost), and its holder had left_ms to prepare.
 * Runs on the engine thread, at most once per change of a lock's state;
 * name is valid during the call only.  Leases of every kind, as on_lost;
 * on_lease_risk (lw_lease_risk_fn) says which kind too.
 */
typedef void lw_risk_fn(const char *name, size_t len, uint64_t owner, int at_risk,
                        uint64_t left_ms, void *arg);

/*
 * The kinds of lease the watchdog renews (struct lw_lease's kind).  Added
 * in 0.4; more may be added at the end.
 */
enum lw_lease_kind {
    LW_LEASE_LOCK = 0,   /* a lock (lw_lock_new()) */
    LW_LEASE_READ = 1,   /* a read hold of a read-write lock (lw_read_lock_new()) */
    LW_LEASE_WRITE = 2,  /* a write hold of one (lw_write_lock_new()) */
    LW_LEASE_PERMIT = 3, /* a permit of a semaphore (<leasewheel/semaphore.h>) */
    LW_LEASE_FAIR = 4,   /* a fair lock (lw_fair_lock_new()) */
    LW_LEASE_PLACE = 5,  /* a waiter's place in a fair lock's queue: not a
                            hold; on_lost and on_risk are not called for
                            it, on_lease_lost and on_lease_risk are */
    LW_LEASE_TERM = 6,   /* a leader's term under a lock delay
                            (lw_client_config.election_lock_delay_ms):
                            renewed as a lock, kept in Redis for the
                            delay past its lease, and not dropped when
                            lost.  Added in 0.5 */
};

/* lw_lease_kind_name - "lock", "read lock", "write lock", "permit", "fair
 * lock", "place", "term" (as the log says them); "unknown" else.  Added
 * in 0.4. */
LW_API const char *lw_lease_kind_name(int kind);

struct lw_permit; /* <leasewheel/semaphore.h> */

/*
 * Which lease a report is about (on_lease_lost, on_lease_risk).  Valid
 * during the call only.  Added in 0.4; fields are only ever added at the
 * end, and `size` says how far the library that fills it has them.
 */
struct lw_multi;
struct lw_lease {
    size_t size;      /* sizeof the struct the library filled */
    int kind;         /* enum lw_lease_kind */
    const char *name; /* the lock's or the semaphore's name: len bytes,
                         followed by a NUL (names may hold NULs of
                         their own) */
    size_t len;
    uint64_t owner;                 /* the owner that held it; a permit:
                                       lw_permit_owner() of it */
    const struct lw_permit *permit; /* a permit: its id (16 bytes, as
                                       lw_permit_acquire() gave it);
                                       else NULL */
    const struct lw_multi *multi;   /* a lease held by a multi-lock
                                       (<leasewheel/multi.h>): its
                                       handle, the whole set lost with
                                       this name; else NULL.  Added in
                                       0.4 */
};

/*
 * A watchdog lease of any kind was lost: as lw_lost_fn, with the lease
 * said whole (its kind; a permit's id).  Added in 0.4.
 */
typedef void lw_lease_lost_fn(const struct lw_lease *lease, int reason, void *arg);

/*
 * A watchdog lease of any kind became at risk (at_risk 1) or is safe again
 * (0): as lw_risk_fn, with the lease said whole.  Added in 0.4.
 */
typedef void lw_lease_risk_fn(const struct lw_lease *lease, int at_risk, uint64_t left_ms,
                              void *arg);

/* Log levels, most severe first (lw_client_config.log_level). */
enum lw_log_level {
    LW_LOG_ERROR = 0, /* a lock lost; a connection that cannot be made */
    LW_LOG_WARN = 1,  /* a lock at risk; a connection lost; a failover */
    LW_LOG_INFO = 2,  /* a connection made again; a lock safe again; a slot
                         map read that changed; a switch of master seen */
};

/*
 * A line for the program's log, without a newline.  Runs on the engine
 * thread (or the thread calling lw_client_new()); message is valid during
 * the call only.  Lines are rate-limited by kind: a burst of a few, then
 * one a second, the rest counted and said in the next line of the kind.
 */
typedef void lw_log_fn(int level, const char *message, void *arg);

/* lw_log_level_name - "error", "warn", "info"; "unknown" else. */
LW_API const char *lw_log_level_name(int level);

/*
 * An asynchronous call ended.  err is 0 or an LW_E* code; value is what
 * the call's blocking twin returns through its out-parameter or return
 * value (see each call).  Runs on the engine thread.
 */
typedef void lw_done_fn(int err, int64_t value, void *arg);

struct ev_loop;

/*
 * The client's settings.  lw_client_config_init() fills in the defaults
 * and `size`; set what you need after it.  Fields are only ever added at
 * the end: a program built against an older header passes a smaller size,
 * and the library takes the defaults for the fields it does not have.
 */
struct lw_client_config {
    size_t size;           /* sizeof the struct the caller has: set by
                              lw_client_config_init() */
    const char *host;      /* default 127.0.0.1; ignored with unix_path */
    int port;              /* 1..65535, default 6379 */
    const char *unix_path; /* a unix socket instead, or NULL; at most
                              LW_UNIX_PATH_MAX bytes */
    const char *password;  /* AUTH, or NULL */
    int db;                /* 0..65535; the lock keys live there */
    /* Times: 1..LW_MAX_TIMEOUT_MS, and reconnect_min_ms <= reconnect_max_ms. */
    uint32_t connect_timeout_ms;     /* default 2000 */
    uint32_t command_timeout_ms;     /* default 3000 */
    uint32_t reconnect_min_ms;       /* default 50 */
    uint32_t reconnect_max_ms;       /* default 5000 */
    uint32_t max_inflight;           /* commands on the wire at once, default 4096,
                                        1..LW_MAX_INFLIGHT */
    const char *client_id;           /* the field's prefix; NULL: a random UUID
                                        (or see client_id_host) */
    uint32_t watchdog_timeout_ms;    /* the lease of watchdog locks, default 30000;
                                        at least 3 ticks */
    uint32_t renew_batch;            /* keys per renewal call, 1..LW_MAX_RENEW_BATCH */
    uint32_t renew_batches_inflight; /* renewal calls unanswered at once
                                        (in a cluster, per master),
                                        1..LW_MAX_RENEW_BATCHES_INFLIGHT */
    uint32_t tick_ms;                /* the wheel's tick, 1..LW_MAX_TICK_MS,
                                        default 100 */
    uint32_t slots;                  /* the wheel's slots, 1..LW_MAX_SLOTS,
                                        default 512 */
    lw_lost_fn *on_lost;             /* may be NULL */
    void *lost_arg;
    struct ev_loop *loop; /* NULL (default): the client runs its own
                             engine thread.  Else a libev loop the
                             caller owns and runs: the client runs on
                             it, on the thread that runs it (see
                             "The caller's loop" above) */
    /* Added in 0.2: Redis Cluster, ACL users. */
    const char *username;             /* ACL user (AUTH username password), or
                                         NULL: the default user; every node */
    const char *const *cluster_seeds; /* cluster mode: nodes to learn the
                                     topology from, "host:port" each
                                     (cluster_nseeds of them); host, port,
                                     unix_path and db are then ignored */
    unsigned cluster_nseeds;          /* 0 (default): one Redis, not a cluster;
                                         at most LW_MAX_CLUSTER_SEEDS */
    int sharded_pubsub;               /* enum lw_sharded_mode: how waiters listen
                                         in a cluster (default LW_SHARDED_AUTO) */
    uint32_t topology_refresh_ms;     /* cluster: re-read the slot map this often
                                         besides on MOVED and errors; default
                                         LW_DEFAULT_TOPOLOGY_REFRESH_MS.
                                         Sentinel: ask the sentinels this often
                                         besides on reconnects and
                                         +switch-master; default 1000 */
    /* Added in 0.2: Sentinel, and acquires acknowledged by replicas. */
    const char *const *sentinels;         /* Sentinel mode: sentinels to ask where the
                                             master is, "host:port" each (nsentinels
                                             of them); host, port and unix_path are
                                             then ignored.  Not with cluster_seeds */
    unsigned nsentinels;                  /* 0 (default): no Sentinel (then sentinels
                                             and sentinel_master must be NULL:
                                             LW_EINVAL); at most LW_MAX_SENTINELS */
    const char *sentinel_master;          /* the master's name in Sentinel (required
                                             with sentinels) */
    const char *sentinel_username;        /* ACL user for the sentinels, or NULL */
    const char *sentinel_password;        /* AUTH for the sentinels, or NULL (the data
                                             nodes use username and password) */
    uint32_t acquire_replicas;            /* 0 (default): off.  N: a first acquire
                                             (not a re-entry; of a lock, a read or
                                             write lock, or permits) must be
                                             acknowledged by N replicas (WAIT)
                                             within acquire_replicas_timeout_ms,
                                             else the hold is given back and the
                                             call fails with LW_EREPLICAS.  In a cluster, per
                                             master.  Renewals never wait.  At most
                                             LW_MAX_ACQUIRE_REPLICAS.  Acquires then
                                             go over a second connection per master,
                                             so that a blocked WAIT holds up no
                                             renewal (docs/reliability.md says what
                                             WAIT promises, and what it does not) */
    uint32_t acquire_replicas_timeout_ms; /* WAIT's timeout, default
                                     LW_DEFAULT_REPLICAS_TIMEOUT_MS;
                                     1..LW_MAX_TIMEOUT_MS when
                                     acquire_replicas is set */
    /* Added in 0.3: TLS (see struct lw_tls_config). */
    struct lw_tls_config tls;          /* the data nodes: the one Redis, every
                                          cluster node, the master Sentinel
                                          names; off by default */
    int sentinel_tls_own;              /* 0 (default): the sentinels are
                                          reached as the data nodes are
                                          (tls); 1: with sentinel_tls */
    struct lw_tls_config sentinel_tls; /* the sentinels', when
                                          sentinel_tls_own is 1 */
    /* Added in 0.3: living with it in production. */
    lw_risk_fn *on_risk; /* may be NULL */
    void *risk_arg;
    uint64_t max_hold_ms; /* 0 (default): none.  A watchdog lock held this
                             long is no longer renewed, and on_lost says so
                             at once (LW_LOST_HELD_TOO_LONG): it expires at
                             the end of its lease.  A handle may set its own
                             (lw_lock_set_max_hold()).  At most
                             LW_MAX_LEASE_MS * 1000 */
    lw_log_fn *log;       /* NULL (default): silent */
    void *log_arg;
    int log_level; /* the least severe level passed to log: default
                      LW_LOG_INFO */
    /* Added in 0.4: who holds a lock. */
    int client_id_host; /* 0 (default): a NULL client_id is a random UUID.
                           1: "<host>-<pid>-<random>" instead (the host
                           name cut to fit LW_CLIENT_ID_MAX, its ':'s and
                           blanks made '-'; 8 hex digits of randomness),
                           so that the lock's hash says which machine and
                           process holds it.  Ignored when client_id is
                           set */
    /* Added in 0.4: permits (<leasewheel/semaphore.h>). */
    uint32_t permit_clock_skew_ms; /* a fleet mixed with Redisson's clients:
                                      how far their clocks may run ahead of
                                      Redis's.  They reclaim a permit, and
                                      drop a fair lock's waiter, by their own
                                      clocks (leasewheel's scripts use
                                      Redis's): a permit's and a place's
                                      valid_until is that much earlier.
                                      Default LW_DEFAULT_PERMIT_CLOCK_SKEW_MS
                                      (0: no Redisson client shares them);
                                      at most a quarter of the lease is used */
    /* Added in 0.4: which kind of lease was lost or at risk.  Each is
       called for every lease of every kind, as on_lost and on_risk are,
       and with them when those are set too (on_lost first): set the
       ones you want.  On the engine thread, as those. */
    lw_lease_lost_fn *on_lease_lost; /* may be NULL */
    void *lease_lost_arg;
    lw_lease_risk_fn *on_lease_risk; /* may be NULL */
    void *lease_risk_arg;
    /* Added in 0.4: fair locks (lw_fair_lock_new()). */
    uint32_t fair_wait_ms;  /* the wait a fair lock's queue counts its
                               give-up times with, as Redisson's
                               fairLockWaitTimeout does: give every client
                               of the lock the same (Redisson's scores
                               drift otherwise).  Default
                               LW_DEFAULT_FAIR_WAIT_MS; a waiter's own
                               wait_ms still ends its wait */
    uint32_t fair_place_ms; /* the lease of a waiter's place in the queue,
                               renewed by the watchdog: a waiter that dies
                               drops out of the queue this long after its
                               last renewal, not after fair_wait_ms.
                               Default LW_DEFAULT_FAIR_PLACE_MS; raised to
                               3 ticks and LW_MIN_LEASE_MS when shorter */
    /* Added in 0.5: leader election (<leasewheel/election.h>). */
    uint32_t election_lock_delay_ms; /* Chubby's and Consul's lock delay: a
                                        term of this client's that ends
                                        without a resign (its leader lost,
                                        dead or cut off) keeps the name
                                        this long past the leader's lease,
                                        so that no candidate is elected
                                        before then.  A resign hands over
                                        at once.  0 (the default): none;
                                        lease + delay at most
                                        LW_MAX_LEASE_MS (LW_ERANGE) */
};

/*
 * Unlock messages in a cluster, as Redisson's shardedSubscriptionMode:
 * AUTO uses sharded pub/sub (SSUBSCRIBE/SPUBLISH, Redis 7) when every
 * master supports it, ON always, OFF never (PUBLISH goes to every node).
 * Outside a cluster it is always plain PUBLISH/SUBSCRIBE.
 */
enum lw_sharded_mode {
    LW_SHARDED_AUTO = 0,
    LW_SHARDED_ON = 1,
    LW_SHARDED_OFF = 2,
};

/*
 * Counters since creation; a snapshot from any thread.  Counters are only
 * ever added at the end: lw_client_get_stats() passes the size of the
 * struct the caller was built with, and the library fills in that much.
 */
#define LW_LAG_BUCKETS 264

struct lw_client_stats {
    uint64_t locks_held;         /* watchdog locks held now */
    uint64_t renewals_sent;      /* keys sent in renewal calls */
    uint64_t renewals_confirmed; /* keys a renewal extended */
    uint64_t renewals_failed;    /* keys whose renewal call failed */
    uint64_t renew_batches;      /* renewal calls sent */
    uint64_t lost_not_owner;
    uint64_t lost_errors;
    uint64_t lost_expired;
    uint64_t worst_renewal_lag_ns;        /* worst delay from a renewal's due time
                                             (lease/3 after the last confirmed
                                             renewal, or the acquire, was sent) to
                                             its sending */
    uint64_t waiters;                     /* acquires waiting now (locks', fair
                                             locks' and, since 0.4, permits') */
    uint64_t subscriptions;               /* channels with waiters now (locks'
                                             and, since 0.4, semaphores') */
    uint64_t lost_late;                   /* losses reported after the lock's
                                             valid_until: the engine thread was held
                                             up (callbacks too slow, CPU starved) */
    uint64_t worst_lost_late_ns;          /* the latest of those, past valid_until */
    uint64_t worst_tick_late_ns;          /* the latest the wheel's tick ever ran:
                                             how long the engine thread was held up
                                             at worst.  A loss is late only if this
                                             exceeds a tick, or on_lost is slow */
    uint64_t acquired_too_late;           /* acquires whose reply came with less than
                                             a tick of their lease sure to be left:
                                             given back, and LW_ETIMEDOUT returned */
    uint64_t renewal_lag[LW_LAG_BUCKETS]; /* renewals sent, by lag: see
                                             lw_lag_bucket_floor_ns() */
    /* Added in 0.2: clusters. */
    uint64_t lost_failover;      /* locks lost to a failover */
    uint64_t failovers;          /* master changes seen (cluster: per shard;
                                    Sentinel: switches of master) */
    uint64_t topology_refreshes; /* slot maps read */
    uint64_t redirects;          /* MOVED and ASK replies followed */
    uint64_t unsettled;          /* replies that said the cluster was moving
                                    (TRYAGAIN, CLUSTERDOWN, LOADING,
                                    READONLY, ...), retried */
    /* Added in 0.2: acquires acknowledged by replicas. */
    uint64_t replicas_refused;    /* first acquires that fewer than
                                     acquire_replicas replicas acknowledged in
                                     time (or whose WAIT failed, or ran on
                                     another connection than the acquire):
                                     given back, and LW_EREPLICAS returned */
    uint64_t requests_taken_late; /* calls the engine found queued a tick
                                     late, their wake-up missed, and took
                                     then; about 0 (see docs/design.md,
                                     "Hand-over") */
    /* Added in 0.3: connections. */
    uint64_t reconnects;     /* command connections made again after
                                one was set up (every node's, both
                                lanes) */
    uint64_t tls_handshakes; /* TLS handshakes of those connections */
    uint64_t tls_resumed;    /* of which resumed a session: a reconnect
                                without a full handshake */
    /* Added in 0.3: warned before lost, held too long, waits and holds. */
    uint64_t at_risk;                      /* watchdog locks at risk now */
    uint64_t went_at_risk;                 /* times a lock became at risk */
    uint64_t recovered;                    /* times an at-risk lock was safe again */
    uint64_t lost_held_too_long;           /* locks given up at their max hold */
    uint64_t acquires;                     /* acquires that succeeded (re-entries too) */
    uint64_t acquire_wait[LW_LAG_BUCKETS]; /* those, by how long the call took
                                              (the same buckets as
                                              renewal_lag) */
    uint64_t holds_ended;                  /* watchdog locks unlocked or lost */
    uint64_t hold_time[LW_LAG_BUCKETS];    /* those, by how long they were held
                                              (first acquire to the unlock or
                                              the loss); the last bucket takes
                                              everything over 2^35 us (9.5 h) */
    /* Added in 0.4: admission (see "Admission" above). */
    uint64_t overloaded;         /* 1 while first acquires are held back */
    uint64_t overloads;          /* times they began to be */
    uint64_t overload_refused;   /* first acquires that failed with
                                    LW_EOVERLOAD */
    uint64_t renewal_backlog_ns; /* how long the oldest due renewal not yet
                                    sent had waited, at the last look (a
                                    tick with renewals due, or every tick
                                    while overloaded) */
    /* Added in 0.5: clocks (docs/reliability.md, "Time faults"). */
    uint64_t redis_clock_jumps; /* times a Redis's clock was seen to step
                                   ahead of this client's beyond the drift
                                   allowed: every lease on it was then at
                                   risk and renewed at once */
    uint64_t host_sleeps;       /* times the host was found to have slept
                                   (suspended): leases whose end passed
                                   meanwhile were lost at once on waking */
    /* Added in 0.5: leader election (<leasewheel/election.h>). */
    uint64_t election_terms;     /* terms this client's candidates were
                                    elected for */
    uint64_t election_vacancies; /* vacancies this client's observers were
                                    told: nobody led after a leader */
    uint64_t election_observers; /* observers watching now */
};

/*
 * lw_client_config_init_size - the defaults above, for a config struct of
 * `size` bytes (sizeof as the caller compiled it).  Call it through
 * lw_client_config_init().
 */
LW_API void lw_client_config_init_size(struct lw_client_config *cfg, size_t size);

/* lw_client_config_init - the defaults above, and cfg->size. */
static inline void lw_client_config_init(struct lw_client_config *cfg)
{
    lw_client_config_init_size(cfg, sizeof *cfg);
}

/*
 * lw_client_new - validate cfg, start the engine thread (or, with cfg->loop,
 * join the caller's loop: call it on the thread that runs that loop) and
 * connect (in the background: calls made before the connection is up wait
 * for it, up to command_timeout_ms; but until a first connection has been
 * made, a refused connection, a missing unix socket, a wrong password, a
 * set-up command refused for good or a server that does not speak Redis's
 * protocol fails them at once with LW_ECONNREFUSED, LW_ECONNECT,
 * LW_EAUTH, LW_ENOPERM (the ACL), LW_ENODB (SELECT), LW_ENOTSUP (an
 * unknown command) or LW_EPROTO, lw_client_last_error() saying which
 * command and Redis's words, while connecting goes on in the background;
 * an acquire with a wait that ends waits through the first two until
 * then: "A wait covers reaching Redis" above).  Returns 0 and sets *out, or
 * LW_EINVAL (a NULL or empty field that must be set, a zero count or
 * time, sentinels with cluster_seeds, sentinels without sentinel_master,
 * a sentinel or seed that is not "host:port"), LW_ERANGE (a value beyond
 * its limit, a client id with ':', more than LW_MAX_SENTINELS, a port
 * out of range), LW_ELEASE (watchdog timeout under 3 ticks), LW_ENOHOST,
 * LW_ENOMEM.  In Sentinel mode "a refused connection" above is every
 * sentinel refusing; once the master is known, calls wait through a
 * switch of master (LW_EUNSETTLED when one takes the whole command
 * timeout, or when a call was on the wire to the old master).
 */
LW_API int lw_client_new(const struct lw_client_config *cfg, struct lw_client **out);

/*
 * lw_client_free - stop renewing, fail every call still pending with
 * LW_ESHUTDOWN (callbacks run, blocked callers return), close the
 * connections, free everything.  Locks still held are not released: they
 * are no longer renewed and expire after their lease (on_lost is not
 * called).  Handles may be freed before or after: a handle keeps the
 * client's memory (not its connections) until it is freed, and every call
 * on it after lw_client_free() returns LW_ESHUTDOWN, as does freeing the
 * client again while a handle keeps it.  Returns 0 (NULL ignored), or
 * LW_EDEADLK when called on the engine thread.  On the caller's loop it is
 * the other way round: call it on the loop's thread (it stops the client
 * there, without the loop running), outside the client's callbacks; from
 * a callback or another thread it returns LW_EDEADLK.  Not to be called
 * while another thread is still making calls on the client's handles.
 */
LW_API int lw_client_free(struct lw_client *client);

/*
 * lw_client_last_error - why the client's last failed connection attempt
 * failed (any of its connections: data nodes, subscribers, sentinels):
 * its LW_E* code, and in buf (len bytes, NUL-terminated, cut short if need
 * be) one line saying why, with the address, e.g. "127.0.0.1:6380: TLS:
 * certificate verify failed: unable to get local issuer certificate".  A
 * rotation of TLS files that did not load is one too (LW_ETLS, though the
 * connection went on with the previous files: leasewheel/tls.h).  0
 * and "" when no attempt has failed yet.  Kept until a later failure
 * replaces it.  Any thread; buf may be NULL when len is 0.
 */
LW_API int lw_client_last_error(const struct lw_client *client, char *buf, size_t len);

/* The room lw_reply_error() keeps, its NUL included. */
#define LW_REPLY_ERROR_MAX 512

/*
 * lw_reply_error - Redis's own words, when Redis answered a call's
 * command with an error: "WRONGTYPE Operation against a key holding the
 * wrong kind of value", "NOPERM this user has no permissions to access
 * one of the keys used as arguments", "OOM command not allowed when used
 * memory > 'maxmemory'." (without the place in our script that Redis 7
 * adds: it says nothing to a user).  Kept per thread, as errno is:
 *   - after a blocking call on a lock, a semaphore or a multi-lock (and
 *     lw_name_status()) returns, on the thread that made it: the error
 *     that made it fail, "" when Redis said none (a call that failed
 *     before reaching Redis leaves it as it was);
 *   - during an async call's done callback: the error that ended it, ""
 *     when none.
 * It says why for LW_EREPLY and LW_EWRONGTYPE above all; transport and
 * set-up errors are lw_client_last_error()'s.  Never NULL; valid until
 * the thread's next call of the library; cut to LW_REPLY_ERROR_MAX - 1
 * bytes.  Added in 0.4.
 */
LW_API const char *lw_reply_error(void);

/*
 * lw_client_format_metrics - the client's counters and gauges in the
 * Prometheus text exposition format (version 0.0.4: # HELP and # TYPE
 * lines, histograms as cumulative _bucket{le="..."}, _sum and _count),
 * names prefixed "leasewheel_", into buf (len bytes, NUL-terminated, cut
 * short if need be).  In a cluster, per master too (label node="host:port").
 * Returns the length the whole text needs (without the NUL), as
 * snprintf() does: call again with a buffer that large when it was more
 * than len - 1.  LW_EINVAL for a NULL client, or buf NULL with len > 0.
 * Any thread; the figures are a snapshot, as lw_client_get_stats()'s.  In
 * a cluster the masters' figures are the engine thread's: called on
 * another thread, it waits for the engine thread to read them (on the
 * caller's loop, as a blocking call does: while the loop runs).
 */
LW_API int lw_client_format_metrics(const struct lw_client *client, char *buf, size_t len);

/* lw_client_id - the client id (the owner fields' prefix). */
LW_API const char *lw_client_id(const struct lw_client *client);

/*
 * lw_client_get_stats_size - a snapshot of the counters into the first
 * `size` bytes of out (sizeof as the caller compiled it; counters beyond
 * the library's own are zeroed).  Call it through lw_client_get_stats().
 */
LW_API void lw_client_get_stats_size(const struct lw_client *client,
                                     struct lw_client_stats *out, size_t size);

/* lw_client_get_stats - a snapshot of the counters. */
static inline void lw_client_get_stats(const struct lw_client *client,
                                       struct lw_client_stats *out)
{
    lw_client_get_stats_size(client, out, sizeof *out);
}

/*
 * The lag histogram.  Bucket i counts renewals sent between
 * lw_lag_bucket_floor_ns(i) and lw_lag_bucket_floor_ns(i + 1) after they
 * fell due: 1 us wide up to 8 us, then 8 buckets per doubling (an error of
 * at most 12.5%); the last bucket also takes everything over 2^35 us.
 * A renewal's timer is set a tick before it falls due (the wheel fires a
 * timer up to a tick after its time), so it goes out on time or early, and
 * early counts as 0: an unloaded client's lags sit in bucket 0, whatever
 * the tick, and each lock keeps its own phase, so they do not bunch up.
 * Only a renewal retried after a failed call, or held back by an unlock,
 * may wait up to a tick for the wheel.  Beyond that, lag is queueing:
 * renewals waiting for a free call (renew_batches_inflight), or a tick
 * running late (worst_tick_late_ns).  It stays under about two thirds of
 * the lease: a renewal still unsent a tick before its lease may run out
 * is not sent, and the lock is lost (LW_LOST_EXPIRED).
 */
LW_API uint64_t lw_lag_bucket_floor_ns(unsigned bucket);

/*
 * lw_stats_lag_ns - the lag under which a fraction q (0..1) of the renewals
 * in s->renewal_lag fell: the upper edge of the bucket holding the q-th
 * renewal (q = 1: the highest bucket used).  0 when the histogram is empty.
 * To look at an interval, subtract an earlier snapshot's buckets first.
 */
LW_API uint64_t lw_stats_lag_ns(const struct lw_client_stats *s, double q);

/* lw_owner_self - the calling thread's id: the default owner. */
LW_API uint64_t lw_owner_self(void);

/*
 * lw_lock_new - a handle for the lock named by the len bytes at name.
 * Returns 0 and sets *out, or LW_EINVAL (NULL, len 0), LW_ERANGE (len over
 * LW_LOCK_NAME_MAX), LW_ENOMEM, LW_ESHUTDOWN (the client was freed, and
 * another handle keeps its memory).  Using a handle after lw_lock_free()
 * cannot be detected: it is undefined, as with free().
 */
LW_API int lw_lock_new(struct lw_client *client, const void *name, size_t len,
                       struct lw_lock **out);

/*
 * lw_read_lock_new, lw_write_lock_new - a handle for the read lock or the
 * write lock of the read-write lock named by the len bytes at name, as
 * Redisson's RReadWriteLock.readLock() and writeLock(), in its format on
 * the wire (a hash at the name with a `mode` field; a reader's hold the
 * field "<client id>:<owner>" with one key per hold,
 * "{name}:<field>:rwlock_timeout:<i>"; a writer's "<client id>:<owner>:write";
 * the channel redisson_rwlock:{name}).  Readers share it; a writer holds
 * it alone.  Every call below works on these handles as on a lock's:
 * blocking, try, lease and async acquires, unlock, force-unlock, and the
 * queries, with these differences:
 *   - a read acquire's token is 0 (reads have none); a fenced write
 *     lock's acquire's is the name's fencing token, from the same counter
 *     as a lock's;
 *   - the owner that holds the write lock may take the read lock too (a
 *     downgrade: releasing the write lock then leaves it reading); the
 *     owner that holds the read lock may not take the write lock (no
 *     upgrade): a waiting acquire of it fails at once with LW_EDEADLK, a
 *     try without wait with LW_ELOCKED;
 *   - on a name that holds a plain lock (a hash without `mode`), read and
 *     write acquires fail with LW_EWRONGKIND and change nothing; so do a
 *     lock's acquires on a read-write lock's name;
 *   - lw_force_unlock() of the read lock frees it only when held for
 *     reading, of the write lock only when held for writing (1: it was);
 *   - lw_is_locked() of the read lock: held for reading (also when the
 *     writer reads); of the write lock: held for writing.
 *   - lw_is_held() and lw_hold_count() count the owner's read holds or
 *     write holds; lw_remaining_ttl() is the hash's;
 *   - waiting: the channel's 0 (the last reader left) and 1 (a writer
 *     left) wake the client's oldest waiter, and when it reads, every
 *     reader ahead of the client's first waiting writer with it, all at
 *     once; while a writer of this client waits for the name, the
 *     client's new reads of it queue behind it (writers are not starved
 *     by the client's own readers; a re-entrant read passes).  The oldest
 *     waiter also tries again when the hash's TTL runs out (an expiry, a
 *     downgrade, a reader leaving others publish nothing).
 * Watchdog read holds are renewed with every own timeout key, and the hash
 * to the longer of its TTL and the lease; on_lost and on_risk report them
 * by name and owner, on_lease_lost and on_lease_risk with their kind
 * (LW_LEASE_READ, LW_LEASE_WRITE), and the log says "read lock" or
 * "write lock".
 * Returns as lw_lock_new().  Added in 0.4.
 */
LW_API int lw_read_lock_new(struct lw_client *client, const void *name, size_t len,
                            struct lw_lock **out);
LW_API int lw_write_lock_new(struct lw_client *client, const void *name, size_t len,
                             struct lw_lock **out);

/*
 * lw_fair_lock_new - a handle for the fair lock named by the len bytes at
 * name, as Redisson's RFairLock, in its format on the wire: the lock's
 * hash at the name (field "<client id>:<owner>", as a lock's), and its
 * queue of waiters, redisson_lock_queue:{name} (a list of their fields),
 * with their give-up times, redisson_lock_timeout:{name} (a sorted set,
 * epoch ms: Redis's clock for ours, the writer's for a Redisson client's).  Acquires are served first come, first
 * served, across every client of the name, Redisson's included: an
 * acquire that finds the lock held, or others waiting before it, joins
 * the queue's tail and waits on a channel of its own
 * (redisson_lock__channel:{name}:<client id>:<owner>), and an unlock wakes
 * only the waiter at the head.  Every call below works on it as on a
 * lock's, with these differences:
 *   - a try without wait (wait_ms 0) never joins the queue: it gets the
 *     lock only when it is free and nobody waits for it;
 *   - a waiter's place is a lease the watchdog renews
 *     (lw_client_config.fair_place_ms, in leasewheel_lock_place:{name}):
 *     a waiter that dies drops out of the queue within that lease, not
 *     Redisson's fairLockWaitTimeout, as soon as a leasewheel client of
 *     the name next looks (Redisson's clients drop it by its give-up time
 *     only); on_lease_lost tells of a place lost (LW_LEASE_PLACE), and
 *     the waiter goes on from the queue's tail, as Redisson's do;
 *   - a waiter that gives up (its wait over, an error) leaves the queue,
 *     and the give-up times behind it move up by fair_wait_ms, as
 *     Redisson's do;
 *   - a fenced one's token is the name's fencing token, as a lock's
 *     (Redisson's fair lock draws none: a token is sure to rise only among
 *     leasewheel's).
 * Held, it is renewed as a lock is (LW_LEASE_FAIR).  Returns as
 * lw_lock_new().  Added in 0.4.
 */
LW_API int lw_fair_lock_new(struct lw_client *client, const void *name, size_t len,
                            struct lw_lock **out);

/* lw_lock_free - drop the handle (calls still pending keep it alive until
 * they end).  NULL ignored. */
LW_API void lw_lock_free(struct lw_lock *lock);

/*
 * lw_lock_set_max_hold - watchdog locks acquired through this handle from
 * now on are given up after max_hold_ms held (LW_LOST_HELD_TOO_LONG), as
 * lw_client_config.max_hold_ms says, instead of the client's; 0: the
 * client's.  Returns 0, LW_EINVAL (NULL), LW_ERANGE (over LW_MAX_LEASE_MS *
 * 1000).
 */
LW_API int lw_lock_set_max_hold(struct lw_lock *lock, uint64_t max_hold_ms);

/*
 * lw_lock_set_fenced - whether first acquires through this handle, from
 * now on, draw a fencing token (1) or not (0, the default), as Redisson's
 * RFencedLock against its RLock.  A token is drawn from the name's
 * counter, redisson_lock_token:{name} (RFencedLock's), which then stays in
 * Redis: it counts up by one a first acquire and is never deleted, so a
 * resource that refuses a token lower than one it has seen stays safe
 * when a holder was paused or a failover lost a lock.  A counter missing
 * (never made, or lost with Redis's data: FLUSHALL, a restart without
 * persistence) is made at Redis's clock in microseconds, above every
 * token drawn before unless Redis's clock stepped back.  A handle not
 * fenced draws 0 and leaves no key once released.  Locks, write locks and
 * fair locks; a read lock has no token.  Returns 0, LW_EINVAL (NULL, a
 * read lock, fenced not 0 or 1).  Added in 0.5; before, every handle drew
 * a token.
 */
LW_API int lw_lock_set_fenced(struct lw_lock *lock, int fenced);

/*
 * Blocking calls; the owner is the calling thread.  Each returns 0 (or a
 * count or flag, as said) or a negative LW_E* code:
 *   LW_EINVAL     NULL lock
 *   LW_ELEASE     lease under 3 ticks;  LW_ERANGE  lease over LW_MAX_LEASE_MS
 *   LW_ETIMEDOUT, LW_ECONNLOST, LW_ECONNREFUSED, LW_EAUTH, ...  transport
 *   LW_ETIMEDOUT  also an acquire answered with less than a tick of its
 *                 lease sure to be left (Redis ran it late: paused,
 *                 stopped, slow): the hold it took is given back first,
 *                 and no lock is handed over that may be lost already
 *   LW_EWRONGTYPE the key holds another type of Redis value (a string,
 *                 a list, ..., since 0.5 a hash that is no lock's: an
 *                 application's, not "<id>:<owner>" -> holds): nothing
 *                 was changed
 *   LW_EREPLY     Redis refused the command otherwise (out of memory, an
 *                 ACL); lw_reply_error() has Redis's words for both
 *   LW_EREPLICAS  acquire_replicas set: fewer replicas acknowledged this
 *                 first acquire in time; the hold was given back
 *   LW_ENOTSUP    acquire_replicas set, and the server has no WAIT
 *                 (serverless Redis): the hold was given back
 *   LW_EOVERLOAD  a first acquire of a watchdog lock waited its whole
 *                 wait time for the client's renewals to catch up (see
 *                 "Admission" above); it was never sent
 *   LW_ESHUTDOWN  the client is being freed
 *   LW_EDEADLK    called on the engine thread; or a waiting write acquire
 *                 by an owner holding the read lock (lw_write_lock_new())
 *   LW_EWRONGKIND the name holds a lock of another kind (a plain lock, or a
 *                 read-write lock): nothing was changed
 *
 * token (may be NULL) receives the fencing token of a fenced handle
 * (lw_lock_set_fenced()): the lock name's counter as of this owner's
 * first acquire, so reentrant acquires see the same; 0 for a handle that
 * is not fenced.
 */

/* lw_lock_acquire - wait as long as it takes; the watchdog renews it.
 * (Called lw_lock() before 0.2: that name hid struct lw_lock in C++.  C
 * code may still spell it so unless LW_NO_COMPAT is defined.) */
LW_API int lw_lock_acquire(struct lw_lock *lock, uint64_t *token);
#if !defined(__cplusplus) && !defined(LW_NO_COMPAT)
#define lw_lock(lock, token) lw_lock_acquire((lock), (token))
#endif

/* lw_lock_lease - wait as long as it takes; expires lease_ms after. */
LW_API int lw_lock_lease(struct lw_lock *lock, uint64_t lease_ms, uint64_t *token);

/* lw_trylock - wait at most wait_ms (0: try once); lease_ms 0 means the
 * watchdog.  LW_ELOCKED when another owner held it throughout; the
 * connection's error when Redis could not be reached when the wait ran
 * out ("A wait covers reaching Redis" above). */
LW_API int lw_trylock(struct lw_lock *lock, uint64_t wait_ms, uint64_t lease_ms, uint64_t *token);

/* lw_unlock - release one hold.  LW_ENOTOWNER when the caller holds none:
 * the lock is not touched.  While the last hold's unlock is on its way the
 * watchdog holds its renewals back; if that unlock fails (a transport
 * error: it may not have run), renewing resumes. */
LW_API int lw_unlock(struct lw_lock *lock);

/* lw_force_unlock - delete the lock whoever holds it (and wake its waiters).
 * Returns 1 when it was locked, 0 when not.  Watchdog locks this client
 * held on that name stop being renewed, without on_lost. */
LW_API int lw_force_unlock(struct lw_lock *lock);

/* lw_is_locked - 1 when anyone holds it, 0 when not. */
LW_API int lw_is_locked(struct lw_lock *lock);

/* lw_is_held - 1 when the calling thread holds it, 0 when not. */
LW_API int lw_is_held(struct lw_lock *lock);

/* lw_hold_count - how many times the calling thread holds it (0: not). */
LW_API int lw_hold_count(struct lw_lock *lock);

/* lw_remaining_ttl - *ttl_ms gets the lease left in ms, -1 when the key
 * has no expiry, -2 when nobody holds the lock (as PTTL). */
LW_API int lw_remaining_ttl(struct lw_lock *lock, int64_t *ttl_ms);

/*
 * Asynchronous calls: explicit owner; done(err, value, arg) runs once on
 * the engine thread when the call ends, unless the call itself returns an
 * error (LW_EINVAL, LW_ELEASE, LW_ERANGE, LW_ENOMEM, LW_ESHUTDOWN), in which
 * case it never runs.  value: the token (acquire), the count or flag
 * (force-unlock, is-locked, is-held, hold count), the TTL, or 0.
 */

/* lw_acquire_async - lock (wait_ms LW_WAIT_FOREVER) or try-lock (any other
 * wait_ms); lease_ms 0 means the watchdog. */
LW_API int lw_acquire_async(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms,
                            uint64_t lease_ms, lw_done_fn *done, void *arg);
LW_API int lw_unlock_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg);
LW_API int lw_force_unlock_async(struct lw_lock *lock, lw_done_fn *done, void *arg);
LW_API int lw_is_locked_async(struct lw_lock *lock, lw_done_fn *done, void *arg);
LW_API int lw_is_held_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg);
LW_API int lw_hold_count_async(struct lw_lock *lock, uint64_t owner, lw_done_fn *done, void *arg);
LW_API int lw_remaining_ttl_async(struct lw_lock *lock, lw_done_fn *done, void *arg);

/*
 * Blocking calls with an explicit owner (the blocking twins of the async
 * calls above, for owners that are not threads).
 */
LW_API int lw_acquire(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms, uint64_t lease_ms,
                      uint64_t *token);
LW_API int lw_unlock_owner(struct lw_lock *lock, uint64_t owner);

/*
 * lw_acquire_until, lw_acquire_until_async - lw_acquire() and
 * lw_acquire_async(), telling how long the hold is sure: on success (before
 * done runs, for the async one) *until_ns gets the moment, on
 * lw_clock_now()'s clock, until which the lease this acquire set cannot
 * have run out in Redis: the earliest moment it can have started (the
 * acquire's last write: Redis set the lease when it ran it, later) plus
 * the lease (lease_ms, or the watchdog's) less the drift allowance.  Every
 * acquire is answered with at least a tick of it left (else LW_ETIMEDOUT).
 * A fixed lease's holder must be done by then: the reply may have come
 * late, and the lease started before it.  A watchdog hold's moves on with
 * each renewal (on_risk, on_lost).  until_ns NULL: LW_EINVAL; the async
 * call's must stay valid until done has run.  lwlock's -l stops COMMAND
 * by it.  Added in 0.4.
 */
LW_API int lw_acquire_until(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms,
                            uint64_t lease_ms, uint64_t *token, uint64_t *until_ns);
LW_API int lw_acquire_until_async(struct lw_lock *lock, uint64_t owner, uint64_t wait_ms,
                                  uint64_t lease_ms, uint64_t *until_ns, lw_done_fn *done,
                                  void *arg);

/*
 * lw_unlock_after - release one hold of owner's, as lw_unlock_owner(),
 * except that the last one does not free the lock: it is left to expire
 * after_ms from now (1..LW_MAX_LEASE_MS), and the watchdog no longer
 * renews it.  Until then every client (Redisson's too) sees it held by
 * owner, as before; waiters get it when it expires, not before.  A
 * minimum hold (ShedLock's lockAtLeastFor): a job that ran on one machine
 * keeps others that start a little later from running it again, e.g.
 * lwlock's --min-hold.
 *
 * The key keeps owner's field (one hold) until it expires: an acquire by
 * the same owner in this client meanwhile is a reentrant one.  Returns as
 * lw_unlock_owner() does (LW_ENOTOWNER: owner held none, nothing touched),
 * or LW_ERANGE for after_ms 0 or too large.  A plain lock's only: a read
 * or write lock's handle is LW_EINVAL, nothing touched (its release is
 * Redisson's, which frees the last hold at once).  Blocking; not on the
 * engine thread (LW_EDEADLK).  Added in 0.4.
 */
LW_API int lw_unlock_after(struct lw_lock *lock, uint64_t owner, uint64_t after_ms);

/*
 * What a name holds in Redis, read without taking anything (lwlock
 * --status): free, or which kind of lock, by whom, for how long.  The
 * kinds are Redisson's layouts: an RLock (ours too) is a hash of
 * "<client id>:<owner>" -> holds; a read-write lock the same hash with a
 * "mode" field ("read": the fields are readers, "write": the writer's
 * field ends in ":write", and may be followed by its own reads); an
 * RPermitExpirableSemaphore a string (the permits available) beside the
 * zset "{NAME}:timeout" of the permits taken (id -> expiry).  Added in
 * 0.4, with lw_name_status() and its structs.
 */
enum lw_name_kind {
    LW_NAME_FREE = 0,    /* no key */
    LW_NAME_LOCK = 1,    /* a lock (hash without "mode") */
    LW_NAME_READ = 2,    /* a read-write lock held for reading */
    LW_NAME_WRITE = 3,   /* ... held for writing */
    LW_NAME_PERMITS = 4, /* a semaphore of expirable permits (a string
                            holding an integer) */
    LW_NAME_OTHER = 5,   /* a key of another type, a string that is no
                            count, or (since 0.5) a hash that is no lock's
                            (without "mode", not one "<id>:<owner>" field
                            holding digits; with it, not read or write):
                            not a lock nor a semaphore (type says which) */
};

#define LW_STATUS_HOLDERS 16  /* holders reported; nholders counts all */
#define LW_STATUS_ID_MAX 127u /* bytes of a holder's id kept */

struct lw_name_holder {
    char id[LW_STATUS_ID_MAX + 1]; /* the field as stored ("<client id>:
                                      <owner>[:write]"); a permit's id as
                                      hex when it is not printable (Redisson
                                      stores 16 raw bytes).  Cut to fit */
    int64_t count;                 /* holds; a permit: 1 */
    int64_t ttl_ms;                /* a permit: ms until it expires by
                                      Redis's clock (-1: never); else the
                                      key's, as ttl_ms below */
};

/* A waiter in a fair lock's queue (Redisson's RFairLock queue), in its
 * order: lw_name_status() reads it whatever the name holds, a free lock
 * may have waiters too (the head's turn has come, unheard yet). */
#define LW_STATUS_WAITERS 16     /* waiters reported; nwaiters counts all */
#define LW_STATUS_VALUE_MAX 255u /* an elected leader's value, cut to fit */

struct lw_name_waiter {
    char id[LW_STATUS_ID_MAX + 1]; /* its field, "<client id>:<owner>" */
    int64_t give_up_ms;            /* ms until its give-up time by Redis's clock
                                      (negative: past, dropped at the next look) */
    int64_t place_ms;              /* ms until its place's lease ends (a leasewheel
                                      waiter's); INT64_MIN: none (a Redisson one) */
};

struct lw_name_status {
    int kind;          /* enum lw_name_kind */
    int64_t ttl_ms;    /* the key's PTTL: -1 none set, -2 free */
    int64_t permits;   /* LW_NAME_PERMITS: available now */
    unsigned nholders; /* holders, all; the first LW_STATUS_HOLDERS
                          (in Redis's order) in holders[] */
    struct lw_name_holder holders[LW_STATUS_HOLDERS];
    char type[16];     /* Redis's TYPE of the key ("hash", ...), "" free */
    unsigned nwaiters; /* a fair lock's waiters, all; the first
                          LW_STATUS_WAITERS, in the queue's order, in
                          waiters[] */
    struct lw_name_waiter waiters[LW_STATUS_WAITERS];
    /* An elected leader's (<leasewheel/election.h>): its term, 0 for any
     * other holder; and its value, cut to LW_STATUS_VALUE_MAX bytes,
     * NUL-ended. */
    uint64_t term;
    char value[LW_STATUS_VALUE_MAX + 1];
};

/*
 * lw_name_status - what the lock's name holds now (see enum
 * lw_name_kind), into *out, in one read-only script: nothing is taken or
 * changed.  A permit past its expiry still shows (Redisson reclaims them
 * lazily), with a ttl_ms <= 0.  0, or the errors of a query (LW_ETIMEDOUT,
 * LW_ECONNLOST, ...); LW_EINVAL for a NULL argument.  Blocking; not on the
 * engine thread (LW_EDEADLK).
 */
LW_API int lw_name_status(struct lw_lock *lock, struct lw_name_status *out);

#ifdef __cplusplus
}
#endif

#endif
