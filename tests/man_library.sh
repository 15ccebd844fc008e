#!/bin/sh
# man_library.sh PAGE SRC_INCLUDE BUILD_INCLUDE LIBRARY - leasewheel(3)
# says what it should, and its example is sound:
#   - it is lint-clean (mandoc -Tlint, style warnings included);
#   - every public header (leasewheel.h, leasewheel.hpp, leasewheel/*.h
#     and the generated version.h) is named on the page;
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
[ "$fails" = 0 ] && echo "man_library: $page: every header named; its example builds and runs"
exit $fails
