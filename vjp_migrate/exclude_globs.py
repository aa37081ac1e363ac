"""Stage 1 (discover.py's helper): `exclude` patterns -> the globs a walk leaves out, read as ruff
reads them (its `globset`, where `*`, `?` and `[...]` match `/` too).

A pattern gives the glob of an absolute path, joined to its base folder (the configuration's, or
the current one for --exclude; the folder's own name taken literally) and normalised (`./`, `..`
and a trailing `/` go), and, when it has no slash, itself too; each glob is tried on an entry's
absolute path and on its name. `**/` at the start, `/**/` inside and `/**` at the end span any
number of folders (`**/legacy` is `legacy` too); any other `**` is a `*`. `{a,b}` is either
(nested too); a backslash escapes the next character; `[...]` is a set (`!` or `^` first
negates, `a-z` ranges, a `]` or `-` first is a member, no escapes inside). What globset rejects
(an unclosed `[` or `{`, an unopened `}`, a backwards range, a trailing backslash) raises
GlobError.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

# The tokens that span folders, as globset writes them in its regular expressions.
_PREFIX, _SUFFIX, _BETWEEN = "(?:/?|.*/)", "/.*", "(?:/|/.*/)"
_SPANS = (_PREFIX, _SUFFIX, _BETWEEN)


class GlobError(ValueError):
    """A pattern that is no glob; the message says why, in globset's words."""


def globs(pattern: str, base: Path) -> tuple[str, ...]:
    """The globs of one pattern written relative to ``base`` (GlobError when it is none). The
    folder's name is no glob (ruff's would be read as one: `proj[1]`, `c}d`)."""
    _regex(pattern)
    folder = re.sub(r"([*?\[\]{}\\])", r"\\\1", os.fspath(base).replace(os.sep, "/"))
    absolute = os.path.normpath(os.path.join(folder, pattern)).replace(os.sep, "/")
    return (absolute,) if "/" in pattern else (absolute, pattern)


def excluded(path: str, name: str, exclude: Sequence[str]) -> bool:
    """Whether a glob of ``exclude`` matches the entry's absolute path or its ``name``."""
    if not exclude:
        return False
    regex = _any(tuple(exclude))
    absolute = os.path.abspath(path).replace(os.sep, "/")
    return regex.fullmatch(absolute) is not None or regex.fullmatch(name) is not None


@functools.lru_cache(maxsize=256)
def _any(exclude: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{_regex(glob).pattern})" for glob in exclude), re.DOTALL)


@functools.lru_cache(maxsize=1024)
def _regex(glob: str) -> re.Pattern[str]:
    tokens, end = _Parser(glob).sequence(0, nested=False)
    assert end == len(glob)
    return re.compile(".*" if tokens == [_PREFIX] else "".join(tokens), re.DOTALL)


class _Parser:
    def __init__(self, glob: str) -> None:
        self.glob = glob

    def fail(self, why: str) -> GlobError:
        return GlobError(f"error parsing glob '{self.glob}': {why}")

    def sequence(self, i: int, nested: bool) -> tuple[list[str], int]:
        """The tokens from ``i`` up to the end, or in an alternative (``nested``) up to its `,` or
        `}`; and where they stop."""
        glob = self.glob
        tokens: list[str] = []
        while i < len(glob):
            char = glob[i]
            if nested and char in ",}":
                return tokens, i
            if char == "*":
                i = self.star(tokens, i, nested)
                continue
            if char == "?":
                tokens.append(".")
            elif char == "[":
                token, i = self.bracket(i + 1)
                tokens.append(token)
                continue
            elif char == "{":
                token, i = self.alternatives(i + 1)
                tokens.append(token)
                continue
            elif char == "}":
                raise self.fail("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
            elif char == "\\":
                if i + 1 == len(glob):
                    raise self.fail("dangling '\\'")
                i += 1
                tokens.append(re.escape(glob[i]))
            else:
                tokens.append(re.escape(char))
            i += 1
        if nested:
            raise self.fail("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
        return tokens, i

    def star(self, tokens: list[str], i: int, nested: bool) -> int:
        """The token(s) of the `*` or `**` at ``i`` added; where the glob goes on."""
        glob = self.glob
        if not glob.startswith("**", i):
            tokens.append(".*")
            return i + 1
        after = i + 2
        following = glob[after] if after < len(glob) else None
        if not tokens:  # the start of the glob, or of an alternative
            if following in (None, "/"):
                tokens.append(_PREFIX)
                return after + (following == "/")
            tokens += [".*", ".*"]
            return after
        if glob[i - 1] != "/":
            tokens += [".*", ".*"]
            return after
        if following is None or (nested and following in ",}"):
            suffix = True
        elif following == "/":
            suffix, after = False, after + 1
        else:
            tokens += [".*", ".*"]
            return after
        last = tokens.pop()  # the `/` before: the spanning token has it
        tokens.append(last if last in _SPANS[:2] else _SUFFIX if suffix else _BETWEEN)
        return after

    def bracket(self, i: int) -> tuple[str, int]:
        """The set opened just before ``i``, and the index after its `]`."""
        glob = self.glob
        negated = i < len(glob) and glob[i] in "!^"
        i += negated
        ranges: list[list[str]] = []
        first, in_range = True, False
        while True:
            if i == len(glob):
                raise self.fail("unclosed character class; missing ']'")
            char = glob[i]
            i += 1
            if char == "]" and not first:
                break
            if char == "-" and not first and not in_range:
                in_range = True
            elif in_range:
                if char < ranges[-1][0]:
                    raise self.fail(f"invalid range; '{ranges[-1][0]}' > '{char}'")
                ranges[-1][1], in_range = char, False
            else:
                ranges.append([char, char])
            first = False
        if in_range:
            ranges.append(["-", "-"])
        members = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in ranges)
        return f"[{'^' if negated else ''}{members}]", i

    def alternatives(self, i: int) -> tuple[str, int]:
        """The `{...}` opened just before ``i``, and the index after its `}`."""
        branches = []
        while True:
            tokens, i = self.sequence(i, nested=True)
            if tokens:
                branches.append("".join(tokens))
            if self.glob[i] == "}":
                return (f"(?:{'|'.join(branches)})" if branches else ""), i + 1
            i += 1  # a `,`
