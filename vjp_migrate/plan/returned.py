"""Plan, step 1a: what a return of bwd gives JAX, followed through the functions of the module it
calls (`return scale_ct(g, w)`): one bare value, a tuple (or list) of cotangents, or, once a
helper was followed, something that cannot be told."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from enum import Enum
from typing import Protocol

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import ArgInfo, ArgKind, Evidence, VjpSite
from vjp_migrate.plan.bodies import bindings_of, code_of
from vjp_migrate.sites import own_returns
from vjp_migrate.vocabulary import ARRAY_MODULES

_DEPTH = 4  # helpers followed below bwd (a helper calling a helper...), and local names through each


class Helpers(Protocol):
    """The defs a call of a name may reach (classify's Context answers), and where a node is."""

    def definitions(self, name: str, within: cst.FunctionDef | None = None) -> tuple[cst.FunctionDef, ...]: ...

    def where(self, node: cst.CSTNode) -> tuple[int | None, str | None]: ...


class Shape(Enum):
    BARE = "one bare value"
    TUPLE = "a tuple"
    OPEN = "cannot be told"  # a helper was followed, and what it returns is not known


class Returned:
    """The shape of returned values in one module (``helpers`` None: no helper is followed, for a
    rule read from another file). None: nothing is known and no helper was followed, as for
    `f_vjp(g)`, which the fix takes for a tuple."""

    def __init__(self, imports: ImportTable, helpers: Helpers | None) -> None:
        self.imports, self.helpers = imports, helpers
        self.following: set[int] = set()  # the helpers being followed: one calling itself cannot be told
        self.bindings: dict[int, dict[str, list[cst.CSTNode]]] = {}

    def of(
        self, value: cst.BaseExpression | None, func: cst.FunctionDef, cotangent: str, depth: int = _DEPTH
    ) -> Shape | None:
        """The shape of ``value``, returned by ``func`` (``cotangent``: its parameter known to be an array)."""
        if isinstance(value, (cst.Tuple, cst.List)) or _concatenated(value):
            return Shape.TUPLE
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)):
            return Shape.BARE
        if isinstance(value, cst.IfExp):
            return _joined([self.of(value.body, func, cotangent, depth), self.of(value.orelse, func, cotangent, depth)])
        if isinstance(value, cst.Call):
            if (self.imports.qualify(value.func) or "").startswith(ARRAY_MODULES):
                return Shape.BARE  # jnp.multiply(g, s) is one array
            return self._called(value, func, depth)
        if isinstance(value, cst.Name):
            if value.value == cotangent:
                return Shape.BARE
            return self._bound(value.value, func, cotangent, depth)
        return None

    def _called(self, call: cst.Call, func: cst.FunctionDef, depth: int) -> Shape | None:
        """What a call of a helper of the module returns; None for any other call."""
        if self.helpers is None or not isinstance(call.func, cst.Name):
            return None
        defs = self.helpers.definitions(call.func.value, func)
        if not defs:
            return None
        return _joined([self._helper(d, depth - 1) for d in defs])

    def _helper(self, helper: cst.FunctionDef, depth: int) -> Shape:
        returns = own_returns(helper)
        if depth < 0 or id(helper) in self.following or not returns:  # no return: None, no cotangent tuple
            return Shape.OPEN
        self.following.add(id(helper))
        found = _joined([self.of(r.value, helper, "", depth) or Shape.OPEN for r in returns])
        self.following.discard(id(helper))
        return found or Shape.OPEN

    def _bound(self, name: str, func: cst.FunctionDef, cotangent: str, depth: int) -> Shape | None:
        """A local bound only by plain `name = value` statements: the shape all its values share."""
        if id(func) not in self.bindings:
            self.bindings[id(func)] = bindings_of(func)
        sites = self.bindings[id(func)].get(name, [])
        if not sites or depth < 0:
            return None
        if not all(isinstance(s, cst.Assign) and all(isinstance(t.target, cst.Name) for t in s.targets) for s in sites):
            return None
        return _joined([self.of(s.value, func, cotangent, depth - 1) for s in sites if isinstance(s, cst.Assign)])


def _concatenated(value: cst.BaseExpression | None) -> bool:
    """`(a,) + rest`, `(g,) * 2`: a tuple joined to another, or repeated."""
    return (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, (cst.Add, cst.Multiply))
        and any(isinstance(side, (cst.Tuple, cst.List)) or _concatenated(side) for side in (value.left, value.right))
    )


def _joined(shapes: Iterable[Shape | None]) -> Shape | None:
    """One shape for several values: the one they share; else OPEN when a helper was followed or
    one of them is a bare value (which one is returned is not known), else None."""
    found = set(shapes)
    if len(found) == 1:
        return found.pop()
    return Shape.OPEN if found & {Shape.OPEN, Shape.BARE} else None


def unsure_cotangents(
    site: VjpSite, infos: tuple[ArgInfo, ...], returned: Returned, helpers: Helpers
) -> tuple[ArgInfo, ...]:
    """The arguments, with no safe fix when a return of bwd is surely no tuple, or is what a
    helper of the module returns and that is not surely a tuple: the fix unpacks it
    (`(*scale_ct(g, w), None)`), which a bare array breaks (row by row, or not at all for a 0-d one)."""
    bwd = site.bwd.node if site.bwd is not None else None
    if bwd is None or all(i.kind is ArgKind.STATIC for i in infos):
        return infos
    for ret in own_returns(bwd):
        value = ret.value
        shape = returned.of(value, bwd, "")
        if shape is Shape.TUPLE or shape is None:
            continue
        what = f"what `{code_of(value.func)}` returns" if isinstance(value, cst.Call) else f"`{code_of(value)}`"
        which = "is one value, not" if shape is Shape.BARE else "may be one value rather than"
        text = f"bwd `{bwd.name.value}` returns {what}, which {which} a tuple of cotangents, and the fix unpacks it"
        unsure = Evidence(ArgKind.UNKNOWN, text, *helpers.where(ret))
        return tuple(
            replace(i, evidence=(*i.evidence, unsure), strong=False) if i.kind is not ArgKind.STATIC else i
            for i in infos
        )
    return infos
