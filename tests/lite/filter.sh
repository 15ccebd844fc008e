#!/bin/sh
# The lite runner (TSan build) takes Criterion's --filter: given a test
# executable of it, one test runs, under either spelling; an option it does
# not know is refused with status 2 instead of running every test.
set -u
exe=$1
fail() { echo "lite runner: $*" >&2; exit 1; }

for spelling in "--filter wheel/error_messages" "--filter=wheel/error_*"; do
    # shellcheck disable=SC2086 # the spelling is two words or one
    out=$("$exe" $spelling --verbose 2>&1) || fail "$spelling: exit $?"
    echo "$out" | grep -q '^\[RUN \] wheel::error_messages$' || fail "$spelling: not run: $out"
    echo "$out" | grep -q 'Tested: 1 | Passing: 1' || fail "$spelling: not alone: $out"
done
"$exe" --no-such-option >/dev/null 2>&1
code=$?
[ "$code" -eq 2 ] || fail "an unknown option: exit $code, not 2"
echo "lite runner: --filter runs one test; an unknown option is refused"
