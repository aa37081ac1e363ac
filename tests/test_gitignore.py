"""The walk leaves out what git leaves out: every case is compared with `git ls-files` itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main
from vjp_migrate.discover import discover
from vjp_migrate.gitignore import parse

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")

# Names chosen to trip a translation: a folder named like a file, spaces, glob characters,
# names one pattern's suffix ends (`codegen` for `gen`), the same name at several depths.
TREE = [
    "a.py",
    "A.py",
    "test.py",
    "codegen/a.py",
    "gen/a.py",
    "src/gen/a.py",
    "src/c.py",
    "src/sub/b.py",
    "src/sub/deep/d.py",
    "docs/mytest.py",
    "docs/test.py",
    "x.py/inner.py",
    "foo/baz.py",
    "foo/bar/baz.py",
    "foo/bar/qux/baz.py",
    "a/b/a/b.py",
    "a b.py",
    "dir /a.py",
    "#hash.py",
    "!bang.py",
    "[br].py",
    "b.py",
    "q?.py",
    "qx.py",
    "star*.py",
    "stars.py",
    "back\\slash.py",
    "7.py",
    ".hidden/h.py",
    "lib/x/y/z.py",
]

CASES = [
    # cli29 13: `**/` became `*`, and fnmatch's `*` crossed `/`
    pytest.param({".gitignore": "**/gen\nsrc/*.py\n**/test.py\n"}, id="the probe's three"),
    pytest.param({".gitignore": "gen\n"}, id="a name at any depth"),
    pytest.param({".gitignore": "gen/\n"}, id="a folder name"),
    pytest.param({".gitignore": "/gen\n"}, id="anchored by a leading slash"),
    pytest.param({".gitignore": "src/gen\n"}, id="anchored by a middle slash"),
    pytest.param({".gitignore": "sub/deep/\n"}, id="a middle slash anchors to the file's folder"),
    pytest.param({".gitignore": "src/**\n"}, id="everything inside"),
    pytest.param({".gitignore": "src/**/d.py\n"}, id="any folders between"),
    pytest.param({".gitignore": "**/sub/**\n"}, id="leading and trailing double stars"),
    pytest.param({".gitignore": "foo/**/baz.py\n"}, id="zero folders between"),
    pytest.param({".gitignore": "a/**/b.py\n"}, id="double star matching a repeated name"),
    pytest.param({".gitignore": "***/gen\ngen/***\n"}, id="triple stars"),
    pytest.param({".gitignore": "x**z.py\nlib/x**y/z.py\n"}, id="a double star inside a name is a star"),
    # git compares a path pattern's literal start apart: a double star right after it spans folders
    pytest.param({".gitignore": "f**/baz.py\n"}, id="a double star after a literal start"),
    pytest.param({".gitignore": "foo/b**/baz.py\n"}, id="a double star after an anchored literal start"),
    pytest.param({".gitignore": "fo[o]**/baz.py\nsrc/s**\n"}, id="a double star after a set"),
    pytest.param({".gitignore": "**foo\n**o/\n"}, id="a leading double star in a name"),
    pytest.param({".gitignore": "**\n!**/\n!a.py\n"}, id="everything but folders, then a file back"),
    pytest.param({".gitignore": "**/\n"}, id="every folder"),
    pytest.param({".gitignore": "*/\n"}, id="a star folder"),
    pytest.param({".gitignore": "/*\n!/src\n"}, id="only src at the top"),
    pytest.param({".gitignore": "/*/\n"}, id="top-level folders"),
    pytest.param({".gitignore": "*/*.py\n"}, id="one folder deep"),
    pytest.param({".gitignore": "src/*\n!src/sub\n"}, id="re-include a folder"),
    pytest.param({".gitignore": "foo/\n!foo/baz.py\n"}, id="no file back from an ignored folder"),
    pytest.param({".gitignore": "foo/*\n!foo/bar\n"}, id="a folder back from a star"),
    pytest.param({".gitignore": "x.py\n"}, id="a folder named like a file"),
    pytest.param({".gitignore": "x.py/\ninner.py/\n"}, id="folder-only patterns skip files"),
    pytest.param({".gitignore": "*.py\n!*/\n!src/**\n"}, id="whitelist a tree"),
    pytest.param({".gitignore": "#hash.py\n\\#hash.py\n"}, id="comment and escaped hash"),
    pytest.param({".gitignore": "!bang.py\n"}, id="a negation of nothing"),
    pytest.param({".gitignore": "\\!bang.py\n"}, id="escaped bang"),
    pytest.param({".gitignore": "[br].py\n"}, id="a set"),
    pytest.param({".gitignore": "\\[br\\].py\n"}, id="escaped brackets"),
    pytest.param({".gitignore": "[]b].py\n[!a-z].py\n"}, id="a bracket first in a set and a negated range"),
    pytest.param({".gitignore": "[^b].py\n"}, id="caret negation"),
    pytest.param({".gitignore": "[[:digit:]].py\n[[:upper:]].py\n"}, id="character classes"),
    pytest.param({".gitignore": "[[:nope:]].py\n[z-a].py\n"}, id="an unknown class and a reversed range"),
    pytest.param({".gitignore": "[a.py\n*.py\\\n"}, id="unclosed set and a trailing backslash"),
    pytest.param({".gitignore": "[a-]*.py\n[-q]?.py\n"}, id="a dash at a set's end or start"),
    pytest.param({".gitignore": "[a/]*\n"}, id="a set never matches a slash"),
    pytest.param({".gitignore": "q\\?.py\nstar\\*.py\n"}, id="escaped glob characters"),
    pytest.param({".gitignore": "q?.py\nsta?\\*.py\n"}, id="question marks"),
    pytest.param({".gitignore": "back\\\\slash.py\n"}, id="an escaped backslash"),
    pytest.param({".gitignore": "a b.py\n"}, id="a space inside"),
    pytest.param({".gitignore": "dir\\ /\n"}, id="an escaped trailing space"),
    pytest.param({".gitignore": "dir /\n*.py   \n"}, id="trailing spaces are dropped"),
    pytest.param({".gitignore": " a.py\n"}, id="a leading space is kept"),
    pytest.param({".gitignore": "gen\r\n/test.py\r\n"}, id="CRLF lines"),
    pytest.param({".gitignore": "\ufeffgen\n"}, id="a byte order mark"),
    pytest.param({".gitignore": "A.py\n"}, id="case matters"),
    pytest.param({".gitignore": ".*\n"}, id="hidden names"),
    pytest.param({".gitignore": "//gen\n/\n!\n"}, id="degenerate patterns"),
    pytest.param({".gitignore": "gen", "src/.gitignore": "!gen\n"}, id="a deeper file re-includes"),
    pytest.param({"src/.gitignore": "/sub\n"}, id="nested anchored to its folder"),
    pytest.param({"src/.gitignore": "*.py\n!c.py\n"}, id="nested names"),
    pytest.param({"src/.gitignore": "sub/deep/d.py\n", ".gitignore": "!src/sub/deep/d.py\n"}, id="deeper wins"),
    pytest.param({"foo/bar/.gitignore": "/baz.py\nqux/\n"}, id="two levels down"),
    pytest.param({"lib/.gitignore": "x/*/\n", "lib/x/.gitignore": "!y/\n"}, id="a deeper file cannot see past"),
    # cli29 14: .git/info/exclude was never read
    pytest.param({".git/info/exclude": "gen/\nsrc/sub/\n"}, id="info/exclude"),
    pytest.param(
        {".git/info/exclude": "*.py\n", "src/.gitignore": "!*.py\n"}, id="a .gitignore outweighs info/exclude"
    ),
    pytest.param({".git/info/exclude": "!gen/\n", ".gitignore": "gen/\n"}, id="info/exclude weighs least"),
]


pytestmark = pytest.mark.usefixtures("own_git_configuration")  # no global excludes file of the user's


def _git(tmp_path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout


def _tree(root: Path, ignore_files: dict[str, str]) -> None:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n", encoding="utf-8")
    for name, text in ignore_files.items():
        (root / name).write_bytes(text.encode("utf-8"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("start", [".", "src", "foo/bar"])
@pytest.mark.parametrize("ignore_files", CASES)
def test_the_walk_finds_the_files_git_does_not_ignore(tmp_path: Path, ignore_files: dict[str, str], start: str) -> None:
    # cli29 14: from a folder below the repository's root, the .gitignore files above it count too
    _git(tmp_path, "init", "-q")
    _tree(tmp_path, ignore_files)
    folder = tmp_path / start
    if start != "." and subprocess.run(["git", "check-ignore", "-q", start], cwd=tmp_path).returncode == 0:
        pytest.skip("git ignores the folder itself, which is walked when named (as ruff does; tested below)")
    listed = _git(folder, "ls-files", "-z", "--others", "--cached", "--exclude-standard")
    expected = sorted(name for name in listed.split("\0") if name.endswith(".py"))
    found, rejected = discover([folder])
    assert rejected == []
    assert sorted(c.path.relative_to(folder).as_posix() for c in found) == expected


def test_check_reports_the_files_the_probe_saw_skipped(tmp_path: Path) -> None:
    # cli29 13: `No files to check.` for three files git and ruff both look at.
    for name in ("codegen/a.py", "gen/a.py", "src/c.py", "src/sub/b.py", "docs/mytest.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SEED, encoding="utf-8")
    (tmp_path / ".gitignore").write_text("**/gen\nsrc/*.py\n**/test.py\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", str(tmp_path)])
    assert result.exit_code == 1
    reported = {Path(line.split(":")[0]).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines()}
    assert reported == {"codegen/a.py", "src/sub/b.py", "docs/mytest.py"}


def test_patterns_are_compiled_once_per_file() -> None:
    ignore_file = parse(b"# a comment\n\n*.log\n!keep.log\nbuild/\n")
    assert ignore_file is not None and len(ignore_file.rules) == 3
    assert ignore_file.verdict("x/a.log", "a.log", False) is True
    assert ignore_file.verdict("keep.log", "keep.log", False) is False
    assert ignore_file.verdict("build", "build", False) is None  # folders only
    assert parse(b"# only a comment\n\n") is None


def test_a_folder_named_on_the_command_line_is_walked_though_ignored(tmp_path: Path) -> None:
    # As ruff: the ignore files rule what a walk finds below the folders named, not those folders.
    for name in ("src/a.py", "src/sub/b.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*/\n", encoding="utf-8")
    assert discover([tmp_path])[0] == []
    assert [c.path for c in discover([tmp_path / "src"])[0]] == [tmp_path / "src" / "a.py"]
    assert [c.path for c in discover([tmp_path / "src" / "sub"])[0]] == [tmp_path / "src" / "sub" / "b.py"]


def _repository(root: Path) -> None:
    for name in ("src/gen/a.py", "src/vendored/a.py", "src/ok/a.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(SEED, encoding="utf-8")
    (root / ".gitignore").write_text("gen/\n", encoding="utf-8")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fix_of_a_folder_below_the_root_leaves_what_git_ignores_alone(tmp_path: Path) -> None:
    # cli29 14: `fix src` rewrote src/gen (the root's .gitignore) and src/vendored (info/exclude)
    _git(tmp_path, "init", "-q")
    _repository(tmp_path)
    (tmp_path / ".git" / "info" / "exclude").write_text("src/vendored/\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", str(tmp_path / "src")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Fixed 2 findings in 1 file.\n"
    assert (tmp_path / "src" / "gen" / "a.py").read_text(encoding="utf-8") == SEED
    assert (tmp_path / "src" / "vendored" / "a.py").read_text(encoding="utf-8") == SEED


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_worktree_reads_the_info_exclude_of_its_repository(tmp_path: Path) -> None:
    main_tree, worktree = tmp_path / "main", tmp_path / "wt"
    main_tree.mkdir()
    _git(main_tree, "init", "-q")
    _git(main_tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    _git(main_tree, "worktree", "add", "-q", "--detach", str(worktree))
    assert (worktree / ".git").is_file()
    _repository(worktree)
    (main_tree / ".git" / "info" / "exclude").write_text("vendored/\n", encoding="utf-8")
    listed = _git(worktree / "src", "ls-files", "--others", "--exclude-standard").split()
    found, _ = discover([worktree / "src"])
    assert [c.path.relative_to(worktree / "src").as_posix() for c in found] == listed == ["ok/a.py"]


def test_outside_a_repository_only_the_walked_folders_gitignore_files_count(tmp_path: Path) -> None:
    _repository(tmp_path)  # no .git: the root's .gitignore is no repository's
    found, _ = discover([tmp_path / "src"])
    assert [c.path.relative_to(tmp_path).as_posix() for c in found] == [
        "src/gen/a.py",
        "src/ok/a.py",
        "src/vendored/a.py",
    ]
    found, _ = discover([tmp_path])
    assert [c.path.relative_to(tmp_path).as_posix() for c in found] == ["src/ok/a.py", "src/vendored/a.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_nested_repository_is_not_ruled_by_the_ignore_files_above_it(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("*_pb2.py\n", encoding="utf-8")
    inner = tmp_path / "vendor" / "lib"
    inner.mkdir(parents=True)
    _git(inner, "init", "-q")
    (inner / "ops.py").write_text(SEED, encoding="utf-8")
    (inner / "ops_pb2.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "x_pb2.py").write_text(SEED, encoding="utf-8")
    listed = _git(inner, "ls-files", "--others", "--exclude-standard").split()
    assert listed == ["ops.py", "ops_pb2.py"]  # git: the inner repository's own rules only
    for start in (tmp_path, inner):
        found, _ = discover([start])
        assert [c.path.relative_to(inner).as_posix() for c in found] == listed
