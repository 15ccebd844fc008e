/*
 * bench/spawn.h - start a helper process (redis-server, redis-cli) for the
 * fixtures, so that nothing outlives the program that started it.
 */
#ifndef LW_BENCH_SPAWN_H
#define LW_BENCH_SPAWN_H

#include <sys/types.h>

/*
 * spawn_process - fork and exec argv (argv[0] found on PATH) with stdin
 * from /dev/null and stdout and stderr appended to log.  The child dies
 * with the thread that started it (PR_SET_PDEATHSIG) and starts with no
 * signal blocked.  Returns its pid, or -1 when fork failed.
 */
pid_t spawn_process(char *const argv[], const char *log);

#endif
