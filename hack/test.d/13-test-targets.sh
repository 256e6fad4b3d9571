#!/usr/bin/env bash
# A target that `cargo test` skips has nothing to test: a library or binary with `test = false`
# has no `#[test]`, `#[tokio::test]` or `#[cfg(test)]` in its sources, and a library with
# `doctest = false` no Rust code block in its doc comments. The manifests switch those builds off
# to save build time (docs/building.md, "What `cargo test` builds"); this check fails, naming the
# file, the line and the manifest, when a test is added where it would never run.
set -euo pipefail
cd "$(dirname "$0")/../.."

metadata=$(cargo metadata --locked --no-deps --format-version 1)
python3 - "$metadata" <<'EOF'
import json, os, re, sys

root = os.getcwd()
fence = re.compile(r"^\s*(?://[/!]|\*)\s?\s*(```|~~~)\s*([^`~]*)$")
doc_line = re.compile(r"^\s*//[/!]")
test_attr = re.compile(r"#\[\s*(?:(?:[a-z_]+::)?test\b|cfg(?:_attr)?\([^\]]*\btest\b)")
# Code block tags rustdoc compiles as Rust: no tag, or only these (rustdoc book, "Attributes").
rust_tags = {"", "rust", "ignore", "should_panic", "no_run", "compile_fail", "test_harness",
             "edition2015", "edition2018", "edition2021", "edition2024", "standalone_crate"}

def rel(path):
    return os.path.relpath(path, root)

def rust_files(target):
    src = target["src_path"]
    if "lib" not in target["kind"]:
        return [src]  # a binary: main.rs declares no modules (checked below)
    files = []
    for d, _, names in os.walk(os.path.dirname(src)):
        files += [os.path.join(d, n) for n in names if n.endswith(".rs") and n != "main.rs"]
    return sorted(files)

problems, checked = [], 0
for pkg in json.loads(sys.argv[1])["packages"]:
    manifest = rel(pkg["manifest_path"])
    for t in pkg["targets"]:
        kind = t["kind"][0]
        if kind not in ("lib", "bin"):
            continue
        no_test, no_doctest = not t["test"], kind == "lib" and not t["doctest"]
        if not (no_test or no_doctest):
            continue
        for path in rust_files(t):
            checked += 1
            in_block = False
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                where = f"{rel(path)}:{n}"
                if kind == "bin" and re.match(r"^\s*(pub\s+)?mod\s+\w+\s*;", line):
                    problems.append(f"{where}: binary {t['name']} declares a module; {manifest} says `test = false` for it, so move the module into the library")
                if no_test and test_attr.search(line):
                    problems.append(f"{where}: a test in {kind} {t['name']}, which {manifest} builds with `test = false`: remove that line from the manifest so `cargo test` runs it")
                if not doc_line.match(line):
                    continue
                m = fence.match(line)
                if not m:
                    continue
                if in_block:
                    in_block = False
                    continue
                in_block = True
                tags = {x for x in re.split(r"[\s,]+", m.group(2).strip()) if x}
                if no_doctest and all(x in rust_tags for x in tags):
                    problems.append(f"{where}: a Rust code block (a doctest) in {pkg['name']}, whose {manifest} says `doctest = false`: remove that line from [lib] so `cargo test` runs it, or tag the block with its language (```text)")

for p in problems:
    print("FAIL:", p, file=sys.stderr)
if checked < 10:
    sys.exit(f"FAIL: checked {checked} files; expected the sources of every target built without tests")
if problems:
    sys.exit(1)
print(f"test-targets: ok ({checked} files of targets built without tests or doctests: none has one)")
EOF
