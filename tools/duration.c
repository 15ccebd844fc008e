/*
 * tools/duration.c - durations with units (duration.h).
 *
 * A duration is one or more "<digits>[.<digits>]<unit>" terms with the
 * units strictly decreasing (so "1h30m" but not "30m1h" nor "1m1m"), or
 * bare digits alone.  A fraction must come to whole milliseconds ("1.5s",
 * "0.25s", not "1.0005s"): nothing is rounded.  Every step is checked
 * against overflow: the value is compared with max_ms before it can wrap.
 */
#include <stdio.h>
#include <string.h>

#include "duration.h"

static const struct {
    const char *name;
    uint64_t ms;
} units[] = {
    /* Longest name first where one is the other's prefix ("ms" before
     * "m"). */
    {"d", 86400000},
    {"h", 3600000},
    {"ms", 1},
    {"m", 60000},
    {"s", 1000},
};
#define NUNITS (sizeof units / sizeof units[0])

/* Digits at *s into *v (at most max), advancing *s; -1 when there are
 * none or they exceed max. */
static int digits(const char **s, uint64_t max, uint64_t *v)
{
    const char *p = *s;

    *v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (*v > (max - (uint64_t)(*p - '0')) / 10)
            return -1;
        *v = *v * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    return 0;
}

/* The unit at *s (its index), advancing *s past it; -1 when none. */
static int unit(const char **s)
{
    for (size_t i = 0; i < NUNITS; i++) {
        size_t n = strlen(units[i].name);

        if (strncmp(*s, units[i].name, n) == 0) {
            *s += n;
            return (int)i;
        }
    }
    return -1;
}

/* A fraction's digits at *s (after the '.') times unit_ms, exact in ms,
 * into *ms, advancing *s; -1 when there are none, too many, or the
 * product is not a whole number of milliseconds. */
static int fraction(const char **s, uint64_t unit_ms, uint64_t *ms)
{
    const char *p = *s;
    uint64_t num = 0, den = 1;

    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (den >= 1000000000000ull) /* more digits than any unit needs */
            return -1;
        num = num * 10 + (uint64_t)(*p - '0');
        den *= 10;
    }
    if (num * unit_ms % den) /* num < den <= 1e12, unit_ms <= 86400000: no wrap */
        return -1;
    *ms = num * unit_ms / den;
    *s = p;
    return 0;
}

/* Unit i's order, largest first: d h m s ms. */
static int rank(int i)
{
    static const int order[NUNITS] = {0, 1, 4, 2, 3};

    return order[i];
}

int duration_parse(const char *s, uint64_t bare_ms, uint64_t min_ms, uint64_t max_ms,
                   uint64_t *ms)
{
    uint64_t total = 0, v;
    int last = -1, u;

    if (!s || digits(&s, UINT64_MAX, &v))
        return -1;
    if (!*s) { /* bare digits */
        if (bare_ms == 0 || v > max_ms / bare_ms || v * bare_ms < min_ms)
            return -1;
        *ms = v * bare_ms;
        return 0;
    }
    for (;;) {
        const char *dot = *s == '.' ? s + 1 : NULL;
        uint64_t part = 0;

        if (dot) /* the unit follows the fraction's digits */
            for (s = dot; *s >= '0' && *s <= '9'; s++)
                ;
        if ((u = unit(&s)) < 0 || rank(u) <= last)
            return -1;
        if (dot && fraction(&dot, units[u].ms, &part))
            return -1;
        last = rank(u);
        if (v > (max_ms - total) / units[u].ms || part > max_ms - total - v * units[u].ms)
            return -1;
        total += v * units[u].ms + part;
        if (!*s)
            break;
        if (digits(&s, UINT64_MAX, &v))
            return -1;
    }
    if (total < min_ms)
        return -1;
    *ms = total;
    return 0;
}

const char *duration_format(uint64_t ms, char *buf, size_t n)
{
    static const int by_size[NUNITS] = {0, 1, 3, 4, 2}; /* d h m s ms */
    size_t used = 0;

    if (n == 0)
        return buf;
    buf[0] = 0;
    if (ms == 0) {
        snprintf(buf, n, "0ms");
        return buf;
    }
    for (size_t k = 0; k < NUNITS && used < n; k++) {
        uint64_t size = units[by_size[k]].ms, v = ms / size;
        int w;

        if (!v)
            continue;
        ms -= v * size;
        w = snprintf(buf + used, n - used, "%llu%s", (unsigned long long)v,
                     units[by_size[k]].name);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

const char *duration_range(uint64_t min_ms, uint64_t max_ms, char *buf, size_t n)
{
    char lo[40], hi[40];

    snprintf(buf, n, "%s to %s", duration_format(min_ms, lo, sizeof lo),
             duration_format(max_ms, hi, sizeof hi));
    return buf;
}
