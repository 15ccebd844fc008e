/*
 * core/replicas.h - replicas.c's calls: first acquires acknowledged by
 * replicas (WAIT).
 */
#ifndef LW_CORE_REPLICAS_H
#define LW_CORE_REPLICAS_H

#include <stdint.h>

struct lw_client;
struct request;
struct replica_ack;

/* The acquire that req carried, answered (and good), waits for
 * c->replicas replicas: ack->acked (set by the caller) tells how it went,
 * perhaps before this returns.  req must have taken the side lane. */
void replicas_wait(struct lw_client *c, struct replica_ack *ack, const struct request *req);
/* Closing: acquires whose WAIT is not yet sent end in LW_ESHUTDOWN. */
void replicas_shutdown(struct lw_client *c);

#endif
