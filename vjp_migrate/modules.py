"""Stage 1b: the files of one run -> a module index (dotted name <-> path) and import resolution.

A file's module name comes from its location: the folders above it that hold an
``__init__.py`` are its packages (``mypkg/ops.py`` -> ``mypkg.ops``). A folder given on the
command line is also an import root, and so is the current folder, so a ``src/`` layout and
namespace packages (folders without ``__init__.py``) resolve too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted

_PY_SUFFIXES = (".py", ".pyi")


def package_name(path: Path) -> str:
    """The dotted module name of ``path`` from the ``__init__.py`` files above it."""
    return package_root(path)[1]


def package_root(path: Path, packages: dict[str, tuple[str, ...]] | None = None) -> tuple[Path, str]:
    """The folder above the ``__init__.py`` folders that hold ``path``, and ``path``'s dotted
    module name from there. From the absolute path (symlinks kept): `a.py` named inside `pkg/`
    is `pkg.a`, as `pkg/a.py` is (the cache shares them). ``packages``: what is known of the
    folders already (see ``_packages``), for many files of the same folders."""
    folder = os.path.dirname(os.path.abspath(path))
    above = _packages(folder, {} if packages is None else packages)
    root = folder
    for _ in above:
        root = os.path.dirname(root)
    return Path(root), ".".join([*above, *([] if path.stem == "__init__" else [path.stem])])


def _packages(folder: str, known: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The names of the ``__init__.py`` folders that end at ``folder`` (itself included), outermost
    first; each folder's answer is kept in ``known``."""
    found = known.get(folder)
    if found is None:
        parent, name = os.path.split(folder)
        is_package = bool(name) and os.path.isfile(os.path.join(folder, "__init__.py"))
        found = known[folder] = (*_packages(parent, known), name) if is_package else ()
    return found


def _root_name(path: Path, root: Path) -> str | None:
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    parts = list(relative.parent.parts)
    if path.stem != "__init__":
        parts.append(path.stem)
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


@dataclass
class ModuleIndex:
    """Which module name means which file, for the files of one run."""

    every: dict[str, list[Path]] = field(default_factory=dict)  # module name -> each file with that name
    names: dict[Path, str] = field(default_factory=dict)  # file -> its canonical module name
    rooted: dict[Path, str] = field(default_factory=dict)  # file -> its name below the first import root
    roots: dict[Path, Path] = field(default_factory=dict)  # file -> the folder its canonical name starts at

    @classmethod
    def build(cls, files: Iterable[Path], roots: Sequence[Path] = ()) -> ModuleIndex:
        """``roots``: the folders given; the current folder comes last (``python -m`` and
        pre-commit, which names files relative to it, import from there)."""
        index = cls()
        folders = [Path(os.path.abspath(r)) for r in roots if r.is_dir()]
        folders.append(Path(os.getcwd()))
        packages: dict[str, tuple[str, ...]] = {}  # the files of a run share their folders
        for path in files:
            if path.suffix not in _PY_SUFFIXES:
                continue
            top, canonical = package_root(path, packages)
            index.roots[path] = top
            if canonical:
                index.names[path] = canonical
                index._add(canonical, path)
            absolute = Path(os.path.abspath(path))
            for root in folders:
                name = _root_name(absolute, root)
                if name is not None:
                    index.names.setdefault(path, name)
                    index._add(name, path)
                    index.rooted.setdefault(path, name)
        return index

    @property
    def paths(self) -> dict[str, Path]:
        """Module name -> the first file of the run with that name."""
        return {name: files[0] for name, files in self.every.items()}

    def _add(self, name: str, path: Path) -> None:
        same = self.every.setdefault(name, [])
        if path not in same:
            same.append(path)

    def files_named(self, name: str, importer: Path | None = None) -> list[Path]:
        """The files of the run a module name may mean in an import of ``importer``: when several
        have the name (two copies of a package, in two projects of a monorepo), the ones whose
        packages start where the importer's do, as Python run from there would import them."""
        found = self.every.get(name, [])
        if len(found) > 1 and importer is not None and importer in self.roots:
            found = [path for path in found if self.roots.get(path) == self.roots[importer]] or found
        modules = [path for path in found if path.suffix == ".py"]
        return modules if modules and len(modules) < len(found) else found  # a stub beside its module: the module

    def package_of(self, path: Path) -> str:
        """The package ``path``'s relative imports start from: its ``__init__.py`` packages, or
        in a namespace package (its folder has no ``__init__.py``) its folders below the root."""
        package = importing_package(self.names.get(path) or package_name(path), path)
        return package or importing_package(self.rooted.get(path, ""), path)

    def holds(self, module: str) -> bool:
        """Whether ``module`` is one of the files, or a package some of them are in."""
        return module in self.every or any(name.startswith(f"{module}.") for name in self.every)

    def split(self, target: str) -> tuple[str, str] | None:
        """``pkg.rules.bwd`` -> (``pkg.rules``, ``bwd``): the longest module prefix in the index."""
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.every:
                return module, ".".join(parts[cut:])
        return None


@dataclass(frozen=True)
class NearbyModules:
    """The modules on disk an import of the file at ``importer`` means, where Python run from its
    project would find them: below the folder above the file's packages, its own folder (a
    script), the current folder. Read as a ModuleIndex is, for what a run follows into a module
    that is none of its files without changing it (an imported alias of the partial)."""

    importer: Path

    def file_of(self, name: str) -> Path | None:
        parts = name.split(".")
        if not all(p.isidentifier() for p in parts):
            return None
        start = Path(os.path.abspath(self.importer))
        for root in dict.fromkeys((package_root(self.importer)[0], start.parent, Path(os.getcwd()))):
            base = root.joinpath(*parts)
            for found in (base.parent / f"{parts[-1]}.py", base / "__init__.py"):
                if found.is_file():
                    return found
        return None

    def split(self, target: str) -> tuple[str, str] | None:
        """As ModuleIndex.split: the longest module prefix of ``target`` found on disk."""
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if self.file_of(module) is not None:
                return module, ".".join(parts[cut:])
        return None

    def files_named(self, name: str, importer: Path | None = None) -> list[Path]:
        found = self.file_of(name)
        return [found] if found is not None else []

    def package_of(self, path: Path) -> str:
        return importing_package(package_name(path), path)


def absolute_module(relative: str, package: str) -> str | None:
    """``..rules`` seen from package ``pkg.sub`` -> ``pkg.rules``, as the import system resolves
    it; None where Python raises ImportError: outside a package (``package`` is ``""``) or
    climbing above the top-level package."""
    level = len(relative) - len(relative.lstrip("."))
    rest = relative[level:]
    if level == 0:
        return relative
    parts = package.split(".") if package else []
    if level > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, rest] if rest else base)


def importing_package(module_name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    if path.stem == "__init__":
        return module_name
    return module_name.rpartition(".")[0]


def import_binding(name: str, asname: str | None) -> tuple[str, str]:
    """The local name `import name [as asname]` binds and its absolute target: `import a.b` binds `a`."""
    if asname is not None:
        return asname, name
    head = name.split(".")[0]
    return head, head


def from_binding(written: str, name: str, asname: str | None, package: str) -> tuple[str, str | None]:
    """The local name `from written import name [as asname]` binds in ``package`` and its absolute
    target (None: a relative import that leaves the packages, an ImportError)."""
    base = absolute_module(written, package)
    return asname or name, None if base is None else f"{base}.{name}"


class _Imports(cst.CSTVisitor):
    def __init__(self, package: str) -> None:
        self.package = package
        self.targets: dict[str, str] = {}  # local name -> absolute dotted target
        self.spelled: dict[str, str] = {}  # local name -> the module as written (for messages)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # rules are module-level; a function's own imports do not bind module names

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            local, target = import_binding(dotted(alias.name) or "", _asname(alias))
            self.targets[local] = target
            self.spelled[local] = target

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        written = "." * len(node.relative) + (dotted(node.module) or "" if node.module is not None else "")
        for alias in node.names:
            local, target = from_binding(written, dotted(alias.name) or "", _asname(alias), self.package)
            self.spelled[local] = written
            if target is not None:
                self.targets[local] = target


def _asname(alias: cst.ImportAlias) -> str | None:
    return alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None


@dataclass(frozen=True)
class ModuleImports:
    """A module's module-level imports: local name -> absolute dotted target."""

    targets: dict[str, str]
    spelled: dict[str, str]

    def target(self, name: str) -> str | None:
        """``rules.bwd`` -> ``pkg.rules.bwd`` when ``rules`` is imported; None otherwise."""
        head, _, rest = name.partition(".")
        base = self.targets.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def origin(self, name: str) -> str | None:
        """The module a name is imported from, absolute when it can be made so."""
        target = self.target(name)
        if target is not None:
            return target.rpartition(".")[0] or target
        return self.spelled.get(name.partition(".")[0])


def module_imports(module: cst.Module, package: str) -> ModuleImports:
    collector = _Imports(package)
    walk.visit(module, collector)
    return ModuleImports(collector.targets, collector.spelled)
