/*
 * core/status.h - status.c's call: what a name holds (lw_name_status()),
 * read from SCRIPT_STATUS's reply.
 */
#ifndef LW_CORE_STATUS_H
#define LW_CORE_STATUS_H

#include <leasewheel/election.h>
#include <leasewheel/lock.h>

#include "request.h"

/* SCRIPT_STATUS's reply into *out; 0 or LW_EREPLY. */
int status_decode(const redisReply *reply, struct lw_name_status *out);
/* SCRIPT_LEADER's reply into *out: 0, LW_EWRONGKIND (a read-write lock's
 * name) or LW_EREPLY. */
int leader_decode(const redisReply *reply, struct lw_leader *out);

#endif
