"""Classify, step 7e': an operand a mapping transform maps over (`jax.vmap(f)(indices, ct)`,
`jax.vmap(f, in_axes=(0, None))(w, x)`): array data, with the leading axis the map takes."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.pytrees import argument_at
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.vocabulary import MAPPING_TRANSFORMS


def mapped_by(call: cst.Call, position: int, keyword: str | None, imports: ImportTable) -> str | None:
    """How the transform is written (`jax.vmap`) whose mapped function ``call`` calls, when the
    operand at ``position`` is mapped over: `in_axes` absent, an int, or a literal whose item there
    is an int (not None); None otherwise (a keyword operand, an axis not read)."""
    made = call.func
    if keyword is not None or position < 0 or not isinstance(made, cst.Call):
        return None
    qname = imports.qualify(made.func)
    if qname not in MAPPING_TRANSFORMS or not made.args or made.args[0].keyword is not None:
        return None
    axes = argument_at(made.args[1:], MAPPING_TRANSFORMS[qname][0] - 1, MAPPING_TRANSFORMS[qname][1])
    if any(arg.star for arg in made.args) or not _maps(axes, position):
        return None
    return dotted(made.func) or qname


def _maps(axes: cst.BaseExpression | None, position: int) -> bool:
    """Whether `in_axes` maps the operand at ``position``: absent (0), an int, or an int item there."""
    if axes is None:
        return True
    if isinstance(axes, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in axes.elements) or position >= len(axes.elements):
            return False
        axes = axes.elements[position].value
    if isinstance(axes, cst.UnaryOperation) and isinstance(axes.operator, cst.Minus):
        axes = axes.expression
    return isinstance(axes, cst.Integer)
