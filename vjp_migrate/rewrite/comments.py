"""Rewrite, step 3: comments the migration makes false ("no residuals to save") corrected, and
the comment lines a removed node carried."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.plan.residuals import saves_nothing

# Words by which the comment at the end of a `del` line is about the deletion, not about the code
# around it: the names are unused, not needed, static, saved (or not)...
_ABOUT_A_DEL = re.compile(
    r"(?i)\b(?:unused|used|needed|unneeded|ignored?|static|nondiff\w*|non-diff\w*|saved?|residuals?"
    r"|silence\w*|lint\w*|pylint|pyright|mypy|noqa|type:\s*ignore|del(?:ete|eted)?)\b"
)
# The first clause of a comment saying fwd saves nothing ("no residual values to save", "nothing
# to save: ..."), which the migration makes false.
_NOTHING_SAVED = re.compile(
    r"(?i)(?P<lead>#\s*)(?P<clause>(?:no|nothing)\b[^:;,.()]*\b(?:residuals?|save|saved)\b[^:;,.()]*)"
)


def comment_lines(node: cst.CSTNode) -> list[cst.EmptyLine]:
    """The comments inside a node that goes, as lines to put above its statement."""
    return [cst.EmptyLine(comment=c) for c in walk.comments(node)]


def saved_nothing(small: cst.BaseSmallStatement | None) -> bool:
    """``return out, None``, ``return out, ()``, ``return out, []`` or ``return out, {}``."""
    value = small.value if isinstance(small, cst.Return) else None
    return isinstance(value, cst.Tuple) and len(value.elements) == 2 and saves_nothing(value.elements[1].value)


def corrected(comment: str, said: str) -> str | None:
    """The comment with its "nothing is saved" clause replaced by ``said`` (None: no such clause)."""
    found = _NOTHING_SAVED.match(comment)
    if found is None:
        return None
    clause = found["clause"].rstrip()
    said = said[0].upper() + said[1:] if clause[0].isupper() else said
    return found["lead"] + said + comment[found.start("clause") + len(clause) :]


def describes_del(comment: str, names: Sequence[str]) -> bool:
    """Whether the comment at the end of `del <names>` is about them (names one, or says they
    are unused, static, not needed...), so it goes with the `del`; any other comment describes
    the code around it (`# straight-through estimator`) and stays."""
    text = comment.lstrip("#")
    return _ABOUT_A_DEL.search(text) is not None or any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def kept_del_comments(
    blocks: Sequence[cst.IndentedBlock], gone: Mapping[int, Sequence[str]]
) -> dict[int, list[cst.EmptyLine]]:
    """The comment lines that the statement line following a `del` line that goes takes above
    it: that line's own comment when it is not about the deleted names (describes_del), by the
    id of the statement taking it (a line of `del`s of its own, ``gone``: id -> names): a
    statement line or a compound statement (`if`, `for`, a nested `def`...). When no statement
    follows in the block, nothing takes it."""
    heirs: dict[int, list[cst.EmptyLine]] = {}
    for block in blocks:
        pending: list[cst.EmptyLine] = []
        for stmt in block.body:
            names = gone.get(id(stmt))
            if names is not None:
                comment = stmt.trailing_whitespace.comment if isinstance(stmt, cst.SimpleStatementLine) else None
                if comment is not None and not describes_del(comment.value, names):
                    pending.append(cst.EmptyLine(comment=comment))
                continue
            if pending:
                heirs[id(stmt)] = pending
            pending = []
    return heirs


def left_above(stmt: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    """The lines above a statement line that goes which stay, for the next statement to take
    above its own: comments set apart by a blank line (a section header); the comment lines
    right above it describe it and go with it, as the blank lines below the last comment do
    (the next statement keeps its own)."""
    lines = list(stmt.leading_lines)
    while lines and lines[-1].comment is not None:
        lines.pop()
    while lines and lines[-1].comment is None:
        lines.pop()
    return lines


def is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
