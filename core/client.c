/*
 * core/client.c - the client: configuration, start and stop, and the tick
 * hook that runs the due timers, then has the watchdog send its batches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client_base.h"
#include "admission.h"
#include "holds.h"
#include "multi.h"
#include "owner.h"
#include "refs.h"
#include "replicas.h"
#include "scripts.h"
#include "watchdog.h"

_Static_assert(LW_MAX_TIMEOUT_MS == LW_ENDPOINT_MAX_TIMEOUT_MS && LW_MAX_INFLIGHT == LW_ENGINE_MAX_INFLIGHT && LW_UNIX_PATH_MAX == LW_ENDPOINT_UNIX_PATH_MAX,
               "lock.h states the engine's limits");
_Static_assert(LW_MAX_SLOTS <= LW_WHEEL_MAX_SLOTS &&
                   LW_MAX_TICK_MS * 1000000ull <= LW_WHEEL_MAX_TICK_NS,
               "lock.h's wheel limits are within the wheel's");

/* The defaults, in a whole config of this library's size: the
 * connection's are the endpoint's (adapters/endpoint.h). */
static void config_defaults(struct lw_client_config *cfg)
{
    struct endpoint ep;

    endpoint_init(&ep);
    memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    cfg->host = ep.host;
    cfg->port = ep.port;
    cfg->connect_timeout_ms = ep.connect_timeout_ms;
    cfg->command_timeout_ms = ep.command_timeout_ms;
    cfg->reconnect_min_ms = ep.reconnect_min_ms;
    cfg->reconnect_max_ms = ep.reconnect_max_ms;
    cfg->max_inflight = LW_ENGINE_DEFAULT_MAX_INFLIGHT;
    cfg->watchdog_timeout_ms = LW_DEFAULT_WATCHDOG_TIMEOUT_MS;
    cfg->renew_batch = LW_DEFAULT_RENEW_BATCH;
    cfg->renew_batches_inflight = LW_DEFAULT_RENEW_BATCHES_INFLIGHT;
    cfg->tick_ms = LW_DEFAULT_TICK_MS;
    cfg->slots = LW_DEFAULT_SLOTS;
    cfg->acquire_replicas_timeout_ms = LW_DEFAULT_REPLICAS_TIMEOUT_MS;
    cfg->log_level = LW_LOG_INFO;
    cfg->permit_clock_skew_ms = LW_DEFAULT_PERMIT_CLOCK_SKEW_MS;
    cfg->fair_wait_ms = LW_DEFAULT_FAIR_WAIT_MS;
    cfg->fair_place_ms = LW_DEFAULT_FAIR_PLACE_MS;
}

void lw_client_config_init_size(struct lw_client_config *cfg, size_t size)
{
    struct lw_client_config all;

    if (!cfg || size < sizeof cfg->size)
        return;
    config_defaults(&all);
    all.size = size < sizeof all ? size : sizeof all;
    memcpy(cfg, &all, all.size);
    if (size > sizeof all) /* a newer header's fields: zero, as it expects */
        memset((char *)cfg + sizeof all, 0, size - sizeof all);
    cfg->size = size;
}

/*
 * The caller's config as one of this library's size: the fields it has,
 * and the defaults for the fields its (older) header did not have.  A
 * newer header's extra fields are accepted only while they are zero (the
 * defaults), for a program built against a newer header must not run
 * with settings this library would silently ignore.
 */
static int config_normalize(const struct lw_client_config *cfg, struct lw_client_config *out)
{
    size_t size = cfg->size;

    if (size < offsetof(struct lw_client_config, host) + sizeof cfg->host)
        return LW_EINVAL; /* never initialised */
    config_defaults(out);
    if (size > sizeof *out) {
        for (size_t i = sizeof *out; i < size; i++)
            if (((const unsigned char *)cfg)[i])
                return LW_ERANGE;
        size = sizeof *out;
    }
    memcpy(out, cfg, size);
    out->size = sizeof *out;
    return 0;
}

/* 0 is EINVAL, above max is ERANGE. */
static int check_count(uint64_t v, uint64_t max)
{
    return v == 0 ? LW_EINVAL : v > max ? LW_ERANGE
                                        : 0;
}

static int any_tls_setting(const struct lw_tls_config *t)
{
    static const struct lw_tls_config none;

    return memcmp(t, &none, sizeof none) != 0;
}

/* Sentinel mode: a list of at most LW_MAX_SENTINELS, a master name, and
 * no cluster (the engine checks each "host:port" and the sentinels' TLS).
 * Their own TLS settings only when asked for with sentinel_tls_own. */
static int check_sentinels(const struct lw_client_config *cfg)
{
    if (cfg->sentinel_tls_own != 0 && cfg->sentinel_tls_own != 1)
        return LW_EINVAL;
    if (!cfg->sentinel_tls_own && any_tls_setting(&cfg->sentinel_tls))
        return LW_EINVAL;
    if (!cfg->nsentinels) /* a list or a name without a count: a mistake,
                             not a request for a single node */
        return cfg->sentinels || cfg->sentinel_master || cfg->sentinel_tls_own ? LW_EINVAL
                                                                               : 0;
    if (cfg->cluster_nseeds)
        return LW_EINVAL;
    if (cfg->nsentinels > LW_MAX_SENTINELS)
        return LW_ERANGE;
    if (!cfg->sentinels || !cfg->sentinel_master || !cfg->sentinel_master[0])
        return LW_EINVAL;
    return 0;
}

/* The client's own fields; the engine checks the connection's. */
static int check_config(const struct lw_client_config *cfg)
{
    int rc;

    if (cfg->client_id_host != 0 && cfg->client_id_host != 1)
        return LW_EINVAL;
    if ((rc = check_client_id(cfg->client_id)) ||
        (rc = check_count(cfg->tick_ms, LW_MAX_TICK_MS)) ||
        (rc = check_count(cfg->slots, LW_MAX_SLOTS)) ||
        (rc = check_count(cfg->renew_batch, LW_MAX_RENEW_BATCH)) ||
        (rc = check_count(cfg->renew_batches_inflight, LW_MAX_RENEW_BATCHES_INFLIGHT)) ||
        (rc = check_count(cfg->watchdog_timeout_ms, LW_MAX_LEASE_MS)))
        return rc;
    if (cfg->sharded_pubsub < LW_SHARDED_AUTO || cfg->sharded_pubsub > LW_SHARDED_OFF)
        return LW_EINVAL;
    if (cfg->cluster_nseeds > LW_MAX_CLUSTER_SEEDS)
        return LW_ERANGE;
    if (cfg->cluster_nseeds && !cfg->cluster_seeds)
        return LW_EINVAL;
    if ((rc = check_sentinels(cfg)))
        return rc;
    if (cfg->acquire_replicas > LW_MAX_ACQUIRE_REPLICAS)
        return LW_ERANGE;
    if (cfg->acquire_replicas &&
        (rc = check_count(cfg->acquire_replicas_timeout_ms, LW_MAX_TIMEOUT_MS)))
        return rc;
    if ((rc = check_count(cfg->fair_wait_ms, LW_MAX_LEASE_MS)) ||
        (rc = check_count(cfg->fair_place_ms, LW_MAX_LEASE_MS)))
        return rc;
    if ((uint64_t)cfg->watchdog_timeout_ms + cfg->election_lock_delay_ms > LW_MAX_LEASE_MS)
        return LW_ERANGE;
    if (cfg->watchdog_timeout_ms < 3ull * cfg->tick_ms ||
        cfg->watchdog_timeout_ms < LW_MIN_LEASE_MS)
        return LW_ELEASE;
    if (cfg->max_hold_ms > LW_MAX_LEASE_MS * 1000ull)
        return LW_ERANGE;
    if (cfg->log_level < LW_LOG_ERROR || cfg->log_level > LW_LOG_INFO)
        return LW_EINVAL;
    return 0;
}

/* A random (version 4) UUID, as Redisson's client ids are. */
static void random_id(char *out)
{
    unsigned char b[16];
    size_t got = 0;
    uint64_t mix = lw_clock_now() ^ ((uint64_t)getpid() << 32);

    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    for (; got < sizeof b; got++, mix = mix * 6364136223846793005ull + 1442695040888963407ull)
        b[got] = (unsigned char)(mix >> 56); /* no entropy source: still unique enough */
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

static void flush_task_done(struct request *req, const redisReply *reply, int err,
                            void *arg)
{
    struct lw_client *c = arg;

    (void)req;
    (void)reply;
    c->wd.flush_pending = 0;
    if (!err && !c->closing)
        watchdog_flush(c);
}

/* Engine thread: have the watchdog send what it queued outside a tick, soon
 * (a task: the topology hook runs inside the engine's own work). */
static void request_flush(struct lw_client *c)
{
    if (c->wd.flush_pending || c->closing)
        return;
    request_init(&c->wd.flush_task);
    request_task(&c->wd.flush_task);
    if (engine_submit(c->engine, &c->wd.flush_task, flush_task_done, c) == 0)
        c->wd.flush_pending = 1;
}

static int any_bit(const uint8_t *map)
{
    for (unsigned i = 0; map && i < LW_CLUSTER_SLOTS / 8; i++)
        if (map[i])
            return 1;
    return 0;
}

/* Engine thread: the slot map changed.  Slots that failed over have their
 * locks re-checked on the new master at once; migrated slots need nothing
 * (MIGRATE carries the hash and its TTL, and a renewal the old node no
 * longer serves is re-sent by its slot).  In Sentinel mode a switch of
 * master comes here as a failover of every slot. */
static void on_topology(const struct topology_change *change, void *arg)
{
    struct lw_client *c = arg;

    if (c->pubsub) /* it decides how waiters listen, and so how unlocks publish */
        pubsub_topology_changed(c->pubsub);
    stats_failovers(&c->count, change->failovers);
    if (!c->closing && any_bit(change->failover)) {
        watchdog_failover(c, change->failover);
        request_flush(c);
    }
}

/* Engine thread, every tick with due timers: each does what its owner set
 * (a waiting acquire tries again, an entry queues its renewal or is lost),
 * then the watchdog sends the queued renewals. */
static void on_tick(struct engine *engine, struct lw_timer_list *due, void *arg)
{
    struct lw_client *c = arg;
    struct lw_timer *t;
    uint64_t now = lw_clock_now();

    (void)engine;
    while ((t = lw_timer_list_pop(due))) {
        struct core_timer *ct = (struct core_timer *)t;

        ct->fire(c, ct, now);
    }
    watchdog_flush(c);
    admission_check(c, now);
}

/* A fair lock's waiters' places' lease: fair_place_ms, raised to three
 * ticks and LW_MIN_LEASE_MS when shorter (the default must not refuse a
 * config with long ticks that never uses a fair lock). */
static uint64_t place_lease_ms(const struct lw_client_config *cfg)
{
    uint64_t ms = cfg->fair_place_ms;

    if (ms < 3ull * cfg->tick_ms)
        ms = 3ull * cfg->tick_ms;
    return ms < LW_MIN_LEASE_MS ? LW_MIN_LEASE_MS : ms;
}

/* Each kind's lease (the watchdog's; a fair lock's waiters' places have
 * their own), as a script argument too (a term's: the lease and the lock
 * delay, which Redis keeps and the leader's belief does not count), and
 * the mixed fleet's allowance for Redisson's clients' clocks: a quarter
 * of the lease at most, so that a lease they judge is still provably
 * valid for a while after each renewal. */
static void kind_leases(struct lw_client *c, const struct lw_client_config *cfg)
{
    for (int k = 0; k < KIND_COUNT; k++) {
        uint64_t ms = k == KIND_PLACE ? place_lease_ms(cfg) : c->lease_ms;
        uint64_t asked = k == KIND_TERM ? ms + cfg->election_lock_delay_ms : ms;

        c->terms[k].lease_ms = ms;
        c->terms[k].lease_len = (size_t)snprintf(c->terms[k].lease_str, sizeof c->terms[k].lease_str,
                                                 "%llu", (unsigned long long)asked);
        c->terms[k].skew_ms = cfg->permit_clock_skew_ms < ms / 4 ? cfg->permit_clock_skew_ms : ms / 4;
    }
}

static int copy_config(struct lw_client *c, const struct lw_client_config *cfg)
{
    if (cfg->client_id)
        snprintf(c->id, sizeof c->id, "%s", cfg->client_id);
    else if (cfg->client_id_host)
        host_client_id(c->id);
    else
        random_id(c->id);
    c->id_len = strlen(c->id);
    c->tick_ns = cfg->tick_ms * 1000000ull;
    c->lease_ms = cfg->watchdog_timeout_ms;
    c->lease_len = (size_t)snprintf(c->lease_str, sizeof c->lease_str, "%llu",
                                    (unsigned long long)c->lease_ms);
    c->wd.renew_batch = cfg->renew_batch;
    c->wd.batches_max = cfg->renew_batches_inflight;
    admission_init(c);
    c->cluster = cfg->cluster_nseeds > 0;
    c->sentinel = cfg->nsentinels > 0;
    c->sharded_pubsub = cfg->sharded_pubsub;
    c->callbacks.on_lost = cfg->on_lost;
    c->callbacks.lost_arg = cfg->lost_arg;
    c->callbacks.on_risk = cfg->on_risk;
    c->callbacks.risk_arg = cfg->risk_arg;
    c->callbacks.on_lease_lost = cfg->on_lease_lost;
    c->callbacks.lease_lost_arg = cfg->lease_lost_arg;
    c->callbacks.on_lease_risk = cfg->on_lease_risk;
    c->callbacks.lease_risk_arg = cfg->lease_risk_arg;
    c->max_hold_ms = cfg->max_hold_ms;
    c->fair_wait_ms = cfg->fair_wait_ms;
    c->lock_delay_ms = cfg->election_lock_delay_ms;
    kind_leases(c, cfg);
    c->replicas = cfg->acquire_replicas;
    c->replicas_timeout_ms = cfg->acquire_replicas_timeout_ms;
    c->wd.args = batch_args_new();
    return c->wd.args ? 0 : LW_ENOMEM;
}

/* Every connection the client opens, from the config, once: the data
 * nodes' endpoint, and the sentinels' (their own user and password; the
 * rest as the data nodes'). */
static void client_endpoints(const struct lw_client_config *cfg, struct engine_config *ec)
{
    struct endpoint *ep = &ec->node;

    ep->host = cfg->host;
    ep->port = cfg->port;
    ep->unix_path = cfg->unix_path;
    ep->username = cfg->username;
    ep->password = cfg->password;
    ep->db = cfg->db;
    ep->connect_timeout_ms = cfg->connect_timeout_ms;
    ep->command_timeout_ms = cfg->command_timeout_ms;
    ep->reconnect_min_ms = cfg->reconnect_min_ms;
    ep->reconnect_max_ms = cfg->reconnect_max_ms;
    ep->tls = cfg->tls;
    ec->sentinel = *ep;
    ec->sentinel.username = cfg->sentinel_username;
    ec->sentinel.password = cfg->sentinel_password;
    ec->sentinel.db = 0;
    if (cfg->sentinel_tls_own)
        ec->sentinel.tls = cfg->sentinel_tls;
}

static void engine_config(const struct lw_client_config *cfg, struct lw_client *c,
                          struct engine_config *ec)
{
    engine_config_init(ec);
    client_endpoints(cfg, ec);
    ec->max_inflight = cfg->max_inflight;
    /* Renewals are urgent: as many slots as the watchdog sends calls at
     * once stay theirs, up to half the pipeline. */
    ec->urgent_reserve = cfg->renew_batches_inflight < cfg->max_inflight / 2
                             ? cfg->renew_batches_inflight
                             : cfg->max_inflight / 2;
    ec->scripts = lw_lock_scripts;
    ec->nscripts = SCRIPT_COUNT;
    ec->wheel.tick_ns = c->tick_ns;
    ec->wheel.slots = cfg->slots;
    ec->on_tick = on_tick;
    ec->tick_arg = c;
    ec->loop = cfg->loop;
    ec->seeds = cfg->cluster_seeds;
    ec->nseeds = cfg->cluster_nseeds;
    ec->topology_refresh_ms = cfg->topology_refresh_ms;
    ec->sentinels = cfg->sentinels;
    ec->nsentinels = cfg->nsentinels;
    ec->sentinel_master = cfg->sentinel_master;
    ec->log = cfg->log;
    ec->log_arg = cfg->log_arg;
    ec->log_level = cfg->log_level;
    ec->on_topology = on_topology;
    ec->topology_arg = c;
    /* Acquires that wait for replicas take the side lane, where WAIT may
     * block for its whole timeout before the command timeout starts. */
    ec->side_block_ms = cfg->acquire_replicas ? cfg->acquire_replicas_timeout_ms : 0;
}

/* Engine thread: the subscribers live on the engine's loop, and connect
 * with its endpoint where its topology says. */
static int start_subscriber(struct lw_client *c)
{
    struct pubsub_config pc = {
        .engine = c->engine,
        .sharded = c->sharded_pubsub,
        .on_event = channel_on_event, /* each channel's class is told */
        .arg = c,
    };

    return pubsub_new(&pc, &c->pubsub);
}

/* The same as a task, for a client with its own engine thread. */
static void start_subscriber_task(struct request *req, const redisReply *reply, int err,
                                  void *arg)
{
    (void)reply;
    if (!err)
        req->err = start_subscriber(arg);
}

/* Start the subscriber on the engine thread: embedded, we are on it (the
 * caller's word), and engine_call() would wait for the loop we are
 * keeping from running. */
static int start_on_engine(struct lw_client *c)
{
    struct request task;

    if (c->embedded)
        return start_subscriber(c);
    request_init(&task);
    request_task(&task);
    return engine_call(c->engine, &task, start_subscriber_task, c);
}

int lw_client_new(const struct lw_client_config *given, struct lw_client **out)
{
    struct lw_client_config whole, *cfg = &whole;
    struct engine_config ec;
    struct lw_client *c;
    int rc;

    if (!given || !out)
        return LW_EINVAL;
    if ((rc = config_normalize(given, cfg)) || (rc = check_config(cfg)))
        return rc;
    if (!(c = calloc(1, sizeof *c)))
        return LW_ENOMEM;
    atomic_init(&c->refs, 1);
    if ((rc = copy_config(c, cfg))) {
        client_free_memory(c);
        return rc;
    }
    c->embedded = cfg->loop != NULL;
    engine_config(cfg, c, &ec);
    if ((rc = engine_new(&ec, &c->engine))) {
        client_free_memory(c);
        return rc;
    }
    c->wheel = engine_wheel(c->engine);
    if ((rc = start_on_engine(c))) {
        engine_free(c->engine);
        client_free_memory(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Engine thread: stop everything that is not a request on the wire.  The
 * requests fail with LW_ESHUTDOWN when the engine stops, and their ops
 * with them. */
static void stop_client(struct lw_client *c)
{
    c->closing = 1;
    admission_shutdown(c);
    replicas_shutdown(c);
    channel_shutdown(c);
    watchdog_shutdown(c);
    pubsub_free(c->pubsub);
    c->pubsub = NULL;
}

static void stop_client_task(struct request *req, const redisReply *reply, int err,
                             void *arg)
{
    (void)req;
    (void)reply;
    (void)err;
    stop_client(arg);
}

/*
 * Run stop_client() on the engine thread.  Embedded, that is the caller's
 * thread, and a task would wait for the loop it keeps from running: stop
 * it here, unless from another thread (it would race the loop) or from
 * inside one of our callbacks (it would free what that call returns into).
 * Requests other threads submit meanwhile are failed by engine_free().
 */
static int stop_on_engine(struct lw_client *c)
{
    struct request task;

    if (c->embedded) {
        if (!engine_on_thread(c->engine) || c->in_callback)
            return LW_EDEADLK;
        stop_client(c);
        return 0;
    }
    request_init(&task);
    request_task(&task);
    return engine_call(c->engine, &task, stop_client_task, c);
}

int lw_client_free(struct lw_client *c)
{
    if (!c)
        return 0;
    if (atomic_load_explicit(&c->freed, memory_order_acquire))
        return LW_ESHUTDOWN; /* freed before, kept alive by a handle */
    if (stop_on_engine(c) == LW_EDEADLK)
        return LW_EDEADLK;
    engine_free(c->engine);
    /* The ops in flight have completed, leaving their channels; what is
     * left is memory only (the wheel went with the engine). */
    c->engine = NULL;
    c->wheel = NULL;
    admission_shutdown(c);
    replicas_shutdown(c);
    channel_shutdown(c);
    watchdog_shutdown(c);
    multi_shutdown(c);
    holds_shutdown(c);
    atomic_store_explicit(&c->freed, 1, memory_order_release);
    client_unref(c);
    return 0;
}

int lw_client_last_error(const struct lw_client *c, char *buf, size_t len)
{
    if (!c || (!buf && len))
        return LW_EINVAL;
    if (!c->engine) { /* freed, kept alive by a handle */
        if (len)
            buf[0] = 0;
        return 0;
    }
    return engine_last_error(c->engine, buf, len);
}

const char *lw_client_id(const struct lw_client *c)
{
    return c->id;
}
