/*
 * core/tag.h - Redisson's hash-tag rule for a name's companion keys, in
 * one place.
 *
 * RedissonObject.prefixName and suffixName put a name in braces, "{name}",
 * so that every key of a lock or a semaphore hashes to the name's own
 * slot in a cluster, unless the name has a '{' of its own: then it is
 * used as it is, and Redis's rule (the first '{' to the next '}') picks
 * its slot.  Every companion key leasewheel names goes through here.
 */
#ifndef LW_CORE_TAG_H
#define LW_CORE_TAG_H

#include <stddef.h>

/* 0 when name[0..len) has a '{' of its own (used as it is), else 1: the
 * length of each brace around it, for key parts put together elsewhere. */
size_t tag_brace(const char *name, size_t len);

/* "{name}", or "name" when it has a '{', into out (room for len + 2);
 * its length. */
size_t tag_name(char *out, const char *name, size_t len);

/* "<pre>{name}<post>" (the braces as tag_brace() says) in a new buffer,
 * its length in *out_len; NULL when out of memory. */
char *tag_key(const char *pre, const char *name, size_t len, const char *post,
              size_t *out_len);

#endif
