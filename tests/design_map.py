#!/usr/bin/env python3
"""design_map.py SOURCE_ROOT - docs/design.md's maps of the house are
tests/layering.py's lists (HOUSE, CORE_LAYERS, UP_CALLS, the adapters'
rules), file for file, so that they cannot drift.

The map of core/ (design.md, "Who calls whom in core/") is a fenced block,
a file a line, each with a few words on what it does:

     4  way_lock.c     a plain lock's row of the ways (way.h)
        way_rw.c       a read-write lock's two halves' rows, and
                       more words on a line of their own

A layer's number, right-aligned in the first two columns, opens it; the
file's name starts at the fifth; its words follow, and go on on lines that
start with spaces.  Fails, naming the file (and the line of design.md), if

  - a core/*.c file is not in the map;
  - the map places a file in another layer than CORE_LAYERS does, or in
    none of its layers, or names it twice;
  - the map names a file core/ does not have;
  - a file of the map has no words (a new file's blank, below, unfilled);
  - the map has more or fewer layers than CORE_LAYERS;
  - an UP_CALLS entry (a file, a function above it) has no reason in the
    section: a bullet whose bold lead names the file and the function,
    `waiters.c` ... `call_attempt()`, and says why after it;
  - a bullet's bold lead says a file of core/ calls a function
    (**`lock.c` calls `watchdog_flush()`**) that the file does not name,
    or one above it that UP_CALLS does not allow, or says two files call
    each other (**`lock.c` and `waiters.c` call each other**) when
    UP_CALLS allows neither a call up into the other.

The floors (design.md, "Layout"): the sentence "The folders are floors,
bottom to top ..." names HOUSE, in its order; the table has a row for each
floor, in that order; a floor's row names every .c file of its folder,
and no .c file its folder does not have.  The adapters (design.md, "Who
calls whom in adapters/"): every file layering.py's rules for adapters/
name (those that exist) is named in that section.

design_map.py --print SOURCE_ROOT - the map of core/ as the fenced block
should be, laid out from CORE_LAYERS with each file's words from
design.md's map, and a blank to fill for a file the map lacks.
design_map.py --write SOURCE_ROOT - the same, written over design.md's
block: after placing a new file in CORE_LAYERS, run it and fill in the
file's words.

design_map.py --self-check SOURCE_ROOT - the check itself works: on a copy
of the real files it passes, and it fails, naming the file, on each kind
of drift planted in the copy (a core/ file missing from the map, a file
in the wrong layer, a file that does not exist, a file without words, an
UP_CALLS entry without its reason, a call up claimed, a call claimed that
is not made, a floor's file missing from its row, the floors out of
order), and --write lays out a map that passes once the words are in."""
import functools
import os
import re
import shutil
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layering  # noqa: E402  pylint: disable=wrong-import-position

DESIGN = "docs/design.md"
CORE_HEAD = "### Who calls whom in core/"
ADAPTERS_HEAD = "### Who calls whom in adapters/"
LAYOUT_HEAD = "## Layout"
BLANK = "(what it does, in a few words)"
NAME_W = 15  # the number's column is 4 wide, the file's NAME_W: words start at 19
WIDTH = 78
FILE_RE = re.compile(r"[a-z_][a-z0-9_]*\.c")


class Lists:
    """What layering.py says: the real lists, or a self-check's changed
    copy of them."""

    def __init__(self, layers=None, up_calls=None, house=None, adapter_files=None):
        self.layers = layering.CORE_LAYERS if layers is None else layers
        self.up_calls = layering.UP_CALLS if up_calls is None else up_calls
        self.house = layering.HOUSE if house is None else house
        if adapter_files is None:
            adapter_files = (set(layering.INCLUDES) | set(layering.NAMES) |
                             layering.ABOVE_CONN)
        self.adapter_files = sorted(adapter_files)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def sources(root, folder, ext=".c"):
    try:
        return sorted(n for n in os.listdir(os.path.join(root, folder)) if n.endswith(ext))
    except OSError:
        return []


def section(lines, head):
    """(first line number, lines) of the section under head, to the next
    heading of its level or above (outside a fenced block); None when
    there is none."""
    level = len(head) - len(head.lstrip("#"))
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == head), None)
    if start is None:
        return None
    end, fenced = start + 1, False
    while end < len(lines):
        fenced ^= lines[end].startswith("```")
        m = re.match(r"^(#+) ", lines[end])
        if m and not fenced and len(m.group(1)) <= level:
            break
        end += 1
    return start + 1, lines[start:end]


# --- the map of core/ --------------------------------------------------------

class Map:
    """The map of core/ as design.md draws it."""

    def __init__(self):
        self.first = self.last = None  # line numbers of the fences
        self.entries = []  # [layer number, file, words, line number]
        self.errors = []


def parse_map(lines):
    m = Map()
    found = section(lines, CORE_HEAD)
    if found is None:
        m.errors.append(f"{DESIGN}: no \"{CORE_HEAD}\" section")
        return m
    start, sec = found
    fences = [start + i for i, ln in enumerate(sec) if ln.startswith("```")]
    if len(fences) < 2:
        m.errors.append(f"{DESIGN}:{start}: \"{CORE_HEAD[4:]}\" has no fenced map")
        return m
    m.first, m.last = fences[0], fences[1]
    layer = 0
    for no in range(m.first + 1, m.last):
        line = lines[no - 1]
        if not line.strip():
            continue
        head = re.match(r"^( \d|\d\d|  )  (\S+)(.*)$", line)
        if head:
            if not FILE_RE.fullmatch(head.group(2)):
                m.errors.append(f"{DESIGN}:{no}: the map of core/ has {head.group(2)!r} where "
                                "a file (NAME.c, at the fifth column) goes")
                continue
            if head.group(1).strip():
                n = int(head.group(1))
                if n != layer + 1:
                    m.errors.append(f"{DESIGN}:{no}: the map's layer {n} follows layer {layer}")
                layer = n
            elif layer == 0:
                m.errors.append(f"{DESIGN}:{no}: the map names core/{head.group(2)} before "
                                "its first layer's number")
                continue
            m.entries.append([layer, head.group(2), head.group(3).strip(), no])
        elif re.match(r"^ {5,}\S", line) and m.entries:
            m.entries[-1][2] = (m.entries[-1][2] + " " + line.strip()).strip()
        else:
            m.errors.append(f"{DESIGN}:{no}: a line of the map of core/ that is neither a "
                            f"file nor words under one: {line.strip()}")
    return m


def check_map(root, lines, lists, out):
    ok = True
    m = parse_map(lines)
    for e in m.errors:
        out.write(f"design_map: {e}\n")
        ok = False
    if m.first is None:
        return False
    files = set(sources(root, "core"))
    layer_of = {name: n for n, layer in enumerate(lists.layers, 1) for name in layer}
    seen = {}
    for layer, name, words, no in m.entries:
        where = f"design_map: {DESIGN}:{no}: core/{name}"
        if name in seen:
            out.write(f"{where} is in the map twice (line {seen[name]} too)\n")
            ok = False
            continue
        seen[name] = no
        if name not in files:
            out.write(f"{where}: the map names a file core/ does not have\n")
            ok = False
        if name not in layer_of:
            out.write(f"{where} is in layer {layer} of the map, and in no layer of "
                      "tests/layering.py's CORE_LAYERS\n")
            ok = False
        elif layer_of[name] != layer:
            out.write(f"{where} is in layer {layer} of the map, in layer {layer_of[name]} "
                      "of tests/layering.py's CORE_LAYERS\n")
            ok = False
        if not words or words == BLANK:
            out.write(f"{where} has no words in the map: say what it does\n")
            ok = False
    for name in sorted(files - set(seen)):
        where = (f"its layer in CORE_LAYERS is {layer_of[name]}" if name in layer_of
                 else "nor in any layer of CORE_LAYERS: place it there first")
        out.write(f"design_map: {DESIGN}:{m.first}: core/{name} is not in the map of core/ "
                  f"({where}): tests/design_map.py --write adds it, then write its words\n")
        ok = False
    layers = max((e[0] for e in m.entries), default=0)
    if layers != len(lists.layers):
        out.write(f"design_map: {DESIGN}:{m.first}: the map of core/ has {layers} layers, "
                  f"CORE_LAYERS {len(lists.layers)}\n")
        ok = False
    return ok


def layout(lists, words):
    """The fenced block's lines, from the lists, with words by file."""
    out = []
    for n, layer in enumerate(lists.layers, 1):
        for i, name in enumerate(layer):
            wrapped = textwrap.wrap(words.get(name) or BLANK, WIDTH - 4 - NAME_W) or [""]
            num = f"{n:>2}" if i == 0 else "  "
            out.append(f"{num}  {name.ljust(NAME_W - 2)}  {wrapped[0]}".rstrip())
            out += [" " * (4 + NAME_W) + w for w in wrapped[1:]]
    return ["```"] + out + ["```"]


def print_map(root, lists, write):
    text = read(root, DESIGN)
    lines = text.split("\n")
    m = parse_map(lines)
    if m.first is None:
        for e in m.errors:
            sys.stderr.write(f"design_map: {e}\n")
        return 1
    words = {e[1]: e[2] for e in m.entries if e[2] != BLANK}
    block = layout(lists, words)
    if not write:
        print("\n".join(block))
        return 0
    lines[m.first - 1:m.last] = block
    with open(os.path.join(root, DESIGN), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    blanks = [n for layer in lists.layers for n in layer if not words.get(n)]
    print(f"design_map: {DESIGN}'s map of core/ laid out from CORE_LAYERS" +
          (f"; write what each of {', '.join(blanks)} does over its {BLANK!r}" if blanks
           else ""))
    return 0


# --- the calls the section tells of ------------------------------------------

@functools.lru_cache(maxsize=None)
def parsed(text):
    """(stripped code, public names, all names defined) of a file's text."""
    code = layering.strip_c(text)
    public, local = layering.definitions(code)
    return code, frozenset(public), frozenset(public | local)


@functools.lru_cache(maxsize=None)
def names(code, fn):
    """Whether a file's code names fn: not a member, not a tag."""
    return any(not layering.is_member(code, m.start()) and not layering.is_tag(code, m.start())
               for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(fn) + r"(?![A-Za-z0-9_])",
                                    code))


def bullets(start, sec):
    """(line number, text) of each bullet of a section, its lines joined:
    a bullet goes on on indented lines, to a blank line or the next."""
    out, open_ = [], False
    for i, line in enumerate(sec):
        if line.startswith("- "):
            out.append([start + i, line[2:].strip()])
            open_ = True
        elif open_ and line.startswith("  ") and line.strip():
            out[-1][1] += " " + line.strip()
        else:
            open_ = False
    return out


def check_calls(root, lines, lists, out):
    ok = True
    found = section(lines, CORE_HEAD)
    if found is None:
        return True  # check_map said so
    layer_of = {name: n for n, layer in enumerate(lists.layers, 1) for name in layer}
    owner, used = {}, {}
    for name in sources(root, "core"):
        try:
            code, public, own = parsed(read(root, f"core/{name}"))
        except (OSError, UnicodeDecodeError, layering.Unreadable) as e:
            out.write(f"design_map: core/{name}: cannot be read: {e}\n")
            ok = False
            continue
        for d in public:
            owner.setdefault(d, name)
        used[name] = (code, own)

    def up(caller, fn):
        return (fn in owner and caller in layer_of and owner[fn] in layer_of and
                layer_of[owner[fn]] <= layer_of[caller] and owner[fn] != caller)

    leads = []  # (line, files, functions, the bullet's words after the lead, lead)
    for no, text in bullets(*found):
        for m in re.finditer(r"\*\*(.+?)\*\*", text):
            lead = m.group(1)
            files = [f for f in re.findall(r"`([^`]+)`", lead) if FILE_RE.fullmatch(f)]
            fns = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)\(\)`", lead)
            leads.append((no, files, fns, text[m.end():], lead))
    for no, files, fns, _, lead in leads:
        where = f"design_map: {DESIGN}:{no}"
        if len(files) == 2 and "call each other" in lead:
            a, b = files
            allowed = any(owner.get(fn) == other
                          for caller, other in ((a, b), (b, a))
                          for fn in lists.up_calls.get(caller, ()))
            if not allowed:
                out.write(f"{where}: says core/{a} and core/{b} call each other: one would call "
                          "up, which tests/layering.py's UP_CALLS does not allow\n")
                ok = False
            continue
        if len(files) != 1 or not fns:
            continue
        caller = files[0]
        if caller not in used:
            out.write(f"{where}: says core/{caller} calls {', '.join(fns)}, and core/ has no "
                      f"{caller}\n")
            ok = False
            continue
        code, own = used[caller]
        for fn in fns:
            if fn not in owner:
                out.write(f"{where}: says core/{caller} calls {fn}(), which no file of core/ "
                          "defines\n")
                ok = False
            elif fn not in own and not names(code, fn):
                out.write(f"{where}: says core/{caller} calls {fn}(), which it does not name\n")
                ok = False
            elif up(caller, fn) and fn not in lists.up_calls.get(caller, ()):
                out.write(f"{where}: says core/{caller} calls {fn}(), core/{owner[fn]}'s, not "
                          "in a layer below it, which tests/layering.py's UP_CALLS does not "
                          "allow\n")
                ok = False
    for caller, fns in sorted(lists.up_calls.items()):
        for fn in sorted(fns):
            reason = [rest for _, files, named, rest, _ in leads
                      if caller in files and fn in named and len(rest.split()) >= 6]
            if not reason:
                out.write(f"design_map: {DESIGN}: UP_CALLS lets core/{caller} call {fn}(), and "
                          f"\"{CORE_HEAD[4:]}\" gives no reason: a bullet whose bold lead names "
                          f"`{caller}` and `{fn}()`, and says why\n")
                ok = False
    return ok


# --- the floors and adapters/ ------------------------------------------------

def check_floors(root, lines, lists, out):
    ok = True
    found = section(lines, LAYOUT_HEAD)
    if found is None:
        out.write(f"design_map: {DESIGN}: no \"{LAYOUT_HEAD}\" section\n")
        return False
    start, sec = found
    text = " ".join(sec)
    said = re.findall(r"floors, bottom to top ((?:`[a-z]+/`(?:,? (?:and )?)?)+)", text)
    want = [f + "/" for f in lists.house]
    if len(said) != 1:
        out.write(f"design_map: {DESIGN}:{start}: \"{LAYOUT_HEAD[3:]}\" says the floors, "
                  f"bottom to top, {len(said)} times, not once\n")
        ok = False
    elif re.findall(r"`([a-z]+/)`", said[0]) != want:
        out.write(f"design_map: {DESIGN}:{start}: the floors, bottom to top, are "
                  f"{', '.join(re.findall(r'`([a-z]+/)`', said[0]))} in \"{LAYOUT_HEAD[3:]}\", "
                  f"{', '.join(want)} in tests/layering.py's HOUSE\n")
        ok = False
    rows = {}
    for i, line in enumerate(sec):
        m = re.match(r"^\| `([a-z]+)/` \|(.*)$", line)
        if m:
            rows[m.group(1)] = (start + i, m.group(2))
    order = [f for f in rows if f in lists.house]
    for folder in lists.house:
        if folder not in rows:
            out.write(f"design_map: {DESIGN}:{start}: the Layout table has no row of "
                      f"{folder}/, a floor of tests/layering.py's HOUSE\n")
            ok = False
            continue
        no, row = rows[folder]
        named = set(re.findall(r"`([a-z_][a-z0-9_]*\.c)`", row))
        have = set(sources(root, folder))
        for name in sorted(have - named):
            out.write(f"design_map: {DESIGN}:{no}: {folder}/{name} is not in the Layout "
                      f"table's row of {folder}/\n")
            ok = False
        for name in sorted(named - have):
            out.write(f"design_map: {DESIGN}:{no}: the Layout table's row of {folder}/ names "
                      f"{name}, which {folder}/ does not have\n")
            ok = False
    if order != [f for f in lists.house if f in rows]:
        out.write(f"design_map: {DESIGN}:{start}: the Layout table's floors are in the order "
                  f"{', '.join(order)}, not HOUSE's, bottom to top\n")
        ok = False
    found = section(lines, ADAPTERS_HEAD)
    if found is None:
        out.write(f"design_map: {DESIGN}: no \"{ADAPTERS_HEAD}\" section\n")
        return False
    start, sec = found
    text = "\n".join(sec)
    for name in lists.adapter_files:
        if (os.path.exists(os.path.join(root, "adapters", name)) and
                not re.search(r"(?<![\w./])" + re.escape(name) + r"(?![\w])", text)):
            out.write(f"design_map: {DESIGN}:{start}: adapters/{name}, which "
                      f"tests/layering.py's rules for adapters/ name, is not in "
                      f"\"{ADAPTERS_HEAD[4:]}\"\n")
            ok = False
    return ok


def check(root, out, lists=None):
    lists = lists or Lists()
    try:
        lines = read(root, DESIGN).split("\n")
    except (OSError, UnicodeDecodeError) as e:
        out.write(f"design_map: {DESIGN}: cannot be read: {e}\n")
        return False
    ok = check_map(root, lines, lists, out)
    ok = check_calls(root, lines, lists, out) and ok
    return check_floors(root, lines, lists, out) and ok


# --- the self-check ----------------------------------------------------------

class Sink:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s


def run(root, lists=None):
    sink = Sink()
    return check(root, sink, lists), sink.text


def edit(root, rel, old, new):
    """rel with old (once) made new; False when old is not there once."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.count(old) != 1:
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))
    return True


def moved(layers, name, to):
    """layers with name moved into layer `to` (numbered from 1)."""
    out = [[n for n in layer if n != name] for layer in layers]
    out[to - 1].append(name)
    return out


def self_check(root):
    failures = []
    tmp = tempfile.mkdtemp(prefix="design_map.")
    real = Lists()
    top, bottom = real.layers[0][0], real.layers[-1][-1]
    last_first = real.layers[-1][0]  # the first file of the last layer
    try:
        copy = os.path.join(tmp, "src")

        def fresh():
            if os.path.exists(copy):
                shutil.rmtree(copy)
            os.makedirs(os.path.join(copy, "docs"))
            shutil.copy(os.path.join(root, DESIGN), os.path.join(copy, DESIGN))
            for folder in real.house:
                os.makedirs(os.path.join(copy, folder))
                for name in sources(root, folder, ""):
                    if os.path.isfile(os.path.join(root, folder, name)):
                        shutil.copy(os.path.join(root, folder, name), os.path.join(copy, folder))

        def plant(rel, text):
            with open(os.path.join(copy, rel), "a", encoding="utf-8") as f:
                f.write(text)

        def expect(what, said_part, lists=None):
            ok, said = run(copy, lists)
            if said_part is None and not ok:
                failures.append(f"{what}: fails, and must not:\n{said}")
            elif said_part is not None and (ok or said_part not in said):
                failures.append(f"{what}: not caught (wanted {said_part!r}):\n{said}")

        def bullet(text):
            """A bullet appended to the section's last list."""
            found = edit(copy, DESIGN, "\n### Choices in core/", f"{text}\n\n### Choices in core/")
            if not found:
                failures.append("no \"### Choices in core/\" after the section to plant before")

        fresh()
        expect("the real files", None)

        fresh()
        plant("core/zz_new.c", "int zz_new_x(void) { return 0; }\n")
        expect("core/zz_new.c, in no layer and not in the map", "core/zz_new.c is not in the map")
        grown = [list(layer) for layer in real.layers]
        grown[4].append("zz_new.c")
        expect("core/zz_new.c, in CORE_LAYERS' layer 5, not in the map",
               "core/zz_new.c is not in the map of core/ (its layer in CORE_LAYERS is 5)",
               Lists(layers=grown))
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
        try:
            print_map(copy, Lists(layers=grown), write=True)
        finally:
            sys.stdout.close()
            sys.stdout = sys.__stdout__
        expect("core/zz_new.c laid out by --write, its words blank",
               "core/zz_new.c has no words in the map", Lists(layers=grown))
        if not edit(copy, DESIGN, f"zz_new.c       {BLANK}", "zz_new.c       a file planted"):
            failures.append("--write did not lay out core/zz_new.c with its blank")
        expect("core/zz_new.c in the map, not in the Layout table's row of core/",
               "core/zz_new.c is not in the Layout table's row of core/", Lists(layers=grown))
        if not edit(copy, DESIGN, "| `core/` | the locks: ", "| `core/` | the locks: `zz_new.c`, "):
            failures.append("the Layout row of core/ does not start \"the locks: \"")
        expect("core/zz_new.c laid out by --write, its words filled", None, Lists(layers=grown))

        fresh()
        expect(f"core/{bottom} in layer 1 of CORE_LAYERS",
               f"core/{bottom} is in layer {len(real.layers)} of the map, in layer 1 of",
               Lists(layers=moved(real.layers, bottom, 1)))
        fresh()
        if not edit(copy, DESIGN, f"\n{len(real.layers):>2}  {last_first}",
                    f"\n    {top}\n{len(real.layers):>2}  {last_first}"):
            failures.append(f"the map's last layer does not start with {last_first}")
        expect(f"core/{top} twice in the map", f"core/{top} is in the map twice")

        fresh()
        os.remove(os.path.join(copy, "core", "version.c"))
        expect("core/version.c removed, still in the map",
               "core/version.c: the map names a file core/ does not have",
               Lists(layers=[[n for n in layer if n != "version.c"] for layer in real.layers]))

        fresh()
        expect("UP_CALLS' waiters.c -> call_attempt() without its reason",
               "UP_CALLS lets core/waiters.c call call_attempt()",
               Lists(up_calls={"waiters.c": {"call_attempt"}}))
        plant("core/waiters.c", "static void zz(struct call *op) { call_attempt(op); }\n")
        bullet("- **`waiters.c` calls `call_attempt()`**: to wake a waiter, which is an\n"
               "  acquire call in its own states.")
        expect("a call up claimed that UP_CALLS does not allow",
               "says core/waiters.c calls call_attempt(), core/call.c's")
        expect("UP_CALLS' waiters.c -> call_attempt() with its reason", None,
               Lists(up_calls={"waiters.c": {"call_attempt"}}))

        fresh()
        bullet("- **`lock.c` and `waiters.c` call each other**: planted.")
        expect("two files said to call each other",
               "says core/lock.c and core/waiters.c call each other")
        fresh()
        bullet("- **`client.c` calls `watchdog_forget()`**: planted, and not made.")
        expect("a call claimed that is not made",
               "says core/client.c calls watchdog_forget(), which it does not name")

        fresh()
        if not edit(copy, DESIGN, "| `wheel/` | `wheel.c` (the timing wheel),", "| `wheel/` |"):
            failures.append("the Layout row of wheel/ does not start with `wheel.c`")
        expect("wheel/wheel.c not in its row", "wheel/wheel.c is not in the Layout table's row")
        fresh()
        plant("adapters/zz_new.c", "int zz_new_x(void) { return 0; }\n")
        expect("adapters/zz_new.c not in its row",
               "adapters/zz_new.c is not in the Layout table's row of adapters/")
        fresh()
        if not edit(copy, DESIGN, "bottom to top `base/`, `wheel/`,",
                    "bottom to top `wheel/`, `base/`,"):
            failures.append("no \"bottom to top `base/`, `wheel/`,\" in the Layout")
        expect("the floors out of order", "the floors, bottom to top, are wheel/, base/")
        fresh()
        expect("an adapters/ rule's file not in its section", "adapters/tls.c, which",
               Lists(adapter_files=real.adapter_files + ["tls.c"]))
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        sys.stderr.write("design_map self-check: " + f + "\n")
    if failures:
        return 1
    print("design_map self-check: OK (a file missing, in the wrong layer, twice, gone, without "
          "words; UP_CALLS without a reason; a call up, a mutual call and a call not made "
          "claimed; the floors' rows and order; adapters/' rules)")
    return 0


def main(argv):
    modes = {"--self-check", "--print", "--write"}
    if len(argv) == 3 and argv[1] in modes:
        if argv[1] == "--self-check":
            return self_check(argv[2])
        return print_map(argv[2], Lists(), argv[1] == "--write")
    if len(argv) != 2:
        sys.stderr.write("usage: design_map.py [--print | --write | --self-check] SOURCE_ROOT\n")
        return 2
    if not check(argv[1], sys.stderr):
        return 1
    lists = Lists()
    print(f"design_map: OK ({sum(map(len, lists.layers))} files of core/ in "
          f"{len(lists.layers)} layers, {sum(map(len, lists.up_calls.values()))} calls up, "
          f"{len(lists.house)} floors)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
