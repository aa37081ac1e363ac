"""Stage 13b: results -> machine formats: concise, JSON, GitHub workflow commands, SARIF 2.1.0, JUnit XML.

Plain data in, one string out; no colour, no rich. The rule metadata comes from codes.py.

A file that could not be processed is an entry too, as ruff reports it: `E902` at 1:1 (it
could not be read, decoded or analysed) or `invalid-syntax` at the syntax error. Neither is a
rule: they cannot be selected or ignored, and the run still exits 2.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote
from xml.etree import ElementTree as ET

from vjp_migrate.codes import BY_CODE, CODES, explain
from vjp_migrate.model import Diagnostic, FileResult, FixSafety, Status
from vjp_migrate.source import SYNTAX_REASON

IO_ERROR, SYNTAX_ERROR = "E902", "invalid-syntax"
_ERROR_RULES = {
    IO_ERROR: ("io-error", "A file that could not be read, decoded or analysed; the message says why."),
    SYNTAX_ERROR: ("invalid-syntax", "A file that is not valid Python; the location is the syntax error."),
}
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/vjp-migrate/vjp-migrate"


@dataclass(frozen=True)
class Problem:
    """A file that could not be processed, as the machine formats report it."""

    code: str
    path: str
    line: int
    column: int
    message: str
    reason: str  # the whole one-line reason, as on stderr
    cell: int | None = None  # in a notebook: the code cell (1-based) the line is counted in

    def location(self) -> str:
        """``path:line:col``, or ``path:cell N:line:col`` (report.location's form for findings)."""
        cell = f":cell {self.cell}" if self.cell is not None else ""
        return f"{self.path}{cell}:{self.line}:{self.column}"


def problem(result: FileResult) -> Problem:
    """The entry for a FAILED result: its syntax error's position (source.check_syntax's reason), else 1:1."""
    reason = result.reason or ""
    found = SYNTAX_REASON.fullmatch(reason)
    if found is None:
        return Problem(IO_ERROR, str(result.path), 1, 1, reason, reason)
    column = int(found["column"] or 1)
    cell = int(found["cell"]) if found["cell"] else None
    return Problem(SYNTAX_ERROR, str(result.path), int(found["line"]), column, found["message"], reason, cell)


def _problems(results: Sequence[FileResult]) -> dict[int, Problem]:
    return {i: problem(r) for i, r in enumerate(results) if r.status is Status.FAILED}


def _problem_json(p: Problem) -> dict[str, object]:
    """The same keys as a finding's entry (report.diagnostic_json), so readers need no special case."""
    return {
        "code": p.code,
        "message": p.message,
        "path": p.path,
        "line": p.line,
        "column": p.column,
        "end_line": p.line,
        "end_column": p.column,
        "function": None,
        "argument": None,
        "index": None,
        "fixable": False,
        "fix_safety": FixSafety.NONE.value,
        "reasons": [],
        **({"cell": p.cell} if p.cell is not None else {}),
    }


def render_json(results: Sequence[FileResult]) -> str:
    """A JSON array: each file's problem or findings, in the order of the results."""
    from vjp_migrate.report import diagnostic_json

    problems = _problems(results)
    entries = [
        entry
        for i, r in enumerate(results)
        for entry in ([_problem_json(problems[i])] if i in problems else [])
        + [diagnostic_json(d) for d in r.diagnostics]
    ]
    return json.dumps(entries, indent=2) + "\n"


def render_concise(results: Sequence[FileResult]) -> str:
    """flake8's `path:line:col: CODE message`, a line per finding and per problem (ruff's
    `invalid-syntax:`, a name and no code, is followed by a colon)."""
    from vjp_migrate.report import concise_line

    problems = _problems(results)
    lines = []
    for i, r in enumerate(results):
        if i in problems:
            p = problems[i]
            code = f"{p.code}:" if p.code == SYNTAX_ERROR else p.code
            lines.append(f"{p.location()}: {code} {p.message}")
        lines.extend(concise_line(d) for d in r.diagnostics)
    return "".join(line + "\n" for line in lines)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(results: Sequence[FileResult]) -> str:
    """One `::error` workflow command per finding (and per file that could not be processed)."""
    out = []
    for result in results:
        if result.status is Status.FAILED:
            p = problem(result)
            where = _escape_property(p.path) + (f",line={p.line},col={p.column}" if p.code == SYNTAX_ERROR else "")
            out.append(f"::error file={where},title={p.code}::{_escape_data(p.reason)}")
        for d in result.diagnostics:
            props = (
                f"file={_escape_property(d.path)},line={d.line},col={d.column},"
                f"endLine={d.end_line},endColumn={d.end_column},title={d.code}"
            )
            cell = f"cell {d.cell}: " if d.cell is not None else ""  # the line is within that cell
            out.append(f"::error {props}::{_escape_data(cell + d.message)}")
    return "".join(line + "\n" for line in out)


def _uri(path: str) -> str:
    candidate = Path(path)
    # A name of undecodable bytes (surrogate escapes) is quoted as those bytes, as as_uri does.
    return candidate.as_uri() if candidate.is_absolute() else quote(candidate.as_posix(), errors="surrogateescape")


def _rule(code: str) -> dict[str, object]:
    c = BY_CODE[code]
    return {
        "id": c.code,
        "name": c.name,
        "shortDescription": {"text": c.what.split(". ")[0].rstrip(".") + "."},
        "fullDescription": {"text": c.what},
        "help": {"text": c.why, "markdown": explain(c.code)},
        "defaultConfiguration": {"enabled": c.default, "level": "error"},
        "properties": {"fixSafety": c.fix_safety.value, "tags": ["jax", "custom_vjp"]},
    }


def _replacements(old: str, new: str) -> list[dict[str, object]]:
    """The change from old to new as SARIF replacements (character offsets in the old text)."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    found: list[dict[str, object]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        found.append(
            {
                "deletedRegion": {"charOffset": starts[i1], "charLength": starts[i2] - starts[i1]},
                "insertedContent": {"text": "".join(new_lines[j1:j2])},
            }
        )
    return found


Change = dict[str, object]  # a SARIF artifactChange: one file's replacements


class _Changes:
    """The artifactChanges of each finding's fix, from the results that carry migrated text."""

    def __init__(self, results: Sequence[FileResult]) -> None:
        self._by_path = {str(r.path): r for r in results}
        self._made: dict[str, Change | None] = {}

    def _of(self, result: FileResult) -> Change | None:
        """The change that migrates the file; None when it is not known (no migrated text, a notebook)."""
        key = str(result.path)
        if key not in self._made:
            known = result.old_text is not None and result.new_text is not None
            if not known or result.path.suffix == ".ipynb" or any(d.cell is not None for d in result.diagnostics):
                self._made[key] = None
            else:
                replacements = _replacements(result.old_text or "", result.new_text or "")
                self._made[key] = {"artifactLocation": {"uri": _uri(key)}, "replacements": replacements}
        return self._made[key]

    def fix(self, d: Diagnostic, result: FileResult) -> list[Change] | None:
        """Every file the fix of ``d`` changes: its own and the other files of a multi-file
        migration (``also_touches``), which `fix` writes together; None when one of them is not
        known, since applying part of such a migration breaks the code."""
        if not d.fixable or not result.changed:
            return None
        changes = []
        for member in (result, *(self._by_path.get(path) for path in d.also_touches)):
            change = None if member is None else self._of(member)
            if member is None or change is None:
                return None
            if member.changed:
                changes.append(change)
        return changes


def _sarif_result(d: Diagnostic, index: int, fix: list[Change] | None) -> dict[str, object]:
    region = {"startLine": d.line, "startColumn": d.column, "endLine": d.end_line, "endColumn": d.end_column}
    result: dict[str, object] = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(d.path)}, "region": region}}],
        "properties": {
            "function": d.function,
            "argument": d.argument,
            "index": d.index,
            "fixSafety": d.fix_safety.value,
            **({"cell": d.cell} if d.cell is not None else {}),
        },
    }
    title = BY_CODE[d.code].fix_title
    if fix and title:
        result["fixes"] = [{"description": {"text": title.format(argument=d.argument)}, "artifactChanges": fix}]
    return result


def _sarif_problem(p: Problem, index: int) -> dict[str, object]:
    region = {"startLine": p.line, "startColumn": p.column}
    return {
        "ruleId": p.code,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": p.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(p.path)}, "region": region}}],
        **({"properties": {"cell": p.cell}} if p.cell is not None else {}),
    }


def render_sarif(results: Sequence[FileResult]) -> str:
    """A SARIF 2.1.0 log: every rule's metadata, one result per finding, fixes when known.

    A fix is attached when the results carry the migrated text (`fix --diff` style runs); it
    covers the whole file's migration, since sites in one file are rewritten together, and
    every other file of a migration that spans several (or there is none). A file
    that could not be processed is a result (as ruff reports it, for code scanning) and a
    tool execution notification (the run was not successful).
    """
    from vjp_migrate import __version__

    index = {c.code: i for i, c in enumerate(CODES)}
    rules = [_rule(c.code) for c in CODES]
    sarif_results: list[dict[str, object]] = []
    notifications = []
    changes = _Changes(results)
    for r in results:
        if r.status is Status.FAILED:
            p = problem(r)
            if p.code not in index:
                index[p.code] = len(rules)
                name, text = _ERROR_RULES[p.code]
                rules.append({"id": p.code, "name": name, "shortDescription": {"text": text}})
            sarif_results.append(_sarif_problem(p, index[p.code]))
        sarif_results.extend(_sarif_result(d, index[d.code], changes.fix(d, r)) for d in r.diagnostics)
        if r.status is Status.FAILED:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": f"{r.path}: {r.reason}"},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(str(r.path))}}}],
                }
            )
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "vjp-migrate",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
        "results": sarif_results,
        "columnKind": "unicodeCodePoints",
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


# What XML 1.0 cannot hold: control characters but tab and newlines, lone surrogates (a file
# name's undecodable bytes), U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if 0xDC80 <= point <= 0xDCFF:  # the byte a surrogate escape stands for
        return f"\\x{point - 0xDC00:02x}"
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def _xml_text(text: object) -> str:
    return _NOT_XML.sub(_xml_escape, str(text))


def render_junit(results: Sequence[FileResult]) -> str:
    """JUnit XML: a test case per finding (a failure), per clean file, per unreadable file (an error)."""
    suite = ET.Element("testsuite", name="vjp-migrate")
    tests = failures = errors = 0
    for r in results:
        path = _xml_text(r.path)
        if r.status is Status.FAILED:
            case = ET.SubElement(suite, "testcase", classname=path, name=path)
            kind, reason = problem(r).code, _xml_text(r.reason or "")
            ET.SubElement(case, "error", message=reason, type=kind).text = f"{path}: error: {reason}"
            tests, errors = tests + 1, errors + 1
            continue
        if not r.diagnostics:
            ET.SubElement(suite, "testcase", classname=path, name=path)
            tests += 1
        for d in r.diagnostics:
            cell = f"cell {d.cell}:" if d.cell is not None else ""
            name = _xml_text(f"{d.code} {d.function}" + (f" `{d.argument}`" if d.argument else ""))
            message, where = _xml_text(d.message), _xml_text(d.path)
            case = ET.SubElement(suite, "testcase", classname=where, name=name, line=str(d.line))
            failure = ET.SubElement(case, "failure", message=message, type=d.code)
            safety = "" if d.fix_safety is FixSafety.NONE else f" (fix: {d.fix_safety.value})"
            failure.text = f"{where}:{cell}{d.line}:{d.column}: {d.code} {message}{safety}"
            tests, failures = tests + 1, failures + 1
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors)}
    suite.attrib.update(counts)
    root = ET.Element("testsuites", {"name": "vjp-migrate", **counts})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
