/*
 * docs/examples/first.c - the README's first program: one lock, taken,
 * used and given back.
 *
 * Takes the lock "orders:42" (waiting up to 5 s for it if another process
 * holds it), prints its fencing token, and unlocks.  While it is held the
 * client's watchdog renews its 30 s lease; on_lost says if it is lost.
 *
 * Usage: first [port]   (Redis at 127.0.0.1:port, default 6379)
 * Build: cc -o first first.c $(pkg-config --cflags --libs leasewheel)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <leasewheel.h>

/* Runs on the client's engine thread: a real program stops the work the
 * lock protected here, for mutual exclusion is gone. */
static void lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)
{
    (void)owner;
    (void)arg;
    fprintf(stderr, "lost %.*s: %s\n", (int)len, name, lw_lost_reason_name(reason));
}

int main(int argc, char **argv)
{
    struct lw_client_config cfg;
    struct lw_client *client;
    struct lw_lock *lock;
    uint64_t token;
    int rc;

    lw_client_config_init(&cfg); /* 127.0.0.1:6379, a 30 s watchdog lease */
    if (argc > 1)
        cfg.port = atoi(argv[1]);
    cfg.on_lost = lost;
    if ((rc = lw_client_new(&cfg, &client))) {
        fprintf(stderr, "client: %s\n", lw_strerror(rc));
        return 1;
    }
    if ((rc = lw_lock_new(client, "orders:42", 9, &lock)) == 0) {
        lw_lock_set_fenced(lock, 1); /* draw fencing tokens (RFencedLock) */
        rc = lw_trylock(lock, 5000, 0, &token); /* wait up to 5 s; lease 0: the watchdog */
        if (rc == 0) {
            printf("holding orders:42, fencing token %" PRIu64 "\n", token);
            /* ... the work, passing token to storage as a fencing token ... */
            rc = lw_unlock(lock);
            if (rc == 0)
                printf("released orders:42\n");
        }
        if (rc)
            fprintf(stderr, "orders:42: %s\n", lw_strerror(rc));
        lw_lock_free(lock);
    }
    lw_client_free(client);
    return rc ? 1 : 0;
}
