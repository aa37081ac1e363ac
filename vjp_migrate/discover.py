"""Stage 1: paths -> the files to look at (skipping VCS, virtualenvs, caches and git-ignored paths)."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate import gitignore
from vjp_migrate.gitignore import Layers

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".eggs",
        ".ipynb_checkpoints",
    }
)
SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass(frozen=True)
class Candidate:
    path: Path
    explicit: bool  # named on the command line: always parsed, never pre-filtered away


@dataclass(frozen=True)
class Rejected:
    path: Path
    reason: str


def _matches(path: str, name: str, pattern: str) -> bool:
    """A bare pattern matches a name; one with a slash matches the absolute path (configuration)."""
    if "/" in pattern:
        return fnmatch.fnmatchcase(os.path.abspath(path).replace(os.sep, "/"), pattern)
    return fnmatch.fnmatchcase(name, pattern)


def _excluded(entry: os.DirEntry[str], pattern: str) -> bool:
    return _matches(entry.path, entry.name, pattern)


def _skipped_folder(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(".egg-info")


def _virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").exists()  # whatever its name


def force_excluded(path: Path, exclude: Sequence[str], root: Path) -> bool:
    """Whether a path named on the command line would be skipped had a walk from ``root`` found it.

    Only the path's own name and the folders between it and ``root`` count (a project that
    lives in a folder named `build` is not excluded); outside ``root``, only its own name.
    """
    absolute = Path(os.path.abspath(path))
    try:
        between = absolute.relative_to(os.path.abspath(root)).parents
    except ValueError:
        between = ()
    folders = [absolute.parents[i] for i in range(len(between) - 1)]
    if absolute.is_dir() and between:
        folders.insert(0, absolute)
    if any(_skipped_folder(folder.name) or _virtualenv(folder) for folder in folders):
        return True
    return any(_matches(str(p), p.name, pattern) for p in (absolute, *folders) for pattern in exclude)


def _walk(directory: Path, real: str, layers: Layers, exclude: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """The files below ``directory``, each with its real path (``real`` is the folder's);
    ``layers``: the ignore files of the folders above that apply to it."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    layers = gitignore.inside(layers, directory, {entry.name for entry in entries})
    for entry in entries:
        path = Path(entry.path)
        if any(_excluded(entry, pattern) for pattern in exclude):
            continue
        try:
            # Symbolic links are not followed: a link pointing out of the tree is not ours to
            # change, one inside it reaches a file the walk finds anyway, and a loop never ends.
            # Pipes, sockets and devices are not regular files: skipped, never opened.
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if _skipped_folder(entry.name) or gitignore.ignored(layers, entry.name, True):
                continue
            if _virtualenv(path):
                continue
            yield from _walk(path, os.path.join(real, entry.name), gitignore.descend(layers, entry.name), exclude)
        elif is_file and entry.name.endswith(SUFFIXES) and not gitignore.ignored(layers, entry.name, False):
            yield path, os.path.join(real, entry.name)  # links are not followed: no need to resolve


def discover(paths: Sequence[Path], exclude: Sequence[str] = ()) -> tuple[list[Candidate], list[Rejected]]:
    """The files below ``paths``, in a stable order, and the paths that cannot be read as files.

    A file reached twice (named twice, by a link, or also inside a folder named) is one
    candidate, where it was first found, explicit when it was named once.
    """
    found: list[Candidate] = []
    rejected: list[Rejected] = []
    at: dict[str, int] = {}  # real path -> its place in found

    def add(candidate: Candidate, real: str) -> None:
        if (seen := at.get(real)) is None:
            at[real] = len(found)
            found.append(candidate)
        elif candidate.explicit and not found[seen].explicit:
            found[seen] = Candidate(found[seen].path, explicit=True)

    for path in paths:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            rejected.append(Rejected(path, "no such file or directory"))
            continue
        except OSError as error:
            rejected.append(Rejected(path, f"cannot be read: {error.strerror or error}"))
            continue
        if stat.S_ISDIR(mode):
            for file, real in _walk(path, os.path.realpath(path), gitignore.above(path), exclude):
                add(Candidate(file, explicit=False), real)
        elif stat.S_ISREG(mode):
            add(Candidate(path, explicit=True), os.path.realpath(path))
        else:
            rejected.append(Rejected(path, "not a regular file (a pipe, socket or device); skipped"))
    return found, rejected
