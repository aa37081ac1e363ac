"""Settings from `[tool.vjp-migrate]` in pyproject.toml, merged with the command line (the CLI wins).

The nearest pyproject.toml *with a [tool.vjp-migrate] table* above each path is its
configuration (like ruff and black); `--config PATH` names one for every path and `--isolated`
ignores all of them. Nothing here raises for a bad file except ConfigError, whose message is
one line fit for users.
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from vjp_migrate.codes import expand_selection
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
KEYS = frozenset({"select", "ignore", "exclude", "extend-exclude", "unsafe-fixes", "static-args", "array-args"})


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class FileConfig:
    """What one `[tool.vjp-migrate]` table says (None: not set)."""

    path: Path | None = None
    found: bool = False  # the file has a [tool.vjp-migrate] table
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    static_args: tuple[str, ...] = ()
    array_args: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class Group:
    """Paths that share one configuration, and the settings for them."""

    settings: Settings
    exclude: tuple[str, ...]
    paths: list[Path] = field(default_factory=list)
    config_path: Path | None = None


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
    unsafe = table.get("unsafe-fixes")
    if unsafe is not None and not isinstance(unsafe, bool):
        raise ConfigError(f"{path}: [tool.vjp-migrate] unsafe-fixes must be true or false")
    base = path.parent.resolve()
    exclude = tuple(
        _anchored(p, base) for key in ("exclude", "extend-exclude") for p in _strings(table.get(key, []), key, path)
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
    )


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


def merge(file: FileConfig, cli: CliOptions) -> tuple[Settings, tuple[str, ...]]:
    """Settings and exclude patterns: each option the command line gives replaces the file's."""
    select = cli.select if cli.select is not None else file.select
    ignore = cli.ignore if cli.ignore is not None else file.ignore
    unsafe = cli.unsafe_fixes if cli.unsafe_fixes is not None else bool(file.unsafe_fixes)
    try:
        chosen = expand_selection(list(select) if select is not None else None, list(ignore or ()))
    except ValueError as error:
        where = f"{file.path}: " if file.path and cli.select is None and cli.ignore is None else ""
        raise ConfigError(f"{where}{error}") from None
    settings = Settings(chosen, unsafe, static_args=frozenset(file.static_args), array_args=frozenset(file.array_args))
    return settings, tuple(file.exclude) + tuple(_anchored(p, Path.cwd()) for p in cli.exclude)


def _anchored(pattern: str, base: Path) -> str:
    """A pattern with a slash is a path from ``base``; a bare one matches names anywhere."""
    return pattern if "/" not in pattern else (base / pattern.strip("/")).as_posix()


def groups(paths: Sequence[Path], cli: CliOptions) -> list[Group]:
    """The paths grouped by the configuration that applies to them, in the order given.

    With ``force_exclude``, a named path its group's exclude patterns (or the built-in skips)
    match is left out, as the walk of a folder leaves it out.
    """
    found = [part for group in _groups(paths, cli) for part in _by_line_length(group, cli)]
    if not cli.force_exclude:
        return found
    from vjp_migrate.discover import force_excluded

    def kept(path: Path, group: Group) -> bool:
        root = group.config_path.parent if group.config_path is not None else Path.cwd()
        return str(path) == "-" or not force_excluded(path, group.exclude, root)

    return [replace(g, paths=[p for p in g.paths if kept(p, g)]) for g in found]


def _by_line_length(group: Group, cli: CliOptions) -> list[Group]:
    """The group's paths by the line length of their project (one group, as a rule)."""
    if cli.isolated or not group.paths:
        return [group]
    by_length: dict[int | None, list[Path]] = {}
    for path in group.paths:
        by_length.setdefault(line_length(Path.cwd() if str(path) == "-" else path), []).append(path)
    return [
        replace(group, settings=replace(group.settings, line_length=length), paths=paths)
        for length, paths in by_length.items()
    ]


def _groups(paths: Sequence[Path], cli: CliOptions) -> list[Group]:
    if cli.isolated:
        settings, exclude = merge(FileConfig(), cli)
        return [Group(settings, exclude, list(paths))]
    if cli.config is not None:
        settings, exclude = merge(read_config(cli.config), cli)
        return [Group(settings, exclude, list(paths), cli.config)]
    found: dict[Path | None, Group] = {}
    for path in paths:
        config_path = find_config(Path.cwd() if str(path) == "-" else path)
        if config_path not in found:
            file = read_config(config_path) if config_path else FileConfig()
            settings, exclude = merge(file, cli)
            found[config_path] = Group(settings, exclude, [], config_path)
        found[config_path].paths.append(path)
    return list(found.values()) or [Group(*merge(FileConfig(), cli), [])]


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
