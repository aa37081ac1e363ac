"""Classify, step 4c: the module's classes with fields annotated as arrays (`noise: jax.Array`,
`key: Optional[jax.Array]`; not one declared static), and how each class is a pytree if it is one
(a flax struct class, an `eqx.Module`, a `register_dataclass`). A caller's parameter annotated with
such a class says what the value passed at a call site holds: its field `context.noise` is an
array, and the object itself, a pytree, has array leaves that jit traces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from vjp_migrate.classify.annotations import annotation_reading
from vjp_migrate.classify.class_fields import static_fields
from vjp_migrate.classify.module_facts import bound_once
from vjp_migrate.classify.pytrees import (
    argument_at,
    call_registrations,
    decorator_registrations,
    pytree_base,
    static_dataclass_field,
)
from vjp_migrate.imports import ImportTable
from vjp_migrate.model import ArgKind
from vjp_migrate.sites import body_statements
from vjp_migrate.vocabulary import DATACLASS_REGISTRARS


@dataclass(frozen=True)
class ArrayFields:
    """A module class's fields annotated as arrays, each with its annotation's text, and how the
    class is registered as a pytree (None if it is not known to be one)."""

    name: str
    fields: dict[str, str]
    pytree: str | None


def module_array_fields(module: cst.Module, imports: ImportTable) -> dict[str, ArrayFields]:
    """The module-level classes (bound once) with a field annotated as an array, by name."""
    registered: dict[str, list[tuple[str, Sequence[cst.Arg]]]] = {}
    for name, registrar, args in call_registrations(module, imports):
        registered.setdefault(name, []).append((registrar, args))
    found: dict[str, ArrayFields] = {}
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef):
            continue
        registrations = [*decorator_registrations(cls, imports), *registered.get(cls.name.value, [])]
        static = static_fields(cls, imports)
        fields = {name: text for name, text in _annotated_arrays(cls, imports).items() if name not in static}
        how = pytree_base(cls, imports)
        for registrar, args in registrations:
            if registrar in DATACLASS_REGISTRARS:
                fields = {name: text for name, text in fields.items() if _data_field(name, args)}
                how = how or f"a class registered with `{registrar}`"
        if fields:
            found[cls.name.value] = ArrayFields(cls.name.value, fields, how)
    once = bound_once(module, set(found))
    return {name: fields for name, fields in found.items() if name in once}


def _annotated_arrays(cls: cst.ClassDef, imports: ImportTable) -> dict[str, str]:
    """The fields the class body annotates as arrays (`noise: jax.Array`, `key: Optional[jax.Array] =
    None`), but one whose dataclass field is marked static (`field(metadata={"static": True})`)."""
    found: dict[str, str] = {}
    for stmt in body_statements(cls):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.AnnAssign) or not isinstance(small.target, cst.Name):
                continue
            if static_dataclass_field(small.value, imports):
                continue
            read = annotation_reading(small.annotation.annotation, imports)
            if read is not None and read[0] is ArgKind.ARRAY:
                found[small.target.value] = cst.Module([]).code_for_node(small.annotation.annotation)
    return found


def _data_field(name: str, args: Sequence[cst.Arg]) -> bool:
    """Whether a `register_dataclass` call with ``args`` (past the class) makes the field ``name``
    a leaf: listed in its literal `data_fields`, or, with none given, not in its `meta_fields`."""
    data, meta = argument_at(args, 0, "data_fields"), argument_at(args, 1, "meta_fields")
    listed = data if data is not None else meta
    if not isinstance(listed, (cst.List, cst.Tuple)):
        return data is None and meta is None  # fields read from the dataclass's own declarations
    names = {e.value.evaluated_value for e in listed.elements if isinstance(e.value, cst.SimpleString)}
    return (name in names) == (data is not None)
