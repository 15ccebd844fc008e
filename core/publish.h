/*
 * core/publish.h - publish.c's call: the command unlocks publish with.
 */
#ifndef LW_CORE_PUBLISH_H
#define LW_CORE_PUBLISH_H

struct lw_client;

/* The command unlock scripts publish with: "publish", or
 * "spublish" in sharded pub/sub mode.  Engine thread. */
const char *client_publish_command(const struct lw_client *c);

#endif
