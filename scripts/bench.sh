#!/usr/bin/env bash
# The main job: installs what is missing, builds leasewheel optimised and
# runs the timing-wheel benchmarks against their baselines (a binary heap
# and libev's timers), then prints the table of ratios.
#   scripts/bench.sh [google-benchmark options...]
# Results also go to build/release/bench-wheel.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
lw_install_deps

lw_configure build/release --buildtype=release -Dtests=false
ninja -C build/release >/dev/null
out=build/release/bench-wheel.json
build/release/bench/bench_wheel --benchmark_out="$out" --benchmark_out_format=json "$@"
python3 bench/summarize.py "$out"
