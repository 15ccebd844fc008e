#!/usr/bin/env python3
"""Print benchmark results as ratios against the baselines of the same run.

    python3 bench/summarize.py bench-wheel.json [bench-engine.json] [bench-lock.json]

bench_wheel: the wheel against a binary heap and libev's timers.
bench_engine: round trips through the engine against redis-benchmark.
bench_lock: lock+unlock against two raw EVALSHAs; renewals against the
single-key pipelined ceiling.

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
ROUNDTRIP_MIN_SHARE = 0.8  # of redis-benchmark's commands/s at the same depth
LOCK_MAX_RATIO = 1.3  # lock+unlock time over two raw EVALSHA round trips


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


def load_rates(doc, key=lambda parts: (parts[1], int(parts[2]))):
    """key(run name's parts) -> items per second, median over repetitions."""
    rates = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred") or "items_per_second" not in b:
            continue
        k = key(b["run_name"].split("/"))
        if b.get("run_type") == "iteration" and k in rates:
            continue
        rates[k] = b["items_per_second"]
    return rates


def locks(doc):
    rates = load_rates(doc, key=lambda parts: "/".join(parts[:-1] if parts[-1].startswith(
        "manual_time") else parts))
    mine, raw = rates.get("lock/lock+unlock"), rates.get("lock/raw-2xevalsha")
    print("\nlocks, one thread, uncontended: pairs/s")
    if mine and raw:
        r = raw / mine  # time per pair over time per two raw round trips
        print(f"  lock+unlock {mine:,.0f}  two raw EVALSHAs {raw:,.0f}  time ratio {r:.3f} "
              f"(target <= {LOCK_MAX_RATIO}) {'met' if r <= LOCK_MAX_RATIO else 'NOT met'}")
    single = rates.get("renew/single-key-pipelined")
    print("renewals, keys/s, against one key per EVALSHA pipelined (the ceiling)")
    for name in sorted(k for k in rates if k.startswith("renew/")):
        ratio = f"{rates[name] / single:.2f}x" if single else "-"
        print(f"  {name:<32}{rates[name]:>12,.0f}  {ratio}")


def roundtrip(doc):
    rates = load_rates(doc)
    print("\nround trips, commands/s (INCR, one connection, pipeline depth D);\n"
          "hiredis-libev: the same libraries in one thread, without the engine\n")
    print(f"{'D':>5}{'engine':>12}{'redis-bench':>13}{'hiredis-libev':>15}"
          f"{'engine/rb':>11}{'engine/raw':>12}  target: engine/rb >= {ROUNDTRIP_MIN_SHARE}")
    for depth in sorted({d for _, d in rates}):
        mine = rates.get(("engine", depth))
        base = rates.get(("redis-benchmark", depth))
        raw = rates.get(("hiredis-libev", depth))
        if mine is None or base is None:
            continue
        r = mine / base
        raw_cells = f"{raw:>15,.0f}" if raw else f"{'-':>15}"
        raw_ratio = f"{mine / raw:>12.3f}" if raw else f"{'-':>12}"
        print(f"{depth:>5}{mine:>12,.0f}{base:>13,.0f}{raw_cells}{r:>11.3f}{raw_ratio}  "
              f"{'met' if r >= ROUNDTRIP_MIN_SHARE else 'NOT met'}")


def main(paths):
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        if not doc.get("benchmarks"):
            continue  # a filter matched nothing in this binary
        first = doc["benchmarks"][0]["run_name"]
        if first.startswith("roundtrip/"):
            roundtrip(doc)
        elif first.startswith(("lock/", "renew/")):
            locks(doc)
        else:
            wheel(path)
    return 0


def wheel(path):
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
