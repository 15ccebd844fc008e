/*
 * docs/examples/wheel.c - the timing wheel alone, without the locks.
 *
 * Three renewals are due 10, 20 and 30 ms from now on a wheel with a
 * 1 ms tick; the owner thread sleeps until each tick ends, advances the
 * wheel and takes what fell due.  The timers are embedded in the
 * caller's structs: the wheel never allocates.
 *
 * Usage: wheel   (prints each renewal as it falls due; exits 0)
 * Build: cc -o wheel wheel.c $(pkg-config --cflags --libs leasewheel)
 */
#include <stdio.h>
#include <time.h>

#include <leasewheel/wheel.h>

struct renewal {
    struct lw_timer timer; /* first member: the list hands back this pointer */
    const char *lock_name;
};

int main(void)
{
    struct renewal r[3] = {{.lock_name = "orders:42"},
                           {.lock_name = "stock:7"},
                           {.lock_name = "report:1"}};
    struct lw_wheel_config cfg;
    struct lw_wheel *wheel;
    uint64_t start;
    int fired = 0, rc;

    lw_wheel_config_init(&cfg); /* 100 ms tick, 512 slots */
    cfg.tick_ns = 1000000;      /* 1 ms */
    if ((rc = lw_wheel_new(&cfg, &wheel))) {
        fprintf(stderr, "wheel: %s\n", lw_strerror(rc));
        return 1;
    }
    start = lw_clock_now();
    for (int i = 0; i < 3; i++) {
        lw_timer_init(&r[i].timer);
        lw_wheel_schedule(wheel, &r[i].timer, start + (uint64_t)(i + 1) * 10000000u);
    }
    while (fired < 3) {
        /* Sleep until the tick ends, then take what fell due. */
        uint64_t next = lw_wheel_next_tick(wheel), now = lw_clock_now();
        struct lw_timer_list due = {0};

        if (next > now) {
            struct timespec t = {0, (long)(next - now)};
            nanosleep(&t, NULL);
        }
        lw_wheel_advance(wheel, lw_clock_now(), &due);
        for (struct lw_timer *t; (t = lw_timer_list_pop(&due)); fired++) {
            struct renewal *rn = (struct renewal *)t;

            printf("renew %s (due at %d ms)\n", rn->lock_name, (fired + 1) * 10);
        }
    }
    lw_wheel_free(wheel);
    return 0;
}
