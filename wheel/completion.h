/*
 * wheel/completion.h - a one-shot completion a thread can sleep on.
 *
 * The word goes PENDING -> DONE once.  A waiter that finds it PENDING
 * moves it to SLEEPING and sleeps in futex(2); the completer only makes
 * the wake system call when it finds SLEEPING.  So a call that completes
 * before anyone waits costs two atomic operations and no system call.
 */
#ifndef LW_WHEEL_COMPLETION_H
#define LW_WHEEL_COMPLETION_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { LW_COMPLETION_PENDING = 0,
       LW_COMPLETION_DONE = 1,
       LW_COMPLETION_SLEEPING = 2 };

static inline void lw_futex_wait(_Atomic uint32_t *word, uint32_t value)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static inline void lw_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void lw_completion_reset(_Atomic uint32_t *word)
{
    atomic_store_explicit(word, LW_COMPLETION_PENDING, memory_order_relaxed);
}

/* Mark done and wake a sleeper.  After the exchange the waiter may return
 * and reuse the word's memory: the wake only uses the address as a key. */
static inline void lw_completion_signal(_Atomic uint32_t *word)
{
    if (atomic_exchange_explicit(word, LW_COMPLETION_DONE, memory_order_acq_rel) ==
        LW_COMPLETION_SLEEPING)
        lw_futex_wake(word);
}

/* Wait until done; everything written before the signal is visible after. */
static inline void lw_completion_wait(_Atomic uint32_t *word)
{
    uint32_t seen = LW_COMPLETION_PENDING;

    while (seen != LW_COMPLETION_DONE) {
        if (seen == LW_COMPLETION_PENDING &&
            !atomic_compare_exchange_strong_explicit(word, &seen, LW_COMPLETION_SLEEPING,
                                                     memory_order_acquire,
                                                     memory_order_acquire))
            continue; /* `seen` now holds DONE */
        lw_futex_wait(word, LW_COMPLETION_SLEEPING);
        seen = atomic_load_explicit(word, memory_order_acquire);
    }
}

#endif
