/*
 * The runner behind tests/lite/criterion/criterion.h (ThreadSanitizer build
 * only): runs every registered test in this process, in registration order,
 * and prints Criterion's closing line.  A failed assertion ends the process.
 * Of Criterion's options it takes --filter PATTERN (or --filter=PATTERN: a
 * glob on "suite/name", as Criterion's) and --verbose (a no-op: it always
 * logs); anything else is refused rather than ignored, so that a run meant
 * for one test does not quietly run them all.
 */
#include <criterion/criterion.h>

#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct lite_test *tests_first, **tests_last = &tests_first;
static const struct lite_test *running;

void lite_register(struct lite_test *test)
{
    *tests_last = test;
    tests_last = &test->next;
}

void lite_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "[FAIL] %s::%s: %s:%d: assertion failed: %s", running->suite,
            running->name, file, line, expr);
    if (fmt[0]) {
        fputs(": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fprintf(stderr, "[====] Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0\n");
    exit(1);
}

void lite_log(const char *fmt, ...)
{
    va_list ap;

    fputs("[----] ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void on_alarm(int sig)
{
    static const char msg[] = "[FAIL] test timed out\n";

    (void)sig;
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* The --filter pattern of argv, "*" without one; NULL on anything else. */
static const char *filter_of(int argc, char **argv)
{
    const char *pattern = "*";

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose"))
            continue;
        if (!strncmp(argv[i], "--filter=", 9))
            pattern = argv[i] + 9;
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            pattern = argv[++i];
        else
            return NULL;
    }
    return pattern;
}

static int selected(const struct lite_test *test, const char *pattern)
{
    char full[256];

    snprintf(full, sizeof full, "%s/%s", test->suite, test->name);
    return fnmatch(pattern, full, 0) == 0;
}

int main(int argc, char **argv)
{
    const char *pattern = filter_of(argc, argv);
    int passed = 0;

    if (!pattern) {
        fprintf(stderr, "usage: %s [--filter SUITE/NAME-GLOB] [--verbose]\n", argv[0]);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    for (running = tests_first; running; running = running->next) {
        const struct criterion_test_extra_data *x = running->extra;

        if (x->disabled || !selected(running, pattern))
            continue;
        fprintf(stderr, "[RUN ] %s::%s\n", running->suite, running->name);
        alarm(x->timeout > 0 ? (unsigned)x->timeout : 600);
        if (x->init)
            x->init();
        running->fn();
        if (x->fini)
            x->fini();
        alarm(0);
        fprintf(stderr, "[PASS] %s::%s\n", running->suite, running->name);
        passed++;
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: 0 | Crashing: 0\n",
            passed, passed);
    return 0;
}
