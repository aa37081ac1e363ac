"""The floor of an `ast`-first design for target 2, measured on the dense tree of ``run.py``.

    python benchmarks/floor.py [--runs 5]

Such a design would analyse with CPython's `ast` and hand LibCST only the lines a migration
changes. Its floor, before any analysis: ``ast.parse`` of every file, plus a LibCST parse and code
generation of only the changed lines (the fixtures' before/after diff, dedented), next to the bare
``libcst.parse_module(...).code`` over the same files in the same process (CPU seconds, medians).
A prototype of the cost, not of the design: nothing here rewrites anything.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

import libcst
from run import FIXTURES, dense_tree

STUBS = ("", "    pass\n", "def _():\n    pass\n", "    def _():\n        pass\n")  # for a def line or a decorator


def changed_lines(before: str, after: str) -> list[str]:
    """The runs of ``before``'s lines that the migration replaces or deletes, dedented, each made
    a module LibCST parses by the smallest stub (a def line gets a body, a decorator a def)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    runs = difflib.SequenceMatcher(None, old, new).get_opcodes()
    pieces = []
    for tag, i1, i2, _, _ in runs:
        if tag == "equal" or i2 == i1:
            continue
        piece = textwrap.dedent("".join(old[i1:i2]))
        for stub in STUBS:
            try:
                libcst.parse_module(piece + stub)
            except libcst.ParserSyntaxError:
                continue
            pieces.append(piece + stub)
            break
        else:
            pieces.append(textwrap.dedent("".join(old[max(0, i1 - 3) : i2 + 3])))  # a wider window, as a stand-in
    return pieces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    after = {
        (case / "before.py").read_text(encoding="utf-8"): (case / "after.py").read_text(encoding="utf-8")
        for case in FIXTURES.iterdir()
        if (case / "after.py").is_file()
    }
    with tempfile.TemporaryDirectory() as work:
        texts = [p.read_text(encoding="utf-8") for p in sorted(dense_tree(Path(work) / "dense").iterdir())]
    pieces = [changed_lines(text, after[text]) for text in texts]

    generated: list[str] = []  # the generated code, kept

    def bare() -> None:
        generated.clear()
        for text in texts:
            generated.append(libcst.parse_module(text).code)

    def floor() -> None:
        for text, changed in zip(texts, pieces, strict=True):
            ast.parse(text)
            for piece in changed:
                # a wider window that still does not parse: its cost is counted all the same
                with contextlib.suppress(libcst.ParserSyntaxError):
                    generated.append(libcst.parse_module(piece).code)

    spent: dict[str, list[float]] = {"bare": [], "floor": []}
    for _ in range(runs):
        for name, work_once in (("bare", bare), ("floor", floor)):
            start = time.process_time()
            work_once()
            spent[name].append(time.process_time() - start)
    reference, measured = statistics.median(spent["bare"]), statistics.median(spent["floor"])
    share = sum(len(p) for changed in pieces for p in changed) / sum(len(t) for t in texts)
    print(f"bare libcst.parse_module(...).code: {reference:.3f} s CPU over {len(texts)} files")
    print(f"floor (ast.parse + LibCST on the changed lines, {share:.0%} of the text): {measured:.3f} s")
    print(f"ratio: {measured / reference:.2f} (median of {runs})")


if __name__ == "__main__":
    main()
