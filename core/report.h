/*
 * core/report.h - report.c's calls: a watchdog lease at risk, safe again
 * or lost, told to the holder (the callbacks) and to the operator (the
 * log).
 */
#ifndef LW_CORE_REPORT_H
#define LW_CORE_REPORT_H

#include <stdint.h>

struct lw_client;
struct entry;

/* e turned at risk (at_risk 1) or is safe again (0), with left_ms of its
 * proven lease left: the log line, on_risk, on_lease_risk. */
void report_risk(struct lw_client *c, const struct entry *e, int at_risk, uint64_t left_ms);

/* e is lost for reason (LW_LOST_*): the log line, on_lost,
 * on_lease_lost. */
void report_lost(struct lw_client *c, const struct entry *e, int reason, const void *multi);

/* Redis's clock at node was seen ahead of ours by ahead_ms beyond the
 * drift (redis_clock.h): counted, and the log line. */
void report_redis_clock(struct lw_client *c, int node, uint64_t ahead_ms);

#endif
