"""Verify for two folders, parent side (no JAX, runs no code): pair the ``.py`` files by relative
path and decide which modules to verify.

A custom_vjp whose bwd lives in a sibling module can change without its own file changing, so
the modules verified are the files that differ plus every file that imports one of them,
directly or through others (imports read with ``ast``: absolute imports of the folder's own
modules and relative imports). In those, every custom_vjp function is verified, changed or
not.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from vjp_migrate.discover import SKIP_DIRS


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


def python_files(root: Path) -> dict[str, Path]:
    """The ``.py`` files below ``root`` by relative posix path (pruned as discovery prunes)."""
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (d in SKIP_DIRS or d.startswith(".") or d.endswith(".egg-info")))
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                found[path.relative_to(root).as_posix()] = path
    return found


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
            if node.level:
                base_parts = here.split(".") if here else []
                if node.level - 1 > len(base_parts):
                    continue
                base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                module = ".".join(p for p in (base, node.module or "") if p)
            else:
                module = node.module or ""
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
    modules: list[TreeModule] = []
    for rel in sorted(affected):
        b, a = data[rel]
        if b"custom_vjp" not in (b or b"") + (a or b""):
            continue
        if b is None or a is None:
            side = "AFTER" if b is None else "BEFORE"
            warnings.append(f"{rel}: only in {side}; its custom_vjp functions not verified")
        elif names[rel] is None:
            warnings.append(f"{rel}: not importable by name; its custom_vjp functions not verified")
        else:
            modules.append(TreeModule(names[rel] or "", rel))
    return TreePlan(package, tuple(sorted(modules, key=lambda m: m.name)), changed, tuple(warnings))


def _closure(start: Iterable[str], importers: dict[str, set[str]]) -> set[str]:
    seen = set(start)
    todo = list(seen)
    while todo:
        for user in importers.get(todo.pop(), ()):
            if user not in seen:
                seen.add(user)
                todo.append(user)
    return seen
