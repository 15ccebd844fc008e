/*
 * leasewheel error codes.
 *
 * Every function of the library that can fail returns 0 (or a count) on
 * success and one of these negative codes on failure.  The numbers are part
 * of the ABI: they never change meaning, new ones are only ever appended.
 * lw_strerror() turns any of them into a one-line English message.
 */
#ifndef LEASEWHEEL_ERROR_H
#define LEASEWHEEL_ERROR_H

#include <leasewheel/version.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lw_error {
    LW_OK = 0,
    LW_EINVAL = -1,       /* an argument is NULL or meaningless (e.g. a zero tick) */
    LW_ERANGE = -2,       /* an argument is outside its documented range */
    LW_ENOMEM = -3,       /* an allocation failed */
    LW_EBUSY = -4,        /* the timer is already in a wheel; cancel it first */
    LW_ESHUTDOWN = -5,    /* the wheel (or client) is being freed */
    LW_ETIMEDOUT = -6,    /* no reply (or no connection) within the command timeout */
    LW_ECONNREFUSED = -7, /* nothing listens at the Redis address */
    LW_ENOHOST = -8,      /* the Redis host name does not resolve */
    LW_EAUTH = -9,        /* Redis refused the password (or wants one) */
    LW_ECONNLOST = -10,   /* the connection broke before the reply came */
    LW_EREDIS = -11,      /* Redis answered a set-up command (SELECT, SCRIPT LOAD)
                             with an error a wait may mend (LOADING, BUSY,
                             ...: lw_client_last_error() has its words);
                             one that will not is LW_EAUTH, LW_ENOPERM,
                             LW_ENODB or LW_ENOTSUP since 0.5 */
    LW_ECONNECT = -12,    /* cannot connect to Redis for another reason */
    LW_EDEADLK = -13,     /* a blocking call on the thread that runs the engine;
                             or a waiting write acquire by an owner that
                             holds the read lock (no upgrade) */
    LW_ENOTOWNER = -14,   /* unlock by an owner that does not hold the lock */
    LW_ELOCKED = -15,     /* try-lock: another owner held the lock all the wait */
    LW_ELEASE = -16,      /* a lease shorter than three ticks of the client's wheel */
    LW_EREPLY = -17,      /* Redis answered a lock command with an error (out of
                             memory, an ACL's refusal, ...: lw_reply_error()
                             has Redis's words); a key of another type is
                             LW_EWRONGTYPE since 0.4 */
    LW_EUNSETTLED = -18,  /* the cluster kept moving (failover, migration,
                             CLUSTERDOWN, LOADING) for the whole command
                             timeout; Sentinel: the command was on its way
                             to a master that was switched away from, or
                             no master was to be had */
    LW_EREPLICAS = -19,   /* fewer replicas than asked for acknowledged an
                             acquire in time: the hold was given back */
    LW_ETLS = -20,        /* the TLS handshake failed, or the server's
                             certificate was not trusted
                             (lw_client_last_error() says why) */
    LW_ENOTSUP = -21,     /* asked for what this build of the library has
                             not (TLS, built with -Dtls=disabled), or the
                             server has not (WAIT, for acquire_replicas:
                             serverless Redis; since 0.5 a command the
                             client sends at set-up, which the server
                             says is unknown); lw_client_last_error()
                             says which */
    /* Added in 0.4: read-write locks, permits, admission, other types. */
    LW_EWRONGKIND = -22, /* the name holds a lock of another kind: a read or
                            write lock asked of a plain lock's hash (no
                            `mode` field), or a lock of a read-write
                            lock's; nothing was changed */
    LW_ENOSEM = -23,     /* the semaphore does not exist: its permits were
                            never set (lw_semaphore_try_set()) */
    LW_ENOPERMIT = -24,  /* a permit released is unknown, released already
                            or expired: nothing was released */
    LW_EOVERLOAD = -25,  /* the client's Redis cannot renew more locks now:
                            its renewals were behind for the whole wait of
                            a first acquire, which was never sent (see
                            "Admission" in leasewheel/lock.h) */
    LW_EWRONGTYPE = -26, /* a key of the name holds another type of Redis
                            value (a string, a list, a set, ...), not a
                            lock's nor a semaphore's: Redis answered
                            WRONGTYPE, and nothing was changed
                            (lw_reply_error() has Redis's words); since
                            0.5 also a hash whose fields are not a
                            lock's (an application's hash) */
    /* Added in 0.5: set-up refusals that a wait will not mend, each
     * failing calls at once before a first connection, with Redis's words
     * in lw_client_last_error() (e.g. "127.0.0.1:6379: SELECT 99: ERR DB
     * index is out of range"). */
    LW_ENOPERM = -27, /* the Redis user's ACL refuses a command the client
                         sends at set-up (NOPERM: SCRIPT LOAD, SELECT,
                         PING, ROLE) */
    LW_ENODB = -28,   /* Redis has no database of the number asked (SELECT:
                         the DB index is out of range, or a cluster node,
                         which has only DB 0) */
    LW_EPROTO = -29,  /* the server does not speak Redis's protocol (RESP):
                         its first answer does not parse (an HTTP server,
                         say) */
};

/*
 * lw_strerror - a static, human-readable message for an error code.
 * Never returns NULL; unknown codes give "unknown error".  Thread-safe.
 */
LW_API const char *lw_strerror(int err);

/*
 * lw_errname - the code's symbolic name ("LW_EINVAL"), for logs and tests.
 * Never returns NULL; unknown codes give "LW_UNKNOWN".
 */
LW_API const char *lw_errname(int err);

#ifdef __cplusplus
}
#endif

#endif
