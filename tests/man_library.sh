#!/bin/sh
# man_library.sh PAGE SRC_INCLUDE BUILD_INCLUDE LIBRARY - leasewheel(3)
# says what it should, and its example is sound:
#   - it is lint-clean (mandoc -Tlint, style warnings included);
#   - every public header (leasewheel.h, leasewheel.hpp, leasewheel/*.h
#     and the generated version.h) is named on the page, and its main
#     types: every class of leasewheel.hpp's namespace leasewheel (but
#     detail's), as leasewheel::NAME, and every struct the C headers
#     declare as a handle (`struct lw_NAME;`), as struct lw_NAME;
#   - the EXAMPLES' program, wrapped in a main() whose client cannot be
#     made (a lease of 1 ms, refused), builds with -Wall -Werror and runs
#     to exit 0: with its locals filled with a pattern
#     (-ftrivial-auto-var-init), a pointer freed before it was set would
#     crash it.
set -u
page=$1 src_inc=$2 build_inc=$3 lib=$4
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "man_library: $*" >&2; fails=1; }

command -v mandoc >/dev/null ||
    { echo "man_library: mandoc is not installed (Debian: mandoc)" >&2; exit 1; }
lint=$(mandoc -Tlint -W style "$page" 2>&1) || fail "mandoc -Tlint: $lint"

for h in leasewheel.h leasewheel.hpp $(cd "$src_inc" && ls leasewheel/*.h) leasewheel/version.h; do
    grep -qF "<$h>" "$page" || fail "$page does not name <$h>"
done
classes=$(awk '/^namespace detail/ { d = 1 } /^} \/\/ namespace detail/ { d = 0 }
    !d && /^class [a-z_]+/ { sub(/^class /, ""); sub(/[^a-z_].*/, ""); print }' \
    "$src_inc/leasewheel.hpp" | sort -u)
[ -n "$classes" ] || fail "no class found in $src_inc/leasewheel.hpp"
for c in $classes; do
    grep -qF "leasewheel::$c" "$page" || fail "$page does not name leasewheel::$c"
done
handles=$(sed -n 's/^struct \(lw_[a-z_]*\);.*/\1/p' "$src_inc"/leasewheel/*.h | sort -u)
[ -n "$handles" ] || fail "no handle found in $src_inc/leasewheel/*.h"
for t in $handles; do
    grep -qF "struct $t" "$page" || fail "$page does not name struct $t"
done

# The first .EX block after .SH EXAMPLES, troff's escapes undone.
awk '/^\.SH EXAMPLES/ { ex = 1 } ex && /^\.EE/ { exit } ex == 2 { print } ex && /^\.EX/ { ex = 2 }' \
    "$page" | sed 's/\\-/-/g; s/\\e/\\/g' >"$work/body.c"
[ -s "$work/body.c" ] || fail "no example in $page"
{
    printf '#include <stdio.h>\n#include <leasewheel.h>\n\n'
    printf 'static void lost(const char *name, size_t len, uint64_t owner, int reason, void *arg)\n'
    printf '{\n    (void)name, (void)len, (void)owner, (void)reason, (void)arg;\n}\n\n'
    printf '/* The client is refused: its lease is under three ticks. */\n'
    printf '#define lw_client_config_init(cfg) (lw_client_config_init(cfg), (cfg)->watchdog_timeout_ms = 1)\n\n'
    printf 'int main(void)\n{\n'
    cat "$work/body.c"
    printf '    return 0;\n}\n'
} >"$work/example.c"
if ! cc -std=c11 -Wall -Wextra -Werror -O1 -ftrivial-auto-var-init=pattern \
    -I"$src_inc" -I"$build_inc" -o "$work/example" "$work/example.c" "$lib" \
    -Wl,-rpath,"$(dirname "$lib")" 2>"$work/cc.log"; then
    fail "the example does not build:"
    cat "$work/cc.log" "$work/example.c" >&2
else
    "$work/example"
    code=$?
    [ "$code" = 0 ] || fail "the example, its client refused, exits $code"
fi
[ "$fails" = 0 ] && echo "man_library: $page: every header and its types named ($(echo "$classes" "$handles" | wc -w)); its example builds and runs"
exit $fails
