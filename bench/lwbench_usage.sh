#!/bin/sh
# lwbench's bad addresses and seeds: each is refused with status 64 before
# anything starts, with a message that says what is wrong and does not
# show the password.  $1: the lwbench to run.
lwbench=$1
fails=0

# expect FRAGMENT ARGS...: status 64 and FRAGMENT on stderr.
expect() {
    want=$1
    shift
    err=$("$lwbench" "$@" 2>&1 >/dev/null)
    code=$?
    if [ "$code" != 64 ]; then
        echo "lwbench $*: status $code, not 64" >&2
        fails=1
    fi
    case $err in
    *"$want"*) ;;
    *) echo "lwbench $*: no '$want' in: $err" >&2; fails=1 ;;
    esac
    case $err in
    *hunter2*) echo "lwbench $*: shows the password: $err" >&2; fails=1 ;;
    esac
}

expect "DB 'x'" -r 'redis://:hunter2@127.0.0.1/x'
expect "redis://***@127.0.0.1/x" -r 'redis://u:hunter2@127.0.0.1/x'
expect "[USER]:PASSWORD@" -r 'redis://hunter2@127.0.0.1'
expect "no ':PORT'" -r 127.0.0.1
expect "TLS" -r 'rediss://127.0.0.1:6380'
expect "empty seed" --cluster 127.0.0.1:7000,,127.0.0.1:7001
expect "empty seed" -c 127.0.0.1:7000,
expect "PORT '70000'" -c 127.0.0.1:70000
expect "seeds are HOST:PORT" -c redis://127.0.0.1:7000
expect "only DB 0" -c 127.0.0.1:7000 -r 'redis://:hunter2@127.0.0.1/2'
expect "no #MASTER" -r 'redis-sentinel://:hunter2@127.0.0.1:26379'
expect "redis-sentinel://***@h:0#m" -r 'redis-sentinel://:hunter2@h:0#m'
expect "empty sentinel" -r 'redis-sentinel://h1,,h2#m'
expect "empty MASTER" -r 'redis-sentinel://h#'
expect "%23" -r 'redis-sentinel://:hun#ter2@h'
expect "exclude each other" -c 127.0.0.1:7000 -r 'redis-sentinel://h#m'
exit $fails
