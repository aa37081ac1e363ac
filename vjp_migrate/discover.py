"""Stage 1: paths -> the files to look at (skipping VCS, virtualenvs, caches and git-ignored paths)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from vjp_migrate import gitignore
from vjp_migrate.exclude_globs import excluded
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
S = TypeVar("S")


@dataclass(frozen=True)
class Candidate:
    path: Path
    explicit: bool  # named on the command line: always parsed, never pre-filtered away


@dataclass(frozen=True)
class Rejected:
    path: Path
    reason: str


@dataclass(frozen=True)
class Found:
    """The files one run looks at under one configuration, the paths named that are no file to
    read, and the paths named on the command line (phase 2's import roots)."""

    candidates: list[Candidate]
    rejected: list[Rejected]
    roots: tuple[Path, ...]


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
    return any(excluded(str(p), p.name, exclude) for p in (absolute, *folders))


@dataclass(frozen=True)
class Scoping(Generic[S]):
    """How the configuration (a scope) changes down a walk: a folder's listing may bring its own."""

    inside: Callable[[S, Path, AbstractSet[str]], S]  # a folder's scope, its path and names -> its entries' scope
    exclude: Callable[[S], Sequence[str]]  # the globs that skip entries in a scope (exclude_globs.py)
    respects: Callable[[S], bool] = lambda _: True  # whether the ignore files count in a scope


def _walk(directory: Path, real: str, layers: Layers, scope: S, scoping: Scoping[S]) -> Iterator[tuple[Path, str, S]]:
    """The files below ``directory``, each with its real path (``real`` is the folder's) and its
    scope; ``layers``: the ignore files of the folders above that apply to it."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    names = {entry.name for entry in entries}
    layers = gitignore.inside(layers, directory, names)
    scope = scoping.inside(scope, directory, names)
    exclude = scoping.exclude(scope)
    counted = layers if scoping.respects(scope) else ()
    for entry in entries:
        path = Path(entry.path)
        if excluded(entry.path, entry.name, exclude):
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
            if _skipped_folder(entry.name) or gitignore.ignored(counted, entry.name, True):
                continue
            if _virtualenv(path):
                continue
            below = gitignore.descend(layers, entry.name)
            yield from _walk(path, os.path.join(real, entry.name), below, scope, scoping)
        elif is_file and entry.name.endswith(SUFFIXES) and not gitignore.ignored(counted, entry.name, False):
            yield path, os.path.join(real, entry.name), scope  # links are not followed: no need to resolve


def discover(paths: Sequence[Path], exclude: Sequence[str] = ()) -> tuple[list[Candidate], list[Rejected]]:
    """The files below ``paths``, in a stable order, and the paths that cannot be read as files;
    the globs ``exclude`` apply everywhere (see ``discover_scoped`` for configurations that change)."""
    found, rejected = discover_scoped([(path, None) for path in paths], Scoping(_same, lambda _: exclude))
    return [candidate for candidate, _ in found], [reason for reason, _ in rejected]


def _same(scope: None, folder: Path, names: AbstractSet[str]) -> None:
    return scope


def discover_scoped(
    named: Sequence[tuple[Path, S]], scoping: Scoping[S]
) -> tuple[list[tuple[Candidate, S]], list[tuple[Rejected, S]]]:
    """The files below the paths named, each with its scope (a named path's own, else the one
    ``scoping`` gives its folder), in a stable order, and the paths that cannot be read as files.

    A file reached twice (named twice, by a link, or also inside a folder named) is one
    candidate, where it was first found, explicit when it was named once.
    """
    found: list[tuple[Candidate, S]] = []
    rejected: list[tuple[Rejected, S]] = []
    at: dict[str, int] = {}  # real path -> its place in found

    def add(candidate: Candidate, real: str, scope: S) -> None:
        if (seen := at.get(real)) is None:
            at[real] = len(found)
            found.append((candidate, scope))
        elif candidate.explicit and not found[seen][0].explicit:
            found[seen] = (Candidate(found[seen][0].path, explicit=True), found[seen][1])

    for path, scope in named:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            rejected.append((Rejected(path, "no such file or directory"), scope))
            continue
        except OSError as error:
            rejected.append((Rejected(path, f"cannot be read: {error.strerror or error}"), scope))
            continue
        if stat.S_ISDIR(mode):
            for file, real, inner in _walk(path, os.path.realpath(path), gitignore.above(path), scope, scoping):
                add(Candidate(file, explicit=False), real, inner)
        elif stat.S_ISREG(mode):
            add(Candidate(path, explicit=True), os.path.realpath(path), scope)
        else:
            rejected.append((Rejected(path, "not a regular file (a pipe, socket or device); skipped"), scope))
    return found, rejected
