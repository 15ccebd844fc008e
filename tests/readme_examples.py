#!/usr/bin/env python3
"""readme_examples.py SOURCE_ROOT - the README's first C and C++ programs
are docs/examples/first.c and first.cc (from their first #include on),
which test_examples builds and runs: a README edited alone, or an example
edited alone, fails here."""
import re
import sys

root = sys.argv[1]
readme = open(f"{root}/README.md", encoding="utf-8").read()
failed = False
for name, lang in (("first.c", "c"), ("first.cc", "cpp")):
    src = open(f"{root}/docs/examples/{name}", encoding="utf-8").read()
    body = src[src.index("#include"):]
    blocks = re.findall(r"```" + lang + r"\n(.*?)```", readme, re.S)
    if body not in blocks:
        print(f"README.md has no ```{lang} block equal to docs/examples/{name} "
              "from its first #include")
        failed = True
print("readme_examples: " + ("FAIL" if failed else "PASS"))
sys.exit(1 if failed else 0)
