/*
 * core/owner.c - owners and the hash field that names their holds.
 *
 * A hold is the field "<client id>:<owner>" of the lock's hash, as in
 * Redisson: the client id keeps two processes' owners (thread ids, as a
 * rule) apart, and the ':' between them is the only one: an id may not
 * hold one.  Everything that formats the field, or checks what goes into it,
 * is here.
 */
#include <string.h>
#include <unistd.h>

#include "client_private.h"

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
