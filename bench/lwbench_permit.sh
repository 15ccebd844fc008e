#!/bin/sh
# lwbench --kind permit: a short run of permits (5 semaphores of 100) on
# its private redis-server holds, loses none, says the kind in its table
# and its JSON, and measures the permit ceiling.  $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() {
    echo "lwbench --kind permit: $1" >&2
    fails=1
}

"$lwbench" --kind permit --locks 500 --per-semaphore 100 --lease-ms 6000 --tick-ms 10 \
    --duration-s 2 --json "$work/run.json" >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "status $code, not 0 (held)"
grep -q '^kind permit: the "locks" are permits, 100 to a semaphore' "$work/out" ||
    fail "the table does not say the kind"
python3 - "$work/run.json" <<'PY' || fail "the JSON is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
assert d["kind"] == "permit" and d["per_semaphore"] == 100, d
assert r["locks"] == 500 and r["lost"] == 0 and r["held"], r
assert r["ceiling_keys_per_s"] > 0 and r["single_key_keys_per_s"] > 0, r
PY
# Bad usage: an unknown kind, --cluster, --per-semaphore out of range.
for args in "--kind rw" "--kind permit --cluster" "--per-semaphore 0" "--per-semaphore 1001"; do
    # shellcheck disable=SC2086 # the words are the options
    "$lwbench" $args >/dev/null 2>&1
    c=$?
    [ "$c" = 64 ] || fail "'$args': status $c, not 64"
done
if [ "$fails" != 0 ]; then
    echo "[stdout]" >&2
    cat "$work/out" >&2
    echo "[stderr]" >&2
    cat "$work/err" >&2
fi
exit "$fails"
