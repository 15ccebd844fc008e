/*
 * core/multi.h - multi.c's calls for the client: the sets of watchdog
 * holds it keeps, freed when the client ends.
 */
#ifndef LW_CORE_MULTI_H
#define LW_CORE_MULTI_H

struct lw_client;

/* Free the client's multi-lock sets (after watchdog_shutdown(): no entry
 * points at them any more). */
void multi_shutdown(struct lw_client *c);

#endif
