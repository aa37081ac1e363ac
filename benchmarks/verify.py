"""`fix --verify` over a tree of fixture files, next to the JAX imports a run pays at least when
every file gets a worker process of its own, measured in the same run.

    python benchmarks/verify.py [--runs 3] [--files 16] [--projects 5] [--markdown docs/performance.md]

The tree holds the first ``--files`` golden fixtures that `fix` changes (distinct files, each a
single-file migration) and the first ``--projects`` multi-file fixtures (``fixtures/project_*``
with an ``after`` tree, each a package whose migration is proven as one job). Rows: `fix --verify`
with the default worker processes (one per CPU) and with ``--jobs 1``, wall-clock and CPU seconds
(medians); the reference is one ``python -c "import jax"`` per file and per package, one after
another. Needs JAX (``pip install -e '.[test]'``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from run import FIXTURES, VJP, dense_tree, replace_between, wall_and_cpu


def add_projects(tree: Path, count: int) -> int:
    """Copies of the first ``count`` multi-file fixtures that `fix` changes; how many there were."""
    cases = [case for case in sorted(FIXTURES.glob("project_*")) if (case / "after").is_dir()][:count]
    for case in cases:
        shutil.copytree(case / "before", tree / case.name)
    return len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per command; medians are compared")
    parser.add_argument("--files", type=int, default=16, help="fixture files in the tree")
    parser.add_argument("--projects", type=int, default=5, help="multi-file fixtures in the tree")
    parser.add_argument("--markdown", type=Path, action="append", default=[], help="also write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vjp-bench-verify-") as work:
        pristine = dense_tree(Path(work) / "pristine", args.files)
        projects = add_projects(pristine, args.projects)
        tree = Path(work) / "tree"

        def fresh() -> None:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(pristine, tree)

        wall, cpu = wall_and_cpu([*VJP, "fix", "--verify", str(tree)], args.runs, fresh)
        wall_one, cpu_one = wall_and_cpu([*VJP, "fix", "--verify", "--jobs", "1", str(tree)], args.runs, fresh)
    imports, _ = wall_and_cpu([sys.executable, "-c", "import jax"], args.runs)
    reference = imports * (args.files + projects)
    lines = [
        "| `fix --verify`, tree of fixture files and packages | wall s | CPU s | wall vs reference |",
        "| --- | --- | --- | --- |",
        f"| default workers (one per CPU) | {wall:.2f} | {cpu:.2f} | {wall / reference:.2f} |",
        f"| `--jobs 1` (one worker) | {wall_one:.2f} | {cpu_one:.2f} | {wall_one / reference:.2f} |",
        f"| reference: {args.files + projects} x `python -c 'import jax'` ({imports:.2f} s each)"
        f" | {reference:.2f} | | 1.00 |",
        "",
        f"- {args.files} single-file migrations and {projects} multi-file ones; runs: {args.runs} (medians)",
        f"- command: `{' '.join(['python benchmarks/verify.py', *sys.argv[1:]])}`",
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    for target in args.markdown:
        replace_between(target, "verify-benchmark", table)


if __name__ == "__main__":
    main()
