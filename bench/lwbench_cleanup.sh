#!/bin/sh
# What a killed lwbench leaves on a Redis it did not start, and who removes
# it.  Runs killed with SIGKILL while they hold (permits of semaphores,
# whose counts have no expiry; read holds, with their timeout keys) leave
# keys under their own prefix only, lwbench:<host>:<pid>:<start>:, and
# the next `lwbench --cleanup` leaves no lwbench key.  Then its rules: a
# run of this host whose pid is gone, or given to a process that started
# at another time, is removed; a run still running, another host's run and
# lwbench 0.4's keys (no host in their names) are left and counted; the
# next run removes a killed run's keys before it starts; --cleanup's usage.
# One redis-server, started here.
# $1: the lwbench to run.
lwbench=$1
work=$(mktemp -d) || exit 1
# shellcheck source=SCRIPTDIR/../tests/redis_server.sh
. "$(dirname "$0")/../tests/redis_server.sh"
pid= run=
trap '[ -n "$run" ] && kill -9 "$run" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"' EXIT
fails=0
fail() { echo "lwbench cleanup: $*" >&2; fails=1; }

start_redis
cli() { redis-cli -p "$port" "$@"; }
keys() { cli --scan --pattern '*lwbench:*' | sort; }

# held ARGS...: an lwbench run in the background ($run), once it holds
# (at most 30 s), with its stderr in $work/run.err.  It removes nothing
# before it runs (--no-cleanup): the killed runs' keys are --cleanup's.
held() {
    # Emptied first: the shell opens it in the child, after this one may
    # already look, and the last run's "holding" must not pass for this.
    : >"$work/run.err"
    "$lwbench" -r "127.0.0.1:$port" --no-ceiling --no-cleanup --duration-s 60 --lease-ms 30s "$@" \
        >/dev/null 2>"$work/run.err" &
    run=$!
    i=0
    until grep -q "holding" "$work/run.err" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 300 ] || ! kill -0 "$run" 2>/dev/null; then
            fail "the run never held: $(cat "$work/run.err")"
            return 1
        fi
        sleep 0.1
    done
}

# killed ARGS...: such a run killed with SIGKILL while it holds; the keys
# it made are all under its prefix.
killed() {
    keys >"$work/before"
    held "$@" || return 1
    prefix=$(keys | grep -vxF -f "$work/before" | grep "^lwbench:" | head -n 1 | cut -d: -f1-4)
    host=$(echo "$prefix" | cut -d: -f2)
    case $prefix in
    "lwbench:$host:$run:"[0-9]*) ;;
    *) fail "$*: the run's prefix is '$prefix', not lwbench:<host>:$run:<start>" ;;
    esac
    kill -9 "$run"
    wait "$run" 2>/dev/null
    run=
    outside=$(keys | grep -v "^$prefix:" | grep -vxF -f "$work/before")
    [ -z "$outside" ] || fail "$*: keys outside its prefix $prefix: $outside"
}

killed --kind permit --locks 2000 --per-semaphore 100
[ "$(keys | grep -c "^$prefix:.*:timeout\$")" -gt 0 ] ||
    fail "no permit zset left by the killed run: $(keys | head -3)"
killed --kind read --locks 500
[ "$(keys | grep -c "rwlock_timeout")" -gt 0 ] ||
    fail "no reader's timeout key left by the killed run: $(keys | head -3)"
left=$(keys | wc -l)
[ "$left" -gt 500 ] || fail "the killed runs left $left keys only"
"$lwbench" -r "127.0.0.1:$port" --cleanup >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "--cleanup: status $code: $(cat "$work/err")"
grep -q "^lwbench --cleanup: Redis 127.0.0.1:$port: removed $left keys of 2 earlier runs of this host ($host) whose process is gone" \
    "$work/out" || fail "--cleanup did not say it removed the $left keys: $(cat "$work/out")"
[ -z "$(keys)" ] || fail "--cleanup left lwbench keys: $(keys | head -5)"
[ "$(cli DBSIZE)" = 0 ] || fail "--cleanup left keys: $(cli --scan | head -5)"

# The rules.  This shell's pid with its start time is a run still
# running; with another start time, a run whose pid was given again.
start=$(cut -d')' -f2 "/proc/$$/stat" | awk '{print $20}')
cli SET "lwbench:$host:$$:$start:p0:{0}" 5 >/dev/null
cli SET "lwbench:$host:$$:$((start + 1)):p0:{0}" 5 >/dev/null
cli SET "lwbench:not-this-host.example:$$:1:p0:{0}" 5 >/dev/null
cli SET "lwbench:$$:0abc1234:r0:5" 1 >/dev/null
cli SET "redisson_lock_token:{lwbench:$$:0abc1234:r0:5}" 1 >/dev/null
cli SET "redisson_lock_queue:lwbench:$host:$$:$((start + 1)):r0:{1}" 1 >/dev/null
cli SET "mine:lwbench" 1 >/dev/null
"$lwbench" -r "127.0.0.1:$port" --cleanup >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "--cleanup (rules): status $code: $(cat "$work/err")"
want="lwbench:$$:0abc1234:r0:5
lwbench:$host:$$:$start:p0:{0}
lwbench:not-this-host.example:$$:1:p0:{0}
mine:lwbench
redisson_lock_token:{lwbench:$$:0abc1234:r0:5}"
[ "$(cli --scan | sort)" = "$(echo "$want" | sort)" ] ||
    fail "--cleanup kept $(cli --scan | sort | tr '\n' ' '), not $(echo "$want" | sort | tr '\n' ' ')"
for line in "removed 2 keys of 1 earlier run of this host ($host) whose process is gone (pid $$)" \
    "left 1 key of 1 run still running here (pid $$)" \
    "left 1 key of 1 run of other hosts" \
    "left 2 keys of lwbench 0.4 or older"; do
    grep -qF "$line" "$work/out" || fail "--cleanup did not say '$line': $(cat "$work/out")"
done

# The next run removes what a killed one left, before it runs.
killed --kind lock --locks 300
left=$(keys | grep -c "^$prefix:")
"$lwbench" -r "127.0.0.1:$port" --no-ceiling --locks 100 --lease-ms 3s --tick-ms 10 \
    --duration-s 1 >"$work/out" 2>"$work/err"
code=$?
[ "$code" = 0 ] || fail "the run after a killed one: status $code: $(cat "$work/err")"
grep -q "^lwbench: removed $left keys of 1 earlier run of this host ($host) whose process is gone" \
    "$work/err" || fail "the next run did not remove the $left keys: $(cat "$work/err")"
[ -z "$(keys | grep "^$prefix:")" ] || fail "the next run left the killed run's keys"
[ "$(cli --scan | sort)" = "$(echo "$want" | sort)" ] ||
    fail "the next run left $(cli --scan | sort | tr '\n' ' ')"
# --no-cleanup: not looked for.
killed --kind lock --locks 100
"$lwbench" -r "127.0.0.1:$port" --no-ceiling --no-cleanup --locks 100 --lease-ms 3s \
    --tick-ms 10 --duration-s 0.5 >"$work/out" 2>"$work/err" ||
    fail "--no-cleanup: status $?: $(cat "$work/err")"
grep -q "removed" "$work/err" && fail "--no-cleanup removed keys: $(cat "$work/err")"
[ -n "$(keys | grep "^$prefix:")" ] || fail "--no-cleanup: the killed run's keys are gone"

# --cleanup's usage: a Redis lwbench did not start, and nothing to run.
for args in "--cleanup" "--cleanup -r 127.0.0.1:$port --sweep" \
    "--cleanup -r 127.0.0.1:$port --no-cleanup"; do
    # shellcheck disable=SC2086 # the words are the options
    err=$("$lwbench" $args 2>&1 >/dev/null)
    c=$?
    [ "$c" = 64 ] || fail "'$args': status $c, not 64"
    [ "$(echo "$err" | wc -l)" = 1 ] || fail "'$args': not one line: $err"
done
exit $fails
