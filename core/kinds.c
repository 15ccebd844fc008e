/*
 * core/kinds.c - the table of lease kinds, one line each (kind.h says what
 * a kind is; each kind's own file, kind_*.c, says how it is renewed).
 *
 * A file of its own, above the kinds' files and below the watchdog that
 * reads it, so that calls in core/ go one way: the kinds call down into
 * kind.c's batch building, and kind.c knows none of them.
 */
#include "kind.h"

const struct lease_kind *const lw_kinds[KIND_COUNT] = {
    [KIND_LOCK] = &lw_kind_lock,
    [KIND_READ] = &lw_kind_read,
    [KIND_WRITE] = &lw_kind_write,
    [KIND_PERMIT] = &lw_kind_permit,
};
