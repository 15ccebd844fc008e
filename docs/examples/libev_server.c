/*
 * docs/examples/libev_server.c - a libev server that takes a lock per job.
 *
 * Jobs arrive on a timer (a real server would read them from a socket or a
 * queue): every 20 ms a job for one of three reports.  For each job the
 * server tries the report's lock for 20 ms, owned by the job's id, does the
 * work (a 100 ms timer), and unlocks.  A job whose report stays busy is
 * skipped: another job is making that report.  The library runs on the
 * server's own loop (config.loop): no thread of its own, and every
 * callback below runs on this thread, so nothing here needs a mutex.
 *
 * Usage: libev_server [port [jobs]]   (Redis at 127.0.0.1:port, default
 * 6379; 30 jobs).  Exits 0 when every job was done or skipped.
 * Build: cc -o libev_server libev_server.c $(pkg-config --cflags --libs leasewheel) -lev
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <leasewheel.h>

#define REPORTS 3

struct server {
    struct ev_loop *loop;
    struct lw_client *client;
    struct lw_lock *report[REPORTS];  /* one handle per lock, for all jobs */
    ev_timer arrivals;
    uint64_t next_id;
    int jobs_left, running, done, skipped, failed;
};

struct job {
    struct server *srv;
    uint64_t id;                      /* the lock's owner: jobs are not threads */
    struct lw_lock *lock;
    ev_timer work;
};

/* A job is over; after the last, leave ev_run(): the client's watchers
 * would keep it running forever, as a server's listening socket does. */
static void job_over(struct job *job)
{
    struct server *s = job->srv;

    free(job);
    if (--s->running == 0 && s->jobs_left == 0)
        ev_break(s->loop, EVBREAK_ALL);
}

static void unlocked(int err, int64_t holds_left, void *arg)
{
    struct job *job = arg;

    (void)holds_left;
    if (err) /* it may not have run: the watchdog renews on; retry it */
        fprintf(stderr, "job %" PRIu64 ": unlock: %s\n", job->id, lw_strerror(err));
    err ? job->srv->failed++ : job->srv->done++;
    job_over(job);
}

static void work_finished(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct job *job = w->data;
    int rc;

    (void)loop;
    (void)revents;
    /* Async, like every call on this thread: a blocking lw_unlock() here
     * would wait for the loop it blocks, and returns LW_EDEADLK instead. */
    if ((rc = lw_unlock_async(job->lock, job->id, unlocked, job)))
        unlocked(rc, 0, job); /* refused: the callback will not run */
}

static void acquired(int err, int64_t token, void *arg)
{
    struct job *job = arg;

    if (err) { /* LW_ELOCKED: another job held it all our 20 ms */
        if (err != LW_ELOCKED)
            fprintf(stderr, "job %" PRIu64 ": %s\n", job->id, lw_strerror(err));
        err == LW_ELOCKED ? job->srv->skipped++ : job->srv->failed++;
        job_over(job);
        return;
    }
    /* Held, and renewed by the watchdog until unlocked.  The fencing token
     * goes with every write the work makes, so storage can refuse a job
     * that lost its lock. */
    printf("job %" PRIu64 " holds report %" PRIu64 " (token %" PRId64 ")\n", job->id,
           job->id % REPORTS, token);
    ev_timer_init(&job->work, work_finished, 0.1, 0.0);
    job->work.data = job;
    ev_timer_start(job->srv->loop, &job->work);
}

static void job_arrives(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *s = w->data;
    struct job *job = calloc(1, sizeof *job);
    int rc;

    (void)revents;
    if (--s->jobs_left == 0)
        ev_timer_stop(loop, w);
    if (!job)
        abort();
    job->srv = s;
    job->id = ++s->next_id;
    job->lock = s->report[job->id % REPORTS];
    s->running++;
    /* Try for 20 ms; lease 0: the watchdog renews it while we work. */
    if ((rc = lw_acquire_async(job->lock, job->id, 20, 0, acquired, job)))
        acquired(rc, 0, job);
}

/* A held lock was lost (deleted, Redis unreachable too long).  A real
 * server would cancel job `owner` here: it no longer excludes anyone. */
static void lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)arg;
    fprintf(stderr, "job %" PRIu64 " lost %.*s: %s\n", owner, (int)len, name,
            lw_lost_reason_name(reason));
}

int main(int argc, char **argv)
{
    struct server s = {.loop = ev_default_loop(0), .jobs_left = 30};
    struct lw_client_config cfg;
    char name[16];

    /* The loop's thread writes to Redis: a write to a closed connection
     * must fail with EPIPE, not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    lw_client_config_init(&cfg);
    cfg.port = argc > 1 ? atoi(argv[1]) : 6379;
    s.jobs_left = argc > 2 ? atoi(argv[2]) : s.jobs_left;
    cfg.loop = s.loop;  /* run on our loop: created on the thread that runs it */
    cfg.on_lost = lost;
    if (s.jobs_left < 1 || lw_client_new(&cfg, &s.client))
        return 2;
    for (int i = 0; i < REPORTS; i++) {
        snprintf(name, sizeof name, "report:%d", i);
        if (lw_lock_new(s.client, name, strlen(name), &s.report[i]) ||
            lw_lock_set_fenced(s.report[i], 1)) /* its writes carry the token */
            return 2;
    }
    ev_timer_init(&s.arrivals, job_arrives, 0.0, 0.02);
    s.arrivals.data = &s;
    ev_timer_start(s.loop, &s.arrivals);
    ev_run(s.loop, 0);

    /* On the loop's thread, outside the library's callbacks. */
    for (int i = 0; i < REPORTS; i++)
        lw_lock_free(s.report[i]);
    lw_client_free(s.client);
    printf("%d jobs done, %d skipped, %d failed\n", s.done, s.skipped, s.failed);
    return s.failed || s.done == 0;
}
