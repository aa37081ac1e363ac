"""Classify, step 3c: the Python sequences and host NumPy arrays an argument may index
(`_LEVEL_SCALES[level]`, `(a, b)[i]`, `_TABLE[k]` with `_TABLE = np.array([...])`): a tuple, list
or string takes only a concrete int as its index, and a NumPy array converts its index to a NumPy
value (a Tracer raises either way), while a JAX array takes a Tracer. Only values surely such
sequences count: literals, comprehensions, `list(...)`, `tuple(...)`, `str(...)`, what a `numpy`
function makes (and an array method of that makes: `np.arange(6).reshape(2, 3)`), in place or
bound once to a name (dicts, which hash their keys, are hashing.py's). The module-level names
surely JAX arrays (made by a JAX array function, annotated `jax.Array`) are found here too: an
index into any other name of the module may be a Python list's (uses_containers.py doubts it)."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.hashing import top_level_values
from vjp_migrate.classify.module_facts import bound_once
from vjp_migrate.imports import ImportTable
from vjp_migrate.vocabulary import JAX_ARRAY_ANNOTATIONS, is_metadata_function

HOST = "NumPy array"  # a kind, with containers.py's "tuple", "list" and "string"
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
    comprehension, `list(...)`, `tuple(...)`, `str(...)`; ``NumPy array`` for what host NumPy
    makes (``host_numpy``); None otherwise."""
    if value is None:
        return None
    if type(value) is cst.ListComp:
        return "list"
    if host_numpy(value, imports):
        return HOST
    if isinstance(value, cst.Call):
        return _SEQUENCE_CALLS.get(imports.qualify(value.func) or "")
    return literal_sequence(value)


def host_numpy(value: cst.BaseExpression, imports: ImportTable) -> bool:
    """A call of a `numpy` function that makes an array (not one of metadata: `np.shape`), or of
    a method of one (`np.arange(6).reshape(2, 3)`, `.astype(np.float32)`): a host NumPy array,
    concrete, never a Tracer."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        qname = imports.qualify(value.func)
        if qname is not None:
            return qname.startswith("numpy.") and not is_metadata_function(qname)
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    qname = imports.qualify(value.func) or ""
    return qname.startswith("numpy.") and not is_metadata_function(qname)


def module_sequences(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The names the module binds once, at its top level, to a new tuple, list or string, or to
    a host NumPy array, each with which it is."""
    found = {name: kind for name, value in top_level_values(module) if (kind := sequence_kind(value, imports))}
    once = bound_once(module, set(found))
    return {name: kind for name, kind in found.items() if name in once}


def module_jax_arrays(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The names the module binds once, at its top level, annotated as what only a JAX array is
    (`_TABLE: jax.Array = load()`): whatever the value, the module says it is one."""
    found = {
        small.target.value
        for stmt in module.body
        for small in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ())
        if isinstance(small, cst.AnnAssign)
        and isinstance(small.target, cst.Name)
        and small.value is not None
        and imports.qualify(small.annotation.annotation) in JAX_ARRAY_ANNOTATIONS
    }
    return bound_once(module, found)


def subscript_indexes(node: cst.Subscript) -> list[cst.BaseExpression]:
    """The indexes a subscript reads (`s[i]`, both of `s[i, j]`), not its slices (`s[i:j]`)."""
    return [element.slice.value for element in node.slice if isinstance(element.slice, cst.Index)]


def indexed_text(kind: str, described: str) -> str:
    if kind == HOST:
        return f"used as an index of {described}, which takes only a concrete index (a Tracer raises)"
    return f"used as an index of {described}, which takes only a concrete int (a Tracer raises)"


def maybe_indexed_text(described: str) -> str:
    return (
        f"used as an index of {described}, which nothing shows to be a JAX array rather than a Python list "
        "or tuple or a host NumPy array (those take only a concrete index: a Tracer raises)"
    )
