/*
 * tools/lwlock_status.h - lwlock --status: what NAME holds, as text or
 * JSON (lw_name_status()).
 */
#ifndef LW_TOOLS_LWLOCK_STATUS_H
#define LW_TOOLS_LWLOCK_STATUS_H

#include <stdio.h>

#include <leasewheel.h>

/* Print st for the lock named key to out, as text or (json) one JSON
 * object and a newline.  Returns the exit status: 0 free, EXIT_WRONGKIND
 * when the name holds no lock nor semaphore (a list, a string that is no
 * count, a hash that is not a lock), EXIT_HELD otherwise. */
int lwlock_print_status(const char *key, const struct lw_name_status *st, int json, FILE *out);

/* What Redis's TYPE answer is called in a sentence: "a string", "a
 * sorted set" (zset), ... */
const char *lwlock_type_phrase(const char *type);

/* What st says the name holds, as --status and lwlock's refusals both
 * call it, into buf: "a lock", "a read-write lock", "a semaphore (5
 * permits available, 0 taken)" (a string holding a number is a
 * semaphore's count), "a hash that is not a lock", "a list", ...;
 * "nothing" when free.  Returns buf. */
const char *lwlock_holds_phrase(const struct lw_name_status *st, char *buf, size_t size);

/* What an observer of the election key was told (lw_election_observe()),
 * to out: a line of text, or (json) one JSON object a line:
 * {"term": N, "leader": "<client id>:<owner>", "value": "V",
 * "sure_until_ms": epoch ms before which no other leader can exist},
 * {"state": "none"} for a vacancy, {"state": "unknown"}. */
void lwlock_print_leader(const char *key, int state, const struct lw_leader *l, int json,
                         FILE *out);

/* Whether lwlock_holds_phrase() says already that it is no lock. */
int lwlock_phrase_says_no_lock(const char *phrase);

#endif
