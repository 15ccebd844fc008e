/*
 * core/ops.h - lock.c's calls for the files that hold its ops and
 * handles: a held-back acquire admitted (admission.c), when a waiter
 * retries, a handle's references (multi.c).
 */
#ifndef LW_CORE_OPS_H
#define LW_CORE_OPS_H

#include <stdint.h>

struct lw_lock;
struct op;

/* A lock handle's references (multi.c keeps its locks'): the last
 * unref frees it. */
void lock_ref(struct lw_lock *lock);
void lock_unref(struct lw_lock *lock);

/* When a waiter retries, told the holder has pttl ms left (-1: no TTL). */
uint64_t holder_retry_at(uint64_t now_ns, int64_t pttl, uint64_t deadline_ns);
void op_attempt(struct op *op);
void op_complete(struct op *op, int err, int64_t value);

#endif
