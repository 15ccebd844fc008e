/*
 * bench/cli_util.h - small helpers shared by the command-line programs
 * lwbench and soak: number and address parsing, a plain connection to
 * the Redis they run on (the soak's: lwbench's own connections go through
 * the engine, which does TLS; see bench/lwbench.h), this process's RSS.
 */
#ifndef LW_BENCH_CLI_UTIL_H
#define LW_BENCH_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

/* A decimal in min..max, all of s; 0, or -1 (nothing set). */
int cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);

/* Seconds (a decimal fraction allowed) in min..max; 0, or -1. */
int cli_parse_seconds(const char *s, double min, double max, double *out);

/* "HOST:PORT" (the last ':' splits, so HOST may hold some); 0, or -1 when
 * malformed or HOST does not fit in hlen bytes. */
int cli_parse_host_port(const char *s, char *host, size_t hlen, int *port);

/* A blocking plain-TCP connection (5 s to connect, 30 s per command), or
 * NULL.  No TLS: hiredis 0.14 has none. */
redisContext *cli_connect(const char *host, int port);

/* 1 when the server at host:port answers PING. */
int cli_reachable(const char *host, int port);

/* This process's resident set, in bytes (0 when /proc cannot say). */
double cli_rss_bytes(void);

#endif
