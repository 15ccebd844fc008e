/*
 * tools/why.c - the reason a parse failed (why.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "why.h"

int why_fail(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (n) {
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}
