"""Rewrite, step 2b: the rules' PEP 484 type comments (plan.type_comments) retyped as annotations
are: the function's `# type: (A, B) -> R` lists the parameters left, with their new types, and
the new return type; a parameter's `# type: A` its new type. The function's comment stays the
first line under the def line, above any line the change puts first in the body."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import libcst as cst

from vjp_migrate.model import TypeComments, TypedParam
from vjp_migrate.plan.type_comments import leading_lines, type_text
from vjp_migrate.rewrite.annotations import new_annotation

_HEAD = "# type: "


def _code(expr: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(expr)


def _new_type(comments: TypeComments, node: cst.Param | cst.FunctionDef) -> cst.BaseExpression | None:
    """The type of a parameter of the view (or its return type, for the view) after the change."""
    old = node.annotation if isinstance(node, cst.Param) else node.returns
    for retyped, new in comments.retyped:
        if retyped is node:
            changed = new_annotation(old, new)
            return changed.annotation if changed is not None else None
    return old.annotation if old is not None else None


def signature(comments: TypeComments, gone: AbstractSet[int]) -> str | None:
    """The function's new comment without the parameters at the indexes ``gone`` (None: it goes,
    a type being no longer known where the module has no name for `typing.Any`)."""
    assert comments.comment is not None
    if not comments.retyped and not (comments.listed and gone):
        return comments.comment.value
    types: list[str | None] = []
    for index, typed in enumerate(comments.params if comments.listed else ()):
        if index in gone or (index == 0 and comments.self_omitted):
            continue
        found = _new_type(comments, typed.view)
        star = typed.param.star if isinstance(typed.param.star, str) else ""
        types.append(star + _code(found) if found is not None else None)
    returned = _new_type(comments, comments.view)
    written = [_code(returned) if returned is not None else None, *types]
    if None in written and comments.any_type is None:
        return None
    result, *args = (text or comments.any_type or "" for text in written)
    listed = ", ".join(args) if comments.listed else "..."
    return f"{comments.head}({listed}) -> {result}{comments.tail}"


def param_comment(comments: TypeComments, typed: TypedParam) -> str | None:
    """A parameter's new comment (None: its type is no longer known, and a parameter without a
    type comment is of any type)."""
    found = _new_type(comments, typed.view)
    return f"{typed.head or _HEAD}{_code(found)}{typed.tail}" if found is not None else None


def with_param_comment(param: cst.Param, text: str | None) -> cst.Param:
    """``param`` with the comment ending its line (after its comma, or before `)`) now ``text``:
    the type comment replaced, or written before a comment of another kind (`# type: A  # res`)
    or where there is none; none when ``text`` is None. A parameter whose line goes on (`a, b`)
    takes no comment."""
    comma = param.comma if isinstance(param.comma, cst.Comma) else None
    whitespace = comma.whitespace_after if comma is not None else param.whitespace_after_param
    if not isinstance(whitespace, cst.ParenthesizedWhitespace):
        return param
    line = whitespace.first_line
    other = line.comment.value if line.comment is not None and type_text(line.comment) is None else None
    if other is not None:
        if text is None:
            return param
        text = f"{text}  {other}"
    gap = line.whitespace if line.comment is not None else cst.SimpleWhitespace("  ")
    line = line.with_changes(
        comment=cst.Comment(text) if text is not None else None,
        whitespace=gap if text is not None else cst.SimpleWhitespace(""),
    )
    whitespace = whitespace.with_changes(first_line=line)
    if comma is not None:
        return param.with_changes(comma=comma.with_changes(whitespace_after=whitespace))
    return param.with_changes(whitespace_after_param=whitespace)


def with_signature(
    original: cst.FunctionDef, updated: cst.FunctionDef, comments: TypeComments, text: str | None
) -> cst.FunctionDef:
    """``updated`` with the function's comment ``text`` (None: gone) where the comment was: on
    the def line, or first above the body's first statement, with the lines above it (a
    statement the change put first, an unpack, goes below it; one it removed, a `del`, took it)."""
    body = updated.body
    before = original.body
    assert isinstance(body, cst.IndentedBlock) and isinstance(before, cst.IndentedBlock)
    if comments.line is None:
        header = body.header.with_changes(
            comment=cst.Comment(text) if text is not None else None,
            whitespace=body.header.whitespace if text is not None else cst.SimpleWhitespace(""),
        )
        return updated.with_changes(body=body.with_changes(header=header))
    above = list(leading_lines(before.body[0])[: comments.line + 1])
    statements = list(body.body)
    for index, statement in enumerate(statements):
        lines = leading_lines(statement)
        if len(lines) >= len(above) and all(a.deep_equals(b) for a, b in zip(lines, above, strict=False)):
            statements[index] = statement.with_changes(leading_lines=lines[len(above) :])
            break
    own = above.pop()
    if text is not None:
        above.append(own.with_changes(comment=cst.Comment(text)))
    statements[0] = statements[0].with_changes(leading_lines=[*above, *leading_lines(statements[0])])
    return updated.with_changes(body=body.with_changes(body=statements))
