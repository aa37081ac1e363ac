"""Where `fix` spends its CPU time on the dense tree of target 2, stage by stage, in one process.

    python benchmarks/stages.py [--runs 3] [--markdown docs/performance.md]

Runs ``api.fix_file`` (no writing) over the dense tree of ``run.py`` with a timer around each
stage function, and a bare ``libcst.parse_module(...).code`` over the same files in the same
process as the reference. Times are CPU seconds (``time.process_time``), exclusive of the
stages nested inside, medians of ``--runs`` runs. "LibCST's part" sums the stages that are
LibCST's own work (its parse, the one code-generation walk, the rebuild of changed nodes and the
code generation of changed nodes): what any design that parses whole files with LibCST pays.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from run import dense_tree, replace_between

# (label, module, attribute): the stage functions, in pipeline order.
STAGES = [
    ("read and decode", "vjp_migrate.files", "read_bytes"),
    ("read and decode", "vjp_migrate.source", "decode"),
    ("ast screen (its parse is also the syntax check)", "vjp_migrate.api", "_screen"),
    ("LibCST parse", "vjp_migrate.source", "parse"),
    ("imports", "vjp_migrate.imports", "import_table"),
    ("sites", "vjp_migrate.sites", "find_sites"),
    ("walk.Index (the one code-generation walk)", "vjp_migrate.walk", "Index.__init__"),
    ("classify", "vjp_migrate.classify", "classify_site"),
    ("plan", "vjp_migrate.plan", "decide"),
    ("plan", "vjp_migrate.plan.shared", "reconcile_shared"),
    ("findings and noqa", "vjp_migrate.findings", "diagnostics_for"),
    ("findings and noqa", "vjp_migrate.noqa", "suppress"),
    ("rewrite (plans to new nodes, unused imports)", "vjp_migrate.rewrite", "rewrite_module"),
    ("rebuild of the changed nodes (walk.Index.transform)", "vjp_migrate.walk", "Index.transform"),
    ("code generation of the changed nodes, spliced into the source", "vjp_migrate.walk", "Index.code"),
    ("syntax check of the changed statements", "vjp_migrate.source", "check_syntax"),
]
LIBCST = {
    "LibCST parse",
    "walk.Index (the one code-generation walk)",
    "rebuild of the changed nodes (walk.Index.transform)",
    "code generation of the changed nodes, spliced into the source",
}


class Timers:
    """Exclusive CPU time per label: a stage's time excludes the stages called inside it."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self._stack: list[float] = []  # time taken by the children of each running stage

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            self._stack.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                inner = self._stack.pop()
                took = time.process_time() - start
                self.spent[label] = self.spent.get(label, 0.0) + took - inner
                if self._stack:
                    self._stack[-1] += took

        return timed


def install(timers: Timers) -> None:
    """Wrap every stage function, also where another module imported it by name."""
    for label, module_name, attribute in STAGES:
        module = importlib.import_module(module_name)
        owner_name, _, name = attribute.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, name)
        timed = timers.wrap(label, original)
        setattr(owner, name, timed)
        if owner_name:
            continue
        for other in list(sys.modules.values()):
            if getattr(other, "__name__", "").startswith("vjp_migrate") and getattr(other, name, None) is original:
                setattr(other, name, timed)


def measure(files: list[Path], runs: int) -> tuple[dict[str, float], float, float]:
    """Median stage times, median total of fix_file, median bare reference (CPU seconds)."""
    import libcst

    import vjp_migrate.api as api
    import vjp_migrate.classify
    import vjp_migrate.findings
    import vjp_migrate.noqa
    import vjp_migrate.plan
    import vjp_migrate.project
    import vjp_migrate.rewrite
    import vjp_migrate.sites  # noqa: F401  (loaded before wrapping, so every reference is found)

    for path in files[:20]:  # warm up: lazy imports, caches
        api.fix_file(path, write=False)
    timers = Timers()
    install(timers)
    per_run: list[dict[str, float]] = []
    totals: list[float] = []
    bare: list[float] = []
    for _ in range(runs):
        timers.spent = {}
        start = time.process_time()
        for path in files:
            result = api.fix_file(path, write=False)
            assert result.changed, f"{path} was expected to change: {result.reason}"
        totals.append(time.process_time() - start)
        per_run.append(timers.spent)
        start = time.process_time()
        for path in files:
            _ = libcst.parse_module(path.read_text(encoding="utf-8")).code
        bare.append(time.process_time() - start)
    labels = dict.fromkeys(label for label, _, _ in STAGES)
    stages = {label: statistics.median(run.get(label, 0.0) for run in per_run) for label in labels}
    return stages, statistics.median(totals), statistics.median(bare)


def markdown(stages: dict[str, float], total: float, bare: float, files: int, runs: int) -> str:
    lines = ["| stage | CPU s | of bare |", "| --- | --- | --- |"]
    for label, seconds in stages.items():
        lines.append(f"| {label} | {seconds:.3f} | {seconds / bare:.2f} |")
    other = total - sum(stages.values())
    lines.append(f"| everything else (results, project lookup, noqa scan...) | {other:.3f} | {other / bare:.2f} |")
    lines.append(f"| **`fix_file`, all stages** | **{total:.3f}** | **{total / bare:.2f}** |")
    libcst_part = sum(seconds for label, seconds in stages.items() if label in LIBCST)
    lines.append(f"| LibCST's part (the four LibCST stages above) | {libcst_part:.3f} | {libcst_part / bare:.2f} |")
    lines.append(f"| bare `libcst.parse_module(...).code` (reference) | {bare:.3f} | 1.00 |")
    lines.append("")
    lines.append(f"- {files} files (the dense tree of target 2), one process, CPU time, median of {runs} runs")
    lines.append(f"- command: `{' '.join(['python benchmarks/stages.py', *sys.argv[1:]])}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs; medians are shown")
    parser.add_argument("--markdown", type=Path, action="append", default=[], help="write between the stages markers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vjp-stages-") as work:
        files = sorted(dense_tree(Path(work) / "dense").glob("*.py"))
        stages, total, bare = measure(files, args.runs)
    table = markdown(stages, total, bare, len(files), args.runs)
    print(table)
    for target in args.markdown:
        replace_between(target, "stages", table)


if __name__ == "__main__":
    main()
