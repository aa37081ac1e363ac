"""Walk: a node's fields in the order LibCST visits them, read without LibCST rebuilding the node.

``children`` is ``node.children`` without whitespace (the Index's children of nodes it did not
record, and of nodes a transform rebuilt); ``comments`` are the comments inside a node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import attrgetter, is_
from typing import Any

import libcst as cst

from vjp_migrate.splice import field_names, is_node
from vjp_migrate.walk.record import UNRECORDED_TYPES


class _FieldOrder(cst.CSTVisitor):
    """Learns in which order LibCST visits a node type's fields (one shallow visit per type)."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.node and attribute not in self.fields:
            self.fields.append(attribute)


Getter = Callable[[cst.CSTNode], tuple[Any, ...]]


def _getter(names: Sequence[str]) -> Getter:
    """The values of a node's fields ``names``, as a tuple read at C speed."""
    if len(names) == 1:  # attrgetter gives the bare value of a single name
        name = names[0]
        return lambda node: (getattr(node, name),)
    return attrgetter(*names) if names else lambda node: ()


class _Recorded(dict[type, bool]):
    """Whether values of a type are recorded nodes (nodes, whitespace aside); filled as types come."""

    def __missing__(self, kind: type) -> bool:
        recorded = self[kind] = is_node(kind) and kind not in UNRECORDED_TYPES
        return recorded


_RECORDED = _Recorded()
_IS_NONE = partial(is_, None)
_FIELDS_OF: dict[type, Getter] = {}
_FIELD_ORDER: dict[tuple[type, tuple[bool, ...]], Getter] = {}


def _visited_fields(node: cst.CSTNode) -> tuple[Any, ...]:
    """The values of ``node``'s fields in the order LibCST visits them.

    The order is learnt from LibCST once per type and set of absent fields (some fields are
    only visited when present).
    """
    kind = type(node)
    fields = _FIELDS_OF.get(kind)
    if fields is None:
        fields = _FIELDS_OF[kind] = _getter(field_names(kind))
    key = (kind, tuple(map(_IS_NONE, fields(node))))
    ordered = _FIELD_ORDER.get(key)
    if ordered is None:
        probe = _FieldOrder(node)
        node._visit_and_replace_children(probe)
        ordered = _FIELD_ORDER[key] = _getter(probe.fields)
    return ordered(node)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` without whitespace, read from the fields (LibCST would rebuild the node)."""
    recorded = _RECORDED
    found: list[cst.CSTNode] = []
    for value in _visited_fields(node):
        if isinstance(value, (list, tuple)):
            found.extend([v for v in value if recorded[type(v)]])
        elif recorded[type(value)]:
            found.append(value)
    return found


def comments(node: cst.CSTNode) -> list[cst.Comment]:
    """The comments inside ``node`` in the order a visit meets them (LibCST's would rebuild every node)."""
    if type(node) is cst.Comment:
        return [node]
    found: list[cst.Comment] = []
    for value in _visited_fields(node):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if is_node(type(item)):
                found.extend(comments(item))
    return found
