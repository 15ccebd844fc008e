#!/usr/bin/env bash
# compare.sh RUNS 'COMMAND_A' 'COMMAND_B' - two lwbench commands (two
# builds, or one build with other options), run in turn A B A B ... RUNS
# times each so that both see the same drift of a shared machine, each with
# --json into a temporary directory.  Prints one line per run (renewals/s
# achieved, locks lost, engine CPU, engine ns per renewal) and the medians,
# with B / A for the engine's ns per renewal.  Exits 1 if any run lost a
# lock or failed.
#
#   bench/compare.sh 3 'before/lwbench --locks 200000 --lease-ms 3000 --tick-ms 10 --duration-s 10' \
#                      'after/lwbench --locks 200000 --lease-ms 3000 --tick-ms 10 --duration-s 10'
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: compare.sh RUNS 'COMMAND_A' 'COMMAND_B'" >&2; exit 64; }
runs=$1 a=$2 b=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for i in $(seq "$runs"); do
    for side in a b; do
        cmd=$a
        [ "$side" = b ] && cmd=$b
        # shellcheck disable=SC2086
        if ! $cmd --json "$tmp/$side-$i.json" >"$tmp/$side-$i.out" 2>&1; then
            echo "run $i $side failed: $cmd" >&2
            tail -n 5 "$tmp/$side-$i.out" >&2
            status=1
        fi
    done
done
python3 - "$tmp" "$runs" <<'EOF' || status=1
import json, statistics, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
bad = 0
per = {"a": [], "b": []}
for i in range(1, runs + 1):
    for side in "ab":
        try:
            run = json.load(open(f"{tmp}/{side}-{i}.json"))["runs"][-1]
        except (OSError, ValueError, KeyError, IndexError):
            print(f"run {i} {side}: no result")
            bad = 1
            continue
        ns = run["engine_cpu_pct"] / 100 * 1e9 / max(run["renewals_achieved_per_s"], 1)
        per[side].append(ns)
        bad |= run["lost"] != 0
        print(f"run {i} {side}: {run['renewals_achieved_per_s']:.0f} renewed/s, "
              f"{run['lost']} lost, engine {run['engine_cpu_pct']:.1f}% of a core, "
              f"{ns:.0f} ns per renewal, ceiling {run['ceiling_keys_per_s']:.0f}/s")
if per["a"] and per["b"]:
    ma, mb = statistics.median(per["a"]), statistics.median(per["b"])
    print(f"median engine ns per renewal: A {ma:.0f}, B {mb:.0f}, B / A {mb / ma:.3f}")
sys.exit(bad)
EOF
exit "$status"
