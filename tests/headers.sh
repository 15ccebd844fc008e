#!/bin/sh
# headers.sh SOURCE_INCLUDE BUILD_INCLUDE - every public header compiles
# alone, as C11 with gcc and clang and as C++11/14/17/20 with g++ and
# clang++, with -Wall -Wextra -Wpedantic -Werror; <leasewheel.hpp> as
# C++17 and C++20 only (it is C++17 and later).  BUILD_INCLUDE holds the
# generated <leasewheel/version.h>.  A compiler not installed is skipped
# (said so); gcc and g++ are required.  -fsyntax-only: a header alone
# makes no code, so parsing it and its warnings are the whole check.
set -eu
src=$1 gen=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
headers="leasewheel.h leasewheel/error.h leasewheel/lock.h leasewheel/tls.h leasewheel/wheel.h leasewheel/version.h"
cxx17_headers="leasewheel.hpp"
flags="-Wall -Wextra -Wpedantic -Werror -O2 -I$src -I$gen"

status=0 n=0
# check COMPILER LANG STD: each header alone in a translation unit.
check() {
    hs=$headers
    case $3 in c++17 | c++20) hs="$hs $cxx17_headers" ;; esac
    for h in $hs; do
        printf '#include <%s>\n' "$h" >"$tmp/t.$2"
        # shellcheck disable=SC2086
        if "$1" -std="$3" $flags -x "$([ "$2" = c ] && echo c || echo c++)" -fsyntax-only \
            "$tmp/t.$2" 2>"$tmp/err"; then
            n=$((n + 1))
        else
            echo "FAIL: $1 -std=$3 <$h>"; sed 's/^/  /' "$tmp/err"; status=1
        fi
    done
}
for cc in gcc clang; do
    if command -v "$cc" >/dev/null; then check "$cc" c c11
    elif [ "$cc" = gcc ]; then echo "FAIL: gcc not found"; status=1
    else echo "skipped: $cc not installed"; fi
done
for cxx in g++ clang++; do
    if command -v "$cxx" >/dev/null; then
        for std in c++11 c++14 c++17 c++20; do check "$cxx" cc "$std"; done
    elif [ "$cxx" = g++ ]; then echo "FAIL: g++ not found"; status=1
    else echo "skipped: $cxx not installed"; fi
done
echo "headers: $n compilations: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
