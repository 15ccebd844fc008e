/*
 * tests/risk_util.h - on_risk's reports, counted (on_risk runs on the
 * engine thread: atomics): how many times a lock went at risk, how many
 * times one was safe again, and the least time left a report gave.
 */
#ifndef LW_TESTS_RISK_UTIL_H
#define LW_TESTS_RISK_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct risk_log {
    _Atomic int risk, safe;
    _Atomic uint64_t least_left_ms; /* UINT64_MAX until a lock went at risk */
};

static inline void risk_log_init(struct risk_log *r)
{
    atomic_store(&r->risk, 0);
    atomic_store(&r->safe, 0);
    atomic_store(&r->least_left_ms, UINT64_MAX);
}

/* An on_risk callback; arg is a struct risk_log. */
static inline void record_risk(const char *name, size_t len, uint64_t owner, int at_risk,
                               uint64_t left_ms, void *arg)
{
    struct risk_log *r = arg;

    (void)name;
    (void)len;
    (void)owner;
    if (at_risk && left_ms < atomic_load(&r->least_left_ms))
        atomic_store(&r->least_left_ms, left_ms); /* one writer: the engine thread */
    atomic_fetch_add(at_risk ? &r->risk : &r->safe, 1);
}

#endif
