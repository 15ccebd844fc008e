#!/bin/sh
# lwbench --kind multi: a short run of multi-locks (500 sets of 4 names)
# on its private redis-server holds, loses none, says the kind in its
# table and its JSON (names_per_lock), and measures the lock ceiling; a
# --locks that is no multiple of the set drops the remainder.  $1: the
# lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() {
    echo "lwbench --kind multi: $1" >&2
    fails=1
}

"$lwbench" --kind multi --names-per-lock 4 --locks 2002 --lease-ms 6000 --tick-ms 10 \
    --duration-s 2 --json "$work/run.json" >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "status $code, not 0 (held)"
grep -q '^kind multi: the "locks" are names, 4 to a multi-lock' "$work/out" ||
    fail "the table does not say the kind"
python3 - "$work/run.json" <<'PY' || fail "the JSON is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
assert d["kind"] == "multi" and d["names_per_lock"] == 4, d
assert r["locks"] == 2000 and r["lost"] == 0 and r["held"], r
assert r["ceiling_keys_per_s"] > 0, r
PY
# Bad usage: --names-per-lock out of range.
for args in "--names-per-lock 0" "--names-per-lock 65" "--kind multi --names-per-lock x"; do
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
