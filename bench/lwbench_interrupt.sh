#!/bin/sh
# SIGINT and SIGTERM in the middle of a run: lwbench stops at once, says
# "interrupted" with what it measured until then (the row's held "int",
# no ceiling; the JSON's "interrupted"), deletes its keys, and ends as the
# signal ends a command: status 130 for SIGINT, 143 for SIGTERM, as a
# shell shows it.  On a Redis started here, during the hold, while
# acquiring, during the ceiling (the run held: it stands) and the count
# down before it (no flood); on its
# private redis-server with SIGINT sent to the whole process group, as a
# terminal's Ctrl-C is (the server stops with it: no error).
# $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
# shellcheck source=SCRIPTDIR/../tests/redis_server.sh
. "$(dirname "$0")/../tests/redis_server.sh"
pid= run=
trap '[ -n "$run" ] && kill -9 "$run" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"' EXIT
fails=0
fail() { echo "lwbench interrupted: $*" >&2; fails=1; }

start_redis

# stop SIGNAL WHEN ARGS...: an lwbench run with ARGS, sent SIGNAL once
# its stderr has a line matching WHEN (at most 30 s); $code its status,
# $work/out and $work/err what it said.  "-" before SIGNAL: to its
# process group (it leads one of its own, made with setsid).
stop() {
    sig=$1 when=$2
    shift 2
    rm -f "$work/out" "$work/err" "$work/run.json" # not the last run's lines
    if [ "${sig#-}" != "$sig" ]; then
        setsid "$lwbench" "$@" --json "$work/run.json" >"$work/out" 2>"$work/err" &
    else
        "$lwbench" "$@" --json "$work/run.json" >"$work/out" 2>"$work/err" &
    fi
    run=$!
    i=0
    until grep -q "$when" "$work/err" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 300 ] || ! kill -0 "$run" 2>/dev/null; then
            fail "$*: no '$when' line: $(cat "$work/err")"
            break
        fi
        sleep 0.1
    done
    if [ "${sig#-}" != "$sig" ]; then
        [ "$(ps -o pgid= -p "$run" | tr -d ' ')" = "$run" ] ||
            fail "$*: lwbench does not lead a process group of its own"
        python3 -I -S -c 'import os, signal, sys
os.killpg(int(sys.argv[1]), getattr(signal, "SIG" + sys.argv[2]))' "$run" "${sig#-}"
    else
        kill "-$sig" "$run"
    fi
    # Bounded: a run that does not stop within 30 s fails.
    i=0
    while kill -0 "$run" 2>/dev/null && [ "$i" -lt 300 ]; do
        i=$((i + 1))
        sleep 0.1
    done
    kill -0 "$run" 2>/dev/null && fail "$*: still running 30 s after SIG${sig#-}"
    wait "$run"
    code=$?
    run=
}

# expect STATUS WHAT: the run stopped as it should have.
expect() {
    [ "$code" = "$1" ] || fail "$2: status $code, not $1: $(cat "$work/err")"
    grep -q "interrupted" "$work/out" || fail "$2: 'interrupted' not in the table: $(cat "$work/out")"
    grep -q "^lwbench: interrupted by SIG" "$work/err" ||
        fail "$2: no 'interrupted by' line: $(cat "$work/err")"
    grep -q "held NO\| NO " "$work/out" && fail "$2: a row says NO: $(cat "$work/out")"
    grep -q "could not\|failed" "$work/err" && fail "$2: an error: $(cat "$work/err")"
    python3 -I -S - "$work/run.json" "$3" <<'PY' || fail "$2: the JSON: $(cat "$work/run.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["interrupted"] == sys.argv[2], doc["interrupted"]
PY
    [ "$(redis-cli -p "$port" DBSIZE)" = 0 ] ||
        fail "$2: keys left: $(redis-cli -p "$port" --scan | head -3)"
}

given="-r 127.0.0.1:$port --no-cleanup"
# During the hold: its part measured, held "int", no ceiling.
# shellcheck disable=SC2086 # $given: the words are the options
stop INT "holding 2000 locks" $given --locks 2000 --lease-ms 3s --tick-ms 10 --duration-s 30
expect 130 "SIGINT while holding" SIGINT
grep -q "^     2000  int " "$work/out" || fail "the row is not 'int': $(cat "$work/out")"
grep -q "2000 locks: interrupted [0-9.]* s into a hold of 30.0 s" "$work/out" ||
    fail "the hold's part not said: $(cat "$work/out")"
grep -q "^ceiling: not measured (" "$work/out" ||
    fail "the ceiling not said to be unmeasured: $(cat "$work/out")"
# shellcheck disable=SC2086
stop TERM "holding 2000 locks" $given --locks 2000 --lease-ms 3s --tick-ms 10 --duration-s 30
expect 143 "SIGTERM while holding" SIGTERM
# While acquiring: permits' acquires are spread over a renewal period,
# 20 s here.
# shellcheck disable=SC2086
stop INT "acquiring" $given --kind permit --per-semaphore 10 --locks 2000 --lease-ms 60s \
    --duration-s 30
expect 130 "SIGINT while acquiring" SIGINT
grep -q "interrupted while acquiring, [0-9]* acquired" "$work/out" ||
    fail "acquiring not said: $(cat "$work/out")"
# During the ceiling's floods (--ceiling: this Redis is not lwbench's
# own): the run held, and stands.
# shellcheck disable=SC2086
stop INT "ceiling: renew flood" $given --ceiling --locks 2000 --lease-ms 3s --tick-ms 10 \
    --duration-s 1
expect 130 "SIGINT during the ceiling" SIGINT
grep -q "^     2000  yes " "$work/out" || fail "the held run does not stand: $(cat "$work/out")"
# During the count down before the first flood: no flood at all.
# shellcheck disable=SC2086
stop INT "the ceiling floods this Redis in" $given --ceiling --locks 2000 --lease-ms 3s \
    --tick-ms 10 --duration-s 1
expect 130 "SIGINT during the count down" SIGINT
grep -q "ceiling: renew flood" "$work/err" && fail "flooded after the count down's SIGINT"
grep -q "^     2000  yes " "$work/out" || fail "the held run does not stand: $(cat "$work/out")"
# A terminal's Ctrl-C: SIGINT to the process group, the private
# redis-server in it too.
stop -INT "holding 2000 locks" --locks 2000 --lease-ms 3s --tick-ms 10 --duration-s 30
expect 130 "SIGINT to the group" SIGINT
grep -q "^ceiling: not measured (interrupted)" "$work/out" ||
    fail "the ceiling not said to be interrupted: $(cat "$work/out")"
grep -q "the private Redis is stopped" "$work/err" ||
    fail "the private Redis not said: $(cat "$work/err")"
exit $fails
