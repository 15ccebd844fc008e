#!/bin/sh
# A small sweep on the private redis-server, at a 60 ms lease (tick 2 ms),
# so that a few thousand locks reach the limit: its summary plans for no
# more than what held, and its plot ends at the last count that held.
#   - the table: "plan for at most P" is at most the measured capacity H
#     ("measured capacity at this lease: H locks held") when a limit was
#     found, at most what held otherwise, and at most 70% of the ceiling's
#     estimate when there is one; the JSON's "capacity" says the same;
#   - the plot: gnuplot is given (a gnuplot first in PATH, which keeps
#     what it is sent) only the runs that held, each at the count it held,
#     sorted, the last at H; the capacity and the plan marked.
# $1: the lwbench to run; --ceiling: with the ceiling's floods (5 s a
# step: suite long), else --no-ceiling (about 15 s).
lwbench=$1
ceiling=--no-ceiling
[ "${2:-}" = --ceiling ] && ceiling=
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "lwbench --sweep $ceiling: $*" >&2; fails=1; }

# gnuplot, as lwbench runs it (popen("gnuplot")): what it is sent kept,
# and drawn by the real one when there is one.
mkdir "$work/bin"
real=$(command -v gnuplot || true)
cat >"$work/bin/gnuplot" <<EOF
#!/bin/sh
if [ -n "$real" ]; then tee "$work/plot.gp" | "$real"; else cat >"$work/plot.gp"; fi
EOF
chmod +x "$work/bin/gnuplot"

# shellcheck disable=SC2086 # $ceiling: no word, or one
PATH="$work/bin:$PATH" "$lwbench" --sweep $ceiling --locks 2000 --lease-ms 60 --tick-ms 2 \
    --duration-s 0.5 --json "$work/sweep.json" --plot "$work/sweep.png" \
    >"$work/out" 2>"$work/err"
code=$?
cat "$work/out"
[ "$code" = 0 ] || [ "$code" = 1 ] || fail "status $code: $(cat "$work/err")"
[ -s "$work/plot.gp" ] || fail "gnuplot was not run: $(cat "$work/err")"
[ -z "$real" ] || [ -s "$work/sweep.png" ] || fail "no plot drawn: $(cat "$work/err")"

python3 -I -S - "$work/out" "$work/sweep.json" "$work/plot.gp" "$ceiling" <<'PY' || fail "the summary"
import json, re, sys
out = open(sys.argv[1]).read()
doc = json.load(open(sys.argv[2]))
plot = open(sys.argv[3]).read()
no_ceiling = sys.argv[4] == "--no-ceiling"
cap = doc["capacity"]
bad = []

def figure(pattern):  # a line of the summary under the table
    m = re.search("^" + pattern, out, re.M)
    return int(m.group(1)) if m else None

plan = figure(r"plan for at most (\d+) ")
measured = figure(r"measured capacity at this lease: (\d+) locks held")
largest = figure(r"largest lock count held: (\d+) ")
estimate = figure(r"capacity estimate at this lease: (\d+) locks at the ceiling")
held_runs = [r for r in doc["runs"] if r["held"] and not r["interrupted"]]
most = max((r["acquired"] for r in held_runs), default=0)
if largest != most or cap["held_locks"] != most:
    bad.append(f"largest held {largest}, JSON {cap['held_locks']}, runs {most}")
if plan is not None:
    if plan > most:
        bad.append(f"plan {plan} above what held, {most}")
    if measured is not None and plan > measured:
        bad.append(f"plan {plan} above the measured capacity {measured}")
    if measured is not None and plan > 0.7 * measured + 1:
        bad.append(f"plan {plan} above 70% of the measured capacity {measured}")
    if estimate is not None and plan > 0.7 * estimate + 1:
        bad.append(f"plan {plan} above 70% of the estimate {estimate}")
    if cap["plan_locks"] != plan:
        bad.append(f"JSON plan {cap['plan_locks']}, table {plan}")
elif most and (measured or estimate):
    bad.append("no plan figure though something held and a limit or a ceiling was measured")
if measured is not None and cap["measured_capacity_locks"] != measured:
    bad.append(f"JSON measured {cap['measured_capacity_locks']}, table {measured}")
if no_ceiling and (estimate is not None or cap["estimate_locks"] is not None):
    bad.append("an estimate without a ceiling")
if not no_ceiling and estimate is None:
    bad.append("no estimate with the ceiling measured")

# The plot: the data block's rows are the runs that held, by count held.
rows = re.search(r"\$runs << EOD\n(.*?)EOD\n", plot, re.S)
xs = [int(line.split()[0]) for line in rows.group(1).splitlines()] if rows else []
if xs != sorted(r["acquired"] for r in held_runs):
    bad.append(f"plotted {xs}, not the held runs {sorted(r['acquired'] for r in held_runs)}")
if xs and xs[-1] != most:
    bad.append(f"the plot's last point {xs[-1]}, not the last that held, {most}")
if measured is not None and f"set arrow from {measured}, graph 0" not in plot:
    bad.append("the measured capacity is not marked")
if plan is not None and f"'plan {plan}'" not in plot:
    bad.append("the plan is not marked")
if bad:
    sys.exit("; ".join(bad))
print(f"held {most}, measured {measured}, estimate {estimate}, plan {plan}, plotted {xs}")
PY
[ "$fails" = 0 ] || cat "$work/err" >&2
exit $fails
