#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds leasewheel three
# times (plain, AddressSanitizer+UBSan, ThreadSanitizer) and runs every test
# in each (the fuzzers' seed corpora included, replayed; the plain build is
# also installed and used through pkg-config and CMake), then a fourth
# time with clang for libFuzzer and runs each fuzzer for LW_FUZZ_SECONDS.
# Any failure, crash or sanitizer report fails the run.
set -euo pipefail

# Seconds each fuzzer runs (4 fuzzers): bounded, for CI's time budget.
LW_FUZZ_SECONDS=${LW_FUZZ_SECONDS:-6}
# Test executables run at once in each build.  The tests mostly wait (on
# leases, reconnects, failovers): one at a time the plain build's used
# under a third of two cores.  Each starts its own servers on free ports.
LW_TEST_JOBS=${LW_TEST_JOBS:-2}
LW_FUZZERS="request lock_name config lwlock_args"
cd "$(dirname "$0")/.."
. scripts/deps.sh
lw_install_deps

# say WHAT: a phase's line on stderr, with the minutes:seconds since the
# start, so that a run's log shows where CI's budget goes.
say() {
    printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

lw_configure build/test -Dbench=false
lw_configure build/asan -Dbench=false -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fno-sanitize-recover=all
lw_configure build/tsan -Dbench=false -Db_sanitize=thread -Db_lundef=false
CC=clang lw_configure build/fuzz -Dbench=false -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dc_args=-fno-sanitize-recover=all
# Built without TLS: only the library and the test of what it refuses.
lw_configure build/notls -Dbench=false -Dtls=disabled

# lw_tally VARIANT LOG...: a sanitizer report in the logs fails the run;
# Criterion's own tally of test cases, summed over the executables, is
# added to the run's.
lw_tally() {
    local variant=$1 p f
    shift
    if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:' \
        "$@"; then
        echo "== $variant: sanitizer report in $*" >&2
        status=1
    fi
    read -r p f < <(cat "$@" |
        grep -oE 'Passing: [0-9]+ \| Failing: [0-9]+ \| Crashing: [0-9]+' |
        awk '{p += $2; f += $5 + $8} END {print p + 0, f + 0}')
    passed=$((passed + p)) failed=$((failed + f))
}

# lw_fuzz NAME: run fuzz_NAME for LW_FUZZ_SECONDS from its seed corpus.
# What it finds goes to build/fuzz/corpus/NAME (kept between runs); the
# committed corpus is only read.  A crash, sanitizer report, leak or hang
# (-timeout) fails, with the input's path.
lw_fuzz() {
    local name=$1 dir=build/fuzz log
    log=$dir/fuzz-$name.log
    mkdir -p "$dir/corpus/$name" "$dir/crashes"
    if nice -n 19 "$dir/tests/fuzz/fuzz_$name" -max_total_time="$LW_FUZZ_SECONDS" -timeout=10 \
        -print_final_stats=1 -dict="tests/fuzz/dict/$name.dict" \
        -artifact_prefix="$dir/crashes/$name-" "$dir/corpus/$name" "tests/fuzz/corpus/$name" \
        >"$log" 2>&1; then
        printf '== fuzz: %-12s %s runs, %s exec/s, %s\n' "$name" \
            "$(awk '/^stat::number_of_executed_units/ {print $2}' "$log")" \
            "$(awk '/^stat::average_exec_per_sec/ {print $2}' "$log")" \
            "$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)" >&2
        return 0
    fi
    tail -n 30 "$log" >&2
    echo "== fuzz: $name FAILED (log: $log)" >&2
    grep -oE 'Test unit written to .*' "$log" | sed 's/^/== fuzz: /' >&2 || true
    return 1
}

# The other builds compile while the plain build's tests run, at the
# idle scheduling class: they take only what the waiting tests leave, so
# that the tests' timing is not disturbed.  What they print goes to a log.
lw_build_others() {
    ninja -C build/asan && ninja -C build/tsan &&
        ninja -C build/fuzz $(printf 'tests/fuzz/fuzz_%s ' $LW_FUZZERS) &&
        ninja -C build/notls tests/test_tls_config
}
idle=(nice -n 19)
chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0 nice -n 19)

status=0 passed=0 failed=0
say "test: build"
ninja -C build/test >/dev/null
(
    "${idle[@]}" bash -c "$(declare -f lw_build_others); LW_FUZZERS='$LW_FUZZERS' lw_build_others"
) >build/others-build.log 2>&1 &
others=$!
for variant in test asan tsan; do
    dir=build/$variant
    if [ "$variant" = asan ]; then
        say "asan, tsan, fuzz, notls: waiting for their builds"
        if ! wait "$others"; then
            tail -n 40 build/others-build.log >&2
            say "the sanitizer, fuzz or notls build failed (build/others-build.log)"
            exit 1
        fi
    fi
    say "$variant: test"
    # The three builds must fit CI's budget, so some suites run in fewer:
    # 'long' (failovers, clusters and Sentinel), 'repeat' (tests run again
    # on the caller's loop) and 'once' (checks of the sources, the headers
    # and the exported symbols, the same in every build) in the plain build
    # only (but its TLS cases, 'tls_long', under ASan too), 'no_asan'
    # (contention and the cluster engine) plain and under TSan, 'no_tsan'
    # (the fault matrix and contention over TLS) plain and under ASan, and
    # 'fixture' (the test fixtures' own tests) by hand only.
    case $variant in
    test) skip=(--no-suite fixture --no-suite long) ;;
    asan) skip=(--no-suite fixture --no-suite long --no-suite repeat --no-suite once
                --no-suite no_asan) ;;
    tsan) skip=(--no-suite fixture --no-suite long --no-suite repeat --no-suite once
                --no-suite no_tsan) ;;
    esac
    meson test -C "$dir" --print-errorlogs --num-processes "$LW_TEST_JOBS" "${skip[@]}" ||
        status=1
    logs=("$dir/meson-logs/testlog.txt")
    # The long ones (clusters, Sentinel) in the plain build; under ASan
    # those of them over TLS (suite tls_long) run beside the fuzzers,
    # below.
    if [ "$variant" = test ]; then
        say "$variant: test, suite long"
        meson test -C "$dir" --print-errorlogs --num-processes 2 --suite long \
            --logbase testlog-long || status=1
        logs+=("$dir/meson-logs/testlog-long.txt")
    fi
    lw_tally "$variant" "${logs[@]}"
    # Once, in the plain build: installed, found with pkg-config alone and
    # used from C and C++, and with CMake's find_package from C++17
    # (leasewheel.hpp).  One test in the tally.
    if [ "$variant" = test ]; then
        say "$variant: installed use"
        if tests/installed.sh "$dir"; then
            passed=$((passed + 1))
        else
            status=1 failed=$((failed + 1))
        fi
    fi
done
# Under ASan, the long tests over TLS (suite tls_long), whose failure
# paths are OpenSSL's and ours together, beside notls and the fuzzers,
# which run niced (lw_fuzz): they take what the
# tests leave, and end by their time, not their work.
say "asan: test, suite tls_long (beside notls and fuzz)"
meson test -C build/asan --no-rebuild --print-errorlogs --num-processes 2 --suite tls_long \
    --logbase testlog-long >build/asan/tls-long.out 2>&1 &
tls_long=$!
# Without TLS, a config asking for it is LW_ENOTSUP (test_tls_config).
say "notls: test"
if meson test -C build/notls --no-rebuild --print-errorlogs tls_config >/dev/null; then
    passed=$((passed + $(grep -oE 'Passing: [0-9]+' build/notls/meson-logs/testlog.txt |
        awk '{p += $2} END {print p + 0}')))
else
    status=1 failed=$((failed + 1))
    tail -n 30 build/notls/meson-logs/testlog.txt >&2 || true
fi
say "fuzz"
for name in $LW_FUZZERS; do
    lw_fuzz "$name" || { status=1 failed=$((failed + 1)); }
done
if ! wait "$tls_long"; then
    status=1
    tail -n 40 build/asan/tls-long.out >&2
fi
say "asan: suite tls_long done"
lw_tally asan build/asan/meson-logs/testlog-long.txt
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
say "done"
echo "tests: $passed passed, $failed failed"
exit "$status"
