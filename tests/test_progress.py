"""The progress bar: only on a terminal, only after two seconds, never for machine output."""

from __future__ import annotations

import io

import pytest

from vjp_migrate import report


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_callback_when_not_a_terminal() -> None:
    with report.progress(stream=io.StringIO()) as tick:
        assert tick is None


def test_no_callback_for_machine_output() -> None:
    with report.progress(enabled=False, stream=Terminal()) as tick:
        assert tick is None


def test_bar_appears_only_on_long_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = Terminal()
    with report.progress(stream=stream) as tick:
        assert tick is not None
        tick(1, 10)  # quick: nothing drawn
        assert stream.getvalue() == ""
        monkeypatch.setattr(report, "PROGRESS_AFTER", 0.0)
        tick(2, 10)
    assert "vjp-migrate" in stream.getvalue()
