/*
 * base/reply_error.h - keeping Redis's words for lw_reply_error(), which
 * <leasewheel/lock.h> documents.
 */
#ifndef LW_BASE_REPLY_ERROR_H
#define LW_BASE_REPLY_ERROR_H

/* The words lw_reply_error() answers on this thread from now: Redis's
 * error reply, cut to LW_REPLY_ERROR_MAX - 1 bytes; NULL: none (""). */
void reply_error_set(const char *words);

#endif
