"""fix --interactive: each site's diff, then y / n / q."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from vjp_migrate.api import fix_source
from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
TWO = (
    SEED
    + "\n\n"
    + SEED.split("\n", 1)[1].replace("clip_gradient", "other").replace("from functools import partial\n", "")
)


@pytest.mark.parametrize(
    "answers, first_fixed, second_fixed",
    [
        pytest.param("y\ny\n", True, True, id="accept both"),
        pytest.param("n\ny\n", False, True, id="reject the first"),
        pytest.param("y\nq\n", True, False, id="quit keeps what was accepted"),
        pytest.param("maybe\nn\nn\n", False, False, id="asks again after a bad answer"),
    ],
)
def test_interactive_applies_only_accepted_sites(
    tmp_path: Path, answers: str, first_fixed: bool, second_fixed: bool
) -> None:
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--interactive", str(target)], input=answers, catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == answers.count("\n")
    assert "+@jax.custom_vjp" in result.stdout
    text = target.read_text(encoding="utf-8")
    assert ("def clip_gradient_bwd(res, g):" in text) is first_fixed
    assert ("def other_bwd(res, g):" in text) is second_fixed
    if first_fixed and second_fixed:
        assert text == fix_source(TWO).source
        assert result.exit_code == 0
    else:
        assert result.exit_code == 1  # findings remain


def test_users_of_a_shared_rule_are_asked_about_once(tmp_path: Path) -> None:
    target = tmp_path / "ops.py"
    target.write_bytes((FIXTURES / "shared_bwd_same_positions" / "before.py").read_bytes())
    result = CliRunner().invoke(main, ["fix", "--interactive", str(target)], input="y\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 1
    assert "custom_vjp `clip_min`, `clip_max`" in result.stdout
    assert target.read_bytes() == (FIXTURES / "shared_bwd_same_positions" / "after.py").read_bytes()
    assert result.exit_code == 0


def test_a_walk_reads_only_files_that_mention_a_trigger_as_fix_does(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "unrelated.py").write_text("def broken(:\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], input="y\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "unrelated.py" not in result.output


def test_an_unreadable_file_gets_the_usual_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "seed.py"
    target.write_text(SEED, encoding="utf-8")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)  # as root, chmod 000 would not stop the read
    result = CliRunner().invoke(main, ["fix", "-i", str(target)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr == f"{target}: error: cannot be read: Permission denied\n"


def test_a_notebook_is_not_skipped_silently(tmp_path: Path) -> None:
    from test_notebook import notebook_text

    target = tmp_path / "clip.ipynb"
    target.write_text(notebook_text(), encoding="utf-8")
    (tmp_path / "other.ipynb").write_text(notebook_text([("code", "import jax")]), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 1  # its findings remain
    assert "clip.ipynb:cell 3:2:19: VJP001" in result.stdout
    assert result.stderr == (
        f"vjp-migrate: {target}: notebooks are not reviewed site by site; "
        f"`vjp-migrate fix --diff {target}` shows their change\n"
    )


def test_the_command_for_a_notebook_works_for_a_path_that_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_notebook import notebook_text

    monkeypatch.chdir(tmp_path)
    Path("-nb.ipynb").write_text(notebook_text(), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", "--", "-nb.ipynb"], catch_exceptions=False)
    assert result.stderr.endswith("`vjp-migrate fix --diff ./-nb.ipynb` shows their change\n")
    shown = CliRunner().invoke(main, ["fix", "--diff", "./-nb.ipynb"], catch_exceptions=False)
    assert shown.exit_code == 1 and shown.stdout.startswith("--- -nb.ipynb\n")


@pytest.mark.parametrize(
    "answers, first_fixed",
    [
        pytest.param("", False, id="no answer at all"),
        pytest.param("y\n", True, id="after one answer"),
    ],
)
def test_end_of_input_stops_and_applies_nothing_more(tmp_path: Path, answers: str, first_fixed: bool) -> None:
    """End of input means q: what was accepted is written, nothing more, and the run ends cleanly."""
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    other = tmp_path / "zzz.py"
    other.write_text(SEED, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], input=answers, catch_exceptions=False)
    assert "Aborted!" not in result.output
    assert result.stderr == "vjp-migrate: end of input: stopped; nothing more is applied\n"
    assert result.stdout.count("Apply this change?") == answers.count("\n") + 1
    text = target.read_text(encoding="utf-8")
    assert ("def clip_gradient_bwd(res, g):" in text) is first_fixed
    assert "def other_bwd(res, g):" not in text
    assert other.read_text(encoding="utf-8") == SEED  # never asked about
    summary = "Fixed 2 findings in 1 file, 2 remaining." if first_fixed else "Nothing fixed, 4 findings remaining."
    assert result.stdout.endswith(summary + "\n")
    assert result.exit_code == 1  # findings remain, as after q


def test_interactive_and_diff_together_are_a_usage_error(tmp_path: Path) -> None:
    """cli28 03: `--diff` writes nothing, yet an accepted change was written."""
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--diff", "--interactive", str(target)], input="y\ny\n")
    assert result.exit_code == 2 and "--diff writes nothing" in result.output, result.output
    assert target.read_text(encoding="utf-8") == TWO
