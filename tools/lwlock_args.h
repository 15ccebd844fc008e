/*
 * tools/lwlock_args.h - lwlock's command line: options, exit statuses,
 * signal names.
 *
 * Apart from lwlock.c so that the parsing can be called on its own, many
 * times in one process (tests/fuzz/fuzz_lwlock_args.c): it reads no
 * environment, exits nothing and prints only to the streams it is given.
 */
#ifndef LW_TOOLS_LWLOCK_ARGS_H
#define LW_TOOLS_LWLOCK_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "redis_url.h"
#include "tls_opts.h"

/* Exit statuses besides COMMAND's own (sysexits.h where one fits): one
 * table for every kind, --status and --set-permits, printed by --help and
 * lwlock(1); lwlock.c's exit_status() maps the library's errors onto it. */
enum {
    EXIT_HELD = 1,         /* --status: NAME is held (0: free) */
    EXIT_USAGE = 64,       /* EX_USAGE: found before anything is tried */
    EXIT_WRONGKIND = 65,   /* EX_DATAERR: NAME holds a lock of another kind
                              (a plain lock asked as --read/--write, or a
                              read-write lock asked as a lock) or another
                              type (a lock asked for permits, a semaphore's
                              count or an application's value asked as a
                              lock: LW_EWRONGKIND, LW_EWRONGTYPE) */
    EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: Redis unreachable, refusing
                              us (AUTH, ACL, DB, TLS, not Redis) or failing */
    EXIT_OSERR = 71,       /* EX_OSERR: fork, pipe, memory */
    EXIT_LOCKED = 75,      /* EX_TEMPFAIL: not acquired within the wait */
    EXIT_LOST = 79,        /* the lock (--elect: leadership) was lost while
                              COMMAND ran */
    EXIT_NOEXEC = 126,     /* as shells: found but cannot be run */
    EXIT_NOTFOUND = 127,   /* as shells: not found */
};

#define LWLOCK_DEFAULT_REDIS "127.0.0.1:6379"
#define LWLOCK_MAX_MS 2147483647LL      /* LW_MAX_LEASE_MS: about 24.8 days */
#define LWLOCK_MAX_REPLICAS 1000        /* --replicas: more is surely a typo */
#define LWLOCK_MAX_PERMITS 1000000000LL /* --permits, --set-permits */

/* Which lock of NAME lwlock holds. */
enum lwlock_kind {
    LWLOCK_PLAIN = 0, /* a lock (Redisson's RLock) */
    LWLOCK_READ,      /* --read: the read lock of a read-write lock */
    LWLOCK_WRITE,     /* --write: its write lock */
    LWLOCK_FAIR,      /* --fair: a fair lock (Redisson's RFairLock) */
    LWLOCK_MULTI,     /* --multi: every name of NAME1,NAME2,... at once
                         (plain locks), or none */
};

struct lwlock_options {
    struct redis_url redis;     /* -r or $LWLOCK_REDIS: the server (or the
                                   sentinels), or with -c only its USER,
                                   PASSWORD (and DB 0) */
    struct redis_seeds cluster; /* -c: the seeds; n == 0 without -c */
    struct lw_tls_config tls;   /* --tls, --cacert, ... (tls_opts.h); enable
                                   also by a rediss address.  The data
                                   nodes': every cluster node, the master */
    int plain_sentinels;        /* $LWLOCK_SENTINEL_TLS=0: the sentinels
                                   without TLS (lwlock_check_env_files) */
    long long wait_ms;          /* -1: forever, else 0..LWLOCK_MAX_MS */
    uint32_t lease_ms;          /* a fixed lease, or 0: the watchdog */
    uint32_t watchdog_ms;
    int lost_sig;         /* 1..SIGRTMAX */
    int warn_sig;         /* --warn-signal: sent when the lock turns at risk;
                             0: none (the default), else 1..SIGRTMAX and not
                             lost_sig */
    uint64_t max_hold_ms; /* --max-hold: given up after this long held
                             (max_hold_ms); 0: no limit */
    uint64_t min_hold_ms; /* --min-hold: a COMMAND that ends sooner leaves
                             the lock to expire this long after it was
                             acquired (lw_unlock_after); 0: released at
                             once; at most max_hold_ms when both given */
    int verbose;          /* -v: the library's log lines to stderr */
    int quiet;            /* -q: nothing said when the lock is merely held
                             by another (real failures are still said) */
    int conflict_exit;    /* -E: the status when the lock is not acquired
                             within the wait, 0..255 (default EXIT_LOCKED) */
    uint32_t replicas;    /* --replicas: acquire_replicas, 0 when not given */
    const char *name;     /* argv's NAME (--elect's argument with --elect):
                             1..LW_LOCK_NAME_MAX bytes */
    const char *prefix;   /* --prefix or $LWLOCK_PREFIX, NULL when none */
    /* The lock's name in Redis: "PREFIX:NAME", or NAME without a prefix. */
    char key[LW_LOCK_NAME_MAX + 1];
    char **command;         /* COMMAND and its arguments in argv, NULL-terminated;
                               NULL with --status */
    enum lwlock_kind kind;  /* --read, --write, --fair, --multi, else
                               LWLOCK_PLAIN */
    size_t nnames;          /* --multi: the names in NAME (comma-separated),
                               each 1..LW_LOCK_NAME_MAX bytes with PREFIX:,
                               1..LW_MULTI_MAX of them */
    int status;             /* --status: say who holds NAME, take nothing */
    int observe;            /* --observe: say who leads NAME, and every
                               change, until a signal; take nothing */
    int fence;              /* --fence: draw a fencing token, LWLOCK_TOKEN */
    int elect;              /* --elect NAME: campaign for leadership of NAME
                               (its argument, in name), run COMMAND while
                               leader with LWLOCK_TERM */
    const char *value;      /* --value V: the leader's value (--elect only),
                               at most LW_ELECTION_VALUE_MAX bytes; "" when
                               not given */
    uint32_t lock_delay_ms; /* --lock-delay D (--elect only): a term lost
                               without a resign keeps NAME this long past
                               the lease (election_lock_delay_ms); 0 none */
    int json;               /* --json: --status's or --observe's answers as
                               JSON */
    /* Permits (a semaphore whose permits expire) instead of a lock. */
    long long permits;     /* --permits N: hold one permit of the semaphore
                              NAME (PREFIX:NAME), created with N when absent;
                              0: a lock, as without it */
    long long set_permits; /* --set-permits N: set the total, no COMMAND;
                              -1 when not given */
};

/*
 * lwlock_parse_args - read argv (argv[0] the program, argv[argc] NULL) into
 * *o.  env_redis is $LWLOCK_REDIS (NULL or "": unset), the address when
 * there is no -r; env_prefix $LWLOCK_PREFIX (likewise), the prefix when
 * there is no --prefix.  Returns -1 to go on, or the status to exit with: 0
 * after --help or --version (printed to out), EXIT_USAGE after a message
 * on err.  argv is not reordered: options end at NAME.
 *
 * getopt_long() keeps its state in globals, among them a hidden position
 * inside a group of short options ("-hw5") that may still point into the
 * previous argv.  Every call therefore starts with optind = 0, which glibc
 * takes as "initialise everything" (optind = 1 only rewinds the index).
 * So: not thread-safe, and no other getopt user may interleave with it.
 */
int lwlock_parse_args(int argc, char **argv, const char *env_redis, const char *env_prefix,
                      struct lwlock_options *o, FILE *out, FILE *err);

/*
 * lwlock_check_env_files - after lwlock_parse_args() returned -1: what it
 * does not look at, $LWLOCK_SENTINEL_TLS (sentinel_tls, NULL when unset)
 * into o->plain_sentinels, and the TLS files named (they can be read).
 * -1 to go on, or EXIT_USAGE after a message on err.
 */
int lwlock_check_env_files(struct lwlock_options *o, const char *sentinel_tls, FILE *err);

/* lwlock_signal_name - "SIGTERM" in buf, or "signal 40" for one without
 * a name; returns buf. */
const char *lwlock_signal_name(int sig, char *buf, size_t size);

#endif
