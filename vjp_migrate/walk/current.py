"""Walk: the Index of the module analysed last, and the calls that go through it.

The analysis handles one module at a time: ``index_of`` builds its Index once, and ``visit``
and ``source_text`` read through it without being handed it. ``forget`` lets the module go.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst

from vjp_migrate.walk.index import Index
from vjp_migrate.walk.replay import NO_METHODS, Table, replayable

_LAST: list[Index] = []  # the index of the module analysed last (one module at a time)
_OTHERS: dict[int, Index] = {}  # id(module or def) -> the Index of another module (or def) the analysis reads
_MAX_OTHERS = 64  # the most recently covered; an index costs about a third of its module's memory


def index_of(module: cst.Module) -> Index:
    """The Index of ``module``, built once (kept for the module analysed last)."""
    if _LAST and _LAST[0].module is module:
        return _LAST[0]
    index = _OTHERS.get(id(module)) or Index(module)
    _LAST[:] = [index]
    return index


def cover(node: cst.Module | cst.FunctionDef) -> None:
    """Let ``visit`` replay over ``node`` too: another module whose defs the analysis of the
    current one walks (the rules of a site, and their helpers), or one def of another module (a
    helper imported from it, indexed alone: the analysis reads one or two defs of such a module)."""
    if _LAST and _LAST[0].covers(node):
        return
    index = _OTHERS.pop(id(node), None)
    if index is None:
        if isinstance(node, cst.FunctionDef) and any(other.covers(node) for other in _OTHERS.values()):
            return  # in a module covered whole
        index = Index(node if isinstance(node, cst.Module) else cst.Module([node]))
    _OTHERS[id(node)] = index  # the most recent last; it keeps the node: the id stays its own
    if len(_OTHERS) > _MAX_OTHERS:
        del _OTHERS[next(iter(_OTHERS))]


@contextmanager
def aside() -> Iterator[None]:
    """Read another module meanwhile (find its sites, say): the Index of the module analysed
    last is the last again after the block, and the other module's is let go."""
    kept = _LAST[:]
    try:
        yield
    finally:
        _LAST[:] = kept


def line_in(module: cst.Module, node: cst.CSTNode) -> int | None:
    """The line of ``node`` in ``module``, another module ``cover`` indexed whole; None when it is not there."""
    index = _OTHERS.get(id(module))
    return index.line(node) if index is not None else None


def forget() -> None:
    """Drop the index of the module analysed last, and the module with it (and the others)."""
    _LAST.clear()
    _OTHERS.clear()


def source_text(node: cst.CSTNode) -> str | None:
    """The source text of ``node``, read through the last Index; None for a node it does not
    cover. It is ``cst.Module([]).code_for_node(node)`` but for whitespace: a line break inside
    ``node`` is the module's newline followed by the indent of the block around it."""
    return _LAST[0].text(node) if _LAST else None


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)``, replayed over every part of ``node`` the last Index covers.

    Parts it does not cover (nodes a rewrite built or rebuilt) are walked one level at a time
    with ``children``, in the same order LibCST visits them.
    """
    table = replayable(type(visitor))
    if not _LAST or table is None:
        node.visit(visitor)
        return
    index = _LAST[0]
    where = index._where
    start = where.get(id(node))
    if start is not None:
        index._replay(start, table, visitor)
        return
    for other in _OTHERS.values():
        start = other._where.get(id(node))
        if start is not None:
            other._replay(start, table, visitor)
            return
    _mixed(index, table, visitor, node)


def _mixed(index: Index, table: Table, visitor: cst.CSTVisitor, current: cst.CSTNode) -> None:
    """``visit`` of a node the index may not cover (a function of its own, not a closure: a
    closure that calls itself is a reference cycle, which keeps the module until a collection)."""
    at = index._where.get(id(current))
    if at is not None:
        index._replay(at, table, visitor)
        return
    enter, leave = table.get(type(current), NO_METHODS)
    if enter is None or enter(visitor, current) is not False:
        for child in index.children(current):  # whitespace only holds whitespace: never visited
            _mixed(index, table, visitor, child)
    if leave is not None:
        leave(visitor, current)
