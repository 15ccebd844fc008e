/*
 * tests/test_watchdog.c - lease renewal and lost locks against a real
 * redis-server, including its faults.
 */
#include <signal.h>
#include <stdlib.h>

#include "lock_util.h"
