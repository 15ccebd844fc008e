/* bench/spawn.c - see spawn.h. */
#include "spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

pid_t spawn_process(char *const argv[], const char *log)
{
    pid_t parent = getpid(), pid = fork();

    if (pid != 0)
        return pid;
    /* Child: only async-signal-safe calls until exec.  The parent may have
     * died between fork and prctl: then nobody would stop us. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    /* A caller that blocks SIGTERM (to sigwait for it, as lwbench and the
     * soak do) would pass the mask on through exec: a server would ignore
     * the fixture's SIGTERM and only die of its SIGKILL seconds later. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR), out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null >= 0)
        dup2(null, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    execvp(argv[0], argv);
    _exit(127);
}
