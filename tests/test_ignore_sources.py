"""git's global excludes file and `.ignore` files, weighed as git and ruff weigh them.

Each walk is compared with `ruff check --show-files` (ruff walks with the `ignore` crate, which
reads both), and where git has a say, with `git ls-files` too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main
from vjp_migrate.discover import discover
from vjp_migrate.git_excludes import excludes_file

TREE = ["a.py", "b.py", "keep.py", "gen/a.py", "src/a.py", "src/b.py", "src/gen/a.py", "lib/sub/c.py"]
RUFF = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
needs_ruff = pytest.mark.skipif(RUFF is None, reason="needs ruff (a test extra)")


pytestmark = pytest.mark.usefixtures("own_git_configuration")


def _write(root: Path, files: dict[str, str]) -> None:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n", encoding="utf-8")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _ours(start: Path) -> list[str]:
    found, rejected = discover([start])
    assert rejected == []
    return sorted(c.path.relative_to(start).as_posix() for c in found)


def _ruffs(start: Path) -> list[str]:
    assert RUFF is not None
    out = subprocess.run(
        [RUFF, "check", "--show-files", "--isolated", "--no-cache", "."],
        cwd=start,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NO_COLOR": "1"},
    ).stdout
    return sorted(Path(line).relative_to(start).as_posix() for line in out.splitlines() if line.endswith(".py"))


def _gits(start: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=start, capture_output=True, text=True, check=True
    ).stdout
    return sorted(line for line in out.splitlines() if line.endswith(".py"))


def _repository(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


# (the ignore files, the global excludes file's text); every case is in a repository.
GLOBAL_CASES = [
    pytest.param({}, "b.py\n", id="a name"),
    pytest.param({}, "/gen/\nsrc/b.py\n", id="paths from the repository's root"),
    pytest.param({".gitignore": "!b.py\n"}, "b.py\nkeep.py\n", id="a .gitignore outweighs it"),
    pytest.param({".git/info/exclude": "!b.py\n"}, "b.py\nkeep.py\n", id="info/exclude outweighs it"),
    pytest.param({"src/.gitignore": "!*.py\n"}, "*.py\n", id="everything but what a .gitignore takes back"),
    pytest.param({".gitignore": "gen/\n"}, "!gen/\n", id="it cannot take back what a .gitignore ignores"),
]


@needs_git
@needs_ruff
@pytest.mark.parametrize(("files", "excludes"), GLOBAL_CASES)
@pytest.mark.parametrize("where", ["GIT_CONFIG_GLOBAL", "~/.gitconfig", "XDG default", "repository config"])
def test_the_global_excludes_file_weighs_least(
    tmp_path: Path,
    own_git_configuration: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    excludes: str,
    where: str,
) -> None:
    home = own_git_configuration
    repo = tmp_path / "repo"
    _repository(repo)
    _write(repo, files)
    if where == "XDG default":  # no core.excludesFile anywhere: git's default place
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".config" / "git" / "ignore").write_text(excludes, encoding="utf-8")
    else:
        (home / "global-ignore").write_text(excludes, encoding="utf-8")
        setting = f"[user]\n\tname = t\n[core]\n\texcludesFile = {home / 'global-ignore'}\n"
        if where == "GIT_CONFIG_GLOBAL":
            (tmp_path / "cfg").write_text(setting, encoding="utf-8")
            monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "cfg"))
        elif where == "~/.gitconfig":
            (home / ".gitconfig").write_text(setting, encoding="utf-8")
        else:
            with (repo / ".git" / "config").open("a", encoding="utf-8") as config:
                config.write(setting)
    expected = _gits(repo)
    assert expected != sorted(TREE)  # the case ignores something
    assert _ours(repo) == expected
    if where != "repository config":  # the ignore crate reads no repository's configuration
        assert _ruffs(repo) == expected


@needs_git
def test_a_folder_below_the_root_and_a_worktree_use_the_global_file_too(
    tmp_path: Path, own_git_configuration: Path
) -> None:
    repo = tmp_path / "repo"
    _repository(repo)
    _write(repo, {})
    (own_git_configuration / ".gitconfig").write_text('[core]\n\texcludesfile = "../global ignore" ; why\n')
    (tmp_path / "global ignore").write_text("src/b.py\n", encoding="utf-8")  # relative to the work tree's root
    assert _ours(repo / "src") == _gits(repo / "src") == ["a.py", "gen/a.py"]


# (the ignore files, the folder walked); .ignore is ripgrep's and ruff's, not git's.
DOT_IGNORE_CASES = [
    ({".ignore": "gen/\n"}, ".", "a name"),
    ({".gitignore": "!gen/\n", ".ignore": "gen/\n"}, ".", "outweighs a .gitignore taking it back"),
    ({".gitignore": "gen/\nkeep.py\n", ".ignore": "!gen/\n"}, ".", "takes back what a .gitignore ignores"),
    ({"src/.gitignore": "!gen/\n", ".ignore": "gen/\n"}, ".", "outweighs a deeper .gitignore"),
    ({".ignore": "*.py\n", "src/.ignore": "!b.py\n"}, ".", "the deeper .ignore wins"),
    ({".ignore": "gen/\nsrc/b.py\n"}, "src", "from a folder above the one walked"),
    ({".git/info/exclude": "!b.py\n", ".ignore": "b.py\n"}, "src", "outweighs info/exclude"),
]


@needs_git
@needs_ruff
@pytest.mark.parametrize(
    ("files", "start", "in_repository"),
    [
        pytest.param(files, start, in_repository, id=f"{label}, {'in' if in_repository else 'outside'} a repository")
        for files, start, label in DOT_IGNORE_CASES
        for in_repository in (True, False)
        # outside a repository ruff reads no .gitignore, where vjp-migrate reads the walked folders'
        if in_repository or not any(name.startswith(".git") for name in files)
    ],
)
def test_dot_ignore_files_weigh_most(tmp_path: Path, files: dict[str, str], start: str, in_repository: bool) -> None:
    root = tmp_path / "repo"
    if in_repository:
        _repository(root)
    _write(root, files)
    expected = _ruffs(root / start)
    assert expected != sorted(p.removeprefix(f"{start}/") for p in TREE if start == "." or p.startswith(f"{start}/"))
    assert _ours(root / start) == expected


@needs_ruff
def test_a_dot_ignore_above_a_repository_still_counts_in_it(tmp_path: Path) -> None:
    (tmp_path / ".ignore").write_text("gen/\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("b.py\n", encoding="utf-8")  # above the root: not the repository's
    repo = tmp_path / "outer" / "repo"
    _repository(repo)
    _write(repo, {})
    assert _ours(repo) == _ruffs(repo) == ["a.py", "b.py", "keep.py", "lib/sub/c.py", "src/a.py", "src/b.py"]


# (a ~/.gitconfig, what `git config --get core.excludesFile` says, the file vjp-migrate reads)
CONFIGURATIONS = [
    ("[core]\n\texcludesFile = /x/y\n", "/x/y", "/x/y"),
    ('[CORE]\n  ExcludesFile="/x/with space" # comment\n', "/x/with space", "/x/with space"),
    ('[core]\n\texcludesFile = "/x/\\"q\\"\\\\b"\n', '/x/"q"\\b', '/x/"q"\\b'),
    ("[core] excludesfile = /on/the/section/line\n", "/on/the/section/line", "/on/the/section/line"),
    ("[core]\n\texcludesFile = /x/con\\\ntinued\n", "/x/continued", "/x/continued"),
    ("[core]\n\texcludesFile = /first\n[core]\n\texcludesFile = /last\n", "/last", "/last"),
    ('[core "sub"]\n\texcludesFile = /not/this\n', "", "XDG"),
    ("[core]\n\tbare = true\n[other]\n\texcludesFile = /not/this\n", "", "XDG"),
    ("[core]\n\texcludesFile = relative/file\n", "relative/file", "WORK/relative/file"),
    ("[core]\n\texcludesFile = ~/in/home\n", "~/in/home", "HOME/in/home"),
    ("[core]\n\texcludesFile =\n", "", None),  # set empty: no file at all
    ("[core]\n\texcludesFile\n", None, "XDG"),  # a boolean, no path (git refuses to run)
]


@pytest.mark.parametrize(("config", "git_says", "expected"), CONFIGURATIONS)
def test_the_configuration_is_read_as_git_reads_it(
    tmp_path: Path, own_git_configuration: Path, config: str, git_says: str | None, expected: str | None
) -> None:
    home = own_git_configuration
    (home / ".gitconfig").write_text(config, encoding="utf-8")
    if shutil.which("git") is not None and git_says is not None:
        git = subprocess.run(
            ["git", "config", "--get", "core.excludesFile"], cwd=tmp_path, capture_output=True, text=True
        )
        assert git.stdout.rstrip("\n") == git_says
    work = tmp_path / "work"
    found = excludes_file(work / ".git", work)
    if expected is None:
        assert found is None
        return
    assert found is not None
    expected = expected.replace("HOME", str(home)).replace("WORK", str(work))
    assert str(found) == (str(home / ".config" / "git" / "ignore") if expected == "XDG" else expected)


def test_the_repository_configuration_outweighs_the_global_one(
    tmp_path: Path, own_git_configuration: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (own_git_configuration / ".gitconfig").write_text("[core]\n\texcludesFile = /global\n", encoding="utf-8")
    git = tmp_path / ".git"
    git.mkdir()
    assert excludes_file(git, tmp_path) == Path("/global")
    (git / "config").write_text("[core]\n\texcludesFile = /local\n", encoding="utf-8")
    assert excludes_file(git, tmp_path) == Path("/local")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (git / "config").unlink()
    assert excludes_file(git, tmp_path) == Path("/global")
    (own_git_configuration / ".gitconfig").unlink()
    assert excludes_file(git, tmp_path) == tmp_path / "xdg" / "git" / "ignore"


def _project(root: Path, table: str) -> None:
    seed = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
    for name in ("src/ok.py", "src/gen/made.py", "vendor/lib.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(seed, encoding="utf-8")
    _repository(root)
    (root / ".gitignore").write_text("gen/\n", encoding="utf-8")
    (root / ".ignore").write_text("vendor/\n", encoding="utf-8")
    (root / "pyproject.toml").write_text(f"[tool.vjp-migrate]\n{table}", encoding="utf-8")


def _checked(root: Path, *options: str) -> set[str]:
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", *options, str(root)])
    assert result.exit_code == 1, result.output
    return {Path(line.split(":")[0]).relative_to(root).as_posix() for line in result.stdout.splitlines()}


@pytest.mark.parametrize(
    ("table", "options", "walked"),
    [
        ("", (), {"src/ok.py"}),
        ("", ("--no-respect-gitignore",), {"src/ok.py", "src/gen/made.py", "vendor/lib.py"}),
        ("respect-gitignore = false\n", (), {"src/ok.py", "src/gen/made.py", "vendor/lib.py"}),
        ("respect-gitignore = false\n", ("--respect-gitignore",), {"src/ok.py"}),
        ("respect-gitignore = true\n", ("--no-respect-gitignore",), {"src/ok.py", "src/gen/made.py", "vendor/lib.py"}),
    ],
)
def test_respect_gitignore_turns_every_ignore_file_off(
    tmp_path: Path, table: str, options: tuple[str, ...], walked: set[str]
) -> None:
    # ruff's option of that name: .gitignore, .ignore, info/exclude and the global file alike
    _project(tmp_path, table)
    assert _checked(tmp_path, *options) == walked


def test_a_subproject_can_turn_it_off_for_its_own_files(tmp_path: Path) -> None:
    _project(tmp_path, "")
    _project(tmp_path / "sub", "respect-gitignore = false\n")
    (tmp_path / "sub" / ".git").rename(tmp_path / "sub" / "not-a-repository")
    assert _checked(tmp_path) == {"src/ok.py", "sub/src/ok.py", "sub/src/gen/made.py", "sub/vendor/lib.py"}


def test_a_value_that_is_no_boolean_is_one_line(tmp_path: Path) -> None:
    _project(tmp_path, 'respect-gitignore = "no"\n')
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("[tool.vjp-migrate] respect-gitignore must be true or false")


def test_no_home_folder_is_no_global_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Path.home() raised RuntimeError out of the walk when HOME was unset and the user had no passwd entry
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    _repository(tmp_path / "repo")
    _write(tmp_path / "repo", {".gitignore": "b.py\n"})
    assert excludes_file(tmp_path / "repo" / ".git", tmp_path / "repo") is None
    assert "b.py" not in _ours(tmp_path / "repo") and "a.py" in _ours(tmp_path / "repo")
