"""Walk, step 2: replays, ``node.visit(visitor)`` over the recorded order without rebuilding a node.

A visitor that only uses plain ``visit_X``/``leave_X`` methods gets the same calls, in the same
order, as LibCST's visit would make (tests/test_walk.py compares both over fixtures and JAX);
``replayable`` tells which visitors those are, and ``Replays.visit`` falls back on
``node.visit`` for the others.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from typing import Any

import libcst as cst

from vjp_migrate.walk.record import UNRECORDED_NAMES, Recorded

_BASE_HOOKS = ("on_visit", "on_leave", "on_visit_attribute", "on_leave_attribute")

_Methods = tuple[Callable[..., Any] | None, Callable[..., Any] | None]  # a node type's visit_X, leave_X
Table = dict[type, _Methods]
NO_METHODS: _Methods = (None, None)


def replayable(visitor_type: type) -> Table | None:
    """visit/leave methods by node type, or None when the visitor needs LibCST's own walk."""
    cached = _DISPATCH.get(visitor_type)
    if cached is not None or visitor_type in _DISPATCH:
        return cached
    table: Table | None = {}
    ok = issubclass(visitor_type, cst.CSTVisitor) and all(
        getattr(visitor_type, hook) is getattr(cst.CSTVisitor, hook) for hook in _BASE_HOOKS
    )
    names = {
        name
        for name in dir(visitor_type)
        if name.startswith(("visit_", "leave_"))
        and getattr(visitor_type, name) is not getattr(cst.CSTVisitor, name, None)
    }
    for name in names:
        kind = name.split("_", 1)[1]
        node_type = getattr(cst, kind, None)
        if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)) or kind in UNRECORDED_NAMES:
            ok = False  # visit_X_attribute hooks, whitespace, or something this module does not know
            break
    if ok:
        assert table is not None
        for name in names:
            kind = name.split("_", 1)[1]
            node_type = getattr(cst, kind)
            visit, leave = table.get(node_type, (None, None))
            method = getattr(visitor_type, name)
            table[node_type] = (method, leave) if name.startswith("visit_") else (visit, method)
    else:
        table = None
    _DISPATCH[visitor_type] = table
    return table


_DISPATCH: dict[type, Table | None] = {}


class Replays(Recorded):
    """The replays of an Index."""

    def visit(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        """Exactly ``node.visit(visitor)`` for a plain visitor, without rebuilding any node."""
        table = replayable(type(visitor))
        index = self._where.get(id(node))
        if table is None or index is None:
            node.visit(visitor)
            return
        self._replay(index, table, visitor)

    def _replay(self, index: int, table: Table, visitor: cst.CSTVisitor) -> None:
        """``visit`` of the node at ``index`` with the visitor's ``table`` (see replayable)."""
        order, ends, kinds = self._order, self._ends, self._kinds
        stop = ends[index]
        if stop == index + 1:  # a leaf, as many nested visits are (a Name)
            enter, leave = table.get(kinds[index], NO_METHODS)
            if enter is not None:
                enter(visitor, order[index])
            if leave is not None:
                leave(visitor, order[index])
            return
        pending: list[tuple[int, cst.CSTNode, Callable[..., Any]]] = []
        skipped = index  # the end of the subtree the visitor declined last
        # Only the nodes the visitor has a method for call anything: find them at C speed.
        for at in compress(range(index, stop), map(table.__contains__, kinds[index:stop])):
            if at < skipped:
                continue
            while pending and pending[-1][0] <= at:
                _, done, finish = pending.pop()
                finish(visitor, done)
            current = order[at]
            enter, leave = table[kinds[at]]
            if enter is None or enter(visitor, current) is not False:
                if leave is not None:
                    pending.append((ends[at], current, leave))
            else:
                if leave is not None:
                    leave(visitor, current)
                skipped = ends[at]
        while pending:
            _, done, finish = pending.pop()
            finish(visitor, done)
