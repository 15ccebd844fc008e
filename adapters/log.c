/*
 * adapters/log.c - the log hook, rate-limited by kind (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include <leasewheel/wheel.h>

#include "log.h"

#define SECOND_NS 1000000000ull

/* Whether kind may say a line now; counts it when not. */
static int has_room(struct log_window *w, uint64_t now_ns)
{
    if (now_ns - w->start_ns >= SECOND_NS) {
        w->start_ns = now_ns;
        w->said = 0;
    }
    if (w->said < LOG_BURST) {
        w->said++;
        return 1;
    }
    w->unsaid++;
    return 0;
}

void log_say(struct logger *lg, int kind, int level, const char *fmt, ...)
{
    struct log_window *w;
    char line[512];
    va_list ap;
    int n;

    if (!log_enabled(lg, level) || kind < 0 || kind >= LOG_KIND_COUNT)
        return;
    w = &lg->window[kind];
    if (!has_room(w, lw_clock_now()))
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n >= 0 && w->unsaid && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " (and %llu more like it, not logged)",
                 (unsigned long long)w->unsaid);
    w->unsaid = 0;
    lg->fn(level, line, lg->arg);
}
