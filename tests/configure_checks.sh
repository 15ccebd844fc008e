#!/bin/sh
# configure_checks.sh SOURCE_ROOT - what the build needs is declared and
# checked, not found missing later:
#   - the README's apt-get install line names every package of
#     scripts/deps.sh's LW_LIBRARY_PACKAGES;
#   - without uthash.h (a uthash.h on the include path that fails, as a
#     missing one does), meson setup stops and names uthash-dev;
#   - without cmake (a PATH that has everything but it), the default
#     setup warns that the CMake package files are not installed, and
#     -Dcmake_package=enabled stops and names cmake.
set -u
src=$1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "configure_checks: $*" >&2; fails=1; }

# shellcheck source=/dev/null
. "$src/scripts/deps.sh"
line=$(tr '\n' ' ' <"$src/README.md" | grep -o 'sudo apt-get install [^`]*')
for pkg in $LW_LIBRARY_PACKAGES; do
    printf '%s\n' "$line" | grep -qw -- "$pkg" || fail "README's install line lacks $pkg"
done

setup() { # DIR ARGS...: meson setup of a library-only build, its output in DIR.log
    dir=$1
    shift
    meson setup "$work/$dir" "$src" -Dtests=false -Dbench=false "$@" >"$work/$dir.log" 2>&1
}

mkdir "$work/shadow"
echo '#error hidden: as if uthash-dev were not installed' >"$work/shadow/uthash.h"
if setup nouthash -Dc_args=-I"$work/shadow"; then
    fail "meson setup passed without uthash.h"
fi
grep -q "uthash.h not found: install uthash-dev" "$work/nouthash.log" ||
    fail "no word of uthash-dev: $(tail -n 5 "$work/nouthash.log")"

# A PATH of links to every program on it but cmake.
mkdir "$work/bin"
IFS=:
for d in $PATH; do
    for p in "$d"/*; do
        name=${p##*/}
        [ -x "$p" ] && [ "$name" != cmake ] && [ ! -e "$work/bin/$name" ] && ln -s "$p" "$work/bin/$name"
    done
done
unset IFS
if ! PATH=$work/bin setup nocmake; then
    fail "meson setup failed without cmake: $(tail -n 5 "$work/nocmake.log")"
fi
grep -q "WARNING: cmake not found (Debian: cmake): the CMake package files are not installed" \
    "$work/nocmake.log" || fail "no warning without cmake: $(tail -n 20 "$work/nocmake.log")"
if PATH=$work/bin setup nocmake_enabled -Dcmake_package=enabled; then
    fail "-Dcmake_package=enabled passed without cmake"
fi
grep -q "Program 'cmake' not found" "$work/nocmake_enabled.log" ||
    fail "-Dcmake_package=enabled: no word of cmake: $(tail -n 5 "$work/nocmake_enabled.log")"

[ "$fails" = 0 ] && echo "configure_checks: uthash and cmake declared and checked, the README's line whole"
exit $fails
