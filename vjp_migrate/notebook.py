"""Stage 2b: Jupyter notebooks <-> one module of their code cells, so fwd/bwd may live in other cells.

IPython magics (`%matplotlib inline`, `!pip install x`, `x = !ls`, `obj?`) become placeholder
names while the code is analysed and come back verbatim; `%%` cell magics leave the whole cell
alone. Only the `source` of changed code cells is replaced: outputs, metadata, ids, key order,
indentation and the list-or-string form of `source` are kept, so the JSON diff is the code diff.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vjp_migrate.model import Diagnostic, Evidence, FixResult, Settings
from vjp_migrate.source import SYNTAX_REASON, SourceError, physical_lines, syntax_reason
from vjp_migrate.wording import spoken

SEPARATOR = "__vjp_migrate_cell__({})\n"  # a statement: no rewrite ever touches or drops it
SEPARATOR_LINE = re.compile(r"^__vjp_migrate_cell__\((\d+)\)\n", re.M)
PLACEHOLDER = "__vjp_migrate_magic_{}__"
# Lines a message or reason names in its text ("registered twice (lines 19 and 28)"): counted in
# the joined code, like the finding's own; code quoted in backticks is left as it is.
TEXT_LINES = re.compile(r"`[^`\n]*`|\b(?P<word>lines?) (?P<numbers>\d+(?:(?:, | and )\d+)*)\b")
MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:[%!]|[\w.]+\s*=\s*[%!]|[\w.]+\?{1,2}$|\?)")


@dataclass(frozen=True)
class Notebook:
    data: dict[str, Any]
    indent: int | None
    ensure_ascii: bool
    trailing_newline: bool
    code: str  # the code cells as one module
    cell_starts: dict[int, int]  # cell index -> first line of that cell in ``code``
    magics: dict[str, str]  # placeholder -> the original line
    newline: str = "\n"  # the JSON layout's: "\r\n" for a notebook saved on Windows


def _source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def read(raw: str) -> Notebook:
    """Parse a notebook's JSON text; SourceError when it is not a notebook."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise SourceError(f"not a Jupyter notebook: {error}") from None
    if not isinstance(data, dict):
        raise SourceError("not a Jupyter notebook: its JSON is no object")
    major = data.get("nbformat")
    if isinstance(major, int) and not isinstance(major, bool) and major < 4:  # cells under `worksheets`
        raise SourceError(f"not a Jupyter notebook of format 4: nbformat {major} is not supported")
    if "cells" not in data:
        raise SourceError("not a Jupyter notebook: it has no `cells`")
    cells = data["cells"]
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise SourceError("not a Jupyter notebook: `cells` is no list of cells")
    for number, cell in enumerate(cells):
        source = cell.get("source", "")
        if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise SourceError(f"not a Jupyter notebook: the source of cell {number} is no text")
    indent_match = re.match(r"\{\s*\n( *)\"", raw)
    indent = len(indent_match.group(1)) if indent_match else None
    ensure_ascii = raw.isascii() and "\\u" in raw
    magics: dict[str, str] = {}
    chunks: list[str] = []
    starts: dict[int, int] = {}
    line = 1
    for number, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or _source_text(cell).lstrip().startswith("%%"):
            continue
        text = _source_text(cell)
        lines = []
        for source_line in physical_lines(text):
            match = MAGIC.match(source_line)
            if match:
                key = PLACEHOLDER.format(len(magics))
                magics[key] = source_line.rstrip("\r\n")
                ending = source_line[len(source_line.rstrip("\r\n")) :]
                source_line = match.group("indent") + key + ending
            lines.append(source_line)
        body = "".join(lines)
        if body and not body.endswith("\n"):
            body += "\n"
        chunks.append(SEPARATOR.format(number))
        starts[number] = line + 1
        line += 1 + len(physical_lines(body))  # a lone CR ends a line too
        chunks.append(body)
    newline = "\r\n" if "\r\n" in raw else "\n"
    return Notebook(data, indent, ensure_ascii, raw.endswith("\n"), "".join(chunks), starts, magics, newline)


def split(notebook: Notebook, code: str) -> dict[int, str]:
    """The module text back as cell sources (magics restored), by cell index."""
    pieces = SEPARATOR_LINE.split(code)
    cells: dict[int, str] = {}
    for number, body in zip(pieces[1::2], pieces[2::2], strict=True):
        for key, original in notebook.magics.items():
            body = body.replace(key, original.lstrip(" \t"), 1) if key in body else body
        cells[int(number)] = body
    return cells


def runnable(raw: str) -> str:
    """A notebook's code cells as a module Python can import (`fix --verify`): the cell markers
    and IPython magics are `pass` (a magic's own effect, say `x = !ls`, is not had)."""
    notebook = read(raw)
    code = SEPARATOR_LINE.sub("pass\n", notebook.code)
    for key in notebook.magics:
        code = code.replace(key, "pass", 1)
    return code


def _restore_end(original: str, new: str) -> str:
    """A cell that had no final newline gets none back (Jupyter writes most cells that way)."""
    return new[:-1] if not original.endswith("\n") and new.endswith("\n") else new


def _in_cell_newline(old: str, new: str) -> str:
    """``new`` with every line ending in \\r\\n (or a lone \\r) when every line of the cell ``old``
    does: the lines the rewrite inserted come with the joined module's newline (its first
    separator's, \\n)."""
    endings = {line[len(line.rstrip("\r\n")) :] for line in physical_lines(old)} - {""}
    if endings not in ({"\r\n"}, {"\r"}):
        return new
    (ending,) = endings
    return re.sub(r"(?<!\r)\n", ending, new)


def write(notebook: Notebook, code: str) -> str:
    """The notebook's JSON text with the changed code cells replaced."""
    data = notebook.data
    for number, body in split(notebook, code).items():
        cell = data["cells"][number]
        old = _source_text(cell)
        if body == old or body == old + "\n":
            continue
        body = _in_cell_newline(old, _restore_end(old, body))
        cell["source"] = body.splitlines(keepends=True) if isinstance(cell.get("source"), list) else body
    text = json.dumps(data, indent=notebook.indent, ensure_ascii=notebook.ensure_ascii)
    text = text + "\n" if notebook.trailing_newline else text
    return text.replace("\n", notebook.newline)  # a JSON string holds its newlines escaped


def _cell_of(notebook: Notebook, line: int) -> tuple[int, int]:
    """The cell (0-based index) holding a line of the joined code, and that cell's first line."""
    number = max((n for n, start in notebook.cell_starts.items() if start <= line), default=0)
    return number, notebook.cell_starts.get(number, 1)


def _place(notebook: Notebook, line: int) -> tuple[int, int]:
    """The cell (1-based) holding a line of the joined code, and the line within it."""
    number, start = _cell_of(notebook, line)
    return number + 1, line - start + 1


def locate(notebook: Notebook, d: Diagnostic) -> Diagnostic:
    """A diagnostic with its line made relative to its cell (and the cell, 1-based, recorded),
    also the lines its message and reasons name."""
    cell, line = _place(notebook, d.line)
    reasons = tuple(_located_reason(notebook, e) for e in d.reasons)
    message = _located_text(notebook, d.message)
    return dataclasses.replace(
        d, message=message, line=line, end_line=line + d.end_line - d.line, cell=cell, reasons=reasons
    )


def _located_reason(notebook: Notebook, evidence: Evidence) -> Evidence:
    if evidence.path is not None:  # lines of another file
        return evidence
    text = _located_text(notebook, evidence.text)
    if evidence.line is None:
        return dataclasses.replace(evidence, text=text)
    cell, line = _place(notebook, evidence.line)
    return dataclasses.replace(evidence, text=text, line=line, cell=cell)


def _located_text(notebook: Notebook, text: str) -> str:
    """``text`` with the lines it names counted in their cells: `lines 19 and 28` becomes
    `cell 5, line 5 and cell 7, line 5`, `lines 3 and 5` of one cell `cell 2, lines 1 and 3`."""

    def located(found: re.Match[str]) -> str:
        if found["word"] is None:
            return found[0]
        places = [_place(notebook, int(line)) for line in re.findall(r"\d+", found["numbers"])]
        if len({cell for cell, _ in places}) == 1:
            return f"cell {places[0][0]}, {found['word']} {spoken([str(line) for _, line in places])}"
        return spoken([f"cell {cell}, line {line}" for cell, line in places])

    return TEXT_LINES.sub(located, text)


def _located_error(notebook: Notebook, error: SourceError) -> SourceError:
    """A syntax error located by cell, as findings are (`syntax error at cell 2, line 3, column 6: ...`)."""
    found = SYNTAX_REASON.fullmatch(str(error))
    if found is None:
        return error
    number, start = _cell_of(notebook, int(found["line"]))
    column = int(found["column"]) if found["column"] else None
    return SourceError(syntax_reason(int(found["line"]) - start + 1, column, found["message"], number + 1))


def add_noqa(raw: str, diagnostics: Sequence[Diagnostic]) -> str:
    """The notebook's JSON text with `# noqa: CODE` on the line of each finding (located by cell)."""
    from vjp_migrate.noqa import add_noqa as add_to_module

    notebook = read(raw)
    in_module = [
        dataclasses.replace(d, line=notebook.cell_starts[d.cell - 1] + d.line - 1)
        for d in diagnostics
        if d.cell is not None
    ]
    code, changed = add_to_module(notebook.code, in_module)
    return write(notebook, code) if changed else raw


def check_notebook(raw: str, path: str, settings: Settings) -> tuple[Diagnostic, ...]:
    """Findings in a notebook's code cells, located by cell."""
    from vjp_migrate.api import analyze

    notebook = read(raw)
    try:
        analysis = analyze(notebook.code, path, settings, parse_anyway=True)
    except SourceError as error:
        raise _located_error(notebook, error) from None
    return tuple(locate(notebook, d) for d in analysis.diagnostics)


def fix_notebook(raw: str, path: str, settings: Settings) -> FixResult:
    """The notebook's JSON text migrated (``source`` is JSON); findings located by cell."""
    from vjp_migrate.api import fix_source

    notebook = read(raw)
    try:
        result = fix_source(notebook.code, path=path, settings=settings)
    except SourceError as error:
        raise _located_error(notebook, error) from None
    new_raw = write(notebook, result.source) if result.changed else raw
    return FixResult(
        new_raw,
        new_raw != raw,
        tuple(locate(notebook, d) for d in result.diagnostics),
        tuple(locate(notebook, d) for d in result.fixed),
    )
