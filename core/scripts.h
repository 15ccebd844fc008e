/*
 * core/scripts.h - the Lua scripts of scripts.c, for whoever sends one:
 * their ids (each says its KEYS and ARGV; scripts.c what it does), the
 * table of their text the engine loads, and the prefixes of the
 * companion keys they name.
 */
#ifndef LW_CORE_SCRIPTS_H
#define LW_CORE_SCRIPTS_H

/* The scripts, in the engine's order (request_evalsha()'s `script`). */
enum script_id {
    SCRIPT_LOCK,      /* KEYS name, token key; ARGV lease ms, field */
    SCRIPT_UNLOCK,    /* KEYS name, channel;   ARGV field, publish command */
    SCRIPT_FORCE,     /* KEYS name, channel;   ARGV publish command */
    SCRIPT_RENEW,     /* KEYS names...;        ARGV lease ms, fields... */
    SCRIPT_DROP,      /* KEYS names...;        ARGV publish command, id, owners... */
    SCRIPT_DROP_NODE, /* no KEYS; ARGV names..., publish command, id, owners... */
    SCRIPT_HANDOFF,   /* KEYS name, token key; ARGV field, waiter's field, lease ms */
    SCRIPT_MIN_HOLD,  /* KEYS name;            ARGV field, ms */
    SCRIPT_STATUS,    /* KEYS name, {name}:timeout, and a fair lock's
                         queue, give-up times, places */
    /* Semaphores (semaphore.c): KEYS name, {name}:timeout, channel. */
    SCRIPT_SEM_ACQUIRE, /* ARGV n, lease ms, publish command, ids... */
    SCRIPT_SEM_RELEASE, /* ARGV publish command, ids... */
    SCRIPT_SEM_TRY_SET, /* ARGV permits, publish command */
    SCRIPT_SEM_SET,     /* ARGV permits, publish command */
    SCRIPT_SEM_ADD,     /* ARGV delta, publish command */
    SCRIPT_SEM_COUNTS,  /* ARGV publish command */
    /* The watchdog's renewals below answer one integer per entry, then
     * Redis's clock in microseconds (redis_clock.h). */
    /* Permits (kind_permit.c).  KEYS per permit: name, timeout key; ARGV
     * lease ms, id, publish command, per permit: its id. */
    SCRIPT_RENEW_PERMIT,
    /* No KEYS; ARGV names..., lease ms, id, publish, ids... */
    SCRIPT_RENEW_PERMIT_NODE,

    /* The watchdog's batches (kind_*.c): the client id once a call, an
     * owner per entry.  KEYS names...; ARGV lease ms, id, owners... */
    SCRIPT_RENEW_OWNERS,
    /* No KEYS; ARGV names..., lease ms, id, owners... */
    SCRIPT_RENEW_OWNERS_NODE,
    /* Read holds.  KEYS per hold: its name and timeout keys; ARGV lease
     * ms, id, per hold: owner, count. */
    SCRIPT_RENEW_READ,
    /* No KEYS; ARGV names..., lease ms, id, per name: owner, count. */
    SCRIPT_RENEW_READ_NODE,

    /* Read-write locks (Redisson's RReadWriteLock layout; scripts.c). */
    SCRIPT_READ_LOCK,    /* KEYS name, timeout prefix; ARGV lease ms, field, write field */
    SCRIPT_READ_UNLOCK,  /* KEYS name, channel, timeout prefix, {name};
                            ARGV field, publish command */
    SCRIPT_WRITE_LOCK,   /* KEYS name, token key; ARGV lease ms, write field, field */
    SCRIPT_WRITE_UNLOCK, /* KEYS name, channel; ARGV write field, publish command */
    SCRIPT_RW_FORCE,     /* KEYS name, channel; ARGV mode, publish command, message */
    SCRIPT_RW_IS_LOCKED, /* KEYS name; ARGV mode */
    /* Fair locks (way_fair.c): KEYS name, queue, give-up
     * times, places (and the token key for the acquire). */
    SCRIPT_FAIR_LOCK,   /* ARGV lease, field, wait, channel, publish,
                           enqueue (0: try once), place ms */
    SCRIPT_FAIR_LEAVE,  /* ARGV field, wait, channel, publish */
    SCRIPT_FAIR_UNLOCK, /* ARGV field, publish, channel */
    SCRIPT_FAIR_FORCE,  /* ARGV publish, channel */
    /* Places' renewals (kind_place.c): KEYS give-up times, places and
     * queue per waiter; ARGV place ms, client id, wait, owners.  The node
     * layout: ARGV names, then the same. */
    SCRIPT_RENEW_PLACE,
    SCRIPT_RENEW_PLACE_NODE,
    /* Multi-locks (multi.c), one group of names sharing a slot (one
     * Redis: all of them). */
    SCRIPT_MULTI_LOCK,    /* KEYS name, token key per name; ARGV lease,
                             field, a mode per name ('l' lock, 'w' write) */
    SCRIPT_MULTI_RELEASE, /* KEYS name, channel per name; ARGV field,
                             publish, a mode and a count per name */
    /* Leader election: a lock (Redisson's RLock hash) whose hash also
     * holds the term and the value (ELECT_TERM_FIELD, ELECT_VALUE_FIELD). */
    SCRIPT_ELECT,    /* KEYS name, term counter, election channel; ARGV
                        lease ms, field, value, publish command */
    SCRIPT_RESIGN,   /* KEYS name, lock channel, election channel; ARGV
                        field, publish command */
    SCRIPT_PROCLAIM, /* KEYS name, election channel; ARGV field, term,
                        value, publish command */
    SCRIPT_LEADER,   /* KEYS name */
    /* The same in the fair lock's queue: SCRIPT_FAIR_LOCK's keys and
     * arguments, and KEYS[6] the election channel, ARGV[8] the value;
     * SCRIPT_FAIR_UNLOCK's, and KEYS[5] the election channel. */
    SCRIPT_ELECT_FAIR,
    SCRIPT_RESIGN_FAIR,
    SCRIPT_COUNT
};
extern const char *const lw_lock_scripts[SCRIPT_COUNT];

/* Companion keys' prefixes, named as Redisson names them (lock.c's
 * prefix_name()). */
#define CHANNEL_PREFIX "redisson_lock__channel"
#define TOKEN_PREFIX "redisson_lock_token"
#define RW_CHANNEL_PREFIX "redisson_rwlock"
/* A fair lock's: Redisson's RFairLock's queue and give-up times, and the
 * waiters' places, ours. */
#define FAIR_QUEUE_PREFIX "redisson_lock_queue"
#define FAIR_TIMEOUT_PREFIX "redisson_lock_timeout"
#define FAIR_PLACE_PREFIX "leasewheel_lock_place"
/* An election's channel (ours: Redisson's lock channel carries numbers
 * only), and the fields of the lock's hash no Redisson owner can take (an
 * owner's field is "<uuid>:<thread id>"). */
#define ELECTION_PREFIX "leasewheel_election"
#define ELECT_TERM_FIELD "leasewheel:term"
#define ELECT_VALUE_FIELD "leasewheel:value"

#endif
