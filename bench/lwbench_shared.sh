#!/bin/sh
# lwbench pointed at a Redis it did not start (a shared one): it does not
# flood it unless --ceiling asks (the table says so, with no ratio and no
# capacity estimate); with --ceiling it says first that the floods drive
# it to 100% of a core, and the first starts 5 s after that, counted down;
# --no-ceiling says why there is no ceiling; the capacity estimate gives
# the ceiling's figure, and the plan is no more than what held (with the
# estimate's 70%); LWLOCK_REDIS gives the address and the password;
# --version, and -h is the help (the address is -r); --clients N splits
# the locks between N clients; --kind read holds read-write locks; the
# JSON has the version, null where nothing was measured, and a --json
# path that cannot be written fails before the run.  One redis-server
# with a password, started here.
# $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
# shellcheck source=SCRIPTDIR/../tests/redis_server.sh
. "$(dirname "$0")/../tests/redis_server.sh"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() { echo "$*" >&2; fails=1; }

redis_auth="-a p@ss --no-auth-warning"
start_redis --requirepass 'p@ss'
run="--locks 300 --lease-ms 3s --tick-ms 10ms --duration-s 1"

# The address and password from LWLOCK_REDIS; not flooded without
# --ceiling, and said so.
LWLOCK_REDIS="redis://:p%40ss@127.0.0.1:$port" "$lwbench" $run >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "LWLOCK_REDIS run: status $code: $(cat "$work/err")"
grep -q "Redis 127.0.0.1:$port" "$work/out" || fail "not the given Redis: $(cat "$work/out")"
grep -q "(private)" "$work/out" && fail "a private server: $(cat "$work/out")"
grep -q "^lwbench: the Redis is not lwbench's own: no ceiling floods it (--ceiling asks for them)" \
    "$work/err" || fail "not said that the Redis is not flooded: $(cat "$work/err")"
grep -q "ceiling: renew flood\\|100% of a core" "$work/err" && fail "flooded: $(cat "$work/err")"
grep -q "^ceiling: not measured (a Redis lwbench did not start: --ceiling floods it)" \
    "$work/out" || fail "the table does not say why there is no ceiling: $(cat "$work/out")"
grep -q "p@ss\\|p%40ss" "$work/out" "$work/err" && fail "the password is shown"

# --ceiling: the warning, then the first flood no sooner than 5 s after
# it, counted down (each stderr line timed as it comes); the capacity
# estimate, the plan no more than what held.
LWLOCK_REDIS="redis://:p%40ss@127.0.0.1:$port" python3 -I -S - "$lwbench" --ceiling $run \
    >"$work/out" 2>"$work/err" <<'PY'
import subprocess, sys, time
start = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE, text=True)
for line in p.stderr:
    sys.stderr.write(f"{time.monotonic() - start:.3f} {line}")
sys.exit(p.wait())
PY
code=$?
[ "$code" = 0 ] || fail "--ceiling: status $code: $(cat "$work/err")"
warned=$(sed -n 's/^\([0-9.]*\) lwbench: --ceiling: after each run, the ceiling floods this Redis.*100% of a core.*no sooner than 5 s.*/\1/p' "$work/err")
flood=$(sed -n 's/^\([0-9.]*\) lwbench: ceiling: renew flood.*/\1/p' "$work/err" | head -n 1)
[ -n "$warned" ] || fail "--ceiling: no warning before the floods: $(cat "$work/err")"
[ -n "$flood" ] || fail "--ceiling: no flood: $(cat "$work/err")"
if [ -n "$warned" ] && [ -n "$flood" ]; then
    python3 -I -S -c 'import sys; sys.exit(float(sys.argv[2]) - float(sys.argv[1]) < 4.9)' \
        "$warned" "$flood" || fail "--ceiling: flooded at $flood s, warned at $warned s"
fi
grep -q "lwbench: the ceiling floods this Redis in 1 s (Ctrl-C stops lwbench" "$work/err" ||
    fail "--ceiling: no count down: $(cat "$work/err")"
grep -q "^plan for at most 300 (what held; the limit was not reached: 70% of the estimate is [0-9]*)" \
    "$work/out" || fail "no planning figure, or not what held: $(cat "$work/out")"
grep -q "capacity estimate at this lease: [0-9]* locks at the ceiling" "$work/out" ||
    fail "no capacity estimate: $(cat "$work/out")"
grep -q "p@ss\\|p%40ss" "$work/out" "$work/err" && fail "--ceiling: the password is shown"

# --no-ceiling: no floods, no warning, no ratio, said so; in the JSON,
# null where there is no value (not 0), and the library's version.
"$lwbench" -r "redis://:p%40ss@127.0.0.1:$port" --no-ceiling $run --json "$work/n.json" \
    >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "--no-ceiling: status $code: $(cat "$work/err")"
grep -q "floods" "$work/err" && fail "--no-ceiling still warns: $(cat "$work/err")"
grep -q "ceiling: not measured (--no-ceiling): no ratio, no capacity estimate" "$work/out" ||
    fail "--no-ceiling not said: $(cat "$work/out")"
grep -q "capacity estimate at" "$work/out" && fail "--no-ceiling with an estimate"
python3 -I -S - "$work/n.json" "$("$lwbench" --version)" <<'PY' || fail "--no-ceiling's JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
run = doc["runs"][0]
none = ["ceiling_keys_per_s", "single_key_keys_per_s", "ceiling_redis_cpu_pct",
        "achieved_over_ceiling", "achieved_over_single_key", "capacity_estimate_locks",
        "measured_capacity_locks"]
bad = [k for k in none if run[k] is not None]
if bad or doc["version"] not in sys.argv[2]:
    sys.exit(f"not null: {bad}; version {doc['version']!r}, --version {sys.argv[2]!r}")
# The window's worst lag is never above the run's, which the progress says.
if run["lag_max_ms"] > run["lag_worst_since_start_ms"] + 0.001:
    sys.exit(f"lag_max_ms {run['lag_max_ms']} above the worst since the start")
PY
worst=$(sed -n 's/.*worst lag since the start \([0-9.]*\) ms.*/\1/p' "$work/err" | tail -n 1)
[ -n "$worst" ] || fail "no worst lag in the progress lines: $(cat "$work/err")"
tail -n +5 "$work/out" | head -1 | grep -q " -  *-  *-  *-\$" ||
    fail "--no-ceiling's row has figures: $(cat "$work/out")"
[ "$(redis-cli -p "$port" -a 'p@ss' --no-auth-warning DBSIZE)" = 0 ] || fail "keys left behind"

# --clients: the locks split between 3 clients, held, the ceiling
# measured on them all the same, nothing left behind.
"$lwbench" -r "redis://:p%40ss@127.0.0.1:$port" --clients 3 --ceiling $run --json "$work/c.json" \
    >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "--clients 3: status $code: $(cat "$work/out" "$work/err")"
grep -q "^3 clients, each with its own engine thread" "$work/out" ||
    fail "--clients 3 not said: $(cat "$work/out")"
grep -q '"clients": 3,' "$work/c.json" || fail "--clients 3 not in the JSON"
grep -q "plan for at most" "$work/out" || fail "--clients 3: no ceiling: $(cat "$work/out")"
[ "$(redis-cli -p "$port" -a 'p@ss' --no-auth-warning DBSIZE)" = 0 ] ||
    fail "--clients 3 left keys behind"
# A --json path that cannot be written fails before the run (a run of
# 30 s), not after it, and leaves nothing.
start=$(date +%s)
"$lwbench" -r "redis://:p%40ss@127.0.0.1:$port" --duration-s 30 --locks 300 \
    --json "$work/no/such/dir/x.json" >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 2 ] || fail "--json to a missing directory: status $code"
grep -q "lwbench: $work/no/such/dir/x.json: No such file or directory" "$work/err" ||
    fail "--json to a missing directory not said: $(cat "$work/err")"
[ $(($(date +%s) - start)) -lt 10 ] || fail "--json to a missing directory failed after the run"
err=$("$lwbench" --clients 5 --locks 4 2>&1 >/dev/null)
[ $? = 64 ] || fail "--clients 5 --locks 4 accepted"
err=$("$lwbench" --clients 257 2>&1 >/dev/null)
[ $? = 64 ] || fail "--clients 257 accepted"

# --kind read: read holds of read-write locks, split between 2 clients,
# held with none lost, their own renew script flooded, nothing left
# behind (the readers' timeout keys neither).
"$lwbench" -r "redis://:p%40ss@127.0.0.1:$port" --kind read --clients 2 --ceiling $run \
    --json "$work/r.json" >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "--kind read: status $code: $(cat "$work/out" "$work/err")"
grep -q "^lwbench: read holds of read-write locks" "$work/out" ||
    fail "--kind read not said: $(cat "$work/out")"
grep -q '"kind": "read",' "$work/r.json" || fail "--kind read not in the JSON"
grep -q '"lost": 0,' "$work/r.json" || fail "--kind read lost locks: $(cat "$work/r.json")"
grep -q "plan for at most" "$work/out" || fail "--kind read: no ceiling: $(cat "$work/out")"
[ "$(redis-cli -p "$port" -a 'p@ss' --no-auth-warning DBSIZE)" = 0 ] ||
    fail "--kind read left keys behind: $(redis-cli -p "$port" -a 'p@ss' --no-auth-warning \
        --scan | head -3)"
err=$("$lwbench" --kind readers 2>&1 >/dev/null)
[ $? = 64 ] || fail "--kind readers accepted"

# A bad LWLOCK_REDIS is a usage error naming it, without the password.
err=$(LWLOCK_REDIS='redis://:hunter2@127.0.0.1/x' "$lwbench" 2>&1 >/dev/null)
code=$?
[ "$code" = 64 ] || fail "bad LWLOCK_REDIS: status $code"
case $err in *"invalid LWLOCK_REDIS"*) ;; *) fail "bad LWLOCK_REDIS: $err" ;; esac
case $err in *hunter2*) fail "bad LWLOCK_REDIS shows the password: $err" ;; esac

# --version; -h is the help, which says the address is -r.
"$lwbench" --version | grep -q "^lwbench [0-9]" || fail "--version"
"$lwbench" -h | grep -q "the Redis address is -r" || fail "-h is not the help"
"$lwbench" --help | grep -q -- "--no-ceiling" || fail "--help lacks --no-ceiling"
"$lwbench" --help | grep -q -- "--ceiling " || fail "--help lacks --ceiling"
err=$("$lwbench" --ceiling --no-ceiling 2>&1 >/dev/null)
[ $? = 64 ] || fail "--ceiling --no-ceiling accepted"
"$lwbench" --help | grep -q -- "--kind KIND" || fail "--help lacks --kind"
exit $fails
