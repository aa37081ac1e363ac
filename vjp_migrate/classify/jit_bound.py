"""Classify, step 7d': what a call of a local runs when the local is bound once to a call's result:
a `jax.jit(f, ...)` made in place (`fn = jax.jit(_invoke, static_argnames=("eps",))`), or what a
def of the module returns, one level deep (`fn = _make(x.shape)`, `_make` returning such a jit or
a def): the def it runs and the static arguments its jit gives, which it hashes."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vjp_migrate.classify.context import Context, function_locals
from vjp_migrate.derived import Binding
from vjp_migrate.imports import JIT
from vjp_migrate.sites import own_returns
from vjp_migrate.sites.jit import jit_call_literals, static_params
from vjp_migrate.vocabulary import LIBRARY_PREFIXES

# Transforms whose result calls the function given first with the arguments it is called with,
# traced (a vmap leaves an unmapped one as it is: a Tracer under an outer jit all the same).
_SAME_ARGUMENTS = frozenset(
    {"jax.vmap", "jax.checkpoint", "jax.remat", "jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev"}
    | {"jax.hessian", "jax.named_call"}
)


@dataclass(frozen=True)
class Runs:
    """One thing a local may be: a def of the module (None: another function), given its static
    arguments by a jax.jit around it (``jit``: None when the def is returned as it is)."""

    func: cst.FunctionDef | None
    jit: cst.Call | None = None

    def static(self) -> frozenset[str] | None:
        """The parameters of the def the jit marks static (none without a jit); None when it names
        them by other than literals or when its function is not a def of the module."""
        literals = jit_call_literals(self.jit) if self.jit is not None else (set(), set())
        return static_params(self.func, *literals) if literals is not None and self.func is not None else None

    def marks(self, position: int, keyword: str | None) -> bool | None:
        """Whether the jit marks the argument at ``position`` (or ``keyword``) static, read off its
        literals alone: True, False, or None when that needs the signature of its function."""
        literals = jit_call_literals(self.jit) if self.jit is not None else None
        if literals is None:
            return None
        numbers, names = literals
        if keyword is not None:
            return True if keyword in names else (None if numbers else False)
        return True if position in numbers else (None if names or any(n < 0 for n in numbers) else False)


def assigned_value(bound: list[Binding]) -> cst.BaseExpression | None:
    """The value of a local's one binding when it is an assignment to the name alone (`fn = ...`,
    `fn: T = ...`, `(fn := ...)`): not a loop's items, nor a part of a value unpacked."""
    node = bound[0].node if len(bound) == 1 else None
    if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
        return node.value
    return node.value if type(node) is cst.AnnAssign or type(node) is cst.NamedExpr else None


def local_runs(value: cst.BaseExpression, within: cst.FunctionDef, ctx: Context) -> tuple[Runs, ...] | None:
    """What a local of ``within`` bound once to ``value`` runs when called: the jit made in place,
    or each thing a def called there (of ``within``, around it or of the module) returns (a jax.jit,
    a def, or a local bound once to either), or the def a JAX transform is given (`jax.vmap(f)`);
    () when the call's function is not analysed (imported from elsewhere, or a def returning
    something else); None when ``value`` is no call or one of another JAX or standard function, or
    of no def (a class, a method), judged as before."""
    if not isinstance(value, cst.Call):
        return None
    if ctx.imports.is_one_of(value.func, JIT):
        return (_jitted(value, within, ctx),)
    if ctx.imports.is_one_of(value.func, _SAME_ARGUMENTS):  # `jax.vmap(_invoke)`: runs the def it is given
        func = _jitted(value, within, ctx).func
        return (Runs(func),) if func is not None else None
    qname = ctx.imports.qualify(value.func)
    if qname is not None:
        return None if qname.startswith(LIBRARY_PREFIXES) else ()
    factory = _def_named(value.func.value, within, ctx) if isinstance(value.func, cst.Name) else None
    if factory is None:
        return None
    found = [_returned(ret.value, factory, ctx) for ret in own_returns(factory)]
    runs = tuple(r for r in found if r is not None)
    return runs if runs and len(runs) == len(found) else ()


def _returned(value: cst.BaseExpression | None, factory: cst.FunctionDef, ctx: Context) -> Runs | None:
    """What a factory's return gives, when it is a jax.jit call, a def, or a local bound once to
    either; None otherwise."""
    if isinstance(value, cst.Name):
        assigned = assigned_value(function_locals(factory, ctx).bindings.get(value.value, []))
        if assigned is None:
            func = _def_named(value.value, factory, ctx)
            return Runs(func) if func is not None else None
        value = assigned
    if isinstance(value, cst.Call) and ctx.imports.is_one_of(value.func, JIT):
        return _jitted(value, factory, ctx)
    return None


def _jitted(call: cst.Call, scope: cst.FunctionDef, ctx: Context) -> Runs:
    """The jit ``call`` makes in ``scope``, with the def it wraps when it is named in place."""
    first = call.args[0] if call.args else None
    name = first.value if first is not None and first.keyword is None and not first.star else None
    return Runs(_def_named(name.value, scope, ctx) if isinstance(name, cst.Name) else None, call)


def _def_named(name: str, scope: cst.FunctionDef, ctx: Context) -> cst.FunctionDef | None:
    """The one def ``name`` reaches in ``scope``: a def of its own, else one around it or of the module."""
    bound = function_locals(scope, ctx).bindings.get(name)
    if bound:
        node = bound[0].node
        return node if len(bound) == 1 and isinstance(node, cst.FunctionDef) else None
    defs = ctx.definitions(name, scope)
    return defs[0] if len(defs) == 1 else None
