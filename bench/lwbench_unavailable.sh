#!/bin/sh
# lwbench at a Redis it cannot use: status 69 and one line on stderr that
# says why, before anything is measured.  One redis-server serves a plain
# port and a TLS port with a self-signed certificate made here (openssl),
# which the system's trust store does not know (redis-cli trusting it
# checks that the server works): an unknown certificate (rediss://), plain
# text at the TLS port, TLS at the plain port (within lwbench's connect
# timeout, 5 s), and a closed port.  And a Redis out of memory: its words
# in the message.
# $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fails=0

# Three loopback ports nobody listens on (held together, so distinct).
free_ports() {
    python3 -I -S -c 'import socket
s = [socket.socket() for _ in range(3)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])'
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" -subj /CN=lwbench-test \
    -addext subjectAltName=IP:127.0.0.1 >"$work/openssl.log" 2>&1 ||
    { cat "$work/openssl.log" >&2; exit 1; }
set -- $(free_ports)
plain=$1 tls=$2 closed=$3
redis-server --port "$plain" --tls-port "$tls" --bind 127.0.0.1 --save '' --appendonly no \
    --tls-cert-file "$work/cert.pem" --tls-key-file "$work/key.pem" \
    --tls-ca-cert-file "$work/cert.pem" --tls-auth-clients no --dir "$work" \
    >"$work/redis.log" 2>&1 &
pid=$!
i=0
until redis-cli --tls --cacert "$work/cert.pem" -p "$tls" PING 2>/dev/null | grep -q PONG; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { echo "redis-server did not start" >&2; cat "$work/redis.log" >&2; exit 1; }
    sleep 0.1
done

# expect FRAGMENT ARGS...: status 69, and one line on stderr holding
# FRAGMENT.
expect() {
    says=$1
    shift
    "$lwbench" "$@" >"$work/out" 2>"$work/err"
    code=$?
    if [ "$code" != 69 ]; then
        echo "lwbench $*: status $code, not 69" >&2
        fails=1
    fi
    grep -qF -- "$says" "$work/err" || { echo "lwbench $*: no '$says'" >&2; fails=1; }
    [ "$(wc -l <"$work/err")" = 1 ] || { echo "lwbench $*: not one line" >&2; fails=1; }
    [ "$fails" = 0 ] || cat "$work/err" >&2
}

expect "certificate verify failed" -r "rediss://127.0.0.1:$tls"
expect "a TLS port?" -r "127.0.0.1:$tls"
expect "not a TLS port?" --tls --insecure -r "127.0.0.1:$plain"
expect "refused" -r "127.0.0.1:$closed"

# A Redis that refuses the lock commands (out of memory): Redis's own
# words in the message, and no run.
redis-cli -p "$plain" CONFIG SET maxmemory 1 >/dev/null
"$lwbench" -r "127.0.0.1:$plain" --locks 100 --duration-s 1 --no-ceiling >"$work/out" 2>"$work/err"
code=$?
redis-cli -p "$plain" CONFIG SET maxmemory 0 >/dev/null
if [ "$code" = 0 ] ||
    ! grep -qF "(Redis: OOM command not allowed when used memory > 'maxmemory'.)" "$work/err"; then
    echo "lwbench at a Redis out of memory: status $code, no words of Redis's" >&2
    cat "$work/err" >&2
    fails=1
fi
exit $fails
