#!/bin/sh
# lwbench -v: the library's log lines on stderr, "lwbench: LEVEL: ...".  A
# short run on its private redis-server, whose connections are killed once
# the locks are held (CLIENT KILL through the server's unix socket): the
# client says the loss (warn) and the reconnect (info), and the run holds
# on.  $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
mkdir "$work/tmp"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() {
    echo "lwbench -v: $1" >&2
    fails=1
}

TMPDIR=$work/tmp "$lwbench" -v --locks 100 --lease-ms 3000 --tick-ms 10 --duration-s 3 \
    >"$work/out" 2>"$work/err" &
pid=$!
# Held: its first progress line.  At most 20 s.
tries=0
until grep -q "^lwbench: holding 100 locks" "$work/err" 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        fail "the run never held its locks"
        break
    fi
    sleep 0.1
done
sock=$(ls "$work"/tmp/*/redis.sock 2>/dev/null | head -n 1)
if [ "$fails" = 0 ] && [ -n "$sock" ]; then
    killed=$(redis-cli -s "$sock" CLIENT KILL TYPE normal)
    [ "${killed:-0}" -ge 1 ] 2>/dev/null || fail "CLIENT KILL killed none: $killed"
elif [ "$fails" = 0 ]; then
    fail "no private redis-server's socket under TMPDIR"
fi
wait "$pid"
code=$?
pid=
[ "$code" = 0 ] || fail "status $code, not 0"
grep -qE "^lwbench: warn: 127\.0\.0\.1:[0-9]+: " "$work/err" ||
    fail "no 'lwbench: warn: 127.0.0.1:PORT: ...' line for the killed connection"
grep -qE "^lwbench: info: 127\.0\.0\.1:[0-9]+: connection restored$" "$work/err" ||
    fail "no 'lwbench: info: 127.0.0.1:PORT: connection restored' line"
if [ "$fails" != 0 ]; then
    echo "[stderr]" >&2
    cat "$work/err" >&2
else
    grep -E "^lwbench: (warn|info|error): " "$work/err"
fi
exit "$fails"
