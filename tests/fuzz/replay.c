/*
 * tests/fuzz/replay.c - main() for a fuzzer outside the fuzz build: runs
 * LLVMFuzzerTestOneInput on every file of the directories (or files)
 * given, in name order, so that the seed corpus is a regression test in
 * every build (plain, ASan+UBSan, TSan) without libFuzzer.
 *
 * A directory without any file fails: a mistyped corpus path must not
 * pass as "nothing went wrong".
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

/* Weak: only the fuzzers that need set-up define it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long size;

    if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        perror(path);
        if (f)
            fclose(f);
        return -1;
    }
    /* An exact-size copy: ASan sees a read one byte past the input. */
    buf = malloc(size ? (size_t)size : 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)size);
    free(buf);
    return 0;
}

static int is_file(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Every file of dir; the count, or -1. */
static int replay_dir(const char *dir)
{
    struct dirent **names;
    char path[4096];
    int n = scandir(dir, &names, is_file, alphasort), done = 0;

    if (n < 0) {
        perror(dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (done >= 0 && replay_file(path) == 0)
            done++;
        else
            done = -1;
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    struct stat st;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        int n = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? replay_dir(argv[i])
                                                                : replay_file(argv[i]) ? -1 : 1;

        if (n <= 0) {
            fprintf(stderr, "%s: %s\n", argv[i], n ? "failed" : "no inputs");
            return 1;
        }
        printf("%s: %d inputs replayed\n", argv[i], n);
    }
    return 0;
}
