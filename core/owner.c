/*
 * core/owner.c - owners and the hash field that names their holds.
 *
 * A hold is the field "<client id>:<owner>" of the lock's hash, as in
 * Redisson: the client id keeps two processes' owners (thread ids, as a
 * rule) apart, and the ':' between them is the only one: an id may not
 * hold one.  Everything that formats the field, or checks what goes into it,
 * is here.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client_base.h"
#include "owner.h"

uint64_t lw_owner_self(void)
{
    return (uint64_t)gettid();
}

/* A configured client id (NULL: a random one will do); the field's ':'
 * must stay the separator. */
int check_client_id(const char *id)
{
    size_t n;

    if (!id)
        return 0;
    n = strlen(id);
    if (n == 0)
        return LW_EINVAL;
    return n > LW_CLIENT_ID_MAX || strchr(id, ':') ? LW_ERANGE : 0;
}

/* 32 random bits; the clock and the pid when the kernel has no entropy
 * to give (the id must still differ between processes, not be secret). */
static uint32_t random_bits(void)
{
    uint32_t r;

    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    return (uint32_t)(lw_clock_now() ^ ((uint64_t)getpid() << 16));
}

/*
 * "<host>-<pid>-<8 hex digits>" into out[LW_CLIENT_ID_MAX + 1]: who holds
 * a lock, readable in its hash (client_id_host).  The host name is cut so
 * that the pid and the random part always fit, and anything in it that
 * is not printable ASCII, a blank or a ':' (the field's separator)
 * becomes '-'.
 */
void host_client_id(char *out)
{
    char host[256] = "";
    int tail;

    if (gethostname(host, sizeof host - 1) || !host[0])
        snprintf(host, sizeof host, "unknown");
    for (char *p = host; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == ':')
            *p = '-';
    /* "-<pid>-xxxxxxxx": at most 1 + 10 + 1 + 8 bytes. */
    tail = snprintf(NULL, 0, "-%ld-%08x", (long)getpid(), 0u);
    snprintf(out, LW_CLIENT_ID_MAX + 1, "%.*s-%ld-%08x", (int)LW_CLIENT_ID_MAX - tail, host,
             (long)getpid(), random_bits());
}

/* owner in decimal, NUL-terminated: once per renewal, so no snprintf. */
size_t owner_digits(uint64_t owner, char *buf)
{
    char digits[20];
    size_t n = 0, len = 0;

    do {
        digits[n++] = (char)('0' + owner % 10);
        owner /= 10;
    } while (owner);
    while (n)
        buf[len++] = digits[--n];
    buf[len] = 0;
    return len;
}

/* "<id>:<owner>", NUL-terminated. */
size_t client_field(const struct lw_client *c, uint64_t owner, char *buf)
{
    memcpy(buf, c->id, c->id_len);
    buf[c->id_len] = ':';
    return c->id_len + 1 + owner_digits(owner, buf + c->id_len + 1);
}
