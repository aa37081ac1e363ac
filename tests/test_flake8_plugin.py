"""The flake8 plugin, through the real `flake8` command."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "VJP", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_flake8_reports_what_check_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "ok.py").write_text((ROOT / "examples" / "static_args_ok.py").read_text(encoding="utf-8"))
    result = flake8("seed.py", "ok.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    monkeypatch.chdir(tmp_path)
    check = CliRunner().invoke(
        main, ["check", "--output-format", "concise", "seed.py", "ok.py"], catch_exceptions=False
    )
    assert result.stdout.count("VJP001") == 2
    assert result.stdout == check.stdout  # same positions and messages


def test_flake8_honours_noqa_and_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED.replace("@partial(", "@partial(  # noqa: VJP001\n    "), encoding="utf-8")
    assert flake8("seed.py", cwd=tmp_path).stdout == ""
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nignore = ['VJP001']\n", encoding="utf-8")
    assert flake8("seed.py", cwd=tmp_path).stdout == ""


DECORATOR = "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))"
DEF = "def clip_gradient(lo, hi, x):"


@pytest.mark.parametrize(
    "line", [pytest.param(DECORATOR, id="on the decorator"), pytest.param(DEF, id="on the def line")]
)
def test_disable_noqa_brings_the_silenced_findings_back(tmp_path: Path, line: str) -> None:
    """cli30 08: the plugin dropped them itself, so flake8's --disable-noqa brought back its own only."""
    (tmp_path / "seed.py").write_text(SEED.replace(line, line + "  # noqa: VJP001"), encoding="utf-8")
    assert flake8("seed.py", cwd=tmp_path).stdout == ""
    shown = flake8("--disable-noqa", "seed.py", cwd=tmp_path).stdout
    assert [row.split(" `")[0] for row in shown.splitlines()] == ["seed.py:8:19: VJP001", "seed.py:8:23: VJP001"]


@pytest.mark.parametrize(
    ("line", "comment", "yielded"),
    [
        pytest.param(DEF, "  # noqa: VJP001", 2, id="on the finding's line: flake8 applies it"),
        pytest.param(DEF, "  # noqa", 2, id="bare, on the finding's line"),
        pytest.param(DECORATOR, "  # noqa: VJP001", 0, id="on the decorator: only this tool's rule applies it"),
        pytest.param(DEF, "  #noqa:VJP001", 0, id="a spelling flake8 does not read"),
    ],
)
def test_the_plugin_leaves_to_flake8_the_noqa_it_applies_itself(
    line: str, comment: str, yielded: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flake8 sees what a `# noqa` on a finding's own line silences (noqa audits count it as used)."""
    from vjp_migrate.flake8_plugin import Plugin

    monkeypatch.chdir(tmp_path)  # no configuration
    code = SEED.replace(line, line + comment)
    monkeypatch.setattr(Plugin, "disable_noqa", False)
    found = list(Plugin(ast.parse(code), "seed.py", code.splitlines(keepends=True)).run())
    assert [(row, column, text[:6]) for row, column, text, _ in found] == [(8, 18, "VJP001"), (8, 22, "VJP001")][
        :yielded
    ]
    monkeypatch.setattr(Plugin, "disable_noqa", True)
    assert len(list(Plugin(ast.parse(code), "seed.py", code.splitlines(keepends=True)).run())) == 2


def test_flake8_skips_what_the_configuration_excludes(tmp_path: Path) -> None:
    """cli28 08: `check .` skipped the excluded folder, flake8 reported it."""
    for folder in ("generated", "src"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nexclude = ['generated']\n", encoding="utf-8")
    result = flake8(".", cwd=tmp_path)
    assert result.stdout.count("VJP001") == 2 and "generated" not in result.stdout, result.stdout
    assert flake8("generated/seed.py", cwd=tmp_path).stdout == ""  # named, as pre-commit does: --force-exclude


def test_the_plugin_imports_neither_jax_nor_rich(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    code = (
        "import sys\nfrom flake8.main.cli import main\n"
        "try:\n    main(['--select', 'VJP', 'seed.py'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'rich')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "VJP001" in result.stdout
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "table, reason",
    [
        pytest.param("selct = ['VJP']", "unknown key(s) in [tool.vjp-migrate]: selct", id="unknown key"),
        pytest.param("select = ['VJP9']", "unknown rule selector", id="unknown code"),
        pytest.param("select = [", "not valid TOML", id="bad TOML"),
    ],
)
def test_a_bad_configuration_stops_flake8_with_one_line(tmp_path: Path, table: str, reason: str) -> None:
    """As flake8 reports its own configuration errors: once, one line naming the file, no traceback."""
    (tmp_path / "pyproject.toml").write_text(f"[tool.vjp-migrate]\n{table}\n", encoding="utf-8")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(SEED, encoding="utf-8")
    (tmp_path / "plain.py").write_text("x = 1\n", encoding="utf-8")
    for named in (["a.py", "b.py", "c.py"], ["plain.py"], ["."]):
        result = flake8(*named, cwd=tmp_path)
        assert result.returncode == 1
        assert "Traceback" not in result.stdout + result.stderr
        (line,) = [text for text in result.stdout.splitlines() if "pyproject.toml" in text]
        assert line.startswith(f"{tmp_path / 'pyproject.toml'}: ") and reason in line
        assert "VJP001" not in result.stdout


def test_a_bad_configuration_below_the_named_folder_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.vjp-migrate]\nselct = 1\n", encoding="utf-8")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / "sub" / name).write_text(SEED, encoding="utf-8")
    result = flake8(".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert result.stdout.count("unknown key(s) in [tool.vjp-migrate]: selct") == 1
