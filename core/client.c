/*
 * core/client.c - the client: configuration, start and stop, the tick hook
 * that hands due timers to the watchdog and to waiting acquires, stats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client_private.h"

#define MAX_TICK_MS 60000u
#define MAX_SLOTS 65536u
#define MAX_BATCHES_INFLIGHT 65536u

_Static_assert(LW_MAX_TIMEOUT_MS == LW_ENGINE_MAX_TIMEOUT_MS && LW_MAX_INFLIGHT ==
               LW_ENGINE_MAX_INFLIGHT && LW_UNIX_PATH_MAX == LW_ENGINE_UNIX_PATH_MAX,
               "lock.h states the engine's limits");

/* The defaults, in a whole config of this library's size. */
static void config_defaults(struct lw_client_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    cfg->host = "127.0.0.1";
    cfg->port = LW_ENGINE_DEFAULT_PORT;
    cfg->connect_timeout_ms = LW_ENGINE_DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->command_timeout_ms = LW_ENGINE_DEFAULT_COMMAND_TIMEOUT_MS;
    cfg->reconnect_min_ms = LW_ENGINE_DEFAULT_RECONNECT_MIN_MS;
    cfg->reconnect_max_ms = LW_ENGINE_DEFAULT_RECONNECT_MAX_MS;
    cfg->max_inflight = LW_ENGINE_DEFAULT_MAX_INFLIGHT;
    cfg->watchdog_timeout_ms = LW_DEFAULT_WATCHDOG_TIMEOUT_MS;
    cfg->renew_batch = LW_DEFAULT_RENEW_BATCH;
    cfg->renew_batches_inflight = LW_DEFAULT_RENEW_BATCHES_INFLIGHT;
    cfg->tick_ms = LW_DEFAULT_TICK_MS;
    cfg->slots = LW_DEFAULT_SLOTS;
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
    return v == 0 ? LW_EINVAL : v > max ? LW_ERANGE : 0;
}

static int check_client_id(const char *id)
{
    size_t n;

    if (!id)
        return 0;
    n = strlen(id);
    if (n == 0)
        return LW_EINVAL;
    return n > LW_CLIENT_ID_MAX || strchr(id, ':') ? LW_ERANGE : 0;
}

/* The client's own fields; the engine checks the connection's. */
static int check_config(const struct lw_client_config *cfg)
{
    int rc;

    if ((rc = check_client_id(cfg->client_id)) ||
        (rc = check_count(cfg->tick_ms, MAX_TICK_MS)) ||
        (rc = check_count(cfg->slots, MAX_SLOTS)) ||
        (rc = check_count(cfg->renew_batch, LW_MAX_RENEW_BATCH)) ||
        (rc = check_count(cfg->renew_batches_inflight, MAX_BATCHES_INFLIGHT)) ||
        (rc = check_count(cfg->watchdog_timeout_ms, LW_MAX_LEASE_MS)))
        return rc;
    if (cfg->watchdog_timeout_ms < 3ull * cfg->tick_ms ||
        cfg->watchdog_timeout_ms < LW_MIN_LEASE_MS)
        return LW_ELEASE;
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

/* "<id>:<owner>", NUL-terminated: once per renewal, so no snprintf. */
size_t client_field(const struct lw_client *c, uint64_t owner, char *buf)
{
    char digits[20];
    size_t n = 0, len = c->id_len + 1;

    memcpy(buf, c->id, c->id_len);
    buf[c->id_len] = ':';
    do {
        digits[n++] = (char)('0' + owner % 10);
        owner /= 10;
    } while (owner);
    while (n)
        buf[len++] = digits[--n];
    buf[len] = 0;
    return len;
}

uint64_t lw_owner_self(void)
{
    return (uint64_t)gettid();
}

/* Engine thread, every tick with due timers: waiting acquires try again,
 * the watchdog queues renewals (and notices expiries), then sends them. */
static void on_tick(struct lw_engine *engine, struct lw_timer_list *due, void *arg)
{
    struct lw_client *c = arg;
    struct lw_timer *t;
    uint64_t now = lw_clock_now();

    (void)engine;
    while ((t = lw_timer_list_pop(due))) {
        struct tagged_timer *tt = (struct tagged_timer *)t;

        if (tt->kind == TIMER_ENTRY)
            watchdog_timer_fired(c, (struct entry *)tt, now);
        else
            op_timer_fired(c, (struct op *)((char *)tt - offsetof(struct op, tt)), now);
    }
    watchdog_flush(c);
}

static int copy_strings(struct lw_client *c, const struct lw_client_config *cfg)
{
    c->host = cfg->host ? strdup(cfg->host) : NULL;
    c->unix_path = cfg->unix_path ? strdup(cfg->unix_path) : NULL;
    c->password = cfg->password ? strdup(cfg->password) : NULL;
    if ((cfg->host && !c->host) || (cfg->unix_path && !c->unix_path) ||
        (cfg->password && !c->password))
        return LW_ENOMEM;
    c->scratch_argv = malloc((2 * cfg->renew_batch + 1) * sizeof *c->scratch_argv);
    c->scratch_lens = malloc((2 * cfg->renew_batch + 1) * sizeof *c->scratch_lens);
    c->scratch_fields = malloc((size_t)cfg->renew_batch * FIELD_MAX);
    return c->scratch_argv && c->scratch_lens && c->scratch_fields ? 0 : LW_ENOMEM;
}

static void free_client(struct lw_client *c)
{
    free(c->host);
    free(c->unix_path);
    free(c->password);
    free(c->scratch_argv);
    free(c->scratch_lens);
    free(c->scratch_fields);
    free(c);
}

static int copy_config(struct lw_client *c, const struct lw_client_config *cfg)
{
    if (cfg->client_id)
        snprintf(c->id, sizeof c->id, "%s", cfg->client_id);
    else
        random_id(c->id);
    c->id_len = strlen(c->id);
    c->tick_ns = cfg->tick_ms * 1000000ull;
    c->lease_ms = cfg->watchdog_timeout_ms;
    c->lease_len = (size_t)snprintf(c->lease_str, sizeof c->lease_str, "%llu",
                                    (unsigned long long)c->lease_ms);
    c->renew_batch = cfg->renew_batch;
    c->batches_max = cfg->renew_batches_inflight;
    c->on_lost = cfg->on_lost;
    c->lost_arg = cfg->lost_arg;
    c->port = cfg->port;
    c->connect_timeout_ms = cfg->connect_timeout_ms;
    c->reconnect_min_ms = cfg->reconnect_min_ms;
    c->reconnect_max_ms = cfg->reconnect_max_ms;
    return copy_strings(c, cfg);
}

static void engine_config(const struct lw_client_config *cfg, struct lw_client *c,
                          struct lw_engine_config *ec)
{
    lw_engine_config_init(ec);
    ec->host = cfg->host;
    ec->port = cfg->port;
    ec->unix_path = cfg->unix_path;
    ec->password = cfg->password;
    ec->db = cfg->db;
    ec->connect_timeout_ms = cfg->connect_timeout_ms;
    ec->command_timeout_ms = cfg->command_timeout_ms;
    ec->max_inflight = cfg->max_inflight;
    ec->reconnect_min_ms = cfg->reconnect_min_ms;
    ec->reconnect_max_ms = cfg->reconnect_max_ms;
    ec->scripts = lw_lock_scripts;
    ec->nscripts = SCRIPT_COUNT;
    ec->wheel.tick_ns = c->tick_ns;
    ec->wheel.slots = cfg->slots;
    ec->on_tick = on_tick;
    ec->tick_arg = c;
}

/* Engine thread: the subscriber lives on the engine's loop. */
static void start_subscriber(struct lw_request *req, const redisReply *reply, int err,
                             void *arg)
{
    struct lw_client *c = arg;
    struct lw_sub_config sc = {
        .host = c->host,
        .port = c->port,
        .unix_path = c->unix_path,
        .password = c->password,
        .connect_timeout_ms = c->connect_timeout_ms,
        .reconnect_min_ms = c->reconnect_min_ms,
        .reconnect_max_ms = c->reconnect_max_ms,
        .loop = lw_engine_loop(c->engine),
        .on_event = waiters_on_event,
        .arg = c,
    };

    (void)reply;
    if (!err)
        req->err = lw_sub_new(&sc, &c->sub);
}

int lw_client_new(const struct lw_client_config *given, struct lw_client **out)
{
    struct lw_client_config whole, *cfg = &whole;
    struct lw_engine_config ec;
    struct lw_request task;
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
        free_client(c);
        return rc;
    }
    engine_config(cfg, c, &ec);
    if ((rc = lw_engine_new(&ec, &c->engine))) {
        free_client(c);
        return rc;
    }
    c->wheel = lw_engine_wheel(c->engine);
    lw_request_init(&task);
    lw_request_task(&task);
    if ((rc = lw_engine_call(c->engine, &task, start_subscriber, c))) {
        lw_engine_free(c->engine);
        free_client(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Engine thread: stop everything that is not a request on the wire.  The
 * requests fail with LW_ESHUTDOWN when the engine stops, and their ops
 * with them. */
static void stop_client(struct lw_request *req, const redisReply *reply, int err, void *arg)
{
    struct lw_client *c = arg;

    (void)req;
    (void)reply;
    (void)err;
    c->closing = 1;
    waiters_shutdown(c);
    watchdog_shutdown(c);
    lw_sub_free(c->sub);
    c->sub = NULL;
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
        free_client(c);
}

int lw_client_free(struct lw_client *c)
{
    struct lw_request task;
    int rc;

    if (!c)
        return 0;
    if (atomic_load_explicit(&c->freed, memory_order_acquire))
        return LW_ESHUTDOWN; /* freed before, kept alive by a handle */
    lw_request_init(&task);
    lw_request_task(&task);
    if ((rc = lw_engine_call(c->engine, &task, stop_client, c)) == LW_EDEADLK)
        return rc;
    lw_engine_free(c->engine);
    /* The ops in flight have completed, leaving their channels; what is
     * left is memory only (the wheel went with the engine). */
    c->engine = NULL;
    c->wheel = NULL;
    waiters_shutdown(c);
    watchdog_shutdown(c);
    atomic_store_explicit(&c->freed, 1, memory_order_release);
    client_unref(c);
    return 0;
}

const char *lw_client_id(const struct lw_client *c)
{
    return c->id;
}

static void get_stats(const struct lw_client *c, struct lw_client_stats *out)
{
    const struct client_counters *k = &c->count;

    out->locks_held = count_get(&k->locks_held);
    out->renewals_sent = count_get(&k->renewals_sent);
    out->renewals_confirmed = count_get(&k->renewals_confirmed);
    out->renewals_failed = count_get(&k->renewals_failed);
    out->renew_batches = count_get(&k->renew_batches);
    out->lost_not_owner = count_get(&k->lost_not_owner);
    out->lost_errors = count_get(&k->lost_errors);
    out->lost_expired = count_get(&k->lost_expired);
    out->worst_renewal_lag_ns = count_get(&k->worst_lag_ns);
    out->waiters = count_get(&k->waiters);
    out->subscriptions = count_get(&k->subscriptions);
    out->lost_late = count_get(&k->lost_late);
    out->worst_lost_late_ns = count_get(&k->worst_lost_late_ns);
    out->acquired_too_late = count_get(&k->acquired_too_late);
    out->worst_tick_late_ns = 0;
    if (c->wheel) {
        struct lw_wheel_stats ws;

        lw_wheel_get_stats(c->wheel, &ws);
        out->worst_tick_late_ns = ws.worst_lag_ns;
    }
    for (unsigned i = 0; i < LW_LAG_BUCKETS; i++)
        out->renewal_lag[i] = count_get(&k->lag[i]);
}

void lw_client_get_stats_size(const struct lw_client *c, struct lw_client_stats *out,
                              size_t size)
{
    struct lw_client_stats all;

    if (!c || !out)
        return;
    get_stats(c, &all);
    memcpy(out, &all, size < sizeof all ? size : sizeof all);
    if (size > sizeof all) /* a newer header's counters: this library has none */
        memset((char *)out + sizeof all, 0, size - sizeof all);
}

/* Log-linear buckets of microseconds: 8 exact ones, then 8 per doubling. */
#define LAG_SUB 8u
#define LAG_MAX_US ((1ull << 35) - 1)

unsigned lag_bucket(uint64_t lag_ns)
{
    uint64_t us = lag_ns / 1000u;
    unsigned top;

    if (us < LAG_SUB)
        return (unsigned)us;
    if (us > LAG_MAX_US)
        us = LAG_MAX_US;
    top = 63u - (unsigned)__builtin_clzll(us); /* 3 and up */
    return LAG_SUB + (top - 3u) * LAG_SUB + (unsigned)((us >> (top - 3u)) & (LAG_SUB - 1));
}

uint64_t lw_lag_bucket_floor_ns(unsigned bucket)
{
    unsigned top, sub;

    if (bucket < LAG_SUB)
        return bucket * 1000ull;
    top = (bucket - LAG_SUB) / LAG_SUB + 3u;
    sub = (bucket - LAG_SUB) % LAG_SUB;
    return ((uint64_t)(LAG_SUB + sub) << (top - 3u)) * 1000ull;
}

uint64_t lw_stats_lag_ns(const struct lw_client_stats *s, double q)
{
    uint64_t total = 0, seen = 0, rank;
    unsigned i, last = 0;

    for (i = 0; i < LW_LAG_BUCKETS; i++)
        if (s->renewal_lag[i]) {
            total += s->renewal_lag[i];
            last = i;
        }
    if (total == 0)
        return 0;
    q = q < 0 ? 0 : q > 1 ? 1 : q;
    rank = (uint64_t)(q * (double)total + 0.5);
    rank = rank < 1 ? 1 : rank;
    for (i = 0; i < last; i++)
        if ((seen += s->renewal_lag[i]) >= rank)
            break;
    return lw_lag_bucket_floor_ns(i + 1);
}

const char *lw_lost_reason_name(int reason)
{
    switch (reason) {
    case LW_LOST_NOT_OWNER: return "not owner";
    case LW_LOST_ERRORS: return "errors";
    case LW_LOST_EXPIRED: return "expired";
    default: return "unknown";
    }
}
