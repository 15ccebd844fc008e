/*
 * The reply reader whose replies come from an arena (adapters/replies.c):
 * replies read as hiredis's own reader reads them, an arena reused reply
 * after reply, replies bigger than its block, replies fed a byte at a
 * time, and a reader freed in the middle of one (ASan: nothing leaks).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "replies.h"

static redisReply *take(redisReader *r)
{
    void *reply = NULL;

    cr_assert_eq(redisReaderGetReply(r, &reply), REDIS_OK);
    return reply;
}

static void feed(redisReader *r, const char *s)
{
    cr_assert_eq(redisReaderFeed(r, s, strlen(s)), REDIS_OK);
}

Test(replies, a_nested_reply_reads_as_hiredis_reads_it)
{
    redisReader *r = replies_reader_new();
    redisReply *reply;

    cr_assert_not_null(r);
    feed(r, "*4\r\n:7\r\n$5\r\nhello\r\n*2\r\n-ERR no\r\n$-1\r\n+OK\r\n");
    reply = take(r);
    cr_assert_not_null(reply);
    cr_assert_eq(reply->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(reply->elements, 4);
    cr_assert_eq(reply->element[0]->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(reply->element[0]->integer, 7);
    cr_assert_eq(reply->element[1]->type, REDIS_REPLY_STRING);
    cr_assert_eq(reply->element[1]->len, 5);
    cr_assert_str_eq(reply->element[1]->str, "hello");
    cr_assert_eq(reply->element[2]->elements, 2);
    cr_assert_eq(reply->element[2]->element[0]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(reply->element[2]->element[0]->str, "ERR no");
    cr_assert_eq(reply->element[2]->element[1]->type, REDIS_REPLY_NIL);
    cr_assert_eq(reply->element[3]->type, REDIS_REPLY_STATUS);
    cr_assert_str_eq(reply->element[3]->str, "OK");
    replies_done(r);
    cr_assert_null(take(r));
    replies_reader_free(r);
}

Test(replies, the_arena_is_reused_reply_after_reply)
{
    redisReader *r = replies_reader_new();
    char text[2048];

    cr_assert_not_null(r);
    for (int round = 0; round < 1000; round++) {
        size_t n = (size_t)snprintf(text, sizeof text, "*100\r\n");
        redisReply *reply;

        for (int i = 0; i < 100; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, ":%d\r\n", (round + i) % 2);
        feed(r, text);
        reply = take(r);
        cr_assert_eq(reply->elements, 100);
        for (int i = 0; i < 100; i++)
            cr_assert_eq(reply->element[i]->integer, (round + i) % 2, "round %d, %d", round, i);
        replies_done(r);
    }
    replies_reader_free(r);
}

Test(replies, replies_bigger_than_the_block_spill_and_the_next_fit)
{
    enum { N = 100000,
           BIG = 1 << 20 };
    redisReader *r = replies_reader_new();
    char *text = malloc((size_t)N * 16 + 32), *big = malloc(BIG + 32);
    size_t n = (size_t)sprintf(text, "*%d\r\n", N);
    redisReply *reply;

    cr_assert(r && text && big);
    for (int i = 0; i < N; i++)
        n += (size_t)sprintf(text + n, ":%d\r\n", i);
    cr_assert_eq(redisReaderFeed(r, text, n), REDIS_OK);
    reply = take(r);
    cr_assert_eq(reply->elements, N);
    for (int i = 0; i < N; i += 997)
        cr_assert_eq(reply->element[i]->integer, i);
    cr_assert_eq(reply->element[N - 1]->integer, N - 1);
    replies_done(r);

    n = (size_t)sprintf(big, "$%d\r\n", BIG);
    memset(big + n, 'x', BIG);
    memcpy(big + n + BIG, "\r\n:5\r\n", 6);
    cr_assert_eq(redisReaderFeed(r, big, n + BIG + 6), REDIS_OK);
    reply = take(r);
    cr_assert_eq(reply->len, BIG);
    cr_assert_eq(reply->str[0], 'x');
    cr_assert_eq(reply->str[BIG - 1], 'x');
    cr_assert_eq(reply->str[BIG], '\0');
    replies_done(r);
    reply = take(r);
    cr_assert_eq(reply->integer, 5);
    replies_done(r);
    free(text);
    free(big);
    replies_reader_free(r);
}

Test(replies, a_reply_fed_a_byte_at_a_time)
{
    const char *text = "*3\r\n:1\r\n$3\r\nabc\r\n*1\r\n:0\r\n";
    redisReader *r = replies_reader_new();
    redisReply *reply = NULL;

    cr_assert_not_null(r);
    for (size_t i = 0; text[i]; i++) {
        cr_assert_null(reply, "a whole reply before its last byte");
        cr_assert_eq(redisReaderFeed(r, text + i, 1), REDIS_OK);
        reply = take(r);
    }
    cr_assert_not_null(reply);
    cr_assert_str_eq(reply->element[1]->str, "abc");
    cr_assert_eq(reply->element[2]->element[0]->integer, 0);
    replies_done(r);
    replies_reader_free(r);
}

Test(replies, a_reader_freed_in_the_middle_of_a_reply)
{
    redisReader *r = replies_reader_new();

    cr_assert_not_null(r);
    feed(r, "*3\r\n:1\r\n$3\r\nab");
    cr_assert_null(take(r));
    replies_reader_free(r);
    replies_reader_free(NULL);
}
