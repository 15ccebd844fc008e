/*
 * bench/lwtls_setup.c - lwtls's first measurement, connection set-up: the
 * library's own connection (adapters/conn.c) made new, then dropped and
 * made again, in pairs (lwtls.c says what is timed and why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "cli_util.h"
#include "scripts.h" /* lw_lock_scripts: the set-up's SCRIPT LOADs */
#include "conn.h"
#include "endpoint.h"
#include "lwtls.h"

#define WARMUP_PAIRS 5

struct probe {
    struct conn conn;
    char *loads[SCRIPT_COUNT]; /* SCRIPT LOAD <script>, formatted */
    size_t lens[SCRIPT_COUNT];
    int up, down, err, bad;
    uint64_t up_ns;
    char bad_reply[200];
};

static void probe_setup(void *arg)
{
    struct probe *p = arg;

    for (unsigned i = 0; i < SCRIPT_COUNT; i++)
        conn_send(&p->conn, p->loads[i], p->lens[i]);
}

static void probe_up(void *arg)
{
    struct probe *p = arg;

    p->up_ns = cli_now_ns();
    p->up = 1;
}

static void probe_down(void *arg, int err)
{
    struct probe *p = arg;

    p->down = 1;
    p->err = err;
}

static void probe_reply(void *arg, redisReply *reply)
{
    struct probe *p = arg;

    if (reply->type == REDIS_REPLY_ERROR && !p->bad) {
        p->bad = 1;
        snprintf(p->bad_reply, sizeof p->bad_reply, "%s", reply->str);
    }
}

/*
 * Connect (or again) and wait until usable: 0 and *ns, or -1 (said).  A
 * handshake that failed offering a session (a server that refuses to
 * resume: Redis with --tls-session-caching no and mutual TLS answers an
 * "internal error" alert) is counted in *refused, and the attempt made
 * again at once, without a session (the connection forgot it), as the
 * library's next attempt is after its back-off: *ns is both attempts,
 * less the back-off.
 */
static int probe_connect(struct ev_loop *loop, struct probe *p, uint64_t *ns, unsigned *refused)
{
    int offered = p->conn.tls.session != NULL;
    uint64_t t0;

    p->up = p->down = 0;
    t0 = cli_now_ns();
    conn_connect(&p->conn);
    while (!p->up && !p->down)
        ev_run(loop, EVRUN_ONCE);
    if (p->down && p->err == LW_ETLS && offered && refused) {
        (*refused)++;
        p->down = 0;
        conn_connect(&p->conn);
        while (!p->up && !p->down)
            ev_run(loop, EVRUN_ONCE);
    }
    if (p->down || p->bad) {
        fprintf(stderr, "lwtls: a connection failed: %s\n",
                p->bad ? p->bad_reply : conn_why(&p->conn));
        return -1;
    }
    *ns = p->up_ns - t0;
    return 0;
}

/* p's endpoint in *own (the run's TLS settings) and its SCRIPT LOADs
 * formatted.  0, or 2 (said). */
static int probe_prepare(const struct opts *o, enum run_kind k, const struct tls_certs *certs,
                         int port, struct probe *p, struct endpoint *own)
{
    struct endpoint ep;
    int rc;

    endpoint_init(&ep);
    ep.host = "127.0.0.1";
    ep.port = port;
    ep.tls = client_tls(o, k, certs);
    if ((rc = endpoint_copy(own, &ep)) == LW_ENOMEM) {
        fprintf(stderr, "lwtls: out of memory\n");
        return 2;
    } else if (rc) {
        fprintf(stderr, "lwtls: the TLS settings: %s\n", lw_strerror(rc));
        return 2;
    }
    for (unsigned i = 0; i < SCRIPT_COUNT; i++) {
        int len = redisFormatCommand(&p->loads[i], "SCRIPT LOAD %s", lw_lock_scripts[i]);

        if (len < 0) {
            fprintf(stderr, "lwtls: out of memory\n");
            return 2;
        }
        p->lens[i] = (size_t)len;
    }
    return 0;
}

/* One pair on a connection of its own: *f new, *a made again, *resumed
 * whether "again" resumed, *refused its session refused.  0, or 2 (said). */
static int sample_pair(struct ev_loop *loop, struct probe *p, const struct conn_config *cc,
                       uint64_t *f, uint64_t *a, int *resumed, unsigned *refused)
{
    uint64_t before;
    int status = 0;

    if (conn_init(&p->conn, cc)) {
        fprintf(stderr, "lwtls: out of memory\n");
        conn_clear(&p->conn);
        return 2;
    }
    if (probe_connect(loop, p, f, NULL) == 0) {
        before = p->conn.tls.resumed;
        conn_drop(&p->conn);
        if (probe_connect(loop, p, a, refused) != 0)
            status = 2;
        *resumed = p->conn.tls.resumed > before;
    } else {
        status = 2;
    }
    conn_close(&p->conn);
    conn_clear(&p->conn);
    return status;
}

/* The pairs; 0, or 2 (a failure, said). */
int measure_setup(struct ev_loop *loop, const struct opts *o, enum run_kind k,
                  const struct tls_certs *certs, int port, struct run *run)
{
    struct endpoint own;
    struct probe p;
    struct conn_config cc = {.loop = loop,
                             .on_setup = probe_setup,
                             .on_up = probe_up,
                             .on_down = probe_down,
                             .on_reply = probe_reply,
                             .arg = &p};
    uint64_t *fresh = calloc(o->samples, sizeof *fresh), *again = calloc(o->samples, sizeof *again);
    unsigned n = 0;
    int status;

    memset(&p, 0, sizeof p);
    memset(&own, 0, sizeof own);
    cc.ep = &own;
    if (!fresh || !again) {
        fprintf(stderr, "lwtls: out of memory\n");
        status = 2;
    } else {
        status = probe_prepare(o, k, certs, port, &p, &own);
    }
    for (int i = -WARMUP_PAIRS; i < (int)o->samples && !status && !interrupted; i++) {
        uint64_t f, a;
        int resumed = 0;
        unsigned refused = 0;

        status = sample_pair(loop, &p, &cc, &f, &a, &resumed, &refused);
        if (!status && i >= 0) {
            fresh[n] = f;
            again[n] = a;
            run->resumed += (unsigned)resumed;
            run->refused += refused;
            n++;
        }
    }
    if (!status) {
        run->fresh = spread_of(fresh, n);
        run->again = spread_of(again, n);
        run->done_setup = 1;
    }
    for (unsigned i = 0; i < SCRIPT_COUNT; i++)
        redisFreeCommand(p.loads[i]);
    endpoint_clear(&own);
    free(fresh);
    free(again);
    return status;
}
