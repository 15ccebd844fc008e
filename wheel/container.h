/*
 * wheel/container.h - lw_container_of(): from an embedded member back to
 * the struct that holds it.  Timers and queue nodes are intrusive (the
 * wheel and the queues never allocate), so whoever gets one back from the
 * wheel or a queue finds its own struct with this.
 */
#ifndef LW_WHEEL_CONTAINER_H
#define LW_WHEEL_CONTAINER_H

#include <stddef.h>

/* The `type` whose `member` ptr points to. */
#define lw_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
