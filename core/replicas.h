/*
 * core/replicas.h - replicas.c's calls: first acquires acknowledged by
 * replicas (WAIT).
 */
#ifndef LW_CORE_REPLICAS_H
#define LW_CORE_REPLICAS_H

#include <stdint.h>

struct lw_client;
struct op;

/* The acquire op (its reply read, token in op->value) waits for
 * c->replicas replicas; acquire_acked() tells how it went. */
void replicas_wait(struct lw_client *c, struct op *op, uint64_t sent_ns);
/* Closing: acquires whose WAIT is not yet sent end in LW_ESHUTDOWN. */
void replicas_shutdown(struct lw_client *c);

#endif
