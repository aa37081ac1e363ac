"""Stage 9c: what LibCST's code generation loses of a source, put back into the new text.

LibCST gives back every source exactly but for two things: a last lone CR (it takes it for no
newline at all, and drops it), and form feeds in the indentation of statements' lines (CPython
ignores one at the start of a line and lets one elsewhere reset the column; LibCST keeps a
block's indentation once, as its first line has it, and writes that for every line of the block).
The new text is made from LibCST's code, so the lines the rewrite did not change get their
source back here.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from vjp_migrate.source import SourceError, physical_lines

if TYPE_CHECKING:
    import libcst as cst

_INDENT = " \t\x0c"


def kept_source(source: str, module: cst.Module, new: str) -> str:
    """``new``, made from the code of ``module`` (parsed from ``source``), with what that code
    lost of ``source`` put back; SourceError when the code differs from it in another way."""
    if "\x0c" not in source and not source.endswith("\r"):  # all LibCST may lose
        return new
    kept = restored(source, module.code, new)
    if kept is None:
        raise SourceError("LibCST's code generation does not give this file back exactly; left untouched")
    return kept


def restored(source: str, code: str, new: str) -> str | None:
    """``new``, made from LibCST's ``code`` of ``source``, with what ``code`` lost of ``source``
    put back; None when ``code`` differs from ``source`` in another way."""
    if code == source:
        return new
    if source.endswith("\r") and code == source[:-1]:
        return new + "\r"
    if source.endswith("\r") and not code.endswith("\r"):
        code, new = code + "\r", new + "\r"
    old_lines, code_lines = physical_lines(source), physical_lines(code)
    if len(old_lines) != len(code_lines) or not all(map(_same_but_indent, old_lines, code_lines)):
        return None
    new_lines = physical_lines(new)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, code_lines, new_lines, autojunk=False)
    for kind, first, last, new_first, new_last in matcher.get_opcodes():
        if kind == "equal":
            out.extend(old_lines[first:last])
        elif kind == "replace" and last - first == new_last - new_first:  # line by line
            out.extend(map(_indented, old_lines[first:last], code_lines[first:last], new_lines[new_first:new_last]))
        else:
            out.extend(map(_unpaged, new_lines[new_first:new_last]))
    return "".join(out)


def _indented(old: str, code: str, new: str) -> str:
    """A changed line with the source's indentation, form feed and all, when LibCST's was kept."""
    if old == code or _indent(new) != _indent(code):
        return _unpaged(new)
    return _indent(old) + new[len(_indent(new)) :]


def _unpaged(new: str) -> str:
    """A new line without the form feed LibCST may begin it with: it writes a block's first
    line's indentation for every line of the block, form feed and all (CPython ignores a form
    feed at the start of a line, so the code is the same)."""
    return new[1:] if new.startswith("\x0c") and new[1:2] in (" ", "\t") else new


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(_INDENT))]


def _same_but_indent(old: str, code: str) -> bool:
    """The same line, or one whose indentation held a form feed that LibCST replaced."""
    return old == code or ("\x0c" in _indent(old) + _indent(code) and old.lstrip(_INDENT) == code.lstrip(_INDENT))
