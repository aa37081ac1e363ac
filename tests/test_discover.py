"""Discovery: a file reached twice is one candidate (ruff checks each file once)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main
from vjp_migrate.discover import Candidate, discover

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "pkg" / "other.py").write_text("x = 1\n", encoding="utf-8")
    return tmp_path / "pkg"


def test_a_file_named_twice_is_one_candidate(pkg: Path) -> None:
    seed = pkg / "seed.py"
    found, rejected = discover([seed, seed, Path(os.path.relpath(seed))])
    assert (found, rejected) == ([Candidate(seed, explicit=True)], [])


def test_a_file_named_and_inside_a_folder_named_keeps_its_first_place_and_is_explicit(pkg: Path) -> None:
    found, _ = discover([pkg, pkg / "seed.py"])
    assert found == [Candidate(pkg / "other.py", explicit=False), Candidate(pkg / "seed.py", explicit=True)]


def test_the_walk_skips_packaging_metadata_and_venvs_and_follows_gitignore_negation(tmp_path: Path) -> None:
    for folder in ("src", "vjp_tools.egg-info", "myenv"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("*_generated.py\n!keep_generated.py\n", encoding="utf-8")
    for name in ("x_generated.py", "keep_generated.py"):
        (tmp_path / "src" / name).write_text(SEED, encoding="utf-8")
    found, rejected = discover([tmp_path])
    assert rejected == []
    walked = sorted(c.path.relative_to(tmp_path).as_posix() for c in found)
    assert walked == ["src/keep_generated.py", "src/seed.py"]


def test_a_folder_reached_through_a_link_is_walked_once(pkg: Path) -> None:
    link = pkg.parent / "link"
    link.symlink_to(pkg, target_is_directory=True)
    found, _ = discover([link, pkg, link / "seed.py"])
    assert found == [Candidate(link / "other.py", explicit=False), Candidate(link / "seed.py", explicit=True)]


def test_different_files_of_the_same_name_are_all_kept(pkg: Path) -> None:
    (pkg / "sub").mkdir()
    (pkg / "sub" / "seed.py").write_text(SEED, encoding="utf-8")
    found, _ = discover([pkg / "seed.py", pkg / "sub" / "seed.py"])
    assert [c.path for c in found] == [pkg / "seed.py", pkg / "sub" / "seed.py"]


def test_fix_of_a_file_named_by_its_link_and_its_own_name_writes_it_once(pkg: Path) -> None:
    link = pkg / "link.py"
    link.symlink_to(pkg / "seed.py")
    result = CliRunner().invoke(main, ["fix", str(link), str(pkg / "seed.py")], catch_exceptions=False)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == "Fixed 2 findings in 1 file."
    assert (pkg / "seed.py").read_text(encoding="utf-8") != SEED and link.is_symlink()


def test_check_counts_a_file_named_twice_once(pkg: Path) -> None:
    seed = str(pkg / "seed.py")
    result = CliRunner().invoke(main, ["check", seed, seed, str(pkg)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout.count("VJP001") == 2
    assert result.stdout.splitlines()[-1].startswith("Found 2 findings (2 fixable) in 2 files checked.")
