"""Plan, step 3a: whether bwd can reach the end of its body, where it returns None: no cotangent
tuple there takes the `None` items of the moved arguments.

The answer errs towards "no": a path counts only when it surely exists as the code is written.
A `return`, a `raise`, `assert False`, a `break`/`continue` and a `while True` loop without a
`break` end no path; no path leaves a `match` that no case matched (its cases may be
exhaustive); a `with` passes on no exception its context manager may suppress; a `try`'s
handlers are reachable (its body may raise); a loop may run no iteration; a path whose
last statement calls something that may never return (`sys.exit`, a helper such as
`_unsupported(mode)`) is not counted (only calls into the libraries below surely return).

Each path carries how many tests it passes to the end without a branch written for it: the
implicit `else` of an `if` chain counts its tests, a loop that runs no iteration of a body that
always leaves one test, a `try` handler one. A path with two or more is not counted: the tests
may cover every value bwd gets (`if mode == "sum": return ...` / `elif mode == "mean": return
...`, or two `if`s in a row). A single `if g.ndim == 1: return ...` with nothing after it counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import ImportTable
from vjp_migrate.sites import OwnReturns, own_returns

# A call into these surely returns (`jax.debug.print(...)`, `print(...)`, `warnings.warn(...)`).
_RETURNING = ("builtins.", "jax.", "numpy.", "math.", "warnings.", "logging.")
_NEVER_RETURNING = frozenset({"builtins.exit", "builtins.quit"})
_MOST_UNWRITTEN = 1  # tests a path may pass without a branch written for it and still count


@dataclass(frozen=True)
class _Exits:
    """The fewest unwritten tests on a path that surely reaches the end of some statements, and
    on one that reaches a `break` of the loop around them; None: no such path."""

    end: int | None
    brk: int | None


_NONE = _Exits(None, None)
_THROUGH = _Exits(0, None)


def falls_off(bwd: cst.FunctionDef, imports: ImportTable) -> str | None:
    """Why ``bwd`` can return None by reaching the end of its body, or None when it cannot surely."""
    end = _block(bwd.body.body, True, imports).end
    if end is None or end > _MOST_UNWRITTEN or _is_generator(bwd):
        return None
    name = bwd.name.value
    if not own_returns(bwd):
        return f"bwd `{name}` has no `return` (it returns None)"
    return f"bwd `{name}` can reach the end of its body without a `return` (it returns None there)"


def _block(statements: Sequence[cst.CSTNode], tail: bool, imports: ImportTable) -> _Exits:
    """``tail``: the end of these statements is the end of bwd."""
    flat = list(_small_statements(statements))
    cost, brk = 0, None
    for index, statement in enumerate(flat):
        exits = _statement(statement, tail and index == len(flat) - 1, imports)
        brk = _least(brk, _plus(exits.brk, cost))
        if exits.end is None:
            return _Exits(None, brk)
        cost += exits.end
    last = flat[-1] if flat else None
    if tail and isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and not _returns(last.value, imports):
        return _Exits(None, brk)
    return _Exits(cost, brk)


def _small_statements(statements: Iterable[cst.CSTNode]) -> Iterable[cst.CSTNode]:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        else:
            yield statement


def _statement(node: cst.CSTNode, tail: bool, imports: ImportTable) -> _Exits:
    if isinstance(node, (cst.Return, cst.Raise, cst.Continue)):
        return _NONE
    if isinstance(node, cst.Break):
        return _Exits(None, 0)
    if isinstance(node, cst.Assert):
        return _NONE if _truth(node.test) is False else _THROUGH
    if isinstance(node, cst.If):
        return _if(node, tail, imports)
    if isinstance(node, (cst.While, cst.For)):
        return _loop(node, tail, imports)
    if isinstance(node, (cst.Try, cst.TryStar)):
        return _try(node, tail, imports)
    if isinstance(node, cst.With):
        return _block(node.body.body, tail, imports)
    if isinstance(node, cst.Match):
        return _match(node, tail, imports)
    return _THROUGH  # a small statement, a def or a class


def _if(node: cst.If, tail: bool, imports: ImportTable) -> _Exits:
    """An `if`/`elif`/`else` chain as a whole."""
    branches: list[_Exits] = []
    tests = 0
    link: cst.If | cst.Else | None = node
    while isinstance(link, cst.If):
        truth = _truth(link.test)
        if truth is not False:
            branches.append(_block(link.body.body, tail, imports))
            tests += 1
        if truth is True:  # the branches after it never run
            return _merge(branches)
        link = link.orelse
    branches.append(_block(link.body.body, tail, imports) if link is not None else _Exits(tests, None))
    return _merge(branches)


def _loop(node: cst.While | cst.For, tail: bool, imports: ImportTable) -> _Exits:
    body = _block(node.body.body, False, imports)
    orelse = _block(node.orelse.body.body, tail, imports) if node.orelse else _THROUGH
    truth = _truth(node.test) if isinstance(node, cst.While) else None
    if truth is True:  # `while True:` leaves by a break only; its else never runs
        return _Exits(body.brk, None)
    if truth is False:
        return orelse
    # Leaving without a break: after an iteration that went on, or (one test) before the first.
    skipped = 0 if body.end is not None or _continues(node.body.body) else 1
    # A `break` in the else clause belongs to the loop around this one.
    return _Exits(_least(body.brk, _plus(orelse.end, skipped)), _plus(orelse.brk, skipped))


def _try(node: cst.Try | cst.TryStar, tail: bool, imports: ImportTable) -> _Exits:
    last = tail and node.finalbody is None
    body = _block(node.body.body, last and node.orelse is None, imports)
    orelse = _block(node.orelse.body.body, last, imports) if node.orelse else _THROUGH
    ways = [
        _Exits(_add(body.end, orelse.end), _least(body.brk, _add(body.end, orelse.brk))),
        *(_block(h.body.body, last, imports) for h in node.handlers),
    ]
    exits = _merge([ways[0], *(_Exits(_plus(w.end, 1), _plus(w.brk, 1)) for w in ways[1:])])
    if node.finalbody is None:
        return exits
    final = _block(node.finalbody.body.body, tail, imports)
    return _Exits(_add(exits.end, final.end), _least(_add(exits.brk, final.end), final.brk))


def _match(node: cst.Match, tail: bool, imports: ImportTable) -> _Exits:
    # No path for "no case matched": one case may be all the author expects (`case Ref(inner=x):`).
    return _merge([_block(case.body.body, tail, imports) for case in node.cases])


def _merge(ways: Sequence[_Exits]) -> _Exits:
    end: int | None = None
    brk: int | None = None
    for way in ways:
        end, brk = _least(end, way.end), _least(brk, way.brk)
    return _Exits(end, brk)


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _plus(a: int | None, b: int) -> int | None:
    return None if a is None else a + b


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _truth(test: cst.BaseExpression) -> bool | None:
    """The truth of a constant test (`True`, `1`, `None`); None for anything else."""
    if isinstance(test, cst.Name) and test.value in ("True", "False", "None"):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return test.evaluated_value != 0
    return None


def _returns(call: cst.Call, imports: ImportTable) -> bool:
    name = imports.qualify(call.func)
    return name is not None and name.startswith(_RETURNING) and name not in _NEVER_RETURNING


class _Yields(OwnReturns):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def _continues(statements: Sequence[cst.CSTNode]) -> bool:
    """Whether a loop body holds a `continue` of its own (not of a loop inside it)."""
    for node in _small_statements(statements):
        if isinstance(node, cst.Continue):
            return True
        inner: list[cst.BaseSuite | None] = []
        if isinstance(node, (cst.For, cst.While)):
            inner = [node.orelse.body if node.orelse else None]  # its else clause is outside it
        elif isinstance(node, cst.If):
            inner = [node.body, node.orelse.body if isinstance(node.orelse, cst.Else) else None]
            if isinstance(node.orelse, cst.If) and _continues([node.orelse]):
                return True
        elif isinstance(node, (cst.Try, cst.TryStar)):
            parts = [node.orelse, node.finalbody, *node.handlers]
            inner = [node.body, *(p.body for p in parts if p is not None)]
        elif isinstance(node, cst.With):
            inner = [node.body]
        elif isinstance(node, cst.Match):
            inner = [case.body for case in node.cases]
        if any(suite is not None and _continues(suite.body) for suite in inner):
            return True
    return False


def _is_generator(func: cst.FunctionDef) -> bool:
    """A generator's end returns no None to JAX: its call returns a generator."""
    visitor = _Yields()
    walk.visit(func.body, visitor)
    return visitor.found
