/*
 * use.c - a C program built against an installed leasewheel with nothing
 * but `pkg-config --cflags --libs leasewheel` (tests/installed.sh): the
 * version, a watchdog lock through the C-only lw_lock() spelling, a wheel.
 * Usage: use PORT.  Exits 0 when everything worked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leasewheel.h>

#include "common.h"

int main(int argc, char **argv)
{
    struct lw_client_config cfg;
    struct lw_client *c = NULL;
    struct lw_lock *l = NULL;
    uint64_t token = 0;

    CHECK(argc == 2);
    CHECK(strcmp(lw_version(), LW_VERSION_STRING) == 0);
    CHECK(lw_version_hex() == LW_VERSION_HEX);
    CHECK(wheel_roundtrip() == 0);
    lw_client_config_init(&cfg);
    cfg.port = atoi(argv[1]);
    CHECK(lw_client_new(&cfg, &c) == 0);
    CHECK(lw_lock_new(c, "installed:c", 11, &l) == 0);
    CHECK(lw_lock(l, &token) == 0); /* the compat spelling of lw_lock_acquire */
    CHECK(lw_is_held(l) == 1);
    CHECK(lw_unlock(l) == 0);
    CHECK(lw_is_locked(l) == 0);
    lw_lock_free(l);
    CHECK(lw_client_free(c) == 0);
    printf("use (C): leasewheel %s, token %llu\n", lw_version(), (unsigned long long)token);
    return 0;
}
