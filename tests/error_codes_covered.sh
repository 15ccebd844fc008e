#!/usr/bin/env bash
# Every error code of <leasewheel/error.h> is produced by at least one test:
# some test compares a call's result with it (an assertion, or a check in a
# test's helper or child process).  Prints each code with the tests that
# do; fails when a code has none.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
missing=0
for code in $(grep -oE '^\s*LW_E[A-Z]+ = -' "$root/include/leasewheel/error.h" | grep -oE 'LW_E[A-Z]+'); do
    # A line naming the code as a whole word in an assertion or comparison.
    files=$(grep -lE "(cr_(assert|expect)[a-z_]*\(|expect_[a-z_]*\(|[!=]= ).*\b$code\b" \
        "$root"/tests/*.c |
        xargs -r -n1 basename | tr '\n' ' ' || true)
    printf '%-16s %s\n' "$code" "${files:-NONE}"
    [ -n "$files" ] || missing=1
done
exit $missing
