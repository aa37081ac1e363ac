"""Verify for two folders, parent side (no JAX, runs no code): pair the ``.py`` files by relative
path and decide which modules to verify; and lay out the two folders of a multi-file change
that exists only as texts (``stage_trees``, for ``fix --verify``).

A custom_vjp whose bwd lives in a sibling module can change without its own file changing, so
the modules verified are the files that differ plus every file that imports one of them,
directly or through others (imports read with ``ast``: absolute imports of the folder's own
modules and relative imports). In those, every custom_vjp function is verified, changed or
not.
"""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vjp_migrate.discover import SKIP_DIRS
from vjp_migrate.modules import absolute_module, package_root


@dataclass(frozen=True)
class TreeModule:
    name: str  # the dotted import name, "pkg.ops"
    relative: str  # its file, relative to each folder, "pkg/ops.py"


@dataclass(frozen=True)
class TreePlan:
    package: str | None  # the package name when the folders are themselves a package
    modules: tuple[TreeModule, ...]  # to verify, in name order
    changed: tuple[str, ...]  # the relative paths that differ (or exist on one side only)
    warnings: tuple[str, ...] = field(default=())
    removed: tuple[str, ...] = field(default=())  # files using custom_vjp that AFTER lacks


def python_files(root: Path, follow_links: bool = False) -> dict[str, Path]:
    """The ``.py`` files below ``root`` by relative posix path (pruned as discovery prunes;
    symlinked folders entered only when ``follow_links``, as the import system enters them)."""
    found: dict[str, Path] = {}
    for folder, _, files in _walk(root, lambda d: not _skipped(d.name), follow_links):
        for name in files:
            if name.endswith(".py"):
                path = folder / name
                found[path.relative_to(root).as_posix()] = path
    return found


def _walk(root: Path, keep: Callable[[Path], bool], follow_links: bool) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk in name order, into the folders ``keep`` accepts; followed links never loop (a
    link to a folder the walk is already inside is not entered)."""
    inside = {root: {os.path.realpath(root)}}  # each folder -> the real folders above it, itself included
    for folder, dirs, files in os.walk(root, followlinks=follow_links):
        here = Path(folder)
        above = inside.pop(here, set())
        dirs[:] = sorted(d for d in dirs if keep(here / d) and os.path.realpath(here / d) not in above)
        for d in dirs:
            inside[here / d] = above | {os.path.realpath(here / d)}
        yield here, dirs, files


def module_name(relative: str, package: str | None) -> str | None:
    """``pkg/ops.py`` -> ``pkg.ops`` (under ``package`` when the folder is one); None when the
    path is not importable (a part that is not an identifier)."""
    parts = relative[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if package is not None:
        parts.insert(0, package)
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def imported(source: str, name: str, is_package: bool) -> set[str]:
    """Every module name an import statement of ``source`` may load (each dotted prefix too)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    here = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module("." * node.level + (node.module or ""), here)
            if module is None:  # the import itself fails: it loads nothing
                continue
            targets.add(module)
            targets.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return {".".join(t.split(".")[: i + 1]) for t in targets if t for i in range(t.count(".") + 1)}


def _read(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None else None
    except OSError:
        return None


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", errors="replace") if data is not None else ""


def package_of(before: Path, after: Path) -> str | None:
    """The package name when a folder given is itself a package: AFTER's folder name."""
    if (before / "__init__.py").exists() or (after / "__init__.py").exists():
        return after.resolve().name
    return None


def plan_tree(before: Path, after: Path) -> TreePlan:
    """Which modules of the two folders to verify, and why some cannot be."""
    package = package_of(before, after)
    old, new = python_files(before), python_files(after)
    data = {rel: (_read(old.get(rel)), _read(new.get(rel))) for rel in sorted(set(old) | set(new))}
    changed = tuple(rel for rel, (b, a) in data.items() if b != a)
    names = {rel: module_name(rel, package) for rel in data}
    by_name = {name: rel for rel, name in names.items() if name is not None}
    importers: dict[str, set[str]] = {}
    for rel, (b, a) in data.items():
        name = names[rel]
        if name is None:
            continue
        is_package = rel.endswith("__init__.py")
        for target in imported(_text(b), name, is_package) | imported(_text(a), name, is_package):
            if target in by_name:
                importers.setdefault(by_name[target], set()).add(rel)
    affected = _closure(changed, importers)
    warnings: list[str] = []
    removed: list[str] = []
    modules: list[TreeModule] = []
    for rel in sorted(affected):
        b, a = data[rel]
        if b"custom_vjp" not in (b or b"") + (a or b""):
            continue
        if a is None:
            removed.append(rel)
        elif b is None:
            warnings.append(f"{rel}: only in AFTER; its custom_vjp functions not verified")
        elif names[rel] is None:
            warnings.append(f"{rel}: not importable by name; its custom_vjp functions not verified")
        else:
            modules.append(TreeModule(names[rel] or "", rel))
    return TreePlan(package, tuple(sorted(modules, key=lambda m: m.name)), changed, tuple(warnings), tuple(removed))


def _closure(start: Iterable[str], importers: dict[str, set[str]]) -> set[str]:
    seen = set(start)
    todo = list(seen)
    while todo:
        for user in importers.get(todo.pop(), ()):
            if user not in seen:
                seen.add(user)
                todo.append(user)
    return seen


@dataclass(frozen=True)
class Staged:
    before: Path
    after: Path
    roots: tuple[Path, ...]  # the import roots the copies come from


def _top_level(root: Path, name: str) -> Path | None:
    """What ``import name`` finds in ``root``: a package, a module, or a namespace folder."""
    for found in (root / name / "__init__.py", root / f"{name}.py"):
        if found.is_file():
            return found.parent if found.name == "__init__.py" else found
    return root / name if (root / name).is_dir() else None


def _skipped(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".") or name.endswith(".egg-info")


def _package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def _copy(source: Path, target: Path) -> None:
    """The files below ``source``, contents only: the copies are always writable and removable,
    and a symlinked folder or file becomes real ones (a write to the copy never reaches the
    link's target)."""
    for folder, _, files in _walk(source, lambda d: _package(d) or not _skipped(d.name), True):
        into = target / folder.relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            if (folder / name).is_file():  # not a dangling link, a pipe or a socket
                shutil.copyfile(folder / name, into / name)


def _importable(source: Path, top: str) -> Iterable[tuple[str, bool, Path]]:
    if source.is_file():
        yield top, False, source
        return
    for relative, path in python_files(source, follow_links=True).items():
        name = module_name(relative, top)
        if name is not None:
            yield name, relative.endswith("__init__.py"), path


def _resolves(base: Path, name: str) -> bool:
    """Whether ``name`` (dotted) is a module, package or namespace folder below ``base``."""
    path = base.joinpath(*name.split("."))
    return path.is_dir() or path.with_name(path.name + ".py").is_file()


def _import_root(path: Path, targets: set[str]) -> tuple[Path, str]:
    """The folder ``import`` finds ``path`` from, and its module name there: above the folders
    with an ``__init__.py``, and further up through namespace folders (PEP 420) when the
    migration's files import the namespace by name (``ns.sub.rules`` for ``ns/sub/rules.py``)
    and that import cannot be met lower down."""
    root, dotted = package_root(path)  # a symlinked folder on the way stays: the import system keeps it
    parts = dotted.split(".") if dotted else []
    best, name = root, parts[:]
    while root.name.isidentifier() and root.parent != root:
        folder, root = root.name, root.parent
        parts.insert(0, folder)
        if any(t.split(".")[0] == folder and _resolves(root, t) and not _resolves(best, t) for t in targets):
            best, name = root, parts[:]
    return best, ".".join(name) or path.stem


def stage_trees(changes: Mapping[Path, tuple[bytes, bytes]], into: Path) -> Staged:
    """Lay out BEFORE and AFTER of a change to several files of a project, for ``verify_trees``.

    ``into/before`` and ``into/after`` each get a copy of the top-level packages (or modules)
    that hold a changed file, and of those their modules import from the same import root,
    transitively; then each changed file gets its old bytes in ``before`` and its new ones in
    ``after``. A namespace package (no ``__init__.py``) is copied from the folder its files
    import it from; symlinked folders are copied as real ones. Raises ValueError when two
    different folders would take the same top-level name, OSError when a copy fails.
    """
    into = into.resolve()
    sources: dict[str, Path] = {}
    placed: dict[Path, Path] = {}  # each changed file -> its place relative to the copies
    roots: list[Path] = []
    todo: list[tuple[str, Path]] = []
    targets: set[str] = set()
    for path, (old, new) in changes.items():
        _, name = _import_root(path, set())  # the name as the import system sees it from below
        for data in (old, new):
            targets |= imported(_text(data), name, path.name == "__init__.py")
    for path, (_, new) in changes.items():
        root, name = _import_root(path, targets)
        placed[path] = Path(os.path.abspath(path)).relative_to(root)
        if root not in roots:
            roots.append(root)
        is_package = path.name == "__init__.py"
        todo.append((name.split(".")[0], root))
        todo.extend((t.split(".")[0], root) for t in imported(_text(new), name, is_package))
    while todo:
        top, root = todo.pop()
        source = _top_level(root, top)
        if source is None or sources.get(top) == source:
            continue
        if top in sources:
            raise ValueError(f"two top-level modules named {top}: {sources[top]} and {source}")
        sources[top] = source
        for name, is_package, path in _importable(source, top):
            todo.extend((t.split(".")[0], root) for t in imported(_text(_read(path)), name, is_package))
    before, after = into / "before", into / "after"
    for side in (before, after):
        side.mkdir(parents=True)
        for top, source in sources.items():
            if source.is_dir():
                _copy(source, side / top)
            else:
                shutil.copyfile(source, side / source.name)
    for path, (old, new) in changes.items():
        for side, data in ((before, old), (after, new)):
            target = side / placed[path]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return Staged(before, after, tuple(roots))
