"""The LibCST codemod command, run by LibCST's own runner, writes what `vjp-migrate fix` writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT, fixture_cases

from vjp_migrate.api import fix_source

CONFIG = "generated_code_marker: '@generated'\nformatter: ['cat']\nblacklist_patterns: []\nmodules:\n- 'vjp_migrate'\nrepo_root: '.'\n"


def test_libcst_tool_codemod_matches_fix(tmp_path: Path) -> None:
    cases = [c for c in fixture_cases() if c.after is not None][:8]
    cases += [c for c in fixture_cases() if c.after is None][:2]
    for case in cases:
        (tmp_path / f"{case.name}.py").write_bytes(case.before.encode("utf-8"))
    (tmp_path / ".libcst.codemod.yaml").write_text(CONFIG, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--jobs=1", "codemod.MigrateCustomVjp", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for case in cases:
        got = (tmp_path / f"{case.name}.py").read_bytes().decode("utf-8")
        assert got == fix_source(case.before).source, case.name
        assert got == (case.after if case.after is not None else case.before), case.name


def test_external_spelling_with_options(tmp_path: Path) -> None:
    seed = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
    (tmp_path / "seed.py").write_text(seed, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "--no-format",
            "vjp_migrate.codemod.MigrateCustomVjp",
            "seed.py",
            "--unsafe-fixes",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "seed.py").read_text(encoding="utf-8") == fix_source(seed).source


def test_codemod_writes_the_files_bytes_and_reads_the_configuration(tmp_path: Path) -> None:
    """cli29 13: the codemod re-encoded a latin-1 file as UTF-8 under its latin-1 cookie, dropped
    a BOM, and moved an argument `[tool.vjp-migrate]` declares static: `fix` does none of that."""
    seed = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
    files = {
        "latin1.py": ("# -*- coding: latin-1 -*-\n" + seed + 'NAME = "café"\n').encode("latin-1"),
        "bom.py": b"\xef\xbb\xbf" + seed.encode(),
        "static.py": seed.encode(),
    }
    pyproject = '[tool.vjp-migrate]\nstatic-args = ["static.clip_gradient:lo"]\n'
    for folder in ("fix", "codemod"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        for name, data in files.items():
            (tmp_path / folder / name).write_bytes(data)
    command = [sys.executable, "-m", "vjp_migrate", "fix", "."]
    assert subprocess.run(command, cwd=tmp_path / "fix", capture_output=True, timeout=60).returncode == 0
    codemod = [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format", "--jobs=1"]
    result = subprocess.run(
        [*codemod, "vjp_migrate.codemod.MigrateCustomVjp", *files],
        cwd=tmp_path / "codemod",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for name, data in files.items():
        written = (tmp_path / "codemod" / name).read_bytes()
        assert written == (tmp_path / "fix" / name).read_bytes() != data, name
    assert "  return x, hi  # save hi" in (tmp_path / "codemod" / "static.py").read_text(encoding="utf-8")
