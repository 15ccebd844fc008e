/*
 * tests/wait_child.h - waiting for a child process with a bound, shared by
 * the lwlock tests and the contention test's contender.
 */
#ifndef LW_TESTS_WAIT_CHILD_H
#define LW_TESTS_WAIT_CHILD_H

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include <leasewheel.h>

/* Wait at most ms for pid: its exit status (128+N when killed by signal N),
 * or -1 when it had to be killed. */
static inline int wait_child(pid_t pid, int ms)
{
    uint64_t until = lw_clock_now() + (uint64_t)ms * 1000000u;
    struct timespec poll = {0, 2000000L};
    int st;

    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (lw_clock_now() >= until) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        nanosleep(&poll, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
