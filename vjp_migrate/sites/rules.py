"""Sites, step 3: a site's rules and the parameters its positions name: lambda and partial rules,
defvjp's arguments, fwd's or bwd's signature for a primal unseen, `*args` items, ignored names."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from vjp_migrate.model import FunctionRef, VjpSite
from vjp_migrate.sites.scopes import positional_params, str_literals


def positions_from_bwd(site: VjpSite) -> VjpSite:
    """nondiff_argnums whose value is not read (an expression, a call, an imported name): bwd's
    leading parameters are the nondiff arguments, in ascending position order, so when each names
    a parameter of the primal, in that order, those are the positions judged (plan.inconsistency
    says so, as VJP004, when they do not)."""
    bwd, nondiff = site.bwd, site.nondiff
    # nondiff_argnames merges with the positions: bwd's parameters alone do not tell them apart
    if nondiff.complete or nondiff.argnames_arg is not None or bwd is None or bwd.node is None:
        return site
    names = positional_params(bwd.node)[bwd.bound_args :][:-2]
    if not names or not all(n in site.params for n in names):
        return site
    positions = tuple(site.params.index(n) for n in names)
    if list(positions) != sorted(set(positions)):
        return site
    problem = f"{site.nondiff.problem} (its positions are read from bwd `{bwd.node.name.value}`'s parameter names)"
    return replace(site, nondiff=replace(site.nondiff, positions=positions, problem=problem, complete=True))


def signature_from_bwd(site: VjpSite) -> VjpSite:
    """An unseen primal and an unresolved fwd: bwd still names the nondiff arguments (its leading
    parameters, in ascending position order), so they can be judged; the other positions are
    unnamed (""). Nothing is named when bwd is unresolved or does not take them all."""
    bwd, positions = site.bwd, site.nondiff.positions
    if bwd is None or bwd.node is None or not positions or not site.nondiff.complete or site.nondiff.argnames_arg:
        return site
    names = positional_params(bwd.node)[bwd.bound_args :]
    if len(names) < len(positions) + 2 or min(positions) < 0:
        return site  # inconsistent (VJP004) or unreadable positions
    params = [""] * (max(positions) + 1)
    for order, position in enumerate(positions):
        params[position] = names[order]
    return replace(site, params=tuple(params))


def varargs_item(site: VjpSite, index: int) -> str | None:
    """How the signature the site is read through (the primal's, or fwd's when the primal is not
    seen) names a nondiff position past its positional parameters: ``args[0]`` of its ``*args``;
    None when it has no ``*args`` (or the position is negative)."""
    star = varargs_owner(site)
    if star is None or not len(site.params) <= index:
        return None
    return f"{star[0]}[{index - len(site.params)}]"


def unnamed_position(site: VjpSite, index: int) -> str | None:
    """How a nondiff position is named when a call builds the site's rules and no signature names
    it (`f, f_fwd, f_bwd = make("cpu")`): ``position 1``, judged from the site's calls alone; None
    when some function is read (it names the position, or the position is past its parameters)."""
    read = site.primal is not None or site.params or any(r is not None and r.node for r in (site.fwd, site.bwd))
    return None if read or not site.built_by or index < 0 else f"position {index}"


def varargs_owner(site: VjpSite) -> tuple[str, str] | None:
    """The ``*args`` name of the signature the site is read through, and whose it is."""
    if site.primal is not None:
        func, owner = site.primal, f"`{site.name if site.primal_expr is not None else site.primal.name.value}`"
    elif site.fwd is not None and site.fwd.node is not None:
        func, owner = site.fwd.node, f"fwd `{site.fwd.node.name.value}`"
    else:
        return None
    star = func.params.star_arg
    return (star.name.value, owner) if isinstance(star, cst.Param) else None


def ignored_argnames(site: VjpSite) -> tuple[tuple[str, str], ...]:
    """The names nondiff_argnames lists that JAX ignores, for a primal that is seen (JAX counts
    only positional-or-keyword parameters), each with what it is: ("w", "a keyword-only
    parameter of `f`"), ("args", "the `*args` parameter of `f`"), ("w", "no parameter of `f`")."""
    names = str_literals(site.nondiff.argnames_arg.value) if site.nondiff.argnames_arg else None
    if site.primal is None or not names:
        return ()
    params = site.primal.params
    primal = f"`{site.name if site.primal_expr is not None else site.primal.name.value}`"
    kinds = {p.name.value: "a keyword-only" for p in params.kwonly_params}
    kinds.update({p.name.value: "a positional-only" for p in params.posonly_params})
    for star, param in (("*", params.star_arg), ("**", params.star_kwarg)):
        if isinstance(param, cst.Param):
            kinds[param.name.value] = f"the `{star}{param.name.value}`"
    return tuple(
        (name, f"{kinds[name]} parameter of {primal}" if name in kinds else f"no parameter of {primal}")
        for name in names
        if name in kinds or name not in site.params
    )


def lambda_rule(expr: cst.Lambda) -> FunctionRef:
    body = cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(expr.body)])])
    view = cst.FunctionDef(name=cst.Name("lambda"), params=expr.params, body=body)
    return FunctionRef("lambda", view, lambda_node=expr)


def partial_problem(call: cst.Call, role: str, text: str) -> str | None:
    for arg in call.args[1:]:
        if arg.keyword is not None:
            return (
                f"{role} `{text}` binds `{arg.keyword.value}=` by keyword; only partials binding "
                "leading parameters by position are rewritten"
            )
        if arg.star:
            return f"{role} `{text}` binds `{arg.star}` arguments, so the positions JAX fills cannot be told"
    if call.args[0].keyword is not None or call.args[0].star:
        return f"{role} `{text}` does not name its function first"
    return None


def rule_arg(call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    return positional[index].value if index < len(positional) else None
