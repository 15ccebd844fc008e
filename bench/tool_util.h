/*
 * bench/tool_util.h - what the measuring tools lwbench, lwhot and lwtls
 * say the same way, beyond tests/support/cli_util.h: a usage error (64) in
 * one line, a bad option in the same form, the --json file opened and
 * closed with its errors said, and the line of failed checks ("3 locks
 * lost; interrupted", or "ok").
 *
 * Each takes the tool's name, which starts every message ("lwhot: ...").
 */
#ifndef LW_BENCH_TOOL_UTIL_H
#define LW_BENCH_TOOL_UTIL_H

#include <stddef.h>
#include <stdio.h>

/* "TOOL: <fmt with arg>; see TOOL --help" on stderr, one line; returns
 * 64, the status of bad usage. */
int tool_usage_error(const char *tool, const char *fmt, const char *arg);

/* What getopt_long() returned for a bad option (':' or '?', run with
 * opterr = 0 and ':' first in its short options), said in one line as
 * tool_usage_error() says it: "unknown option '--csv'", "option '--locks'
 * needs a value".  Returns 64. */
int tool_bad_option(const char *tool, int opt, char **argv);

/* path opened for writing, or NULL ("TOOL: path: why" said). */
FILE *tool_json_open(const char *tool, const char *path);

/* f closed: 0, or -1 when what was written did not all reach path (said). */
int tool_json_close(const char *tool, const char *path, FILE *f);

/* The checks that failed, each added as "what; ", into buf[n]: the line
 * without its last "; ", or "ok" when none was added.  A line longer than
 * n - 1 is cut there. */
struct tool_checks {
    char *buf;
    size_t n, k;
};

void tool_checks_init(struct tool_checks *c, char *buf, size_t n);
void tool_checks_add(struct tool_checks *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *tool_checks_end(struct tool_checks *c);

#endif
