/*
 * core/reply.h - reading a number out of a reply, as lock.c and
 * semaphore.c both must; an error reply's code and words, as every op
 * keeps them for lw_reply_error().
 */
#ifndef LW_CORE_REPLY_H
#define LW_CORE_REPLY_H

#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include <hiredis/hiredis.h>
#include <leasewheel/error.h>

#include "reply_error.h"

/* An integer reply, or a string holding one (HGET's), as a number; 0 for
 * anything else (nil: HGET of a field that is not there). */
static inline int64_t reply_integer(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return 0;
}

/* An error reply's code: LW_EWRONGTYPE when Redis said WRONGTYPE (a key
 * of the name holds another type: Redis begins a script's error with it,
 * or, before 7.0, names it after the script's place), else LW_EREPLY.
 * Its words are kept in *said, the first error an op meets (out of
 * memory: the code still says it), without the place in our script that
 * Redis 7 adds (" script: <sha1>, on @user_script:1."): it says nothing
 * to a user. */
static inline int reply_error(const redisReply *r, char **said)
{
    const char *words = r->type == REDIS_REPLY_ERROR && r->str ? r->str : "";
    const char *place = strstr(words, " script: ");

    if (!*said)
        *said = strndup(words, place ? (size_t)(place - words) : strlen(words));
    if (strncmp(words, "WRONGTYPE ", 10) == 0 || strstr(words, ": WRONGTYPE "))
        return LW_EWRONGTYPE;
    return LW_EREPLY;
}

/* An op's words told to this thread's lw_reply_error() ("" when it has
 * none), and let go. */
static inline void reply_error_tell(char **said)
{
    reply_error_set(*said);
    free(*said);
    *said = NULL;
}

#endif
