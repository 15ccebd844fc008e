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
    runs jobs with PATH=/usr/bin:/bin).

Fails, naming the file, line and what differs, on each it finds."""
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


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: docs_agree.py SOURCE_ROOT\n")
        return 2
    root = argv[1]
    fails = []
    docs = documents(root)
    n_examples = check_examples(root, docs, fails)
    n_jobs = check_crontabs(root, docs, fails)
    for f in fails:
        sys.stderr.write("docs_agree: " + f + "\n")
    if fails:
        return 1
    print(f"docs_agree: {n_examples} examples' Build: lines, {n_jobs} cron jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
