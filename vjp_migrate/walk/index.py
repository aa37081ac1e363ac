"""Walk: ``Index``, what one recording code generation of a module gives the later steps.

The recording (record.py) fills the tables; ``Index`` adds to its steps' methods (replay.py,
positions.py, rebuild.py, regenerate.py) the questions every step asks: is a node in the module,
its children, the nodes of a subtree.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from itertools import compress

import libcst as cst

from vjp_migrate.walk.fields import children as children_of
from vjp_migrate.walk.rebuild import Rebuilds
from vjp_migrate.walk.record import Recorder, plain_parentheses
from vjp_migrate.walk.regenerate import Regenerates
from vjp_migrate.walk.replay import Replays


class Index(Replays, Rebuilds, Regenerates):
    """Positions, replays and targeted transforms for one module (see the package docstring)."""

    def __init__(self, module: cst.Module) -> None:
        recorder = Recorder(module)
        with plain_parentheses():
            module._codegen(recorder)
        self.module = module
        self._order = order = recorder.order
        self._kinds = list(map(type, order))
        self._ends = ends = recorder.ends
        self._where = {id(node): k for k, node in enumerate(order)}
        self._starts = recorder.starts
        self._stops = recorder.stops
        self._tokens = recorder.tokens
        self._closed = recorder.closed
        self._syntactic = None
        self._top = []
        k = 1  # order[0] is the module
        while k < len(order):
            self._top.append(k)
            k = ends[k]
        self._offsets = None
        self._line_starts: list[int] = []
        self._text = ""
        self._rebuilt = {}  # what transform built (see Recorded)
        self._replaced = {}
        self._spliced = None  # what code made last (regenerate.py)

    def covers(self, node: cst.CSTNode) -> bool:
        return id(node) in self._where

    def children(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node.children`` without whitespace, also for a node ``transform`` rebuilt."""
        rebuilt = self._rebuilt.get(id(node))
        if rebuilt is None or rebuilt[0] is not node:
            return children_of(node)
        old = self._where[id(rebuilt[1])]
        found, child, ends = [], old + 1, self._ends
        while child < ends[old]:
            current = self._order[child]
            found.append(self._replaced.get(id(current), current))
            child = ends[child]
        return found

    def descendants(self, node: cst.CSTNode, kinds: Container[type]) -> list[cst.CSTNode]:
        """The nodes of ``node``'s subtree (itself included) whose type is in ``kinds``, in
        visiting order; ``node`` must be in the module."""
        start = self._where[id(node)]
        stop = self._ends[start]
        wanted = map(kinds.__contains__, self._kinds[start:stop])
        return [self._order[k] for k in compress(range(start, stop), wanted)]

    def nodes(self, ids: Iterable[object]) -> list[cst.CSTNode]:
        """The module's nodes whose ``id()`` is in ``ids`` (other keys are ignored)."""
        where = self._where
        return [self._order[where[key]] for key in ids if isinstance(key, int) and key in where]
