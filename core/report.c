/*
 * core/report.c - telling the holder and the operator that a watchdog
 * lease is at risk, safe again, or lost: one log line, then the
 * callbacks.
 *
 * Every kind of lease (kind.h) is reported the same way, at the same
 * moments; only the words differ.  The log line names the kind by its
 * noun ("lock", "read lock", "write lock", "permit") and the holder: an
 * owner id, or a permit's id in hex as the user saw it (lwlock's
 * LWLOCK_PERMIT, lw_permit_hex()), since a permit's owner is only a tag
 * made of its first 8 bytes.  The callbacks are of two generations:
 * on_lost and on_risk (0.1, 0.3) say a name and an owner, which cannot
 * tell a read hold from a write hold of one owner, nor one permit from
 * another with the same tag; on_lease_lost and on_lease_risk (0.4) get a
 * struct lw_lease, which says the kind and a permit's whole id, and can
 * grow.  Each set callback is called, old first: a program sets the ones
 * it wants (docs/design.md, "Telling the holder and the operator", says
 * why both rather than one instead of the other).  A fair lock's waiter's
 * place is a lease but no hold: only the lease callbacks hear of it.
 *
 * Engine thread.  The callbacks run with in_callback raised, so that
 * lw_client_free() called from one (on the caller's loop) fails with
 * LW_EDEADLK instead of freeing what the call returns into.
 */
#include <stdio.h>
#include <string.h>

#include "client_base.h"
#include "entry.h"
#include "report.h"

/* At most this much of a name goes into a log line. */
#define NAME_SHOWN 200

/* e's holder for the log: "owner N", or a permit's "permit id <hex>". */
static const char *holder_text(const struct entry *e, char *buf, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *id = (const uint8_t *)e->name + e->len + 1;
    char h[2 * LW_PERMIT_ID_LEN + 1];

    if (e->kind != KIND_PERMIT) {
        snprintf(buf, len, "owner %llu", (unsigned long long)e->owner);
        return buf;
    }
    for (unsigned i = 0; i < LW_PERMIT_ID_LEN; i++) {
        h[2 * i] = hex[id[i] >> 4];
        h[2 * i + 1] = hex[id[i] & 15];
    }
    h[2 * LW_PERMIT_ID_LEN] = 0;
    snprintf(buf, len, "id %s", h);
    return buf;
}

/* e as the lease callbacks see it; permit: room for a permit's id. */
static void lease_of(const struct entry *e, struct lw_lease *lease, struct lw_permit *permit)
{
    memset(lease, 0, sizeof *lease);
    lease->size = sizeof *lease;
    lease->kind = e->kind;
    lease->name = e->name;
    lease->len = e->len;
    lease->owner = e->owner;
    if (e->kind == KIND_PERMIT) {
        memcpy(permit->id, e->name + e->len + 1, LW_PERMIT_ID_LEN);
        lease->permit = permit;
    }
}

static struct logger *logger(const struct lw_client *c)
{
    return c->engine ? engine_logger(c->engine) : NULL;
}

static void log_risk(struct lw_client *c, const struct entry *e, int at_risk, uint64_t left_ms)
{
    struct logger *log = logger(c);
    const char *noun = lw_kinds[e->kind]->noun;
    int shown = (int)(e->len > NAME_SHOWN ? NAME_SHOWN : e->len);
    char who[64];

    if (!log_enabled(log, at_risk ? LOG_WARN : LOG_INFO))
        return;
    holder_text(e, who, sizeof who);
    if (at_risk)
        log_say(log, LOG_LOCK_RISK, LOG_WARN,
                "%s %.*s (%s) at risk: no renewal confirmed, %llu ms of its lease "
                "sure to be left",
                noun, shown, e->name, who, (unsigned long long)left_ms);
    else
        log_say(log, LOG_LOCK_SAFE, LOG_INFO, "%s %.*s (%s) safe again: renewed", noun, shown,
                e->name, who);
}

void report_risk(struct lw_client *c, const struct entry *e, int at_risk, uint64_t left_ms)
{
    struct lw_lease lease;
    struct lw_permit permit;

    log_risk(c, e, at_risk, left_ms);
    c->in_callback++;
    if (c->callbacks.on_risk && !lw_kinds[e->kind]->not_held)
        c->callbacks.on_risk(e->name, e->len, e->owner, at_risk, left_ms, c->callbacks.risk_arg);
    if (c->callbacks.on_lease_risk) {
        lease_of(e, &lease, &permit);
        c->callbacks.on_lease_risk(&lease, at_risk, left_ms, c->callbacks.lease_risk_arg);
    }
    c->in_callback--;
}

void report_redis_clock(struct lw_client *c, int node, uint64_t ahead_ms)
{
    struct logger *log = logger(c);
    const char *host = "?";
    int port = 0;

    stats_redis_clock_jump(&c->count);
    if (!log_enabled(log, LOG_WARN))
        return;
    if (engine_node_addr(c->engine, (unsigned)node, &host, &port) != 0)
        host = "?";
    log_say(log, LOG_CLOCK, LOG_WARN,
            "Redis's clock at %s:%d stepped %llu ms ahead of ours: every lease there ends "
            "that much sooner; at risk, renewed at once (lost if the step may have ended it)",
            host, port, (unsigned long long)ahead_ms);
}

void report_lost(struct lw_client *c, const struct entry *e, int reason, const void *multi)
{
    struct logger *log = logger(c);
    struct lw_lease lease;
    struct lw_permit permit;
    char who[64];

    if (log_enabled(log, LOG_ERROR))
        log_say(log, LOG_LOCK_LOST, LOG_ERROR, "%s %.*s (%s)%s lost: %s",
                lw_kinds[e->kind]->noun, (int)(e->len > NAME_SHOWN ? NAME_SHOWN : e->len),
                e->name, holder_text(e, who, sizeof who),
                multi ? ", and with it its multi-lock's set," : "", lw_lost_reason_name(reason));
    c->in_callback++;
    if (c->callbacks.on_lost && !lw_kinds[e->kind]->not_held)
        c->callbacks.on_lost(e->name, e->len, e->owner, reason, c->callbacks.lost_arg);
    if (c->callbacks.on_lease_lost) {
        lease_of(e, &lease, &permit);
        lease.multi = multi;
        c->callbacks.on_lease_lost(&lease, reason, c->callbacks.lease_lost_arg);
    }
    c->in_callback--;
}
