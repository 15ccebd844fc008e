/*
 * core/kinds.c - the table of lease kinds, one line each (kind.h says what
 * a kind is; each kind's own file, kind_*.c, says how it is renewed).
 *
 * A file of its own, above the kinds' files and below the watchdog that
 * reads it, so that calls in core/ go one way: the kinds call down into
 * kind.c's batch building, and kind.c knows none of them.
 */
#include <leasewheel/lock.h>

#include "kind.h"

const struct lease_kind *const lw_kinds[KIND_COUNT] = {
    [KIND_LOCK] = &lw_kind_lock,
    [KIND_READ] = &lw_kind_read,
    [KIND_WRITE] = &lw_kind_write,
    [KIND_PERMIT] = &lw_kind_permit,
    [KIND_FAIR] = &lw_kind_fair,
    [KIND_PLACE] = &lw_kind_place,
    [KIND_TERM] = &lw_kind_term,
};

/* The public kinds (enum lw_lease_kind: the callbacks' struct lw_lease,
 * the counters by kind) are the table's, in its order. */
_Static_assert((int)LW_LEASE_LOCK == (int)KIND_LOCK && (int)LW_LEASE_READ == (int)KIND_READ &&
                   (int)LW_LEASE_WRITE == (int)KIND_WRITE &&
                   (int)LW_LEASE_PERMIT == (int)KIND_PERMIT &&
                   (int)LW_LEASE_FAIR == (int)KIND_FAIR &&
                   (int)LW_LEASE_PLACE == (int)KIND_PLACE &&
                   (int)LW_LEASE_TERM == (int)KIND_TERM &&
                   (int)LW_LEASE_TERM + 1 == (int)KIND_COUNT,
               "enum lw_lease_kind must follow enum lease_kind_id");

/* The public names are the table's nouns, the ones the log says. */
const char *lw_lease_kind_name(int kind)
{
    return kind >= 0 && kind < KIND_COUNT ? lw_kinds[kind]->noun : "unknown";
}
