"""Classify, step 4c: the module's classes with fields annotated as arrays (`noise: jax.Array`,
`key: Optional[jax.Array]`; not one declared static), and how each class is a pytree if it is one
(a flax struct class, an `eqx.Module`, a `typing.NamedTuple`, a `register_dataclass`, a class
registered with its own flatten function). A parameter annotated with such a class (the site's
own, or a caller's) holds a pytree whose array leaves jit traces, and its field `context.noise` is
an array; the class's other fields are read too (`jnp.zeros(params.n)` needs a concrete `n`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import libcst as cst

from vjp_migrate.classify.annotations import alternatives, annotation_reading
from vjp_migrate.classify.class_fields import plain_classes, static_fields
from vjp_migrate.classify.module_facts import bound_once, module_enums
from vjp_migrate.classify.pytrees import (
    argument_at,
    call_registrations,
    class_var,
    decorator_registrations,
    field_declarations,
    pytree_base,
    static_dataclass_field,
)
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import ArgKind
from vjp_migrate.vocabulary import (
    CHILDREN_REGISTRARS,
    DATACLASS_REGISTRARS,
    NAMED_TUPLES,
    NO_JAX_VALUE_ANNOTATION_NAMES,
    STATIC_ANNOTATIONS,
)


@dataclass(frozen=True)
class ArrayFields:
    """A module class's fields annotated as arrays, each with its annotation's text, and how the
    class is registered as a pytree (None if it is not known to be one)."""

    name: str
    fields: dict[str, str]
    pytree: str | None
    # The class's other declared fields (static ones too), and those of them that are leaves
    # annotated as no JAX value (`fn: Callable`, `name: str`, a plain class or an enum of the
    # module): such a leaf makes the pytree no valid argument of jit or custom_vjp.
    others: tuple[str, ...] = ()
    foreign: tuple[str, ...] = ()
    # Those of the others the class declares static: aux data, concrete even in a traced pytree.
    static: tuple[str, ...] = ()

    def described(self) -> str:
        """``a `typing.NamedTuple` with the array field `G: jnp.ndarray```."""
        listed = ", ".join(f"`{field}: {text}`" for field, text in self.fields.items())
        plural = "s" if len(self.fields) > 1 else ""
        return f"{self.pytree} with the array field{plural} {listed}"


def module_array_fields(module: cst.Module, imports: ImportTable) -> dict[str, ArrayFields]:
    """The module-level classes (bound once) with a field annotated as an array, by name."""
    registered: dict[str, list[tuple[str, Sequence[cst.Arg]]]] = {}
    for name, registrar, args in call_registrations(module, imports):
        registered.setdefault(name, []).append((registrar, args))
    found: dict[str, ArrayFields] = {}
    leaves: dict[str, dict[str, list[cst.BaseExpression]]] = {}
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef):
            continue
        registrations = [*decorator_registrations(cls, imports), *registered.get(cls.name.value, [])]
        static = set(static_fields(cls, imports)) | _metadata_static(cls, imports)
        declared = _declared(cls)
        fields = {name: text for name, text in _annotated_arrays(cls, imports).items() if name not in static}
        how = pytree_base(cls, imports) or _named_tuple(cls, imports)
        for registrar, args in registrations:
            if registrar in DATACLASS_REGISTRARS:
                static |= {name for name in declared if not _data_field(name, args)}
                fields = {name: text for name, text in fields.items() if _data_field(name, args)}
                how = how or f"a class registered with `{registrar}`"
            elif registrar in CHILDREN_REGISTRARS:
                how = how or f"a class registered with `{registrar}`"
        if fields:
            others = tuple(name for name in declared if name not in fields)
            kept = tuple(name for name in others if name in static)
            found[cls.name.value] = ArrayFields(cls.name.value, fields, how, others, static=kept)
            leaves[cls.name.value] = {name: declared[name] for name in others if name not in static}
    if leaves:  # a leaf annotated with a plain class or an enum of the module holds no JAX value either
        plain = plain_classes(module, imports) | module_enums(module, imports)
        for name, kinds in leaves.items():
            foreign = tuple(field for field, heads in kinds.items() if _no_jax_value(heads, imports, plain))
            found[name] = replace(found[name], foreign=foreign)
    once = bound_once(module, set(found))
    return {name: fields for name, fields in found.items() if name in once}


def _named_tuple(cls: cst.ClassDef, imports: ImportTable) -> str | None:
    """A typed named tuple (`class Params(NamedTuple)`): a tuple, whose every field is a leaf."""
    if len(cls.bases) == 1 and imports.qualify(cls.bases[0].value) in NAMED_TUPLES:
        return "a `typing.NamedTuple`"
    return None


def _declared(cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
    """The fields the class body declares (`n: int = 3`; not a `ClassVar`), each with the heads of
    the types its annotation allows (`Callable` of `Optional[Callable[..., Array]]`, and None)."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for name, declared in field_declarations(cls):
        if not class_var(declared):
            found[name] = [
                a.value if isinstance(a, cst.Subscript) else a for a in alternatives(declared.annotation.annotation)
            ]
    return found


def _no_jax_value(heads: list[cst.BaseExpression], imports: ImportTable, plain: frozenset[str]) -> bool:
    """Whether a field's annotation allows a value that is no JAX value: a function, a string, a
    type or dtype (`Callable`, `str`, `jnp.dtype`), `jax.ShapeDtypeStruct`, a plain class or an
    enum of the module."""
    for head in heads:
        name = dotted(head) or ""
        if name.rsplit(".", 1)[-1] in NO_JAX_VALUE_ANNOTATION_NAMES or name in plain:
            return True
        if imports.qualify(head) in STATIC_ANNOTATIONS:
            return True
    return False


def _metadata_static(cls: cst.ClassDef, imports: ImportTable) -> set[str]:
    """The fields whose dataclass field is marked static (`field(metadata={"static": True})`)."""
    return {name for name, declared in field_declarations(cls) if static_dataclass_field(declared.value, imports)}


def _annotated_arrays(cls: cst.ClassDef, imports: ImportTable) -> dict[str, str]:
    """The fields the class body annotates as arrays (`noise: jax.Array`, `key: Optional[jax.Array] =
    None`), but one whose dataclass field is marked static (`field(metadata={"static": True})`)."""
    found: dict[str, str] = {}
    for name, declared in field_declarations(cls):
        if static_dataclass_field(declared.value, imports):
            continue
        read = annotation_reading(declared.annotation.annotation, imports)
        if read is not None and read[0] is ArgKind.ARRAY:
            found[name] = cst.Module([]).code_for_node(declared.annotation.annotation)
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
