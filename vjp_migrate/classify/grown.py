"""Classify, step 5b: ``grown_items``, the items of a local list or tuple a def builds and grows
before it loops over it (`ws = [w1]`, `ws += [w2]`, `ws.append(w3)`, then `for w in ws`): each is
a value the loop target takes, in a rule (uses_names.py) or in a jitted caller (call_locals.py).
A local changed any other way (`ws.pop()`, `ws[0] = v`, a second assignment) has items this does
not know."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.context import Context, function_locals, own_body

_SEQUENCES = (cst.List, cst.Tuple)


def grown_items(
    name: str, func: cst.FunctionDef, ctx: Context, loop: cst.CSTNode
) -> tuple[cst.BaseExpression, ...] | None:
    """The items ``name``, a local of ``func`` bound once to a list or tuple literal and grown only
    by `+=` of a literal, `.append`, `.insert` or `.extend` of a literal, holds when ``loop`` starts;
    None when it is bound or changed otherwise."""
    bound = function_locals(func, ctx).bindings.get(name, [])
    first = bound[0] if bound else None
    if first is None or not isinstance(first.node, (cst.Assign, cst.AnnAssign)) or first.values is None:
        return None
    start = first.values[0]
    if not isinstance(start, _SEQUENCES) or any(not isinstance(b.node, cst.AugAssign) for b in bound[1:]):
        return None
    growth = _Growth(name)
    for stmt in own_body(func):
        walk.visit(stmt, growth)
    if growth.spoiled:
        return None
    before = _before(ctx.line_of, loop)
    added = [item for node, items in growth.added for item in items if before(node)]
    return (*(element.value for element in start.elements), *added)


def _before(line_of: Callable[[cst.CSTNode], int | None], loop: cst.CSTNode) -> Callable[[cst.CSTNode], bool]:
    """Whether a node is on a line before the loop's (where the loop starts and ends is not known)."""
    start = line_of(loop)

    def before(node: cst.CSTNode) -> bool:
        line = line_of(node)
        return start is not None and line is not None and line < start

    return before


class _Growth(cst.CSTVisitor):
    """The items each statement growing one local adds (`+=`, `.append`, `.insert`, `.extend`), and
    whether the local is changed any other way."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.added: list[tuple[cst.CSTNode, tuple[cst.BaseExpression, ...]]] = []
        self.spoiled = False

    def _is_local(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value == self.name

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_local(node.target):
            if isinstance(node.operator, cst.AddAssign) and isinstance(node.value, _SEQUENCES):
                self.added.append((node, tuple(element.value for element in node.value.elements)))
            else:
                self.spoiled = True
        elif isinstance(node.target, cst.Subscript) and self._is_local(node.target.value):
            self.spoiled = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_local(node.target.value):
            self.spoiled = True

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_local(node.target.value):
            self.spoiled = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and self._is_local(func.value)):
            return
        values = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        method = func.attr.value
        if method == "append" and len(values) == len(node.args) == 1:
            self.added.append((node, (values[0],)))
        elif method == "insert" and len(values) == len(node.args) == 2:
            self.added.append((node, (values[1],)))
        elif method == "extend" and len(values) == len(node.args) == 1 and isinstance(values[0], _SEQUENCES):
            self.added.append((node, tuple(element.value for element in values[0].elements)))
        else:
            self.spoiled = True
