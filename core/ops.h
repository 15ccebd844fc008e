/*
 * core/ops.h - lock.c's calls on ops, for the files that hold them: a
 * waiter woken or ended (waiters.c), a held-back acquire admitted
 * (admission.c), and when a waiter retries.
 */
#ifndef LW_CORE_OPS_H
#define LW_CORE_OPS_H

#include <stdint.h>

struct op;

/* When a waiter retries, told the holder has pttl ms left (-1: no TTL). */
uint64_t holder_retry_at(uint64_t now_ns, int64_t pttl, uint64_t deadline_ns);
void op_attempt(struct op *op);
void op_complete(struct op *op, int err, int64_t value);

/* A held-back acquire admitted (admission.c): it goes on as from its
 * start. */
void acquire_admitted(struct op *op);

#endif
