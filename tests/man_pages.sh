#!/bin/sh
# man_pages.sh PAGE PROGRAM - the tool's man page is lint-clean (mandoc
# -Tlint, style warnings included), has the sections flock(1)'s has, and
# names every option PROGRAM --help lists (the lines that start with
# blanks and a '-': "-w, --wait DURATION", "      --tls").
set -u
page=$1 prog=$2
fails=0
fail() { echo "man_pages: $page: $*" >&2; fails=1; }

command -v mandoc >/dev/null ||
    { echo "man_pages: mandoc is not installed (Debian: mandoc)" >&2; exit 1; }
lint=$(mandoc -Tlint -W style "$page" 2>&1) || fail "mandoc -Tlint: $lint"
[ -z "$lint" ] || fail "mandoc -Tlint: $lint"

# The page as a reader sees it: no overstrike, lines long enough that no
# option is split.
text=$(mandoc -Tascii -O width=300 "$page" | sed 's/.\x08//g') || fail "mandoc cannot render it"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT "EXIT STATUS" EXAMPLES; do
    printf '%s\n' "$text" | grep -q "^$section\$" || fail "no $section section"
done

opts=$("$prog" --help | sed -nE 's/^ +(-[A-Za-z0-9]|--[a-z][a-z-]*)(, (--[a-z][a-z-]*))?.*/\1 \3/p')
[ -n "$opts" ] || fail "no options found in $prog --help"
for opt in $opts; do
    printf '%s\n' "$text" | grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|\$)" ||
        fail "$opt is in --help but not in the page"
done
[ "$fails" = 0 ] && echo "man_pages: $page: lint clean, $(echo $opts | wc -w) options covered"
exit $fails
