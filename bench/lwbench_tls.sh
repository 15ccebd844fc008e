#!/bin/sh
# A short lwbench run over TLS on its private TLS-only redis-server (or,
# with --cluster, cluster): held, its header says "over TLS" and so does
# its JSON, and the throwaway CA, certificates and servers' directories
# are gone afterwards.  The servers serve no plain TCP, so lwbench's own
# connections (PING, INFO, the ceiling, the DELs) pass only over TLS.
# $1: the lwbench to run; the rest: more options (--cluster).
lwbench=$1
shift
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
fails=0

TMPDIR=$work/tmp "$lwbench" --tls "$@" --locks 2000 --lease-ms 3000 --tick-ms 10 \
    --duration-s 2 --json "$work/run.json" >"$work/out" 2>"$work/err"
code=$?
fail() {
    echo "lwbench --tls $*: $1" >&2
    fails=1
}
[ "$code" = 0 ] || fail "status $code, not 0"
head -n 1 "$work/out" | grep -q "(private.* over TLS$" || fail "the header does not say a private server over TLS"
grep -q '"tls": true' "$work/run.json" 2>/dev/null || fail 'no "tls": true in the JSON'
grep -q '"held": true' "$work/run.json" 2>/dev/null || fail 'not held'
[ -z "$(ls -A "$work/tmp")" ] || fail "left behind: $(ls -A "$work/tmp")"
if [ "$fails" != 0 ]; then
    echo "[stdout]" >&2
    cat "$work/out" >&2
    echo "[stderr]" >&2
    cat "$work/err" >&2
else
    cat "$work/out"
fi
exit "$fails"
