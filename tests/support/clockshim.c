/*
 * tests/support/clockshim.c - an LD_PRELOAD module that shifts a process's
 * clocks as the control file says (clockshim.h: the file, the faults, how
 * a test uses them).
 *
 * Why not libfaketime: Debian's redis-server 7.0 hangs at start under it.
 * jemalloc reads CLOCK_MONOTONIC_COARSE while it initialises, libfaketime
 * allocates (dlsym()) while it does, each inside the other: libfaketime
 * reports "unexpected recursive calls to clock_gettime()" and the server
 * never answers.  So here: nothing allocates, no dlsym() (the real clocks
 * are raw syscalls, which also skip the vDSO), no stdio, no constructor:
 * the first call of any process, however early, maps the file (getenv,
 * open, mmap only), and a call that races it, from another thread or a
 * signal handler, maps it too (the first mapping published wins, the
 * others are dropped).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clockshim.h"

/* The syscalls fill the kernel's 64-bit timespec and timeval. */
_Static_assert(sizeof(time_t) == 8 && sizeof(long) == 8, "64-bit Linux only");

static const struct clockshim_ctl no_file; /* all zero: no shift */
static _Atomic(const struct clockshim_ctl *) mapped;

static const struct clockshim_ctl *control(void)
{
    const struct clockshim_ctl *ctl = atomic_load_explicit(&mapped, memory_order_acquire);
    const struct clockshim_ctl *none = NULL;
    const char *path;
    struct stat st;
    int fd, saved = errno; /* the caller sees errno only from its clock */

    if (ctl)
        return ctl;
    ctl = &no_file;
    path = getenv(CLOCKSHIM_ENV);
    fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        /* Shorter: reading past its end would be SIGBUS. */
        if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof *ctl) {
            void *m = mmap(NULL, sizeof *ctl, PROT_READ, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED)
                ctl = m;
        }
        close(fd);
    }
    if (!atomic_compare_exchange_strong(&mapped, &none, ctl)) {
        if (ctl != &no_file)
            munmap((void *)ctl, sizeof *ctl);
        ctl = none; /* the one published first */
    }
    errno = saved;
    return ctl;
}

static int64_t offset_ns(void)
{
    return __atomic_load_n(&control()->realtime_offset_ns, __ATOMIC_ACQUIRE);
}

static int64_t lag_ns(void)
{
    const struct clockshim_ctl *ctl = control();
    int64_t lag = __atomic_load_n(&ctl->monotonic_lag_ns, __ATOMIC_ACQUIRE);
    int64_t pid = __atomic_load_n(&ctl->pid, __ATOMIC_ACQUIRE);

    /* getpid() only when there is a lag: a syscall, as glibc caches none. */
    return lag && (pid == 0 || pid == syscall(SYS_getpid)) ? lag : 0;
}

static void shift(struct timespec *ts, int64_t ns)
{
    int64_t t = (int64_t)ts->tv_sec * CLOCKSHIM_S + ts->tv_nsec + ns;

    ts->tv_sec = t / CLOCKSHIM_S;
    ts->tv_nsec = t % CLOCKSHIM_S;
    if (ts->tv_nsec < 0) { /* a time before 1970 (a negative lag near boot) */
        ts->tv_sec--;
        ts->tv_nsec += CLOCKSHIM_S;
    }
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int64_t ns = 0;

    if (syscall(SYS_clock_gettime, clock, ts) != 0)
        return -1;
    switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
        ns = offset_ns();
        break;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_MONOTONIC_RAW:
        ns = -lag_ns();
        break;
    default: /* CLOCK_BOOTTIME counts a suspend; the CPU clocks, TAI: as they are */
        break;
    }
    if (ns)
        shift(ts, ns);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;
    int64_t ns;

    if (syscall(SYS_gettimeofday, tv, tz) != 0)
        return -1;
    /* tv is never NULL: glibc declares it so (and its own dereferences it). */
    if ((ns = offset_ns()) != 0) {
        ts.tv_sec = tv->tv_sec;
        ts.tv_nsec = tv->tv_usec * 1000;
        shift(&ts, ns);
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *out)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
