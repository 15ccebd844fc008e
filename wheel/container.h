/*
 * wheel/container.h - from a member back to the struct that holds it: how
 * intrusive nodes (a wheel timer, a queue link) find their owner.
 */
#ifndef LW_WHEEL_CONTAINER_H
#define LW_WHEEL_CONTAINER_H

#include <stddef.h>

/* The struct of `type` whose member `member` is at ptr. */
#define lw_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif
