/*
 * core/refs.c - the client's memory, and the references that keep it: the
 * client itself until lw_client_free(), and every lock handle (lock.c), so
 * that a handle freed after its client still finds the memory it points
 * into (not the engine: that goes with lw_client_free()).  The last
 * reference frees it.
 *
 * Below client.c and lock.c, which both hold references: a handle's end
 * frees the client without lock.c calling back up into client.c.
 */
#include <stdlib.h>

#include "client_base.h"
#include "kind.h"
#include "refs.h"

void client_free_memory(struct lw_client *c)
{
    batch_args_free(c->wd.args);
    free(c->wd.nodes);
    free(c);
}

int client_ref(struct lw_client *c)
{
    if (atomic_load_explicit(&c->freed, memory_order_acquire))
        return LW_ESHUTDOWN;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return 0;
}

void client_unref(struct lw_client *c)
{
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        client_free_memory(c);
}
