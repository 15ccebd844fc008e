/*
 * base/error.c - what an error says: the messages of the LW_E* codes of
 * <leasewheel/error.h>, and Redis's own words for the last call on each
 * thread that Redis answered with an error (lw_reply_error()).
 *
 * The words are kept per thread, as errno is: a completion callback's
 * signature (lw_done_fn) has no room for them, and a blocking call's
 * caller reads them on the thread that made the call, after it returned.
 */
#include <stdio.h>

#include <leasewheel/lock.h>

#include "reply_error.h"

struct error_text {
    const char *name;
    const char *message;
};

/* Indexed by -code. */
static const struct error_text error_texts[] = {
    [0] = {"LW_OK", "success"},
    [-LW_EINVAL] = {"LW_EINVAL", "invalid argument"},
    [-LW_ERANGE] = {"LW_ERANGE", "argument out of range"},
    [-LW_ENOMEM] = {"LW_ENOMEM", "out of memory"},
    [-LW_EBUSY] = {"LW_EBUSY", "timer is already scheduled"},
    [-LW_ESHUTDOWN] = {"LW_ESHUTDOWN", "shutting down"},
    [-LW_ETIMEDOUT] = {"LW_ETIMEDOUT", "Redis did not answer in time"},
    [-LW_ECONNREFUSED] = {"LW_ECONNREFUSED", "connection to Redis refused"},
    [-LW_ENOHOST] = {"LW_ENOHOST", "Redis host name does not resolve"},
    [-LW_EAUTH] = {"LW_EAUTH", "Redis authentication failed"},
    [-LW_ECONNLOST] = {"LW_ECONNLOST", "connection to Redis lost"},
    [-LW_EREDIS] = {"LW_EREDIS", "Redis refused a connection set-up command"},
    [-LW_ECONNECT] = {"LW_ECONNECT", "cannot connect to Redis"},
    [-LW_EDEADLK] = {"LW_EDEADLK", "would deadlock: a blocking call on the engine's own "
                                   "thread, or a write lock asked by an owner that reads it"},
    [-LW_ENOTOWNER] = {"LW_ENOTOWNER", "lock not held by this owner"},
    [-LW_ELOCKED] = {"LW_ELOCKED", "lock held by another owner"},
    [-LW_ELEASE] = {"LW_ELEASE", "lease shorter than three wheel ticks"},
    [-LW_EREPLY] = {"LW_EREPLY", "Redis answered a lock command with an error"},
    [-LW_EUNSETTLED] = {"LW_EUNSETTLED",
                        "the Redis master was moving (a failover, a migration) and the command "
                        "did not complete"},
    [-LW_EREPLICAS] = {"LW_EREPLICAS", "too few replicas acknowledged the acquire in time"},
    [-LW_ETLS] = {"LW_ETLS", "TLS handshake or certificate verification failed"},
    [-LW_ENOTSUP] = {"LW_ENOTSUP", "not supported here: by this build of the library (TLS), "
                                   "or by the Redis server (WAIT)"},
    [-LW_EWRONGKIND] = {"LW_EWRONGKIND",
                        "the name holds a lock of another kind (a plain lock, or a "
                        "read-write lock)"},
    [-LW_ENOSEM] = {"LW_ENOSEM", "the semaphore does not exist (its permits were never set)"},
    [-LW_ENOPERMIT] = {"LW_ENOPERMIT", "no such permit: unknown, released already or expired"},
    [-LW_EOVERLOAD] = {"LW_EOVERLOAD", "the client's Redis cannot renew more locks now"},
    [-LW_EWRONGTYPE] = {"LW_EWRONGTYPE", "the name holds another type of Redis value, not a "
                                         "lock nor a semaphore"},
    [-LW_ENOPERM] = {"LW_ENOPERM", "the Redis user's ACL does not allow a command the client "
                                   "needs"},
    [-LW_ENODB] = {"LW_ENODB", "Redis has no database of that number"},
    [-LW_EPROTO] = {"LW_EPROTO", "the server does not speak Redis's protocol"},
};

static const struct error_text *find_error(int err)
{
    unsigned idx = err <= 0 ? (unsigned)-err : ~0u;

    if (idx >= sizeof error_texts / sizeof error_texts[0] || !error_texts[idx].name)
        return 0;
    return &error_texts[idx];
}

const char *lw_strerror(int err)
{
    const struct error_text *e = find_error(err);

    return e ? e->message : "unknown error";
}

const char *lw_errname(int err)
{
    const struct error_text *e = find_error(err);

    return e ? e->name : "LW_UNKNOWN";
}

/* Long enough for Redis's error and the script's place it names. */
static _Thread_local char reply_words[LW_REPLY_ERROR_MAX];

const char *lw_reply_error(void)
{
    return reply_words;
}

void reply_error_set(const char *words)
{
    if (!words) { /* every call's completion without an error: cheap */
        reply_words[0] = 0;
        return;
    }
    snprintf(reply_words, sizeof reply_words, "%s", words);
}
