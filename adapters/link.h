/*
 * adapters/link.h - the pipeline to one node (a link), and what the links
 * of one engine share (the link set).
 *
 * A link is one connection (conn.c) with the requests waiting to be
 * written on it and those in flight, its in-flight cap and its scripts'
 * SHAs.  It pairs replies with requests in write order, retries NOSCRIPT,
 * and fails what times out.  What it cannot decide alone it reports to the
 * topology that owns it, through the table of topology.h: an error reply
 * that may be a redirect, a request lost with its connection, a node that
 * says it is no master.  It knows no topology by name.
 *
 * Urgent requests (the watchdog's renewals) wait in a FIFO of their own,
 * written before the other one, and may take the slots the set reserves
 * for them (engine.h, "Urgent requests").
 *
 * Every node has one main link; a request with lane LW_LANE_SIDE goes to
 * the node's side link instead, a second connection made on first use
 * (link_queue()).  Links are indexed by node in the set; a node without a
 * link (a replica) has NULL.
 *
 * The set holds what all links share: the loop, the endpoint, the
 * scripts, the caps, the counters, the status, and the completion of
 * requests, which engine.c, the topologies and link.c all use
 * (links_complete()).  Engine thread only, but the atomics.
 */
#ifndef LW_ADAPTERS_LINK_H
#define LW_ADAPTERS_LINK_H

#include <stdatomic.h>
#include <stdint.h>

#include "conn.h"
#include "fifo.h"
#include "log.h"
#include "request.h"

struct engine_stats;
struct topology;

/* A script: its SCRIPT LOAD, formatted once for every connection. */
struct script {
    char *load_cmd;
    size_t load_len;
};

/* A script's state on one link. */
struct link_script {
    char sha[41];      /* from the SCRIPT LOAD reply */
    uint64_t load_seq; /* write sequence number of the latest SCRIPT LOAD */
};

/* The engine's counters (engine_stats): written by the engine thread
 * only, read from anywhere. */
struct link_counters {
    _Atomic uint64_t sent, replies, error_replies, failed, timeouts;
    _Atomic uint64_t reconnects, script_reloads, waiting, inflight, inflight_max;
    _Atomic uint64_t topology_refreshes, redirects, unsettled, switches;
    _Atomic uint64_t taken_late, tls_handshakes, tls_resumed;
};

struct link {
    struct link_set *ls;
    unsigned node; /* its node index (0 outside a cluster) */
    struct conn conn;
    struct fifo waiting;  /* routed here, not yet written */
    struct fifo urgent;   /* the same, urgent: written first */
    struct fifo inflight; /* written, reply pending, in write order */
    struct link_script *scripts;
    uint64_t seq;        /* commands written so far */
    uint64_t reconnects; /* conn.reconnects already counted */
    uint64_t handshakes; /* conn.tls.handshakes already counted */
    uint64_t resumed;    /* conn.tls.resumed already counted */
    int pipeline_full;   /* reached the cap; waiting for refill_at */
    uint64_t conn_id;    /* the connection's number while READY
                            (request.sent_conn) */
    uint64_t grace_ns;   /* added to the command timeout: a side
                            link's commands may block (WAIT) */
    uint64_t own_due_ns; /* the earliest expiry of a request waiting with
                            a wait of its own (request_wait_until()),
                            or earlier; 0: none */
    struct link *side;   /* the node's side lane, once asked for */
    int is_side;         /* this is a side lane */
    /* engine_node_stats(): plain counters, read on the engine thread. */
    uint64_t sent, replies, error_replies, script_reloads;
    uint64_t redirects; /* MOVED and ASK replies it received, followed */
};

struct link_set {
    struct ev_loop *loop;
    const struct endpoint *ep; /* every data node's (the engine's copy) */
    struct topology *topo;     /* where the links report */
    uint64_t command_timeout_ns;
    uint64_t side_grace_ns;    /* side links' extra time (side_block_ms) */
    uint32_t max_inflight;     /* per link */
    uint32_t reserve;          /* of which urgent requests' alone */
    uint32_t refill_at;        /* a pipeline that was full is topped up once
                                  no more than this many are in flight */
    uint32_t max_inflight_all; /* all links together */
    size_t inflight_all;       /* commands in flight on all links */
    int all_full;              /* max_inflight_all was reached */
    char *select_cmd;          /* SELECT <db>, formatted, or NULL
                                  (links_select_db()) */
    size_t select_len;
    struct script *scripts;
    unsigned nscripts;
    int check_role;      /* every set-up asks ROLE: the node must be a
                            master (Sentinel) */
    uint64_t conn_ids;   /* connections set up so far, all links */
    struct link **links; /* by node index */
    unsigned nlinks;
    int in_callback;            /* depth of user callbacks running now */
    const _Atomic int *closing; /* the engine is being freed */
    struct logger *log;         /* the program's log hook (log.h) */
    struct link_counters count;
    _Alignas(64) _Atomic int status; /* engine_status() */
};

/* --- the set ------------------------------------------------------------ */

/* links_reserve - room for node indexes below n (new ones NULL); 0 or
 * LW_ENOMEM. */
int links_reserve(struct link_set *ls, unsigned n);

/* links_complete - finish a request: count it, run its callback (reply
 * valid during the call), wake a caller blocked on it. */
void links_complete(struct link_set *ls, struct request *req, const redisReply *reply,
                    int err);

/* links_fail_all - complete every request of the list with err, but
 * those that wait through it (request_waits_through(): a failure to
 * reach Redis that may mend, within their caller's wait), which stay in
 * the list, in order. */
void links_fail_all(struct link_set *ls, struct fifo *list, int err);

/* links_pump_all - every link writes what it has room for. */
void links_pump_all(struct link_set *ls);

/* links_check_timeouts - at every tick: a link whose oldest request in
 * flight is overdue drops its connection; requests that waited their
 * whole time to be written fail. */
void links_check_timeouts(struct link_set *ls, uint64_t now_ns);

/* links_note_queues - publish the waiting and in-flight counts. */
void links_note_queues(struct link_set *ls);

/* links_close - every link's connection closed for good and its requests
 * failed with err (shutdown). */
void links_close(struct link_set *ls, int err);

/* links_select_db - every link's set-up selects the endpoint's db (none
 * when it is 0): for a topology whose nodes have databases, when it is
 * made.  0 or LW_ENOMEM. */
int links_select_db(struct link_set *ls);

/* links_free - every link and the array (after links_close()), and the
 * SELECT. */
void links_free(struct link_set *ls);

/* links_conn_node - the node whose connection (either lane) is number
 * conn, or -1 when it is not up. */
int links_conn_node(const struct link_set *ls, uint64_t conn);

/* links_node_stats - a node's share of the counters (engine.h's
 * engine_node_stats()); all 0 for a node without a link. */
void links_node_stats(const struct link_set *ls, unsigned node, struct engine_stats *out);

/* --- one link ------------------------------------------------------------ */

/* link_new - node's main link, put in the set (room reserved already):
 * to host:port (port 0: a unix socket), or to the endpoint's address when
 * host is NULL, or wherever the topology's link_where says.  Not
 * connecting yet.  NULL when out of memory. */
struct link *link_new(struct link_set *ls, unsigned node, const char *host, int port);

/* link_connect - start connecting (or go on, when held by link_where). */
void link_connect(struct link *l);

/* link_queue - req waits on l's node, on its lane (the side link made and
 * connecting on first use), last or first among the requests of its kind
 * (urgent or not); written by the next pump.  Out of memory, req completes
 * with LW_ENOMEM. */
void link_queue(struct link *l, struct request *req, int front);

/* link_pump - write l's waiting requests (and its side link's) while the
 * pipeline has room. */
void link_pump(struct link *l);

/* link_is_up - l's connection is set up: requests flow. */
int link_is_up(const struct link *l);

/* link_held - l waits for its link_where to name an address. */
int link_held(const struct link *l);

/* link_fail - drop l's connection for err and try again after the
 * back-off (its requests in flight fail, reported as lost). */
void link_fail(struct link *l, int err);

/* link_drop - let go of both lanes' connections at once, reading nothing
 * more from them, with no new attempt (link_connect() starts one) and no
 * report: the node must not be heard from again (Sentinel switched away
 * from it).  What was in flight stays listed: link_fail_inflight(). */
void link_drop(struct link *l);

/* link_fail_inflight - take l's requests in flight (both lanes) off it and
 * fail them with err, counted as unsettled (Sentinel: the master they went
 * to is not the master any more, so no reply of its may confirm them). */
void link_fail_inflight(struct link *l, int err);

/* link_fail_waiting - fail the requests waiting on l (both lanes, urgent
 * or not). */
void link_fail_waiting(struct link *l, int err);

#endif
