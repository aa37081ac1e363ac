"""Classify, step 2: what an expression says about the names it reads (the argument under a
subscript or view, the values a call may read, literal settings), and their text for evidence."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.derived import none_test
from vjp_migrate.imports import ImportTable, node_types
from vjp_migrate.sites import positional_params
from vjp_migrate.vocabulary import (
    ARRAY_MODULES,
    CALLABLE,
    METADATA_FUNCTIONS,
    STATIC,
    VALUE_BUILTINS,
    VALUE_METHODS,
    library_use,
)

_SUBSCRIPTS = node_types(cst.Subscript)
_ATTRIBUTES = node_types(cst.Attribute)
_VIEWS = ("T", "mT", "real", "imag")  # attributes that read the same values as their array


def _inner(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What a subscript or a view attribute reads into (``p`` of ``p["w"]`` and ``p.T``); None
    for anything else."""
    kind = type(expr)  # type() first: isinstance on a LibCST class of another type is slow (imports.node_types)
    if (kind in _SUBSCRIPTS and isinstance(expr, cst.Subscript)) or (
        kind in _ATTRIBUTES and isinstance(expr, cst.Attribute) and expr.attr.value in _VIEWS
    ):
        return expr.value
    return None


def strip_views(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The name an expression is rooted at: ``p``, ``p["w"]``, ``p[0][1]``, ``p.T``."""
    while (inner := _inner(expr)) is not None:
        expr = inner
    return expr


def _item(expr: cst.BaseExpression) -> str | None:
    """``args[0]`` for a name subscripted by one int literal: how an argument in a function's
    ``*args`` is named and read."""
    if (
        isinstance(expr, cst.Subscript)
        and isinstance(expr.value, cst.Name)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
        and isinstance(expr.slice[0].slice.value, cst.Integer)
    ):
        return f"{expr.value.value}[{expr.slice[0].slice.value.value}]"
    return None


def _field(expr: cst.BaseExpression) -> str | None:
    """``params.G`` for a name's attribute that is no view: how a field of a parameter annotated
    with a pytree class of the module is named and read (uses_fields.py)."""
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.attr.value not in _VIEWS:
        return f"{expr.value.value}.{expr.attr.value}"
    return None


def named_in(expr: cst.BaseExpression, names: set[str]) -> str | None:
    """Which of ``names`` ``expr`` is: a name, an item of a ``*args`` (``args[0]``), or a field
    (``params.G``)."""
    kind = type(expr)
    found = expr.value if isinstance(expr, cst.Name) else _item(expr) if kind in _SUBSCRIPTS else _field(expr)
    return found if found in names else None


def is_rooted(expr: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``expr`` is one of ``names``, or reads into one (``p["w"]``, ``args[0].T``)."""
    while named_in(expr, names) is None:
        inner = _inner(expr)
        if inner is None:
            return False
        expr = inner
    return True


def shadowing(params: cst.Parameters) -> set[str]:
    """The names a nested def or lambda binds that hide an argument: its positional parameters
    and its ``*args``."""
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    return {p.name.value for p in (*params.posonly_params, *params.params, *star)}


def roots_of(names: Iterable[str]) -> set[str]:
    """The names bound in the function: ``args`` for ``args[0]``."""
    return {name.partition("[")[0] for name in names}


_IDENTITY = node_types(cst.Is, cst.IsNot)


def value_names(expr: cst.BaseExpression, imports: ImportTable, sure: bool = True) -> Iterator[tuple[str, bool]]:
    """The names whose values the value of ``expr`` is computed from, each with whether every
    path uses it (not only one branch of ``... if ... else ...``)."""
    if type(expr) is cst.Name:  # `type() is`: see imports.node_types
        yield expr.value, sure
    elif type(expr) is cst.Subscript:
        if (indexed := _item(expr)) is not None:
            yield indexed, sure
        yield from value_names(expr.value, imports, sure)
        for element in expr.slice:
            part = element.slice
            bounds: list[cst.BaseExpression | None] = []
            if type(part) is cst.Index:
                bounds = [part.value]
            elif type(part) is cst.Slice:
                bounds = [part.lower, part.upper, part.step]
            for bound in bounds:
                if bound is not None:
                    yield from value_names(bound, imports, sure)
    elif type(expr) is cst.Attribute:
        if expr.attr.value in _VIEWS:
            yield from value_names(expr.value, imports, sure)
        elif (field := _field(expr)) is not None:
            yield field, sure
    elif type(expr) is cst.BinaryOperation or type(expr) is cst.BooleanOperation:
        yield from value_names(expr.left, imports, sure)
        yield from value_names(expr.right, imports, sure)
    elif type(expr) is cst.UnaryOperation:
        yield from value_names(expr.expression, imports, sure)
    elif type(expr) is cst.Comparison:
        if not reads_no_value(expr):
            for operand in (expr.left, *(t.comparator for t in expr.comparisons)):
                yield from value_names(operand, imports, sure)
    elif type(expr) is cst.Tuple or type(expr) is cst.List or type(expr) is cst.Set:
        for item in expr.elements:
            yield from value_names(item.value, imports, sure)
    elif type(expr) is cst.IfExp:
        tested, branch = _unless_none(expr)
        for side in (expr.body, expr.orelse):
            for name, _ in value_names(side, imports, sure):
                yield name, sure and side is branch and name == tested
    elif type(expr) is cst.Call:
        yield from _call_value_names(expr, imports, sure)


def _unless_none(expr: cst.IfExp) -> tuple[str | None, cst.BaseExpression | None]:
    """The name a conditional tests against None and the branch it takes when the name is not
    None (`d if k is None else k`, `k if k is not None else d`): the other one runs only for
    None, a static value, so that branch reads ``k`` on every path ``k`` could be an array."""
    tested = none_test(expr.test)
    if tested is None:
        return None, None
    name, is_not = tested
    return name, expr.body if is_not else expr.orelse


def _call_value_names(call: cst.Call, imports: ImportTable, sure: bool) -> Iterator[tuple[str, bool]]:
    qname = imports.qualify(call.func)
    if qname in VALUE_BUILTINS:
        for arg in call.args:
            if arg.keyword is None:
                yield from value_names(arg.value, imports, sure)
    elif qname == "builtins.dict":  # `dict(num_warps=n)`: the values it holds
        for arg in call.args:
            yield from value_names(arg.value, imports, sure)
    elif qname is not None and qname.startswith(ARRAY_MODULES):
        last = qname.rsplit(".", 1)[-1]
        if last in METADATA_FUNCTIONS:
            return
        position = 0
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword else None
            if arg.star or library_use(qname, position, keyword) not in (STATIC, CALLABLE):
                yield from value_names(arg.value, imports, sure)
            if keyword is None:
                position = -1_000 if arg.star else position + 1
    elif qname is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in VALUE_METHODS:
        yield from value_names(call.func.value, imports, sure)


def reads_no_value(node: cst.Comparison) -> bool:
    """A comparison whose result says nothing of its operands' values: a string key looked up
    (``key_lookup``), or identity only (`x is None`)."""
    return key_lookup(node) or all(type(t.operator) in _IDENTITY for t in node.comparisons)


def key_lookup(node: cst.Comparison) -> bool:
    """``"b" in params``: a string key looked up in a container reads its keys only, which a dict
    of Tracers answers under jit as well as a tuple of settings does."""
    return (
        isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
        and len(node.comparisons) == 1
        and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn))
    )


def bound_parameter(func: cst.FunctionDef, position: int, keyword: str | None) -> str | None:
    """The parameter of ``func`` that ``partial(func, ...)`` binds at its ``position`` or ``keyword``."""
    if keyword is not None:
        named = {*positional_params(func), *(p.name.value for p in func.params.kwonly_params)}
        return keyword if keyword in named else None
    params = positional_params(func)
    return params[position - 1] if 0 < position <= len(params) else None


def code_text(expr: cst.BaseExpression, limit: int = 60) -> str:
    """An expression's code on one line, cut short when long."""
    text = walk.source_text(expr)  # differs from the generated code in whitespace only
    code = " ".join((cst.Module([]).code_for_node(expr) if text is None else text).split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def place_of(position: int, keyword: str | None) -> str:
    return f"`{keyword}=`" if keyword else "an argument" if position < 0 else f"argument {position + 1}"


def plain_names(call: cst.Call) -> bool:
    return bool(call.args) and all(
        arg.keyword is None and not arg.star and isinstance(arg.value, cst.Name) for arg in call.args
    )


def all_params(params: cst.Parameters) -> list[cst.Param]:
    star = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return [*params.posonly_params, *params.params, *params.kwonly_params, *star]


def param_named(func: cst.FunctionDef | cst.Lambda, name: str) -> cst.Param | None:
    """``func``'s parameter ``name``, of any kind."""
    return next((p for p in all_params(func.params) if p.name.value == name), None)


def is_string_like(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return bool(expr.elements) and all(is_string_like(e.value) for e in expr.elements)
    return False


def number_literal(expr: cst.BaseExpression) -> cst.Integer | cst.Float | None:
    """The number literal ``expr`` writes, its sign aside: ``256``, ``0.8``, ``-1``."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return expr if isinstance(expr, (cst.Integer, cst.Float)) else None


def is_int_tuple(expr: cst.BaseExpression) -> bool:
    """A tuple or list of int literals, ``(1, 16)``: a shape, which the guide names a static setting."""
    return (
        isinstance(expr, (cst.Tuple, cst.List))
        and bool(expr.elements)
        and all(isinstance(e.value, cst.Integer) for e in expr.elements)
    )


def arithmetic_leaves(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation):
        yield from arithmetic_leaves(expr.left)
        yield from arithmetic_leaves(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
        yield from arithmetic_leaves(expr.expression)
    else:
        yield expr


def first_positional(call: cst.Call) -> cst.BaseExpression | None:
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def call_value(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    position = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
        elif arg.star:
            return None
        else:
            if position == index:
                return arg.value
            position += 1
    return None


def param_at(func: cst.FunctionDef, position: int) -> str | None:
    """How ``func`` names the argument at ``position``: its positional parameter there, or the item
    of its ``*args`` (``args[0]``); None when it takes no argument there."""
    params = positional_params(func)
    if position < len(params):
        return params[position]
    star = func.params.star_arg
    return f"{star.name.value}[{position - len(params)}]" if isinstance(star, cst.Param) else None
