"""Where `check` keeps its cache: `.vjp_migrate_cache` in the project root, like ruff's `.ruff_cache`.

The project root is the folder of the configuration file the run found for the files (the
nearest pyproject.toml with a [tool.vjp-migrate] table, or --config), else the current folder;
so running from a subfolder reuses the project's one cache instead of leaving a new one in every
folder. `--cache-dir` wins, then the VJP_MIGRATE_CACHE_DIR environment variable (RUFF_CACHE_DIR).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

SEED = ROOT / "examples" / "clip_gradient.py"
CACHE = ".vjp_migrate_cache"
CONFIG = '[project]\nname = "demo"\n\n[tool.vjp-migrate]\nignore = []\n'


def project(root: Path, config: str = CONFIG) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(config, encoding="utf-8")
    shutil.copy(SEED, root / "src" / "pkg" / "seed.py")
    return root


def check(cwd: Path, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "VJP_MIGRATE_CACHE_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "check", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environment, **(env or {})},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the seed's findings: the file was really checked
    return done


def caches(top: Path) -> list[str]:
    """Every cache folder below ``top`` that holds entries, relative to it."""
    return sorted(
        p.parent.relative_to(top).as_posix()
        for p in top.rglob("CACHEDIR.TAG")
        if any(entry.is_file() for entry in p.parent.rglob("*") if entry.parent != p.parent)
    )


def test_from_a_subfolder_the_cache_is_at_the_project_root(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    sub = root / "src" / "pkg"
    first = check(sub, ".")
    assert caches(tmp_path) == [f"demo/{CACHE}"]
    assert not (sub / CACHE).exists()
    again = check(root / "src", "pkg")  # another folder of the same project: the same cache
    assert again.stdout.replace("pkg/seed.py", "seed.py") == first.stdout
    assert caches(tmp_path) == [f"demo/{CACHE}"]


def test_a_file_named_from_outside_the_project_caches_in_its_project(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    (tmp_path / "elsewhere").mkdir()
    check(tmp_path / "elsewhere", root / "src" / "pkg" / "seed.py")
    assert caches(tmp_path) == [f"demo/{CACHE}"]


def test_each_project_of_one_run_keeps_its_own_cache(tmp_path: Path) -> None:
    project(tmp_path / "one")
    project(tmp_path / "two")
    check(tmp_path, "one/src", "two/src")
    assert caches(tmp_path) == [f"one/{CACHE}", f"two/{CACHE}"]


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(None, id="no pyproject.toml"),
        pytest.param('[project]\nname = "demo"\n', id="a pyproject.toml without [tool.vjp-migrate]"),
    ],
)
def test_without_a_configuration_the_cache_is_in_the_current_folder(tmp_path: Path, config: str | None) -> None:
    root = project(tmp_path / "demo", config or "")
    if config is None:
        (root / "pyproject.toml").unlink()
    check(root / "src", ".")
    assert caches(tmp_path) == [f"demo/src/{CACHE}"]


def test_config_and_isolated_choose_the_root_as_they_choose_the_configuration(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    check(root / "src", "--config", shared / "pyproject.toml", ".")
    assert caches(tmp_path) == [f"shared/{CACHE}"]
    check(root / "src", "--isolated", ".")
    assert caches(tmp_path) == [f"demo/src/{CACHE}", f"shared/{CACHE}"]


def test_cache_dir_option_wins_then_the_environment_variable(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    sub = root / "src"
    check(sub, ".", env={"VJP_MIGRATE_CACHE_DIR": str(tmp_path / "from-env")})
    assert caches(tmp_path) == ["from-env"]
    check(sub, "--cache-dir", "from-option", ".", env={"VJP_MIGRATE_CACHE_DIR": str(tmp_path / "from-env-2")})
    assert caches(tmp_path) == ["demo/src/from-option", "from-env"]  # relative: to the current folder
    check(sub, ".", env={"VJP_MIGRATE_CACHE_DIR": ""})  # empty: not set
    assert caches(tmp_path) == [f"demo/{CACHE}", "demo/src/from-option", "from-env"]


def test_no_cache_writes_none_anywhere(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    check(root / "src", "--no-cache", ".", env={"VJP_MIGRATE_CACHE_DIR": str(tmp_path / "from-env")})
    assert list(tmp_path.rglob("CACHEDIR.TAG")) == []
