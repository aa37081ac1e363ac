"""--write-baseline records today's findings; --baseline reports only new ones."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_baseline_hides_recorded_findings_and_shows_new_ones(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SEED, encoding="utf-8")
    baseline = tmp_path / "vjp-baseline.json"
    assert run("check", "--write-baseline", str(baseline), str(tmp_path))[0] == 0
    data = json.loads(baseline.read_text(encoding="utf-8"))
    assert data["findings"][0] == {"path": "a.py", "code": "VJP001", "function": "clip_gradient", "argument": "hi"}

    # Lines moving does not bring recorded findings back.
    (tmp_path / "a.py").write_text("# a new comment\n\n" + SEED, encoding="utf-8")
    assert run("check", "--baseline", str(baseline), str(tmp_path)) == (0, "All checks passed (1 file checked).\n")

    (tmp_path / "b.py").write_text(SEED.replace("clip_gradient", "clip2"), encoding="utf-8")
    code, out = run("check", "--baseline", str(baseline), "--output-format", "concise", str(tmp_path))
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()] == [str(tmp_path / "b.py")] * 2


def test_a_bad_baseline_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "b.json").write_text("[]", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--baseline", str(tmp_path / "b.json"), str(tmp_path)])
    assert result.exit_code == 2 and "not a vjp-migrate baseline" in result.output


def test_a_baseline_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SEED, encoding="utf-8")
    target = tmp_path / "missing-folder" / "vjp-baseline.json"
    result = CliRunner().invoke(main, ["check", "--write-baseline", str(target), str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"Error: {target}: cannot be written: No such file or directory" in result.stderr


def test_refreshing_a_baseline_in_place_records_every_current_finding(tmp_path: Path) -> None:
    # cli29 11: the baseline read hid its own findings from the one written, which came out empty.
    (tmp_path / "a.py").write_text(SEED, encoding="utf-8")
    baseline = tmp_path / "vjp-baseline.json"
    assert run("check", "--write-baseline", str(baseline), str(tmp_path))[0] == 0
    recorded = json.loads(baseline.read_text(encoding="utf-8"))["findings"]
    assert len(recorded) == 2

    (tmp_path / "b.py").write_text(SEED.replace("clip_gradient", "clip2"), encoding="utf-8")
    code, out = run("check", "--baseline", str(baseline), "--write-baseline", str(baseline), str(tmp_path))
    assert code == 0
    assert "b.py" in out and "a.py" not in out  # what it reports: the findings the old baseline did not hold
    refreshed = json.loads(baseline.read_text(encoding="utf-8"))["findings"]
    assert [(e["path"], e["function"]) for e in refreshed] == [("a.py", "clip_gradient")] * 2 + [("b.py", "clip2")] * 2
    assert run("check", "--baseline", str(baseline), str(tmp_path)) == (0, "All checks passed (2 files checked).\n")


def test_a_baseline_written_elsewhere_records_the_findings_the_one_read_hides(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SEED, encoding="utf-8")
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    assert run("check", "--write-baseline", str(old), str(tmp_path))[0] == 0
    assert run("check", "--baseline", str(old), "--write-baseline", str(new), str(tmp_path))[0] == 0
    assert new.read_text(encoding="utf-8") == old.read_text(encoding="utf-8")
