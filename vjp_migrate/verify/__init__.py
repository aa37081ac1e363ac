"""Verify: prove a migration with real JAX gradients, BEFORE against AFTER.

The public API of the ``verify`` feature. Importing this package does not import JAX: the
checks run in a worker subprocess (``worker.py``), the only place that imports JAX and runs
user code.
"""

from __future__ import annotations

from pathlib import Path

from vjp_migrate.verify.model import (
    CheckOutcome,
    CheckStatus,
    FunctionRow,
    Verdict,
    VerifyOptions,
    VerifyReport,
)
from vjp_migrate.verify.runner import MISSING_JAX, Side, run_jobs

__all__ = [
    "MISSING_JAX",
    "CheckOutcome",
    "CheckStatus",
    "FunctionRow",
    "Verdict",
    "VerifyOptions",
    "VerifyReport",
    "render_report",
    "verify_files",
    "verify_many",
    "verify_sources",
]


def verify_files(before: Path, after: Path, options: VerifyOptions) -> VerifyReport:
    """Verify that every custom_vjp function changed between two module files gives the same
    primal outputs and cotangents, and that AFTER works with its migrated arguments traced."""
    return run_jobs([(Side(before), Side(after))], options)[0]


def verify_sources(before_source: str, after_source: str, path: Path, options: VerifyOptions) -> VerifyReport:
    """Like ``verify_files`` for two in-memory versions of the module at ``path`` (used by
    ``fix --verify`` before writing): relative imports resolve as they would from ``path``,
    and nothing is written to disk."""
    return run_jobs(
        [(Side(path, before_source, f"{path} (before)"), Side(path, after_source, f"{path} (after)"))], options
    )[0]


def verify_many(
    pairs: list[tuple[Path, Path]], options: VerifyOptions, examples: list[Path | None] | None = None
) -> list[VerifyReport]:
    """``verify_files`` for several pairs in one worker process (one report per pair);
    ``examples``, when given, is one examples file (or None) per pair."""
    if not pairs:
        return []
    return run_jobs([(Side(b), Side(a)) for b, a in pairs], options, examples)


def render_report(report: VerifyReport, fmt: str = "text") -> str:
    """The report as ``text`` (a rich table) or ``json``."""
    from vjp_migrate.verify.render import render

    return render(report, fmt)
