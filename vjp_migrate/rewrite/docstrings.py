"""Rewrite, step 3: bwd's docstring without the entries of the parameters that leave it, and
with the residual parameter's entry under its new name when it is renamed.

Only a section whose layout is unambiguous changes: a Google `Args:` (`Arguments:`,
`Parameters:`) section, each entry `name: text` or `name (type): text` at one indent with its
continuation lines deeper; a NumPy `Parameters` section over a line of dashes, each entry
`name : type` at the header's indent with its text deeper; or Sphinx fields, `:param name:`
(`:param type name:`, `:arg`, `:key`...) and `:type name:`, each with its continuation lines
deeper. An entry naming a parameter that goes is removed, with its continuation lines; anything
else (free text mentioning it, an entry listing several names, a Google or NumPy section that
would be left empty, the line holding the closing quotes) keeps the docstring as it is. The one
entry of a renamed residual (and its `:type`) gets the new name, unless that is documented too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection

import libcst as cst

_GOOGLE_HEADER = re.compile(r"(?:Args|Arguments|Parameters|Params):")
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^()]*\))?\s*:(?:\s|$)")
_NUMPY_HEADERS = ("Parameters", "Other Parameters")
_NUMPY_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?")
_DASHES = re.compile(r"-{3,}")
_SPHINX_FIELD = re.compile(r":(?P<kind>\w+)(?:\s+(?P<argument>[^:]*?))?\s*:(?:\s|$)")
_SPHINX_PARAMS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword", "type"})
_INDENT = re.compile(r"[ \t]*")


def without_entries(
    docstring: cst.SimpleString, names: Collection[str], renamed: tuple[str, str] | None = None
) -> cst.SimpleString:
    """``docstring`` without the entries documenting the parameters ``names``, and the entry of
    ``renamed[0]`` naming ``renamed[1]`` (as it is when none is found, or the section's layout is
    not clear)."""
    if not names and renamed is None:
        return docstring
    lines = docstring.value.splitlines(keepends=True)
    section = True  # Google and NumPy entries sit under a header that must keep one
    entries = _google_entries(lines)
    if entries is None:
        entries = _numpy_entries(lines)
    if entries is None:
        entries, section = _sphinx_entries(lines), False
    if entries is None:
        return docstring
    gone = [span for name, span in entries if name.removeprefix("type ") in names]
    documented = [name for name, _ in entries]
    listed = {n.strip().lstrip("*") for name in documented if "," in name for n in name.split(",")}
    lines = _renamed(lines, entries, renamed, listed)
    if not gone:
        new = "".join(lines)
        return docstring if new == docstring.value else docstring.with_changes(value=new)
    if (
        not listed.isdisjoint(names)
        or (section and len(gone) == len(entries))
        or any(documented.count(name) > 1 for name in documented if name.removeprefix("type ") in names)
        or any(stop >= len(lines) or lines[stop - 1].rstrip("\r\n").endswith("\\") for _, stop in gone)
    ):
        return docstring
    dropped = {k for start, stop in gone for k in range(start, stop)}
    kept = [k for k in range(len(lines)) if k not in dropped]
    after = dict(itertools.pairwise(kept))
    return docstring.with_changes(value="".join(lines[k] for k in kept if not _left_blank(lines, k, after.get(k))))


def _renamed(lines: list[str], entries: Entries, renamed: tuple[str, str] | None, listed: set[str]) -> list[str]:
    """``lines`` with the one entry of ``renamed[0]`` (and its `:type`) naming ``renamed[1]``; as
    they are when the old name has no entry or several, or the new one is documented already."""
    if renamed is None:
        return lines
    old, new = renamed
    names = [name.removeprefix("type ") for name, _ in entries]
    if [name for name, _ in entries].count(old) != 1 or new in names or {old, new} & listed:
        return lines
    lines = list(lines)
    for name, (start, _) in entries:
        if name.removeprefix("type ") == old:
            # the name right before the field's closing colon (Sphinx), or first on the line
            field = re.sub(rf"(\s){old}(\s*:)", rf"\g<1>{new}\g<2>", lines[start], count=1)
            plain = re.sub(rf"^(\s*\**){old}\b", rf"\g<1>{new}", lines[start], count=1)
            lines[start] = field if lines[start].lstrip().startswith(":") else plain
    return lines


def _left_blank(lines: list[str], k: int, after: int | None) -> bool:
    """Line ``k`` is a blank line that separated removed lines from a blank line or the closing
    quotes: two blank lines would meet, or the docstring would end with a blank line."""
    if not _blank(lines[k]) or after is None or after == k + 1:
        return False
    return _blank(lines[after]) or (after == len(lines) - 1 and not lines[after].strip().strip("'\""))


Entries = list[tuple[str, tuple[int, int]]]  # each entry's name (`a, b`: names; `type a`: a's type) and lines


def _indent(line: str) -> int:
    found = _INDENT.match(line)
    return len(found.group()) if found else 0


def _blank(line: str) -> bool:
    return not line.strip()


def _google_entries(lines: list[str]) -> Entries | None:
    """The entries of the one Google `Args:` section (None: no such section, or more than one,
    or a line in it that is neither an entry nor deeper than one)."""
    headers = [k for k, line in enumerate(lines) if k and _GOOGLE_HEADER.fullmatch(line.strip())]
    if len(headers) != 1:
        return None
    header = headers[0]
    outer = _indent(lines[header])
    end = next((k for k in range(header + 1, len(lines)) if not _blank(lines[k]) and _indent(lines[k]) <= outer), None)
    body = range(header + 1, len(lines) if end is None else end)
    first = next((k for k in body if not _blank(lines[k])), None)
    if first is None:
        return None
    inner = _indent(lines[first])
    starts: list[tuple[str, int]] = []
    for k in body:
        if _blank(lines[k]) or _indent(lines[k]) > inner:
            continue
        found = _GOOGLE_ENTRY.match(lines[k].strip())
        if _indent(lines[k]) != inner or found is None:
            return None
        starts.append((found["name"], k))
    return _spans(lines, starts, body.stop)


def _numpy_entries(lines: list[str]) -> Entries | None:
    """The entries of NumPy `Parameters` sections (None: there are none)."""
    entries: Entries = []
    for header in range(1, len(lines) - 1):
        if lines[header].strip() not in _NUMPY_HEADERS or not _DASHES.fullmatch(lines[header + 1].strip()):
            continue
        outer = _indent(lines[header])
        starts: list[tuple[str, int]] = []
        k = header + 2
        while k < len(lines):
            line = lines[k]
            if _blank(line) or _indent(line) > outer:
                k += 1
                continue
            found = _NUMPY_ENTRY.fullmatch(line.strip())
            next_is_dashes = k + 1 < len(lines) and _DASHES.fullmatch(lines[k + 1].strip()) is not None
            if _indent(line) < outer or found is None or next_is_dashes:
                break
            starts.append((found["name"], k))
            k += 1
        entries.extend(_spans(lines, starts, k))
    return entries or None


def _sphinx_entries(lines: list[str]) -> Entries | None:
    """The `:param name:` and `:type name:` fields (named `name` and `type name`), each to the
    next line that is not deeper (None: there are none, or one names no single parameter)."""
    entries: Entries = []
    for k in range(1, len(lines)):
        found = _SPHINX_FIELD.match(lines[k].strip())
        if found is None or found["kind"] not in _SPHINX_PARAMS:
            continue
        words = (found["argument"] or "").split()
        if not words or (found["kind"] == "type" and len(words) != 1):
            return None
        indent = _indent(lines[k])
        stop = next(
            (j for j in range(k + 1, len(lines)) if not _blank(lines[j]) and _indent(lines[j]) <= indent), len(lines)
        )
        name = f"type {words[0]}" if found["kind"] == "type" else words[-1]
        entries.extend(_spans(lines, [(name, k)], stop))
    return entries or None


def _spans(lines: list[str], starts: list[tuple[str, int]], stop: int) -> Entries:
    """Each entry's lines: from its first to the next entry's (``stop`` for the last), without
    the blank lines that end them."""
    ends = [start for _, start in starts[1:]] + [stop]
    spans: Entries = []
    for (name, start), end in zip(starts, ends, strict=True):
        while end > start + 1 and _blank(lines[end - 1]):
            end -= 1
        spans.append((name, (start, end)))
    return spans
