/*
 * tests/fuzz/fuzz_config.c - lw_client_new's validation of its config.
 *
 * Input, in order (a field the input ends before keeps its default):
 *   byte 0: bits 0-1 host: NULL, "", "127.0.0.1", "127.0.0.1";
 *           bits 2-3 unix_path: NULL, NULL, "", a path in our directory;
 *           bit 4 client_id set, bit 5 password set (from the strings);
 *           bit 6: the two TLS bytes below are there
 *   12 x 4 bytes, little-endian: port, db (signed), connect, command,
 *           reconnect min and max timeouts, max_inflight, watchdog
 *           timeout, renew_batch, renew_batches_inflight, tick_ms, slots
 *   with bit 6, 2 bytes: tls, then sentinel_tls: bit 0 enable, bit 1
 *           insecure, bits 2-5 ca_file, ca_dir, cert_file, key_file set,
 *           bit 6 server_name set; tls's bit 7 is sentinel_tls_own
 *   the rest: client_id, password and socket name, NUL-separated; then,
 *           for tls and then sentinel_tls, the names of ca_file, ca_dir,
 *           cert_file and key_file and the server_name.
 *
 * Never off this machine, never to anyone else's server: the host is
 * never taken from the input, only NULL, "" or 127.0.0.1; a port the
 * library accepts (1..65535) is replaced by one this process keeps bound
 * and never listens on (connections to it are refused), and a unix path
 * is always under a fresh temporary directory of ours, where nothing
 * listens either.  So are the TLS files (never there: nothing is loaded);
 * ssl_ctx stays NULL.  A valid config starts the client's thread, which
 * tries to connect in the background, and is freed at once.
 *
 * Oracle: from lock.h's rules (and engine.h's, for the connection
 * fields), the set of codes the config must be refused with; it must be
 * refused with one of them, or accepted (0) when the set is empty.  TLS
 * (tls.h): settings without enable, a certificate without its key, TLS
 * over a unix socket, sentinel_tls without sentinel_tls_own or
 * sentinel_tls_own without sentinels are LW_EINVAL; enable in a build
 * without TLS (LW_HAVE_TLS 0) is LW_ENOTSUP; files are loaded at the
 * first connection, not here.  An empty server_name may be refused or not.
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <leasewheel.h>

#include "fuzz_util.h"

/* Limits written in the headers (lock.h, adapters/engine.h). */
#define MAX_PORT 65535
#define MAX_DB 65535
#define MAX_TIMEOUT_MS 3600000u   /* LW_ENGINE_MAX_TIMEOUT_MS */
#define MAX_INFLIGHT (1u << 20)   /* LW_ENGINE_MAX_INFLIGHT */
#define MAX_TICK_MS 60000u        /* LW_MAX_TICK_MS */
#define MAX_SLOTS 65536u          /* LW_MAX_SLOTS */
#define MAX_BATCHES_INFLIGHT 65536u /* LW_MAX_RENEW_BATCHES_INFLIGHT */
#define MAX_NAME 200              /* socket name bytes used */

static char dir[256];       /* ours; nothing is ever created in it */
static int reserved_fd = -1;
static int reserved_port;   /* bound, never listening */

static void stop(void)
{
    close(reserved_fd);
    rmdir(dir);
}

static int reserve_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;

    reserved_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (reserved_fd < 0 || bind(reserved_fd, (struct sockaddr *)&sa, sizeof sa) ||
        getsockname(reserved_fd, (struct sockaddr *)&sa, &len))
        return -1;
    return ntohs(sa.sin_port);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");

    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "%s/lw-fuzz-config-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp %s", dir);
    FUZZ_CHECK((reserved_port = reserve_port()) > 0, "cannot reserve a port");
    atexit(stop);
    return 0;
}

/* The input, consumed from the front. */
struct input {
    const uint8_t *p;
    size_t n;
};

static void take_u32(struct input *in, uint32_t *v)
{
    if (in->n < 4) {
        in->n = 0;
        return;
    }
    *v = (uint32_t)in->p[0] | (uint32_t)in->p[1] << 8 | (uint32_t)in->p[2] << 16 |
         (uint32_t)in->p[3] << 24;
    in->p += 4;
    in->n -= 4;
}

static void take_int(struct input *in, int *v)
{
    uint32_t u = (uint32_t)*v;

    take_u32(in, &u);
    memcpy(v, &u, sizeof *v); /* two's complement, without overflow */
}

enum { BAD_INVAL = 1, BAD_RANGE = 2, BAD_LEASE = 4, BAD_NOTSUP = 8 };

/* BAD_INVAL for 0, BAD_RANGE over max. */
static int count_bad(uint64_t v, uint64_t max)
{
    return v == 0 ? BAD_INVAL : v > max ? BAD_RANGE : 0;
}

static int client_id_bad(const char *id)
{
    if (!id)
        return 0;
    if (!id[0])
        return BAD_INVAL;
    return strlen(id) > LW_CLIENT_ID_MAX || strchr(id, ':') ? BAD_RANGE : 0;
}

/* The connection's fields (engine.h). */
static int connection_bad(const struct lw_client_config *c, int raw_port)
{
    int bad = 0;

    if (c->unix_path)
        bad |= !c->unix_path[0] ? BAD_INVAL
               : strlen(c->unix_path) > LW_UNIX_PATH_MAX ? BAD_RANGE : 0;
    else if (!c->host || !c->host[0])
        bad |= BAD_INVAL;
    if (!c->unix_path && (raw_port < 1 || raw_port > MAX_PORT))
        bad |= BAD_RANGE;
    if (c->db < 0 || c->db > MAX_DB)
        bad |= BAD_RANGE;
    bad |= count_bad(c->connect_timeout_ms, MAX_TIMEOUT_MS) |
           count_bad(c->command_timeout_ms, MAX_TIMEOUT_MS) |
           count_bad(c->reconnect_min_ms, MAX_TIMEOUT_MS) |
           count_bad(c->reconnect_max_ms, MAX_TIMEOUT_MS) |
           count_bad(c->max_inflight, MAX_INFLIGHT);
    if (c->reconnect_min_ms > c->reconnect_max_ms)
        bad |= BAD_RANGE;
    return bad;
}

/* The set of codes c may be refused with; 0: it must be accepted. */
static int expected_bad(const struct lw_client_config *c, int raw_port)
{
    int bad = connection_bad(c, raw_port) | client_id_bad(c->client_id) |
              count_bad(c->tick_ms, MAX_TICK_MS) | count_bad(c->slots, MAX_SLOTS) |
              count_bad(c->renew_batch, LW_MAX_RENEW_BATCH) |
              count_bad(c->renew_batches_inflight, MAX_BATCHES_INFLIGHT) |
              count_bad(c->watchdog_timeout_ms, LW_MAX_LEASE_MS);

    if (c->watchdog_timeout_ms && (c->watchdog_timeout_ms < 3ull * c->tick_ms ||
                                   c->watchdog_timeout_ms < LW_MIN_LEASE_MS))
        bad |= BAD_LEASE;
    return bad;
}

/* Any TLS setting besides enable (ssl_ctx is never set here). */
static int tls_settings(const struct lw_tls_config *t)
{
    return t->ca_file || t->ca_dir || t->cert_file || t->key_file || t->server_name ||
           t->insecure;
}

/* The codes one lw_tls_config must be refused with (tls.h). */
static int tls_config_bad(const struct lw_tls_config *t)
{
    if (!t->enable) /* settings for TLS that is off: a mistake */
        return tls_settings(t) ? BAD_INVAL : 0;
    if (!LW_HAVE_TLS)
        return BAD_NOTSUP;
    return !t->cert_file != !t->key_file ? BAD_INVAL : 0; /* a certificate needs its key */
}

/* The TLS fields: the codes c must be refused with (added to *must), and
 * those it may be besides. */
static int tls_bad(const struct lw_client_config *c, int *must)
{
    *must |= tls_config_bad(&c->tls);
    /* "Not with unix_path (LW_EINVAL)" (tls.h). */
    if (c->tls.enable && c->unix_path)
        *must |= BAD_INVAL;
    /* The sentinels' own settings only with sentinel_tls_own, and that
     * only with sentinels, which this fuzzer never gives. */
    if (c->sentinel_tls_own || c->sentinel_tls.enable || tls_settings(&c->sentinel_tls))
        *must |= BAD_INVAL;
    /* An empty server name: left open. */
    return c->tls.enable && c->tls.server_name && !c->tls.server_name[0] ? BAD_INVAL : 0;
}

static int code_bit(int rc)
{
    return rc == LW_EINVAL    ? BAD_INVAL
           : rc == LW_ERANGE  ? BAD_RANGE
           : rc == LW_ELEASE  ? BAD_LEASE
           : rc == LW_ENOTSUP ? BAD_NOTSUP
                              : 0;
}

/* The numbers; the port as given (the config gets ours when valid). */
static void take_numbers(struct input *in, struct lw_client_config *c, int *raw_port)
{
    uint32_t *const fields[] = {&c->connect_timeout_ms, &c->command_timeout_ms,
                                &c->reconnect_min_ms, &c->reconnect_max_ms, &c->max_inflight,
                                &c->watchdog_timeout_ms, &c->renew_batch,
                                &c->renew_batches_inflight, &c->tick_ms, &c->slots};

    take_int(in, raw_port);
    take_int(in, &c->db);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        take_u32(in, fields[i]);
    c->port = *raw_port >= 1 && *raw_port <= MAX_PORT ? reserved_port : *raw_port;
}

/* A path under dir: dir/<tag><name>, no '/' in name, so always inside
 * dir (the socket's tag is 's', the TLS files' 'f'). */
static void path_in(char *path, size_t size, char tag, const char *name)
{
    size_t n = (size_t)snprintf(path, size, "%s/%c%.*s", dir, tag, MAX_NAME, name);

    for (size_t i = strlen(dir) + 1; i < n && i < size; i++)
        if (path[i] == '/')
            path[i] = '_';
}

/* The TLS files' paths (4 for tls, 4 for sentinel_tls); the server names
 * are the input's strings. */
struct tls_strings {
    char files[2][4][sizeof dir + MAX_NAME + 2];
};

/* One lw_tls_config from its flags byte and the strings from piece k on
 * (5 of them: 4 file names, the server name); the next piece. */
static int take_tls(struct lw_tls_config *t, uint8_t flags, const struct fuzz_pieces *s, int k,
                    char (*files)[sizeof dir + MAX_NAME + 2])
{
    const char **fields[] = {&t->ca_file, &t->ca_dir, &t->cert_file, &t->key_file};

    t->enable = flags & 1;
    t->insecure = flags >> 1 & 1;
    for (int i = 0; i < 4; i++, k++)
        if (flags >> (2 + i) & 1) {
            path_in(files[i], sizeof files[i], 'f', k < s->n ? s->p[k] : "");
            *fields[i] = files[i];
        }
    if (flags >> 6 & 1)
        t->server_name = k < s->n ? s->p[k] : "";
    return k + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const hosts[] = {NULL, "", "127.0.0.1", "127.0.0.1"};
    struct input in = {data + 1, size ? size - 1 : 0};
    struct fuzz_pieces s = {0, NULL, NULL};
    struct lw_client_config cfg;
    struct lw_client *client = NULL;
    static struct tls_strings ts;
    char path[sizeof dir + MAX_NAME + 2];
    uint8_t tls[2] = {0, 0};
    int raw_port, bad, maybe, rc;

    if (size == 0)
        return 0;
    lw_client_config_init(&cfg);
    raw_port = cfg.port;
    take_numbers(&in, &cfg, &raw_port);
    for (int i = 0; i < 2 && data[0] & 64 && in.n; i++, in.p++, in.n--)
        tls[i] = in.p[0];
    fuzz_split(in.p, in.n, 0, &s);
    cfg.host = hosts[data[0] & 3];
    if ((data[0] >> 2 & 3) == 2)
        cfg.unix_path = "";
    if ((data[0] >> 2 & 3) == 3) {
        path_in(path, sizeof path, 's', s.n > 2 ? s.p[2] : "");
        cfg.unix_path = path;
    }
    if (data[0] & 16)
        cfg.client_id = s.p[0];
    if (data[0] & 32)
        cfg.password = s.n > 1 ? s.p[1] : "";
    take_tls(&cfg.sentinel_tls, tls[1], &s, take_tls(&cfg.tls, tls[0], &s, 3, ts.files[0]),
             ts.files[1]);
    cfg.sentinel_tls_own = tls[0] >> 7 & 1;
    FUZZ_CHECK(lw_client_new(NULL, &client) == LW_EINVAL, "NULL config");
    FUZZ_CHECK(lw_client_new(&cfg, NULL) == LW_EINVAL, "NULL out");
    bad = expected_bad(&cfg, raw_port);
    maybe = tls_bad(&cfg, &bad);
    rc = lw_client_new(&cfg, &client);
    if (bad)
        FUZZ_CHECK(code_bit(rc) & (bad | maybe), "%s, expected one of:%s%s%s%s", lw_errname(rc),
                   bad & BAD_INVAL ? " LW_EINVAL" : "", bad & BAD_RANGE ? " LW_ERANGE" : "",
                   bad & BAD_LEASE ? " LW_ELEASE" : "", bad & BAD_NOTSUP ? " LW_ENOTSUP" : "");
    else
        FUZZ_CHECK((rc == 0 && client) || (code_bit(rc) & maybe), "a valid config refused: %s",
                   lw_errname(rc));
    if (rc == 0)
        FUZZ_CHECK(lw_client_free(client) == 0, "free failed");
    fuzz_pieces_free(&s);
    return 0;
}
