"""Classify, step 9: the int literals every call of a site passes for one argument (a call-site tag,
`exchange(x, 0)` and `exchange(x, 2)`), directly or through a parameter of the calling def that
its own calls fill with int literals in turn (`def run(y, site): return exchange(y, site)`, then
`run(x, 0)`). Arithmetic on such an argument may be Python-int arithmetic the code relies on."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.context import Context, function_locals
from vjp_migrate.classify.expressions import call_value, code_text, number_literal
from vjp_migrate.sites import positional_params

Calls = list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]


def int_literals_passed(
    calls: Calls, index: int, name: str, module: cst.Module, ctx: Context, passed: frozenset[str]
) -> tuple[str, ...]:
    """The int literals the module's calls of a site pass at ``index`` (or as ``name=``), in order,
    each once; empty unless there is a call and every one passes an int literal."""
    found: list[str] = []
    for call, callers in calls:
        value = call_value(call, index, name)
        literals = _literals(value, callers, module, ctx, passed) if value is not None else None
        if not literals:
            return ()
        found.extend(literals)
    return tuple(dict.fromkeys(found))


def _literals(
    value: cst.BaseExpression,
    callers: tuple[cst.FunctionDef, ...],
    module: cst.Module,
    ctx: Context,
    passed: frozenset[str],
) -> list[str] | None:
    if _is_int(value):
        return [code_text(value)]
    if not isinstance(value, cst.Name) or not callers:
        return None
    caller = callers[-1]
    params = positional_params(caller)
    kwonly = [p.name.value for p in caller.params.kwonly_params]
    if value.value not in (*params, *kwonly) or caller.decorators or caller.name.value in passed:
        return None
    if any(not isinstance(b.node, cst.Param) for b in function_locals(caller, ctx).bindings.get(value.value, ())):
        return None  # rebound in the caller
    position = params.index(value.value) if value.value in params else -1
    found: list[str] = []
    own = [call for called, call, _ in ctx.calls.get(id(module), []) if called == caller.name.value]
    for call in own:
        given = call_value(call, position, value.value)
        if given is None or not _is_int(given):
            return None
        found.append(code_text(given))
    return found or None


def _is_int(expr: cst.BaseExpression) -> bool:
    """``2`` or ``-1``."""
    return isinstance(number_literal(expr), cst.Integer)
