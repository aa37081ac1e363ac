"""Classify, step 6: evidence from an argument's annotation (array types, static settings,
Python numbers, leafless config classes, pytree classes of the module holding array fields)."""

from __future__ import annotations

from collections.abc import Container, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from vjp_migrate.classify.expressions import all_params, code_text, is_int_tuple, param_named
from vjp_migrate.classify.weights import SCALAR, STRONG
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.vocabulary import (
    ARRAY_ANNOTATION_NAMES,
    ARRAY_ANNOTATIONS,
    CONTAINER_ANNOTATION_NAMES,
    HOST_ARRAY_ANNOTATIONS,
    SCALAR_ANNOTATION_NAMES,
    STATIC_ANNOTATION_NAMES,
    STATIC_ANNOTATIONS,
)

if TYPE_CHECKING:  # context.py reads annotations through array_fields.py
    from vjp_migrate.classify.context import Context


def _annotation_names(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The names inside an annotation, outermost first: ``Optional[X]`` gives Optional, X; a string
    annotation gives those of the annotation it holds (``"jax.Array"``, ``Optional["Array"]``)."""
    if (written := _string_annotation(expr)) is not None:
        yield from _annotation_names(written)
    elif isinstance(expr, cst.Subscript):
        yield expr.value
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                yield from _annotation_names(element.slice.value)
    elif isinstance(expr, cst.BinaryOperation):  # X | None
        yield from _annotation_names(expr.left)
        yield from _annotation_names(expr.right)
    else:
        yield expr


def _array_annotation(part: cst.BaseExpression, imports: ImportTable) -> bool:
    last = (dotted(part) or "").rsplit(".", 1)[-1]
    return last in ARRAY_ANNOTATION_NAMES or (imports.qualify(part) or "") in ARRAY_ANNOTATIONS


def annotation_reading(annotation: cst.BaseExpression, imports: ImportTable) -> tuple[ArgKind, str, str] | None:
    """What an annotation says, read outermost name first: its kind, a note to add after it (``""``
    or ``": ..."``) and its weight; None if it says nothing."""
    parts = list(_annotation_names(annotation))
    for at, part in enumerate(parts):
        qname = imports.qualify(part) or ""
        last = (dotted(part) or "").rsplit(".", 1)[-1]
        if last in CONTAINER_ANNOTATION_NAMES and any(_array_annotation(p, imports) for p in parts[at + 1 :]):
            continue  # `Sequence[jax.Array]`, `tuple[jax.Array, int]`: the arrays inside decide
        if qname in HOST_ARRAY_ANNOTATIONS:
            return ArgKind.UNKNOWN, ": a host NumPy array, which may be concrete data such as indices", SCALAR
        if _array_annotation(part, imports):
            return ArgKind.ARRAY, "", STRONG
        if last in SCALAR_ANNOTATION_NAMES and all(
            (dotted(p) or "") in (*SCALAR_ANNOTATION_NAMES, "None", "Optional", "typing.Optional")
            for p in _annotation_names(annotation)
        ):
            return ArgKind.UNKNOWN, ": a Python number, which may be a static setting", SCALAR
        if qname in STATIC_ANNOTATIONS:
            return ArgKind.STATIC, ": a JAX description of a value or its placement, never a JAX value", STRONG
        if last in STATIC_ANNOTATION_NAMES or (
            last in ("tuple", "Tuple") and "int" in cst.Module([]).code_for_node(annotation)
        ):
            return ArgKind.STATIC, "", STRONG
    return None


def annotation_evidence(func: cst.FunctionDef, name: str, ctx: Context, where: str) -> list[tuple[Evidence, str]]:
    """Evidence from the annotation and default of the parameter ``name``."""
    param = param_named(func, name)
    if param is None:
        return []
    found: list[tuple[Evidence, str]] = []
    at = ctx.where(param)
    if (static_class := _static_class(param, ctx)) is not None:
        annotation = param.annotation.annotation if param.annotation else None
        text = code_text(annotation) if annotation else ""
        note = f"{ctx.static_classes[static_class]}, which jit passes on untraced"
        found.append((Evidence(ArgKind.STATIC, f"annotated `{text}` in {where}: {note}", *at), STRONG))
    elif (plain := annotated_with(param, ctx.plain_classes)) is not None:
        text = code_text(param.annotation.annotation) if param.annotation else plain
        found.append((Evidence(ArgKind.STATIC, f"annotated `{text}` in {where}: {_plain(plain)}", *at), STRONG))
    elif (enum := annotated_with(param, ctx.enums)) is not None:
        text = code_text(param.annotation.annotation) if param.annotation else enum
        note = f"`{enum}` is an enum of the module, whose members are no JAX values"
        found.append((Evidence(ArgKind.STATIC, f"annotated `{text}` in {where}: {note}", *at), STRONG))
    elif (owner := pytree_owner(param, ctx)) is not None:
        text = code_text(param.annotation.annotation) if param.annotation else owner
        fields = ctx.array_fields[owner]
        note = f"`{owner}` is {fields.described()}, whose array leaves jit traces"
        found.append((Evidence(ArgKind.ARRAY, f"annotated `{text}` in {where}: {note}", *at), STRONG))
    elif param.annotation is not None:
        annotation = param.annotation.annotation
        text = code_text(annotation)
        if (read := annotation_reading(annotation, ctx.imports)) is not None:
            kind, note, weight = read
            found.append((Evidence(kind, f"annotated `{text}` in {where}{note}", *at), weight))
    default = param.default
    if (
        isinstance(default, (cst.SimpleString, cst.ConcatenatedString, cst.Lambda))
        or (isinstance(default, cst.Name) and default.value in ("True", "False"))
        or (default is not None and is_int_tuple(default))
    ):
        text = code_text(default)
        found.append((Evidence(ArgKind.STATIC, f"defaults to `{text}` in {where}", *at), STRONG))
    elif (
        param.annotation is None
        and isinstance(default, cst.Call)
        and isinstance(default.func, cst.Name)
        and default.func.value in ctx.plain_classes
    ):  # `params=Params()`: the default tells the type as an annotation would
        text = f"defaults to `{code_text(default)}` in {where}: {_plain(default.func.value)}"
        found.append((Evidence(ArgKind.STATIC, text, *at), STRONG))
    return found


def _plain(name: str) -> str:
    return f"`{name}` is a class the module neither registers as a pytree nor derives from one, no JAX value"


def pytree_owner(param: cst.Param, ctx: Context) -> str | None:
    """The class of the module that ``param`` is annotated with (alone or with None) when it is a
    pytree with array fields and no leaf of no JAX value (`fn: Callable`): a JAX value holding arrays."""
    owner = annotated_with(param, ctx.array_fields)
    if owner is None or ctx.array_fields[owner].pytree is None or ctx.array_fields[owner].foreign:
        return None
    return owner


def _static_class(param: cst.Param, ctx: Context) -> str | None:
    """The class of the module registered as a pytree with no leaves that ``param`` is annotated
    with, alone or with None (`Config`, `Optional[Config]`, `Config | None`): None has no leaves either."""
    return annotated_with(param, ctx.static_classes)


def annotated_with(param: cst.Param, classes: Container[str]) -> str | None:
    """The one of ``classes`` that ``param`` is annotated with, alone or with None (`Mode`,
    `Optional[Mode]`, `Mode | None`), if it is."""
    if param.annotation is None:
        return None
    names = [a.value if isinstance(a, cst.Name) else None for a in alternatives(param.annotation.annotation)]
    found = [name for name in names if name in classes]
    return found[0] if found and all(name in classes or name == "None" for name in names) else None


def annotated_leafless(func: cst.FunctionDef, name: str, ctx: Context) -> bool:
    return any(_static_class(p, ctx) is not None for p in all_params(func.params) if p.name.value == name)


def alternatives(annotation: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The types a union annotation allows (`Optional[A]`: A and None; `A | B`, `Union[A, B]`: A
    and B), reading into a string annotation (`Optional["A"]`, `"A | None"`)."""
    if (written := _string_annotation(annotation)) is not None:
        yield from alternatives(written)
        return
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        yield from alternatives(annotation.left)
        yield from alternatives(annotation.right)
        return
    kind = (dotted(annotation.value) or "").rsplit(".", 1)[-1] if isinstance(annotation, cst.Subscript) else ""
    if isinstance(annotation, cst.Subscript) and kind in ("Optional", "Union"):
        items = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
        if len(items) != len(annotation.slice) or (kind == "Optional" and len(items) != 1):
            yield annotation  # not a union this reads
            return
        for item in items:
            yield from alternatives(item)
        if kind == "Optional":
            yield cst.Name("None")
        return
    yield annotation


def _string_annotation(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """The annotation a string annotation (a forward reference) holds, if it parses."""
    if not isinstance(annotation, cst.SimpleString):
        return None
    text = annotation.evaluated_value
    if not isinstance(text, str):
        return None
    try:
        return cst.parse_expression(text.strip())
    except cst.ParserSyntaxError:
        return None
