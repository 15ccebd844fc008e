#!/usr/bin/env python3
"""Print the wheel benchmarks as ratios against the baselines of the same run.

    python3 bench/summarize.py bench-wheel.json

Reads Google Benchmark's JSON (--benchmark_out).  With repetitions, the
median of each case is used.  ns/op is each case's `ns_per_op` counter:
measured time divided by operations.
"""
import json
import sys
from collections import defaultdict

IMPLS = ("wheel", "heap", "libev")
SHAPES = ("schedule", "cancel", "pair", "expire", "renew", "xthread")
TARGETS = {  # shape: (baseline, the wheel's cost may be at most this share of it)
    "pair": (("libev", 1 / 3), ("heap", 1 / 5)),
}
EXPIRE_MAX_NS = 30.0


def load(path):
    with open(path) as f:
        doc = json.load(f)
    cost = defaultdict(dict)  # (shape, n) -> impl -> ns/op
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            continue
        shape, impl, n = b["run_name"].split("/")[:3]
        if b.get("run_type") == "iteration" and impl in cost[(shape, int(n))]:
            continue  # repetitions: the median aggregate wins
        cost[(shape, int(n))][impl] = b["ns_per_op"]
        if impl == "wheel" and "advance_ns" in b:
            cost[(shape, int(n))]["advance"] = b["advance_ns"]
    return doc.get("context", {}), cost


def main(path):
    context, cost = load(path)
    print(f"\nwheel benchmarks: {context.get('date', '')}, "
          f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz")
    print("ns per operation; for expire and renew, 'advance' is the part of the wheel's\n"
          "cost spent inside lw_wheel_advance (the rest is popping the due list)\n")
    print(f"{'shape':<10}{'pending':>9}" + "".join(f"{i + ' ns':>12}" for i in IMPLS)
          + f"{'wheel/heap':>12}{'wheel/libev':>13}{'advance ns':>12}")
    for (shape, n) in sorted(cost, key=lambda k: (SHAPES.index(k[0]), k[1])):
        row = cost[(shape, n)]
        cells = "".join(f"{row[i]:>12.1f}" if i in row else f"{'-':>12}" for i in IMPLS)
        ratios = "".join(
            f"{row['wheel'] / row[b]:>{w}.3f}" if "wheel" in row and b in row else f"{'-':>{w}}"
            for b, w in (("heap", 12), ("libev", 13)))
        adv = f"{row['advance']:>12.1f}" if "advance" in row else f"{'':>12}"
        print(f"{shape:<10}{n:>9}{cells}{ratios}{adv}")

    print("\ntargets at 1M pending:")
    for shape, limits in TARGETS.items():
        row = cost.get((shape, 1000000), {})
        for base, share in limits:
            if "wheel" in row and base in row:
                r = row["wheel"] / row[base]
                met = r <= share
                print(f"  {shape}: wheel/{base} = {r:.3f} (target <= {share:.3f}) "
                      f"{'met' if met else 'NOT met'}")
    row = cost.get(("expire", 1000000), {})
    if "advance" in row:
        met = row["advance"] <= EXPIRE_MAX_NS
        print(f"  expire: lw_wheel_advance {row['advance']:.1f} ns per expired timer "
              f"(target <= {EXPIRE_MAX_NS:.0f}) {'met' if met else 'NOT met'}; "
              f"with popping the due list {row['wheel']:.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
