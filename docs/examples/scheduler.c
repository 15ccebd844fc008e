/*
 * docs/examples/scheduler.c - a job scheduler holding a lock per job,
 * whose jobs stop when their lock is lost.
 *
 * The scheduler runs `jobs` jobs at once, each under its own lock
 * ("job:<n>"), held as long as the job runs: the watchdog renews them all
 * in a few batched calls per tick, however many there are.  Jobs are not
 * threads here but entries the scheduler works on in turn, so each job's
 * lock has an explicit owner (the job's number + 1) instead of the
 * calling thread: lw_acquire() and lw_unlock_owner() take it, and on_lost
 * hands it back, which says which job must stop.
 *
 * A lost lock means another scheduler may run that job now: the job is
 * stopped before its next step, never finished.  Run two schedulers
 * against the same Redis and each job runs in one of them only.
 *
 * Usage: scheduler [port [jobs [lease_ms]]]
 *   Redis at 127.0.0.1:port (default 6379), 100 jobs (at most 10000), a
 *   watchdog lease of lease_ms (default 30000).  Jobs whose lock another
 *   process holds are skipped.  At SIGINT or SIGTERM the running jobs
 *   finish (their locks are released) and it prints a summary.
 * Build: cc -o scheduler scheduler.c $(pkg-config --cflags --libs leasewheel)
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leasewheel.h>

#define MAX_JOBS 10000

struct job {
    struct lw_lock *lock;
    atomic_int lost; /* set by on_lost, on the engine thread */
    int running;
    unsigned steps;
};

static struct job job[MAX_JOBS];
static int njobs;
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

/* The owner is the job's number + 1 (owner 0 would be nobody's). */
static void lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)name;
    (void)len;
    (void)arg;
    if (owner >= 1 && owner <= (uint64_t)njobs)
        atomic_store(&job[owner - 1].lost, reason);
}

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* Take each job's lock (try once: a job another scheduler holds is
 * theirs) and start the jobs we got.  Returns how many run. */
static int start_jobs(struct lw_client *client)
{
    int started = 0;

    for (int i = 0; i < njobs; i++) {
        char name[32];
        uint64_t token;
        int rc;

        snprintf(name, sizeof name, "job:%d", i);
        if ((rc = lw_lock_new(client, name, strlen(name), &job[i].lock)))
            return rc;
        rc = lw_acquire(job[i].lock, (uint64_t)i + 1, 0, 0, &token);
        if (rc == 0) {
            job[i].running = 1;
            started++;
        } else if (rc != LW_ELOCKED) {
            fprintf(stderr, "job %d: %s\n", i, lw_strerror(rc));
        }
    }
    return started;
}

/* One step of every running job; a job whose lock was lost stops first. */
static int step_jobs(void)
{
    int running = 0;

    for (int i = 0; i < njobs; i++) {
        int reason;

        if (!job[i].running)
            continue;
        if ((reason = atomic_load(&job[i].lost))) {
            job[i].running = 0;
            printf("job %d stopped after %u steps: lock lost (%s)\n", i, job[i].steps,
                   lw_lost_reason_name(reason));
            continue;
        }
        job[i].steps++; /* the job's work, a step at a time */
        running++;
    }
    return running;
}

/* Finish the jobs still running: release their locks. */
static int finish_jobs(void)
{
    int finished = 0;

    for (int i = 0; i < njobs; i++) {
        if (job[i].running && !atomic_load(&job[i].lost)) {
            int rc = lw_unlock_owner(job[i].lock, (uint64_t)i + 1);

            if (rc)
                fprintf(stderr, "job %d: unlock: %s\n", i, lw_strerror(rc));
            else
                finished++;
        }
        lw_lock_free(job[i].lock);
    }
    return finished;
}

int main(int argc, char **argv)
{
    struct lw_client_config cfg;
    struct lw_client *client;
    int rc, started, finished, stopped = 0;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);
    njobs = argc > 2 ? atoi(argv[2]) : 100;
    if (njobs < 1 || njobs > MAX_JOBS) {
        fprintf(stderr, "scheduler: jobs must be 1..%d\n", MAX_JOBS);
        return 2;
    }
    lw_client_config_init(&cfg);
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    if (argc > 3)
        cfg.watchdog_timeout_ms = (uint32_t)strtoul(argv[3], NULL, 10);
    cfg.on_lost = lost;
    if ((rc = lw_client_new(&cfg, &client))) {
        fprintf(stderr, "scheduler: %s\n", lw_strerror(rc));
        return 1;
    }
    if ((started = start_jobs(client)) < 0) {
        fprintf(stderr, "scheduler: %s\n", lw_strerror(started));
        return 1;
    }
    printf("%d jobs running, %d held elsewhere\n", started, njobs - started);
    while (!stopping && step_jobs() > 0)
        nap_ms(100);
    for (int i = 0; i < njobs; i++)
        stopped += atomic_load(&job[i].lost) != 0;
    finished = finish_jobs();
    printf("%d jobs finished, %d stopped by a lost lock\n", finished, stopped);
    lw_client_free(client);
    return 0;
}
