"""`exclude`/`extend-exclude`/`--exclude` patterns, matched as ruff matches them (exclude_globs.py).

Each walk is compared with `ruff check --show-files` given the same patterns in `[tool.ruff]`
(ruff reads them with globset, on the absolute path and on the name).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main
from vjp_migrate.config import settings_for
from vjp_migrate.exclude_globs import excluded, globs

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
TREE = [
    "a.py",
    "legacy/a.py",
    "legacy/deep/b.py",
    "src/c.py",
    "src/legacy/d.py",
    "src/x/legacy2/e.py",
    "lib/sub/c.py",
    "odd[1]/f.py",
    "c,d/g.py",
    "xlegacy/h.py",
]
RUFF = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
needs_ruff = pytest.mark.skipif(RUFF is None, reason="needs ruff (a test extra)")


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        pytest.param("**/legacy", "/p/legacy", True, id="spanning prefix: no folder"),
        pytest.param("**/legacy", "/p/a/b/legacy", True, id="spanning prefix: folders"),
        pytest.param("**/legacy", "/p/xlegacy", False, id="spanning prefix: a whole name"),
        pytest.param("legacy/**", "/p/legacy/a/b.py", True, id="spanning suffix"),
        pytest.param("legacy/**", "/p/legacy", False, id="spanning suffix: below only"),
        pytest.param("a/**/b.py", "/p/a/b.py", True, id="spanning middle: no folder"),
        pytest.param("a/**/b.py", "/p/a/x/y/b.py", True, id="spanning middle: folders"),
        pytest.param("a/*.py", "/p/a/x/b.py", True, id="a star crosses a slash"),
        pytest.param("{a,b/{c,d}}", "/p/b/d", True, id="nested alternatives"),
        pytest.param("a\\*", "/p/a*", True, id="an escaped star"),
        pytest.param("a\\*", "/p/ab", False, id="an escaped star is no wildcard"),
        pytest.param("[]-]x", "/p/-x", True, id="a set of `]` and `-`"),
        pytest.param("/abs/x", "/abs/x", True, id="an absolute pattern"),
    ],
)
def test_globs_match_as_ruffs_globset(pattern: str, path: str, matched: bool) -> None:
    assert excluded(path, path.rsplit("/", 1)[1], globs(pattern, Path("/p"))) is matched


def test_the_folders_own_name_is_no_glob() -> None:
    found = globs("legacy/*.py", Path("/w/proj[1]"))
    assert excluded("/w/proj[1]/legacy/a.py", "a.py", found) and not excluded("/w/proj1/legacy/a.py", "a.py", found)
    assert globs("legacy", Path("/w/c}d")) == ("/w/c\\}d/legacy", "legacy")


def _tree(root: Path, table: str) -> Path:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(SEED, encoding="utf-8")
    (root / "pyproject.toml").write_text(table, encoding="utf-8")
    return root


def _ours(root: Path, *args: str) -> list[str]:
    """The files `check` reads (each one has findings)."""
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "-j", "1", "--output-format", "json", *args, str(root)], catch_exceptions=False
    )
    assert result.exit_code in (0, 1), result.output
    return sorted({Path(f["path"]).relative_to(root).as_posix() for f in json.loads(result.stdout)})


def _ruffs(root: Path, *args: str) -> list[str]:
    assert RUFF is not None
    out = subprocess.run(
        [RUFF, "check", "--show-files", "--no-cache", *args, "."],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    ).stdout
    return sorted(Path(line).relative_to(root).as_posix() for line in out.splitlines() if line.endswith(".py"))


def _toml(pattern: str) -> str:
    return json.dumps(pattern)  # a TOML basic string is written as JSON writes a string


PATTERNS = [
    # cli30 05: ruff's and git's spellings matched nothing
    pytest.param("**/legacy", id="a name at any depth"),
    pytest.param("**/legacy/**", id="everything below a name at any depth"),
    pytest.param("legacy/**/*.py", id="files at any depth below a folder"),
    pytest.param("{root}/legacy", id="an absolute path"),
    pytest.param("../{name}/legacy", id="a path through the parent folder"),
    pytest.param("{legacy,lib}", id="alternatives"),
    pytest.param("src/{legacy,x}", id="alternatives in a path"),
    pytest.param("{legacy,{lib,src}}", id="nested alternatives"),
    pytest.param("odd\\[1\\]", id="escaped brackets"),
    # already matched as ruff does
    pytest.param("legacy", id="a name"),
    pytest.param("./legacy", id="a path from this folder"),
    pytest.param("legacy/", id="a folder with a slash"),
    pytest.param("lib/**/", id="a spanning end with a slash"),
    pytest.param("legacy/*.py", id="a star crosses folders"),
    pytest.param("*/legacy", id="a star before a name"),
    pytest.param("*legacy*", id="stars around a name"),
    pytest.param("src/**legacy2", id="a star pair inside a name"),
    pytest.param("lega?y", id="a question mark"),
    pytest.param("[k-m]ib", id="a set"),
    pytest.param("[!l]*", id="a negated set"),
    pytest.param("c,d", id="a comma outside alternatives"),
    pytest.param("sub", id="a deep folder's name"),
]


@needs_ruff
@pytest.mark.parametrize("pattern", PATTERNS)
def test_config_patterns_exclude_what_ruff_excludes(tmp_path: Path, pattern: str) -> None:
    root = tmp_path / "proj"
    written = pattern.replace("{root}", root.as_posix()).replace("{name}", root.name)
    table = f"extend-exclude = [{_toml(written)}]\n"
    _tree(root, f"[tool.vjp-migrate]\n{table}[tool.ruff]\n{table}")
    ours = _ours(root)
    assert ours == _ruffs(root) and len(ours) < len(TREE), written


@needs_ruff
@pytest.mark.parametrize("pattern", ["**/legacy", "legacy/**/*.py", "{root}/src", "../{name}/legacy/deep", "sub"])
def test_cli_patterns_exclude_what_ruff_excludes_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    root = _tree(tmp_path / "proj", "")
    written = pattern.replace("{root}", root.as_posix()).replace("{name}", root.name)
    monkeypatch.chdir(root)
    ours = _ours(root, "--isolated", "--exclude", written)
    assert ours == _ruffs(root, "--isolated", "--exclude", written) and len(ours) < len(TREE), written


def test_a_globstar_pattern_keeps_fix_and_force_exclude_and_flake8_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cli30 05: with `extend-exclude = ["**/legacy"]`, `fix .` rewrote legacy/a.py."""
    root = _tree(tmp_path / "proj", '[tool.vjp-migrate]\nextend-exclude = ["**/legacy"]\n')
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["fix", "--no-cache", "-j", "1", "."], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for name in ("legacy/a.py", "legacy/deep/b.py", "src/legacy/d.py"):
        assert (root / name).read_text(encoding="utf-8") == SEED, name
    assert (root / "src" / "c.py").read_text(encoding="utf-8") != SEED
    named = CliRunner().invoke(main, ["check", "--force-exclude", "src/legacy/d.py"], catch_exceptions=False)
    assert (named.exit_code, named.stdout) == (0, "No files to check.\n")
    assert settings_for(root / "legacy" / "deep" / "b.py") is None  # the flake8 plugin's view


def test_the_configurations_paths_hold_when_its_folder_is_reached_through_a_link(tmp_path: Path) -> None:
    # Its folder was resolved, the walk's paths were not: a path pattern never matched.
    root = _tree(tmp_path / "proj", '[tool.vjp-migrate]\nextend-exclude = ["legacy/*.py"]\n')
    (tmp_path / "link").symlink_to(root)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "-j", "1", "--output-format", "json", str(tmp_path / "link")]
    )
    names = {Path(f["path"]).relative_to(tmp_path / "link").as_posix() for f in json.loads(result.stdout)}
    assert names == set(TREE) - {"legacy/a.py", "legacy/deep/b.py"}


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        pytest.param("[abc", "unclosed character class; missing ']'", id="unclosed set"),
        pytest.param("{a,b", "unclosed alternate group; missing '}'", id="unclosed alternatives"),
        pytest.param("c}d", "unopened alternate group; missing '{'", id="unopened alternatives"),
        pytest.param("[z-a]", "invalid range; 'z' > 'a'", id="backwards range"),
        pytest.param("gen\\", "dangling '\\'", id="trailing backslash"),
    ],
)
def test_a_pattern_that_is_no_glob_is_a_configuration_error(tmp_path: Path, pattern: str, why: str) -> None:
    """As ruff: an error naming the pattern, not a pattern that silently matches nothing."""
    root = _tree(tmp_path / "proj", f"[tool.vjp-migrate]\nextend-exclude = [{_toml(pattern)}]\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", str(root)])
    assert (result.exit_code, result.stdout, result.stderr.count("\n")) == (2, "", 1)
    assert result.stderr.startswith(
        f"Error: {root / 'pyproject.toml'}: [tool.vjp-migrate] extend-exclude: error parsing glob '{pattern}': {why}"
    )
    cli = CliRunner().invoke(main, ["check", "--isolated", "--exclude", pattern, str(root)])
    assert (cli.exit_code, cli.stderr.count("\n")) == (2, 1)
    assert cli.stderr.startswith(f"Error: --exclude: error parsing glob '{pattern}': {why}")
