#!/usr/bin/env python3
"""core_shape.py SOURCE_ROOT - the shape of core/ that keeps one call machine
under every primitive (docs/design.md, "One call machine").  Fails, naming
the file, if

  - an op struct (lock_op.h's struct op, semaphore.c's struct sem_op,
    multi.c's struct multi_op) does not begin with `struct call call` or
    repeats a field of struct call (core/call.h);
  - struct lw_client (core/client_base.h) has more than MAX_CLIENT_FIELDS
    fields at its top level (its groups are structs of their own);
  - a core/ header is included by more than half of core/*.c and its name
    does not say it is the shared base (`*_base.h`);
  - a list is written by hand in core/, adapters/ or wheel/ (a `next`,
    `prev`, `head` or `tail` assigned) outside wheel/queue.h, but for the
    two that ALLOWED_LISTS names, with their reasons;
  - lock.c, multi.c or semaphore.c compares a lock's kind with a KIND_*
    value: the way's row says what varies (core/way.h).

Comments and string literals are stripped first (layering.py's scanner).

core_shape.py --self-check SOURCE_ROOT - on a copy of core/, adapters/ and
wheel/ it passes, and it fails on each violation planted in the copy."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layering import strip_c as strip  # noqa: E402

MAX_CLIENT_FIELDS = 35
OPS = [("core/lock_op.h", "op"), ("core/semaphore.c", "sem_op"), ("core/multi.c", "multi_op")]
# file: why its hand-written list stays.
ALLOWED_LISTS = {
    # The public struct lw_timer_list, popped inline by the public header,
    # its prefetch hint in link.prev.
    "wheel/wheel.c": "the public due list",
    # The lock-free MPSC queue: atomics, not a list of one thread.
    "wheel/mpsc.h": "the MPSC queue",
}
LIST_RE = re.compile(r"(->|\.)(next|prev|[a-z_]+_next|head|tail)\s*=[^=]")
KIND_TEST_RE = re.compile(r"(==|!=)\s*KIND_[A-Z]+|KIND_[A-Z]+\s*(==|!=)")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return strip(f.read())


def fields(text, name):
    """The top-level field names of struct NAME in text, in order."""
    m = re.search(r"struct " + name + r"\s*\{", text)
    if not m:
        return None
    depth, i = 1, m.end()
    body = []
    while depth and i < len(text):
        ch = text[i]
        depth += ch == "{"
        depth -= ch == "}"
        body.append(ch if depth == 1 or (depth == 2 and ch == "{") else " ")
        i += 1
    out = []
    for decl in "".join(body).split(";"):
        names = re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", decl.strip())
        if names:
            out.append(names[0])
    return out


def check_ops(root, say):
    call = fields(read(root, "core/call.h"), "call")
    if not call:
        return say("core/call.h: no struct call")
    for rel, name in OPS:
        mine = fields(read(root, rel), name)
        if not mine or mine[0] != "call":
            say(f"{rel}: struct {name} does not begin with its struct call")
            continue
        again = sorted(set(mine[1:]) & set(call))
        if again:
            say(f"{rel}: struct {name} repeats struct call's {', '.join(again)}")


def check_client(root, say):
    top = fields(read(root, "core/client_base.h"), "lw_client")
    if top is None:
        say("core/client_base.h: no struct lw_client")
    elif len(top) > MAX_CLIENT_FIELDS:
        say(f"core/client_base.h: struct lw_client has {len(top)} top-level fields, "
            f"more than {MAX_CLIENT_FIELDS}: group a module's fields in a struct")


def check_includes(root, say):
    sources = sorted(f for f in os.listdir(os.path.join(root, "core")) if f.endswith(".c"))
    texts = {f: open(os.path.join(root, "core", f), encoding="utf-8").read() for f in sources}
    for h in sorted(f for f in os.listdir(os.path.join(root, "core")) if f.endswith(".h")):
        n = sum(1 for t in texts.values() if re.search(r'#\s*include\s*"' + re.escape(h) + '"', t))
        if 2 * n > len(sources) and not h.endswith("_base.h"):
            say(f"core/{h}: included by {n} of {len(sources)} core/*.c; split it by owner, "
                "or name it the shared base (*_base.h)")


def check_lists(root, say):
    for folder in ("core", "adapters", "wheel"):
        for f in sorted(os.listdir(os.path.join(root, folder))):
            rel = f"{folder}/{f}"
            if not f.endswith((".c", ".h")) or rel == "wheel/queue.h" or rel in ALLOWED_LISTS:
                continue
            for n, line in enumerate(read(root, rel).split("\n"), 1):
                if LIST_RE.search(line):
                    say(f"{rel}:{n}: a list written by hand: use wheel/queue.h")


def check_kinds(root, say):
    for rel in ("core/lock.c", "core/multi.c", "core/semaphore.c"):
        for n, line in enumerate(read(root, rel).split("\n"), 1):
            if KIND_TEST_RE.search(line):
                say(f"{rel}:{n}: a KIND_* test: ask the way's row (core/way.h)")


def main(root):
    failures = []

    def say(msg):
        failures.append(msg)

    for check in (check_ops, check_client, check_includes, check_lists, check_kinds):
        check(root, say)
    for f in failures:
        sys.stderr.write("core_shape: " + f + "\n")
    if failures:
        return 1
    print(f"core_shape: OK ({len(OPS)} ops on struct call, lw_client within "
          f"{MAX_CLIENT_FIELDS} fields, no hand-written list, no KIND_* test)")
    return 0


# (file, text planted, what the failure says)
PLANTS = [
    ("core/multi.c", "struct multi_op_x { int y; };\nstruct multi_op { struct call call; uint64_t owner; };\n",
     "repeats struct call's owner"),
    ("core/lock_op.h", "struct op { struct lw_lock *lock; };\n", "does not begin with its struct call"),
    ("core/watchdog.c", "static void zz(struct entry *e) { e->renew_next = 0; }\n",
     "a list written by hand"),
    ("adapters/conn.c", "static void zz(struct q *q) { q->tail = 0; }\n", "a list written by hand"),
    ("core/lock.c", "static int zz(const struct lw_lock *l) { return l->kind == KIND_FAIR; }\n",
     "a KIND_* test"),
]


def self_check(root):
    failures = []
    tmp = tempfile.mkdtemp()
    try:
        for folder in ("core", "adapters", "wheel"):
            shutil.copytree(os.path.join(root, folder), os.path.join(tmp, folder))
        if main(tmp) != 0:
            failures.append("the copy of the real files fails")
        for rel, text, expect in PLANTS:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as f:
                before = f.read()
            # struct op, multi_op: the planted definition comes first
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + before)
            caught = []
            fake = {"say": caught.append}
            for check in (check_ops, check_lists, check_kinds):
                check(tmp, fake["say"])
            if not any(expect in c for c in caught):
                failures.append(f"{rel} + {text!r} is not caught ({expect})")
            with open(path, "w", encoding="utf-8") as f:
                f.write(before)
        shared = os.path.join(tmp, "core", "client_base.h")
        with open(shared, encoding="utf-8") as f:
            base = f.read()
        with open(shared, "w", encoding="utf-8") as f:
            f.write(base.replace("struct lw_client {",
                                 "struct lw_client {\n" + "int zz%d;\n" * 36 % tuple(range(36)), 1))
        caught = []
        check_client(tmp, caught.append)
        if not any("top-level fields" in c for c in caught):
            failures.append("36 more fields in lw_client are not caught")
        os.rename(shared, os.path.join(tmp, "core", "client_everyone.h"))
        for f in os.listdir(os.path.join(tmp, "core")):
            p = os.path.join(tmp, "core", f)
            with open(p, encoding="utf-8") as fh:
                t = fh.read()
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(t.replace('"client_base.h"', '"client_everyone.h"'))
        caught = []
        check_includes(tmp, caught.append)
        if not any("client_everyone.h" in c for c in caught):
            failures.append("a header all include, not named *_base.h, is not caught")
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        sys.stderr.write("core_shape self-check: " + f + "\n")
    if failures:
        return 1
    print(f"core_shape self-check: OK ({len(PLANTS)} planted cases, lw_client's fields, "
          "a header all include)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--self-check":
        sys.exit(self_check(sys.argv[2]))
    if len(sys.argv) != 2:
        sys.stderr.write("usage: core_shape.py [--self-check] SOURCE_ROOT\n")
        sys.exit(64)
    sys.exit(main(sys.argv[1]))
