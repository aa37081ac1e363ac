"""The walk leaves out what git leaves out: every case is compared with `git ls-files` itself."""

from __future__ import annotations

import os
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
]


def _git(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout


def _tree(root: Path, ignore_files: dict[str, str]) -> None:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n", encoding="utf-8")
    for name, text in ignore_files.items():
        (root / name).write_bytes(text.encode("utf-8"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("ignore_files", CASES)
def test_the_walk_finds_the_files_git_does_not_ignore(tmp_path: Path, ignore_files: dict[str, str]) -> None:
    _git(tmp_path, "init", "-q")
    _tree(tmp_path, ignore_files)
    listed = _git(tmp_path, "ls-files", "-z", "--others", "--cached", "--exclude-standard")
    expected = sorted(name for name in listed.split("\0") if name.endswith(".py"))
    found, rejected = discover([tmp_path])
    assert rejected == []
    assert sorted(c.path.relative_to(tmp_path).as_posix() for c in found) == expected


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
