"""Verify stage 1 (in the worker): import a module file into an isolated module object.

BEFORE and AFTER are two versions of the same module; each gets its own module object under
a private name, so the two never mix. The private name sits inside the file's real package
(``pkg.sub.__vjp_migrate_after__ops``), so ``from . import helpers`` still works, and the
package root is put on ``sys.path`` so absolute imports of sibling modules do too.
"""

from __future__ import annotations

import importlib
import importlib.util
import linecache
import sys
import types
from dataclasses import dataclass
from pathlib import Path


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
    if source is None:
        source = path.read_text(encoding="utf-8")
    else:
        # Tracebacks and inspect.getsource should show the in-memory text, not the file.
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
