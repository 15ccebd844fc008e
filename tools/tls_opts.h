/*
 * tools/tls_opts.h - the TLS flags lwlock and lwbench take, as redis-cli
 * spells them, into a struct lw_tls_config (the client config's tls):
 *
 *   --tls              enable (also set by a rediss:// or
 *                      rediss-sentinel:// address)
 *   --cacert FILE      ca_file
 *   --cacertdir DIR    ca_dir
 *   --cert FILE        cert_file, with --key
 *   --key FILE         key_file, with --cert
 *   --sni NAME         server_name: sent, and required in the certificate
 *   --insecure         insecure: verify nothing.  --cacert and --cacertdir
 *                      are allowed with it, as redis-cli allows them (and
 *                      then unused)
 *
 * The flags other than --tls need TLS (--tls or a rediss address): a
 * --cacert on a plain connection would verify nothing while seeming to.
 * The string fields point at the values given (argv), never copied.
 *
 * Parsing is pure (tls_opt_take, tls_opts_finish): no environment, no
 * file system, no output; errors are a sentence in the caller's buffer.
 * tls_opts_files() is the one that looks at the files.
 */
#ifndef LW_TOOLS_TLS_OPTS_H
#define LW_TOOLS_TLS_OPTS_H

#include <getopt.h>
#include <stddef.h>

#include <leasewheel/tls.h>

/* getopt_long() values of the flags: above both tools' own. */
enum {
    TLS_OPT_TLS = 0x7100,
    TLS_OPT_CACERT,
    TLS_OPT_CACERTDIR,
    TLS_OPT_CERT,
    TLS_OPT_KEY,
    TLS_OPT_SNI,
    TLS_OPT_INSECURE,
};

/* Their entries in a struct option array. */
/* clang-format off */
#define TLS_LONG_OPTIONS                                       \
    {"tls", no_argument, NULL, TLS_OPT_TLS},                   \
    {"cacert", required_argument, NULL, TLS_OPT_CACERT},       \
    {"cacertdir", required_argument, NULL, TLS_OPT_CACERTDIR}, \
    {"cert", required_argument, NULL, TLS_OPT_CERT},           \
    {"key", required_argument, NULL, TLS_OPT_KEY},             \
    {"sni", required_argument, NULL, TLS_OPT_SNI},             \
    {"insecure", no_argument, NULL, TLS_OPT_INSECURE}
/* clang-format on */

#define TLS_SNI_MAX 255 /* bytes: a DNS name's */

/*
 * tls_opt_take - one getopt_long() result opt, with its value arg, into
 * *t.  1 when opt is one of the TLS_OPT_* (taken), 0 when it is none of
 * them (nothing done), -1 with why (n bytes) when its value is bad.
 */
int tls_opt_take(struct lw_tls_config *t, int opt, const char *arg, char *why, size_t n);

/*
 * tls_opts_finish - after the last flag: TLS on when the address asked for
 * it (url_tls: rediss:// or rediss-sentinel://), and the flags checked
 * together.  0, or -1 with why.
 */
int tls_opts_finish(struct lw_tls_config *t, int url_tls, char *why, size_t n);

/*
 * tls_opts_files - the files named can be read, and --cacertdir is a
 * directory that can be: 0, or -1 with why ("--cacert FILE: ...").  Not
 * whether they hold what they should: the library says that (LW_ETLS).
 */
int tls_opts_files(const struct lw_tls_config *t, char *why, size_t n);

/*
 * tls_sentinel_env - $LWLOCK_SENTINEL_TLS (value, NULL when unset): 0 when
 * unset or empty (the sentinels are reached as the data nodes are), 1 for
 * "0" (plain sentinels: sentinel_tls_own = 1, sentinel_tls off), -1 with
 * why for anything else.
 */
int tls_sentinel_env(const char *value, char *why, size_t n);

#endif
