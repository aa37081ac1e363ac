"""Suppressions: `# noqa` / `# noqa: VJP001` on a custom_vjp's decorator or def lines, and --add-noqa.

Like flake8 and ruff: a bare `# noqa` silences every code, `# noqa: VJP001,VJP003` the codes
named. A suppressed site is reported nowhere and `fix` leaves it alone.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Sequence

from vjp_migrate.model import Diagnostic, FixSafety, SiteDecision, VjpSite
from vjp_migrate.source import lf_endings, physical_lines

# flake8's own spelling: `# noqa`, `#noqa:VJP001`, `# NOQA: VJP001, VJP002`. A code is letters then
# digits (or this tool's prefix `VJP`), so words after the codes (`noqa: E501 generated`) are no codes.
_CODE = r"(?:[A-Z]+[0-9]+|VJP)\b"
NOQA = re.compile(rf"#\s*noqa(?::[\s]?(?P<codes>{_CODE}(?:[,\s]+{_CODE})*))?", re.IGNORECASE)
ALL = None  # a bare noqa: every code

NoqaMap = dict[int, "frozenset[str] | None"]
HeaderOf = Callable[[VjpSite], range]


def _parse(comment: str) -> frozenset[str] | bool | None:
    """The codes a comment suppresses, ALL for a bare noqa, False when it is no noqa."""
    match = NOQA.search(comment)
    if match is None:
        return False
    codes = match.group("codes")
    return frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else ALL


def silences(comment: str, code: str) -> bool:
    """Whether the comment is a `# noqa` for ``code`` (`# noqa`, `# noqa: F401`, `# noqa: F`)."""
    codes = _parse(comment)
    return codes is not False and _covers(codes, code)  # type: ignore[arg-type]


def noqa_lines(text: str) -> NoqaMap:
    """Line number -> the codes a `# noqa` comment on that line suppresses (None: all)."""
    return {line: codes for line, (_, codes) in _noqa_comments(text).items()}


def _noqa_comments(text: str) -> dict[int, tuple[int, frozenset[str] | None]]:
    """Line number -> where its `# noqa` comment starts and the codes it suppresses (None: all)."""
    found: dict[int, tuple[int, frozenset[str] | None]] = {}
    if "noqa" not in text.lower():
        return found
    try:
        comments = [(tok.start[0], tok.start[1], tok.string) for tok in _tokens(text) if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):  # fall back to the lines, as flake8 does for bad files
        comments = [(n, line.find("#"), line) for n, line in enumerate(physical_lines(text), 1) if "#" in line]
    for line, column, comment in comments:
        codes = _parse(comment)
        if codes is not False:
            found[line] = (column, codes)  # type: ignore[assignment]
    return found


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of ``text``, its lines numbered as Python does (tokenize ends lines at `\\n` only)."""
    return tokenize.generate_tokens(io.StringIO(lf_endings(text)).readline)


def _covers(codes: frozenset[str] | None, code: str) -> bool:
    return codes is ALL or code in codes or any(code.startswith(c) for c in codes)


def suppress(
    text: str,
    decisions: Sequence[SiteDecision],
    diagnostics: Sequence[Diagnostic],
    header_of: HeaderOf,
) -> tuple[tuple[SiteDecision, ...], tuple[Diagnostic, ...], tuple[Diagnostic, ...]]:
    """Drop suppressed findings; a site with a suppressed finding is not fixed either. Returns
    the decisions, the findings kept and the findings silenced."""
    noqa = noqa_lines(text)
    if not noqa:
        return tuple(decisions), tuple(diagnostics), ()
    kept_decisions: list[SiteDecision] = []
    silenced: set[Diagnostic] = set()
    unfixable: set[range] = set()
    for decision in decisions:
        header = header_of(decision.site)
        mine = [d for d in diagnostics if d.line in header]
        hit = [d for d in mine if any(line in noqa and _covers(noqa[line], d.code) for line in header)]
        silenced.update(hit)
        if hit:
            unfixable.add(header)
            decision = dataclasses.replace(decision, plan=None, moved=())
        kept_decisions.append(decision)
    kept = tuple(
        dataclasses.replace(d, fixable=False, fix_safety=FixSafety.NONE) if any(d.line in h for h in unfixable) else d
        for d in diagnostics
        if d not in silenced
    )
    return tuple(kept_decisions), kept, tuple(d for d in diagnostics if d in silenced)


def _uncommentable(text: str) -> set[int]:
    """The lines whose end a comment cannot go after: inside a string that spans lines (the
    comment would be part of it) or continued by a backslash (a syntax error after it)."""
    blocked: set[int] = set()
    commented: set[int] = set()
    try:
        for tok in _tokens(text):
            if tok.end[0] > tok.start[0]:
                blocked.update(range(tok.start[0], tok.end[0]))
            elif tok.type == tokenize.COMMENT:
                commented.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    for number, line in enumerate(physical_lines(text), 1):
        if line.rstrip("\r\n").endswith("\\") and number not in commented:
            blocked.add(number)
    return blocked


def add_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> tuple[str, int]:
    """Write `# noqa: CODE` on the line of each finding (merging with an existing noqa), or on the
    first line after it that can take a comment, still the site's header where a noqa silences it.

    Returns the new text and the number of lines changed.
    """
    lines = physical_lines(text)  # as the findings' lines are numbered
    blocked = _uncommentable(text)
    wanted: dict[int, set[str]] = {}
    for d in diagnostics:
        at = d.line
        while at in blocked:
            at += 1
        if 1 <= at <= len(lines):
            wanted.setdefault(at, set()).add(d.code)
    if not wanted:
        return text, 0
    existing = _noqa_comments(text)
    changed = 0
    for number, codes in sorted(wanted.items()):
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        if number in existing:
            column, old = existing[number]
            if old is ALL or codes <= old:
                continue
            match = NOQA.search(body, column)  # in the comment, not in a string before it
            assert match is not None
            merged = ", ".join(sorted(old | codes))
            body = body[: match.start()] + f"# noqa: {merged}" + body[match.end() :]
        else:
            body = body.rstrip() + f"  # noqa: {', '.join(sorted(codes))}"
        lines[number - 1] = body + ending
        changed += 1
    new = "".join(lines)
    if changed and _parses(text) and not _parses(new):  # never write a file that no longer parses
        return text, 0
    return new, changed


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True
