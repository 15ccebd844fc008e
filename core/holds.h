/*
 * core/holds.h - holds.c's calls: lease locks (not the watchdog's) this
 * client's owners hold.
 */
#ifndef LW_CORE_HOLDS_H
#define LW_CORE_HOLDS_H

#include <stdint.h>

struct lw_client;
struct lw_lock;

void holds_acquired(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    uint32_t holds, uint64_t until_ns);
void holds_released(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                    int64_t holds_left);
int holds_has(struct lw_client *c, const struct lw_lock *lock, uint64_t owner, uint64_t now_ns);
/* A watchdog acquire of (lock, owner) failed unanswered: a hold it may
 * have taken lasts until until_ns unless renewed. */
void holds_unsure(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                  uint64_t until_ns);
/* 1 when (lock, owner) was marked unsure and its hold may still be there:
 * an acquire's reply may count it.  The mark is taken either way. */
int holds_take_unsure(struct lw_client *c, const struct lw_lock *lock, uint64_t owner,
                      uint64_t now_ns);
void holds_shutdown(struct lw_client *c);

#endif
