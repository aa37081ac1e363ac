"""Verify stage 1 (in the worker): import a module file into an isolated module object.

BEFORE and AFTER are two versions of the same module; each gets its own module object under
a private name, so the two never mix. The private name sits inside the file's real package
(``pkg.sub.__vjp_migrate_after__ops``), so ``from . import helpers`` still works, and the
package root is put on ``sys.path`` so absolute imports of sibling modules do too.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import sysconfig
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_OWN_CODE = str(Path(__file__).resolve().parent.parent) + os.sep
_LIBRARIES = tuple({sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "purelib", "platlib")})


def exception_line(exc: BaseException) -> str:
    """``TypeName: first line of the message (path, line N)``, the place being the innermost
    frame of the user's code (not vjp_migrate's, not the import machinery's): one line."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if isinstance(exc, SyntaxError):
        return text  # its message already names the file and the line
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(("<", _OWN_CODE))]
    users = [f for f in frames if not f.filename.startswith(_LIBRARIES)] or frames
    if users:
        text += f" ({users[-1].filename}, line {users[-1].lineno})"
    return text[:500]


@dataclass(frozen=True)
class ModuleLocation:
    """Where a file sits: the directory to import from and its dotted module name."""

    root: Path
    module_name: str  # "pkg.sub.ops", or "ops" for a file outside any package

    @property
    def package(self) -> str:
        """The dotted package name ('' outside a package)."""
        return self.module_name.rpartition(".")[0]


def locate(path: Path) -> ModuleLocation:
    """Walk up through ``__init__.py`` directories to find the import root of ``path``."""
    path = path.resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ModuleLocation(directory, ".".join(parts) or path.stem)


def private_name(location: ModuleLocation, role: str) -> str:
    """The isolated module's name, inside the real package."""
    stem = location.module_name.rpartition(".")[2]
    name = f"__vjp_migrate_{role}__{stem}"
    return f"{location.package}.{name}" if location.package else name


def load_module(path: Path, role: str, source: str | None = None) -> types.ModuleType:
    """Execute ``path`` (or ``source`` standing in for it) as a fresh module object.

    Raises whatever the module raises; the worker turns that into a report error.
    """
    location = locate(path)
    root = str(location.root)
    if root not in sys.path:
        sys.path.insert(0, root)
    if location.package:
        importlib.import_module(location.package)
    name = private_name(location, role)
    filename = str(path.resolve())
    if source is None and path.suffix != ".ipynb":
        source = path.read_text(encoding="utf-8")
    else:
        # Tracebacks and inspect.getsource should show the in-memory text, not the file.
        source = module_text(path, source)
        filename = f"{filename} ({role})"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    spec = importlib.util.spec_from_loader(name, loader=None, origin=filename)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = filename
    module.__package__ = location.package
    # Registered while it runs: dataclasses and typing look modules up by name.
    sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def module_text(path: Path, source: str | None = None) -> str:
    """The Python text of one version (``source``, else the file's): a notebook's code cells."""
    text = path.read_text(encoding="utf-8") if source is None else source
    if path.suffix != ".ipynb":
        return text
    from vjp_migrate.notebook import runnable

    return runnable(text)


def _inside(module: types.ModuleType, root: Path) -> bool:
    filename = getattr(module, "__file__", None)
    if isinstance(filename, str):
        return Path(filename).resolve().is_relative_to(root)
    # A namespace package has no file: it is the folder's when one of its portions is there (the
    # next folder's `ns.rules` must not be found as an attribute left on this folder's `ns`).
    try:
        portions = list(getattr(module, "__path__", None) or ())
    except Exception:  # a module object of the user's that computes __path__ and fails
        return False
    return any(isinstance(p, str) and Path(p).resolve().is_relative_to(root) for p in portions)


def load_tree(
    root: Path, package: str | None, names: Sequence[str]
) -> tuple[dict[str, types.ModuleType], dict[str, str]]:
    """Import the modules ``names`` of one folder under their real names; the modules and the
    import errors by name.

    Two versions of a project have the same module names, so each folder is imported in turn:
    its root goes on ``sys.path`` (or, when the folder is itself the package ``package``, that
    package is made to point at it), its modules are imported and bound to each other, then
    every module the folder added is taken out of ``sys.modules`` again. The module objects
    stay alive, so the next folder's ``pkg.rules`` can never be the one this folder's
    ``pkg.ops`` imported.
    """
    root = root.resolve()
    known = set(sys.modules)
    search = str(root)
    if package is None:
        sys.path.insert(0, search)
    importlib.invalidate_caches()
    modules: dict[str, types.ModuleType] = {}
    errors: dict[str, str] = {}
    try:
        if package is not None:
            _register_package(root, package)
        for name in names:
            try:
                module = importlib.import_module(name)
            except BaseException as exc:
                errors[name] = exception_line(exc)
                continue
            if not _inside(module, root):
                errors[name] = f"a module named {name} is already loaded from {getattr(module, '__file__', '?')}"
                continue
            modules[name] = module
    finally:
        if package is None and search in sys.path:
            sys.path.remove(search)
        added = set(sys.modules) - known
        # Decided before any is removed: a namespace package's __path__ looks its parent up.
        for name in [n for n in added if _inside(sys.modules[n], root) or n.split(".")[0] == package]:
            del sys.modules[name]
    return modules, errors


def _register_package(root: Path, package: str) -> None:
    init = root / "__init__.py"
    if init.exists():
        spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[str(root)])
    else:  # a namespace package
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(root)]
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)
