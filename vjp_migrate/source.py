"""Stage 2: bytes -> decoded text (PEP 263 cookie, BOM, newline style kept) -> checked Python."""

from __future__ import annotations

import ast
import codecs
import io
import re
import threading
import tokenize
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str  # as tokenize names it; "utf-8-sig" when the file starts with a BOM


# Larger sources that mention nondiff_argnums are reported, not analysed (see check_size()).
MAX_PARSED_CHARS = 2_000_000
# The reason check_syntax gives (and notebook.py, with the cell): machine formats read it back.
SYNTAX_REASON = re.compile(
    r"syntax error at (?:cell (?P<cell>\d+), )?line (?P<line>\d+)(?:, column (?P<column>\d+))?: (?P<message>.*)"
)


_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def physical_lines(text: str) -> list[str]:
    """The lines of a source as Python and LibCST number them, each with its newline: they end
    at `\\n`, `\\r\\n` or `\\r` only (str.splitlines ends them at a form feed or U+2028 too)."""
    return _PHYSICAL_LINE.findall(text)


_LONE_CR = re.compile(r"\r(?!\n)")


def lf_endings(text: str) -> str:
    """``text`` with each lone `\\r` (a line end to Python) as `\\n`: the same lines and offsets,
    for readers that end lines at `\\n` only (tokenize, io.StringIO's readline, `str.find`)."""
    return _LONE_CR.sub("\n", text)


class SourceError(ValueError):
    """A source that cannot be processed; the message is one line, fit for users."""


def decode(data: bytes) -> SourceText:
    """Decode bytes the way Python would; SourceError says why it cannot be."""
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing" in error.msg:  # no cookie, and the bytes are not UTF-8
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as decode_error:
                raise SourceError(f"cannot be decoded as utf-8 (no encoding declaration): {decode_error}") from None
        raise SourceError(f"bad encoding declaration: {error.msg}") from None
    try:
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as error:
        raise SourceError(f"cannot be decoded as {encoding}: {error}") from None
    return SourceText(text, encoding)


def encode(source: SourceText, text: str) -> bytes:
    return text.encode(source.encoding)


def syntax_reason(line: int | None, column: int | None, message: str, cell: int | None = None) -> str:
    """``syntax error at [cell C, ]line L[, column N]: message`` (SYNTAX_REASON reads it)."""
    where = (f"cell {cell}, " if cell is not None else "") + f"line {line}" + (f", column {column}" if column else "")
    return f"syntax error at {where}: {message}"


def check_syntax(text: str, filename: str) -> None:
    """CPython's own parser first: it rejects what would crash LibCST's (deep nesting) cleanly."""
    try:
        ast.parse(text, filename=filename)
    except SyntaxError as error:
        raise SourceError(syntax_reason(error.lineno, error.offset, error.msg)) from None
    except (ValueError, RecursionError, MemoryError) as error:
        # CPython's parser reports a stack overflow on very deep nesting as an empty MemoryError.
        detail = str(error) or "nested too deeply for Python's parser"
        raise SourceError(f"cannot be parsed: {detail}") from None


def check_size(text: str) -> None:
    """SourceError for a source too large to analyse: LibCST needs minutes and gigabytes for it."""
    if len(text) > MAX_PARSED_CHARS:
        raise SourceError(
            f"too large to analyse ({len(text) / 1e6:.1f} million characters; the limit is "
            f"{MAX_PARSED_CHARS / 1e6:g} million)"
        )


def parse(text: str, filename: str, syntax_checked: bool = False) -> cst.Module:
    """A LibCST module for text that CPython accepts; SourceError otherwise.

    ``syntax_checked``: the caller already had CPython parse this very text.
    """
    check_size(text)
    if not syntax_checked:
        check_syntax(text, filename)
    import libcst as cst  # lazily: most files never get here

    try:
        with unvalidated():
            return cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SourceError(f"LibCST cannot parse it: {message}") from None


# LibCST validates every node it creates (``CSTNode.__post_init__``), also each node its parser
# builds from text, where nothing can be wrong: about a fifth of a parse. A check per node of
# which thread made it would cost as much, so validation is only skipped while no other Python
# thread runs (the parse starts none); the nodes a rewrite builds are never made inside.
# ``_post_init`` stands in for LibCST's method from the first parse on: assigning a class
# attribute of CSTNode around every parse would reset the attribute caches of all its
# subclasses, which cost more than the per-file work they save.
_VALIDATE: list[Callable[[Any], None]] = []  # LibCST's own __post_init__, once _post_init replaces it
_skipping = False


def _post_init(self: Any) -> None:
    if not _skipping:
        _VALIDATE[0](self)


@contextmanager
def unvalidated() -> Iterator[None]:
    global _skipping
    import libcst as cst

    if not _VALIDATE:
        own = cst.CSTNode.__dict__.get("__post_init__")
        if own is not None:
            _VALIDATE.append(own)
            cst.CSTNode.__post_init__ = _post_init  # type: ignore[method-assign]
    if _skipping or cst.CSTNode.__dict__.get("__post_init__") is not _post_init or threading.active_count() != 1:
        yield  # another thread might make nodes meanwhile, or LibCST validates elsewhere
        return
    _skipping = True
    try:
        yield
    finally:
        _skipping = False
