/*
 * use.cc - a C++ program built against an installed leasewheel with
 * nothing but `pkg-config --cflags --libs leasewheel` (tests/installed.sh):
 * the C++ spellings, a watchdog lock, a wheel.  Usage: use_cxx PORT.
 */
#include <leasewheel.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.h"

int main(int argc, char **argv)
{
    lw_client_config cfg;
    lw_client *c = nullptr;
    lw_lock *l = nullptr;
    uint64_t token = 0;

    CHECK(argc == 2);
    CHECK(std::strcmp(lw_version(), LW_VERSION_STRING) == 0);
    CHECK(wheel_roundtrip() == 0);
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
