#!/usr/bin/env python3
"""layering.py SOURCE_ROOT - the transport's calls go one way
(docs/design.md, "Who calls whom in adapters/"): the engine and the links
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

Comments are stripped here, by a scanner of C's comments and literals that
keeps every newline, so line numbers are the source's, whatever the
compiler.  A file that is missing, unreadable, has an unterminated comment
or literal, or holds no code once stripped fails the check: it never passes
by reading nothing.

layering.py --self-check SOURCE_ROOT - the check itself works: on a copy of
the real files it passes, and it fails, at the right line, on each kind of
violation planted in the copy (and on a missing or empty file); comments,
strings and members planted the same way do not fail it."""
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

# On the stripped line, that it is an include; on the source's, what it
# includes (the stripper empties a quoted name, as any literal).
DIRECTIVE_RE = re.compile(r"[ \t]*#[ \t]*include(?![A-Za-z0-9_])")
INCLUDE_RE = re.compile(r'[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]')
NAME_RE = re.compile(r"(?<![A-Za-z0-9_])(?:cluster|sentinel)_[A-Za-z0-9_]*")


class Unreadable(Exception):
    pass


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


def check(root, out):
    """Every rule on root's adapters/; the failures written to out.
    True when none."""
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
                out.write(f"{rel}:{no}: {lines[no - 1].strip()}\n")
                out.write(f"layering: {rel} includes {os.path.basename(m.group(1))}, "
                          "a header it must not know\n")
                ok = False
        if name not in NAMES:
            continue
        for m in NAME_RE.finditer(code):
            if is_member(code, m.start()):
                continue
            no = line_at(code, m.start())
            out.write(f"{rel}:{no}: {lines[no - 1].strip()}\n")
            out.write(f"layering: {rel} names {m.group(0)}: a topology's own; "
                      "go through the table of adapters/topology.h\n")
            ok = False
    return ok


# --- the self-check ----------------------------------------------------------

# (file, text appended, the line of it that must be reported, or None when
# the check must still pass)
PLANTED = [
    ("link.c", '#include "cluster.h"\n', 1),
    ("link.c", '#include "conn.h" /* not "cluster.h" */\n// #include "cluster.h"\n', None),
    ("conn.c", '#  include "topology.h"\n', 1),
    ("conn.c", "#include <sentinel.h>\n", 1),
    ("pubsub.c", '#include "sentinel.h"\n', 1),
    ("subscriber.c", '#include "../adapters/cluster.h"\n', 1),
    ("fifo.h", '#include "engine.h"\n', 1),
    ("topology.h", '#include "engine.h"\n', 1),
    ("engine.c", "static void f(void) { cluster_route(0); }\n", 1),
    ("engine.c", "static void *p = &cluster_tick;\n", 1),
    ("link.c", "static void f(void)\n{\n    fn = sentinel_demoted;\n}\n", 3),
    ("link.c", "static void f(void)\n{\n    sentinel_demoted\n        (l);\n}\n", 3),
    ("pubsub.c", "static int f(void) { return cluster_slot_node(t, 1); }\n", 1),
    ("subscriber.c", "static void f(void) { sentinel_ask(s); }\n", 1),
    ("conn.c", "static struct cluster_node *n;\n", 1),
    ("engine.c", "/* cluster_route(x) */\n// sentinel_ask(s);\n", None),
    ("engine.c", '/* a\n * cluster_route(x)\n */\n', None),
    ("engine.c", 'static const char *s = "cluster_route(x) /*";\n', None),
    ("engine.c", "static int c = '\"'; /* \" cluster_x( */\n", None),
    ("link.c", "static int f(void) { return t->cluster_x + cfg.sentinel_master; }\n", None),
    ("pubsub.c", "static int f(void) { return t->\n    sentinel_x; }\n", None),
    ("engine.c", "static int lw_cluster_slots, my_sentinel_x;\n", None),
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
        os.makedirs(os.path.join(copy, "adapters"))

        def fresh():
            for name in set(INCLUDES) | set(NAMES):
                shutil.copy(os.path.join(root, "adapters", name),
                            os.path.join(copy, "adapters", name))

        fresh()
        ok, said = run_check(copy)
        if not ok:
            failures.append("the real files fail:\n" + said)
        for name, planted, report in PLANTED:
            fresh()
            path = os.path.join(copy, "adapters", name)
            with open(path, encoding="utf-8") as f:
                base = f.read()
            if not base.endswith("\n"):
                base += "\n"
            with open(path, "w", encoding="utf-8") as f:
                f.write(base + planted)
            ok, said = run_check(copy)
            where = f"adapters/{name}:{base.count(chr(10)) + report}:" if report else None
            if report is None and not ok:
                failures.append(f"{name} + {planted!r} fails, and must not:\n{said}")
            elif report is not None and (ok or where not in said):
                failures.append(f"{name} + {planted!r} is not caught at {where}:\n{said}")
        for name, how in [("engine.c", None), ("link.c", "/* all comment */\n"),
                          ("pubsub.c", "int x; /* never closed\n"),
                          ("conn.c", 'static const char *s = "never closed;\n')]:
            fresh()
            path = os.path.join(copy, "adapters", name)
            if how is None:
                os.remove(path)
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(how)
            ok, said = run_check(copy)
            if ok or f"adapters/{name}: cannot be checked" not in said:
                failures.append(f"{name} {'missing' if how is None else repr(how)} "
                                f"is not refused:\n{said}")
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        sys.stderr.write("layering self-check: " + f + "\n")
    if failures:
        return 1
    print(f"layering self-check: OK ({len(PLANTED)} planted cases, 4 unreadable files)")
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
