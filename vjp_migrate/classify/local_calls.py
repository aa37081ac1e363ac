"""Classify, step 8e: a site local to a function whose name never leaves it (only called, and its
`.defvjp` set), every call of which leaves an argument at its literal default (`def eval(pos, mp,
pout=1)` called as `eval(pos, mp)`): that argument is the literal, whoever runs the function."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.context import Context
from vjp_migrate.classify.expressions import code_text, param_named
from vjp_migrate.model import ArgKind, Evidence, VjpSite
from vjp_migrate.sites import body_statements, scope_statements


def left_at_default(
    site: VjpSite,
    module: cst.Module,
    ctx: Context,
    calls: list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]],
    index: int,
    name: str,
) -> Evidence | None:
    """Why the argument ``name`` (at ``index``) is its default everywhere, if it is."""
    primal = site.primal
    if primal is None or site.primal_expr is not None or id(primal) not in ctx.enclosing or not calls:
        return None
    param = param_named(primal, name)
    default = param.default if param is not None else None
    if default is None or not _literal(default):
        return None
    owner = _owner(module, primal)
    if owner is None or _escapes(owner, site.name) or not all(any(c is owner for c in callers) for _, callers in calls):
        return None
    if not all(_leaves(call, index, name) for call, _ in calls):
        return None
    text = (
        f"every call of the local site `{site.name}` (whose name never leaves `{owner.name.value}`) leaves it "
        f"at its default `{code_text(default)}`"
    )
    return Evidence(ArgKind.STATIC, text, ctx.line_of(param) if param is not None else None)


def _literal(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    if isinstance(value, cst.Name):
        return value.value in ("None", "True", "False")
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString))


def _owner(module: cst.Module, primal: cst.FunctionDef) -> cst.FunctionDef | None:
    """The function whose own scope defines ``primal``."""
    pending = [stmt for stmt in scope_statements(module.body) if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))]
    while pending:
        node = pending.pop()
        own = [s for s in scope_statements(body_statements(node)) if isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        if isinstance(node, cst.FunctionDef) and any(s is primal for s in own):
            return node
        pending.extend(own)
    return None


class _Uses(cst.CSTVisitor):
    """The occurrences of a name in a function, and those that only call it or set its rules."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[int] = []
        self.kept: set[int] = set()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.seen.append(id(node))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.kept.add(id(node.func))
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "defvjp":
            self.kept.add(id(node.func.value))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.kept.add(id(node.name))


def _escapes(owner: cst.FunctionDef, name: str) -> bool:
    """Whether ``owner`` uses ``name`` otherwise than by calling it or setting its rules (returned,
    passed, stored: a caller outside might then pass any value)."""
    uses = _Uses(name)
    walk.visit(owner.body, uses)
    return any(node not in uses.kept for node in uses.seen)


def _leaves(call: cst.Call, index: int, name: str) -> bool:
    """Whether ``call`` passes nothing at ``index`` nor as ``name`` (and unpacks nothing)."""
    if any(arg.star for arg in call.args):
        return False
    positional = sum(arg.keyword is None for arg in call.args)
    return positional <= index and not any(arg.keyword is not None and arg.keyword.value == name for arg in call.args)
