#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds leasewheel three
# times (plain, AddressSanitizer+UBSan, ThreadSanitizer) and runs every test
# in each.  Any failure or any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
lw_install_deps

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

lw_configure build/test -Dbench=false
lw_configure build/asan -Dbench=false -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fno-sanitize-recover=all
lw_configure build/tsan -Dbench=false -Db_sanitize=thread -Db_lundef=false

status=0 passed=0 failed=0
for variant in test asan tsan; do
    dir=build/$variant
    echo "== $variant: build" >&2
    ninja -C "$dir" >/dev/null
    echo "== $variant: test" >&2
    meson test -C "$dir" --print-errorlogs --num-processes 1 || status=1
    log=$dir/meson-logs/testlog.txt
    if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$log"; then
        echo "== $variant: sanitizer report in $log" >&2
        status=1
    fi
    # Criterion's own tally of test cases, summed over the executables.
    read -r p f < <(grep -oE 'Passing: [0-9]+ \| Failing: [0-9]+ \| Crashing: [0-9]+' "$log" |
        awk '{p += $2; f += $5 + $8} END {print p + 0, f + 0}')
    passed=$((passed + p)) failed=$((failed + f))
done
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "tests: $passed passed, $failed failed"
exit "$status"
