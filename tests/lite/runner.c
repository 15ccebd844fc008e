/*
 * The runner behind tests/lite/criterion/criterion.h (ThreadSanitizer build
 * only): runs every registered test in this process, in registration order,
 * and prints Criterion's closing line.  A failed assertion ends the process.
 */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
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

int main(void)
{
    int passed = 0;

    signal(SIGALRM, on_alarm);
    for (running = tests_first; running; running = running->next) {
        const struct criterion_test_extra_data *x = running->extra;

        if (x->disabled)
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
