/*
 * tests/fuzz/fuzz_util.h - what every fuzzer shares: the libFuzzer entry
 * points and a check that fails loudly.
 *
 * Each fuzzer is one file defining LLVMFuzzerTestOneInput (and, when it
 * needs set-up, LLVMFuzzerInitialize).  The fuzz build links it with
 * libFuzzer (-fsanitize=fuzzer); the other builds link it with replay.c,
 * which runs it over the committed seed corpus as a plain test.
 */
#ifndef LW_TESTS_FUZZ_UTIL_H
#define LW_TESTS_FUZZ_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

__attribute__((noreturn, format(printf, 4, 5))) static inline void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    /* A deadly signal: libFuzzer saves the input as a crash file, and
     * the replay test fails. */
    abort();
}

/* FUZZ_CHECK(cond, fmt, ...): abort with the message unless cond. */
#define FUZZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
    } while (0)

/*
 * The input cut into pieces at each sep byte: n pieces for n - 1 seps
 * (an empty input is one empty piece).  Each piece is a copy of its own,
 * NUL-terminated, so that ASan sees any read past its length.  Free with
 * fuzz_pieces_free().
 */
struct fuzz_pieces {
    int n;
    char **p;
    size_t *len;
};

static inline void fuzz_pieces_free(struct fuzz_pieces *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->p[i]);
    free(f->p);
    free(f->len);
}

static inline void fuzz_split(const uint8_t *data, size_t size, uint8_t sep, struct fuzz_pieces *f)
{
    size_t start = 0;

    f->n = 1;
    for (size_t i = 0; i < size; i++)
        f->n += data[i] == sep;
    /* One more slot for a terminating NULL, for argv-style users. */
    f->p = calloc((size_t)f->n + 1, sizeof *f->p);
    f->len = calloc((size_t)f->n, sizeof *f->len);
    FUZZ_CHECK(f->p && f->len, "out of memory");
    for (int k = 0; k < f->n; k++) {
        size_t end = start;

        while (end < size && data[end] != sep)
            end++;
        f->len[k] = end - start;
        f->p[k] = malloc(f->len[k] + 1);
        FUZZ_CHECK(f->p[k], "out of memory");
        for (size_t i = 0; i < f->len[k]; i++)
            f->p[k][i] = (char)data[start + i];
        f->p[k][f->len[k]] = 0;
        start = end + 1;
    }
}

#endif
