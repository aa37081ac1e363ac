"""Sites, step 1: the module's scopes and what they bind: statements through compound blocks,
parameters, a def's own returns, the def a name finds, top-level constants, literal numbers and
strings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted, node_types, target_names

_COMPOUND_TYPES = node_types(cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar)


@dataclass
class Scope:
    statements: list[cst.BaseStatement]
    parent: Scope | None
    is_class: bool
    qualprefix: str
    func: cst.FunctionDef | None = None  # the def whose body this is (a method's: its `self`)


def scope_statements(body: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseStatement]:
    """Statements of one Python scope, looking through if/for/with/try but not into defs."""
    for stmt in body:
        yield stmt
        if type(stmt) in _COMPOUND_TYPES and isinstance(stmt, cst.BaseCompoundStatement):
            for block in blocks_of(stmt):
                yield from scope_statements(block)


def blocks_of(stmt: cst.BaseCompoundStatement) -> Iterator[Sequence[cst.BaseStatement]]:
    """The statement blocks directly inside a compound statement, in source order."""
    suites: list[cst.BaseSuite] = [case.body for case in stmt.cases] if isinstance(stmt, cst.Match) else [stmt.body]
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:
        suites.append(orelse.body)
        orelse = getattr(orelse, "orelse", None) if isinstance(orelse, cst.If) else None
    for handler in getattr(stmt, "handlers", ()):
        suites.append(handler.body)
    finalbody = getattr(stmt, "finalbody", None)
    if finalbody is not None:
        suites.append(finalbody.body)
    for suite in suites:
        if isinstance(suite, cst.IndentedBlock):
            yield suite.body


def body_statements(func: cst.FunctionDef | cst.ClassDef) -> list[cst.BaseStatement]:
    return list(func.body.body) if isinstance(func.body, cst.IndentedBlock) else []


def positional_params(func: cst.FunctionDef) -> tuple[str, ...]:
    params = func.params
    return tuple(p.name.value for p in (*params.posonly_params, *params.params))


def int_literals(expr: cst.BaseExpression, signed: bool = False) -> tuple[int, ...] | None:
    """The ints of a literal int, tuple or list; ``signed``: `-1` too (jit's argnums count from the end)."""
    items = [expr] if not isinstance(expr, (cst.Tuple, cst.List)) else list(expr.elements)
    values: list[int] = []
    for item in items:
        if isinstance(item, cst.StarredElement):
            return None
        value = item.value if isinstance(item, cst.BaseElement) else item
        sign = 1
        if signed and isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            value, sign = value.expression, -1
        if not isinstance(value, cst.Integer):
            return None
        values.append(sign * int(value.value, 0))
    return tuple(values)


def str_literals(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return (value,) if isinstance(value, str) else None
    if isinstance(expr, (cst.Tuple, cst.List)):
        values: list[str] = []
        for element in expr.elements:
            if not isinstance(element.value, cst.SimpleString):
                return None
            value = element.value.evaluated_value
            if not isinstance(value, str):
                return None
            values.append(value)
        return tuple(values)
    return None


class AllNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class ModuleBindings(cst.CSTVisitor):
    """How many constructs bind each name in the module's own scope (not inside defs or classes)."""

    inside = False  # whether defs, classes and lambdas are walked into

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, name: str, times: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + times

    def _targets(self, target: cst.CSTNode) -> None:
        for name in target_names(target):
            self.add(name)

    def _named(self, node: cst.FunctionDef | cst.ClassDef) -> bool:
        self.add(node.name.value)
        return self.inside

    visit_FunctionDef = _named
    visit_ClassDef = _named

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.inside

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:  # import ... as, with ... as, except ... as
        self._targets(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.add((dotted(node.name) or "").split(".")[0])

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)


def find_def(scope: Scope | None, name: str, before: cst.BaseStatement | None = None) -> cst.FunctionDef | None:
    """The function a (dotted) name refers to from a scope: the last def in the nearest scope.
    ``before``, a statement of ``scope``: the last def preceding it there, if any (the one bound
    when it runs, where a notebook defines the name again further on)."""
    head, _, rest = name.partition(".")
    start = scope
    while scope is not None:
        if scope is start or not scope.is_class:
            found: cst.FunctionDef | None = None
            for stmt in scope_statements(scope.statements):
                if stmt is before and scope is start and found is not None:
                    return found
                if rest and type(stmt) is cst.ClassDef and stmt.name.value == head:
                    inner = Scope(body_statements(stmt), scope, True, "")
                    found = find_def(inner, rest) or found
                elif not rest and type(stmt) is cst.FunctionDef and stmt.name.value == head:
                    found = stmt
            if found is not None:
                return found
        scope = scope.parent
    return None


def module_constants(module: cst.Module) -> dict[str, cst.BaseExpression]:
    """The values the module's top-level `NAME = value` statements give (the last one of each)."""
    return {name: assign.value for name, assign in constant_assigns(module).items()}


def constant_assigns(module: cst.Module) -> dict[str, cst.Assign]:
    """The module's top-level `NAME = value` statements, by name (the last one of each)."""
    constants: dict[str, cst.Assign] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Name):
                        constants[target.value] = small
    return constants


class AnyBindings(ModuleBindings):
    """How many constructs bind each name anywhere in the module: in defs, classes, lambdas,
    comprehensions and match patterns too (parameters included)."""

    inside = True

    def visit_Param(self, node: cst.Param) -> None:
        self.add(node.name.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.add(node.name.value)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.add(node.name.value)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.add(node.rest.value)


class NameMentions(cst.CSTVisitor):
    """How often each name is written in the module (as a name, an attribute or a binding), and
    the strings it holds (`__all__`, `getattr(module, "NAME")`)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.strings: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str):
            self.strings.add(value)


class OwnReturns(cst.CSTVisitor):
    """The returns of one def, not of the defs, classes or lambdas inside it."""

    def __init__(self) -> None:
        self.returns: list[cst.Return] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)


def own_returns(func: cst.FunctionDef) -> list[cst.Return]:
    visitor = OwnReturns()
    for node in func.body.body:
        walk.visit(node, visitor)
    return visitor.returns
