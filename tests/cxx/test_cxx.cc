/*
 * test_cxx.cc - leasewheel from a C++ program (built as C++11): the C++
 * spellings (`lw_lock *`, `lw_client *`, no `struct`), a watchdog lock
 * taken, renewed and released on a private redis-server, and a standalone
 * timing wheel driven by hand.  Prints each failed check; exits 1 if any.
 */
#include <leasewheel.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

extern "C" {
#include "redis_server.h" /* C, without extern "C" of its own */
}

#include "check.h"

static std::atomic<int> lost_count{0};

extern "C" void on_lost(const char *, size_t, uint64_t, int, void *)
{
    lost_count++;
}

/* A 300 ms watchdog lease renews every 100 ms: holding it 1 s sees several
 * renewals, and none may fail. */
static void lock_is_renewed(int port)
{
    lw_client_config cfg;
    lw_client *c = nullptr;
    lw_lock *l = nullptr;
    lw_client_stats st;
    uint64_t token = 0;
    int64_t ttl = 0;

    lw_client_config_init(&cfg);
    cfg.port = port;
    cfg.tick_ms = 10;
    cfg.watchdog_timeout_ms = 300;
    cfg.on_lost = on_lost;
    CHECK(lw_client_new(&cfg, &c) == 0);
    if (!c)
        return;
    CHECK(lw_lock_new(c, "cxx:lock", 8, &l) == 0);
    CHECK(lw_lock_set_fenced(l, 1) == 0);
    CHECK(lw_lock_acquire(l, &token) == 0);
    CHECK(token > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    CHECK(lw_is_held(l) == 1);
    CHECK(lw_remaining_ttl(l, &ttl) == 0 && ttl > 0);
    lw_client_get_stats(c, &st);
    std::printf("renewals: %llu sent, %llu confirmed, %llu failed\n",
                (unsigned long long)st.renewals_sent,
                (unsigned long long)st.renewals_confirmed,
                (unsigned long long)st.renewals_failed);
    CHECK(st.renewals_confirmed > 0);
    CHECK(st.renewals_failed == 0);
    CHECK(st.lost_not_owner + st.lost_errors + st.lost_expired == 0);
    CHECK(lost_count.load() == 0);
    CHECK(lw_unlock(l) == 0);
    CHECK(lw_is_locked(l) == 0);
    lw_lock_free(l);
    CHECK(lw_client_free(c) == 0);
}

struct item {
    lw_timer timer; /* first: the due list hands back &item.timer */
    int id;
};

/* Ten timers one tick apart on a wheel with a fixed start: half fire, one
 * is cancelled, the rest fire later; popped timers are IDLE again. */
static void wheel_by_hand()
{
    const uint64_t tick = 1000000, start = 1000000000;
    lw_wheel_config wc;
    lw_wheel *w = nullptr;
    lw_timer_list due = {nullptr, nullptr, 0};
    lw_wheel_stats ws;
    item items[10];
    int seen = 0;

    lw_wheel_config_init(&wc);
    wc.tick_ns = tick;
    wc.slots = 64;
    wc.start_ns = start;
    CHECK(lw_wheel_new(&wc, &w) == 0);
    if (!w)
        return;
    for (int i = 0; i < 10; i++) {
        lw_timer_init(&items[i].timer);
        items[i].id = i;
        CHECK(lw_wheel_schedule(w, &items[i].timer, start + (uint64_t)(i + 1) * tick) == 0);
    }
    CHECK(lw_wheel_advance(w, start + 5 * tick, &due) == 5);
    while (lw_timer *t = lw_timer_list_pop(&due)) {
        item *it = reinterpret_cast<item *>(t);
        CHECK(it->id < 5);
        CHECK(lw_timer_get_state(t) == LW_TIMER_IDLE);
        seen++;
    }
    CHECK(seen == 5 && due.count == 0);
    CHECK(lw_wheel_cancel(w, &items[9].timer) == LW_CANCEL_DONE);
    CHECK(lw_wheel_advance(w, start + 100 * tick, &due) == 4);
    while (lw_timer_list_pop(&due))
        seen++;
    CHECK(seen == 9);
    lw_wheel_get_stats(w, &ws);
    CHECK(ws.expired == 9 && ws.cancelled == 1 && ws.pending == 0);
    lw_wheel_free(w);
}

int main()
{
    redis_server srv;

    CHECK(std::strcmp(lw_version(), LW_VERSION_STRING) == 0);
    wheel_by_hand();
    if (redis_server_start(&srv, nullptr) != 0) {
        std::fprintf(stderr, "redis-server did not start\n");
        return 1;
    }
    lock_is_renewed(srv.port);
    redis_server_stop(&srv);
    std::printf("test_cxx: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
