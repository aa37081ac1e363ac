"""The flake8 plugin, through the real `flake8` command."""

from __future__ import annotations

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
        [sys.executable, "-m", "flake8", "--select", "VJP", *args], cwd=cwd, capture_output=True, text=True, timeout=60
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


def test_the_plugin_imports_neither_jax_nor_rich(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    code = (
        "import sys\nfrom flake8.main.cli import main\n"
        "try:\n    main(['--select', 'VJP', 'seed.py'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'rich')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "VJP001" in result.stdout
    assert result.stdout.splitlines()[-1] == "[]"
