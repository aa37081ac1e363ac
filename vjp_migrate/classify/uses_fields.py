"""Classify, step 7c': the fields of a parameter annotated with a pytree class of the module that
holds array fields (`params: Params`, a `typing.NamedTuple`, a flax struct class, an `eqx.Module`,
a registered class; array_fields.py). Each field read (`params.G`) is followed as the argument
itself is, by a ``Uses`` of its own (uses_helpers.py walks them): an array field used as array data
(`params.G @ x`, `jnp.conj(params.G)`) is the argument's array data, and any field needed concrete
(`jnp.zeros(params.n)`, `range(params.steps)`) makes the argument static, as it would be used
itself. Another field's array-like use says nothing: a Python number is a leaf too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.array_fields import ArrayFields
from vjp_migrate.classify.context import own_body
from vjp_migrate.classify.weights import DOUBT, WEAK
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.vocabulary import ARRAY_ATTRIBUTE_NAMES


class _FieldReads(cst.CSTVisitor):
    """The attributes of ``name`` read (``fields``; any but an array's own and a method called when None)."""

    def __init__(self, name: str, fields: Iterable[str] | None) -> None:
        self.name = name
        self.fields = set(fields) if fields is not None else None
        self.read: dict[str, None] = {}  # in the order first read
        self.called: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == self.name:
            self.called.add(func.attr.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        value, attribute = node.value, node.attr.value
        if not (isinstance(value, cst.Name) and value.value == self.name):
            return
        if attribute in self.fields if self.fields is not None else attribute not in ARRAY_ATTRIBUTE_NAMES:
            self.read[attribute] = None


def attributes_read(func: cst.FunctionDef, name: str, fields: ArrayFields | None = None) -> list[str]:
    """The attributes of the parameter ``name`` that the body of ``func`` reads, in the order it
    first reads them: the declared fields of ``fields``'s class (`params.G`), but those it declares
    static (concrete whether the pytree is traced or not); with no class known,
    any but an array's own (`x.shape`, `x.at`, a view: `x.T`) and the methods it calls
    (`opt.update(...)`)."""
    declared = [*fields.fields, *(f for f in fields.others if f not in fields.static)] if fields else None
    reads = _FieldReads(name, declared)
    for stmt in own_body(func):
        walk.visit(stmt, reads)
    return [attribute for attribute in reads.read if fields is not None or attribute not in reads.called]


def attribute_evidence(found: Iterable[tuple[Evidence, str]], attribute: str) -> list[tuple[Evidence, str]]:
    """What the uses ``found`` of an attribute of an argument of no known class say about it: only
    a need for a concrete value, which the argument then has (a JAX value, traced, would trace its
    leaves; an object that is no pytree cannot be one)."""
    shown = f"its attribute `{attribute}`"
    static = [(e, weight) for e, weight in found if e.kind is ArgKind.STATIC]
    return [(replace(e, text=f"{shown}: {e.text}"), weight) for e, weight in static]


def field_evidence(
    found: Iterable[tuple[Evidence, str]], field: str, fields: ArrayFields, matched: bool = False
) -> list[tuple[Evidence, str]]:
    """What the uses ``found`` of the field say about the argument: all of them for an array field,
    only a need for a concrete value (or a doubt) for another; each reason naming the field.
    ``matched``: no annotation names the class, only the attributes read match its fields, so
    array data there is weak (no safe fix)."""
    what = "attribute" if matched else "field"
    if field in fields.fields:
        shown = f"its {what} `{field}` (annotated `{fields.fields[field]}` in `{fields.name}`, {fields.pytree})"
    else:
        shown = f"its {what} `{field}` (of `{fields.name}`, {fields.pytree})"
    carried: list[tuple[Evidence, str]] = []
    for evidence, weight in found:
        if field not in fields.fields and evidence.kind is not ArgKind.STATIC and weight != DOUBT:
            continue
        if matched and evidence.kind is ArgKind.ARRAY:
            weight = WEAK
        carried.append((replace(evidence, text=f"{shown}: {evidence.text}"), weight))
    return carried


def matching_class(read: Iterable[str], classes: Mapping[str, ArrayFields]) -> ArrayFields | None:
    """The one pytree class of the module with array fields whose declared fields hold every
    attribute ``read`` of an unannotated argument, an array field among them (`model.eigenvalues`,
    `model.pi` of `class DiagModel(NamedTuple)`): what the argument likely is."""
    wanted = set(read)
    found = [
        fields
        for fields in classes.values()
        if fields.pytree is not None
        and not fields.foreign
        and wanted & set(fields.fields)
        and wanted <= {*fields.fields, *fields.others}
    ]
    return found[0] if len(found) == 1 else None
