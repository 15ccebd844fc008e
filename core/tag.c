/*
 * core/tag.c - Redisson's hash-tag rule (tag.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tag.h"

size_t tag_brace(const char *name, size_t len)
{
    return memchr(name, '{', len) ? 0 : 1;
}

size_t tag_name(char *out, const char *name, size_t len)
{
    size_t brace = tag_brace(name, len), n = 0;

    if (brace)
        out[n++] = '{';
    memcpy(out + n, name, len);
    n += len;
    if (brace)
        out[n++] = '}';
    return n;
}

char *tag_key(const char *pre, const char *name, size_t len, const char *post,
              size_t *out_len)
{
    size_t npre = strlen(pre), npost = strlen(post);
    size_t n = npre + len + 2 * tag_brace(name, len) + npost;
    char *s = malloc(n + 1);

    if (!s)
        return NULL;
    memcpy(s, pre, npre);
    tag_name(s + npre, name, len);
    memcpy(s + n - npost, post, npost);
    s[n] = '\0';
    *out_len = n;
    return s;
}
