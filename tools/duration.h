/*
 * tools/duration.h - how long, as both tools' options take it.
 *
 *   250ms  30s  5m  1h  1d     a number and a unit
 *   1.5s  0.25s  2.5m          a fraction that comes to whole milliseconds
 *   1h30m  1m30s               units in decreasing order, summed
 *   1500                       a bare number: in the option's own unit
 *                              (milliseconds for every lwlock option and
 *                              lwbench's --lease-ms and --tick-ms; seconds
 *                              for lwbench's --duration-s, as its name says)
 *
 * A fraction is taken only when it is exact in milliseconds ("1.5s" is
 * 1500ms; "1.0005s" is refused): nothing is left to rounding.  A bare
 * number has no fraction.  Units are lower case, as systemd's and Go's, so that "m" cannot be read
 * as months.  Pure parsing: no output; the caller's message names the
 * option, and duration_range() says its range.
 */
#ifndef LW_TOOLS_DURATION_H
#define LW_TOOLS_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* What a message about a bad duration adds after the range. */
#define DURATION_FORMS "250ms, 1.5s, 30s, 5m, 1h, 1d or 1h30m"

/*
 * duration_parse - s as a duration in ms, a bare number counting bare_ms
 * each (1: milliseconds, 1000: seconds), within [min_ms, max_ms]: 0 with
 * *ms set, or -1 (not a duration, or out of range; *ms untouched).
 */
int duration_parse(const char *s, uint64_t bare_ms, uint64_t min_ms, uint64_t max_ms,
                   uint64_t *ms);

/* duration_format - ms in the largest units that say it exactly: "30s",
 * "5m", "1h30m", "24d20h31m23s647ms", "0ms".  duration_parse() reads it
 * back.  Returns buf. */
const char *duration_format(uint64_t ms, char *buf, size_t n);

/* duration_range - "MIN to MAX" as duration_format() writes them, for the
 * messages.  Returns buf. */
const char *duration_range(uint64_t min_ms, uint64_t max_ms, char *buf, size_t n);

#endif
