#!/bin/sh
# exported_symbols.sh LIB INCLUDE_DIR - the shared library exports exactly
# the functions its public headers declare with LW_API: every exported
# symbol is lw_-prefixed, none is missing, and nothing internal leaks:
# neither the unprefixed functions (engine_*, request_*, sub_*, ...) nor
# the few internal names still lw_-prefixed (core's lw_kinds, lw_lock_scripts).
set -eu
lib=$1 include=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$tmp/exported"
# The name just before the '(' of each "LW_API <type> name(" line.
grep -rhE '^LW_API ' "$include" | sed -nE 's/^LW_API[^(]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(.*/\1/p' |
    sort -u >"$tmp/declared"

status=0
if grep -v '^lw_' "$tmp/exported" >"$tmp/foreign"; then
    echo "exported without the lw_ prefix:"; sed 's/^/  /' "$tmp/foreign"; status=1
fi
if comm -23 "$tmp/exported" "$tmp/declared" | grep . >"$tmp/extra"; then
    echo "exported but not declared LW_API in $include:"; sed 's/^/  /' "$tmp/extra"; status=1
fi
if comm -13 "$tmp/exported" "$tmp/declared" | grep . >"$tmp/missing"; then
    echo "declared LW_API but not exported:"; sed 's/^/  /' "$tmp/missing"; status=1
fi
[ -s "$tmp/declared" ] || { echo "no LW_API declarations found in $include"; status=1; }
echo "exported_symbols: $(wc -l <"$tmp/exported") exported, $(wc -l <"$tmp/declared") declared:" \
    "$([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
