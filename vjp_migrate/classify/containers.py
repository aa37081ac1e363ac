"""Classify, step 3c: the Python sequences an argument may index (`_LEVEL_SCALES[level]`,
`(a, b)[i]`): a tuple, list or string takes only a concrete int as its index (a Tracer raises),
while an array takes a Tracer. Only values surely such sequences count: literals, comprehensions,
`list(...)`, `tuple(...)`, `str(...)`, in place or bound once to a name (dicts, which hash their
keys, are hashing.py's)."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.hashing import top_level_values
from vjp_migrate.classify.module_facts import bound_once
from vjp_migrate.imports import ImportTable

_SEQUENCE_CALLS = {"builtins.list": "list", "builtins.tuple": "tuple", "builtins.str": "string"}
_LITERALS: dict[type[cst.BaseExpression], str] = {
    cst.Tuple: "tuple",
    cst.List: "list",
    cst.SimpleString: "string",
    cst.ConcatenatedString: "string",
    cst.FormattedString: "string",
}


def literal_sequence(value: cst.BaseExpression) -> str | None:
    """``tuple``, ``list`` or ``string`` for a literal of one (`(1.0, 0.5)`, `"abc"`); None otherwise."""
    return _LITERALS.get(type(value))


def sequence_kind(value: cst.BaseExpression | None, imports: ImportTable) -> str | None:
    """``tuple``, ``list`` or ``string`` when ``value`` makes a new one: a literal, a list
    comprehension, `list(...)`, `tuple(...)`, `str(...)`; None otherwise."""
    if value is None:
        return None
    if type(value) is cst.ListComp:
        return "list"
    if isinstance(value, cst.Call):
        return _SEQUENCE_CALLS.get(imports.qualify(value.func) or "")
    return literal_sequence(value)


def module_sequences(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The names the module binds once, at its top level, to a new tuple, list or string, each
    with which it is."""
    found = {name: kind for name, value in top_level_values(module) if (kind := sequence_kind(value, imports))}
    once = bound_once(module, set(found))
    return {name: kind for name, kind in found.items() if name in once}


def sequence_index(node: cst.Subscript) -> cst.BaseExpression | None:
    """The one index a subscript reads (`s[i]`), not a slice or several (`s[i:j]`, `s[i, j]`)."""
    if len(node.slice) != 1 or not isinstance(index := node.slice[0].slice, cst.Index):
        return None
    return index.value


def indexed_text(described: str) -> str:
    return f"used as an index of {described}, which takes only a concrete int (a Tracer raises)"


def maybe_indexed_text(described: str) -> str:
    return (
        f"used as an index of {described}, which nothing shows to be an array rather than a Python list "
        "or tuple (those take only a concrete int: a Tracer raises)"
    )
