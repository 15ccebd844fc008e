#!/bin/sh
# acl_every_kind.sh LWLOCK PAGE - the ACL line of docs/guide/production.md
# (the one "ACL SETUSER" line, taken from PAGE as it is) serves every
# kind: on a private redis-server, as that user, lwlock takes a lock, a
# read and a write lock, a fair lock, a permit, a multi-lock; a waiter is
# woken by an unlock's message; a hold is renewed; a minimum hold; the
# permits are set; --status reads each.  Each exits 0, and ACL LOG stays
# empty: no command, key or channel was refused.
set -u
lwlock=$1 page=$2
work=$(mktemp -d) || exit 1
# shellcheck source=SCRIPTDIR/redis_server.sh
. "$(dirname "$0")/redis_server.sh"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() { echo "acl_every_kind: $*" >&2; fails=1; }

acl=$(grep -m 1 '^ACL SETUSER ' "$page")
[ -n "$acl" ] || { echo "acl_every_kind: no ACL SETUSER line in $page" >&2; exit 1; }
start_redis
# shellcheck disable=SC2086
[ "$(redis-cli -p "$port" $acl)" = OK ] || { echo "the ACL line is refused: $acl" >&2; exit 1; }
user=$(echo "$acl" | awk '{print $3}')
pass=$(echo "$acl" | grep -o ' >[^ ]*' | cut -c3-)
as="redis://$user:$pass@127.0.0.1:$port"

# held KEY KIND: wait (5 s at most) until the holder has KEY: a lock's
# hash, or a permit in the zset.
held() {
    i=0
    while :; do
        case $2 in
        --permits*) n=$(redis-cli -p "$port" ZCARD "{$1}:timeout") ;;
        *) n=$(redis-cli -p "$port" EXISTS "$1") ;;
        esac
        [ "$n" = 1 ] && return 0
        i=$((i + 1))
        [ "$i" -lt 100 ] || { fail "the holder never took $1"; return 1; }
        sleep 0.05
    done
}

# run WHAT ARGS...: lwlock as the user; status 0 or a failure said.
run() {
    what=$1
    shift
    "$lwlock" -r "$as" "$@" >"$work/out" 2>"$work/err"
    code=$?
    [ "$code" = 0 ] || fail "$what: status $code: $(cat "$work/err")"
}

run "a lock" job:plain true
run "a read lock" --read job:rw true
run "a write lock" --write job:rw true
run "a fair lock" --fair job:fair true
run "permits set" --set-permits 2 job:sem
run "a permit" --permits 2 job:sem true
run "a multi-lock" --multi job:m1,job:m2 true
run "a minimum hold" --min-hold 200ms job:min true
# Renewed: a 600 ms lease held 1.5 s.
run "a renewal" -W 600ms job:renewed sleep 1.5
# A waiter woken by the unlock's message (subscribed, then told), for a
# lock, a write lock and a permit.
for kind in --watchdog=30s --write --permits=1; do
    "$lwlock" -r "$as" "$kind" "job:wait$kind" sleep 1 >/dev/null 2>"$work/holder.err" &
    holder=$!
    held "job:wait$kind" "$kind"
    run "a waiter ($kind)" -w 10s "$kind" "job:wait$kind" true
    wait "$holder" || fail "the holder ($kind) failed: $(cat "$work/holder.err")"
done
# A fair waiter, in the queue and woken on its own channel.
"$lwlock" -r "$as" --fair job:fq sleep 1 >/dev/null 2>"$work/holder.err" &
holder=$!
held job:fq --fair
run "a fair waiter" --fair -w 10s job:fq true
wait "$holder" || fail "the fair holder failed: $(cat "$work/holder.err")"
# --status of each kind (1: held, 0: free; never 69).
"$lwlock" -r "$as" job:st sh -c "\"$lwlock\" -r \"$as\" --status job:st; \
    \"$lwlock\" -r \"$as\" --status --json job:sem; \"$lwlock\" -r \"$as\" --status job:rw" \
    >"$work/out" 2>"$work/err" || fail "--status: $(cat "$work/err")"
grep -q "job:st: held as a lock" "$work/out" || fail "--status: $(cat "$work/out" "$work/err")"
grep -q '"kind": "permits"' "$work/out" || fail "--status --json: $(cat "$work/out")"

log=$(redis-cli -p "$port" ACL LOG)
[ -z "$log" ] || fail "ACL LOG: $log"
[ "$fails" = 0 ] && echo "acl_every_kind: every kind served by the guide's ACL line, ACL LOG empty"
exit $fails
