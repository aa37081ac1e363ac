"""Verify: prove a migration with real JAX gradients, BEFORE against AFTER.

The public API of the ``verify`` feature. Importing this package does not import JAX: the
checks run in a worker subprocess (``worker.py``), the only place that imports JAX and runs
user code.
"""

from __future__ import annotations

from pathlib import Path

from vjp_migrate.verify.batch import verify_batch
from vjp_migrate.verify.model import (
    CheckOutcome,
    CheckStatus,
    ExampleCall,
    FunctionRow,
    Verdict,
    VerifyOptions,
    VerifyReport,
    call,
)
from vjp_migrate.verify.runner import MISSING_JAX, Side, run_jobs

__all__ = [
    "MISSING_JAX",
    "CheckOutcome",
    "CheckStatus",
    "ExampleCall",
    "FunctionRow",
    "Verdict",
    "VerifyOptions",
    "VerifyReport",
    "call",
    "render_report",
    "verify_batch",
    "verify_files",
    "verify_many",
    "verify_sources",
    "verify_sources_many",
    "verify_trees",
    "verify_trees_many",
]


def verify_files(before: Path, after: Path, options: VerifyOptions) -> VerifyReport:
    """Verify that every custom_vjp function changed between two module files gives the same
    primal outputs and cotangents, and that AFTER works with its migrated arguments traced."""
    return run_jobs([(Side(before), Side(after))], options)[0]


def verify_sources(before_source: str, after_source: str, path: Path, options: VerifyOptions) -> VerifyReport:
    """Like ``verify_files`` for two in-memory versions of the module at ``path`` (used by
    ``fix --verify`` before writing): relative imports resolve as they would from ``path``,
    and nothing is written to disk."""
    return verify_sources_many([(before_source, after_source, path)], options)[0]


def verify_sources_many(
    rewrites: list[tuple[str, str, Path]], options: VerifyOptions, workers: int = 1
) -> list[VerifyReport]:
    """``verify_sources`` for several modules (BEFORE's text, AFTER's text, path), in up to
    ``workers`` worker processes; one report per module, in order."""
    return verify_batch(rewrites, [], options, workers)[0]


def verify_trees(before: Path, after: Path, options: VerifyOptions, examples: Path | None = None) -> VerifyReport:
    """Pair the .py files of two trees by relative path; import each tree as its own set of
    packages (its root on sys.path, never mixing with the other tree's modules); verify every
    custom_vjp function that differs in any pair; one report.

    "Differs" is judged by files: every custom_vjp of a file that differs, or that imports one
    that differs (directly or not), is verified. ``examples`` (default ``options.examples``)
    names functions as ``"pkg.ops:fn"``, or ``"fn"`` when one module alone has it.
    """
    return verify_trees_many([(before, after, examples)], options)[0]


def verify_trees_many(
    trees: list[tuple[Path, Path, Path | None]], options: VerifyOptions, workers: int = 1
) -> list[VerifyReport]:
    """``verify_trees`` for several (BEFORE, AFTER, examples) trees, in up to ``workers`` worker
    processes; one report per pair of trees, in order."""
    return verify_batch([], trees, options, workers)[1]


def verify_many(
    pairs: list[tuple[Path, Path]],
    options: VerifyOptions,
    examples: list[Path | None] | None = None,
    workers: int = 1,
) -> list[VerifyReport]:
    """``verify_files`` for several pairs, in up to ``workers`` worker processes, each pair with
    its own timeout (one report per pair, in order); ``examples``, when given, is one examples
    file (or None) per pair."""
    return run_jobs([(Side(b), Side(a)) for b, a in pairs], options, examples, workers)


def render_report(report: VerifyReport, fmt: str = "text") -> str:
    """The report as ``text`` (a rich table) or ``json``."""
    from vjp_migrate.verify.render import render

    return render(report, fmt)
