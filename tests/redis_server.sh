# shellcheck shell=sh
# tests/redis_server.sh - sourced by the shell tests that need a Redis of
# their own (sh, not bash).
#
#   start_redis [ARG...]   redis-server on a free loopback port, its data
#                          in $work (the caller's mktemp -d), with ARGs
#                          added (--requirepass P: set $redis_auth to "-a P
#                          --no-auth-warning" first, for the wait); sets
#                          $port and $pid (the caller's EXIT trap kills
#                          it), and waits for PONG, at most 10 s.
start_redis() {
    port=$(python3 -I -S -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" "$@" \
        >"$work/redis.log" 2>&1 &
    pid=$!
    _i=0
    # shellcheck disable=SC2086
    until redis-cli -p "$port" ${redis_auth:-} PING 2>/dev/null | grep -q PONG; do
        _i=$((_i + 1))
        [ "$_i" -lt 100 ] || { echo "redis-server did not start" >&2; cat "$work/redis.log" >&2; exit 1; }
        sleep 0.1
    done
}
