"""Rewrite, step 3: comments the migration makes false ("no residuals to save") corrected, and
the comment lines a removed node carried."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from vjp_migrate import walk

# The first clause of a comment saying fwd saves nothing ("no residual values to save", "nothing
# to save: ..."), which the migration makes false.
_NOTHING_SAVED = re.compile(
    r"(?i)(?P<lead>#\s*)(?P<clause>(?:no|nothing)\b[^:;,.()]*\b(?:residuals?|save|saved)\b[^:;,.()]*)"
)


def comment_lines(node: cst.CSTNode) -> list[cst.EmptyLine]:
    """The comments inside a node that goes, as lines to put above its statement."""
    return [cst.EmptyLine(comment=c) for c in walk.comments(node)]


def saved_nothing(small: cst.BaseSmallStatement | None) -> bool:
    """``return out, None``, ``return out, ()`` or ``return out, []``."""
    value = small.value if isinstance(small, cst.Return) else None
    if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
        return False
    residual = value.elements[1].value
    return (isinstance(residual, cst.Name) and residual.value == "None") or (
        isinstance(residual, (cst.Tuple, cst.List)) and not residual.elements
    )


def spoken(names: Sequence[str]) -> str:
    """``lo``, ``lo and hi``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def corrected(comment: str, said: str) -> str | None:
    """The comment with its "nothing is saved" clause replaced by ``said`` (None: no such clause)."""
    found = _NOTHING_SAVED.match(comment)
    if found is None:
        return None
    clause = found["clause"].rstrip()
    said = said[0].upper() + said[1:] if clause[0].isupper() else said
    return found["lead"] + said + comment[found.start("clause") + len(clause) :]


def is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
