/*
 * leasewheel/tls.h - TLS settings for a client's connections (struct
 * lw_tls_config, in struct lw_client_config's tls and sentinel_tls).
 */
#ifndef LEASEWHEEL_TLS_H
#define LEASEWHEEL_TLS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * TLS.  With `enable` every connection of the kind (data nodes, or
 * sentinels) is made over TLS (OpenSSL), the handshake part of the connect
 * and inside connect_timeout_ms.  The server is verified by default, both
 * its certificate chain (against ca_file and ca_dir, or the system's trust
 * store when neither is given) and its name: server_name if set, else the
 * host connected to (an IP address is checked against the certificate's IP
 * addresses); only `insecure` turns verification off.  A failure is
 * LW_ETLS, and lw_client_last_error() has OpenSSL's reason.  Before a first
 * connection was set up, calls fail with it at once, as with a refused
 * connection.
 *
 * Certificates on disk may be replaced while the client runs (a rotation):
 * before each new connection the files' size and times are looked at, and
 * changed files are loaded again.  Files that do not load (a key that does
 * not match the certificate, a file half-written) leave the previous ones
 * in use, and the connection goes on with them; the first connection after
 * each such change records LW_ETLS with the reason for
 * lw_client_last_error() and says it in the log as a warning ("TLS files
 * not reloaded, the previous ones kept: loading the key ...: key values
 * mismatch").  Connections already up go on with what they were made
 * with.  Reconnects resume the previous TLS
 * session with the same server where it allows, so that a reconnect storm
 * does not cost a full handshake each.
 *
 * Not with unix_path (LW_EINVAL): Redis serves TLS on TCP only.  In a build
 * without TLS (meson -Dtls=disabled) enabling it is LW_ENOTSUP.
 */
struct lw_tls_config {
    int enable;              /* 1: TLS; 0 (default): plain TCP */
    const char *ca_file;     /* PEM certificates of the CAs to trust, or NULL */
    const char *ca_dir;      /* a directory of hashed CA certificates
                                (openssl rehash), or NULL */
    const char *cert_file;   /* the client's certificate (chain), PEM, for
                                servers that ask for one (mutual TLS) */
    const char *key_file;    /* its private key, PEM; with cert_file */
    const char *server_name; /* sent as SNI and required in the server's
                                certificate; NULL: the host connected to */
    int insecure;            /* 1: verify nothing (chain, name); 0 (default) */
    void *ssl_ctx;           /* an SSL_CTX * of the caller's, used as it is
                                (trust, certificates, verify mode) instead
                                of the files above: the caller keeps it
                                alive; server_name still applies */
};

#ifdef __cplusplus
}
#endif

#endif
