"""Stage 1 (discover.py's helper): git's ignore files and `.ignore` -> what a walk leaves out.

Each pattern is translated once to a regular expression with git's wildmatch rules: a pattern
with a slash other than a trailing one is anchored to its file's folder, one without matches a
name at any depth; `*`, `?` and `[...]` never match `/`; `**/`, `/**/` and `/**` span folders
(any other `**` is a `*`); a trailing `/` matches folders only; `!` re-includes; a backslash
escapes the next character. The files weigh, most first, as in the `ignore` crate ruff walks
with: `.ignore` files (ripgrep's; every folder above counts, repository or not), `.gitignore`
files, the repository's `.git/info/exclude`, then git's global excludes file (git_excludes.py);
among files of one kind the deepest wins, and in a file the last matching pattern. A folder
with a `.git` is a repository's root: the git files above it stop applying there.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.git_excludes import excludes_file

# The ASCII classes git's wildmatch knows, as the inside of a regular expression's set.
_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\v\\f\\r",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


class _Never(ValueError):
    """A pattern git never matches (a trailing backslash, an unclosed `[`, an unknown `[:class:]`)."""


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    name_only: bool  # no slash but a trailing one: matches the name, at any depth


@dataclass(frozen=True)
class IgnoreFile:
    """The patterns of one ignore file; paths are matched relative to its base folder."""

    rules: tuple[_Rule, ...]
    any_name: re.Pattern[str]  # every name-only pattern at once: most names match none
    any_path: re.Pattern[str]

    def verdict(self, relative: str, name: str, is_dir: bool) -> bool | None:
        """Ignored (True), re-included (False), or None when no pattern matches."""
        if self.any_name.fullmatch(name) is None and self.any_path.fullmatch(relative) is None:
            return None
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(name if rule.name_only else relative) is not None:
                return not rule.negate
        return None


# The kinds of ignore file, the least weighty first.
GLOBAL, EXCLUDE, GITIGNORE, IGNORE = range(4)
_GIT_KINDS = (GLOBAL, EXCLUDE, GITIGNORE)
# The files that apply in one folder, each with that folder's path from the file's base
# ("" at the base, else ending with "/") and its kind; the least weighty first.
Layers = tuple[tuple[IgnoreFile, str, int], ...]


def ignored(layers: Layers, name: str, is_dir: bool) -> bool:
    """Whether the entry ``name`` of the folder ``layers`` describe is ignored."""
    for rules, prefix, _ in reversed(layers):
        verdict = rules.verdict(prefix + name, name, is_dir)
        if verdict is not None:
            return verdict
    return False


def descend(layers: Layers, name: str) -> Layers:
    """The layers of the subfolder ``name`` (before its own files are added by ``inside``)."""
    return tuple((rules, f"{prefix}{name}/", kind) for rules, prefix, kind in layers)


def inside(layers: Layers, folder: Path, names: Collection[str]) -> Layers:
    """The layers for the entries of ``folder`` (whose listing is ``names``): its own .gitignore
    and .ignore added, and at a repository's root the git files above replaced by its
    info/exclude and global excludes."""
    if ".git" in names:
        layers = (*_repository_files(folder), *(layer for layer in layers if layer[2] not in _GIT_KINDS))
    for name, kind in ((".gitignore", GITIGNORE), (".ignore", IGNORE)):
        if name in names and (own := read(folder / name)) is not None:
            at = next((i for i, layer in enumerate(layers) if layer[2] > kind), len(layers))
            layers = (*layers[:at], (own, "", kind), *layers[at:])
    return layers


def above(folder: Path) -> Layers:
    """The layers for the entries of ``folder`` that come from the folders above it: their
    .ignore files, and up from its repository's root (if any) the git files; ``inside`` adds
    the folder's own."""
    folder = Path(os.path.abspath(folder))
    in_repository = any(os.path.lexists(parent / ".git") for parent in folder.parents)
    wanted = (".git", ".gitignore", ".ignore") if in_repository else (".ignore",)
    layers: Layers = ()
    for current, part in zip(reversed(folder.parents), folder.parts[1:], strict=True):
        names = {name for name in wanted if os.path.lexists(current / name)}
        layers = descend(inside(layers, current, names), part)
    return layers


def _repository_files(root: Path) -> Layers:
    """The global excludes and .git/info/exclude of the repository whose work tree starts at
    ``root`` (also a worktree's or a submodule's, whose `.git` file names the git folder)."""
    git = root / ".git"
    if not git.is_dir():
        try:
            line = git.read_text(encoding="utf-8", errors="surrogateescape").strip()
        except OSError:
            return ()
        if not line.startswith("gitdir:"):
            return ()
        git = root / line[len("gitdir:") :].strip()
        with contextlib.suppress(OSError):  # a worktree's: the repository's; else its own
            git = git / (git / "commondir").read_text(encoding="utf-8", errors="surrogateescape").strip()
    found = ((excludes_file(git, root), GLOBAL), (git / "info" / "exclude", EXCLUDE))
    return tuple((rules, "", kind) for path, kind in found if path is not None and (rules := read(path)) is not None)


def read(path: Path) -> IgnoreFile | None:
    """An ignore file's patterns; None when it cannot be read or has none."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return parse(data)


def parse(data: bytes) -> IgnoreFile | None:
    """The patterns of an ignore file's bytes (as git reads them); None when there are none."""
    rules = []
    for raw in data.removeprefix(b"\xef\xbb\xbf").split(b"\n"):
        line = os.fsdecode(raw.removesuffix(b"\r"))
        if not line or line.startswith("#"):
            continue
        rule = _rule(_trim_trailing_spaces(line))
        if rule is not None:
            rules.append(rule)
    if not rules:
        return None
    return IgnoreFile(
        tuple(rules),
        _any([r.regex for r in rules if r.name_only]),
        _any([r.regex for r in rules if not r.name_only]),
    )


def _any(regexes: Sequence[re.Pattern[str]]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{r.pattern})" for r in regexes) or "(?!)", re.DOTALL)


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces go, unless a backslash quotes them (git's trim_trailing_spaces)."""
    end, last_space, i = len(line), None, 0
    while i < len(line):
        if line[i] == " ":
            last_space = i if last_space is None else last_space
        elif line[i] == "\\":
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line[: end if last_space is None else last_space]


def _rule(pattern: str) -> _Rule | None:
    negate = pattern.startswith("!")
    pattern = pattern[1:] if negate else pattern
    dir_only = pattern.endswith("/")
    pattern = pattern[:-1] if dir_only else pattern
    name_only = "/" not in pattern
    if not name_only and pattern.startswith("/"):
        pattern = pattern[1:]
    if not pattern:
        return None
    # git matches a path pattern's literal start before wildmatch sees the rest: there a `**`
    # right after that start counts as the pattern's first characters (`foo/b**/x` spans folders).
    literal = len(pattern) if name_only else next((i for i, c in enumerate(pattern) if c in "*?[\\"), len(pattern))
    try:
        regex = re.compile(_translate(pattern, literal), re.DOTALL)
    except _Never:
        return None
    return _Rule(regex, negate, dir_only, name_only)


def _translate(pattern: str, literal: int) -> str:
    """git's wildmatch with WM_PATHNAME, as a regular expression to match whole paths
    (``literal``: the length of the start git compares apart)."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 == n:
                raise _Never
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            spans = j - i > 1 and (i in (0, literal) or pattern[i - 1] == "/")
            if spans and j == n:
                out.append(".*")
            elif spans and pattern[j] == "/":
                out.append("(?:.*/)?")  # no folder, or any number of them
                j += 1
            elif spans and pattern.startswith("\\/", j):
                out.append(".*")
            else:
                out.append("[^/]*")
            i = j
        elif char == "[":
            chars, i = _bracket(pattern, i + 1)
            out.append(chars)
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """The set opened just before ``i``, and the index after its `]` (wildmatch's reading: a `]`
    first is a member, `!` or `^` first negates, `a-z` ranges, `[:alpha:]` classes)."""
    n = len(pattern)
    negated = i < n and pattern[i] in "!^"
    i += negated
    members: list[str] = []
    previous: str | None = None  # the last single member, which a `-` makes a range's start
    first = True
    while True:
        if i == n:
            raise _Never
        char = pattern[i]
        if char == "]" and not first:
            break
        first = False
        if char == "\\":
            i += 1
            if i == n:
                raise _Never
            char = pattern[i]
            members.append(re.escape(char))
        elif char == "-" and previous is not None and i + 1 < n and pattern[i + 1] != "]":
            i += 1
            end = pattern[i]
            if end == "\\":
                i += 1
                if i == n:
                    raise _Never
                end = pattern[i]
            if previous <= end:
                members.append(f"{re.escape(previous)}-{re.escape(end)}")
            char = ""
        elif char == "[" and pattern.startswith(":", i + 1):
            close = pattern.find("]", i + 2)
            if close == -1:
                raise _Never
            name = pattern[i + 2 : close]
            if len(name) < 1 or not name.endswith(":"):
                members.append(re.escape("["))  # no `:]`: a plain `[`
            else:
                if name[:-1] not in _CLASSES:
                    raise _Never
                members.append(_CLASSES[name[:-1]])
                i, char = close, ""
        else:
            members.append(re.escape(char))
        previous = char or None
        i += 1
    if negated:
        return f"[^/{''.join(members)}]", i + 1
    return (f"(?!/)[{''.join(members)}]" if members else "(?!)"), i + 1
