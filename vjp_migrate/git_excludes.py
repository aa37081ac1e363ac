"""Stage 1 (gitignore.py's helper): where a repository's global excludes file is, as git finds it.

git reads `core.excludesFile` from its system, global and repository configuration files (the
last one set wins); unset, the file is `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
Only what that needs of git's configuration syntax is read: `[core]` sections, quoted values
with their escapes, comments, continued lines; `include` directives are not followed (as in the
`ignore` crate ruff walks with).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)\s*(\"(?:[^\"\\]|\\.)*\")?\s*\]")
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def excludes_file(git_dir: Path, work_tree: Path) -> Path | None:
    """The global excludes file of the repository whose git folder is ``git_dir`` (its
    configuration is read too) and whose work tree starts at ``work_tree``; None when
    configured empty."""
    value: str | None = None
    for config in _config_files(git_dir):
        value = _excludes_in(config, value)
    if value is None:
        xdg = _xdg_home()
        return None if xdg is None else xdg / "git" / "ignore"
    if not value:
        return None
    return _expand(value, work_tree)


def _config_files(git_dir: Path) -> list[Path]:
    """git's configuration files, the least weighty first: system, global, the repository's."""
    files: list[Path] = []
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    chosen = os.environ.get("GIT_CONFIG_GLOBAL")
    if chosen is not None:
        files.append(Path(chosen or os.devnull))
    else:
        xdg, home = _xdg_home(), _home()
        files += [] if xdg is None else [xdg / "git" / "config"]
        files += [] if home is None else [home / ".gitconfig"]
    files.append(git_dir / "config")
    return files


def _home() -> Path | None:
    """The user's home folder; None when there is none (no HOME, a user without a passwd entry)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        return None


def _xdg_home() -> Path | None:
    if os.environ.get("XDG_CONFIG_HOME"):
        return Path(os.environ["XDG_CONFIG_HOME"])
    home = _home()
    return None if home is None else home / ".config"


def _excludes_in(config: Path, value: str | None) -> str | None:
    """``value`` replaced by each `core.excludesFile` set in the file ``config``, in order."""
    try:
        text = config.read_bytes().decode("utf-8", "surrogateescape")
    except (OSError, ValueError):
        return value
    in_core = False
    lines = iter(text.splitlines())
    for line in lines:
        while line.endswith("\\") and not line.endswith("\\\\"):  # a value continued below
            line = line[:-1] + next(lines, "")
        if (section := _SECTION.match(line)) is not None:
            in_core = section.group(1).lower() == "core" and section.group(2) is None
            line = line[section.end() :]
        if not in_core or (key := _KEY.match(line)) is None or key.group(1).lower() != "excludesfile":
            continue
        if key.group(2):  # `excludesFile` alone is a boolean: no path
            value = _value(line[key.end() :])
    return value


def _value(raw: str) -> str:
    """A configuration value: quotes removed, escapes read, a comment outside quotes cut."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append(_ESCAPES.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


def _expand(value: str, work_tree: Path) -> Path:
    """A configured path as git reads it: `~/` and `~user/` are home folders, and a relative
    path is taken from the work tree's root (where git runs its commands)."""
    if value.startswith("~"):
        value = os.path.expanduser(value)
    path = Path(value)
    return path if path.is_absolute() else work_tree / path
