/*
 * bench/redis_server.h - a private redis-server for benchmarks and tests.
 *
 * Starts `redis-server` (found on PATH) on a free port on 127.0.0.1 and on a
 * unix socket, both in a fresh temporary directory, with persistence off
 * (--save '' --appendonly no), DEBUG allowed from those local connections
 * (--enable-debug-command local), and waits until it answers PING.  The server
 * dies with the thread that started it (PR_SET_PDEATHSIG), so a crashed test
 * leaves nothing running.  Every wait here is bounded.
 */
#ifndef LW_BENCH_REDIS_SERVER_H
#define LW_BENCH_REDIS_SERVER_H

#include <sys/types.h>

#include <hiredis/hiredis.h>

struct redis_server {
    pid_t pid;              /* 0 when not running */
    int port;
    char dir[256];          /* the temporary directory */
    char unix_path[300];    /* dir/redis.sock */
    char password[64];      /* requirepass, or "" */
};

/*
 * redis_server_start - start a server; password may be NULL.  Returns 0, or
 * -1 with a message on stderr (redis-server missing, never answered).
 */
int redis_server_start(struct redis_server *s, const char *password);

/* redis_server_stop - stop it (even when SIGSTOPped) and remove its files. */
void redis_server_stop(struct redis_server *s);

/* redis_server_restart - stop and start again on the same port: an empty
 * server (scripts and keys gone).  Returns as redis_server_start(). */
int redis_server_restart(struct redis_server *s);

/* redis_server_signal - send sig (SIGSTOP, SIGCONT, SIGKILL, ...).
 * After SIGKILL the server is reaped and counts as stopped. */
int redis_server_signal(struct redis_server *s, int sig);

/*
 * redis_server_command - run one command on a fresh connection (AUTH first
 * when there is a password), with a 2 s timeout.  Returns the reply (free it
 * with freeReplyObject) or NULL.
 */
redisReply *redis_server_command(const struct redis_server *s, const char *fmt, ...);

#endif
