#!/usr/bin/env bash
# The micro-benchmarks (Google Benchmark): installs what is missing, builds
# leasewheel optimised and runs them against their baselines, then prints
# the ratios:
#   - the timing wheel against a binary heap and libev's timers;
#   - round trips through the engine against redis-benchmark, on a private
#     redis-server started (and stopped) by the benchmark itself;
#   - lock+unlock against two raw EVALSHAs, and the watchdog's batched
#     renewals against one key per EVALSHA, on such a server too.
#   scripts/microbench.sh [google-benchmark options...]
# Results also go to build/release/bench-{wheel,engine,lock}.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
lw_build_release
out=build/release/bench
build/release/bench/bench_wheel --benchmark_out="$out-wheel.json" --benchmark_out_format=json "$@"
build/release/bench/bench_engine --benchmark_out="$out-engine.json" --benchmark_out_format=json "$@"
build/release/bench/bench_lock --benchmark_out="$out-lock.json" --benchmark_out_format=json "$@"
python3 bench/summarize.py "$out-wheel.json" "$out-engine.json" "$out-lock.json"
