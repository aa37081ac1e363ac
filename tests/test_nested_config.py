"""Each file follows the configuration nearest above it, wherever the run starts (ruff's hierarchy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def reported(out: str) -> set[str]:
    """The files of a concise report (`path:line:col: CODE ...`)."""
    return {line.split(":")[0] for line in out.splitlines()}


@pytest.fixture
def monorepo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cli29 12: a root project and `sub/` with its own `[tool.vjp-migrate]` (another selection,
    its own exclude)."""
    for name in ("a.py", "sub/b.py", "sub/gen/c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SEED, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nselect = ['VJP']\n", encoding="utf-8")
    (tmp_path / "sub" / "pyproject.toml").write_text(
        "[tool.vjp-migrate]\nselect = ['VJP003']\nexclude = ['gen']\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_subprojects_configuration_rules_its_files_when_the_run_starts_above(monorepo: Path) -> None:
    code, out, _ = run("check", "--output-format", "concise", ".")
    assert (code, reported(out)) == (1, {"a.py"})
    assert run("check", "--output-format", "concise", "sub")[:2] == (0, "")
    # pre-commit names the files: the same answer
    assert run("check", "--force-exclude", "--output-format", "concise", "sub/b.py", "sub/gen/c.py")[:2] == (0, "")
    code, out, _ = run("fix", ".")
    assert (code, out) == (0, "Fixed 2 findings in 1 file.\n")
    assert (monorepo / "sub" / "b.py").read_text(encoding="utf-8") == SEED
    assert (monorepo / "sub" / "gen" / "c.py").read_text(encoding="utf-8") == SEED


def test_the_flake8_plugin_agrees_with_check_from_the_root(monorepo: Path) -> None:
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "VJP", "."], cwd=monorepo, capture_output=True, text=True
    )
    assert {Path(name).as_posix() for name in reported(flake8.stdout)} == {"a.py"}, flake8.stderr
    assert reported(run("check", "--output-format", "concise", ".")[1]) == {"a.py"}


def test_the_command_line_overrides_every_configuration(monorepo: Path) -> None:
    code, out, _ = run("check", "--select", "VJP001", "--output-format", "concise", ".")
    assert (code, reported(out)) == (1, {"a.py", "sub/b.py"})  # sub's select replaced; its exclude kept


@pytest.mark.parametrize(
    "options, files",
    [
        pytest.param(["--isolated"], {"a.py", "sub/b.py", "sub/gen/c.py"}, id="isolated: none of them"),
        pytest.param(["--config", "pyproject.toml"], {"a.py", "sub/b.py", "sub/gen/c.py"}, id="config: that one"),
    ],
)
def test_config_and_isolated_name_one_configuration_for_every_file(
    monorepo: Path, options: list[str], files: set[str]
) -> None:
    code, out, _ = run("check", *options, "--output-format", "concise", ".")
    assert (code, reported(out)) == (1, files)


def test_a_broken_subproject_table_stops_the_run_from_the_root(monorepo: Path) -> None:
    (monorepo / "sub" / "pyproject.toml").write_text("[tool.vjp-migrate]\nselect = ['VJP9']\n", encoding="utf-8")
    code, out, err = run("check", ".")
    assert (code, out) == (2, "")
    assert err == f"Error: {monorepo / 'sub' / 'pyproject.toml'}: unknown rule selector: 'VJP9'\n"


def test_a_pyproject_without_the_table_leaves_the_configuration_above(monorepo: Path) -> None:
    (monorepo / "sub" / "pyproject.toml").write_text("[project]\nname = 'sub'\n", encoding="utf-8")
    code, out, _ = run("check", "--output-format", "concise", ".")
    assert (code, reported(out)) == (1, {"a.py", "sub/b.py", "sub/gen/c.py"})


def test_a_subprojects_path_exclude_is_relative_to_its_folder(monorepo: Path) -> None:
    (monorepo / "sub" / "pyproject.toml").write_text("[tool.vjp-migrate]\nexclude = ['gen/*.py']\n", encoding="utf-8")
    code, out, _ = run("check", "--output-format", "concise", ".")
    assert (code, reported(out)) == (1, {"a.py", "sub/b.py"})


def test_a_subprojects_line_length_rules_its_files_when_the_run_starts_above(monorepo: Path) -> None:
    (monorepo / "sub" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 17\n", encoding="utf-8")
    short = SEED.replace("  return x, None  # no residual values to save", "  return x, None")
    for name in ("a.py", "sub/b.py", "sub/gen/c.py"):
        (monorepo / name).write_text(short, encoding="utf-8")
    from_root = run("fix", "--diff", ".")[1]
    from_sub = run("fix", "--diff", "sub/b.py")[1]
    split = "+  return x, (\n+    lo,\n+    hi,\n+  )\n"
    assert split in from_sub
    assert from_root.count(split) == 2  # sub/b.py and sub/gen/c.py, not a.py
    assert from_root.count("+  return x, (lo, hi)\n") == 1


def test_fix_interactive_follows_the_subprojects_configuration(monorepo: Path) -> None:
    result = CliRunner().invoke(main, ["fix", "-i", "."], input="y\ny\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Apply this change?") == 1  # a.py's site; sub/ selects VJP003 only
    assert (monorepo / "sub" / "b.py").read_text(encoding="utf-8") == SEED
