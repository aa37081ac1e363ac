"""Classify, step 8c: ``traced_parameter``, a value passed at a call that is a parameter a
``jax.jit`` of its def traces: itself, in arithmetic, through a local (call_locals.py) or through a
module helper that returns it."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vjp_migrate.classify.annotations import annotated_leafless
from vjp_migrate.classify.call_locals import local_values
from vjp_migrate.classify.context import Context, Wrapped, function_locals
from vjp_migrate.classify.expressions import arithmetic_leaves, call_value, code_text
from vjp_migrate.imports import JIT, PARTIAL, ImportTable
from vjp_migrate.sites import jit_static_names, own_returns, positional_params


def traced_parameter(
    value: cst.BaseExpression,
    ctx: Context,
    callers: tuple[cst.FunctionDef, ...],
    wrapped: Wrapped,
    lambda_params: frozenset[str] = frozenset(),
    through: str = "",
    depth: int = 0,
) -> tuple[str, str, str] | None:
    """A parameter that the ``jax.jit`` of its def traces, passed as it came or in arithmetic
    (`w`, `w * 2.0`, `-w`; not `w.shape[0]`), itself, through a local of the calling def bound
    once to such a value (`s = w * 2.0`) or to an item of one (`for w in ws`), or through a module
    helper returning such a value of its own parameter (`doubled(w)`): the parameter, the def and
    the first such local or helper call."""
    for leaf in arithmetic_leaves(value):
        if isinstance(leaf, cst.Call) and depth < 3:
            for passed in _helper_passes(leaf, ctx):
                shown = through or f"{code_text(leaf.func)}(...)"
                found = traced_parameter(passed, ctx, callers, wrapped, lambda_params, shown, depth + 1)
                if found is not None:
                    return found
        if not isinstance(leaf, cst.Name) or leaf.value in lambda_params:
            continue
        caller = _binder(leaf.value, callers, ctx)
        if (
            caller is not None
            and _traces(caller, leaf.value, ctx, wrapped)
            and not rebound(caller, leaf.value, ctx)
            and not annotated_leafless(caller, leaf.value, ctx)
        ):
            return leaf.value, caller.name.value, through
        bound = local_values(leaf.value, callers[-1], ctx) if callers and caller is None and depth < 3 else ()
        for value in bound:
            found = traced_parameter(value, ctx, callers, wrapped, frozenset(), through or leaf.value, depth + 1)
            if found is not None:
                return found
    return None


def _traces(func: cst.FunctionDef, param: str, ctx: Context, wrapped: Wrapped) -> bool:
    """Whether a ``jax.jit`` around ``func`` (its decorator, or a `jax.jit(func)` call of a module
    def) traces its parameter ``param``."""
    if _jitted(func, ctx.imports) and param not in jit_static_names(func, ctx.imports):
        return True
    name = func.name.value
    return ctx.helpers.get(name) is func and any(param not in static for static in wrapped.get(name, ()))


def _helper_passes(call: cst.Call, ctx: Context) -> Iterator[cst.BaseExpression]:
    """The values ``call`` passes to the parameters that an undecorated module helper, with no other
    binding of them, returns as they came or in arithmetic at every return (`return w * 2.0`;
    `return -w` on one branch, `return w` on the other)."""
    helper = ctx.helpers.get(call.func.value) if isinstance(call.func, cst.Name) else None
    if helper is None or helper.decorators or any(arg.star for arg in call.args):
        return
    returned = [_returned_names(ret.value) for ret in own_returns(helper)]
    params = positional_params(helper)
    for name in dict.fromkeys(returned[0] if returned else ()):
        if name in params and all(name in names for names in returned[1:]) and not rebound(helper, name, ctx):
            passed = call_value(call, params.index(name), name)
            if passed is not None:
                yield passed


def _returned_names(value: cst.BaseExpression | None) -> list[str]:
    """The names a return gives as they are or in arithmetic (`w`, `w` and `s` in `-w * s`)."""
    leaves = arithmetic_leaves(value) if value is not None else ()
    return [leaf.value for leaf in leaves if isinstance(leaf, cst.Name)]


def _binder(name: str, callers: tuple[cst.FunctionDef, ...], ctx: Context) -> cst.FunctionDef | None:
    """The def among ``callers`` (innermost first) whose parameter ``name`` is, if a local binds it
    nowhere nearer."""
    for caller in reversed(callers):
        if name in (*positional_params(caller), *(p.name.value for p in caller.params.kwonly_params)):
            return caller
        if name in function_locals(caller, ctx).bindings:
            return None
    return None


def _jitted(func: cst.FunctionDef, imports: ImportTable) -> bool:
    """Whether a ``jax.jit`` decorator traces ``func``, with static arguments (if any) that
    ``jit_static_names`` can read: literal ``static_argnums``/``static_argnames``."""
    for decorator in func.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call):
            if imports.is_one_of(call, JIT):
                return True
            continue
        args = list(call.args)
        if imports.is_one_of(call.func, PARTIAL) and args and imports.is_one_of(args[0].value, JIT):
            args = args[1:]
        elif not imports.is_one_of(call.func, JIT):
            continue
        return all(not arg.star and _literal_argspec(arg) for arg in args)
    return False


def _literal_argspec(arg: cst.Arg) -> bool:
    if arg.keyword is None or arg.keyword.value not in ("static_argnums", "static_argnames"):
        return arg.keyword is not None
    value = arg.value
    items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
    return all(isinstance(item, (cst.Integer, cst.SimpleString)) for item in items)


def rebound(func: cst.FunctionDef, param: str, ctx: Context) -> bool:
    """Whether the body of ``func`` assigns its parameter ``param`` (`scale = scale / x.std()`)."""
    return any(not isinstance(b.node, cst.Param) for b in function_locals(func, ctx).bindings.get(param, ()))
