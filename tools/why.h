/*
 * tools/why.h - the reason a parse failed, for the tools' messages.
 */
#ifndef LW_TOOLS_WHY_H
#define LW_TOOLS_WHY_H

#include <stddef.h>

/* Write the message (printf's fmt) into why[0..n) when n > 0; returns -1,
 * so that a parser can `return why_fail(why, n, ...)`. */
int why_fail(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
