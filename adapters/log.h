/*
 * adapters/log.h - the program's log hook (lw_client_config.log), fed by
 * the transport and the locks, rate-limited by kind.
 *
 * Each line has a kind; each kind may say LOG_BURST lines in a second, and
 * the rest of that second is counted, not said: the next line of the kind
 * says how many went unsaid.  A flapping link, or 200000 locks turning at
 * risk at once, costs the program a handful of lines a second.  Engine
 * thread only (the engine's loop), so no lock.
 */
#ifndef LW_ADAPTERS_LOG_H
#define LW_ADAPTERS_LOG_H

#include <stdint.h>

#define LOG_BURST 5 /* lines of one kind per second, at most */

/* The levels of lw_log_level (leasewheel/lock.h), for a header that does
 * not include it. */
enum { LOG_ERROR = 0,
       LOG_WARN = 1,
       LOG_INFO = 2 };

enum log_kind {
    LOG_CONN_FAILED,   /* a connection attempt failed, or one was lost */
    LOG_CONN_RESTORED, /* a connection made again after a failure */
    LOG_TLS_FILES,     /* TLS files changed and did not load: said once
                          per change, so not under a flapping link's */
    LOG_FAILOVER,      /* a failover or a switch of master seen */
    LOG_TOPOLOGY,      /* a slot map read that changed */
    LOG_REDIRECTS,     /* MOVED and ASK replies, many in a second */
    LOG_SERVER,        /* the server lacks what the config needs (WAIT) */
    LOG_LOCK_RISK,     /* a lock at risk */
    LOG_LOCK_SAFE,     /* a lock safe again */
    LOG_LOCK_LOST,     /* a lock lost */
    LOG_OVERLOAD,      /* first acquires held back, or admitted again */
    LOG_CLOCK,         /* a clock stepped: Redis's ahead of ours, or the
                          host slept */
    LOG_KIND_COUNT
};

typedef void log_fn(int level, const char *message, void *arg);

struct log_window {
    uint64_t start_ns; /* this second began then */
    unsigned said;     /* lines said in it */
    uint64_t unsaid;   /* lines not said since the last one that was */
};

struct logger {
    log_fn *fn; /* NULL: silent */
    void *arg;
    int level; /* the least severe level said */
    struct log_window window[LOG_KIND_COUNT];
};

/* log_enabled - whether a line of level would be said (when its kind has
 * room): to skip formatting it. */
static inline int log_enabled(const struct logger *lg, int level)
{
    return lg && lg->fn && level <= lg->level;
}

/* log_say - a line of kind at level, printf-style: said, or counted when
 * its kind said LOG_BURST lines this second. */
void log_say(struct logger *lg, int kind, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
