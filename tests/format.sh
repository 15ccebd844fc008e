#!/usr/bin/env bash
# format.sh SOURCE_ROOT - the library's and the tools' sources (adapters/,
# core/, wheel/, include/, tools/) follow the house style (.clang-format):
# clang-format changes nothing.  Names each file that it would change, and
# how to fix it.  Fails, saying so, unless clang-format is major version 14.
set -euo pipefail
root=$1
cd "$root"
command -v clang-format >/dev/null || { echo "format: clang-format is not installed" >&2; exit 1; }
# .clang-format was written for clang-format 14: another major version
# formats the same options differently (and knows other ones), so its
# verdict would not be the house style's.
version=$(clang-format --version 2>&1 | sed -nE 's/.*clang-format version ([0-9]+)\..*/\1/p' | head -n 1)
if [ "$version" != 14 ]; then
    echo "format: clang-format 14 is needed (.clang-format is written for it); found:" \
        "$(clang-format --version 2>&1 | head -n 1)" >&2
    exit 1
fi
status=0
while IFS= read -r f; do
    if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
        echo "format: $f does not follow .clang-format (clang-format -i $f)" >&2
        status=1
    fi
done < <(git ls-files 'adapters/*.[ch]' 'core/*.[ch]' 'wheel/*.[ch]' 'include/*.h' \
    'include/*/*.h' 'tools/*.[ch]' 2>/dev/null ||
    find adapters core wheel include tools -name '*.[ch]')
[ "$status" -eq 0 ] && echo "format: OK"
exit "$status"
