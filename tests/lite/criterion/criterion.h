/*
 * A minimal stand-in for <criterion/criterion.h>, used ONLY by the
 * ThreadSanitizer build of the tests.
 *
 * Why: Criterion runs each test in a child made by its "boxfort" sandbox,
 * which maps a shared arena at a fixed address.  TSan reserves that part of
 * the address space and refuses the mapping, so a Criterion binary built with
 * -fsanitize=thread aborts before any test runs ("Could not initialize
 * inheritable arena", Criterion issue #274).  The test sources stay the
 * same: this header gives them the subset of Criterion's macros they use,
 * and runs every test in one process, one after the other.
 */
#ifndef LW_CRITERION_LITE_H
#define LW_CRITERION_LITE_H

#include <stdio.h>
#include <string.h>

struct criterion_test_extra_data {
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* seconds; enforced with alarm() */
    int disabled;
};

struct lite_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    const struct criterion_test_extra_data *extra;
    struct lite_test *next;
};

void lite_register(struct lite_test *test);
void lite_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
void lite_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define Test(suite, name, ...)                                                     \
    static void suite##_##name##_fn(void);                                         \
    static const struct criterion_test_extra_data suite##_##name##_extra = {       \
        .timeout = 0, __VA_ARGS__};                                                \
    static struct lite_test suite##_##name##_test = {                              \
        #suite, #name, suite##_##name##_fn, &suite##_##name##_extra, NULL};        \
    __attribute__((constructor)) static void suite##_##name##_reg(void)           \
    {                                                                              \
        lite_register(&suite##_##name##_test);                                     \
    }                                                                              \
    static void suite##_##name##_fn(void)

/* The optional message is a printf format and its arguments. */
#define lite_check(cond, expr, ...)                                                \
    do {                                                                           \
        if (!(cond))                                                               \
            lite_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__);                   \
    } while (0)

#define cr_assert(c, ...) lite_check((c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...) lite_check(!(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_null(p, ...) lite_check((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) lite_check((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) lite_check((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) lite_check((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) lite_check((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) lite_check((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) lite_check((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) lite_check((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) \
    lite_check(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) \
    lite_check(strcmp((a), (b)) != 0, #a " neq " #b, __VA_ARGS__)
#define cr_assert_str_empty(s, ...) lite_check((s)[0] == '\0', #s " empty", __VA_ARGS__)
#define cr_assert_fail(...) lite_fail(__FILE__, __LINE__, "cr_assert_fail", "" __VA_ARGS__)
/* An expectation fails the test at once here (Criterion would go on to
 * the end of the test first): the verdict is the same. */
#define cr_expect(c, ...) cr_assert(c, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_assert_eq(a, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) cr_assert_neq(a, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) cr_assert_lt(a, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) cr_assert_leq(a, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) cr_assert_gt(a, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) cr_assert_geq(a, b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) cr_assert_str_eq(a, b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) cr_assert_str_neq(a, b, __VA_ARGS__)
#define cr_log_info(...) lite_log(__VA_ARGS__)

#endif
