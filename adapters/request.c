/*
 * adapters/request.c - formatting commands into requests.
 *
 * Commands are formatted on the submitting thread, so the engine thread
 * only copies bytes into the connection's output buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"

/* "EVALSHA <40 placeholder bytes>", filled in by the engine at write time. */
static const char sha_placeholder[41] = "0000000000000000000000000000000000000000";

void lw_request_init(struct lw_request *req)
{
    memset(req, 0, sizeof *req);
}

void lw_request_task(struct lw_request *req)
{
    req->task = 1;
}

void lw_request_clear(struct lw_request *req)
{
    if (req) {
        redisFreeCommand(req->cmd);
        req->cmd = NULL;
        req->len = 0;
    }
}

static int set_command(struct lw_request *req, int argc, const char **argv,
                       const size_t *argvlen)
{
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);

    if (len < 0)
        return LW_ENOMEM;
    lw_request_clear(req);
    req->cmd = cmd;
    req->len = (size_t)len;
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

int lw_request_command(struct lw_request *req, int argc, const char **argv,
                       const size_t *argvlen)
{
    int rc;

    if (!req || argc < 1 || !argv || !argv[0])
        return LW_EINVAL;
    if (is_push_command(argv[0], argvlen ? argvlen[0] : strlen(argv[0])))
        return LW_EINVAL;
    rc = set_command(req, argc, argv, argvlen);
    if (rc == 0)
        req->script = req->task = 0;
    return rc;
}

int lw_request_evalsha(struct lw_request *req, int script, int nkeys, int argc,
                       const char **argv, const size_t *argvlen)
{
    const char **all;
    size_t *lens;
    char numkeys[16], head[32];
    int rc;

    if (!req || script < 0 || nkeys < 0 || argc < 0 || (argc && !argv))
        return LW_EINVAL;
    if (nkeys > argc)
        return LW_ERANGE;
    all = malloc((size_t)(argc + 3) * (sizeof *all + sizeof *lens));
    if (!all)
        return LW_ENOMEM;
    lens = (size_t *)(all + argc + 3);
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    all[0] = "EVALSHA";
    all[1] = sha_placeholder;
    all[2] = numkeys;
    lens[0] = 7;
    lens[1] = 40;
    lens[2] = strlen(numkeys);
    for (int i = 0; i < argc; i++) {
        all[i + 3] = argv[i];
        lens[i + 3] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    rc = set_command(req, argc + 3, all, lens);
    free(all);
    if (rc == 0) {
        req->task = 0;
        req->script = (uint32_t)script + 1;
        /* The SHA is the second argument: after "*N\r\n$7\r\nEVALSHA\r\n$40\r\n". */
        req->sha_at = (uint32_t)snprintf(head, sizeof head, "*%d\r\n$7\r\nEVALSHA\r\n$40\r\n",
                                         argc + 3);
    }
    return rc;
}
