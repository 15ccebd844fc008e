/*
 * tests/fuzz/fuzz_request.c - the RESP formatter (adapters/request.c).
 *
 * Input: three header bytes, then the arguments.
 *   byte 0: bit 0 EVALSHA (request_evalsha) or a plain command
 *           (request_command); bit 1 lengths NULL (strlen() of each
 *           argument, so it ends at its first NUL) or given (binary-safe);
 *           bits 2-7 nkeys, for EVALSHA
 *   byte 1: the script index, for EVALSHA
 *   byte 2: the separator byte
 *   rest:   the arguments, cut at every separator (none at all: argc 0).
 * Choosing the separator lets an argument hold any byte, NUL, CR and LF
 * included, and be empty.
 *
 * Oracle: hiredis's own reply parser reads the command back as exactly one
 * array of exactly the arguments (EVALSHA: "EVALSHA", the 40-byte SHA
 * placeholder at sha_at, nkeys in decimal, then the arguments), with no
 * byte left over; what request_command refuses (argc 0, the pub/sub
 * commands and MONITOR) and nkeys > argc are refused with the documented
 * codes; and calls with NULL or negative arguments are refused with
 * LW_EINVAL, never a crash, and so is a NULL among the arguments.
 */
#include <limits.h>
#include <string.h>
#include <strings.h>

#include <hiredis/read.h>

#include "engine.h"
#include "fuzz_util.h"

/* The arguments as the caller passes them. */
struct args {
    int argc;
    const char **argv;
    const size_t *lens;   /* NULL: strlen mode */
    size_t *expect_len;   /* what each should read back as */
};

static int is_push(const char *name, size_t len)
{
    static const char *const push[] = {"subscribe", "psubscribe", "ssubscribe", "unsubscribe",
                                       "punsubscribe", "sunsubscribe", "monitor"};

    for (size_t i = 0; i < sizeof push / sizeof push[0]; i++)
        if (len == strlen(push[i]) && strncasecmp(name, push[i], len) == 0)
            return 1;
    return 0;
}

/* One bulk string of the reply is exactly len bytes at s. */
static void check_bulk(const redisReply *e, const char *s, size_t len, size_t i)
{
    FUZZ_CHECK(e->type == REDIS_REPLY_STRING, "element %zu: type %d", i, e->type);
    FUZZ_CHECK(e->len == len, "element %zu: %zu bytes, not %zu", i, e->len, len);
    FUZZ_CHECK(len == 0 || memcmp(e->str, s, len) == 0, "element %zu: other bytes", i);
}

/* req holds exactly one RESP array: nhead head strings, then the args. */
static void check_resp(const struct request *req, int nhead, const char *const *head,
                       const size_t *head_len, const struct args *a)
{
    redisReader *r = redisReaderCreate();
    redisReply *reply = NULL;
    void *more = NULL;
    size_t n = (size_t)(nhead + a->argc);

    FUZZ_CHECK(r, "out of memory");
    FUZZ_CHECK(req->cmd && req->len > 0, "no command");
    FUZZ_CHECK(redisReaderFeed(r, req->cmd, req->len) == REDIS_OK, "feed failed");
    FUZZ_CHECK(redisReaderGetReply(r, (void **)&reply) == REDIS_OK, "not RESP: %s", r->errstr);
    FUZZ_CHECK(reply, "an incomplete command (%zu bytes)", req->len);
    FUZZ_CHECK(redisReaderGetReply(r, &more) == REDIS_OK && !more && r->pos == r->len,
               "bytes after the command");
    FUZZ_CHECK(reply->type == REDIS_REPLY_ARRAY, "type %d, not an array", reply->type);
    FUZZ_CHECK(reply->elements == n, "%zu elements, not %zu", reply->elements, n);
    for (size_t i = 0; i < n; i++) {
        size_t k = i - (size_t)nhead;

        if (i < (size_t)nhead)
            check_bulk(reply->element[i], head[i], head_len[i], i);
        else
            check_bulk(reply->element[i], a->argv[k], a->expect_len[k], i);
    }
    freeReplyObject(reply);
    redisReaderFree(r);
}

/* NULL and negative arguments: LW_EINVAL, whatever else is passed. */
static void check_refusals(struct request *req, const struct args *a, int script, int nkeys)
{
    const char *null_first[] = {NULL, "x"};
    int argc = a->argc > 0 ? a->argc : 1;
    const char **argv = a->argc > 0 ? a->argv : null_first + 1;
    const size_t *lens = a->argc > 0 ? a->lens : NULL;

    FUZZ_CHECK(request_command(NULL, argc, argv, lens) == LW_EINVAL, "NULL request");
    FUZZ_CHECK(request_command(req, 0, argv, lens) == LW_EINVAL, "argc 0");
    FUZZ_CHECK(request_command(req, -1, argv, lens) == LW_EINVAL, "argc -1");
    FUZZ_CHECK(request_command(req, INT_MIN, argv, lens) == LW_EINVAL, "argc INT_MIN");
    FUZZ_CHECK(request_command(req, argc, NULL, lens) == LW_EINVAL, "argv NULL");
    FUZZ_CHECK(request_command(req, 1, null_first, NULL) == LW_EINVAL, "argv[0] NULL");
    if (a->argc > 0) { /* the last argument NULL: refused, nothing read */
        const char **last_null = malloc((size_t)argc * sizeof *last_null);

        if (last_null) {
            memcpy(last_null, argv, (size_t)argc * sizeof *last_null);
            last_null[argc - 1] = NULL;
            FUZZ_CHECK(request_command(req, argc, last_null, lens) == LW_EINVAL,
                       "argv[%d] NULL", argc - 1);
            FUZZ_CHECK(request_evalsha(req, script, 0, argc, last_null, lens) == LW_EINVAL,
                       "EVALSHA argv[%d] NULL", argc - 1);
            free(last_null);
        }
    }
    FUZZ_CHECK(request_evalsha(NULL, script, 0, argc, argv, lens) == LW_EINVAL, "NULL req");
    FUZZ_CHECK(request_evalsha(req, -1, 0, argc, argv, lens) == LW_EINVAL, "script -1");
    FUZZ_CHECK(request_evalsha(req, INT_MIN, 0, argc, argv, lens) == LW_EINVAL, "INT_MIN");
    FUZZ_CHECK(request_evalsha(req, script, -1, argc, argv, lens) == LW_EINVAL, "nkeys -1");
    FUZZ_CHECK(request_evalsha(req, script, nkeys, -1, argv, lens) == LW_EINVAL, "argc -1");
    FUZZ_CHECK(request_evalsha(req, script, 0, argc, NULL, NULL) == LW_EINVAL, "argv NULL");
}

static void fuzz_command(struct request *req, const struct args *a)
{
    int rc = request_command(req, a->argc, a->argv, a->lens);

    if (a->argc < 1 || is_push(a->argv[0], a->expect_len[0])) {
        FUZZ_CHECK(rc == LW_EINVAL, "accepted: %s", lw_errname(rc));
        return;
    }
    FUZZ_CHECK(rc == 0, "refused: %s", lw_errname(rc));
    FUZZ_CHECK(req->script == 0 && req->task == 0, "not a plain command");
    check_resp(req, 0, NULL, NULL, a);
}

static void fuzz_evalsha(struct request *req, const struct args *a, int script, int nkeys)
{
    static const char placeholder[] = "0000000000000000000000000000000000000000";
    char numkeys[16];
    const char *head[3] = {"EVALSHA", placeholder, numkeys};
    size_t head_len[3] = {7, 40, 0};
    int rc = request_evalsha(req, script, nkeys, a->argc, a->argv, a->lens);

    if (nkeys > a->argc) {
        FUZZ_CHECK(rc == LW_ERANGE, "nkeys %d > argc %d: %s", nkeys, a->argc, lw_errname(rc));
        return;
    }
    FUZZ_CHECK(rc == 0, "refused: %s", lw_errname(rc));
    FUZZ_CHECK(req->script == (uint32_t)script + 1 && req->task == 0, "not script %d", script);
    /* The engine overwrites these 40 bytes with the script's SHA. */
    FUZZ_CHECK(req->sha_at >= 5 && req->sha_at + 42 <= req->len &&
                   memcmp(req->cmd + req->sha_at - 5, "$40\r\n", 5) == 0 &&
                   memcmp(req->cmd + req->sha_at, placeholder, 40) == 0 &&
                   memcmp(req->cmd + req->sha_at + 40, "\r\n", 2) == 0,
               "sha_at %u is not the placeholder's place", req->sha_at);
    head_len[2] = (size_t)snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    check_resp(req, 3, head, head_len, a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ping[] = {"PING"};
    struct fuzz_pieces f = {0, NULL, NULL};
    struct request req;
    struct args a = {0, NULL, NULL, NULL};
    int evalsha, script, nkeys;

    if (size < 3)
        return 0;
    evalsha = data[0] & 1;
    nkeys = data[0] >> 2;
    script = data[1];
    if (size > 3) {
        fuzz_split(data + 3, size - 3, data[2], &f);
        a.argc = f.n;
        a.argv = (const char **)f.p;
        a.lens = data[0] & 2 ? NULL : f.len;
        a.expect_len = f.len;
        if (!a.lens)
            for (int i = 0; i < f.n; i++)
                f.len[i] = strlen(f.p[i]);
    }
    /* A request that already holds a command and is a task: formatting
     * must replace the first (ASan: no leak) and make it a command. */
    request_init(&req);
    FUZZ_CHECK(request_command(&req, 1, ping, NULL) == 0, "PING refused");
    request_task(&req);
    check_refusals(&req, &a, script, nkeys);
    if (evalsha)
        fuzz_evalsha(&req, &a, script, nkeys);
    else
        fuzz_command(&req, &a);
    request_clear(&req);
    FUZZ_CHECK(!req.cmd && req.len == 0, "not cleared");
    request_clear(NULL);
    if (f.p)
        fuzz_pieces_free(&f);
    return 0;
}
