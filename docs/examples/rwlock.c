/*
 * docs/examples/rwlock.c - a read-write lock: two readers share it, a
 * writer waits for both to leave, then holds it alone.
 *
 * Two reader threads (two owners: the owner of a blocking call is the
 * calling thread) take the read lock of "report:7"; the first tries to
 * take the write lock as well and is refused (no upgrade: LW_EDEADLK).
 * The main thread, the writer, finds the lock busy, waits while the
 * readers read, gets it with a fencing token, takes the read lock too (a
 * downgrade), and releases the write lock, still reading.  The keys are
 * Redisson's RReadWriteLock's: a Java service may share the lock.
 *
 * Usage: rwlock [port]   (Redis at 127.0.0.1:port, default 6379)
 * Build: cc -o rwlock rwlock.c $(pkg-config --cflags --libs leasewheel) -pthread
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <leasewheel.h>

static struct lw_lock *rd, *wr; /* the read and write lock of report:7 */
static pthread_barrier_t both_reading;

static void *reader(void *arg)
{
    int n = (int)(intptr_t)arg, rc;
    struct timespec reading = {0, 300000000}; /* 0.3 s of work */

    if ((rc = lw_trylock(rd, 5000, 0, NULL))) { /* lease 0: the watchdog */
        printf("reader %d: %s\n", n, lw_strerror(rc));
        exit(1);
    }
    printf("reader %d reading\n", n);
    if (n == 1) { /* a reader waiting for the write lock would wait on itself */
        rc = lw_trylock(wr, 1000, 0, NULL);
        printf("reader %d: no upgrade (%s)\n", n, rc == LW_EDEADLK ? "LW_EDEADLK" : "?");
    }
    pthread_barrier_wait(&both_reading);
    nanosleep(&reading, NULL);
    printf("reader %d done, releasing\n", n); /* said before: the writer may be quick */
    lw_unlock(rd);
    return NULL;
}

/* The writer's part, on the main thread: 0 or an LW_E* code. */
static int write_report(void)
{
    uint64_t token;
    int rc;

    pthread_barrier_wait(&both_reading);
    if (lw_trylock(wr, 0, 0, NULL) == LW_ELOCKED)
        printf("writer: 2 readers hold report:7, waiting\n");
    if ((rc = lw_trylock(wr, 10000, 0, &token)))
        return rc;
    printf("writer: holding report:7 alone, fencing token %" PRIu64 "\n", token);
    /* ... write the report ... then keep reading it while others may too: */
    if ((rc = lw_trylock(rd, 0, 0, NULL)) == 0) {
        printf("writer: took the read lock too (a downgrade)\n");
        lw_unlock(wr);
        printf("writer: released the write lock, %s\n",
               lw_is_locked(rd) == 1 && lw_is_locked(wr) == 0 ? "still reading" : "?");
        rc = lw_unlock(rd);
    }
    return rc;
}

int main(int argc, char **argv)
{
    struct lw_client_config cfg;
    struct lw_client *client;
    pthread_t readers[2];
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    lw_client_config_init(&cfg); /* 127.0.0.1:6379, a 30 s watchdog lease */
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    if ((rc = lw_client_new(&cfg, &client))) {
        fprintf(stderr, "client: %s\n", lw_strerror(rc));
        return 1;
    }
    if ((rc = lw_read_lock_new(client, "report:7", 8, &rd)) ||
        (rc = lw_write_lock_new(client, "report:7", 8, &wr)) ||
        (rc = lw_lock_set_fenced(wr, 1))) {
        fprintf(stderr, "report:7: %s\n", lw_strerror(rc));
        return 1;
    }
    pthread_barrier_init(&both_reading, NULL, 3);
    for (int i = 0; i < 2; i++)
        pthread_create(&readers[i], NULL, reader, (void *)(intptr_t)(i + 1));
    rc = write_report();
    for (int i = 0; i < 2; i++)
        pthread_join(readers[i], NULL);
    if (rc)
        fprintf(stderr, "writer: %s\n", lw_strerror(rc));
    else
        printf("released report:7\n");
    pthread_barrier_destroy(&both_reading);
    lw_lock_free(rd);
    lw_lock_free(wr);
    lw_client_free(client);
    return rc ? 1 : 0;
}
