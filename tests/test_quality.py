"""The code base stays typed (mypy --strict) and lint-clean (ruff), as STYLE.md asks."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_mypy_strict_is_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "vjp_migrate"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_ruff_is_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "vjp_migrate", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]
