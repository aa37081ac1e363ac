"""Plan, step 1: what a rule's body holds: its own returns and dels, the names it reads and
binds, its parameters."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import target_names
from vjp_migrate.sites import OwnReturns


class Returns(OwnReturns):
    """The function's own return statements, which of them stand alone on their line, and its own
    dels and assignments."""

    def __init__(self) -> None:
        super().__init__()
        self.standalone: set[int] = set()  # returns alone on their line: a statement fits before them
        self.dels: list[cst.Del] = []
        self.assigns: set[int] = set()  # id() of the function's own `=` statements

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and type(node.body[0]) is cst.Return:
            self.standalone.add(id(node.body[0]))

    def visit_Del(self, node: cst.Del) -> None:
        self.dels.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.add(id(node))


class FunctionNames(cst.CSTVisitor):
    """Every name loaded or bound in a function, and which ones its own body rebinds."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.bound: set[str] = set()
        self.deleted: set[str] = set()  # names in `del` targets: not counted as reads
        self.stores: dict[str, int] = {}  # of the counts, the plain bindings (`a = ...`, not `a += ...`)

    def _store(self, target: cst.CSTNode | None) -> None:
        for name in target_names(target):
            self.bound.add(name)
            self.stores[name] = self.stores.get(name, 0) + 1

    def loads(self, name: str) -> int:
        return self.counts.get(name, 0) - self.stores.get(name, 0)

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_Del(self, node: cst.Del) -> bool:
        for target in del_targets(node):
            if isinstance(target, cst.Name):
                self.deleted.add(target.value)
            else:
                self.deleted.update(target_names(target))  # `del a, (b, c)`
                target.visit(self)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(target_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._store(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:  # `import a.b` binds `a`
            self._store(import_head(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._store(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._store(node.name)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:  # `case w:`, `case [w, *_]`, `case ... as w`
        self._store(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:  # `case [x, *w]`
        self._store(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:  # `case {**w}`
        self._store(node.rest)


def import_head(node: cst.ImportAlias) -> cst.Name:
    """The name `import a.b` binds: `a`."""
    name: cst.BaseExpression = node.name
    while isinstance(name, cst.Attribute):
        name = name.value
    assert isinstance(name, cst.Name)
    return name


class _Bindings(cst.CSTVisitor):
    """Every construct that binds each name in a function, nested scopes included."""

    def __init__(self) -> None:
        self.sites: dict[str, list[cst.CSTNode]] = {}

    def _add(self, target: cst.CSTNode | None, node: cst.CSTNode) -> None:
        for name in target_names(target):
            self.sites.setdefault(name, []).append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._add(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target, node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target, node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target, node)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name, node)

    def visit_Del(self, node: cst.Del) -> None:
        self._add(node.target, node)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node.name, node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node.name, node)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._add(item.name, node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._add(item.name, node)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self._add(import_head(node), node)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._add(node.name, node)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._add(node.name, node)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._add(node.rest, node)


def _body(func: cst.FunctionDef) -> Sequence[cst.CSTNode]:
    """The statements of a function; a one-line body (`def f(x): return x`) gives its small statements."""
    return list(func.body.body)


def _visit(func: cst.FunctionDef, visitor: cst.CSTVisitor) -> None:
    for node in _body(func):
        walk.visit(node, visitor)


def returns_of(func: cst.FunctionDef) -> Returns:
    visitor = Returns()
    _visit(func, visitor)
    return visitor


def del_targets(node: cst.Del) -> list[cst.BaseExpression]:
    """What one `del` statement deletes: `del a, b[0]` gives a and b[0]."""
    target = node.target
    if isinstance(target, (cst.Tuple, cst.List)):
        return [element.value for element in target.elements]
    return [target]


def dropped_dels(bwd: cst.FunctionDef, unbound: set[str]) -> tuple[tuple[cst.Del, tuple[str, ...]], ...]:
    """bwd's `del` statements naming parameters that leave its signature, with those names."""
    found = []
    for node in returns_of(bwd).dels:
        names = tuple(t.value for t in del_targets(node) if isinstance(t, cst.Name) and t.value in unbound)
        if names:
            found.append((node, names))
    return tuple(found)


def names_in(func: cst.FunctionDef) -> FunctionNames:
    visitor = FunctionNames()
    _visit(func, visitor)
    return visitor


def bindings_of(func: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    visitor = _Bindings()
    walk.visit(func.params, visitor)
    _visit(func, visitor)
    return visitor.sites


def literal_binding(name: str, bindings: dict[str, list[cst.CSTNode]]) -> cst.Assign | None:
    """`name = a, b` when that is the only thing binding `name` (no starred items)."""
    sites = bindings.get(name, [])
    if len(sites) != 1 or not isinstance(sites[0], cst.Assign):
        return None
    assign = sites[0]
    target, value = assign.targets[0].target, assign.value
    if (
        len(assign.targets) == 1
        and isinstance(target, cst.Name)
        and isinstance(value, (cst.Tuple, cst.List))
        and not any(isinstance(e, cst.StarredElement) for e in value.elements)
    ):
        return assign
    return None


def code_of(node: cst.CSTNode | None) -> str:
    """The code of `node` for a one-line message: a call spread over lines is named by its function."""
    if node is None:
        return "nothing"
    text = cst.Module([]).code_for_node(node)
    if "\n" not in text:
        return text
    if isinstance(node, cst.Call):
        return f"{code_of(node.func)}(...)"
    return re.sub(r"([([{]) | ([)\]}])", r"\1\2", " ".join(text.split()))


def param_names(func: cst.FunctionDef | cst.Lambda) -> set[str]:
    """Every parameter name of ``func``: positional, keyword-only, `*args` and `**kwargs`."""
    params = func.params
    every = (*params.posonly_params, *params.params, params.star_arg, *params.kwonly_params, params.star_kwarg)
    return {p.name.value for p in every if isinstance(p, cst.Param)}


def param_nodes(func: cst.FunctionDef) -> list[cst.Param]:
    return [*func.params.posonly_params, *func.params.params]


class Loads(cst.CSTVisitor):
    """The Name nodes reading ``name`` (not an attribute's or a keyword argument's name)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk.visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk.visit(node.value, self)
        return False
