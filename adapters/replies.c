/*
 * adapters/replies.c - reply objects from an arena per reader (see
 * replies.h for why).
 *
 * The arena is one block that replies are cut from front to back, and
 * emptied by replies_done().  A reply bigger than what is left of the
 * block (a long array, a big INFO) spills into blocks of its own, freed
 * at the next replies_done(), which also grows the block to what that
 * reply needed (up to ARENA_MAX), so that a connection settles on a block
 * its replies fit in.  The reader's own calls are hiredis's default ones
 * (read.c's createStringObject() and the others), with the memory taken
 * from the arena and nothing freed one by one.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "queue.h"
#include "replies.h"

#define ARENA_FIRST 8192u         /* bytes: a renewal call's 100 integers fit */
#define ARENA_MAX (1024u * 1024u) /* the most a block is grown to */
#define ARENA_ALIGN sizeof(max_align_t)

struct block {
    struct lw_qnode qnode; /* a spill block: in its arena's spill */
    size_t used, cap;
    max_align_t data[];
};

struct arena {
    struct block *main;    /* emptied by replies_done() */
    struct lw_slist spill; /* this reply's overflow, newest first */
    size_t spilled;        /* bytes taken from spill blocks */
};

static struct block *block_new(size_t cap)
{
    struct block *b = malloc(sizeof *b + cap);

    if (b) {
        b->used = 0;
        b->cap = cap;
    }
    return b;
}

static void *cut(struct block *b, size_t n)
{
    void *p = (char *)b->data + b->used;

    b->used += n;
    return p;
}

/* n bytes, aligned, from the main block or a spill block; NULL: no
 * memory (the reader then fails with an out-of-memory error). */
static void *arena_alloc(struct arena *a, size_t n)
{
    struct block *b;

    n = (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (a->main->cap - a->main->used >= n)
        return cut(a->main, n);
    a->spilled += n;
    b = lw_item_of(lw_slist_first(&a->spill), struct block, qnode);
    if (b && b->cap - b->used >= n)
        return cut(b, n);
    if (!(b = block_new(n > a->main->cap ? n : a->main->cap)))
        return NULL;
    lw_slist_push(&a->spill, &b->qnode);
    return cut(b, n);
}

static void free_spill(struct arena *a)
{
    struct block *b;

    while ((b = lw_item_of(lw_slist_pop(&a->spill), struct block, qnode)))
        free(b);
}

/* The reply that spilled over fits in one block next time, if it may. */
static void grow_main(struct arena *a)
{
    size_t need = a->main->used + a->spilled, cap = a->main->cap;
    struct block *b;

    while (cap < need && cap < ARENA_MAX)
        cap *= 2;
    if (cap > a->main->cap && (b = block_new(cap))) {
        free(a->main);
        a->main = b;
    }
}

void replies_done(redisReader *r)
{
    struct arena *a = r->privdata;

    if (a->spilled) {
        free_spill(a);
        grow_main(a);
        a->spilled = 0;
    }
    a->main->used = 0;
}

/* --- the reader's calls ----------------------------------------------------- */

static redisReply *new_reply(const redisReadTask *task, int type)
{
    redisReply *r = arena_alloc(task->privdata, sizeof *r);

    if (r) {
        memset(r, 0, sizeof *r);
        r->type = type;
    }
    return r;
}

/* r into its place in the array being read, if any. */
static void *placed(const redisReadTask *task, redisReply *r)
{
    if (r && task->parent) {
        redisReply *parent = task->parent->obj;

        parent->element[task->idx] = r;
    }
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    redisReply *r = new_reply(task, task->type);
    char *buf = r ? arena_alloc(task->privdata, len + 1) : NULL;

    if (!buf)
        return NULL;
    memcpy(buf, str, len);
    buf[len] = '\0';
    r->str = buf;
    r->len = len;
    return placed(task, r);
}

static void *create_array(const redisReadTask *task, int elements)
{
    redisReply *r = new_reply(task, REDIS_REPLY_ARRAY);
    size_t bytes = (size_t)(elements > 0 ? elements : 0) * sizeof *r->element;

    if (!r)
        return NULL;
    if (bytes) {
        if (!(r->element = arena_alloc(task->privdata, bytes)))
            return NULL;
        memset(r->element, 0, bytes);
    }
    r->elements = (size_t)(elements > 0 ? elements : 0);
    return placed(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
    redisReply *r = new_reply(task, REDIS_REPLY_INTEGER);

    if (r)
        r->integer = value;
    return placed(task, r);
}

static void *create_nil(const redisReadTask *task)
{
    return placed(task, new_reply(task, REDIS_REPLY_NIL));
}

/* A reply given up on (the reader failed, or is freed mid-reply): its
 * memory goes with the arena. */
static void free_object(void *reply)
{
    (void)reply;
}

/* Never written: not const only because hiredis's reader takes it so. */
static redisReplyObjectFunctions arena_functions = {
    create_string,
    create_array,
    create_integer,
    create_nil,
    free_object,
};

redisReader *replies_reader_new(void)
{
    struct arena *a = calloc(1, sizeof *a);
    redisReader *r = NULL;

    if (a && (a->main = block_new(ARENA_FIRST)) &&
        (r = redisReaderCreateWithFunctions(&arena_functions))) {
        r->privdata = a;
        return r;
    }
    if (a)
        free(a->main);
    free(a);
    return NULL;
}

void replies_reader_free(redisReader *r)
{
    struct arena *a;

    if (!r)
        return;
    a = r->privdata;
    redisReaderFree(r); /* a reply it holds is the arena's (free_object()) */
    free_spill(a);
    free(a->main);
    free(a);
}
