#!/usr/bin/env python3
"""docs/grafana/render.py [--build DIR] [--out FILE.png] [--seconds S]

Draws docs/img/dashboard.png, the guide's picture of the dashboard
(docs/guide/dashboard.md), from real data: a private redis-server on a
free loopback port, docs/examples/metrics_server on it (the endpoint:
three locks on a 3 s lease and one taken every 100 ms), and lwbench
loading the same Redis with 50000 watchdog locks.  Its endpoint is
scraped every 0.5 s for S seconds (default 20); 8 s in, Redis is paused
for 2 s (DEBUG SLEEP) so that the at-risk panel has something to show.
Each panel of leasewheel.json is then drawn with gnuplot from the
scrapes, computed as its PromQL would (rates over four scrapes, as
Grafana's $__rate_interval is at least four scrape intervals).

Needs a build with the tests and lwbench (DIR, default build/test:
`meson setup build/test && ninja -C build/test`), redis-server and
gnuplot (Debian's gnuplot-nox).  Every process it starts is stopped by
its pid before it returns; everything listens on 127.0.0.1 only."""
import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERVAL = 0.5
WINDOW = 4  # scrapes per rate, as $__rate_interval
PAUSE_AT, PAUSE_S = 8.0, 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port, *args):
    """Send one command; the socket, its reply unread (DEBUG SLEEP answers
    when the pause is over)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"*{len(args)}\r\n".encode() +
              b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args))
    return s


def wait_redis(port, proc):
    for _ in range(100):  # 5 s
        if proc.poll() is not None:
            sys.exit("render: redis-server exited")
        try:
            with redis_command(port, "PING") as s:
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("render: redis-server did not answer")


def parse(text):
    """{(name, ((label, value), ...)): value} of the text format."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        name, _, labels = head.partition("{")
        pairs = tuple(sorted(tuple(kv.split("=", 1)) for kv in labels.rstrip("}").split(",")
                             if kv)) if labels else ()
        out[(name, tuple((k, v.strip('"')) for k, v in pairs))] = float(value)
    return out


def scrape(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        return parse(r.read().decode())


# --- the panels' series, from the scrapes ------------------------------------

def by(scr, name, label, where=None):
    """sum by (label) (name{where}): {label value: value}."""
    out = {}
    for (n, labels), v in scr.items():
        d = dict(labels)
        if n == name and all(d.get(k) == w for k, w in (where or {}).items()):
            out[d.get(label, "")] = out.get(d.get(label, ""), 0) + v
    return out


def total(scr, name):
    return sum(by(scr, name, "").values())


def quantile(q, before, after):
    """histogram_quantile(q, increase of the lag buckets between two
    scrapes), as Prometheus interpolates it; NaN without observations."""
    name = "leasewheel_renewal_lag_seconds_bucket"
    b = sorted((float(dict(l)["le"]), after[(n, l)] - before.get((n, l), 0))
               for (n, l) in after if n == name)
    if not b or b[-1][1] <= 0:
        return math.nan
    rank = q * b[-1][1]
    lo, below = 0.0, 0.0
    for le, cum in b:
        if cum >= rank:
            if le == math.inf:
                return lo
            return lo + (le - lo) * (rank - below) / (cum - below) if cum > below else lo
        lo, below = le, cum
    return lo


def series(times, scrapes):
    """Each panel's lines: {panel title: (unit, [(legend, [values])])}."""
    panels = {}

    def add(title, unit, legend, values):
        panels.setdefault(title, (unit, []))[1].append((legend, values))

    def windows():
        for i in range(len(scrapes)):
            j = max(0, i - WINDOW)
            yield scrapes[j], scrapes[i], (times[i] - times[j]) or math.nan

    kinds = sorted({k for s in scrapes for k, v in by(s, "leasewheel_leases_held", "kind").items()
                    if v} | {"lock"})
    for k in kinds:
        add("Held leases by kind", "", k,
            [by(s, "leasewheel_leases_held", "kind").get(k, 0) for s in scrapes])
        add("At risk by kind", "", "at risk: " + k,
            [by(s, "leasewheel_leases_at_risk", "kind").get(k, 0) for s in scrapes])
        add("At risk by kind", "", "recovered: " + k,
            [by(a, "leasewheel_leases_recovered_total", "kind").get(k, 0) -
             by(b, "leasewheel_leases_recovered_total", "kind").get(k, 0)
             for b, a, _ in windows()])
    add("Lost by kind and reason", "", "lost (every kind, reason)",
        [total(a, "leasewheel_leases_lost_total") - total(b, "leasewheel_leases_lost_total")
         for b, a, _ in windows()])
    for r in ("sent", "confirmed", "failed"):
        add("Renewals per second", "/s", r,
            [(by(a, "leasewheel_renewals_total", "result").get(r, 0) -
              by(b, "leasewheel_renewals_total", "result").get(r, 0)) / dt
             for b, a, dt in windows()])
    for q in (0.5, 0.99):
        add("Renewal lag", "ms", f"p{round(q * 100)}",
            [quantile(q, b, a) * 1000 for b, a, _ in windows()])
    add("Renewal lag", "ms", "worst ever",
        [total(s, "leasewheel_worst_renewal_lag_seconds") * 1000 for s in scrapes])
    add("Admission refusals", "", "refused/s",
        [(total(a, "leasewheel_acquires_refused_overload_total") -
          total(b, "leasewheel_acquires_refused_overload_total")) / dt for b, a, dt in windows()])
    add("Admission refusals", "", "overloaded now",
        [total(s, "leasewheel_overloaded") for s in scrapes])
    add("Reconnects", "", "client",
        [total(a, "leasewheel_reconnects_total") - total(b, "leasewheel_reconnects_total")
         for b, a, _ in windows()])
    add("Commands per second per node", "/s", "all",
        [(total(a, "leasewheel_commands_sent_total") - total(b, "leasewheel_commands_sent_total"))
         / dt for b, a, dt in windows()])
    add("Commands per second per node", "/s", "failed/s",
        [(total(a, "leasewheel_requests_failed_total") -
          total(b, "leasewheel_requests_failed_total")) / dt for b, a, dt in windows()])
    add("In flight", "", "in flight", [total(s, "leasewheel_commands_inflight") for s in scrapes])
    add("In flight", "", "waiting", [total(s, "leasewheel_requests_waiting") for s in scrapes])
    return panels


def draw(panels, times, out, titles, note):
    missing = set(panels) - set(titles)
    if missing:  # the picture must show the dashboard's panels, by their names
        sys.exit(f"render: not panels of leasewheel.json: {sorted(missing)}")
    order = [t for t in titles if t in panels]
    cols = 3
    rows = math.ceil(len(order) / cols)
    with tempfile.TemporaryDirectory() as tmp:
        script = [f"set terminal pngcairo size 1200,{250 * rows + 40} font ',9' noenhanced",
                  f"set output '{out}'",
                  f"set multiplot layout {rows},{cols} title '{note}'",
                  "set grid", "set key top left opaque box", "set xlabel 'seconds into the run'",
                  "set datafile missing 'nan'", "set xrange [0:*]", "set style fill solid 0.3"]
        for n, title in enumerate(order):
            unit, lines = panels[title]
            data = Path(tmp) / f"p{n}.dat"
            with open(data, "w") as f:
                for i, t in enumerate(times):
                    f.write(" ".join([f"{t:.2f}"] +
                                     [f"{v[i]:.6g}" if not math.isnan(v[i]) else "nan"
                                      for _, v in lines]) + "\n")
            top = max([v for _, vs in lines for v in vs if not math.isnan(v)] + [0])
            script.append(f"set title '{title}'")
            script.append(f"set ylabel '{unit}'")
            script.append(f"set yrange [0:{max(1.0, top * 1.3):.6g}]")
            script.append("plot " + ", ".join(
                f"'{data}' using 1:{c + 2} with lines lw 1.5 title '{legend}'"
                for c, (legend, _) in enumerate(lines)))
        script.append("unset multiplot")
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build/test"))
    ap.add_argument("--out", default=str(ROOT / "docs/img/dashboard.png"))
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    build = Path(args.build)
    example, lwbench = build / "docs/examples/metrics_server", build / "bench/lwbench"
    for exe in (example, lwbench):
        if not os.access(exe, os.X_OK):
            sys.exit(f"render: {exe} is missing: meson setup {build} && ninja -C {build}")
    with open(ROOT / "docs/grafana/leasewheel.json") as f:
        titles = [p["title"] for p in json.load(f)["panels"] if p["type"] != "row"]

    procs, pause = [], None
    times, scrapes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            port = free_port()
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", tmp, "--enable-debug-command", "local"],
                stdout=subprocess.DEVNULL))
            wait_redis(port, procs[0])
            procs.append(subprocess.Popen(
                [str(example), str(port), "0", str(int(args.seconds) + 30)],
                stdout=subprocess.PIPE, text=True))
            line = procs[-1].stdout.readline()  # "listening on 127.0.0.1:PORT"
            if not line.startswith("listening on 127.0.0.1:"):
                sys.exit(f"render: metrics_server said {line!r}")
            url = f"http://{line.split()[-1]}/metrics"
            with open(Path(tmp) / "lwbench.txt", "w") as log:
                procs.append(subprocess.Popen(
                    [str(lwbench), "-r", f"127.0.0.1:{port}", "--locks", "50000",
                     "--duration-s", str(args.seconds), "--no-ceiling"],
                    stdout=log, stderr=subprocess.STDOUT))
            start = time.monotonic()
            for i in range(int(args.seconds / INTERVAL) + 1):  # bounded
                time.sleep(max(0.0, start + i * INTERVAL - time.monotonic()))
                if pause is None and i * INTERVAL >= PAUSE_AT:
                    pause = redis_command(port, "DEBUG", "SLEEP", str(PAUSE_S))
                try:
                    scrapes.append(scrape(url))
                    times.append(time.monotonic() - start)
                except OSError as e:
                    print(f"render: scrape {i}: {e}", file=sys.stderr)
        finally:
            if pause:
                pause.close()
            for p in reversed(procs):
                if p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(10)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        # What lwbench said: that it held its locks while the scrapes ran.
        with open(Path(tmp) / "lwbench.txt") as log:
            print("".join(log.readlines()[-6:]), end="", file=sys.stderr)
        if len(scrapes) < WINDOW * 2:
            sys.exit(f"render: {len(scrapes)} scrapes only")
        note = (f"metrics_server (3 locks, 3 s lease) on a redis-server lwbench loads with "
                f"50000 locks; Redis paused {PAUSE_S} s at {PAUSE_AT:g} s; "
                f"scraped every {INTERVAL} s")
        draw(series(times, scrapes), times, args.out, titles, note)
    print(f"render: {args.out}: {len(scrapes)} scrapes, {os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
