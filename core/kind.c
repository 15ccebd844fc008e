/*
 * core/kind.c - the arguments of a batch as its kind's put() adds them
 * (kind.h says what a kind is; kinds.c holds the table).
 *
 * Arguments are kept as references or as offsets into one text buffer, so
 * that the buffer may grow while a batch is built; batch_assemble() turns
 * them into the argv the engine formats from, once, at the end.  The
 * buffers are the client's and grow to the largest batch seen.
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"

struct batch_args *batch_args_new(void)
{
    return calloc(1, sizeof(struct batch_args));
}

void batch_args_free(struct batch_args *a)
{
    if (!a)
        return;
    free(a->keys.v);
    free(a->call.v);
    free(a->entry.v);
    free(a->text);
    free(a->argv);
    free(a->lens);
    free(a);
}

void batch_args_clear(struct batch_args *a)
{
    a->keys.n = a->call.n = a->entry.n = 0;
    a->text_len = 0;
    a->failed = 0;
}

static struct batch_arg *list_push(struct batch_args *a, struct arg_list *l)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 64;
        struct batch_arg *v = realloc(l->v, cap * sizeof *v);

        if (!v) {
            a->failed = 1;
            return NULL;
        }
        l->v = v;
        l->cap = cap;
    }
    return &l->v[l->n++];
}

void batch_push_ref(struct batch_args *a, struct arg_list *l, const char *p, size_t len)
{
    struct batch_arg *arg = list_push(a, l);

    if (arg) {
        arg->ref = p;
        arg->len = len;
    }
}

/* Room for len more bytes of text: 1, or 0 (out of memory). */
static int grow_text(struct batch_args *a, size_t len)
{
    size_t cap = a->text_cap ? 2 * a->text_cap : 4096;
    char *text;

    if (a->text_len + len <= a->text_cap)
        return 1;
    while (cap < a->text_len + len)
        cap *= 2;
    if (!(text = realloc(a->text, cap))) {
        a->failed = 1;
        return 0;
    }
    a->text = text;
    a->text_cap = cap;
    return 1;
}

void batch_push_copy(struct batch_args *a, struct arg_list *l, const char *p, size_t len)
{
    struct batch_arg *arg;

    if (!grow_text(a, len) || !(arg = list_push(a, l)))
        return;
    memcpy(a->text + a->text_len, p, len);
    arg->ref = NULL;
    arg->off = a->text_len;
    arg->len = len;
    a->text_len += len;
}

void batch_key_cat(struct batch_args *a, const char *const *parts, const size_t *lens, int n)
{
    size_t len = 0, at;
    struct batch_arg *arg;

    for (int i = 0; i < n; i++)
        len += lens[i];
    if (!grow_text(a, len) || !(arg = list_push(a, &a->keys)))
        return;
    arg->ref = NULL;
    arg->off = at = a->text_len;
    arg->len = len;
    for (int i = 0; i < n; i++) {
        memcpy(a->text + at, parts[i], lens[i]);
        at += lens[i];
    }
    a->text_len = at;
}

static uint32_t append(struct batch_args *a, const struct arg_list *l, uint32_t at)
{
    for (uint32_t i = 0; i < l->n; i++, at++) {
        a->argv[at] = l->v[i].ref ? l->v[i].ref : a->text + l->v[i].off;
        a->lens[at] = l->v[i].len;
    }
    return at;
}

int batch_assemble(struct batch_args *a)
{
    uint32_t n = a->keys.n + a->call.n + a->entry.n;

    if (a->failed)
        return -1;
    if (n > a->argv_cap) {
        const char **argv = realloc(a->argv, n * sizeof *argv);
        size_t *lens;

        if (argv)
            a->argv = argv;
        if (!argv || !(lens = realloc(a->lens, n * sizeof *lens)))
            return -1;
        a->lens = lens;
        a->argv_cap = n;
    }
    append(a, &a->entry, append(a, &a->call, append(a, &a->keys, 0)));
    return (int)n;
}

int kind_renewed_integer(const redisReply *r)
{
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;

    return v == 1 || v == -1 ? (int)v : 0;
}
