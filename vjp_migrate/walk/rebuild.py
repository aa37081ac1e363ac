"""Walk, step 4: targeted transforms, which rebuild only the ancestors of the nodes a transformer changes.

``Rebuilds.transform`` is ``root.visit(transformer)`` for a transformer that changes only given
targets: their ancestors are rebuilt with ``with_changes`` and every other node is kept, and what
was rebuilt is remembered for ``Index.children`` and ``Regenerates.code``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

import libcst as cst

from vjp_migrate.splice import field_names, is_node
from vjp_migrate.walk.record import Recorded


class NotLocal(Exception):
    """A transformer did something ``Index.transform`` cannot replay (removal, a non-node)."""


class Rebuilds(Recorded):
    """The targeted transforms of an Index."""

    def statement_line(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line around ``node``; None for a node not in the module, or in a body
        written on its ``def`` line (`def f(x): return x`), which has no line of its own."""
        index = self._where.get(id(node))
        if index is None:
            return None
        order, ends = self._order, self._ends
        for above in range(index - 1, -1, -1):
            statement = order[above]
            if ends[above] > index and isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                return statement if isinstance(statement, cst.SimpleStatementLine) else None
        return None

    def transform(
        self, root: cst.CSTNode, transformer: cst.CSTTransformer, targets: Iterable[cst.CSTNode], again: bool = False
    ) -> Any:
        """``root.visit(transformer)`` for a transformer that changes only ``targets``.

        Only the targets' ancestors are rebuilt (``with_changes``); the transformer's
        ``leave_X(original, updated)`` is called on each target, children first, in visiting
        order. A target in a sequence may leave a ``FlattenSentinel`` or a ``RemovalSentinel``,
        with LibCST's rules (a statement line left empty goes from a body). The caller promises
        every other node would come back unchanged. Raises NotLocal when a target is not in this
        module or a leave returns something its place cannot hold. ``again``: a further
        transform of what the last one left (of nodes it did not rebuild), whose rebuilds add to
        that one's in ``children`` and ``code``.
        """
        where = self._where
        if not again:
            self._rebuilt.clear()  # children() describes the latest transform only
            self._replaced.clear()
        marks: list[int] = []
        for target in targets:
            index = where.get(id(target))
            if index is None:
                raise NotLocal(f"{type(target).__name__} is not in the indexed module")
            marks.append(index)
        marks.sort()
        rebuilding = _Rebuild(self, transformer, marks)
        start = where.get(id(root))
        if start is None:
            raise NotLocal("the root is not in the indexed module")
        if not rebuilding.inside(start):
            return root
        new_root = rebuilding.rebuild(root, start)
        if not is_node(type(new_root)):
            raise NotLocal(f"the root became a {type(new_root).__name__}")
        return new_root


class _Rebuild:
    """The rebuild of ``Index.transform``, in methods: closures that call each other would
    form a reference cycle, which keeps the whole module alive until a collection."""

    __slots__ = ("chosen", "ends", "index", "marks", "transformer", "where")

    def __init__(self, index: Rebuilds, transformer: cst.CSTTransformer, marks: list[int]) -> None:
        self.index = index
        self.transformer = transformer
        self.marks = marks
        self.chosen = set(marks)
        self.where = index._where
        self.ends = index._ends

    def inside(self, index: int) -> bool:
        marks = self.marks
        k = bisect_left(marks, index)
        return k < len(marks) and marks[k] < self.ends[index]

    def sequence(self, node: cst.CSTNode, name: str, value: Sequence[Any]) -> tuple[list[Any], bool, bool]:
        """The new items of a list field, whether any changed, and whether their number did."""
        where, inside = self.where, self.inside
        body = name == "body" and (type(node) is cst.Module or type(node) is cst.IndentedBlock)
        items: list[Any] = []
        touched = reshaped = False
        for item in value:
            child = where.get(id(item))  # None for whitespace, which holds no target
            if child is None or not inside(child):
                items.append(item)
                continue
            touched = True
            new = self.rebuild(item, child)
            if is_node(type(new)):
                news = [new]
            elif isinstance(new, cst.FlattenSentinel):
                news = list(new)
            elif isinstance(new, cst.RemovalSentinel):
                news = []
            else:
                raise NotLocal(f"a leave returned {type(new).__name__}")
            # LibCST drops from a body a statement line that its leaves emptied.
            kept = [n for n in news if not (body and n._is_removable() and not item._is_removable())]
            reshaped = reshaped or not (is_node(type(new)) and kept)
            items.extend(kept)
        return items, touched, reshaped

    def rebuild(self, node: cst.CSTNode, index: int) -> Any:
        where, inside = self.where, self.inside
        changes: dict[str, Any] = {}
        reshaped = False
        for name in field_names(type(node)):
            value = getattr(node, name)
            if isinstance(value, (list, tuple)):
                items, touched, spliced = self.sequence(node, name, value)
                if touched:
                    changes[name] = type(value)(items)
                    reshaped = reshaped or spliced
                continue
            child = where.get(id(value))  # None for whitespace and values that are not nodes
            if child is not None and inside(child):
                new = self.rebuild(value, child)
                if not is_node(type(new)):
                    raise NotLocal(f"a {type(new).__name__} where one {type(value).__name__} must stay")
                changes[name] = new
        updated = node.with_changes(**changes) if changes else node
        if index in self.chosen:
            leave = getattr(self.transformer, f"leave_{type(node).__name__}", None)
            result = leave(node, updated) if leave is not None else updated
        else:
            result = updated
            if not reshaped:  # otherwise children() reads its fields
                self.index._rebuilt[id(updated)] = (updated, node)  # the same children but the replaced ones
        if is_node(type(result)):
            self.index._replaced[id(node)] = result
        return result
