#!/usr/bin/env python3
"""docs_agree.py SOURCE_ROOT - what the documents say of the tree agrees
with the tree (and with each other), where a reader would be misled:

  - examples: every docs/examples/*.c and *.cc prints one "Build:" line
    in its top comment (tests/installed.sh builds each with it against a
    staged install); a command in README.md, docs/ or the man pages that
    compiles an example is that line, word for word; and no document
    runs an example from a build directory (build/.../docs/examples/...,
    which only a build with the tests has);
  - crontabs: a cron job line in the documents that runs lwlock names it
    by its path, or comes after a PATH= line holding /usr/local/bin (cron
    runs jobs with PATH=/usr/bin:/bin);
  - kinds of lease: docs/guide/production.md names every kind label the
    metrics have (core/kind_*.c's labels: "lock", "read", ...), and
    design.md's kind="a|b|..." lists them all;
  - the Redis user's commands (production.md): the table names every
    command of the ACL line (which tests/acl_every_kind.sh runs every
    kind with), the line has every command the scripts call
    (core/scripts.c), and the table's rows for a plain server ask for
    nothing the line (or the sentence after it, or AUTH) does not give.

Fails, naming the file, line and what differs, on each it finds.
(design.md's maps of the floors and of core/, against tests/layering.py's
lists, are tests/design_map.py's to check.)"""
import os
import re
import sys

EXAMPLES = os.path.join("docs", "examples")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def documents(root):
    """README.md, every .md under docs/, and the man pages."""
    out = ["README.md", "CONTRIBUTING.md"]
    for d, _, files in sorted(os.walk(os.path.join(root, "docs"))):
        for n in sorted(files):
            rel = os.path.relpath(os.path.join(d, n), root)
            if n.endswith(".md") or rel.startswith(os.path.join("docs", "man") + os.sep):
                out.append(rel)
    return out


def man_text(text):
    """A man page's text as typed: troff's escapes for - and \\ undone."""
    return text.replace("\\-", "-").replace("\\e", "\\")


def build_lines(root, fails):
    """{example file name: its Build: line}."""
    lines = {}
    for n in sorted(os.listdir(os.path.join(root, EXAMPLES))):
        if not n.endswith((".c", ".cc")):
            continue
        src = read(root, os.path.join(EXAMPLES, n))
        top = src[:src.find("*/")]
        found = re.findall(r"^ \* Build: (.+)$", top, re.M)
        if len(found) != 1:
            fails.append(f"{EXAMPLES}/{n}: {len(found)} 'Build:' lines in its top comment, not 1")
            continue
        if not re.search(r"(^|\s)" + re.escape(n) + r"(\s|$)", found[0]):
            fails.append(f"{EXAMPLES}/{n}: its Build: line does not name {n}: {found[0]}")
        lines[n] = found[0]
    return lines


def check_examples(root, docs, fails):
    lines = build_lines(root, fails)
    compile_re = re.compile(r"^\s*(?:\$ )?(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+)\s.*$")
    for rel in docs:
        text = read(root, rel)
        if rel.startswith(os.path.join("docs", "man")):
            text = man_text(text)
        for no, line in enumerate(text.split("\n"), 1):
            if re.search(r"\bbuild/[^\s/]*/?docs/examples/", line):
                fails.append(f"{rel}:{no}: runs an example from a build directory, which "
                             f"only a build with the tests has: {line.strip()}")
            if not compile_re.match(line):
                continue
            cmd = line.split("#")[0].strip()
            if cmd.startswith("$ "):
                cmd = cmd[2:]
            named = [n for n in lines
                     if re.search(r"(^|[\s/])" + re.escape(n) + r"(\s|$)", cmd)]
            for n in named:
                if cmd != lines[n]:
                    fails.append(f"{rel}:{no}: builds {n} otherwise than its Build: line:\n"
                                 f"    here:    {cmd}\n    Build: {lines[n]}")
    return len(lines)


CRON_JOB = re.compile(r"^\s*(?:@\w+|(?:[0-9*/,-]+\s+){5})(\S+)")


def check_crontabs(root, docs, fails):
    jobs = 0
    for rel in docs:
        text = read(root, rel)
        if rel.startswith(os.path.join("docs", "man")):
            text = man_text(text)
        path = None
        for no, line in enumerate(text.split("\n"), 1):
            if line.startswith("```") or line.startswith(".EX"):
                path = None  # a new block: a crontab of its own
            m = re.match(r"^\s*PATH=(\S+)", line)
            if m:
                path = m.group(1)
            m = CRON_JOB.match(line)
            if not m or "lwlock" not in m.group(1):
                continue
            jobs += 1
            if m.group(1).startswith("/"):
                continue
            if path is None or "/usr/local/bin" not in path.split(":"):
                fails.append(f"{rel}:{no}: a cron job runs {m.group(1)} by name, which cron's "
                             f"PATH (/usr/bin:/bin) does not find: {line.strip()}")
    return jobs


def kind_labels(root):
    """The metrics' kind labels, as core/ defines them."""
    labels = []
    for n in sorted(os.listdir(os.path.join(root, "core"))):
        if n.startswith("kind") and n.endswith(".c"):
            text = read(root, os.path.join("core", n))
            labels += re.findall(r"\.label\s*=\s*\"(\w+)\"", text)
            labels += re.findall(r"HASH_FIELD_KIND\(\s*\"[^\"]*\"\s*,\s*\"(\w+)\"", text)
    return labels


def check_kinds(root, fails):
    labels = kind_labels(root)
    if len(labels) < 6:
        fails.append(f"core/kind_*.c: only {labels} found as kind labels: is the pattern stale?")
    page = os.path.join("docs", "guide", "production.md")
    text = read(root, page)
    for label in labels:
        if f'"{label}"' not in text:
            fails.append(f"{page}: the metrics' kind \"{label}\" is not named")
    design = read(root, os.path.join("docs", "design.md"))
    for m in re.finditer(r'kind="([a-z|]+)"', design):
        if "|" in m.group(1) and sorted(m.group(1).split("|")) != sorted(labels):
            fails.append(f"docs/design.md: kind=\"{m.group(1)}\", where the kinds are "
                         f"{'|'.join(labels)}")
    return len(labels)


def acl_commands(words):
    """+cmd and +cmd|sub of an ACL rule, as the table spells them: CMD."""
    return {w[1:].split("|")[0].upper() for w in words if w.startswith("+")}


def check_acl(root, fails):
    rel = os.path.join("docs", "guide", "production.md")
    text = read(root, rel)
    section = text[text.index("## The commands the Redis user needs"):]
    section = section[:section.index("\n## ", 1)]
    line = next((ln for ln in section.split("\n") if ln.startswith("ACL SETUSER ")), None)
    if line is None:
        fails.append(f"{rel}: no ACL SETUSER line")
        return 0
    on_line = acl_commands(line.split())
    after = section[section.index(line) + len(line):]
    after = after[after.index("```") + 3:].lstrip("\n").split("\n\n")[0]
    added = acl_commands(re.findall(r"\+[a-z|]+", after))
    table, plain = set(), set()
    for row in section.split("\n"):
        cells = row.split("|")
        if not row.startswith("| ") or len(cells) < 4 or set(cells[1].strip()) <= set("- "):
            continue
        words = set(re.findall(r"`([A-Z][A-Z]+)(?: [A-Z]+)?`", row))  # `SCRIPT LOAD`: SCRIPT
        table |= words
        if not re.search(r"Cluster|Sentinel|acquire_replicas", cells[1]):
            plain |= words
    for cmd in sorted(on_line - table):
        fails.append(f"{rel}: the ACL line allows {cmd}, which the table does not name")
    for cmd in sorted(plain - on_line - added - {"AUTH"}):
        fails.append(f"{rel}: the table asks for {cmd}, which neither the ACL line nor the "
                     "sentence after it gives")
    scripts = read(root, os.path.join("core", "scripts.c"))
    called = {c.upper() for c in re.findall(r"redis\.p?call\('(\w+)'", scripts)}
    for cmd in sorted(called - on_line):
        fails.append(f"{rel}: the scripts call {cmd} (core/scripts.c), which the ACL line "
                     "does not allow")
    return len(on_line)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: docs_agree.py SOURCE_ROOT\n")
        return 2
    root = argv[1]
    fails = []
    docs = documents(root)
    n_examples = check_examples(root, docs, fails)
    n_jobs = check_crontabs(root, docs, fails)
    n_kinds = check_kinds(root, fails)
    n_acl = check_acl(root, fails)
    for f in fails:
        sys.stderr.write("docs_agree: " + f + "\n")
    if fails:
        return 1
    print(f"docs_agree: {n_examples} examples' Build: lines, {n_jobs} cron jobs, "
          f"{n_kinds} kinds of lease, "
          f"{n_acl} commands of the ACL line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
