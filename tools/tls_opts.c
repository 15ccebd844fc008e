/* tools/tls_opts.c - see tls_opts.h. */
#include "tls_opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "why.h"

/* A name to send as SNI: one word, at most TLS_SNI_MAX bytes.  (Not
 * quoted in the message: it may hold control characters.) */
static int check_sni(const char *s, char *why, size_t n)
{
    size_t len = strlen(s);

    if (len > TLS_SNI_MAX)
        return why_fail(why, n, "--sni NAME longer than %d bytes", TLS_SNI_MAX);
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)s[i]) || iscntrl((unsigned char)s[i]))
            return why_fail(why, n, "--sni NAME holds a blank or a control character");
    return 0;
}

int tls_opt_take(struct lw_tls_config *t, int opt, const char *arg, char *why, size_t n)
{
    static const char *const names[] = {"--cacert", "--cacertdir", "--cert", "--key", "--sni"};
    const char **field = NULL;

    switch (opt) {
    case TLS_OPT_TLS:
        t->enable = 1;
        return 1;
    case TLS_OPT_INSECURE:
        t->insecure = 1;
        return 1;
    case TLS_OPT_CACERT: field = &t->ca_file; break;
    case TLS_OPT_CACERTDIR: field = &t->ca_dir; break;
    case TLS_OPT_CERT: field = &t->cert_file; break;
    case TLS_OPT_KEY: field = &t->key_file; break;
    case TLS_OPT_SNI: field = &t->server_name; break;
    default: return 0;
    }
    if (!arg || !arg[0])
        return why_fail(why, n, "%s needs a value, not ''", names[opt - TLS_OPT_CACERT]);
    if (opt == TLS_OPT_SNI && check_sni(arg, why, n))
        return -1;
    *field = arg;
    return 1;
}

/* The first flag given that only makes sense with TLS, or NULL. */
static const char *tls_only_flag(const struct lw_tls_config *t)
{
    return t->ca_file       ? "--cacert"
           : t->ca_dir      ? "--cacertdir"
           : t->cert_file   ? "--cert"
           : t->key_file    ? "--key"
           : t->server_name ? "--sni"
           : t->insecure    ? "--insecure"
                            : NULL;
}

int tls_opts_finish(struct lw_tls_config *t, int url_tls, char *why, size_t n)
{
    const char *flag = tls_only_flag(t);

    if (url_tls)
        t->enable = 1;
    if (flag && !t->enable)
        return why_fail(why, n, "%s needs --tls (or a rediss:// or rediss-sentinel:// address)",
                        flag);
    if (t->cert_file && !t->key_file)
        return why_fail(why, n, "--cert needs --key (the certificate's private key)");
    if (t->key_file && !t->cert_file)
        return why_fail(why, n, "--key needs --cert (the certificate it is the key of)");
    return 0;
}

/* One path: readable, and a directory or not as want_dir says. */
static int check_path(const char *flag, const char *path, int want_dir, char *why, size_t n)
{
    struct stat st;

    if (!path)
        return 0;
    if (stat(path, &st))
        return why_fail(why, n, "%s %s: %s", flag, path, strerror(errno));
    if (want_dir && !S_ISDIR(st.st_mode))
        return why_fail(why, n, "%s %s: not a directory", flag, path);
    if (!want_dir && S_ISDIR(st.st_mode))
        return why_fail(why, n, "%s %s: a directory, not a file", flag, path);
    if (access(path, want_dir ? R_OK | X_OK : R_OK))
        return why_fail(why, n, "%s %s: %s", flag, path, strerror(errno));
    return 0;
}

int tls_opts_files(const struct lw_tls_config *t, char *why, size_t n)
{
    return check_path("--cacert", t->ca_file, 0, why, n) ||
                   check_path("--cacertdir", t->ca_dir, 1, why, n) ||
                   check_path("--cert", t->cert_file, 0, why, n) ||
                   check_path("--key", t->key_file, 0, why, n)
               ? -1
               : 0;
}

int tls_sentinel_env(const char *value, char *why, size_t n)
{
    if (!value || !value[0])
        return 0;
    if (strcmp(value, "0") == 0)
        return 1;
    return why_fail(why, n, "LWLOCK_SENTINEL_TLS must be 0 (plain sentinels) or unset (the "
                            "sentinels as the master: TLS or not)");
}
