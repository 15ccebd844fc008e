#!/usr/bin/env bash
# layering.sh SOURCE_ROOT - the transport's calls go one way (docs/design.md,
# "Who calls whom in adapters/"): the engine and the links reach a topology
# only through its table (adapters/topology.h), and a connection knows
# nothing above it.  Fails, naming the line, if
#   - adapters/link.c or adapters/conn.c includes cluster.h or sentinel.h;
#   - adapters/conn.c includes link.h, topology.h, engine.h or pubsub.h;
#   - adapters/engine.c or adapters/link.c names a cluster_* or sentinel_*
#     function (comments and strings aside).
set -euo pipefail
root=$1
cc=${CC:-cc}
status=0

# The code of a C file without its comments (the preprocessor's -fpreprocessed
# strips them and expands nothing), without string literals.
code_of() {
    "$cc" -fpreprocessed -dD -E -P "$1" 2>/dev/null | sed -E 's/"([^"\\]|\\.)*"/""/g'
}

fail() {
    echo "layering: $1" >&2
    status=1
}

for f in link.c conn.c; do
    if grep -nE '^#[[:space:]]*include[[:space:]]*"(cluster|sentinel)\.h"' "$root/adapters/$f"; then
        fail "adapters/$f includes a topology's own header"
    fi
done
if grep -nE '^#[[:space:]]*include[[:space:]]*"(link|topology|engine|pubsub)\.h"' \
    "$root/adapters/conn.c"; then
    fail "adapters/conn.c includes a header of a layer above the connection"
fi
for f in engine.c link.c; do
    if code_of "$root/adapters/$f" | grep -nE '\b(cluster|sentinel)_[A-Za-z0-9_]*[[:space:]]*\('; then
        fail "adapters/$f names a cluster_* or sentinel_* function"
    fi
done
[ "$status" -eq 0 ] && echo "layering: OK"
exit "$status"
