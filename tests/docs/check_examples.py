#!/usr/bin/python3
"""Checks that the C++ examples of the documentation are the code the tests compile and run.

    /usr/bin/python3 tests/docs/check_examples.py [SOURCE_DIR]

SOURCE_DIR is the project's source tree (default: two directories above this script), so
the check also runs from a build directory (ctest passes ${PROJECT_SOURCE_DIR}).

The tests mark the code they copy from the documentation:

    // clang-format off
    // guide-example: views
    auto inner = u[idx[range(1, -1)][range(1, -1)]];  // u[1:-1, 1:-1]   View<double, 2, 2>
    ...
    // end guide-example
    // clang-format on

Setup a fragment needs (variables it uses, e.g. `n`, `row`) goes before the start marker,
checks after the end marker. One documentation block may be split over several regions
(a test may put setup code between them); region names are unique.

Rules, each violation printed with file:line, exit status 1 if there is any:

1. Every marked region of tests/**/*.{cpp,hpp} appears verbatim inside a ```cpp block of
   docs/user-guide.md or README.md, as consecutive lines. Lines are compared without their
   leading indentation and trailing whitespace (the test may nest the code deeper); blank
   lines are ignored; everything else, comments and their alignment included, must match.
2. Every ```cpp block of those files is covered: each of its non-blank lines is part of
   some region's match. A block that cannot be compiled (a skeleton with `...`, a whole
   program with its own main and MPI_Init) is exempted by the line

       <!-- example: not compiled (the reason) -->

   directly before its opening fence. An exempted block that is fully covered anyway, or
   an exemption not followed by a ```cpp block, is an error (stale exemption).
3. Markers are well formed (no nesting, every start has its end, no empty region), and the
   old `// --- guide: x ---` markers are gone.
4. Every test source that holds a region is named in a CMake file under tests/ (it is
   compiled into a test binary).

Standard library only.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field

DOCS = ("docs/user-guide.md", "README.md")
SOURCE_EXTENSIONS = (".cpp", ".hpp", ".h", ".cc")

START = re.compile(r"^\s*//\s*guide-example:\s*(?P<name>\S.*?)\s*$")
END = re.compile(r"^\s*//\s*end guide-example\s*$")
LEGACY = re.compile(r"^\s*//\s*---\s*(guide:|end guide|end\s*---)")
FENCE_CPP = re.compile(r"^ {0,3}```\s*cpp\b.*$")
FENCE_ANY = re.compile(r"^ {0,3}```")
FENCE_CLOSE = re.compile(r"^ {0,3}```\s*$")
EXEMPT = re.compile(r"^\s*<!--\s*example:\s*not compiled\s*\((?P<reason>.*\S.*)\)\s*-->\s*$")
EXEMPT_LOOSE = re.compile(r"^\s*<!--\s*example:")


@dataclass
class Region:
    name: str
    path: str          # relative to the source dir
    start: int         # line of the start marker (1-based)
    lines: list        # [(text, lineno)] of the region's code, as written
    matched: bool = False

    def normalized(self):
        return [t.strip() for t, _ in self.lines if t.strip()]


@dataclass
class Block:
    path: str
    fence: int         # line of the opening fence (1-based)
    lines: list        # [(text, lineno)]
    exempt: str | None = None
    covered: set = field(default_factory=set)  # indices into normalized()

    def normalized(self):
        return [(t.strip(), n) for t, n in self.lines if t.strip()]


class Report:
    def __init__(self):
        self.errors = 0

    def error(self, where, msg, detail=()):
        self.errors += 1
        print(f"{where}: error: {msg}")
        for d in detail:
            print(f"    {d}")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def parse_docs(src, report):
    blocks = []
    for rel in DOCS:
        path = os.path.join(src, rel)
        if not os.path.isfile(path):
            report.error(rel, "documentation file not found")
            continue
        lines = read_lines(path)
        i = 0
        while i < len(lines):
            line = lines[i]
            if EXEMPT_LOOSE.match(line):
                if not EXEMPT.match(line):
                    report.error(f"{rel}:{i + 1}",
                                 "malformed exemption: write <!-- example: not compiled (reason) -->")
                elif i + 1 >= len(lines) or not FENCE_CPP.match(lines[i + 1]):
                    report.error(f"{rel}:{i + 1}",
                                 "exemption not directly followed by a ```cpp block (stale exemption)")
            if FENCE_ANY.match(line):
                is_cpp = bool(FENCE_CPP.match(line))
                j = i + 1
                while j < len(lines) and not FENCE_CLOSE.match(lines[j]):
                    j += 1
                if j >= len(lines):
                    report.error(f"{rel}:{i + 1}", "code block is never closed")
                if is_cpp:
                    exempt = None
                    if i > 0:
                        m = EXEMPT.match(lines[i - 1])
                        if m:
                            exempt = m.group("reason").strip()
                    blocks.append(Block(rel, i + 1, [(lines[k], k + 1) for k in range(i + 1, min(j, len(lines)))],
                                        exempt))
                i = j + 1
                continue
            i += 1
    return blocks


def test_sources(src):
    root = os.path.join(src, "tests")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(SOURCE_EXTENSIONS):
                yield os.path.relpath(os.path.join(dirpath, fn), src)


def parse_regions(src, report):
    regions = []
    names = {}
    for rel in test_sources(src):
        try:
            lines = read_lines(os.path.join(src, rel))
        except UnicodeDecodeError:
            continue
        current = None
        for n, line in enumerate(lines, 1):
            if LEGACY.match(line):
                report.error(f"{rel}:{n}", "old marker syntax: use `// guide-example: <name>` ... "
                             "`// end guide-example`")
            m = START.match(line)
            if m:
                if current:
                    report.error(f"{rel}:{n}", f"region '{m.group('name')}' starts inside region "
                                 f"'{current.name}' (started at line {current.start})")
                current = Region(m.group("name"), rel, n, [])
                continue
            if END.match(line):
                if not current:
                    report.error(f"{rel}:{n}", "`// end guide-example` without a start marker")
                    continue
                if not current.normalized():
                    report.error(f"{rel}:{current.start}", f"region '{current.name}' is empty")
                elif current.name in names:
                    report.error(f"{rel}:{current.start}", f"region name '{current.name}' already used at "
                                 f"{names[current.name]}")
                else:
                    names[current.name] = f"{rel}:{current.start}"
                    regions.append(current)
                current = None
                continue
            if current:
                current.lines.append((line, n))
        if current:
            report.error(f"{rel}:{current.start}", f"region '{current.name}' has no `// end guide-example`")
    return regions


def find_all(haystack, needle):
    """Start positions of `needle` as a contiguous run of `haystack`."""
    k = len(needle)
    return [i for i in range(len(haystack) - k + 1) if haystack[i:i + k] == needle]


def closest_block(region, blocks):
    best, best_ratio = None, -1.0
    want = region.normalized()
    for b in blocks:
        have = [t for t, _ in b.normalized()]
        sm = difflib.SequenceMatcher(None, want, have, autojunk=False)
        # prefer the block sharing most lines with the region
        r = sum(t.size for t in sm.get_matching_blocks()) / max(1, len(want))
        if r > best_ratio:
            best, best_ratio = b, r
    return best, best_ratio


def drift_detail(region, block):
    """The lines of the closest block that differ from the region, as a short diff."""
    want = region.normalized()
    have = block.normalized()
    sm = difflib.SequenceMatcher(None, want, [t for t, _ in have], autojunk=False)
    blocks = sm.get_matching_blocks()
    # the part of the block the region overlaps most
    lo = min((m.b for m in blocks if m.size), default=0)
    hi = max((m.b + m.size for m in blocks if m.size), default=len(have))
    src_lines = {}
    for t, n in region.lines:
        if t.strip():
            src_lines.setdefault(t.strip(), n)
    out = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if j1 < lo and j2 <= lo and tag == "insert":
            continue  # block lines before the region: another region's
        if j1 >= hi and tag == "insert":
            continue  # block lines after the region
        for t in want[i1:i2]:
            out.append(f"- test  {region.path}:{src_lines.get(t, '?')}: {t}")
        for t, n in have[j1:j2]:
            out.append(f"+ doc   {block.path}:{n}: {t}")
    return out[:24] + (["  ..."] if len(out) > 24 else [])


def check_registered(src, regions, report):
    texts = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, "tests")):
        for fn in filenames:
            if fn == "CMakeLists.txt" or fn.endswith(".cmake"):
                p = os.path.join(dirpath, fn)
                with open(p, encoding="utf-8") as f:
                    texts.append((os.path.relpath(dirpath, os.path.join(src, "tests")), f.read()))
    for path in sorted({r.path for r in regions}):
        rel_tests = os.path.relpath(path, "tests").replace(os.sep, "/")
        ok = False
        for d, text in texts:
            cand = {rel_tests}
            if d != ".":
                cand.add(os.path.relpath(rel_tests, d).replace(os.sep, "/"))
            if any(re.search(r"(^|[\s/\"(])" + re.escape(c) + r"($|[\s\")])", text, re.M) for c in cand):
                ok = True
                break
        if not ok and not path.endswith((".hpp", ".h")):
            first = min(r.start for r in regions if r.path == path)
            report.error(f"{path}:{first}", f"holds guide examples but no CMake file under tests/ names "
                         f"'{rel_tests}': add it to a garray_test_binary(...) line")


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    src = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = os.path.abspath(src)
    if not os.path.isdir(os.path.join(src, "tests")) or not os.path.isdir(os.path.join(src, "docs")):
        print(f"check_examples: {src} is not the libgarray source tree (no tests/ and docs/)")
        return 2
    os.chdir(src)  # file:line messages relative to the source tree
    report = Report()
    blocks = parse_docs(src, report)
    regions = parse_regions(src, report)

    # 1. every region appears in a ```cpp block; mark what it covers
    for r in regions:
        want = r.normalized()
        for b in blocks:
            have = [t for t, _ in b.normalized()]
            for pos in find_all(have, want):
                r.matched = True
                b.covered.update(range(pos, pos + len(want)))
        if not r.matched:
            b, ratio = closest_block(r, blocks)
            detail = []
            if b is not None and ratio > 0:
                detail.append(f"closest: the ```cpp block at {b.path}:{b.fence}; differing lines:")
                detail += drift_detail(r, b)
            report.error(f"{r.path}:{r.start}", f"region '{r.name}' does not appear verbatim in a ```cpp block "
                         f"of {' or '.join(DOCS)} (the test and the documentation drifted apart)", detail)

    # 2. every block is covered or exempted
    covered = exempted = 0
    uncovered_hint = False
    for b in blocks:
        norm = b.normalized()
        missing = [(t, n) for k, (t, n) in enumerate(norm) if k not in b.covered]
        if b.exempt is not None:
            exempted += 1
            if norm and not missing:
                report.error(f"{b.path}:{b.fence - 1}", "block is exempted but fully covered by tests: "
                             "remove the <!-- example: not compiled --> line")
            continue
        if not missing:
            covered += 1
            continue
        detail = [f"{b.path}:{n}: {t}" for t, n in missing[:12]]
        if len(missing) > 12:
            detail.append(f"... and {len(missing) - 12} more")
        what = "is not covered by any test region" if len(missing) == len(norm) else \
            f"has {len(missing)} of {len(norm)} lines no test region covers"
        report.error(f"{b.path}:{b.fence}", f"```cpp block {what}", detail)
        uncovered_hint = True

    # 4. the sources holding regions are compiled
    check_registered(src, regions, report)

    if uncovered_hint:
        print("hint: copy the block into a test (tests/array/guide_basics.cpp and the other files with "
              "`// guide-example:` regions), between `// guide-example: <name>` and `// end guide-example`, "
              "with its setup before and checks after; or, for a skeleton that cannot compile, put "
              "<!-- example: not compiled (reason) --> on the line before the block")
    print(f"check_examples: {len(blocks)} ```cpp blocks in {', '.join(DOCS)}: {covered} covered by tests, "
          f"{exempted} exempted, {len(blocks) - covered - exempted} not covered; {len(regions)} test regions, "
          f"{sum(1 for r in regions if not r.matched)} drifted; {report.errors} error(s)")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
