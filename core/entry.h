/*
 * core/entry.h - a watchdog entry: one per (name, owner, kind) held with
 * lease 0.  The watchdog (watchdog.c) keeps it on the wheel and in its
 * queues; a kind's file (kind_*.c) reads its name, owner, holds and slot
 * to put it in a batch.
 */
#ifndef LW_CORE_ENTRY_H
#define LW_CORE_ENTRY_H

#include <stdint.h>

#include <uthash.h>

#include "client_base.h"
#include "queue.h"

enum entry_state {
    ENTRY_SCHEDULED, /* timer: the next renewal */
    ENTRY_RETRY,     /* timer: the retry after a failed renewal */
    ENTRY_QUEUED,    /* due, waiting for a batch slot; timer: give up */
    ENTRY_SENT,      /* in a batch on the wire; timer: give up */
};

/* A set the entry's lease belongs to (watchdog.h, struct lease_set). */
struct set_ref {
    struct lease_set *set;
    struct lw_qnode qnode; /* in its entry's sets */
};

struct entry {
    struct core_timer ct;
    UT_hash_handle hh;          /* in client->wd.entries when the chain's head */
    struct lw_qnode owner_node; /* the chain of its name's entries, another
                                   owner's each, from the one in the map */
    struct lw_qnode renew_node; /* the renew queue */
    struct lw_qnode drop_node;  /* the drop queue */
    struct lw_slist sets;       /* struct set_ref: the sets it is part of
                                   (multi-locks); one pointer */
    uint64_t owner;
    uint64_t valid_until_ns; /* the lease surely lasts until then */
    uint64_t due_ns;         /* when the next renewal falls due */
    uint64_t held_since_ns;  /* the first acquire was sent then */
    uint64_t cap_at_ns;      /* given up then (max hold); UINT64_MAX: never */
    uint32_t holds;          /* the hold count in Redis, as we know it */
    uint8_t state;           /* enum entry_state */
    uint8_t failures;        /* renewal failures in a row */
    uint8_t dead;            /* out of the map; freed when unreferenced */
    uint8_t unlocking;       /* last-hold unlocks on the wire: no renewals */
    uint8_t dropping;        /* in the drop queue or a drop call */
    uint8_t failover_check;  /* cluster: its slot failed over; the next
                                reply says whether the new master has it */
    uint8_t recheck_after;   /* a renewal was on the wire at the failover:
                                its answer came from the old master */
    uint8_t at_risk;         /* on_risk said so; no renewal confirmed since */
    uint8_t kind;            /* enum lease_kind_id: what renews it */
    uint16_t slot;           /* cluster slot of the name */
    uint32_t len;
    char name[];
};

#endif
