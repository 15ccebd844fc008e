/* tools/redis_url.c - see redis_url.h. */
#include "redis_url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "why.h"

/* A URL's sentinels are kept in a struct redis_seeds. */
_Static_assert(LW_MAX_SENTINELS <= LW_MAX_CLUSTER_SEEDS, "redis_seeds holds the sentinels");

/* Digits only (no sign, blank or junk), value in min..max, of s[0..len). */
static int parse_uint(const char *s, size_t len, long min, long max, long *out)
{
    long v = 0;

    if (len == 0 || len > 10)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* HOST or [IPv6] from s[0..len) into host. */
static int take_host(const char *s, size_t len, char *host, char *why, size_t n)
{
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 0)
        return why_fail(why, n, "no HOST");
    if (len >= REDIS_URL_HOST_MAX)
        return why_fail(why, n, "HOST longer than %d bytes", REDIS_URL_HOST_MAX - 1);
    if (memchr(s, '[', len) || memchr(s, ']', len) || memchr(s, ',', len) ||
        memchr(s, '/', len) || memchr(s, '@', len))
        return why_fail(why, n, "HOST '%.*s' holds a '[', ']', ',', '/' or '@'", (int)len, s);
    memcpy(host, s, len);
    host[len] = 0;
    return 0;
}

/* HOST:PORT of s[0..len), or with a default_port (not 0) HOST[:PORT]. */
static int take_host_port(const char *s, size_t len, int default_port, char *host, int *port,
                          char *why, size_t n)
{
    const char *colon = NULL;
    long p = default_port;

    /* The port follows the last ':' outside an [IPv6] literal. */
    for (size_t i = len; i-- > 0 && s[i] != ']';)
        if (s[i] == ':') {
            colon = s + i;
            break;
        }
    if (!colon && !default_port)
        return why_fail(why, n, "no ':PORT' (expected HOST:PORT or redis://...)");
    if (colon && parse_uint(colon + 1, len - (size_t)(colon + 1 - s), 1, 65535, &p))
        return why_fail(why, n, "PORT '%.*s' is not a number from 1 to 65535",
                        (int)(len - (size_t)(colon + 1 - s)), colon + 1);
    if (take_host(s, colon ? (size_t)(colon - s) : len, host, why, n))
        return -1;
    *port = (int)p;
    return 0;
}

static int hex(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10)
                                              : -1;
}

/* Percent-decode s[0..len) into out (REDIS_URL_CRED_MAX). */
static int decode(const char *s, size_t len, char *out, const char *what, char *why, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];

        if (c == '%') {
            if (i + 2 >= len)
                return why_fail(why, n, "%s: '%%' not followed by two hex digits", what);
            int h = hex((unsigned char)s[i + 1]), l = hex((unsigned char)s[i + 2]);
            if (h < 0 || l < 0)
                return why_fail(why, n, "%s: '%%' not followed by two hex digits", what);
            c = h * 16 + l;
            i += 2;
        }
        if (c == 0)
            return why_fail(why, n, "%s holds a NUL byte", what);
        if (o + 1 >= REDIS_URL_CRED_MAX)
            return why_fail(why, n, "%s longer than %d bytes", what, REDIS_URL_CRED_MAX - 1);
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

/* [USER]:PASSWORD of s[0..len).  The messages never quote them: they
 * end up in terminals and logs. */
static int take_userinfo(const char *s, size_t len, struct redis_url *u, char *why, size_t n)
{
    const char *colon = memchr(s, ':', len);

    if (!colon)
        return why_fail(why, n, "no ':' before '@': credentials are [USER]:PASSWORD@ (a "
                                "password alone is ':PASSWORD@')");
    if (colon + 1 == s + len)
        return why_fail(why, n, "empty PASSWORD after ':'");
    return decode(s, (size_t)(colon - s), u->username, "USER", why, n) ||
                   decode(colon + 1, len - (size_t)(colon + 1 - s), u->password, "PASSWORD",
                          why, n)
               ? -1
               : 0;
}

/* The part after "redis://" (or "rediss://": scheme, for messages). */
static int parse_url(const char *scheme, const char *s, struct redis_url *u, char *why, size_t n)
{
    const char *at = strrchr(s, '@'), *host = at ? at + 1 : s;
    const char *slash = strchr(host, '/');
    size_t hlen = slash ? (size_t)(slash - host) : strlen(host);
    long db = 0;

    if (at && take_userinfo(s, (size_t)(at - s), u, why, n))
        return -1;
    if (hlen == 0)
        return why_fail(why, n, "no HOST after %s://", scheme);
    if (take_host_port(host, hlen, REDIS_URL_DEFAULT_PORT, u->host, &u->port, why, n))
        return -1;
    if (slash && slash[1] && parse_uint(slash + 1, strlen(slash + 1), 0, 65535, &db))
        return why_fail(why, n, "DB '%s' is not a number from 0 to 65535 (nor are query "
                                "options supported)",
                        slash + 1);
    u->db = (int)db;
    return 0;
}

/* A Sentinel master name: what `sentinel monitor` takes as one word, and
 * no '@' (then it would rather be the end of a password holding a '#':
 * never quoted). */
static int take_master(const char *s, struct redis_url *u, char *why, size_t n)
{
    size_t len = strlen(s);

    if (len == 0)
        return why_fail(why, n, "empty MASTER after '#'");
    if (len >= REDIS_URL_MASTER_MAX)
        return why_fail(why, n, "MASTER longer than %d bytes", REDIS_URL_MASTER_MAX - 1);
    if (memchr(s, '@', len))
        return why_fail(why, n, "MASTER holds an '@' (write a '#' in a password as %%23)");
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)s[i]) || iscntrl((unsigned char)s[i]))
            return why_fail(why, n, "MASTER '%s' holds a blank or a control character", s);
    memcpy(u->master, s, len + 1);
    return 0;
}

static int list_add(struct redis_seeds *s, const char *host, int port, unsigned max,
                    const char *what, char *why, size_t n);

/* HOST[:PORT],HOST[:PORT],... of s[0..len) into u->sentinels. */
static int take_sentinels(const char *s, size_t len, struct redis_url *u, char *why, size_t n)
{
    const char *end = s + len;

    for (const char *p = s;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t plen = comma ? (size_t)(comma - p) : (size_t)(end - p);
        char host[REDIS_URL_HOST_MAX], sub[200];
        int port;

        if (plen == 0)
            return why_fail(why, n, "an empty sentinel (expected HOST[:PORT],HOST[:PORT],...)");
        if (take_host_port(p, plen, REDIS_URL_DEFAULT_SENTINEL_PORT, host, &port, sub,
                           sizeof sub))
            return why_fail(why, n, "sentinel '%.*s': %s", (int)plen, p, sub);
        if (list_add(&u->sentinels, host, port, LW_MAX_SENTINELS, "sentinels", why, n))
            return -1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/*
 * The part after "redis-sentinel://" (or "rediss-sentinel://": scheme).
 * The master's name follows the last '#', the credentials end at the last
 * '@' before it: a password may hold '@' or '/' unencoded, as with
 * redis://, and even '#' when #MASTER follows; a master name holds no '#'.  The name is checked first, so that
 * no message quotes a piece of a password taken for a host.
 */
static int parse_sentinel_url(const char *scheme, const char *s, struct redis_url *u, char *why,
                              size_t n)
{
    const char *hash = strrchr(s, '#'), *at = NULL, *hosts, *slash;
    long db = 0;

    for (const char *p = s; hash && p < hash; p++)
        if (*p == '@')
            at = p;
    if (!hash && strchr(s, '?'))
        return why_fail(why, n, "query options are not supported (name the master with #MASTER, "
                                "not ?sentinelMasterId=)");
    if (!hash)
        return why_fail(why, n, "no #MASTER (the name the sentinels know the master by: "
                                "%s://HOST:PORT,...#MASTER)",
                        scheme);
    if (take_master(hash + 1, u, why, n) ||
        (at && take_userinfo(s, (size_t)(at - s), u, why, n)))
        return -1;
    hosts = at ? at + 1 : s;
    if (memchr(hosts, '?', (size_t)(hash - hosts)))
        return why_fail(why, n, "query options are not supported");
    slash = memchr(hosts, '/', (size_t)(hash - hosts));
    if ((slash ? slash : hash) == hosts)
        return why_fail(why, n, "no HOST after %s://", scheme);
    if (take_sentinels(hosts, (size_t)((slash ? slash : hash) - hosts), u, why, n))
        return -1;
    if (slash && slash + 1 < hash &&
        parse_uint(slash + 1, (size_t)(hash - slash - 1), 0, 65535, &db))
        return why_fail(why, n, "DB '%.*s' is not a number from 0 to 65535", (int)(hash - slash - 1),
                        slash + 1);
    u->db = (int)db;
    return 0;
}

/* The URL schemes: the form, and whether it means TLS. */
static const struct {
    const char *name;
    int sentinel, tls;
} schemes[] = {
    {"redis", 0, 0},
    {"rediss", 0, 1},
    {"redis-sentinel", 1, 0},
    {"rediss-sentinel", 1, 1},
};

int redis_url_without_password(const char *s, char *out, size_t n)
{
    const char *rest = strstr(s, "://"), *end, *at = NULL, *colon;

    snprintf(out, n, "%s", s);
    if (!rest)
        return 0;
    rest += 3;
    /* Where parse_url() and parse_sentinel_url() end the credentials: the
     * last '@' (before the last '#', #MASTER, of a Sentinel URL). */
    end = strstr(s, "sentinel://") && strrchr(rest, '#') ? strrchr(rest, '#') : rest + strlen(rest);
    for (const char *p = rest; p < end; p++)
        if (*p == '@')
            at = p;
    if (!at || !(colon = memchr(rest, ':', (size_t)(at - rest))))
        return 0;
    snprintf(out, n, "%.*s%s%s", (int)(colon - s), s, colon == rest ? "" : "@", at + 1);
    return 1;
}

int redis_url_parse(const char *s, struct redis_url *u, char *why, size_t n)
{
    const char *sep = strstr(s, "://");

    memset(u, 0, sizeof *u);
    if (!sep)
        return take_host_port(s, strlen(s), 0, u->host, &u->port, why, n);
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        const char *name = schemes[i].name;

        if ((size_t)(sep - s) != strlen(name) || strncasecmp(s, name, strlen(name)))
            continue;
        u->tls = schemes[i].tls;
        return schemes[i].sentinel ? parse_sentinel_url(name, sep + 3, u, why, n)
                                   : parse_url(name, sep + 3, u, why, n);
    }
    return why_fail(why, n, "unknown scheme '%.*s://' (expected redis://, rediss://, "
                            "redis-sentinel:// or rediss-sentinel://)",
                    (int)(sep - s), s);
}

/* One more "host:port" in s, unless there already; at most max of them. */
static int list_add(struct redis_seeds *s, const char *host, int port, unsigned max,
                    const char *what, char *why, size_t n)
{
    char addr[REDIS_URL_SEED_MAX];

    /* Bracket IPv6 so that the library splits at the right ':'. */
    snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    for (unsigned i = 0; i < s->n; i++)
        if (strcmp(s->addr[i], addr) == 0)
            return 0;
    if (s->n >= max)
        return why_fail(why, n, "more than %u %s", max, what);
    /* The string only: the rest stays as redis_seeds_parse() zeroed it,
     * so that equal seed lists are equal bytes (the fuzzer compares two
     * parses with memcmp; stack garbage after the NUL differed). */
    memcpy(s->addr[s->n], addr, strlen(addr) + 1);
    s->ptr[s->n] = s->addr[s->n];
    s->n++;
    return 0;
}

int redis_seeds_add(struct redis_seeds *s, const char *host, int port, char *why, size_t n)
{
    return list_add(s, host, port, LW_MAX_CLUSTER_SEEDS, "seeds", why, n);
}

int redis_seeds_parse(const char *list, struct redis_seeds *out, char *why, size_t n)
{
    const char *p = list;

    memset(out, 0, sizeof *out);
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char host[REDIS_URL_HOST_MAX];
        char sub[200];
        int port;

        if (len == 0)
            return why_fail(why, n, "an empty seed (expected HOST:PORT,HOST:PORT,...)");
        if (len >= 7 && memmem(p, len, "://", 3))
            return why_fail(why, n, "seed '%.*s': seeds are HOST:PORT (credentials go in -r "
                                    "redis://USER:PASSWORD@...)",
                            (int)len, p);
        if (take_host_port(p, len, 0, host, &port, sub, sizeof sub))
            return why_fail(why, n, "seed '%.*s': %s", (int)len, p, sub);
        if (redis_seeds_add(out, host, port, why, n))
            return -1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int redis_addr_split(const char *addr, char *host, size_t size, int *port)
{
    const char *colon = strrchr(addr, ':');
    size_t len = colon ? (size_t)(colon - addr) : 0;
    long p;

    if (!colon || parse_uint(colon + 1, strlen(colon + 1), 1, 65535, &p))
        return -1;
    if (addr[0] == '[' && len >= 2 && addr[len - 1] == ']') {
        addr++;
        len -= 2;
    }
    if (len == 0 || len >= size)
        return -1;
    memcpy(host, addr, len);
    host[len] = 0;
    *port = (int)p;
    return 0;
}

void redis_url_redact(const char *s, char *buf, size_t size)
{
    const char *sep = strstr(s, "://"), *at = strrchr(s, '@');

    if (sep && at && at > sep)
        snprintf(buf, size, "%.*s***%s", (int)(sep + 3 - s), s, at);
    else
        snprintf(buf, size, "%s", s);
}
