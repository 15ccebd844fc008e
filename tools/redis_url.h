/*
 * tools/redis_url.h - where lwlock and lwbench find Redis: one parser for
 * both tools' -r/--redis (and $LWLOCK_REDIS) and -c/--cluster.
 *
 *   HOST:PORT                                  [IPv6]:PORT works too
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] port 6379 and db 0 unless
 *                                              given; USER and PASSWORD may
 *                                              be %XX-encoded (%40 for '@')
 *   redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER
 *                                              the master named MASTER, as
 *                                              the sentinels HOST:PORT,...
 *                                              (port 26379 unless given, at
 *                                              most LW_MAX_SENTINELS) say;
 *                                              USER and PASSWORD are the
 *                                              data nodes' (Lettuce's
 *                                              convention), not the
 *                                              sentinels'
 *   rediss://... and rediss-sentinel://...     the same over TLS (tls set;
 *                                              the sentinels too)
 *   HOST:PORT,HOST:PORT,...                    cluster seeds (-c), at most
 *                                              LW_MAX_CLUSTER_SEEDS
 *
 * Pure parsing: no environment, no output; errors are a sentence in the
 * caller's buffer, fit to follow "invalid Redis address 'X': ".
 */
#ifndef LW_TOOLS_REDIS_URL_H
#define LW_TOOLS_REDIS_URL_H

#include <stddef.h>

#include <leasewheel/lock.h>

#define REDIS_URL_HOST_MAX 256
#define REDIS_URL_CRED_MAX 256 /* user or password, decoded, with its NUL */
#define REDIS_URL_DEFAULT_PORT 6379
#define REDIS_URL_SEED_MAX (REDIS_URL_HOST_MAX + 8) /* "host:65535" and NUL */

#define REDIS_URL_DEFAULT_SENTINEL_PORT 26379
#define REDIS_URL_MASTER_MAX 256 /* a Sentinel master name, with its NUL */

/* Cluster seeds as lw_client_config wants them: cluster_seeds = ptr,
 * cluster_nseeds = n.  Also a Sentinel URL's sentinels (sentinels = ptr,
 * nsentinels = n). */
struct redis_seeds {
    unsigned n;
    char addr[LW_MAX_CLUSTER_SEEDS][REDIS_URL_SEED_MAX]; /* "host:port" */
    const char *ptr[LW_MAX_CLUSTER_SEEDS];               /* addr[i] */
};

struct redis_url {
    char host[REDIS_URL_HOST_MAX];     /* without IPv6 brackets; "" with
                                          redis-sentinel:// */
    int port;                          /* 1..65535; 0 with redis-sentinel:// */
    char username[REDIS_URL_CRED_MAX]; /* "" when none */
    char password[REDIS_URL_CRED_MAX]; /* "" when none */
    int db;                            /* 0..65535 */
    int tls;                           /* 1: rediss:// or rediss-sentinel:// */
    /* redis-sentinel:// only: sentinels.n is 0 for the other forms. */
    struct redis_seeds sentinels;      /* the sentinels, "host:port" each */
    char master[REDIS_URL_MASTER_MAX]; /* #MASTER */
};

/*
 * redis_url_parse - HOST:PORT, a redis[s]:// or a redis[s]-sentinel:// URL
 * into *u.  0, or -1 with why (size n) saying what is wrong; *u is then
 * unspecified.
 */
int redis_url_parse(const char *s, struct redis_url *u, char *why, size_t n);

/*
 * redis_url_without_password - s (an address as redis_url_parse() takes
 * it) with the PASSWORD of its [USER]:PASSWORD@ taken out, USER kept
 * ("redis://app:pw@h:1/2" -> "redis://app@h:1/2", "redis://:pw@h" ->
 * "redis://h"), into out (size n, at least strlen(s) + 1).  1 when a
 * password was taken out, 0 when s has none (out is then s).
 */
int redis_url_without_password(const char *s, char *out, size_t n);

/*
 * redis_seeds_parse - a comma-separated list of HOST:PORT into *out
 * (replacing what it held).  0, or -1 with why.
 */
int redis_seeds_parse(const char *list, struct redis_seeds *out, char *why, size_t n);

/* redis_seeds_add - one more "host:port" (from a -r given with -c, say);
 * duplicates are kept out.  0, or -1 with why when full. */
int redis_seeds_add(struct redis_seeds *s, const char *host, int port, char *why, size_t n);

/* redis_addr_split - one "host:port" or "[v6]:port" of a struct
 * redis_seeds back into host (size bytes, no brackets) and *port.  0, or
 * -1 when addr is not of that form. */
int redis_addr_split(const char *addr, char *host, size_t size, int *port);

/* redis_url_redact - s for a message, with what lies between "://" and
 * the last '@' (the credentials) replaced by three asterisks. */
void redis_url_redact(const char *s, char *buf, size_t size);

#endif
