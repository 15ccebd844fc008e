/*
 * tests/clockshim_probe.c - a process for test_clockshim to read the
 * clocks of, preloaded with the shim.
 *
 * Reads commands, one byte each, on stdin, and answers on stdout:
 *   r  one line: its CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE,
 *      CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME and CLOCK_REALTIME in ns, read
 *      through libc (so through the shim);
 *   g  the same line from a child it forks and execs (this program with
 *      the argument "once": a grandchild of the test, which inherits
 *      LD_PRELOAD but not the pid the lag is for), waited for;
 * and exits at the end of stdin.  The test starts it to die with the test
 * (PR_SET_PDEATHSIG), and it starts the child so too.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long read_ns(clockid_t clock)
{
    struct timespec ts;

    if (clock_gettime(clock, &ts) != 0)
        return -1;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report(void)
{
    long long mono = read_ns(CLOCK_MONOTONIC), coarse = read_ns(CLOCK_MONOTONIC_COARSE),
              raw = read_ns(CLOCK_MONOTONIC_RAW), boot = read_ns(CLOCK_BOOTTIME),
              real = read_ns(CLOCK_REALTIME);

    printf("%lld %lld %lld %lld %lld\n", mono, coarse, raw, boot, real);
    fflush(stdout);
}

/* The child's line, or a line of -1 when it could not run. */
static void report_from_child(const char *self)
{
    pid_t parent = getpid(), pid = fork();
    int st;

    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execl(self, self, "once", (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("-1 -1 -1 -1 -1\n");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int c;

    if (argc == 2 && !strcmp(argv[1], "once")) {
        report();
        return 0;
    }
    while ((c = getchar()) != EOF) {
        if (c == 'r')
            report();
        else if (c == 'g')
            report_from_child(argv[0]);
    }
    return 0;
}
