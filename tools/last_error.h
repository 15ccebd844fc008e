/*
 * tools/last_error.h - why a client's last connection attempt failed
 * (lw_client_last_error()), for the tools' messages.
 *
 * Until the library defines lw_client_last_error() (declared in 0.3's
 * lock.h), it is referenced weakly: a library without it gives "" here.
 * Drop the pragma and the test of its address once it is defined.
 */
#ifndef LW_TOOLS_LAST_ERROR_H
#define LW_TOOLS_LAST_ERROR_H

#include <stddef.h>

#include <leasewheel/lock.h>

#pragma weak lw_client_last_error

/* The one line (the address and the reason) in buf, and its LW_E* code;
 * 0 and "" when none is known (or client is NULL). */
static inline int tool_last_error(const struct lw_client *client, char *buf, size_t len)
{
    if (len)
        buf[0] = 0;
    return client && lw_client_last_error ? lw_client_last_error(client, buf, len) : 0;
}

#endif
