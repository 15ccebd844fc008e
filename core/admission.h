/*
 * core/admission.h - admission.c's calls: held locks first.  First
 * acquires of watchdog locks are held back while the renewals are behind.
 * Engine thread.
 */
#ifndef LW_CORE_ADMISSION_H
#define LW_CORE_ADMISSION_H

#include <stdint.h>

struct lw_client;
struct call;

/* What admission does with a call it held back, set by the call machine
 * (call.c): let it go on (admitted), or end it in an
 * error (LW_EOVERLOAD, LW_ESHUTDOWN).  admission.c names nothing above it. */
struct admit_rule {
    void (*admitted)(struct call *call);
    void (*end)(struct call *call, int err);
};

/* The bounds, from the lease and the tick (lw_client_new()). */
void admission_init(struct lw_client *c);
/* A first acquire of a watchdog lock, at its start: 0 to go on and send
 * it; 1 when admission took it (held back until admitted, then
 * rule->admitted(); or ended with LW_EOVERLOAD, its wait being over). */
int admission_holds(struct lw_client *c, struct call *call, const struct admit_rule *rule);
/* Every tick with due timers: read the renewal backlog, close or open. */
void admission_check(struct lw_client *c, uint64_t now_ns);
/* Closing: what is held back fails with LW_ESHUTDOWN. */
void admission_shutdown(struct lw_client *c);

#endif
