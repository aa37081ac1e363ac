"""Sites, step 4b: a primal or rule built by a call (`f, f_fwd, f_bwd = make("cpu")`, `f_bwd =
make_bwd(k)`, `f.defvjp(make_fwd(k), ...)`): no stage follows the call into the factory, so what
it returns is never read, and the site cannot be rewritten (VJP003 says which call)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vjp_migrate.imports import PARTIAL, ImportTable, dotted, target_names
from vjp_migrate.sites.scopes import Scope, scope_statements
from vjp_migrate.vocabulary import PRIMAL_WRAPPERS
from vjp_migrate.wording import spoken


def building_call(
    expr: cst.BaseExpression | None,
    scope: Scope,
    imports: ImportTable,
    binds_site: Callable[[cst.BaseExpression], bool],
) -> cst.Call | None:
    """The call that builds the function ``expr`` stands for: ``expr`` itself, or the call the
    name is bound to in the nearest scope that binds it, when every binding there is one (the
    site's own ``f = jax.custom_vjp(f, ...)`` aside: ``binds_site`` tells it). None for a wrapper
    of a function (`jax.jit(f)`, `partial(f, k)`), which the stages read through."""
    if isinstance(expr, cst.Call):
        wrapped = expr.args[0].value if len(expr.args) == 1 and not expr.args[0].keyword else None
        if imports.qualify(expr.func) in PRIMAL_WRAPPERS and wrapped is not None:
            return building_call(wrapped, scope, imports, binds_site)  # `jax.jit(make_fwd(k))`
        return None if _wraps(expr, imports) else expr
    name = dotted(expr) if expr is not None else None
    outer: Scope | None = scope
    while name is not None and "." not in name and outer is not None:
        values = [v for v in _bound_values(outer, name) if not binds_site(v)]
        if values:
            calls = [v for v in values if isinstance(v, cst.Call) and not _wraps(v, imports)]
            return calls[-1] if len(calls) == len(values) else None
        outer = outer.parent
        while outer is not None and outer.is_class:
            outer = outer.parent
    return None


def built_problem(built: list[tuple[str, cst.Call]], module: cst.Module) -> str:
    """What VJP003 says of the roles (`"the primal"`, `"fwd"`, `"bwd"`) built by those calls."""
    roles = [role.removeprefix("the ") for role, _ in built]
    makers = list(dict.fromkeys(f"`{module.code_for_node(call.func)}(...)`" for _, call in built))
    how = f"a call ({makers[0]})" if len(makers) == 1 else f"calls ({spoken(makers)})"
    return f"its {spoken(roles)} {'are' if len(roles) > 1 else 'is'} built by {how}, which vjp-migrate does not follow"


def _wraps(call: cst.Call, imports: ImportTable) -> bool:
    return imports.is_one_of(call.func, PARTIAL) or imports.qualify(call.func) in PRIMAL_WRAPPERS


def _bound_values(scope: Scope, name: str) -> list[cst.BaseExpression]:
    """The values the scope binds ``name`` to, in order: an assignment's (an unpacked call counts
    as the call), a def's or class's own name (no call)."""
    values: list[cst.BaseExpression] = []
    for stmt in scope_statements(scope.statements):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            values.append(stmt.name)
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and any(name in target_names(t.target) for t in small.targets):
                values.append(small.value)
    return values
