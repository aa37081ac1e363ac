"""Classify, step 8c': what the annotation of a caller's parameter says about the value passed at
a call of the site: a parameter annotated as an array (`noise: jax.Array`) or with a module pytree
class holding array fields (`context: Context`) passed on as it came, or such a class's array field
(`context.noise`). Each is array data wherever the caller runs, as the rule's own annotation would be."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.annotations import annotated_with, annotation_reading
from vjp_migrate.classify.array_fields import ArrayFields
from vjp_migrate.classify.call_traced import rebound
from vjp_migrate.classify.context import Context, function_locals
from vjp_migrate.classify.expressions import code_text, param_named
from vjp_migrate.model import ArgKind


def annotated_array(
    value: cst.BaseExpression, callers: tuple[cst.FunctionDef, ...], ctx: Context, lambda_params: frozenset[str]
) -> str | None:
    """How to say that ``value`` holds array data by the annotation of the caller's parameter it
    is, or whose field it reads; None if no such annotation says so."""
    name, field = _parts(value)
    if name is None or name in lambda_params:
        return None
    found = _parameter(name, callers, ctx)
    if found is None:
        return None
    caller, param = found
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is None:
        return None
    where = f"the caller `{caller.name.value}`"
    shown = f"`{name}: {code_text(annotation)}`"
    owner = annotated_with(param, ctx.array_fields)
    if field is not None:
        fields = ctx.array_fields[owner].fields if owner is not None else {}
        if field not in fields:
            return None
        return f"the field `{field}` (annotated `{fields[field]}` in `{owner}`) of the parameter {shown} of {where}"
    if owner is not None:
        return _pytree_with_arrays(ctx.array_fields[owner], shown, where)
    read = annotation_reading(annotation, ctx.imports)
    if read is None or read[0] is not ArgKind.ARRAY:
        return None
    return f"the parameter {shown} of {where}"


def _parts(value: cst.BaseExpression) -> tuple[str | None, str | None]:
    """`context` alone, or `context` and `noise` for `context.noise`."""
    if isinstance(value, cst.Name):
        return value.value, None
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        return value.value.value, value.attr.value
    return None, None


def _parameter(
    name: str, callers: tuple[cst.FunctionDef, ...], ctx: Context
) -> tuple[cst.FunctionDef, cst.Param] | None:
    """The innermost caller's parameter ``name``, if no statement of that caller rebinds it."""
    for caller in reversed(callers):
        param = param_named(caller, name)
        if param is not None:
            return None if rebound(caller, name, ctx) else (caller, param)
        if name in function_locals(caller, ctx).bindings:
            return None
    return None


def _pytree_with_arrays(fields: ArrayFields, shown: str, where: str) -> str | None:
    """The parameter annotated with a pytree class that has array fields: jit traces those leaves."""
    if fields.pytree is None or fields.foreign:
        return None
    return f"the parameter {shown} of {where}, {fields.described()},"
