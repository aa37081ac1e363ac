"""Stage 6: which locals of a function hold values derived from an argument (for classify).

``seq_len = cu_seqlens[i + 1] - cu_seqlens[i]`` makes ``seq_len`` carry ``cu_seqlens``'s values,
so ``jnp.tile(x, seq_len)`` needs ``cu_seqlens`` concrete. A local is *certainly* derived when
every binding of it in the function is a plain assignment in the function's own scope (``=``,
an annotated or augmented assignment, ``:=``, a ``for`` or comprehension target) from such a
value; *possibly* derived when only some are. Anything bound in a nested def, lambda or class,
a parameter, an import, a ``with`` or ``except`` name, a ``global`` ... is some other binding.
A default that the branch for ``k is not None`` replaces (``chunk = 1`` right before ``if plan
is not None: chunk = plan[0]``, or set in the branch for None) is held only while ``k`` is None,
a static value: it leaves ``chunk`` certainly derived from ``plan``, as the other branch of
``d if k is None else k`` does. Which expressions carry values (and which only metadata, like
``x.shape``) is classify's to say: it passes ``sources``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import target_names
from vjp_migrate.sites.scopes import AllNames, blocks_of

# The names an expression's value is computed from, each with whether every path through the
# expression uses it (False under a conditional expression).
Sources = Callable[[cst.BaseExpression], list[tuple[str, bool]]]


@dataclass(frozen=True)
class Binding:
    node: cst.CSTNode  # the statement or expression that binds, for its line
    values: tuple[cst.BaseExpression, ...] | None  # None: bound some other way
    unless: str | None = None  # a default, held only while this name is None


@dataclass(frozen=True)
class Derivation:
    name: str
    source: str  # the argument, or another derived local, the value comes from
    node: cst.CSTNode
    certain: bool


class _Bindings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: dict[str, list[Binding]] = {}
        self.nested = 0  # inside a nested def, lambda or class: bindings there are other

    def _bind(self, name: str, node: cst.CSTNode, values: tuple[cst.BaseExpression, ...] | None) -> None:
        self.found.setdefault(name, []).append(Binding(node, values if self.nested == 0 else None))

    def _other(self, target: cst.CSTNode | None, node: cst.CSTNode) -> None:
        for name in target_names(target):
            self._bind(name, node, None)

    def _enter(self, name: cst.Name | None, node: cst.CSTNode) -> None:
        if name is not None:
            self._bind(name.value, node, None)
        self.nested += 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node.name, node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.nested -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node.name, node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.nested -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._enter(None, node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.nested -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for name, value in _pairs(target.target, node.value):
                self._bind(name, node, (value,) if value is not None else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, cst.Name):
            self._bind(node.target.value, node, (node.value,))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, node, (node.target, node.value))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, node, (node.value,))

    def visit_For(self, node: cst.For) -> None:
        for name in target_names(node.target):  # each element of the iterable
            self._bind(name, node, (node.iter,))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        for name in target_names(node.target):  # its own scope: a name bound elsewhere too is in doubt
            self._bind(name, node, (node.iter,))

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name.value, node, None)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._other(node.name, node)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self._bind(cst.Module([]).code_for_node(node.name).split(".")[0], node, None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._other(item.name, node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._other(item.name, node)

    def visit_Del(self, node: cst.Del) -> None:
        self._other(node.target, node)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._other(node.name, node)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._other(node.name, node)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._other(node.rest, node)


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """Each name of an assignment target with the part of the value it gets (``a, b = p, q``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = target.elements
        if (
            isinstance(value, (cst.Tuple, cst.List))
            and len(value.elements) == len(elements)
            and not any(isinstance(e, cst.StarredElement) for e in (*elements, *value.elements))
        ):
            for element, part in zip(elements, value.elements, strict=True):
                yield from _pairs(element.value, part.value)
            return
    for name in target_names(target):
        yield name, value  # one element of the value: derived when the whole is


Reads = list[list[tuple[str, bool]] | None]  # per binding: the names its value reads; None: bound otherwise


@dataclass(frozen=True)
class Locals:
    """Every name bound in a function body, and what each binding's value reads (root-independent)."""

    bindings: dict[str, list[Binding]]
    reads: dict[str, Reads]

    def derived(self, roots: set[str]) -> dict[str, Derivation]:
        """The locals derived from ``roots``, certainly or possibly."""
        reads = {name: per for name, per in self.reads.items() if name not in roots}
        possible: set[str] = set()
        grown = True
        while grown:  # least fixed point: some binding reads a root or a possibly derived local
            before = len(possible)
            possible.update(
                name
                for name, per in reads.items()
                if any(r is not None and any(s in roots or s in possible for s, _ in r) for r in per)
            )
            grown = len(possible) > before
        certain = {name for name in possible if all(r is not None for r in reads[name])}
        shrunk = True
        while shrunk:  # greatest fixed point: every binding surely reads a root or a certain local
            before = len(certain)
            certain = {
                name
                for name in certain
                if all(
                    r is not None and (any(ok and (s in roots or s in certain) for s, ok in r) or b.unless in roots)
                    for r, b in zip(reads[name], self.bindings[name], strict=True)
                )
            }
            shrunk = len(certain) < before
        found: dict[str, Derivation] = {}
        for name in possible:
            known = roots | (certain if name in certain else possible)
            for binding, read in zip(self.bindings[name], reads[name], strict=True):
                usable = [s for s, _ in read or () if s in known and s != name]
                if usable:
                    source = next((s for s in usable if s in roots), usable[0])
                    found[name] = Derivation(name, source, binding.node, name in certain)
                    break
        return found


def locals_of(
    statements: Sequence[cst.BaseStatement | cst.SimpleStatementSuite], params: Iterable[cst.Param], sources: Sources
) -> Locals:
    finder = _Bindings()
    for stmt in statements:
        walk.visit(stmt, finder)
    bindings = finder.found
    if defaults := {id(default): guard for default, guard in _none_defaults(statements)}:
        bindings = {
            n: [replace(b, unless=defaults[id(b.node)]) if id(b.node) in defaults else b for b in found]
            for n, found in bindings.items()
        }
    for param in params:
        bindings.setdefault(param.name.value, []).insert(0, Binding(param, None))
    reads = {
        name: [None if b.values is None else [s for v in b.values for s in sources(v)] for b in found]
        for name, found in bindings.items()
    }
    return Locals(bindings, reads)


def _none_defaults(
    statements: Sequence[cst.BaseStatement | cst.SimpleStatementSuite],
) -> Iterator[tuple[cst.Assign, str]]:
    """The defaults of the ``if k is not None:`` (or ``if k is None: ... else:``) statements, each
    with ``k``: an assignment of a name alone, in the statement right before the ``if`` or in its
    branch for None, when the branch for a value assigns the name before any other mention."""
    for index, stmt in enumerate(statements):
        if isinstance(stmt, cst.If):
            guard, given, none = _none_branches(stmt)
            if guard is not None and given is not None:
                before = _single_assign(statements[index - 1]) if index else None
                for name in _first_assignments(given):
                    yield from ((a, guard) for n, a in _assignments(none) if n == name)
                    if before is not None and before[0] == name:
                        yield before[1], guard
        if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for block in blocks_of(stmt):
                yield from _none_defaults(block)


def _none_branches(stmt: cst.If) -> tuple[str | None, Sequence[cst.BaseStatement] | None, Sequence[cst.BaseStatement]]:
    """The name an ``if`` tests against None, its branch for a value, its branch for None."""
    tested = none_test(stmt.test)
    if tested is None or not isinstance(stmt.body, cst.IndentedBlock) or isinstance(stmt.orelse, cst.If):
        return None, None, ()
    otherwise = (
        stmt.orelse.body.body if stmt.orelse is not None and isinstance(stmt.orelse.body, cst.IndentedBlock) else ()
    )
    if stmt.orelse is not None and not otherwise:
        return None, None, ()
    name, is_not = tested
    if is_not:
        return name, stmt.body.body, otherwise
    if otherwise:
        return name, otherwise, stmt.body.body
    return None, None, ()


def none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """The name a test compares with None, and whether it asks `is not`: `k is None`, `k is not
    None` (None for any other test)."""
    if (
        type(test) is cst.Comparison
        and type(test.left) is cst.Name
        and len(test.comparisons) == 1
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"
    ):
        operator = type(test.comparisons[0].operator)
        if operator is cst.Is or operator is cst.IsNot:
            return test.left.value, operator is cst.IsNot
    return None


def _single_assign(stmt: cst.CSTNode) -> tuple[str, cst.Assign] | None:
    """``name = value`` alone on its line."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        assign = stmt.body[0]
        if (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
        ):
            return assign.targets[0].target.value, assign
    return None


def _assignments(block: Sequence[cst.BaseStatement]) -> Iterator[tuple[str, cst.Assign]]:
    for stmt in block:
        if (found := _single_assign(stmt)) is not None:
            yield found


def _first_assignments(block: Sequence[cst.BaseStatement]) -> Iterator[str]:
    """The names the block assigns in a statement of their own before any other mention."""
    mentioned: set[str] = set()
    for stmt in block:
        found = _single_assign(stmt)
        if found is not None and found[0] not in mentioned:
            yield found[0]
        mentioned |= _names_in(stmt)


def _names_in(node: cst.CSTNode) -> set[str]:
    names = AllNames()
    walk.visit(node, names)
    return names.names
