/*
 * tests/cxx/check.h - the C++ tests' one assertion: a failed check is
 * printed and counted (failures), and the test goes on.
 */
#ifndef LW_TESTS_CXX_CHECK_H
#define LW_TESTS_CXX_CHECK_H

#include <cstdio>

static int failures;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

#endif
