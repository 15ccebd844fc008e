#!/usr/bin/env python3
"""check_dashboard.py DASHBOARD.json URL... - the Grafana dashboard against
the metrics a client really exports: scrape every URL once (the text of
lw_client_format_metrics()), then check that the JSON parses, that it
takes its Prometheus from the ${DS_PROMETHEUS} input, and that every panel
but a row has targets, each with a PromQL expression whose metric names
are all series of the scrapes (a histogram's _bucket, _sum and _count, a
counter as its samples are named) and whose label names, in matchers,
groupings and legends, are labels of those series (or the target labels
Prometheus adds, instance and job).  A target drawn in a unit per second
(the panel's, or an override's for it: ops/s, req/s, ...) plots rate()
or irate() of a counter, each of its series: a gauge or an increase() on
that axis would be read as a rate.
The template variables' label_values() queries too.

Python's standard library only: the text format is read here, the parts
the dashboard needs (families' types, samples' names and label names);
check_metrics.py checks the text itself with Prometheus's parser.

With --self-check, the checks are run on copies of the dashboard with a
fault planted in each (a metric misspelt, a panel without targets, ...),
each of which must be caught.  Prints `ok: ...` and exits 0, or says why
on stderr and exits 1."""
import copy
import json
import re
import sys
import urllib.request


class Bad(Exception):
    pass


# --- the exposition text -------------------------------------------------

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+(\s+\d+)?$")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"\s*,?')
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}


def parse_exposition(text):
    """{series name: set of its label names}, and {family: type}, from
    the text format 0.0.4.  A sample's name must be its family's (or, for
    a histogram, the family's with _bucket, _sum or _count): one that is
    not is an error, not a series."""
    types, series = {}, {}
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line.startswith("#") or not line.strip():
            continue
        else:
            m = SAMPLE.match(line)
            if not m:
                raise Bad(f"scrape line {n}: not a sample: {line!r}")
            name, labels = m.group(1), m.group(3) or ""
            family = next((f for f, kind in types.items()
                           for s in SUFFIXES.get(kind, ("",)) if name == f + s), None)
            if family is None:
                raise Bad(f"scrape line {n}: {name} belongs to no # TYPE before it")
            names = set(LABEL.findall(labels))
            series.setdefault(name, set()).update(names)
    return series, types


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        if r.status != 200:
            raise Bad(f"{url}: HTTP {r.status}")
        return r.read().decode("utf-8")


# --- PromQL ----------------------------------------------------------------

# Functions and aggregations (Prometheus 2.x): an identifier before "(" must
# be one, so that a misspelt function is not taken for a metric.
FUNCTIONS = set("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time
ceil changes clamp clamp_max clamp_min cos cosh count_over_time day_of_month
day_of_week day_of_year days_in_month deg delta deriv exp floor
histogram_avg histogram_count histogram_fraction histogram_quantile
histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta
increase irate label_join label_replace last_over_time ln log10 log2
mad_over_time max_over_time min_over_time minute month pi
predict_linear present_over_time quantile_over_time rad rate resets round
scalar sgn sin sinh sort sort_desc sort_by_label sort_by_label_desc sqrt
stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp
vector year
""".split())
AGGREGATIONS = set("sum min max avg group stddev stdvar count count_values bottomk "
                   "topk quantile limitk limit_ratio".split())
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OPERATOR_WORDS = {"and", "or", "unless", "bool", "atan2"}
NUMBER_WORDS = {"inf", "nan"}
# Labels Prometheus adds to every series at scrape time.
TARGET_LABELS = {"instance", "job"}

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<var>\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*)
  | (?P<number>0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<punct>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){},])
""", re.VERBOSE)


def tokens(expr):
    pos, out = 0, []
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise Bad(f"cannot read {expr[pos:pos + 20]!r} in {expr!r}")
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
        pos = m.end()
    return out


def label_list(toks, i, expr):
    """The labels of "( a, b )" at toks[i]; the index after ")"."""
    if i >= len(toks) or toks[i][1] != "(":
        raise Bad(f"a label list expected after a grouping keyword in {expr!r}")
    labels, i = [], i + 1
    while toks[i][1] != ")":
        if toks[i][0] == "ident":
            labels.append(toks[i][1])
        elif toks[i][1] != ",":
            raise Bad(f"{toks[i][1]!r} in a label list in {expr!r}")
        i += 1
    return labels, i + 1


def matchers(toks, i, expr):
    """The label names of "{ a="x", b=~"y" }" at toks[i]; the index after."""
    labels, i = [], i + 1
    while toks[i][1] != "}":
        kind, text = toks[i]
        if kind != "ident" or toks[i + 1][1] not in ("=", "!=", "=~", "!~") \
                or toks[i + 2][0] not in ("string", "var"):
            raise Bad(f"a bad label matcher at {text!r} in {expr!r}")
        labels.append(text)
        i += 3
        if toks[i][1] == ",":
            i += 1
    return labels, i + 1


def read_expr(expr):
    """The metric names of a PromQL expression, each with the label names
    its selector matches on and the function applied to it directly (None
    if none: "rate" in rate(x[5m])); and the label names its grouping
    clauses name.  Functions, aggregations, keywords, numbers, durations
    and Grafana's variables are not metric names."""
    toks = tokens(expr)
    selectors, grouped = [], []
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "ident" and text in GROUPING:
            labels, i = label_list(toks, i + 1, expr)
            grouped += labels
            continue
        if kind == "ident" and text in AGGREGATIONS and following in ("(", "by", "without"):
            pass
        elif kind == "ident" and following == "(":
            if text not in FUNCTIONS:
                raise Bad(f"unknown function {text}() in {expr!r}")
        elif kind == "ident" and (text in OPERATOR_WORDS or text.lower() in NUMBER_WORDS):
            pass
        elif kind == "ident" and text == "offset":
            i += 1  # its duration
        elif kind == "ident":
            labels = []
            applied = toks[i - 2][1] if i >= 2 and toks[i - 1][1] == "(" \
                and toks[i - 2][0] == "ident" else None
            i += 1
            if following == "{":
                labels, i = matchers(toks, i, expr)
            selectors.append((text, labels, applied))
            continue
        elif text == "{":
            raise Bad(f"a selector without a metric name in {expr!r}")
        i += 1
    return selectors, grouped


def check_expr(expr, series, types, where):
    """expr's metric names are series of the scrapes, its labels theirs."""
    try:
        selectors, grouped = read_expr(expr)
    except Bad as e:
        raise Bad(f"{where}: {e}")
    if not selectors:
        raise Bad(f"{where}: no metric in {expr!r}")
    carried = set(TARGET_LABELS)
    for name, labels, _ in selectors:
        if name not in series:
            hint = ""
            if types.get(name) == "histogram":
                hint = " (a histogram: query its _bucket, _sum or _count)"
            elif name + "_total" in series:
                hint = f" (a counter: {name}_total)"
            raise Bad(f"{where}: {name} is not a series the client exports{hint}: {expr!r}")
        own = series[name] | TARGET_LABELS
        for label in labels:
            if label not in own:
                raise Bad(f"{where}: {name} has no label {label}: {expr!r}")
        carried |= own
    for label in grouped:
        if label not in carried:
            raise Bad(f"{where}: grouping by {label}, which no series here has: {expr!r}")
    return [name for name, _, _ in selectors], carried


# Grafana's units of a rate per second.
PER_SECOND_UNITS = {"ops", "reqps", "rps", "wps", "iops", "cps", "pps", "mps"}
RATES = {"rate", "irate"}


def is_counter(name, types):
    """A counter's sample, or a histogram's or summary's count, sum or
    bucket (counters too)."""
    if types.get(name) == "counter" or \
            (name.endswith("_total") and types.get(name[:-len("_total")]) == "counter"):
        return True
    return any(name.endswith(s) and types.get(name[:-len(s)]) in ("histogram", "summary")
               for s in ("_bucket", "_count", "_sum"))


def unit_of(panel, target):
    """The unit a target is drawn in: an override's for its refId or
    legend, else the panel's."""
    unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        m = o.get("matcher", {})
        if (m.get("id") == "byFrameRefID" and m.get("options") == target.get("refId")) or \
                (m.get("id") == "byName" and m.get("options") == target.get("legendFormat")):
            unit = next((p.get("value") for p in o.get("properties", [])
                         if p.get("id") == "unit"), unit)
    return unit


def check_per_second(expr, unit, types, where):
    """On a per-second axis, every series is rate() or irate() of a
    counter."""
    if unit not in PER_SECOND_UNITS:
        return
    selectors, _ = read_expr(expr)
    for name, _, applied in selectors:
        if not is_counter(name, types):
            raise Bad(f"{where}: {name} is a {types.get(name, 'gauge')}, not a counter, drawn "
                      f"in {unit} (per second): {expr!r}")
        if applied not in RATES:
            how = f"{applied}()" if applied else "as it is"
            raise Bad(f"{where}: the counter {name} is drawn {how} in {unit} (per second), "
                      f"not as a rate() or irate(): {expr!r}")


# --- the dashboard -------------------------------------------------------

def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))  # a collapsed row's


def uses_input(ds):
    return isinstance(ds, dict) and ds.get("type") == "prometheus" \
        and ds.get("uid") == "${DS_PROMETHEUS}"


LEGEND = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
LABEL_VALUES = re.compile(r"^label_values\((?:(.*),)?\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$")


def check_dashboard(dash, series, types):
    """Every check on the parsed dashboard; the metric names used."""
    used = set()
    inputs = [i.get("name") for i in dash.get("__inputs", [])]
    if "DS_PROMETHEUS" not in inputs:
        raise Bad("no DS_PROMETHEUS in __inputs: Grafana's import would not ask for one")
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        raise Bad(f"schemaVersion {dash.get('schemaVersion')!r}")
    panels = list(all_panels(dash.get("panels", [])))
    ids = [p.get("id") for p in panels]
    if len(set(ids)) != len(ids) or None in ids:
        raise Bad(f"panel ids missing or repeated: {ids}")
    graphs = 0
    for p in panels:
        where = f"panel {p.get('id')} {p.get('title')!r}"
        if not p.get("title") or "gridPos" not in p:
            raise Bad(f"{where}: no title or gridPos")
        if p.get("type") == "row":
            continue
        graphs += 1
        if not uses_input(p.get("datasource")):
            raise Bad(f"{where}: datasource is not ${{DS_PROMETHEUS}}")
        targets = p.get("targets") or []
        if not targets:
            raise Bad(f"{where}: no targets")
        for t in targets:
            expr = t.get("expr")
            if not isinstance(expr, str) or not expr.strip():
                raise Bad(f"{where}: a target without an expr")
            if "datasource" in t and not uses_input(t["datasource"]):
                raise Bad(f"{where}: target {t.get('refId')}: datasource is not ${{DS_PROMETHEUS}}")
            names, carried = check_expr(expr, series, types, where)
            check_per_second(expr, unit_of(p, t), types, where)
            used.update(names)
            for label in LEGEND.findall(t.get("legendFormat") or ""):
                if label not in carried:
                    raise Bad(f"{where}: legend {{{{{label}}}}}, a label no series has: {expr!r}")
    if not graphs:
        raise Bad("no panels")
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = LABEL_VALUES.match(q or "")
        where = f"variable {v.get('name')}"
        if not m:
            raise Bad(f"{where}: not a label_values() query: {q!r}")
        expr, label = m.group(1), m.group(2)
        if expr:
            names, _ = check_expr(expr, series, types, where)
            if label not in set().union(*(series[n] for n in names)) | TARGET_LABELS:
                raise Bad(f"{where}: no label {label} on {expr}")
            used.update(names)
    return used, graphs


# --- planted faults: each must be caught --------------------------------------

def first_target(dash):
    return next(t for p in all_panels(dash["panels"]) for t in p.get("targets", []))


def misspell(dash):
    t = first_target(dash)
    t["expr"] = re.sub(r"leasewheel_[a-z_]+", "leasewheel_locks_helt", t["expr"], count=1)


def histogram_unsuffixed(dash):
    t = first_target(dash)
    t["expr"] = "histogram_quantile(0.99, sum by (le) (rate(leasewheel_renewal_lag_seconds[5m])))"


def gauge_suffixed(dash):
    first_target(dash)["expr"] = "sum(leasewheel_locks_held_count)"


def no_targets(dash):
    next(p for p in all_panels(dash["panels"]) if p.get("type") != "row")["targets"] = []


def bad_function(dash):
    first_target(dash)["expr"] = "sum(rat(leasewheel_renewals_total[5m]))"


def bad_label(dash):
    first_target(dash)["expr"] = "sum by (reson) (leasewheel_locks_lost_total)"


def bad_matcher(dash):
    first_target(dash)["expr"] = 'sum(leasewheel_leases_held{knd="lock"})'


def bad_legend(dash):
    t = next(t for p in all_panels(dash["panels"]) for t in p.get("targets", [])
             if "by (kind)" in t["expr"])
    t["legendFormat"] = "{{knd}}"


def ops_panel(dash):
    return next(p for p in all_panels(dash["panels"])
                if p.get("fieldConfig", {}).get("defaults", {}).get("unit") == "ops")


def gauge_per_second(dash):
    """A gauge (a count of things) on an ops/s axis."""
    p = ops_panel(dash)
    t = copy.deepcopy(p["targets"][0])
    t["refId"], t["expr"] = "Z", "max(leasewheel_locks_held)"
    p["targets"].append(t)


def counter_not_rated(dash):
    """A counter's increase() (a count per interval) on an ops/s axis."""
    p = ops_panel(dash)
    t = copy.deepcopy(p["targets"][0])
    t["refId"], t["expr"] = "Z", "sum(increase(leasewheel_renewals_total[5m]))"
    p["targets"].append(t)


def other_datasource(dash):
    next(p for p in all_panels(dash["panels"]) if p.get("type") != "row")["datasource"] = \
        {"type": "prometheus", "uid": "my-prometheus"}


FAULTS = [misspell, histogram_unsuffixed, gauge_suffixed, no_targets, bad_function,
          bad_label, bad_matcher, bad_legend, other_datasource, gauge_per_second,
          counter_not_rated]


def self_check(dash, series, types):
    for fault in FAULTS:
        planted = copy.deepcopy(dash)
        fault(planted)
        try:
            check_dashboard(planted, series, types)
        except Bad as e:
            print(f"caught {fault.__name__}: {e}")
            continue
        raise Bad(f"the planted fault {fault.__name__} was not caught")


def main():
    args = sys.argv[1:]
    selfcheck = "--self-check" in args
    args = [a for a in args if a != "--self-check"]
    if len(args) < 2:
        sys.exit(__doc__)
    try:
        with open(args[0], encoding="utf-8") as f:
            try:
                dash = json.load(f)
            except json.JSONDecodeError as e:
                raise Bad(f"{args[0]}: not JSON: {e}")
        series, types = {}, {}
        for url in args[1:]:
            s, t = parse_exposition(scrape(url))
            for name, labels in s.items():
                series.setdefault(name, set()).update(labels)
            types.update(t)
        used, graphs = check_dashboard(dash, series, types)
        if selfcheck:
            self_check(dash, series, types)
    except Bad as e:
        sys.exit(f"check_dashboard: {e}")
    for name in sorted(used):
        print(name)
    print(f"ok: {graphs} panels, {len(used)} metrics, all exported "
          f"({len(series)} series scraped)")


if __name__ == "__main__":
    main()
