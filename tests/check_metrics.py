#!/usr/bin/env python3
"""check_metrics.py URL [--cluster] - scrape URL once and check the text
with Prometheus's own parser (Debian's python3-prometheus-client): the
HTTP answer (200, Content-Type text/plain; version=0.0.4), every family
with # HELP and # TYPE and the type it should have, no sample outside a
family, counters and gauges not negative, histograms' buckets cumulative
and ending with +Inf equal to _count.  With --cluster the per-node
families too, with a node label on every sample.

On success prints every sample, one a line, as `name{label="v",...} value`
(labels sorted), for test_metrics.c to compare with lw_client_get_stats(),
then `ok: N families`.  On failure says why on stderr and exits 1."""
import math
import re
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("check_metrics: prometheus_client is missing: apt-get install "
             "python3-prometheus-client (scripts/deps.sh installs it)")

# Every family, as the parser names it (a counter without its _total).
FAMILIES = {
    "locks_held": "gauge",
    "locks_at_risk": "gauge",
    "locks_went_at_risk": "counter",
    "locks_recovered": "counter",
    "locks_lost": "counter",
    "locks_lost_late": "counter",
    "worst_lost_late_seconds": "gauge",
    "renewals": "counter",
    "renew_calls": "counter",
    "worst_renewal_lag_seconds": "gauge",
    "worst_tick_late_seconds": "gauge",
    "waiters": "gauge",
    "subscriptions": "gauge",
    "acquires_given_back": "counter",
    "overloaded": "gauge",
    "overloads": "counter",
    "acquires_refused_overload": "counter",
    "renewal_backlog_seconds": "gauge",
    "leases_held": "gauge",
    "leases_at_risk": "gauge",
    "leases_went_at_risk": "counter",
    "leases_recovered": "counter",
    "leases_lost": "counter",
    "lease_renewals": "counter",
    "renewal_lag_seconds": "histogram",
    "acquire_wait_seconds": "histogram",
    "hold_time_seconds": "histogram",
    "commands_sent": "counter",
    "replies": "counter",
    "error_replies": "counter",
    "requests_failed": "counter",
    "timeouts": "counter",
    "reconnects": "counter",
    "script_reloads": "counter",
    "commands_inflight": "gauge",
    "commands_inflight_max": "gauge",
    "requests_waiting": "gauge",
    "requests_taken_late": "counter",
    "tls_handshakes": "counter",
    "tls_resumed": "counter",
    "topology_refreshes": "counter",
    "redirects": "counter",
    "unsettled": "counter",
    "failovers": "counter",
    "master_switches": "counter",
    "redis_clock_jumps": "counter",
    "host_sleeps": "counter",
    "election_terms": "counter",
    "election_vacancies": "counter",
    "election_observers": "gauge",
}
CLUSTER_FAMILIES = {
    "cluster_masters": "gauge",
    "node_commands_sent": "counter",
    "node_replies": "counter",
    "node_error_replies": "counter",
    "node_redirects": "counter",
    "node_reconnects": "counter",
    "node_commands_inflight": "gauge",
    "node_requests_waiting": "gauge",
    "node_renew_calls": "counter",
}
# The labels a family's samples have, and their values, when it has some:
# one sample for each combination of the values.
REASONS = ("reason", {"not_owner", "errors", "expired", "failover", "held_too_long"})
RESULTS = ("result", {"sent", "confirmed", "failed"})
KINDS = ("kind", {"lock", "read", "write", "permit", "fair", "place", "term"})
LABELS = {
    "locks_lost": [REASONS],
    "renewals": [RESULTS],
    "acquires_given_back": [("reason", {"too_late", "replicas"})],
    "leases_held": [KINDS],
    "leases_at_risk": [KINDS],
    "leases_went_at_risk": [KINDS],
    "leases_recovered": [KINDS],
    "leases_lost": [KINDS, REASONS],
    "lease_renewals": [KINDS, RESULTS],
}
NAME = re.compile(r"^leasewheel_[a-z][a-z0-9_]*$")


def fail(why):
    sys.exit("check_metrics: " + why)


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        if r.status != 200:
            fail(f"HTTP {r.status}")
        ctype = r.headers.get("Content-Type")
        if ctype != "text/plain; version=0.0.4":
            fail(f"Content-Type {ctype!r}")
        return r.read().decode("utf-8")


def check_lines(text):
    """What the parser forgives: a # HELP, then a # TYPE, once per family,
    before its samples; a final newline."""
    if not text.endswith("\n"):
        fail("the text does not end with a newline")
    helped, typed = set(), set()
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if name in helped or not NAME.match(name):
                fail(f"line {n}: # HELP of {name} again, or a bad name")
            helped.add(name)
        elif line.startswith("# TYPE "):
            name = line.split(" ")[2]
            if name in typed or name not in helped:
                fail(f"line {n}: # TYPE of {name} again, or without # HELP before")
            typed.add(name)
        elif line.startswith("#") or not line:
            fail(f"line {n}: unexpected {line!r}")
        elif not any(line.startswith(t) and line[len(t)] in "{ _" for t in typed):
            fail(f"line {n}: a sample before its family's # TYPE: {line!r}")


def check_histogram(fam):
    buckets = [s for s in fam.samples if s.name.endswith("_bucket")]
    count = [s.value for s in fam.samples if s.name.endswith("_count")]
    total = [s.value for s in fam.samples if s.name.endswith("_sum")]
    if len(count) != 1 or len(total) != 1 or len(buckets) < 2:
        fail(f"{fam.name}: needs buckets, one _sum and one _count")
    les = [float(s.labels["le"]) for s in buckets]
    if les != sorted(les) or len(set(les)) != len(les) or les[-1] != math.inf:
        fail(f"{fam.name}: le bounds not increasing to +Inf: {les}")
    values = [s.value for s in buckets]
    if values != sorted(values) or values[0] < 0:
        fail(f"{fam.name}: buckets not cumulative: {values}")
    if values[-1] != count[0]:
        fail(f"{fam.name}: +Inf {values[-1]} != _count {count[0]}")
    if total[0] < 0 or (count[0] == 0 and total[0] != 0):
        fail(f"{fam.name}: _sum {total[0]} with _count {count[0]}")


def check_labels(fam, labels):
    """Every combination of the label values once, and no other label."""
    keys = sorted(key for key, _ in labels)
    want = [()]
    for key, values in sorted(labels):
        want = [w + (v,) for w in want for v in sorted(values)]
    got = sorted(tuple(s.labels.get(k) for k in keys) for s in fam.samples)
    if got != sorted(want) or any(sorted(s.labels) != keys for s in fam.samples):
        fail(f"{fam.name}: labels {got}, should be every {keys} of {sorted(want)}")


def check(text, cluster):
    check_lines(text)
    want = dict(FAMILIES, **(CLUSTER_FAMILIES if cluster else {}))
    seen = {}
    for fam in text_string_to_metric_families(text):
        short = fam.name[len("leasewheel_"):]
        if not fam.name.startswith("leasewheel_") or short not in want:
            fail(f"unexpected family {fam.name} ({fam.type})")
        if fam.type != want[short]:
            fail(f"{fam.name} is {fam.type}, should be {want[short]}")
        if not fam.documentation:
            fail(f"{fam.name} has no # HELP")
        if short in seen:
            fail(f"{fam.name} twice")
        seen[short] = fam
        for s in fam.samples:
            if s.value < 0 or math.isnan(s.value):
                fail(f"{s.name} {s.value}")
            if fam.type == "counter" and s.value != int(s.value):
                fail(f"{s.name} {s.value}: a counter of whole events")
        if fam.type == "histogram":
            check_histogram(fam)
        elif short in LABELS:
            check_labels(fam, LABELS[short])
        elif short.startswith("node_"):
            if not fam.samples or any(list(s.labels) != ["node"] for s in fam.samples):
                fail(f"{fam.name}: every sample needs a node label")
        elif len(fam.samples) != 1 or fam.samples[0].labels:
            fail(f"{fam.name}: one sample without labels expected")
    missing = set(want) - set(seen)
    if missing:
        fail(f"missing families: {sorted(missing)}")
    return seen


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    families = check(scrape(args[0]), "--cluster" in args[1:])
    for fam in families.values():
        for s in fam.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            value = str(int(s.value)) if s.value.is_integer() else repr(s.value)
            print(f"{s.name}{{{labels}}} {value}" if labels else f"{s.name} {value}")
    print(f"ok: {len(families)} families")


if __name__ == "__main__":
    main()
