/*
 * tests/support/clockshim.h - the control file of the clock shim
 * (clockshim.c, an LD_PRELOAD module), and what a test writes it with.
 *
 * Two faults no real tool here injects:
 *   Redis's wall clock stepped: realtime_offset_ns is added to
 *     CLOCK_REALTIME(_COARSE), gettimeofday() and time() of every process
 *     that preloads the shim;
 *   a host suspended: monotonic_lag_ns is taken off CLOCK_MONOTONIC,
 *     CLOCK_MONOTONIC_COARSE and CLOCK_MONOTONIC_RAW (not CLOCK_BOOTTIME,
 *     which counts a suspend), in process `pid` only (0: in every one), so
 *     that what the process forks and execs, which inherits LD_PRELOAD, is
 *     not shifted.  A process keeps its pid through a plain exec(): that
 *     program is shifted too.
 * The shim maps the file (LW_CLOCKSHIM_FILE: its absolute path) shared and
 * reads the fields atomically on every call: a step written here takes
 * effect at once in the running process.  No file, or a short one, when
 * the process first reads a clock: no shift (it is not looked for again).
 * 64-bit Linux only (the shim reads the clocks with raw syscalls).
 *
 * A step of Redis's clock:
 *     struct clockshim cs;
 *     clockshim_create(&cs, "/tmp/d/clock");
 *     clockshim_env_set(CLOCKSHIM_PATH, cs.path);  (the server inherits it)
 *     redis_server_start(&s, NULL);
 *     clockshim_env_unset();
 *     clockshim_set_offset(&cs, 10 * CLOCKSHIM_S); (TIME is 10 s ahead)
 * A suspend of process pid, emulated (SIGSTOP measured, then resumed):
 *     kill(pid, SIGSTOP); stopped = now(); ...sleep...
 *     clockshim_set_lag(&cs, pid, now() - stopped);
 *     kill(pid, SIGCONT); (its CLOCK_MONOTONIC goes on from where it
 *                          stopped, its CLOCK_BOOTTIME has jumped)
 */
#ifndef LW_TESTS_CLOCKSHIM_H
#define LW_TESTS_CLOCKSHIM_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define CLOCKSHIM_ENV "LW_CLOCKSHIM_FILE"
#define CLOCKSHIM_S INT64_C(1000000000) /* a second in ns */

/* The file's contents, in the machine's byte order. */
struct clockshim_ctl {
    int64_t realtime_offset_ns; /* added to the wall clock */
    int64_t monotonic_lag_ns;   /* taken off the monotonic clocks of pid */
    int64_t pid;                /* whose monotonic clocks lag; 0: all */
};

/* A test's handle on one control file, mapped read-write. */
struct clockshim {
    char path[512];
    struct clockshim_ctl *ctl;
};

/* Create the file at path (absolute), all zero: no shift.  0, or -1 with
 * a message on stderr. */
static inline int clockshim_create(struct clockshim *cs, const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    cs->ctl = NULL;
    snprintf(cs->path, sizeof cs->path, "%s", path);
    if (fd < 0 || ftruncate(fd, sizeof *cs->ctl) != 0) {
        perror(path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    cs->ctl = mmap(NULL, sizeof *cs->ctl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (cs->ctl == MAP_FAILED) {
        perror("clockshim: mmap");
        cs->ctl = NULL;
        return -1;
    }
    return 0;
}

/* The wall clock of every shimmed process: ns ahead (negative: behind). */
static inline void clockshim_set_offset(struct clockshim *cs, int64_t ns)
{
    __atomic_store_n(&cs->ctl->realtime_offset_ns, ns, __ATOMIC_RELEASE);
}

/* The monotonic clocks of process pid (0: of all) ns behind.  The pid is
 * stored first: a reader that sees the new lag sees its pid. */
static inline void clockshim_set_lag(struct clockshim *cs, pid_t pid, int64_t ns)
{
    __atomic_store_n(&cs->ctl->pid, (int64_t)pid, __ATOMIC_RELEASE);
    __atomic_store_n(&cs->ctl->monotonic_lag_ns, ns, __ATOMIC_RELEASE);
}

/* Unmap and remove the file (shimmed processes still running keep their
 * mapping, and the last values written). */
static inline void clockshim_destroy(struct clockshim *cs)
{
    if (cs->ctl)
        munmap(cs->ctl, sizeof *cs->ctl);
    cs->ctl = NULL;
    if (cs->path[0])
        unlink(cs->path);
    cs->path[0] = '\0';
}

/* What the programs this process starts next inherit: the shim (at
 * shim_path, e.g. CLOCKSHIM_PATH) preloaded, reading file.  Set it around
 * the start of a server only: everything exec'd meanwhile is shimmed, and
 * an LD_PRELOAD of the test's own is replaced.  0, or -1. */
static inline int clockshim_env_set(const char *shim_path, const char *file)
{
    return setenv("LD_PRELOAD", shim_path, 1) || setenv(CLOCKSHIM_ENV, file, 1) ? -1 : 0;
}

static inline void clockshim_env_unset(void)
{
    unsetenv("LD_PRELOAD");
    unsetenv(CLOCKSHIM_ENV);
}

#endif
