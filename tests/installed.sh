#!/usr/bin/env bash
# installed.sh BUILD_DIR - leasewheel as a user gets it: install BUILD_DIR
# (already built) into a temporary directory, build tests/installed/use.c
# and use.cc with nothing but `pkg-config --cflags --libs leasewheel`,
# every example of docs/examples/ with the Build: line at its top (the
# README's first programs, first.c and first.cc, run), and
# use_hpp.cc (C++17, <leasewheel.hpp>) with CMake's find_package(leasewheel)
# (tests/installed/CMakeLists.txt), and run the five against a private
# redis-server on a free loopback port, and the installed lwlock against
# it as cron would run it (by its path, in cron's environment, before any
# ldconfig).  Prints one PASS or FAIL line;
# exits non-zero on failure.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)/installed
tmp=$(mktemp -d)
pid=
stop_server() {
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
}
finish() {
    local rc=$?
    stop_server
    rm -rf "$tmp"
    if [ "$rc" -eq 0 ]; then echo "installed: PASS"; else echo "installed: FAIL"; fi
    exit "$rc"
}
trap finish EXIT

# A staged install: pkg-config's sysroot maps the .pc's paths into it.
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >/dev/null
pc=$(find "$tmp/root" -name leasewheel.pc)
[ -n "$pc" ] || { echo "no leasewheel.pc installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$tmp/root PKG_CONFIG_LIBDIR=
cflags=$(pkg-config --cflags leasewheel)
libs=$(pkg-config --libs leasewheel)
echo "pkg-config: cflags: $cflags; libs: $libs"
# A dynamic link needs nothing of hiredis or libev: the headers are libc only.
if grep -qE 'hiredis|-lev' <<<"$cflags $libs"; then
    echo "leasewheel.pc puts hiredis or libev into a dynamic build"; exit 1
fi
version=$(meson introspect --projectinfo "$build" | sed -nE 's/.*"version": "([^"]*)".*/\1/p')
[ "$(pkg-config --modversion leasewheel)" = "$version" ] ||
    { echo "leasewheel.pc has the wrong version"; exit 1; }

# The README's install ends in a working lwlock: `sudo ldconfig` right
# after `sudo ninja -C build install` (a new library in Debian's
# /usr/local/lib/x86_64-linux-gnu is found through ld.so's cache, which
# install does not refresh), then `lwlock --version`.
readme=$(cd "$src/../.." && pwd)/README.md
awk '/sudo ninja -C build install/ { f = 1; next } f && NF { print; n++ } n == 2 { exit }' \
    "$readme" >"$tmp/after_install"
if ! grep -q '^sudo ldconfig' "$tmp/after_install" ||
    ! grep -q '^lwlock --version' "$tmp/after_install"; then
    echo "README.md: no 'sudo ldconfig' and 'lwlock --version' after the install line"; exit 1
fi
# And lwlock needs not even that: it finds the library it was installed
# with from its own place (its rpath, $ORIGIN/...), in cron's environment
# (PATH=/usr/bin:/bin, no LD_LIBRARY_PATH), wherever the tree is.
lwlock=$(find "$tmp/root" -path '*/bin/lwlock' | head -n 1)
[ -n "$lwlock" ] && [ -n "$(find "$tmp/root" -name lwlock.1)" ] ||
    { echo "lwlock or lwlock.1 not installed"; exit 1; }
cron_env=(env -i PATH=/usr/bin:/bin HOME="$tmp" SHELL=/bin/sh LOGNAME=cron)
out=$("${cron_env[@]}" "$lwlock" --version 2>&1) || true
[ "$out" = "lwlock $version" ] || { echo "the installed lwlock --version, as cron runs it: $out"; exit 1; }
lwlock_libs=$("${cron_env[@]}" ldd "$lwlock")
grep -q "libleasewheel.so.* => $tmp/root/" <<<"$lwlock_libs" ||
    { echo "the installed lwlock does not load the installed library:"; echo "$lwlock_libs"; exit 1; }
echo "lwlock: --version from the staged install in cron's environment (no ldconfig)"

# shellcheck disable=SC2086
"${CC:-cc}" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$tmp/use" "$src/use.c" $cflags $libs
# shellcheck disable=SC2086
"${CXX:-c++}" -std=c++11 -Wall -Wextra -Wpedantic -Werror -o "$tmp/use_cxx" "$src/use.cc" \
    $cflags $libs
# Every example of docs/examples/ (the README's first programs among
# them) builds from the install with exactly the line its top comment
# prints, "Build: ...", run where the file is, as a reader runs it in
# docs/examples/: without a word from the compiler, and making the
# program its -o names.
examples=$(cd "$src/../../docs/examples" && pwd)
built=0
for file in "$examples"/*.c "$examples"/*.cc; do
    name=$(basename "$file")
    line=$(sed -n '1,/\*\//s/^ \* Build: //p' "$file")
    if [ -z "$line" ] || [ "$(wc -l <<<"$line")" -ne 1 ]; then
        echo "docs/examples/$name: not one 'Build:' line in its top comment"; exit 1
    fi
    exe=$(sed -nE 's/.* -o ([^ ]+) .*/\1/p' <<<"$line")
    [ -n "$exe" ] || { echo "docs/examples/$name: its Build: line names no -o: $line"; exit 1; }
    dir=$tmp/examples/$name
    mkdir -p "$dir"
    cp "$file" "$dir/"
    if ! (cd "$dir" && sh -c "$line") >"$dir.log" 2>&1 || [ -s "$dir.log" ] || [ ! -x "$dir/$exe" ]; then
        echo "docs/examples/$name: its Build: line, $line:"; cat "$dir.log"; exit 1
    fi
    built=$((built + 1))
done
echo "examples: $built built from the install, each with the Build: line at its top"
first=$tmp/examples/first.c/first first_cxx=$tmp/examples/first.cc/first_cxx

# CMake: find_package(leasewheel VERSION EXACT) in the staged prefix (and
# nowhere else), a C++17 consumer of leasewheel::leasewheel.
prefix=$(meson introspect --buildoptions "$build" | python3 -c \
    'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
if ! cmake -S "$src" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/root$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DLW_VERSION="$version" >"$tmp/cmake.log" 2>&1 ||
    ! cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
    cat "$tmp/cmake.log"; exit 1
fi
dir=$(sed -n 's/^leasewheel_DIR:PATH=//p' "$tmp/cmake/CMakeCache.txt")
case $dir in
"$tmp/root/"*) echo "cmake: find_package(leasewheel $version): ${dir#"$tmp/root"}" ;;
*) echo "find_package(leasewheel) found $dir, not the staged install"; exit 1 ;;
esac

export LD_LIBRARY_PATH=$(dirname "$(find "$tmp/root" -name 'libleasewheel.so' | head -n 1)")
for exe in "$tmp/use" "$tmp/cmake/use_hpp"; do
    # ldd's whole output first: grep -q stops reading at its match, and
    # under pipefail ldd's SIGPIPE then failed the check at random.
    libs=$(ldd "$exe")
    if ! grep -q "libleasewheel.so.* => $tmp/" <<<"$libs"; then
        echo "$exe does not load the installed library:"; echo "$libs"; exit 1
    fi
done

# redis-server on 127.0.0.1 only, no persistence; a port that turns out to
# be taken makes it exit, and the next one is tried.  Up when the server
# answering is ours (INFO's process_id): with tests running two at a time,
# another test's server may hold the port and answer while ours exits.
for _ in $(seq 10); do
    port=$((20000 + RANDOM % 40000))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$tmp" --logfile "$tmp/redis.log" &
    pid=$!
    for _ in $(seq 50); do
        redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null | tr -d '\r' |
            grep -qx "process_id:$pid" && break 2
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    stop_server
done
[ -n "$pid" ] || { echo "redis-server did not start; its log:"; cat "$tmp/redis.log"; exit 1; }

timeout 60 "$tmp/use" "$port"
timeout 60 "$tmp/use_cxx" "$port"
timeout 60 "$tmp/cmake/use_hpp" "$port"
timeout 60 "$first" "$port"
timeout 60 "$first_cxx" "$port"
# Against a port nothing listens on, each says why once: "orders:42:
# connection to Redis refused", "leasewheel::mutex::try_lock_for:
# connection to Redis refused" (what() holds the code's message already).
closed=$(python3 -I -S -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for exe in "$first" "$first_cxx"; do
    if err=$(timeout 60 "$exe" "$closed" 2>&1 >/dev/null); then
        echo "$exe ran against a closed port"; exit 1
    fi
    [ "$(grep -o "connection to Redis refused" <<<"$err" | wc -l)" -eq 1 ] ||
        { echo "$exe, refused, does not say so once: $err"; exit 1; }
done
echo "first, first_cxx: refused, said once"

# The installed lwlock, as an operator runs it from cron (its page
# installed beside it; cron's environment, its Redis from the crontab's
# LWLOCK_REDIS): a free name's --status --json; then, while one lwlock
# holds cron:job (a prefix, a lease with a unit), --status says it is held
# (exit 1) and a second lwlock with -n -q -E 3 exits 3 in silence.
addr=127.0.0.1:$port
cron_env+=(LWLOCK_REDIS="$addr")
timeout 30 "${cron_env[@]}" "$lwlock" --prefix cron --status --json job |
    grep -q '"state": "free"'
timeout 60 "${cron_env[@]}" "$lwlock" --prefix cron -W 3s job sh -c '
    "$0" -r "$1" --status cron:job >/dev/null; [ $? -eq 1 ] || exit 10
    err=$("$0" -r "$1" -n -q -E 3 cron:job true 2>&1); rc=$?
    [ "$rc" -eq 3 ] && [ -z "$err" ] || exit 11' "$lwlock" "$addr"
echo "lwlock: --status, --prefix, -W 3s, -n -q -E from the installed path"
