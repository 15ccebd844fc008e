/*
 * bench/tool_util.c - see tool_util.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include "tool_util.h"

int tool_usage_error(const char *tool, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", tool);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see %s --help\n", tool);
    return 64;
}

int tool_bad_option(const char *tool, int opt, char **argv)
{
    char what[300];

    /* getopt_long() with opterr 0 (and ':' first in the short options):
     * ':' a value missing, '?' an option it does not know; optopt is the
     * short option's letter, or 0 for a long option, which optind has
     * passed. */
    if (opt == ':')
        snprintf(what, sizeof what, "option '%s' needs a value", argv[optind - 1]);
    else if (optopt > 0 && optopt < 256)
        snprintf(what, sizeof what, "unknown option '-%c'", optopt);
    else
        snprintf(what, sizeof what, "unknown option '%s'", argv[optind - 1]);
    return tool_usage_error(tool, "%s", what);
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
