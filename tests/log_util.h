/*
 * tests/log_util.h - the log hook's lines, kept for a test to look at (the
 * hook runs on the engine thread: under a mutex).  One record per test
 * executable; clear it (logged.n = 0) before the calls whose lines count.
 */
#ifndef LW_TESTS_LOG_UTIL_H
#define LW_TESTS_LOG_UTIL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <leasewheel.h>

#define LOGGED_MAX 64

static struct {
    pthread_mutex_t lock;
    int n;
    char line[LOGGED_MAX][300];
    int level[LOGGED_MAX];
} logged = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The config's log hook: the first LOGGED_MAX lines, with their levels. */
static inline void on_log(int level, const char *message, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&logged.lock);
    if (logged.n < LOGGED_MAX) {
        snprintf(logged.line[logged.n], sizeof logged.line[0], "%s", message);
        logged.level[logged.n++] = level;
    }
    pthread_mutex_unlock(&logged.lock);
}

/* How many lines said what, at level. */
static inline int logged_times(const char *what, int level)
{
    int times = 0;

    pthread_mutex_lock(&logged.lock);
    for (int i = 0; i < logged.n; i++)
        times += strstr(logged.line[i], what) && logged.level[i] == level;
    pthread_mutex_unlock(&logged.lock);
    return times;
}

static inline int logged_with(const char *what, int level)
{
    return logged_times(what, level) > 0;
}

/* Another hook: each line to stderr, with the milliseconds since
 * log_since (set it when the test begins), for the fault tests whose
 * failures are read from their output. */
static uint64_t log_since;

/* The milliseconds since log_since, each stderr line's time. */
static inline unsigned long long log_ms(void)
{
    return (unsigned long long)((lw_clock_now() - log_since) / 1000000u);
}

static inline void log_to_stderr(int level, const char *message, void *arg)
{
    (void)arg;
    fprintf(stderr, "[%6llu ms] %s: %s\n", log_ms(), lw_log_level_name(level), message);
}

#endif
