/*
 * bench/tool_util.c - see tool_util.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "tool_util.h"

int tool_usage_error(const char *tool, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", tool);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(%s --help for the options)\n", tool);
    return 64;
}

FILE *tool_json_open(const char *tool, const char *path)
{
    FILE *f = fopen(path, "we"); /* not inherited by a private redis-server */

    if (!f)
        fprintf(stderr, "%s: %s: %s\n", tool, path, strerror(errno));
    return f;
}

int tool_json_close(const char *tool, const char *path, FILE *f)
{
    if (fclose(f)) {
        fprintf(stderr, "%s: %s: %s\n", tool, path, strerror(errno));
        return -1;
    }
    return 0;
}

void tool_checks_init(struct tool_checks *c, char *buf, size_t n)
{
    c->buf = buf;
    c->n = n;
    c->k = 0;
    buf[0] = 0;
}

void tool_checks_add(struct tool_checks *c, const char *fmt, ...)
{
    va_list ap;

    if (c->k >= c->n)
        return;
    va_start(ap, fmt);
    c->k += (size_t)vsnprintf(c->buf + c->k, c->n - c->k, fmt, ap);
    va_end(ap);
    if (c->k < c->n)
        c->k += (size_t)snprintf(c->buf + c->k, c->n - c->k, "; ");
}

const char *tool_checks_end(struct tool_checks *c)
{
    if (c->k == 0)
        snprintf(c->buf, c->n, "ok");
    else if (c->k >= 2 && c->k < c->n)
        c->buf[c->k - 2] = 0;
    return c->buf;
}
