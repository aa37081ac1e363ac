"""Settings from `[tool.vjp-migrate]` in pyproject.toml, merged with the command line (the CLI wins).

The nearest pyproject.toml *with a [tool.vjp-migrate] table* above each file is its
configuration (like ruff's hierarchy: also for the files a walk from above finds, see Resolver);
`--config PATH` names one for every file and `--isolated` ignores all of them. Nothing here
raises for a bad file except ConfigError, whose message is one line fit for users.
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from vjp_migrate.codes import expand_selection
from vjp_migrate.exclude_globs import GlobError, globs
from vjp_migrate.model import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# Where a formatter or linter keeps its line length, in the order one folder's files are read:
# ruff's own files, then pyproject.toml's [tool.ruff] and [tool.black], then flake8's.
_TOML_LENGTHS = (
    ("ruff.toml", ()),
    (".ruff.toml", ()),
    ("pyproject.toml", ("tool", "ruff")),
    ("pyproject.toml", ("tool", "black")),
)
_INI_LENGTHS = (".flake8", "setup.cfg", "tox.ini")
_LENGTH_FILES = frozenset({name for name, _ in _TOML_LENGTHS} | set(_INI_LENGTHS))
KEYS = frozenset(
    {"select", "ignore", "exclude", "extend-exclude", "unsafe-fixes", "static-args", "array-args", "respect-gitignore"}
)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class FileConfig:
    """What one `[tool.vjp-migrate]` table says (None: not set)."""

    path: Path | None = None
    found: bool = False  # the file has a [tool.vjp-migrate] table
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()  # the globs of exclude and extend-exclude (exclude_globs.py)
    unsafe_fixes: bool | None = None
    static_args: tuple[str, ...] = ()
    array_args: tuple[str, ...] = ()
    respect_gitignore: bool | None = None


@dataclass(frozen=True)
class CliOptions:
    """What the command line says; None and () mean "not given", so the file decides."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    config: Path | None = None
    isolated: bool = False
    force_exclude: bool = False  # the exclude patterns apply to paths named on the command line too
    respect_gitignore: bool | None = None  # a walk leaves out what the ignore files name (gitignore.py)


@dataclass(frozen=True)
class Group:
    """Paths that share one configuration, and the settings for them."""

    settings: Settings
    exclude: tuple[str, ...]  # globs (exclude_globs.py)
    paths: list[Path] = field(default_factory=list)
    config_path: Path | None = None
    respect_gitignore: bool = True

    @property
    def key(self) -> tuple[Path | None, int | None]:
        """What tells two configurations apart: the file and the line length."""
        return self.config_path, self.settings.line_length


def _strings(value: Any, key: str, where: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: [tool.vjp-migrate] {key} must be a list of strings")
    return tuple(value)


def _override(entry: str, key: str, where: Path) -> str:
    function, _, argument = entry.partition(":")
    if not function or not argument:
        raise ConfigError(f"{where}: [tool.vjp-migrate] {key} entry {entry!r} is not 'module.function:argument'")
    return entry


def read_config(path: Path) -> FileConfig:
    """The `[tool.vjp-migrate]` table of one pyproject.toml (empty when it has none)."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    tool = data.get("tool", {})
    table = tool.get("vjp-migrate") if isinstance(tool, dict) else None
    if table is None:
        return FileConfig(path)
    if not isinstance(table, dict):  # `[tool] vjp-migrate = 3`, `[[tool.vjp-migrate]]`
        raise ConfigError(f"{path}: [tool.vjp-migrate] must be a table, not {_toml_kind(table)}")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.vjp-migrate]: {', '.join(unknown)}")
    unsafe, respect = (_flag(table, key, path) for key in ("unsafe-fixes", "respect-gitignore"))
    base = Path(os.path.abspath(path.parent))  # as the walk spells paths: not resolved, as in ruff
    exclude = tuple(
        glob
        for key in ("exclude", "extend-exclude")
        for pattern in _strings(table.get(key, []), key, path)
        for glob in _globs(pattern, base, f"{path}: [tool.vjp-migrate] {key}")
    )
    return FileConfig(
        path=path,
        found=True,
        select=_strings(table["select"], "select", path) if "select" in table else None,
        ignore=_strings(table["ignore"], "ignore", path) if "ignore" in table else None,
        exclude=exclude,
        unsafe_fixes=unsafe,
        static_args=tuple(
            _override(e, "static-args", path) for e in _strings(table.get("static-args", []), "static-args", path)
        ),
        array_args=tuple(
            _override(e, "array-args", path) for e in _strings(table.get("array-args", []), "array-args", path)
        ),
        respect_gitignore=respect,
    )


def _flag(table: dict[str, Any], key: str, where: Path) -> bool | None:
    value = table.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{where}: [tool.vjp-migrate] {key} must be true or false")
    return value


def _toml_kind(value: object) -> str:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return "an array of tables (write `[tool.vjp-migrate]` once)"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}
    return kinds.get(type(value), "a value")


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.vjp-migrate] table at or above ``start``."""
    folder = Path(os.path.abspath(start))  # not resolve(): a symlink loop must not raise here
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        try:
            mentioned = b"vjp-migrate" in pyproject.read_bytes()  # cheap test before parsing
        except OSError:
            continue
        if mentioned and read_config(pyproject).found:
            return pyproject
    return None


def merge(file: FileConfig, cli: CliOptions) -> Group:
    """Settings, exclude patterns and whether the ignore files count (a Group without paths):
    each option the command line gives replaces the file's."""
    select = cli.select if cli.select is not None else file.select
    ignore = cli.ignore if cli.ignore is not None else file.ignore
    unsafe = cli.unsafe_fixes if cli.unsafe_fixes is not None else bool(file.unsafe_fixes)
    try:
        chosen = expand_selection(list(select) if select is not None else None, list(ignore or ()))
    except ValueError as error:
        where = f"{file.path}: " if file.path and cli.select is None and cli.ignore is None else ""
        raise ConfigError(f"{where}{error}") from None
    settings = Settings(chosen, unsafe, static_args=frozenset(file.static_args), array_args=frozenset(file.array_args))
    exclude = tuple(file.exclude) + tuple(g for p in cli.exclude for g in _globs(p, Path.cwd(), "--exclude"))
    respect = cli.respect_gitignore if cli.respect_gitignore is not None else file.respect_gitignore
    return Group(settings, exclude, [], file.path, respect is not False)


def _globs(pattern: str, base: Path, where: str) -> tuple[str, ...]:
    """The globs of an exclude pattern written relative to ``base`` (as ruff reads it)."""
    try:
        return globs(pattern, base)
    except GlobError as error:
        raise ConfigError(f"{where}: {error}") from None


class Resolver:
    """The configuration of each folder of one run: the nearest `[tool.vjp-migrate]` table and the
    nearest line length at or above it (as ruff's hierarchical settings: a subproject's own file
    rules its files, wherever the run starts), merged with the command line. One Group (with no
    paths) per configuration, each file read once; `--config` fixes the table, `--isolated` both."""

    def __init__(self, cli: CliOptions) -> None:
        self.cli = cli
        self._tables: dict[Path, bool] = {}  # pyproject.toml -> it has a [tool.vjp-migrate] table
        self._groups: dict[tuple[Path | None, int | None], Group] = {}

    def named(self, path: Path) -> Group:
        """The configuration of a path named on the command line ("-": the current folder's)."""
        start = Path.cwd() if str(path) == "-" else path
        if self.cli.isolated:
            return self._group(None, None)
        return self._group(self.cli.config or find_config(start), line_length(start))

    def inside(self, group: Group, folder: Path, names: AbstractSet[str]) -> Group:
        """The configuration of the entries of ``folder`` (its listing: ``names``), ``group`` its own."""
        if self.cli.isolated:
            return group
        config_path, length = group.config_path, group.settings.line_length
        if self.cli.config is None and "pyproject.toml" in names and self._has_table(folder / "pyproject.toml"):
            config_path = Path(os.path.abspath(folder / "pyproject.toml"))
        if not names.isdisjoint(_LENGTH_FILES) and (own := _own_line_length(folder)) is not None:
            length = own
        return self._group(config_path, length)

    def _has_table(self, pyproject: Path) -> bool:
        if pyproject not in self._tables:
            try:
                mentioned = b"vjp-migrate" in pyproject.read_bytes()  # cheap test before parsing
            except OSError:
                mentioned = False
            self._tables[pyproject] = mentioned and read_config(pyproject).found
        return self._tables[pyproject]

    def _group(self, config_path: Path | None, length: int | None) -> Group:
        key = (config_path, length)
        if key not in self._groups:
            group = merge(read_config(config_path) if config_path else FileConfig(), self.cli)
            settings = replace(group.settings, line_length=length)
            self._groups[key] = replace(group, settings=settings, config_path=config_path)
        return self._groups[key]


def groups(paths: Sequence[Path], cli: CliOptions, resolver: Resolver | None = None) -> list[Group]:
    """The paths grouped by the configuration that applies to them, in the order given (see
    Resolver; the files a folder's walk finds may have their own: see runs).

    With ``force_exclude``, a named path its group's exclude patterns (or the built-in skips)
    match is left out, as the walk of a folder leaves it out.
    """
    resolver = resolver or Resolver(cli)
    found: dict[tuple[Path | None, int | None], Group] = {}
    for path in paths:
        group = resolver.named(path)
        found.setdefault(group.key, replace(group, paths=[])).paths.append(path)
    if not found:
        return [merge(FileConfig(), cli)]
    if not cli.force_exclude:
        return list(found.values())
    from vjp_migrate.discover import force_excluded

    def kept(path: Path, group: Group) -> bool:
        root = group.config_path.parent if group.config_path is not None else Path.cwd()
        return str(path) == "-" or not force_excluded(path, group.exclude, root)

    return [replace(g, paths=[p for p in g.paths if kept(p, g)]) for g in found.values()]


def line_length(start: Path) -> int | None:
    """The line length the project's formatter or linter keeps to, for a file at ``start``: the
    nearest folder at or above it whose ruff.toml, pyproject.toml ([tool.ruff] or [tool.black]
    line-length) or flake8 configuration (max-line-length in .flake8, setup.cfg or tox.ini) sets
    one; None when none does. A file that cannot be read or parsed is passed over."""
    folder = Path(os.path.abspath(start))
    if not folder.is_dir():
        folder = folder.parent
    return _line_length_at(folder)


@lru_cache(maxsize=256)
def _line_length_at(folder: Path) -> int | None:
    found = _own_line_length(folder)
    if found is not None or folder.parent == folder:
        return found
    return _line_length_at(folder.parent)


def _own_line_length(folder: Path) -> int | None:
    for name, table in _TOML_LENGTHS:
        try:
            with open(folder / name, "rb") as handle:
                data: Any = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError):
            continue
        for key in table:
            data = data.get(key) if isinstance(data, dict) else None
        length = data.get("line-length") if isinstance(data, dict) else None
        if isinstance(length, int) and not isinstance(length, bool) and length > 0:
            return length
    for name in _INI_LENGTHS:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            if not parser.read(folder / name, encoding="utf-8"):
                continue
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in ("flake8", "pycodestyle"):
            value = parser.get(section, "max-line-length", fallback=None) or parser.get(
                section, "max_line_length", fallback=None
            )
            if value is not None and value.strip().isdigit() and int(value) > 0:
                return int(value)
    return None


def settings_for(path: Path) -> Settings | None:
    """The settings for one file (the flake8 plugin's view of the configuration); None when its
    configuration's `exclude` leaves it out (or the built-in skips), as a walk of its folder does."""
    (group,) = groups([path], CliOptions(force_exclude=True))
    return group.settings if group.paths else None
