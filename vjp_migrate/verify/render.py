"""Verify stage 7: the report as a rich table (rich imported lazily) or as JSON."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from vjp_migrate.verify.model import FunctionRow, Verdict, VerifyReport

if TYPE_CHECKING:
    from rich.console import Console

_STYLE = {
    Verdict.EQUAL: "green",
    Verdict.MISMATCH: "bold red",
    Verdict.FAILS_UNDER_VMAP: "bold red",
    Verdict.MISSING: "bold red",
    Verdict.NOT_VERIFIED: "yellow",
    Verdict.ERROR: "bold red",
}


def _err(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def render(report: VerifyReport, fmt: str = "text") -> str:
    """``text``: a table and the details a person needs; ``json``: ``report.to_json()``."""
    if fmt == "json":
        return report.to_json()
    if fmt != "text":
        raise ValueError(f"unknown output format {fmt!r} (text, json)")
    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=150, force_terminal=False, color_system=None)
    title = f"vjp-migrate verify {report.before} -> {report.after}"
    if report.backends:
        title += f" on {', '.join(report.backends)}"
    table = Table(title=title, title_justify="left")
    for column in (
        "function",
        "moved",
        "inputs",
        "examples",
        "primal err",
        "cotangent err",
        "jit",
        "vmap",
        "before, traced",
        "verdict",
    ):
        table.add_column(column)
    for row in report.rows:
        table.add_row(
            row.name,
            ", ".join(row.moved) or "-",
            row.input_source,
            str(row.examples),
            _err(row.primal_max_err),
            _err(row.cotangent_max_err),
            row.jit,
            row.vmap,
            row.before_traced,
            f"[{_STYLE[row.verdict]}]{row.verdict.value}[/]",
        )
    if report.rows:
        console.print(table)
    for row in report.rows:
        _details(console, row)
    for warning in report.warnings:
        _line(console, f"warning: {warning}")
    for error in report.errors:
        _line(console, f"error: {error}")
    for path in report.emitted:
        _line(console, f"wrote {path}")
    _line(console, _summary(report))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _line(console: Console, text: str) -> None:
    """One message, one line however long (a wrapped line is not one a script can grep)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _details(console: Console, row: FunctionRow, limit: int = 2) -> None:
    if row.verdict is Verdict.MISSING:
        _line(console, f"{row.name}: {row.message}")
    problems = row.problems
    for problem in problems[:limit]:
        _line(console, f"{row.name}: {problem.describe()}")
    if len(problems) > limit:
        _line(console, f"{row.name}: ... and {len(problems) - limit} more (see --output-format json)")
    notes = [c for c in row.checks if c.check.startswith("custom_vjp3") and c.status.value == "n/a"]
    for note in notes[:1]:
        _line(console, f"{row.name}: {note.describe()}")


def _summary(report: VerifyReport) -> str:
    counts = {v: sum(r.verdict is v for r in report.rows) for v in Verdict}
    parts = [f"{n} {v.value}" for v, n in counts.items() if n]
    text = ", ".join(parts) or "nothing to verify"
    return f"{text} (exit code {report.exit_code})"
