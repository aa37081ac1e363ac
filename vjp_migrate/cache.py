"""Stage 11b: the on-disk result cache of `check`, so unchanged files are not parsed again.

Like ruff's `.ruff_cache`: a folder (default `.vjp_migrate_cache` in the project root, see
``project_dir``; `--cache-dir` or VJP_MIGRATE_CACHE_DIR choose another) with a CACHEDIR.TAG
and a .gitignore of `*`. One small JSON file per entry, named by a key that hashes the tool's
version and its own source files, the settings, the file's absolute path, whether the path was
named on the command line, and the file's bytes: any change to one of them is a miss. The path
is in the key because the analysis reads the file's place (its module name from the
``__init__.py`` files above it, the ``static-args``/``array-args`` match; for a file with
relative imports outside such a package, the current folder too); both use the absolute
path, so every spelling of one file (``pkg/a.py``, ``./pkg/a.py``, ``a.py`` from ``pkg/``)
shares its entry, and a hit is labelled with the current run's spelling. Only successful
results are stored. JSON, never pickle: a cache folder in a cloned repository must
not be able to run code. Any cache problem (read-only folder, corrupt entry) is a miss, never
an error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from functools import cache as _memo
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vjp_migrate.model import Diagnostic, FileResult, Settings

DEFAULT_DIR = Path(".vjp_migrate_cache")
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by vjp-migrate.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def project_dir(config_path: Path | None) -> Path:
    """The default cache of the files a configuration file applies to: beside that file (the
    project root, wherever in the project the run starts), else in the current folder."""
    return (config_path.parent if config_path is not None else Path()) / DEFAULT_DIR


@_memo
def tool_fingerprint() -> str:
    """The version plus the size and mtime of every module of the package (editable installs change)."""
    from vjp_migrate import __version__

    folder = Path(__file__).resolve().parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(folder.rglob("*.py")):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(folder)}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _settings_key(settings: Settings) -> str:
    values = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        values[f.name] = sorted(value) if isinstance(value, (set, frozenset)) else value
    return json.dumps(values, sort_keys=True, default=str)


def _in_package(absolute: str) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(absolute), "__init__.py"))


@dataclasses.dataclass(frozen=True)
class Cache:
    folder: Path  # <cache dir>/<fingerprint>
    settings_key: str

    @classmethod
    def open(cls, root: Path, settings: Settings) -> Cache:
        return cls(root / tool_fingerprint(), _settings_key(settings))

    def key(self, path: Path, data: bytes, explicit: bool) -> str:
        digest = hashlib.sha256()
        absolute = os.path.abspath(path)
        # Relative imports in a namespace package resolve from the current folder (modules.py).
        here = os.getcwd() if b"from ." in data and not _in_package(absolute) else ""
        for part in (self.settings_key, absolute, "explicit" if explicit else "found", here):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, path: Path, data: bytes, explicit: bool) -> FileResult | None:
        key = self.key(path, data, explicit)
        entry = self.folder / key[:2] / key
        try:
            raw = json.loads(entry.read_text(encoding="utf-8"))
            return _load(path, raw)
        except (OSError, ValueError, LookupError, TypeError, AttributeError, RecursionError):
            return None  # an entry this version cannot read (damaged, edited) is a miss

    def put(self, path: Path, data: bytes, explicit: bool, result: FileResult) -> None:
        from vjp_migrate.model import Status

        if result.status is not Status.OK or _mentions(result, str(path)):
            return
        key = self.key(path, data, explicit)
        try:
            _prepare(self.folder.parent)
            folder = self.folder / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(_dump(result), out)
            os.replace(temporary, folder / key)
        except OSError:
            pass  # a cache that cannot be written is only slower


def _mentions(result: FileResult, spelling: str) -> bool:
    """Whether a message or reason quotes the path: such a result cannot be relabelled for another spelling."""
    texts = (text for d in result.diagnostics for text in (d.message, *(e.text for e in d.reasons)))
    return any(spelling in text for text in texts)


def _prepare(root: Path) -> None:
    if (root / "CACHEDIR.TAG").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by vjp-migrate.\n*\n")):
        target = root / name
        if not target.exists():
            target.write_text(text, encoding="utf-8")


def _dump(result: FileResult) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return getattr(value, "value", value)  # enums by value

    return {
        "diagnostics": [plain(d) for d in result.diagnostics],
        "imported_rules": list(result.imported_rules),
        "imported_helpers": list(result.imported_helpers),
        "changed_names": [list(pair) for pair in result.changed_names],
    }


def _load(path: Path, raw: dict[str, Any]) -> FileResult:
    from vjp_migrate.model import ArgKind, Diagnostic, Evidence, FileResult, FixSafety, Status

    def diagnostic(values: dict[str, Any]) -> Diagnostic:
        values = dict(values, path=str(path))  # stored under another spelling of the same file, maybe
        values["fix_safety"] = FixSafety(values["fix_safety"])
        values["reasons"] = tuple(Evidence(**{**e, "kind": ArgKind(e["kind"])}) for e in values["reasons"])
        values["also_touches"] = tuple(values.get("also_touches", ()))
        values["notes"] = tuple(values.get("notes", ()))
        return Diagnostic(**values)

    diagnostics = tuple(diagnostic(d) for d in raw["diagnostics"])
    rules, helpers = tuple(raw.get("imported_rules", ())), tuple(raw.get("imported_helpers", ()))
    changed = tuple((role, name) for role, name in raw.get("changed_names", ()))
    return FileResult(
        path, Status.OK, diagnostics=diagnostics, imported_rules=rules, imported_helpers=helpers, changed_names=changed
    )
