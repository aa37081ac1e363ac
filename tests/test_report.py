"""The text report: summary lines, and colour only on a terminal without NO_COLOR."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate import report
from vjp_migrate.api import check_source
from vjp_migrate.cli import main
from vjp_migrate.model import FileResult, Status

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_a_run_with_errors_does_not_say_all_checks_passed(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("nondiff_argnums = (\n", encoding="utf-8")
    code, out = run("check", str(tmp_path))
    assert (code, out) == (2, "No findings in 1 file checked, 1 could not be processed.\n")
    code, out = run("fix", str(tmp_path))
    assert (code, out) == (2, "Nothing to fix (1 file could not be processed).\n")


def test_clean_runs_keep_their_summary(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    assert run("check", str(tmp_path)) == (0, "All checks passed (1 file checked).\n")
    assert run("fix", str(tmp_path)) == (0, "Nothing to fix.\n")


def findings_text(stream: io.StringIO) -> str:
    result = FileResult(Path("seed.py"), Status.OK, diagnostics=tuple(check_source(SEED, path="seed.py")))
    report.print_check([result], False, stream)
    return stream.getvalue()


@pytest.mark.parametrize(
    "no_color, coloured",
    [
        pytest.param(None, True, id="unset"),
        pytest.param("1", False, id="set"),
        pytest.param("", True, id="empty: unset, as no-color.org says"),
    ],
)
def test_colour_on_a_terminal_follows_no_color(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, coloured: bool
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert ("\x1b[" in findings_text(Terminal())) is coloured


def test_no_colour_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" not in findings_text(io.StringIO())
