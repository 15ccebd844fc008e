/*
 * core/owner.h - owner.c's calls: the client id's check, and the field
 * "<client id>:<owner>" that names a hold.
 */
#ifndef LW_CORE_OWNER_H
#define LW_CORE_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include <leasewheel/lock.h>

struct lw_client;

/* 0, or why the configured id (NULL: none) cannot start a field. */
int check_client_id(const char *id);
/* "<host>-<pid>-<random>" into out[LW_CLIENT_ID_MAX + 1] (client_id_host). */
void host_client_id(char *out);
/* The field for owner into buf (FIELD_MAX bytes); its length. */
size_t client_field(const struct lw_client *c, uint64_t owner, char *buf);
#define FIELD_MAX (LW_CLIENT_ID_MAX + 22)
/* owner in decimal into buf (OWNER_MAX bytes); its length.  A batch sends
 * this, its scripts put "<client id>:" in front. */
size_t owner_digits(uint64_t owner, char *buf);
#define OWNER_MAX 21

#endif
