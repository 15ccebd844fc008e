/*
 * tests/support/cli_util.h - small helpers shared by the command-line programs
 * lwbench, lwhot, lwtls and soak: number and address parsing, a plain
 * connection to the Redis they run on (the soak's: lwbench's own
 * connections go through the engine, which does TLS; see bench/lwbench.h),
 * this process's RSS, and the clocks, quantiles and number formats of
 * lwhot's and lwtls's reports.
 */
#ifndef LW_TESTS_CLI_UTIL_H
#define LW_TESTS_CLI_UTIL_H

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

/* What lwhot and lwtls report with. */

/* "0.5 0.4 0.3", /proc/loadavg's three averages, or "?", in buf[n]. */
void cli_load_average(char *buf, size_t n);

/* The monotonic clock, in ns. */
uint64_t cli_now_ns(void);

/* This process's CPU seconds, all its threads. */
double cli_process_cpu_s(void);

/* Redis's CPU seconds (sys + user, from INFO cpu) on rc, -1 when it cannot
 * say. */
double cli_redis_cpu_s(redisContext *rc);

/* qsort()'s comparison of two uint64_t. */
int cli_cmp_u64(const void *a, const void *b);

/* The nearest-rank q-quantile of sorted v[n] (0 when n is 0). */
uint64_t cli_quantile(const uint64_t *v, size_t n, double q);

/* v with thousands separators, "12,345", in buf[n]; returns buf. */
const char *cli_fmt_count(char *buf, size_t n, uint64_t v);

/* ns as milliseconds, about three significant figures ("2.04 ms",
 * "12.5 ms", "6,003 ms"), in buf[n]; returns buf. */
const char *cli_fmt_ms(char *buf, size_t n, uint64_t ns);

#endif
