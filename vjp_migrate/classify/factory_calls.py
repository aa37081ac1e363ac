"""Classify, step 8a': the calls of a site a module-level factory builds and returns (`def
make(cfg): ... vjp = jax.custom_vjp(fwd, nondiff_argnums=(1,)) ... return vjp`): `make(cfg)(x, k)`,
and `f(x, k)` where `f` is a local of the calling def, or a module-level name, bound once to
`make(...)`. Each passes the site's arguments as a direct call does."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.call_locals import local_values
from vjp_migrate.classify.context import Context, function_locals
from vjp_migrate.classify.module_facts import bound_once_to_a_call
from vjp_migrate.model import VjpSite
from vjp_migrate.sites import body_statements, own_returns, scope_statements

Call = tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]

# How calls.py names a call of a call (`make(cfg)(x, k)`): the inner callee's name and this suffix.
CALLED_RESULT = "()"


def factory_calls(
    site: VjpSite, module: cst.Module, ctx: Context, calls: list[Call]
) -> list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]:
    """The calls of the site through the module-level factory that returns it, if one does."""
    factory = _factory(site, ctx)
    if factory is None:
        return []
    name = factory.name.value
    made = bound_once_to_a_call(module, lambda func: isinstance(func, cst.Name) and func.value == name)
    found: list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]] = []
    for called, call, callers in calls:
        within = callers[-1] if callers else None
        if called == name + CALLED_RESULT:
            reaches = _reaches(name, factory, ctx, callers)
        elif within is not None and called in function_locals(within, ctx).bindings:
            reaches = _made_by(local_values(called, within, ctx), name) and _reaches(name, factory, ctx, callers)
        else:
            reaches = called in made and not any(called in function_locals(c, ctx).bindings for c in callers)
        if reaches:
            found.append((call, callers))
    return found


def _factory(site: VjpSite, ctx: Context) -> cst.FunctionDef | None:
    """The module-level def whose own scope builds the site under its name and returns that name."""
    if site.primal is not None and site.primal_expr is None and id(site.primal) not in ctx.enclosing:
        return None  # a site of the module's scope: no factory
    for helper in ctx.helpers.values():
        if _builds(helper, site) and any(
            isinstance(ret.value, cst.Name) and ret.value.value == site.name for ret in own_returns(helper)
        ):
            return helper
    return None


def _builds(func: cst.FunctionDef, site: VjpSite) -> bool:
    """Whether ``func``'s own scope binds the site's name to the site: `vjp = jax.custom_vjp(...)`,
    or a def the site's carrier decorates."""
    for stmt in scope_statements(body_statements(func)):
        if isinstance(stmt, cst.FunctionDef):
            if stmt.name.value == site.name and any(d is site.carrier for d in stmt.decorators):
                return True
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and small.value is site.carrier:
                    return any(isinstance(t.target, cst.Name) and t.target.value == site.name for t in small.targets)
    return False


def _reaches(name: str, factory: cst.FunctionDef, ctx: Context, callers: tuple[cst.FunctionDef, ...]) -> bool:
    """Whether ``name`` called in the innermost of ``callers`` is the factory: no local of theirs hides it."""
    within = callers[-1] if callers else None
    hidden = any(name in function_locals(caller, ctx).bindings for caller in callers)
    return not hidden and ctx.definitions(name, within) == (factory,)


def _made_by(values: tuple[cst.BaseExpression, ...], name: str) -> bool:
    """Whether a local's one value is a call of ``name`` (`f = make(cfg)`)."""
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return False
    func = values[0].func
    return isinstance(func, cst.Name) and func.value == name
