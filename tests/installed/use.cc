/*
 * use.cc - a C++ program built against an installed leasewheel with
 * nothing but `pkg-config --cflags --libs leasewheel` (tests/installed.sh):
 * the C++ spellings, a watchdog lock, a wheel.  Usage: use_cxx PORT.
 */
#include <leasewheel.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            std::fprintf(stderr, "use.cc:%d: check failed: %s\n", __LINE__, #cond); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

static int wheel()
{
    lw_wheel_config wc;
    lw_wheel *w = nullptr;
    lw_timer t;
    lw_timer_list due = {nullptr, nullptr, 0};

    lw_wheel_config_init(&wc);
    wc.start_ns = 1000;
    CHECK(lw_wheel_new(&wc, &w) == 0);
    lw_timer_init(&t);
    CHECK(lw_wheel_schedule(w, &t, 1000 + wc.tick_ns) == 0);
    CHECK(lw_wheel_advance(w, 1000 + 2 * wc.tick_ns, &due) == 1);
    CHECK(lw_timer_list_pop(&due) == &t);
    lw_wheel_free(w);
    return 0;
}

int main(int argc, char **argv)
{
    lw_client_config cfg;
    lw_client *c = nullptr;
    lw_lock *l = nullptr;
    uint64_t token = 0;

    CHECK(argc == 2);
    CHECK(std::strcmp(lw_version(), LW_VERSION_STRING) == 0);
    CHECK(wheel() == 0);
    lw_client_config_init(&cfg);
    cfg.port = std::atoi(argv[1]);
    CHECK(lw_client_new(&cfg, &c) == 0);
    CHECK(lw_lock_new(c, "installed:cxx", 13, &l) == 0);
    CHECK(lw_lock_acquire(l, &token) == 0);
    CHECK(lw_is_held(l) == 1);
    CHECK(lw_unlock(l) == 0);
    lw_lock_free(l);
    CHECK(lw_client_free(c) == 0);
    std::printf("use (C++): leasewheel %s, token %llu\n", lw_version(),
                (unsigned long long)token);
    return 0;
}
