/*
 * core/reply.h - reading a number out of a reply, as lock.c and
 * semaphore.c both must.
 */
#ifndef LW_CORE_REPLY_H
#define LW_CORE_REPLY_H

#include <stdint.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

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

#endif
