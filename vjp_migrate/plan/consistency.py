"""Plan, step 2: whether the rules agree with the primal and with each other (arity, bwd's
return, nondiff_argnums whose value is not read, a `*args` name JAX ignores in nondiff_argnames): the reason
a site cannot be planned (VJP004), or None."""

from __future__ import annotations

from typing import TypeGuard

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import FunctionRef, VjpSite
from vjp_migrate.plan.bodies import code_of
from vjp_migrate.plan.returned import Returned, Shape
from vjp_migrate.sites import class_bound, ignored_argnames, own_returns, positional_params
from vjp_migrate.vocabulary import ARRAY_MODULES, reordered
from vjp_migrate.wording import count


def inconsistency(site: VjpSite, imports: ImportTable, returned: Returned) -> str | None:
    """The VJP004 detail for a rule whose shape does not fit its primal, if any: one clause that
    ends the sentence ``in custom_vjp `f`, ...`` (codes.py) and names the parts it is about
    (``returned``: what bwd's returns give, through the module's helpers)."""
    fwd = site.fwd.node if site.fwd else None
    # bwd's shape is judged only when every nondiff position is known (how many arguments it gets)
    bwd = site.bwd.node if site.bwd and site.nondiff.complete else None
    n_nondiff = len(site.nondiff.positions)
    ignored = ignored_argnames(site)
    number = site.nondiff.bare_int
    if number:  # JAX: `set().update(1)`
        return (
            f"nondiff_argnums is the int {number}, not a tuple: JAX raises TypeError ('int' object is not "
            f"iterable) as soon as it wraps `{_primal_name(site)}` (`({number},)` would list position {number})"
        )
    if not n_nondiff and not ignored and number is None:
        # positions unreadable (a variable, names of an unseen primal...): nothing can be judged
        return _unread_argnums(site)
    if n_nondiff and site.nondiff.positions[0] < 0:  # sorted: the first is the most negative
        return (
            f"nondiff_argnums lists position {site.nondiff.positions[0]}, but custom_vjp does not count "
            "positions from the end, so JAX passes that argument to bwd and still expects a cotangent for it"
        )
    beyond = [p for p in site.nondiff.positions if p >= len(site.params)]
    if beyond and not site.has_varargs:
        return (
            f"nondiff_argnums lists position {beyond[0]}, but `{_primal_name(site)}` takes "
            f"{count(len(site.params), 'positional parameter')}"
        )
    bwd_bound = site.bwd.bound_args if site.bwd else 0
    fwd_bound = site.fwd.bound_args if site.fwd else 0
    if bwd is not None and not isinstance(bwd.params.star_arg, cst.Param):
        least, most = _arity(bwd, bwd_bound)
        if not least <= n_nondiff + 2 <= most:
            because = (
                f", since JAX ignores `{ignored[0][0]}` in nondiff_argnames (it is {ignored[0][1]}, and only "
                "positional-or-keyword parameters count there)"
                if ignored
                else ", since JAX ignores `nondiff_argnums=0` (a falsy int lists no position; `(0,)` lists position 0)"
                if number == 0
                else ""
            )
            return (
                f"bwd `{bwd.name.value}` takes {_count_range(least, most)}{_after_instance(site.bwd)}, "
                "but JAX calls it with "
                f"{count(n_nondiff, 'nondiff argument')} + residuals + "
                f"cotangent = {n_nondiff + 2}{because}"
            )
    star = site.primal.params.star_arg if site.primal is not None else None
    collected = next((name for name, _ in ignored if isinstance(star, cst.Param) and name == star.name.value), None)
    if collected is not None:  # JAX: `f.nondiff_argnums` lacks them, and grad wants their cotangents
        return (
            f"nondiff_argnames names `{collected}`, the `*{collected}` parameter of `{_primal_name(site)}`, "
            "which JAX ignores there (only positional-or-keyword parameters count): the arguments it "
            "collects stay differentiable, so bwd gets none of them and must return a cotangent for each"
        )
    fwd_varargs = fwd is not None and isinstance(fwd.params.star_arg, cst.Param)
    least, most = _arity(fwd, fwd_bound) if fwd is not None else (0, 0)
    if fwd is not None and not site.has_varargs and not fwd_varargs and not least <= len(site.params) <= most:
        return (
            f"fwd `{fwd.name.value}` takes {_count_range(least, most)}{_after_instance(site.fwd)}, "
            f"but the primal `{site.name}` takes {len(site.params)}"
        )
    permuted = _permuted_names(site, fwd, fwd_bound, bwd, bwd_bound)
    if permuted is not None:
        return permuted
    miscounted = _miscounted_cotangents(site, bwd)
    if miscounted is not None:
        return miscounted
    if bwd is not None and not site.has_varargs and len(site.params) - n_nondiff == 1:
        params = positional_params(bwd)[bwd_bound:]
        cotangent = params[n_nondiff + 1] if len(params) > n_nondiff + 1 else ""
        for ret in own_returns(bwd):
            if returned.of(ret.value, bwd, cotangent) is Shape.BARE:
                value = ret.value
                through = f" (the one `{code_of(value.func)}` returns)" if _helper_call(value, imports) else ""
                return (
                    f"bwd `{bwd.name.value}` returns a bare value{through}, "
                    "but JAX needs a tuple with one cotangent per argument"
                )
    return None


def _helper_call(value: cst.BaseExpression | None, imports: ImportTable) -> TypeGuard[cst.Call]:
    return isinstance(value, cst.Call) and not (imports.qualify(value.func) or "").startswith(ARRAY_MODULES)


def _miscounted_cotangents(site: VjpSite, bwd: cst.FunctionDef | None) -> str | None:
    """bwd returning a tuple literal with another number of cotangents than the primal has
    differentiable arguments (JAX binds the primal's defaults, so each positional parameter counts)."""
    primal = site.primal
    if bwd is None or primal is None or site.has_varargs or primal.params.kwonly_params:
        return None
    if isinstance(primal.params.star_kwarg, cst.Param):
        return None
    wanted = len(site.params) - len(site.nondiff.positions)
    for ret in own_returns(bwd):
        value = ret.value
        if not isinstance(value, (cst.Tuple, cst.List)) or any(
            isinstance(e, cst.StarredElement) for e in value.elements
        ):
            continue
        if len(value.elements) != wanted:
            return (
                f"bwd `{bwd.name.value}` returns {count(len(value.elements), 'cotangent')}, but "
                f"`{_primal_name(site)}` has {count(wanted, 'differentiable argument')}"
            )
    return None


def _permuted_names(
    site: VjpSite, fwd: cst.FunctionDef | None, fwd_bound: int, bwd: cst.FunctionDef | None, bwd_bound: int
) -> str | None:
    """fwd taking the primal's parameters by their names in another order, or bwd its nondiff
    ones: JAX passes them by position, so each name holds another argument (a bug to fix by hand)."""
    if site.primal is None or site.has_varargs:
        return None
    if fwd is not None and not isinstance(fwd.params.star_arg, cst.Param):
        names = positional_params(fwd)[fwd_bound:]
        if reordered(names, site.params):
            return (
                f"fwd `{fwd.name.value}` takes the parameters of `{_primal_name(site)}` in another order "
                f"({_listed(names)} against {_listed(site.params)}), but JAX passes them in the primal's order"
            )
    if bwd is not None and all(0 <= p < len(site.params) for p in site.nondiff.positions):
        expected = tuple(site.params[p] for p in site.nondiff.positions)
        names = positional_params(bwd)[bwd_bound:][: len(expected)]
        if reordered(names, expected):
            return (
                f"bwd `{bwd.name.value}` names its nondiff parameters in another order ({_listed(names)} against "
                f"{_listed(expected)} in `{_primal_name(site)}`), but JAX passes them in the primal's order"
            )
    return None


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _unread_argnums(site: VjpSite) -> str | None:
    """nondiff_argnums whose value is not read (an expression, a call, an imported name), of a
    bwd that is not read either or takes nondiff arguments whose names are not the primal's (sites
    reads the positions from them when they are): which arguments it lists cannot be told, and
    silence would hide a broken rule."""
    bwd = site.bwd
    if site.nondiff.complete or site.nondiff.argnames_arg is not None or bwd is None:
        return None
    if bwd.node is None:  # its problem's first clause says why (`bwd `g` is imported from `m``)
        unread = (bwd.problem or f"bwd `{bwd.name}` is not read").split(";")[0]
        return f"{site.nondiff.problem}, and {unread}, so which arguments nondiff_argnums lists cannot be told"
    leading = positional_params(bwd.node)[bwd.bound_args :][:-2]
    if not leading or isinstance(bwd.node.params.star_arg, cst.Param):
        return None
    listed = ", ".join(f"`{n}`" for n in leading)
    return (
        f"{site.nondiff.problem}, and bwd `{bwd.node.name.value}`'s nondiff parameters ({listed}) "
        f"are not named like parameters of `{_primal_name(site)}` in order, so which arguments nondiff_argnums "
        "lists cannot be told"
    )


def _arity(func: cst.FunctionDef, bound: int) -> tuple[int, int]:
    """How few and how many positional arguments ``func`` accepts after ``bound`` ones (defaults)."""
    params = (*func.params.posonly_params, *func.params.params)[bound:]
    return sum(1 for p in params if p.default is None), len(params)


def _after_instance(ref: FunctionRef | None) -> str:
    """` after `self``, for a bound method (`self.f_bwd`), or ` after `cls`` for a classmethod:
    the parameters counted come after it."""
    if ref is None or ref.node is None or not ref.bound_args or not (params := positional_params(ref.node)):
        return ""
    return f" after `{params[0]}`" if ref.name.startswith(f"{params[0]}.") or class_bound(ref.node) else ""


def _count_range(least: int, most: int) -> str:
    return count(most, "parameter") if least == most else f"{least} to {most} parameters"


def _primal_name(site: VjpSite) -> str:
    if site.primal is None or site.primal_expr is not None:
        return site.name  # a lambda, or an expression whose def is not seen: the name users call
    return site.primal.name.value


def repeated_param(func: cst.FunctionDef) -> str | None:
    params = func.params
    seen: set[str] = set()
    for param in (*params.posonly_params, *params.params, params.star_arg, *params.kwonly_params, params.star_kwarg):
        if type(param) is cst.Param:  # not a MaybeSentinel or ParamStar (`type() is`: see imports.node_types)
            if param.name.value in seen:
                return param.name.value
            seen.add(param.name.value)
    return None
