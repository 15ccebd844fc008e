/*
 * adapters/request.h - a request: one command in Redis's wire format, on
 * its way through the engine (engine.h) and back with its reply.
 *
 * The caller owns a request and formats its command here, on its own
 * thread (request.c), so the engine thread only copies bytes; it submits
 * it with engine_submit() or engine_call() (engine.h).  The engine
 * (engine.c, link.c), the queues it waits in (fifo.h) and the topologies
 * (topology.h) write the rest of its fields.  Its own header, below the
 * engine, so that what carries requests need not include the engine's.
 */
#ifndef LW_ADAPTERS_REQUEST_H
#define LW_ADAPTERS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include <leasewheel/error.h>
#include <leasewheel/wheel.h>

#include "queue.h"

struct request;

/*
 * The request's outcome, on the engine thread.  err is 0 and reply the
 * server's reply (valid only during the call; a Redis error reply is a
 * reply, of type REDIS_REPLY_ERROR), or err is an LW_E* code and reply NULL.
 * The callback may submit requests, including this one again.
 */
typedef void request_fn(struct request *req, const redisReply *reply,
                        int err, void *arg);

/* Where a request goes in a cluster (request_route_*()). */
enum { LW_ROUTE_ANY = 0,
       LW_ROUTE_SLOT = 1,
       LW_ROUTE_NODE = 2 };

/*
 * Which of a node's connections a request takes (request.lane).  MAIN
 * carries everything by default.  SIDE is a second connection to the same
 * node (same address, credentials, db and scripts), made when a first
 * request asks for it: for commands that block their connection (WAIT),
 * so that they never hold up what goes on MAIN (renewals).  A request
 * keeps its lane through redirects and retries.
 */
enum { LW_LANE_MAIN = 0,
       LW_LANE_SIDE = 1 };

/*
 * A request.  The caller owns it; zero it or request_init() it.  Only
 * commands with one reply each: request_command() refuses SUBSCRIBE and
 * its kin, and MONITOR.  Its fields, by who writes them:
 */
struct request {
    /* The caller, before submitting (through the request_*() calls). */
    char *cmd; /* RESP; owned by whoever set it */
    size_t len;
    uint32_t script; /* 0: a plain command; i + 1: EVALSHA of script
                        i, whose SHA the engine writes at sha_at */
    uint32_t sha_at;
    uint8_t task;      /* no command: request_task() */
    uint8_t lane;      /* LW_LANE_* */
    uint8_t route;     /* cluster: LW_ROUTE_* */
    uint8_t settle;    /* Sentinel: held back after a switch
                          (request_settle()) */
    uint8_t urgent;    /* written before what is not (request_urgent()) */
    uint32_t route_to; /* cluster: the slot or node index */
    /* Its caller's wait ends then: it waits for a connection no longer,
     * and through what may mend (request_wait_until()); 0: none. */
    uint64_t wait_until_ns;

    /* engine_submit() and engine_call(). */
    request_fn *done;
    void *arg;
    uint8_t blocking;          /* a caller waits on `completed` */
    struct lw_mpsc_node qnode; /* the submission queue */

    /* The engine (engine.c, link.c): queues, the wire, the outcome. */
    struct lw_qnode fifo_node; /* the FIFO it waits in (waiting, in flight,
                                  held by the topology: fifo.h) */
    uint64_t expires_ns;       /* when its wait ends, set when the engine takes
                                  it in: taken in + command timeout.  Not
                                  written by then, it fails; the topology's
                                  retries give up then too */
    uint64_t sent_ns;          /* when it was last written; it must be
                                  answered within the command timeout */
    uint64_t sent_seq;         /* the write's sequence number on its link */
    uint64_t sent_conn;        /* the connection it was last written on (a
                                  number unique in the engine, new for every
                                  connection set up), 0 before */
    uint8_t retried;           /* NOSCRIPT retry spent */
    int err;                   /* the outcome, for engine_call() */
    _Atomic uint32_t completed;

    /* The topology (cluster.c): redirects and retries. */
    uint64_t retry_ns; /* held for a retry: when it is routed again */
    uint8_t redirects; /* MOVED/ASK followed */
    uint8_t unsettled; /* unsettled retries so far */
    uint8_t asking;    /* send ASKING first */
};

/* request_init - an empty request (the same as zeroing it). */
void request_init(struct request *req);

/*
 * request_command - format argv as the request's command.  The buffer
 * is the request's: request_clear() frees it.  Returns 0, LW_EINVAL
 * (argc < 1, a NULL argument, or a command without exactly one reply:
 * SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, MONITOR),
 * LW_ENOMEM.
 */
int request_command(struct request *req, int argc, const char **argv,
                    const size_t *argvlen);

/*
 * request_evalsha - format EVALSHA of script `script` with `nkeys` keys
 * followed by the other arguments (argv holds keys, then args).  The SHA is
 * filled in by the engine when it writes the command.  Returns as above;
 * LW_ERANGE when nkeys > argc.
 */
int request_evalsha(struct request *req, int script, int nkeys, int argc,
                    const char **argv, const size_t *argvlen);

/*
 * request_settle - Sentinel: after a switch of master, hold req back
 * for a while (the refresh period, at most half the command timeout)
 * before it goes to the new master, while commands without the mark (the
 * renewals that re-check held locks) go at once.  For acquires: other
 * clients that have not seen the switch yet may still take locks on the
 * old master, and learn they lost them only when they see it too.
 * Ignored outside Sentinel mode; kept across re-submissions.
 */
void request_settle(struct request *req);

/*
 * request_urgent - req is written before every request without the mark
 * waiting on its connection, and may take the urgent_reserve slots (see
 * "Urgent requests" in engine.h).  For the watchdog's renewals: a held lock
 * comes before a lock still to take.  Kept across re-submissions.
 */
void request_urgent(struct request *req);

/*
 * request_wait_until - req belongs to a call that waits until until_ns
 * (lw_clock_now()'s clock; 0: it does not): an acquire's attempt within
 * its wait.  It waits to be written no longer than that (nor than the
 * command timeout), and a failure to reach Redis that may mend
 * (request_waits_through()) does not fail it at once, before a first
 * connection: it waits for one, so that a Redis that is down or starting
 * costs the call its wait, not its answer.  Kept across re-submissions:
 * set it, or 0, for each command the request carries.
 */
void request_wait_until(struct request *req, uint64_t until_ns);

/*
 * request_waits_through - whether req, taken in at now_ns, waits
 * through err rather than fail at once: err says Redis cannot be reached
 * yet, in a way that may mend (LW_ECONNREFUSED: nothing listens, a Redis
 * down or restarting; LW_ECONNECT: no socket yet, a connect cut short),
 * and req's wait (request_wait_until()) has time left.  A refusal that
 * will not mend (LW_EAUTH, LW_ETLS) fails it at once, as any request.
 */
static inline int request_waits_through(const struct request *req, int err,
                                        uint64_t now_ns)
{
    return (err == LW_ECONNREFUSED || err == LW_ECONNECT) && req->wait_until_ns > now_ns;
}

/* request_clear - free the command formatted by request_command()
 * or request_evalsha(). */
void request_clear(struct request *req);

/*
 * request_task - make req a task: it carries no command, and submitting
 * it just runs its callback on the engine thread (reply NULL, err 0, or
 * LW_ESHUTDOWN when the engine is stopping), after the requests the same
 * thread submitted before it have been taken in.  How other layers get
 * their own work done on the engine thread.  A command already formatted
 * stays in req; clearing req->task (or formatting another) makes req a
 * command again.
 */
void request_task(struct request *req);

/*
 * Leases and the time they start.  Every lease leasewheel sets is timed
 * by Redis's clock: a TTL (PEXPIRE), or an expiry the script computes
 * from Redis's TIME (a permit's score, a waiter's place).  It starts when
 * the script runs: after the command's last write, whatever happened to
 * it before (a reconnect, the in-flight cap, a NOSCRIPT retry, a
 * redirect, a Sentinel switch).  No client's wall clock enters one.
 */

/*
 * request_lease_from - in a request's callback, when a reply came: the
 * earliest moment at which the lease its command set can have started:
 * when it was last written, for the copy that answered ran after that.
 */
uint64_t request_lease_from(const struct request *req);

/* request_route_slot, request_route_node - set the request's route
 * (LW_ROUTE_* above); before submitting it. */
void request_route_slot(struct request *req, unsigned slot);
void request_route_node(struct request *req, unsigned node);

#endif
