/*
 * adapters/request.c - formatting commands into requests.
 *
 * Commands are formatted on the submitting thread, so the engine thread
 * only copies bytes into the connection's output buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "request.h"

/* "EVALSHA <40 placeholder bytes>", filled in by the engine at write time. */
static const char sha_placeholder[41] = "0000000000000000000000000000000000000000";

void request_init(struct request *req)
{
    memset(req, 0, sizeof *req);
}

void request_settle(struct request *req)
{
    req->settle = 1;
}

void request_urgent(struct request *req)
{
    req->urgent = 1;
}

void request_wait_until(struct request *req, uint64_t until_ns)
{
    req->wait_until_ns = until_ns;
}

void request_task(struct request *req)
{
    req->task = 1;
}

void request_clear(struct request *req)
{
    if (req) {
        free(req->cmd);
        req->cmd = NULL;
        req->len = 0;
    }
}

uint64_t request_lease_from(const struct request *req)
{
    return req->sent_ns;
}

/* Decimal digits of v. */
static size_t digits(size_t v)
{
    size_t n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* v in decimal at p; returns the end. */
static char *put_decimal(char *p, size_t v)
{
    size_t n = digits(v);

    for (size_t i = n; i-- > 0; v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* "<type><v>\r\n" at p; returns the end. */
static char *put_header(char *p, char type, size_t v)
{
    *p = type;
    p = put_decimal(p + 1, v);
    p[0] = '\r';
    p[1] = '\n';
    return p + 2;
}

static size_t arg_len(const char **argv, const size_t *lens, int i)
{
    return lens ? lens[i] : strlen(argv[i]);
}

/*
 * The RESP array of the nhead arguments in head, then the argc in argv
 * (lengths NULL: strlen), formatted into req.  Our own formatter, not
 * redisFormatCommandArgv(): hiredis sprintf()s every "$<len>" header, and
 * that was a sixth of the engine thread's time renewing 100-key batches.
 * The buffer is malloc'ed, as hiredis's is, so either is freed with free().
 */
static int set_command(struct request *req, int nhead, const char **head,
                       const size_t *head_lens, int argc, const char **argv,
                       const size_t *argvlen)
{
    size_t total = 1 + digits((size_t)(nhead + argc)) + 2, len;
    char *cmd, *p;
    int i;

    for (i = 0; i < nhead; i++)
        total += 1 + digits(head_lens[i]) + 2 + head_lens[i] + 2;
    for (i = 0; i < argc; i++) {
        if (!argv[i])
            return LW_EINVAL;
        len = arg_len(argv, argvlen, i);
        total += 1 + digits(len) + 2 + len + 2;
    }
    if (!(cmd = malloc(total + 1)))
        return LW_ENOMEM;
    p = put_header(cmd, '*', (size_t)(nhead + argc));
    for (i = 0; i < nhead + argc; i++) {
        const char *arg = i < nhead ? head[i] : argv[i - nhead];

        len = i < nhead ? head_lens[i] : arg_len(argv, argvlen, i - nhead);
        p = put_header(p, '$', len);
        memcpy(p, arg, len);
        p[len] = '\r';
        p[len + 1] = '\n';
        p += len + 2;
    }
    *p = 0;
    request_clear(req);
    req->cmd = cmd;
    req->len = total;
    return 0;
}

/* Commands hiredis answers outside the reply queue, or more than once. */
static int is_push_command(const char *name, size_t len)
{
    static const char *const names[] = {"subscribe", "psubscribe", "ssubscribe",
                                        "unsubscribe", "punsubscribe", "sunsubscribe",
                                        "monitor"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == strlen(names[i]) && !strncasecmp(name, names[i], len))
            return 1;
    return 0;
}

int request_command(struct request *req, int argc, const char **argv,
                    const size_t *argvlen)
{
    int rc;

    if (!req || argc < 1 || !argv || !argv[0])
        return LW_EINVAL;
    if (is_push_command(argv[0], argvlen ? argvlen[0] : strlen(argv[0])))
        return LW_EINVAL;
    rc = set_command(req, 0, NULL, NULL, argc, argv, argvlen);
    if (rc == 0)
        req->script = req->task = 0;
    return rc;
}

int request_evalsha(struct request *req, int script, int nkeys, int argc,
                    const char **argv, const size_t *argvlen)
{
    char numkeys[16];
    const char *head[3] = {"EVALSHA", sha_placeholder, numkeys};
    size_t head_lens[3] = {7, 40, 0};
    int rc;

    if (!req || script < 0 || nkeys < 0 || argc < 0 || (argc && !argv))
        return LW_EINVAL;
    if (nkeys > argc)
        return LW_ERANGE;
    head_lens[2] = (size_t)(put_decimal(numkeys, (size_t)nkeys) - numkeys);
    rc = set_command(req, 3, head, head_lens, argc, argv, argvlen);
    if (rc == 0) {
        req->task = 0;
        req->script = (uint32_t)script + 1;
        /* The SHA is the second argument: after "*N\r\n$7\r\nEVALSHA\r\n$40\r\n". */
        req->sha_at = (uint32_t)(1 + digits((size_t)argc + 3) + 2 + 4 + 9 + 5);
    }
    return rc;
}
