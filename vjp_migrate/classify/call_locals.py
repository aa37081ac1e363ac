"""Classify, step 8b: the values a local of a calling def is bound to, for a traced value passed
through it: one plain assignment (`s = w * 2.0`), or a loop over a sequence, a literal or a local
list or tuple built before the loop (grown.py; not over a mapping's keys: Python values)."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.annotations import alternatives
from vjp_migrate.classify.context import Context, function_locals, own_body
from vjp_migrate.classify.expressions import all_params
from vjp_migrate.classify.grown import grown_items
from vjp_migrate.imports import dotted
from vjp_migrate.vocabulary import MAPPING_ANNOTATION_NAMES


def local_values(name: str, func: cst.FunctionDef, ctx: Context) -> tuple[cst.BaseExpression, ...]:
    """The value a local of ``func`` that one plain assignment binds is bound to (`s = w * 2.0`),
    or what a local that one loop binds takes its items from: the sequence (`for w in ws`), or
    each item a literal lists (`for w in (w1, w2)`; `*ws` in it gives the sequence ws)."""
    bound = function_locals(func, ctx).bindings.get(name, [])
    if len(bound) != 1 or bound[0].values is None:
        return ()
    node = bound[0].node
    if isinstance(node, (cst.For, cst.CompFor)):
        sequence = loop_sequence(name, node.target, node.iter)
        if sequence is None or _keyed(sequence, func) or _looks_up(func, sequence, name):
            return ()
        if isinstance(sequence, cst.Name) and (items := grown_items(sequence.value, func, ctx, node)) is not None:
            return items
        if isinstance(sequence, (cst.Tuple, cst.List, cst.Set)):
            return tuple(element.value for element in sequence.elements)
        return (sequence,)
    if not isinstance(node, (cst.Assign, cst.AnnAssign)):
        return ()
    return tuple(bound[0].values)


def loop_sequence(name: str, target: cst.BaseExpression, iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """The sequence whose items the loop target ``name`` takes: `ws` in `for w in ws`,
    `for i, w in enumerate(ws)` and `for w, b in zip(ws, bs)` (not `i`: a Python int)."""
    if isinstance(target, cst.Name):
        return iterable if target.value == name else None
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterable, cst.Call):
        return None
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    sequences = [a.value for a in iterable.args if not a.keyword and not a.star]
    if len(sequences) != len(iterable.args) or name not in names or not isinstance(iterable.func, cst.Name):
        return None
    if iterable.func.value == "enumerate" and len(names) == 2 and len(sequences) == 1:
        return sequences[0] if names[1] == name else None
    if iterable.func.value == "zip" and len(names) == len(sequences):
        return sequences[names.index(name)]
    return None


def _keyed(sequence: cst.BaseExpression, func: cst.FunctionDef) -> bool:
    """Whether ``sequence`` is a parameter of ``func`` annotated as a mapping (`dict[str, float]`,
    also quoted, or with None: `Optional["dict[str, float]"]`): a loop over it takes its keys,
    Python values."""
    param = next(
        (p for p in all_params(func.params) if isinstance(sequence, cst.Name) and p.name.value == sequence.value), None
    )
    annotation = param.annotation.annotation if param is not None and param.annotation is not None else None
    if annotation is None:
        return False
    types = [kind for kind in alternatives(annotation) if dotted(kind) != "None"]
    return bool(types) and all(
        (dotted(kind.value if isinstance(kind, cst.Subscript) else kind) or "").rsplit(".", 1)[-1]
        in MAPPING_ANNOTATION_NAMES
        for kind in types
    )


class _Lookups(cst.CSTVisitor):
    """The key names subscripting one name: `k` in `params[k]`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.keys: set[str] = set()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.name and len(node.slice) == 1:
            key = node.slice[0].slice
            if isinstance(key, cst.Index) and isinstance(key.value, cst.Name):
                self.keys.add(key.value.value)


def _looks_up(func: cst.FunctionDef, sequence: cst.BaseExpression, name: str) -> bool:
    """Whether ``func`` subscripts the looped-over ``sequence`` with the loop target ``name``
    (`for k in params: ... params[k]`): a mapping's keys, Python values."""
    if not isinstance(sequence, cst.Name):
        return False
    lookups = _Lookups(sequence.value)
    for stmt in own_body(func):
        walk.visit(stmt, lookups)
    return name in lookups.keys
