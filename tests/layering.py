#!/usr/bin/env python3
"""layering.py SOURCE_ROOT - calls between files go one way, in adapters/
and in core/.

In adapters/ (docs/design.md, "Who calls whom in adapters/"): the engine and the links
reach a topology only through its table (adapters/topology.h), a connection
knows nothing above it, and the pub/sub router asks the engine's topology,
never a topology by name.  Fails, naming the file and line, if

  - adapters/link.c, conn.c, pubsub.c or subscriber.c includes cluster.h or
    sentinel.h (a topology's own header, should one exist);
  - adapters/conn.c includes link.h, topology.h, engine.h or pubsub.h;
  - adapters/fifo.h, link.h or topology.h includes engine.h (a request is
    request.h's; the engine's interface is above them);
  - adapters/engine.c, link.c, conn.c, pubsub.c or subscriber.c names a
    cluster_* or sentinel_* identifier: a call, a call split from its `(`,
    a function's address (`&cluster_x`, `= cluster_x`), a type.  A
    member (`->sentinel_master`, `.cluster_x`) is a field, not a name of
    the topology's, and comments and string literals do not count.

In core/ (docs/design.md, "Who calls whom in core/"): the files are in
layers, CORE_LAYERS below, top to bottom, and a file calls down only.
Fails, naming the file and line, if

  - a core/*.c file names a function (or data) that another core/ file
    defines, not static, when that file is in its own layer or one above
    (a member, a comment or a literal does not count), but for the calls
    up that UP_CALLS lists, each with its reason in design.md;
  - a core/*.c file is in no layer (a new file is placed by hand, where
    its calls say).

Across the house (docs/design.md, "Layout"): the folders are in floors,
HOUSE below, bottom to top: base/ (the error table), wheel/, adapters/,
core/.  A file calls down or on its own floor only.  Fails, naming the
file and line, if a .c file of a folder names a function (or data) that
a .c file of a folder above defines, not static, or includes a header
that only a folder above has.

Comments are stripped here, by a scanner of C's comments and literals that
keeps every newline, so line numbers are the source's, whatever the
compiler.  A file that is missing, unreadable, has an unterminated comment
or literal, or holds no code once stripped fails the check: it never passes
by reading nothing.

layering.py --self-check SOURCE_ROOT - the check itself works: on a copy of
the real files it passes, and it fails, at the right line, on each kind of
violation planted in the copy (and on a missing or empty file, and on a
core/ file in no layer); comments, strings, members and calls down planted
the same way do not fail it."""
import os
import re
import shutil
import sys
import tempfile

TOPOLOGY_HEADERS = {"cluster.h", "sentinel.h"}
ABOVE_CONN = {"link.h", "topology.h", "engine.h", "pubsub.h"}
INCLUDES = {
    "link.c": TOPOLOGY_HEADERS,
    "conn.c": TOPOLOGY_HEADERS | ABOVE_CONN,
    "pubsub.c": TOPOLOGY_HEADERS,
    "subscriber.c": TOPOLOGY_HEADERS,
    "fifo.h": {"engine.h"},
    "link.h": {"engine.h"},
    "topology.h": {"engine.h"},
}
NAMES = ["engine.c", "link.c", "conn.c", "pubsub.c", "subscriber.c"]

# core/, top to bottom: the client (start, stop, the engine's hooks) and
# its metrics; the lock and semaphore calls and their ops; the ways a lock
# is asked for (its scripts and its line; a fair lock's place in Redis's
# queue), acquires waiting for replicas or admission; what the ways share;
# the waiting in line (every kind's), the held leases (the watchdog, lease
# holds); the channels waiters wait on (their subscription and line) and
# the reports; the leaves, which call nothing of core/.  docs/design.md
# draws it ("Who calls whom in core/"), a file a line with its words:
# tests/design_map.py fails when the map differs, and its --write lays
# the map out again from this list.
CORE_LAYERS = [
    ["client.c", "metrics.c"],
    ["multi.c", "election.c"],
    ["lock.c", "semaphore.c"],
    ["call.c"],
    ["way_lock.c", "way_rw.c", "way_fair.c", "way_elect.c", "replicas.c", "admission.c"],
    ["way.c"],
    ["waiters.c", "watchdog.c", "holds.c"],
    ["channel.c", "report.c"],
    ["kinds.c"],
    ["kind_lock.c", "kind_read.c", "kind_write.c", "kind_permit.c", "kind_place.c"],
    ["publish.c", "refs.c", "owner.c", "status.c", "stats.c", "scripts.c", "version.c"],
    ["kind.c", "redis_clock.c", "tag.c"],
]
# The calls up that are meant, each with its reason in design.md (a
# bullet whose bold lead names the file and the function:
# tests/design_map.py fails on one without): none now.  A held-back acquire is let go or ended through the row its acquire
# path gave admission.c (struct admit_rule), a waiter's op through the row
# it gave waiters.c (struct wait_rule), and a WAIT's reply ends its
# acquires through the callback each carries: none names a function above
# it.
UP_CALLS = {}

# On the stripped line, that it is an include; on the source's, what it
# includes (the stripper empties a quoted name, as any literal).
DIRECTIVE_RE = re.compile(r"[ \t]*#[ \t]*include(?![A-Za-z0-9_])")
INCLUDE_RE = re.compile(r'[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]')
NAME_RE = re.compile(r"(?<![A-Za-z0-9_])(?:cluster|sentinel)_[A-Za-z0-9_]*")


class Unreadable(Exception):
    pass


def fail(out, rel, no, lines, message):
    """Say where (the file, the line and its text) and why; False."""
    out.write(f"{rel}:{no}: {lines[no - 1].strip()}\n")
    out.write(f"layering: {message}\n")
    return False


def blank(text):
    """text with every character but newlines made a space."""
    return "".join(c if c == "\n" else " " for c in text)


def strip_c(text):
    """C source without comments, string and character literals emptied;
    every character keeps its line and column."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise Unreadable("a comment is never closed")
            out.append(blank(text[i:end + 2]))
            i = end + 2
        elif text.startswith("//", i):
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text.startswith("\\\n", j) else 1
            out.append(blank(text[i:j]))
            i = j
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                if text[j] == "\n":
                    raise Unreadable("a literal is never closed")
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise Unreadable("a literal is never closed")
            out.append(quote + blank(text[i + 1:j]) + quote)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def code_of(path):
    """The stripped code of a file; Unreadable when it cannot be had."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Unreadable(str(e))
    code = strip_c(text)
    if not code.strip():
        raise Unreadable("no code in it once its comments are stripped")
    return text, code


def line_at(code, pos):
    return code.count("\n", 0, pos) + 1


def is_member(code, pos):
    before = code[:pos].rstrip()
    return before.endswith(".") or before.endswith("->")


def is_tag(code, pos):
    """A struct, union or enum tag: a type's name, not a call (a public
    function and its result's struct may share a name)."""
    return re.search(r"\b(struct|union|enum)$", code[:pos].rstrip()) is not None


# The folders, bottom to top: a file names nothing of a floor above.
HOUSE = ["base", "wheel", "adapters", "core"]


def check(root, out):
    """Every rule on root's folders; the failures written to out.  True
    when none."""
    ok = check_adapters(root, out)
    ok = check_house(root, out) and ok
    return check_core(root, out) and ok


def floor_files(root, folder, ext):
    try:
        return sorted(f for f in os.listdir(os.path.join(root, folder)) if f.endswith(ext))
    except OSError:
        return []


def check_house(root, out):
    ok = True
    above_defs, above_headers = {}, {}
    for floor in range(len(HOUSE) - 1, -1, -1):
        folder = HOUSE[floor]
        own_headers = set(floor_files(root, folder, ".h"))
        sources = floor_files(root, folder, ".c")
        if not sources:
            out.write(f"layering: {folder}/: cannot be checked: no .c file in it\n")
            ok = False
        codes = {}
        for name in sources:
            rel = f"{folder}/{name}"
            try:
                codes[name] = code_of(os.path.join(root, rel))
            except Unreadable as e:
                out.write(f"layering: {rel}: cannot be checked: {e}\n")
                ok = False
        for name, (text, code) in sorted(codes.items()):
            ok = check_floor_file(f"{folder}/{name}", text, code, own_headers, above_defs,
                                  above_headers, out) and ok
        for name, (text, code) in codes.items():
            for defined in definitions(code)[0]:
                above_defs.setdefault(defined, f"{folder}/{name}")
        for h in own_headers:
            above_headers.setdefault(h, folder)
    return ok


def check_floor_file(rel, text, code, own_headers, above_defs, above_headers, out):
    """rel's code names nothing that a floor above defines, and includes
    none of their headers."""
    ok = True
    own = set().union(*definitions(code))
    lines = text.split("\n")
    for no, line in enumerate(code.split("\n"), 1):
        m = DIRECTIVE_RE.match(line) and INCLUDE_RE.match(lines[no - 1])
        header = m and os.path.basename(m.group(1))
        if header and header in above_headers and header not in own_headers:
            ok = fail(out, rel, no, lines, f"{rel} includes {header}, {above_headers[header]}/'s, "
                      "a floor above: calls between folders go down")
    for m in IDENT_RE.finditer(code):
        other = above_defs.get(m.group(0))
        if (other is None or m.group(0) in own or is_member(code, m.start()) or
                is_tag(code, m.start())):
            continue
        no = line_at(code, m.start())
        ok = fail(out, rel, no, lines, f"{rel} names {m.group(0)}, {other}'s, a floor above: "
                  "calls between folders go down")
    return ok


def check_adapters(root, out):
    ok = True
    files = sorted(set(INCLUDES) | set(NAMES))
    for name in files:
        rel = "adapters/" + name
        try:
            text, code = code_of(os.path.join(root, rel))
        except Unreadable as e:
            out.write(f"layering: {rel}: cannot be checked: {e}\n")
            ok = False
            continue
        lines = text.split("\n")
        for no, line in enumerate(code.split("\n"), 1):
            m = DIRECTIVE_RE.match(line) and INCLUDE_RE.match(lines[no - 1])
            if m and os.path.basename(m.group(1)) in INCLUDES.get(name, ()):
                ok = fail(out, rel, no, lines, f"{rel} includes {os.path.basename(m.group(1))}, "
                          "a header it must not know")
        if name not in NAMES:
            continue
        for m in NAME_RE.finditer(code):
            if is_member(code, m.start()):
                continue
            no = line_at(code, m.start())
            ok = fail(out, rel, no, lines, f"{rel} names {m.group(0)}: a topology's own; "
                      "go through the table of adapters/topology.h")
    return ok


IDENT_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")
CALLED_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
DATA_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[[^\]]*\]\s*)*=")


def definitions(code):
    """The names a file defines at file scope: (not static, static).  A
    function is a head ending in `)` followed by its body; data, a head
    with an `=`.  Preprocessor lines are not heads."""
    public, local = set(), set()
    depth, start = 0, 0
    for i, ch in enumerate(code):
        if depth == 0 and ch in "{;":
            head = "\n".join(line for line in code[start:i].split("\n")
                             if not line.lstrip().startswith("#"))
            m = (CALLED_RE.search(head) if ch == "{" and head.rstrip().endswith(")")
                 else DATA_RE.search(head) if "=" in head else None)
            if m and not re.match(r"\s*(typedef|_Static_assert)\b", head):
                static = re.search(r"(?<![A-Za-z0-9_])static(?![A-Za-z0-9_])", head)
                (local if static else public).add(m.group(1))
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if depth == 0 and ch in "};":
            start = i + 1
    return public, local


def check_core(root, out):
    ok = True
    layer_of = {name: n for n, layer in enumerate(CORE_LAYERS) for name in layer}
    try:
        present = sorted(f for f in os.listdir(os.path.join(root, "core")) if f.endswith(".c"))
    except OSError as e:
        out.write(f"layering: core/: cannot be checked: {e}\n")
        return False
    for name in present:
        if name not in layer_of:
            out.write(f"layering: core/{name} is in no layer of CORE_LAYERS: place it "
                      "where its calls say (tests/layering.py), then in docs/design.md's "
                      "map (tests/design_map.py --write)\n")
            ok = False
    files, owner = {}, {}
    for name in layer_of:
        rel = "core/" + name
        try:
            files[name] = code_of(os.path.join(root, rel))
        except Unreadable as e:
            out.write(f"layering: {rel}: cannot be checked: {e}\n")
            ok = False
            continue
        for defined in definitions(files[name][1])[0]:
            owner.setdefault(defined, name)
    for name, (text, code) in sorted(files.items()):
        own = set().union(*definitions(code))
        lines = text.split("\n")
        for m in IDENT_RE.finditer(code):
            other = owner.get(m.group(0))
            if (other is None or other == name or m.group(0) in own or
                    is_member(code, m.start()) or is_tag(code, m.start()) or layer_of[other] > layer_of[name] or
                    m.group(0) in UP_CALLS.get(name, ())):
                continue
            no = line_at(code, m.start())
            ok = fail(out, f"core/{name}", no, lines, f"core/{name} names {m.group(0)}, core/{other}'s, which is "
                      f"not in a layer below it: calls in core/ go down")
    return ok


# --- the self-check ----------------------------------------------------------

# (file, text appended, the line of it that must be reported, or None when
# the check must still pass)
PLANTED = [
    ("adapters/link.c", '#include "cluster.h"\n', 1),
    ("adapters/link.c", '#include "conn.h" /* not "cluster.h" */\n// #include "cluster.h"\n', None),
    ("adapters/conn.c", '#  include "topology.h"\n', 1),
    ("adapters/conn.c", "#include <sentinel.h>\n", 1),
    ("adapters/pubsub.c", '#include "sentinel.h"\n', 1),
    ("adapters/subscriber.c", '#include "../adapters/cluster.h"\n', 1),
    ("adapters/fifo.h", '#include "engine.h"\n', 1),
    ("adapters/topology.h", '#include "engine.h"\n', 1),
    ("adapters/engine.c", "static void f(void) { cluster_route(0); }\n", 1),
    ("adapters/engine.c", "static void *p = &cluster_tick;\n", 1),
    ("adapters/link.c", "static void f(void)\n{\n    fn = sentinel_demoted;\n}\n", 3),
    ("adapters/link.c", "static void f(void)\n{\n    sentinel_demoted\n        (l);\n}\n", 3),
    ("adapters/pubsub.c", "static int f(void) { return cluster_slot_node(t, 1); }\n", 1),
    ("adapters/subscriber.c", "static void f(void) { sentinel_ask(s); }\n", 1),
    ("adapters/conn.c", "static struct cluster_node *n;\n", 1),
    ("adapters/engine.c", "/* cluster_route(x) */\n// sentinel_ask(s);\n", None),
    ("adapters/engine.c", '/* a\n * cluster_route(x)\n */\n', None),
    ("adapters/engine.c", 'static const char *s = "cluster_route(x) /*";\n', None),
    ("adapters/engine.c", "static int c = '\"'; /* \" cluster_x( */\n", None),
    ("adapters/link.c", "static int f(void) { return t->cluster_x + cfg.sentinel_master; }\n", None),
    ("adapters/pubsub.c", "static int f(void) { return t->\n    sentinel_x; }\n", None),
    ("adapters/engine.c", "static int lw_cluster_slots, my_sentinel_x;\n", None),
    ("core/watchdog.c", "static void f(struct call *op) { call_complete(op, 0, 0); }\n", 1),
    ("core/holds.c", "static int f(struct lw_client *c)\n{\n    return watchdog_renews(c, 0, 0);\n}\n", 3),
    ("core/publish.c", "static void (*p)(struct lw_client *) = watchdog_flush;\n", 1),
    ("core/waiters.c", "static void f(struct call *op) { call_attempt(op); }\n", 1),
    ("core/refs.c", "static void f(struct lw_client *c) { client_publish_command(c); }\n", 1),
    ("core/lock.c", "static void f(struct lw_client *c) { lw_client_free(c); }\n", 1),
    ("core/lock.c", "static void f(struct lw_client *c) { client_unref(c); }\n", None),
    ("core/watchdog.c", "/* call_complete(op, 0, 0) */\nstatic const char *s = \"call_attempt(\";\n", None),
    ("core/holds.c", "static int f(struct x *x) { return x->call_attempt + x->watchdog_flush; }\n", None),
    ("core/owner.c", "static int f(struct call_complete *x) { return x != 0; }\n", None),
    ("core/owner.c", "static int call_complete(int x) { return x; }\nstatic int g(void) { return call_complete(1); }\n", None),
    ("adapters/conn.c", "static void f(struct call *op) { call_complete(op, 0, 0); }\n", 1),
    ("adapters/link.c", '#include "client_base.h"\n', 1),
    ("wheel/wheel.c", "static void f(struct engine *e) { engine_free(e); }\n", 1),
    ("base/error.c", '#include "engine.h"\n', 1),
    ("base/error.c", "static const char *f(void) { return lw_version(); }\n", 1),
    ("core/lock.c", "static const char *f(int e) { return lw_strerror(e); }\n", None),
    ("adapters/conn.c", "static int f(struct x *x) { return x->call_complete != 0; }\n", None),
]


def run_check(root):
    class Sink:
        text = ""

        def write(self, s):
            self.text += s

    sink = Sink()
    return check(root, sink), sink.text


def self_check(root):
    failures = []
    tmp = tempfile.mkdtemp(prefix="layering.")
    try:
        copy = os.path.join(tmp, "src")
        for folder in HOUSE:
            os.makedirs(os.path.join(copy, folder))
        real = [f"{folder}/{name}" for folder in HOUSE
                for name in floor_files(root, folder, ".c") + floor_files(root, folder, ".h")]

        def fresh():
            for folder in HOUSE:
                for name in os.listdir(os.path.join(copy, folder)):
                    os.remove(os.path.join(copy, folder, name))
            for rel in real:
                shutil.copy(os.path.join(root, rel), os.path.join(copy, rel))

        fresh()
        ok, said = run_check(copy)
        if not ok:
            failures.append("the real files fail:\n" + said)
        for name, planted, report in PLANTED:
            fresh()
            path = os.path.join(copy, name)
            with open(path, encoding="utf-8") as f:
                base = f.read()
            if not base.endswith("\n"):
                base += "\n"
            with open(path, "w", encoding="utf-8") as f:
                f.write(base + planted)
            ok, said = run_check(copy)
            where = f"{name}:{base.count(chr(10)) + report}:" if report else None
            if report is None and not ok:
                failures.append(f"{name} + {planted!r} fails, and must not:\n{said}")
            elif report is not None and (ok or where not in said):
                failures.append(f"{name} + {planted!r} is not caught at {where}:\n{said}")
        for name, how in [("adapters/engine.c", None), ("adapters/link.c", "/* all comment */\n"),
                          ("adapters/pubsub.c", "int x; /* never closed\n"),
                          ("adapters/conn.c", 'static const char *s = "never closed;\n'),
                          ("core/lock.c", None), ("core/owner.c", "// all comment\n")]:
            fresh()
            path = os.path.join(copy, name)
            if how is None:
                os.remove(path)
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(how)
            ok, said = run_check(copy)
            if ok or f"{name}: cannot be checked" not in said:
                failures.append(f"{name} {'missing' if how is None else repr(how)} "
                                f"is not refused:\n{said}")
        fresh()
        with open(os.path.join(copy, "core", "new.c"), "w", encoding="utf-8") as f:
            f.write("int new_x(void) { return 0; }\n")
        ok, said = run_check(copy)
        if ok or "core/new.c is in no layer" not in said:
            failures.append(f"core/new.c, in no layer, is not refused:\n{said}")
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        sys.stderr.write("layering self-check: " + f + "\n")
    if failures:
        return 1
    print(f"layering self-check: OK ({len(PLANTED)} planted cases, 6 unreadable files, "
          "a core/ file in no layer)")
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-check":
        return self_check(argv[2])
    if len(argv) != 2:
        sys.stderr.write("usage: layering.py [--self-check] SOURCE_ROOT\n")
        return 2
    if not check(argv[1], sys.stderr):
        return 1
    print("layering: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
