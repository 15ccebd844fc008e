/*
 * core/refs.h - refs.c's calls: the references that keep the client's
 * memory, and its freeing.
 */
#ifndef LW_CORE_REFS_H
#define LW_CORE_REFS_H

#include <stdint.h>

struct lw_client;

/* A handle keeps the client's memory (not its engine) alive; the last
 * reference frees it (client_free_memory()). */
int client_ref(struct lw_client *c);
void client_unref(struct lw_client *c);
/* Free the client's own memory (no engine, no entries left). */
void client_free_memory(struct lw_client *c);

#endif
