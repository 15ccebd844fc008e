/*
 * docs/examples/permits.c - a semaphore of expiring permits: at most two
 * workers inside at once, across every process that shares the name.
 *
 * Creates the semaphore "renders" with 2 permits (if it does not exist)
 * and starts three workers; each acquires a permit (lease 0: the
 * client's watchdog renews it while held), works 0.2 s, and releases it,
 * except worker 1, which leaves its permit to the main thread: a permit
 * is a value, not tied to a thread.  The keys are Redisson's
 * RPermitExpirableSemaphore's: a Java service may share the semaphore.
 *
 * Usage: permits [port]   (Redis at 127.0.0.1:port, default 6379)
 * Build: cc -o permits permits.c $(pkg-config --cflags --libs leasewheel) -pthread
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <leasewheel.h>

static struct lw_semaphore *sem;
static struct lw_permit kept; /* worker 1's permit, released by main */
static atomic_int inside, most_inside;

static void *worker(void *arg)
{
    int n = (int)(intptr_t)arg, now, most, rc;
    struct timespec work = {0, 200000000};
    struct lw_permit p;

    if ((rc = lw_permit_acquire(sem, 1, 10000, 0, &p))) { /* wait up to 10 s */
        printf("worker %d: %s\n", n, lw_strerror(rc));
        exit(1);
    }
    now = atomic_fetch_add(&inside, 1) + 1;
    most = atomic_load(&most_inside);
    while (now > most && !atomic_compare_exchange_weak(&most_inside, &most, now))
        ;
    printf("worker %d inside (%d inside)\n", n, now);
    nanosleep(&work, NULL);
    if (n == 1) {
        kept = p; /* main releases it after joining this thread */
        return NULL;
    }
    atomic_fetch_sub(&inside, 1); /* before the release: the next may enter */
    if ((rc = lw_permit_release(sem, &p, 1)))
        printf("worker %d: %s\n", n, lw_strerror(rc));
    return NULL;
}

int main(int argc, char **argv)
{
    struct lw_client_config cfg;
    struct lw_client *client;
    pthread_t workers[3];
    char hex[LW_PERMIT_HEX_LEN + 1];
    int64_t available = -1;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    lw_client_config_init(&cfg); /* 127.0.0.1:6379, a 30 s watchdog lease */
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    if ((rc = lw_client_new(&cfg, &client)) || (rc = lw_semaphore_new(client, "renders", 7, &sem))) {
        fprintf(stderr, "renders: %s\n", lw_strerror(rc));
        return 1;
    }
    /* An acquire on a semaphore never set fails (LW_ENOSEM): create it. */
    if ((rc = lw_semaphore_try_set(sem, 2)) < 0) {
        fprintf(stderr, "renders: %s\n", lw_strerror(rc));
        return 1;
    }
    printf("renders %s with 2 permits\n", rc == 1 ? "created" : "existed");
    for (int i = 0; i < 3; i++)
        pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(workers[i], NULL);

    atomic_fetch_sub(&inside, 1);
    rc = lw_permit_release(sem, &kept, 1); /* from another thread than its acquirer's */
    printf("main released worker 1's permit %s: %s\n", lw_permit_hex(&kept, hex),
           rc ? lw_strerror(rc) : "ok");
    lw_semaphore_available(sem, &available);
    printf("3 workers done, at most %d inside at once, %lld permits available\n",
           atomic_load(&most_inside), (long long)available);
    lw_semaphore_free(sem);
    lw_client_free(client);
    return rc ? 1 : 0;
}
