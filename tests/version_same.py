#!/usr/bin/env python3
"""version_same.py SOURCE_ROOT VERSION - every place that states the
version states meson.build's, VERSION (X.Y.Z), the one lw_version(),
leasewheel.pc and CMake's version file are made from (test_abi and
tests/installed.sh check those three against it):

  - CHANGELOG.md: its newest release is "## [X.Y.Z] - YYYY-MM-DD", dated,
    and no release is newer; each release says "Set by `HASH`", and in a
    git checkout (not a shallow one) HASH is a commit whose meson.build
    states that version and whose parent's does not, and every tag an
    entry claims ("Tagged `vX.Y.Z`", "tag vX.Y.Z") is one git has;
  - README.md: "Version X.Y", and its find_package(leasewheel X.Y ...);
  - the man pages' .TH lines: "leasewheel X.Y"; leasewheel(3)'s
    find_package(leasewheel X.Y);
  - the public headers: every "Added in A.B" names a version no newer
    than X.Y (a note cannot promise what this version has not), or the
    next minor version when the CHANGELOG opens with "## [Unreleased]",
    which lists what it will bring.

Fails, naming the file and what it says, on the first of each that
differs."""
import os
import re
import subprocess
import sys


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def as_tuple(v):
    return tuple(int(x) for x in v.split("."))


def git(root, *args):
    """git's output, stripped; None when git fails (or is missing)."""
    try:
        r = subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def meson_version_at(root, commit):
    text = git(root, "show", f"{commit}:meson.build")
    m = re.search(r"version\s*:\s*'([^']*)'", text or "")
    return m.group(1) if m else None


def check_releases(root, changelog):
    """What each release says of the repository is true of it."""
    fails = []
    sections = re.split(r"^## ", changelog, flags=re.M)
    in_git = git(root, "rev-parse", "--is-shallow-repository") == "false"
    tags = set((git(root, "tag", "--list") or "").split()) if in_git else set()
    for sec in sections:
        m = re.match(r"\[(\d+\.\d+\.\d+)\]", sec)
        if not m:
            continue
        v = m.group(1)
        for tag in re.findall(r"(?:[Tt]agged|\btag)\s+`?(v\d+\.\d+\.\d+)`?", sec):
            if in_git and tag not in tags:
                fails.append(f"CHANGELOG.md: {v} claims the tag {tag}, which the repository "
                             "does not have")
        by = re.search(r"Set by `([0-9a-f]{7,40})`", sec)
        if not by:
            fails.append(f"CHANGELOG.md: {v} names no commit (\"Set by `HASH`\")")
            continue
        if not in_git:
            continue
        commit = by.group(1)
        if git(root, "rev-parse", "--verify", "--quiet", commit + "^{commit}") is None:
            fails.append(f"CHANGELOG.md: {v} is set by {commit}, not a commit here")
            continue
        if meson_version_at(root, commit) != v:
            fails.append(f"CHANGELOG.md: {v} is set by {commit}, whose meson.build says "
                         f"{meson_version_at(root, commit)}")
        elif git(root, "rev-parse", "--verify", "--quiet", commit + "^") is not None \
                and meson_version_at(root, commit + "^") == v:
            fails.append(f"CHANGELOG.md: {v} is set by {commit}, but its parent says {v} "
                         "already")
    return fails


def check(root, version):
    fails = []
    minor = ".".join(version.split(".")[:2])

    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\](.*)$", read(root, "CHANGELOG.md"), re.M)
    if not releases:
        fails.append("CHANGELOG.md: no release section")
    else:
        newest, rest = releases[0]
        if newest != version:
            fails.append(f"CHANGELOG.md: the newest release is {newest}, not {version}")
        if not re.match(r"^ - \d{4}-\d{2}-\d{2}$", rest):
            fails.append(f"CHANGELOG.md: {newest} is not dated (\"{rest.strip()}\")")
        if any(as_tuple(v) > as_tuple(version) for v, _ in releases):
            fails.append("CHANGELOG.md: a release newer than " + version)
        fails += check_releases(root, read(root, "CHANGELOG.md"))

    readme = read(root, "README.md")
    if not re.search(r"\bVersion " + re.escape(minor) + r"\b", readme):
        fails.append(f"README.md: no \"Version {minor}\"")
    for m in re.finditer(r"find_package\(leasewheel (\d+\.\d+)", readme):
        if m.group(1) != minor:
            fails.append(f"README.md: find_package(leasewheel {m.group(1)})")

    mandir = os.path.join(root, "docs", "man")
    for name in sorted(os.listdir(mandir)):
        text = read(root, os.path.join("docs", "man", name))
        th = re.search(r'^\.TH .*"leasewheel (\d+\.\d+)"', text, re.M)
        if not th or th.group(1) != minor:
            fails.append(f"docs/man/{name}: .TH says {th.group(1) if th else 'no version'}")
        for m in re.finditer(r"find_package\(leasewheel (\d+\.\d+)", text):
            if m.group(1) != minor:
                fails.append(f"docs/man/{name}: find_package(leasewheel {m.group(1)})")

    headers = [os.path.join("include", "leasewheel.hpp"), os.path.join("include", "leasewheel.h")]
    headers += [os.path.join("include", "leasewheel", n)
                for n in sorted(os.listdir(os.path.join(root, "include", "leasewheel")))
                if n.endswith(".h")]
    # What is on main but not released yet may say the next minor.
    newest_allowed = as_tuple(minor)
    if re.search(r"^## \[Unreleased\]$", read(root, "CHANGELOG.md"), re.M):
        newest_allowed = (newest_allowed[0], newest_allowed[1] + 1)
    for rel in headers:
        for m in re.finditer(r"Added\s+in\s+(\d+\.\d+)", read(root, rel)):
            if as_tuple(m.group(1)) > newest_allowed:
                fails.append(f"{rel}: \"Added in {m.group(1)}\", newer than {minor}"
                             " and its unreleased next")
    return fails


def main(argv):
    if len(argv) != 3 or not re.match(r"^\d+\.\d+\.\d+$", argv[2]):
        sys.stderr.write("usage: version_same.py SOURCE_ROOT X.Y.Z\n")
        return 2
    fails = check(argv[1], argv[2])
    for f in fails:
        sys.stderr.write("version_same: " + f + "\n")
    if fails:
        return 1
    print(f"version_same: {argv[2]} everywhere")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
