/*
 * adapters/replies.h - a connection's reply reader, whose replies live in
 * one arena that the next reply reuses.
 *
 * hiredis's reader makes a reply object per element by default: a
 * watchdog call of 100 renewals comes back as an array of 100 integers,
 * 101 callocs and 101 frees on the engine thread for every call.  But a
 * reply lives only while its callback runs (conn.c frees it on return:
 * whoever keeps anything copies it), and a reader holds one reply at a
 * time, so the objects of one reply can come from a bump allocator that is
 * emptied once the reply has been handed over.  The replies are hiredis's
 * own struct redisReply, read as ever.
 */
#ifndef LW_ADAPTERS_REPLIES_H
#define LW_ADAPTERS_REPLIES_H

#include <hiredis/read.h>

/* A reader whose replies come from an arena of its own; NULL: no memory.
 * Free it with replies_reader_free(), never redisReaderFree(). */
redisReader *replies_reader_new(void);

/* The reply last taken from r (redisReaderGetReply()) is done with: its
 * memory is reused by the next.  In place of freeReplyObject(). */
void replies_done(redisReader *r);

/* Free r, its arena and any reply in it.  NULL ignored. */
void replies_reader_free(redisReader *r);

#endif
