#!/bin/sh
# lwbench's bad addresses, seeds and TLS flags: each is refused with
# status 64 before anything starts, with a message that says what is wrong
# and does not show the password; an unknown option or a missing value in
# one line.  And --help lists the TLS flags.
# $1: the lwbench to run.
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
expect "rediss://***@127.0.0.1/x" -r 'rediss://u:hunter2@127.0.0.1/x'
expect "no HOST after rediss://" -r 'rediss://:hunter2@'
expect "empty seed" --cluster 127.0.0.1:7000,,127.0.0.1:7001
expect "empty seed" -c 127.0.0.1:7000,
expect "PORT '70000'" -c 127.0.0.1:70000
expect "seeds are HOST:PORT" -c redis://127.0.0.1:7000
expect "only DB 0" -c 127.0.0.1:7000 -r 'redis://:hunter2@127.0.0.1/2'
expect "no #MASTER" -r 'redis-sentinel://:hunter2@127.0.0.1:26379'
expect "redis-sentinel://***@h:0#m" -r 'redis-sentinel://:hunter2@h:0#m'
expect "empty sentinel" -r 'redis-sentinel://h1,,h2#m'
expect "empty MASTER" -r 'redis-sentinel://h#'
expect "no #MASTER" -r 'rediss-sentinel://:hunter2@127.0.0.1:26379'
expect "%23" -r 'redis-sentinel://:hun#ter2@h'
expect "exclude each other" -c 127.0.0.1:7000 -r 'redis-sentinel://h#m'
# The TLS flags (redis-cli's).
expect "--cacert needs --tls" --cacert /dev/null
expect "--insecure needs --tls" -r 127.0.0.1:1 --insecure
expect "--sni needs --tls" -r 'redis://:hunter2@127.0.0.1:1' --sni redis.test
expect "--cert needs --key" --tls --cert /dev/null
expect "--key needs --cert" -r 'rediss://:hunter2@127.0.0.1:1' --key /dev/null
expect "--cacert /nonexistent/ca.pem: No such file" --tls --cacert /nonexistent/ca.pem
expect "--cacertdir /dev/null: not a directory" --tls --cacertdir /dev/null
expect "--sni NAME holds a blank" --tls --sni 'a b'
# Durations: a unit, or a bare number in the option's own unit; the
# lease must still be 3 ticks (so these are refused after parsing).
expect "invalid --lease-ms '3x' (10ms to 24d20h31m23s647ms" --lease-ms 3x
expect "invalid --tick-ms '1.0005s' (1ms to 1m" --tick-ms 1.0005s
expect "invalid --duration-s '1m1h'" --duration-s 1m1h
expect "invalid --lease-ms '25d'" --lease-ms 25d
expect "invalid --clients '0' (1 to 256)" --clients 0
expect "invalid --locks 'many'" --locks many
expect "at least 3 ticks" --lease-ms 1s --tick-ms 500ms
expect "at least 3 ticks" --lease-ms 30 --tick-ms 1s
# An option lwbench does not know, or one without its value: one line
# that names it (getopt's own message and a second one were two).
one_line() {
    want=$1
    shift
    err=$("$lwbench" "$@" 2>&1 >/dev/null)
    code=$?
    [ "$code" = 64 ] || { echo "lwbench $*: status $code, not 64" >&2; fails=1; }
    [ "$err" = "$want" ] || { echo "lwbench $*: '$err', not '$want'" >&2; fails=1; }
}
one_line "lwbench: unknown option '--csv'; see lwbench --help" --csv
one_line "lwbench: unknown option '--csv'; see lwbench --help" --csv out.csv
one_line "lwbench: unknown option '--csv=x'; see lwbench --help" --csv=x
one_line "lwbench: unknown option '-x'; see lwbench --help" -x
one_line "lwbench: option '--locks' needs a value; see lwbench --help" --locks
one_line "lwbench: option '-r' needs a value; see lwbench --help" -r
one_line "lwbench: invalid --locks 'many' (1 to 50000000); see lwbench --help" --locks many
one_line "lwbench: unexpected argument x; see lwbench --help" x
export LWLOCK_SENTINEL_TLS=1
expect "LWLOCK_SENTINEL_TLS must be 0" -r 'rediss-sentinel://h#m'
unset LWLOCK_SENTINEL_TLS
help=$("$lwbench" --help)
for flag in --tls "--cacert FILE" "--cacertdir DIR" "--cert FILE" "--key FILE" "--sni NAME" \
    --insecure rediss:// rediss-sentinel:// LWLOCK_SENTINEL_TLS=0; do
    case $help in
    *"$flag"*) ;;
    *) echo "lwbench --help: no '$flag'" >&2; fails=1 ;;
    esac
done
exit $fails
