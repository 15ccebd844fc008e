#!/usr/bin/env bash
# Every Criterion macro a test uses is in the ThreadSanitizer build's
# runner (tests/lite/criterion/criterion.h), or is defined by the test
# itself: a macro missing there only shows when the TSan build links, late
# in a CI run.  Prints the missing ones; fails when there are any.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
used=$(grep -ohE '\bcr_[a-z_]+\b' "$root"/tests/*.c "$root"/tests/*.h | sort -u)
known=$( (grep -ohE '#define cr_[a-z_]+' "$root"/tests/lite/criterion/*.h \
    "$root"/tests/*.c "$root"/tests/*.h || true) | sed 's/#define //' | sort -u)
missing=$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$known"))
if [ -n "$missing" ]; then
    echo "not in tests/lite/criterion/criterion.h:" $missing
    exit 1
fi
echo "every cr_ macro the tests use is in the lite runner"
