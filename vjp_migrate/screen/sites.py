"""Screen, step 3: the custom_vjp sites (a superset of the sites stage's), their nondiff
positions, the defs that may be their rules, and whether those rules may be inconsistent (VJP004)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from vjp_migrate.screen.names import (
    PARTIAL,
    int_positions,
    may_be_array_function,
    may_be_custom_vjp,
    positional_params,
    qualified,
    str_names,
)
from vjp_migrate.screen.tree import (
    Doubt,
    Func,
    Module,
    body_nodes,
    calls_bound_to,
    dotted,
    own_returns,
    toplevel_statements,
)
from vjp_migrate.vocabulary import PRIMAL_WRAPPERS, may_be_project_alias, reordered

NONDIFF_KEYWORDS = frozenset({"nondiff_argnums", "nondiff_argnames"})
WRAPPER_NAMES = frozenset(w.rsplit(".", 1)[-1] for w in PRIMAL_WRAPPERS)


@dataclass(frozen=True)
class Site:
    call: ast.Call
    names: frozenset[str]  # what users call it: the primal's name and any assignment target
    primals: tuple[Func, ...]
    unseen: bool = False  # a call form whose primal is surely no def (the sites stage reads fwd's signature)


def nondiff_options(m: Module, call: ast.Call) -> list[tuple[str, ast.expr]]:
    """What a call gives as nondiff_argnums and nondiff_argnames, (keyword, value): by keyword, or
    by position after the function of a call of custom_vjp itself (`custom_vjp(f, (1,))`), up to
    a starred argument, as sites.nondiff reads them."""
    found = [(k.arg, k.value) for k in call.keywords if k.arg in NONDIFF_KEYWORDS]
    func = call.func.value if isinstance(call.func, ast.Subscript) else call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if len(call.args) > 1 and (last == "custom_vjp" or last in m.aliases) and may_be_custom_vjp(m, call.func):
        for keyword, value in zip(("nondiff_argnums", "nondiff_argnames"), call.args[1:3], strict=False):
            if isinstance(value, ast.Starred):
                break
            found.append((keyword, value))
    return found


def find_sites(m: Module) -> Iterator[Site]:
    for call in m.calls:
        if not (call.keywords or len(call.args) > 1) or not nondiff_options(m, call):
            continue
        first = call.args[0] if call.args else None
        if not (may_be_custom_vjp(m, call.func) or (first is not None and may_be_custom_vjp(m, first))):
            continue
        head = (dotted(call.func) or "").partition(".")[0]
        if not may_be_custom_vjp(m, call.func) and head in m.surely_shadowed:
            continue  # `partial = functools.partial`: imports.py does not resolve a shadowed name
        if id(call) in m.decorated:
            func = m.decorated[id(call)]
            if func is not None:
                yield Site(call, frozenset({func.name}), (func,))
            continue
        # Call forms: custom_vjp(f, nondiff_argnums=...) or partial(custom_vjp, ...)(f).
        outer = next((c for c in m.calls if c.func is call and c.args), None)
        bound = m.assigned.get(id(outer if outer is not None else call), [])
        if not bound:
            continue  # the sites stage finds call forms only as `name = custom_vjp(...)` or `partial(...)(f)`
        if outer is None and not may_be_custom_vjp(m, call.func):
            raise Doubt  # `vjp_w = partial(custom_vjp, ...)`: the sites stage reads `@vjp_w` and `vjp_w(f)`
        if any("." in name for name in bound):
            raise Doubt  # `simulate.vjp = custom_vjp(...)`: users call it by the attribute
        target = outer.args[0] if outer is not None else (call.args[0] if call.args else None)
        if isinstance(target, ast.Call) and len(target.args) == 1 and not target.keywords:
            wrapper = dotted(target.func) or ""  # any spelling the sites stage may resolve to PRIMAL_WRAPPERS
            if wrapper.rsplit(".", 1)[-1] in WRAPPER_NAMES:
                target = target.args[0]
        if isinstance(target, ast.Name) and _surely_a_def(m, call, target.id):
            yield Site(call, frozenset({target.id, *bound}), tuple(m.defs[target.id]))
        elif isinstance(target, ast.Name) and _bound_to_partial(m, target.id):
            raise Doubt  # `_run_vjp = partial(_run_inner, is_vjp=True)`: classify reads `_run_inner`
        elif isinstance(target, ast.Attribute) or (isinstance(target, ast.Name) and target.id not in m.defs):
            yield Site(call, frozenset(bound), (), unseen=True)  # find_def looks up plain names only
        else:
            raise Doubt  # the sites stage may or may not find a def (a lambda, a call, a def in another scope)


def _bound_to_partial(m: Module, name: str) -> bool:
    return any(name in m.assigned.get(id(call), ()) and qualified(m, call.func) & PARTIAL for call in m.calls)


def _surely_a_def(m: Module, call: ast.Call, name: str) -> bool:
    """sites.find_def surely finds a def of ``name`` from the call's scope: one in the module
    scope, or in the scope of the def around the call (the scopes between are classes)."""
    if any(d in m.top_defs for d in m.defs.get(name, ())):
        return True
    owner = m.caller.get(id(call))
    return owner is not None and any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name
        for s in toplevel_statements(owner.body)
    )


def nondiff_positions(m: Module, site: Site, primal: Func) -> list[int]:
    # JAX reads nondiff_argnames among the positional-or-keyword parameters only.
    named, skipped = [p.arg for p in primal.args.args], len(primal.args.posonlyargs)
    found: set[int] = set()
    for keyword, value in nondiff_options(m, site.call):
        if keyword == "nondiff_argnums" and not isinstance(value, (ast.Tuple, ast.List, ast.Set, ast.Call)):
            raise Doubt  # one int: JAX ignores 0 and raises TypeError for any other (VJP004 whatever the rules)
        if keyword == "nondiff_argnums":
            found.update(int_positions(m, ast.List(value.elts) if isinstance(value, ast.Set) else value))
        else:
            found.update(skipped + named.index(n) for n in str_names(m, value) if n in named)
    return sorted(found)


def names_star_args(m: Module, site: Site, primal: Func) -> bool:
    """nondiff_argnames names the primal's `*args`, which JAX ignores: VJP004 whatever the rules."""
    star = primal.args.vararg
    return star is not None and any(
        keyword == "nondiff_argnames" and star.arg in str_names(m, value)
        for keyword, value in nondiff_options(m, site.call)
    )


def defvjp_calls(m: Module, site: Site) -> Iterator[ast.Call]:
    """The module's ``<site>.defvjp(...)`` and ``getattr(<site>, "defvjp")(...)`` calls (by the
    last part of the owner's name)."""
    if m.defvjps is None:
        m.defvjps = [(c, owner) for c in m.calls if (owner := _defvjp_owner(c.func)) is not None]
    names = known_as(m, site)
    for call, owner in m.defvjps:
        name = dotted(owner)
        if name is not None and name.rsplit(".", 1)[-1] in names:
            yield call


def registers_through_import(m: Module) -> bool:
    """Whether the module calls `defvjp` on a top-level def decorated with a bare name only an
    import binds (`@vjp_w`), or on a top-level name bound to a call of one (`f = vjp_w(_f)`):
    that name may be an alias of the partial in another module, which the sites stage reads
    through the project (sites.imported). Names imported from JAX, functools or builtins are not."""
    if m.defvjps is None:
        m.defvjps = [(c, owner) for c in m.calls if (owner := _defvjp_owner(c.func)) is not None]
    owners = {name for _, owner in m.defvjps if (name := dotted(owner)) is not None}
    for stmt in m.top:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in owners:
            used = [d for d in stmt.decorator_list if isinstance(d, ast.Name)]
        elif (
            isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name)
        ):
            used = [stmt.value.func] if {dotted(t) for t in stmt.targets} & owners else []
        else:
            continue
        if any(may_be_project_alias(target) for name in used for target in m.aliases.get(name.id, ())):
            return True
    return False


def known_as(m: Module, site: Site) -> set[str]:
    """The site's names and every name bound to one of them (``clip = _clip``: the sites stage follows a
    module-level alias to its defvjp), in any scope."""
    names = m.known_as.get(id(site.call))
    if names is None:
        names = m.known_as[id(site.call)] = set(site.names)
        grown = True
        while grown:
            before = len(names)
            for value, targets in m.renamed:
                if value in names:
                    names.update(t.rsplit(".", 1)[-1] for t in targets)
            grown = len(names) > before
    return names


def _defvjp_owner(func: ast.expr) -> ast.expr | None:
    if isinstance(func, ast.Attribute):
        return func.value if func.attr == "defvjp" else None
    if (
        isinstance(func, ast.Call)
        and (dotted(func.func) or "").rsplit(".", 1)[-1] == "getattr"
        and len(func.args) == 2
        and isinstance(func.args[1], ast.Constant)
        and func.args[1].value == "defvjp"
    ):
        return func.args[0]
    return None


def rule_defs(m: Module, site: Site) -> tuple[list[Func | None], list[Func | None]]:
    """Every def that may be the site's fwd and bwd (None when a rule may be unresolved)."""
    fwds: list[Func | None] = []
    bwds: list[Func | None] = []
    for call in defvjp_calls(m, site):
        for slot, role, out in ((0, "fwd", fwds), (1, "bwd", bwds)):
            given = [k.value for k in call.keywords if k.arg == role]
            expr = given[0] if given else (call.args[slot] if len(call.args) > slot else None)
            if isinstance(expr, ast.Starred):
                expr = expr.value
            if isinstance(expr, (ast.Lambda, ast.Call)):
                raise Doubt  # a lambda or partial rule: classify reads its body, the screen does not
            name = dotted(expr) if expr is not None else None
            if name is not None and _bound_method(m, call, name):
                raise Doubt  # `self.apply_bwd`: JAX's arguments fill the parameters after `self` (sites.methods)
            out.extend(m.defs.get(name.rsplit(".", 1)[-1], []) if name else [])
            out.append(None)
    return fwds or [None], bwds or [None]


def _bound_method(m: Module, call: ast.Call, name: str) -> bool:
    """``name`` reads an attribute of the first parameter of the def the defvjp call is in."""
    caller = m.caller.get(id(call))
    params = positional_params(caller) if caller is not None else []
    return "." in name and bool(params) and name.split(".")[0] == params[0].arg


def imports_a_rule(m: Module, site: Site) -> bool:
    """A rule bound by an import, not a def: project-wide analysis may find it in another file."""
    for call in defvjp_calls(m, site):
        for expr in [*call.args, *(k.value for k in call.keywords)]:
            name = dotted(expr)
            if name is not None and name.split(".")[0] in m.aliases and not m.defs.get(name.rsplit(".", 1)[-1]):
                return True
    return False


def may_be_inconsistent(m: Module, primal: Func, positions: list[int], fwd: Func | None, bwd: Func | None) -> bool:
    varargs = primal.args.vararg is not None
    n_params = len(positional_params(primal))
    n = len(positions)
    if not varargs and any(i >= n_params for i in positions):
        return True  # "nondiff_argnums lists position 5, but `f` takes 2 positional parameters"
    if bwd is not None and bwd.args.vararg is None and len(positional_params(bwd)) != n + 2:
        return True
    names = [a.arg for a in positional_params(primal)]
    if fwd is not None and not varargs and fwd.args.vararg is None:
        fwd_names = [a.arg for a in positional_params(fwd)]
        if len(fwd_names) != n_params or reordered(fwd_names, names):
            return True
    if bwd is not None and not varargs and all(0 <= p < n_params for p in positions):
        expected = [names[p] for p in positions]
        if reordered([a.arg for a in positional_params(bwd)][: len(expected)], expected):
            return True
    if bwd is not None and not varargs:
        for ret in own_returns(m, bwd):  # "bwd `f_bwd` returns 1 cotangent, but `f` has 2 ..."
            elts = ret.value.elts if isinstance(ret.value, (ast.Tuple, ast.List)) else None
            if elts is not None and not any(isinstance(e, ast.Starred) for e in elts) and len(elts) != n_params - n:
                return True
    if bwd is not None and not varargs and n_params - n == 1:
        cotangent = positional_params(bwd)[-1].arg if positional_params(bwd) else ""
        seen: set[object] = set()
        if any(_may_be_bare(m, ret.value, cotangent, bwd, seen) for ret in own_returns(m, bwd)):
            return True
    return False


def _may_be_bare(m: Module, value: ast.expr | None, cotangent: str, func: Func, seen: set[object]) -> bool:
    """A number, arithmetic, the cotangent itself or an array function's call: one value, no
    tuple; or a local bound to one (`ct = g * 2.0`, then `return ct`), either value of a
    conditional, or the call of a def of the module that may return one (plan.returned follows
    helpers; every def of the name here, and the defs a call bound to it names: `h = jax.jit(f)`)."""
    if isinstance(value, ast.Constant) and type(value.value) in (int, float, complex):
        return True
    if isinstance(value, (ast.BinOp, ast.UnaryOp)) or (isinstance(value, ast.Name) and value.id == cotangent):
        return True
    if isinstance(value, ast.IfExp):
        return _may_be_bare(m, value.body, cotangent, func, seen) or _may_be_bare(
            m, value.orelse, cotangent, func, seen
        )
    if isinstance(value, ast.Call):
        if may_be_array_function(m, value.func):
            return True
        return isinstance(value.func, ast.Name) and any(
            _may_return_bare(m, helper, seen) for helper in called_defs(m, value.func.id)
        )
    if not isinstance(value, ast.Name) or (id(func), value.id) in seen:
        return False  # a local already followed: what it may be bound to is looked at there
    seen.add((id(func), value.id))
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
        and _may_be_bare(m, node.value, cotangent, func, seen)
        for node in body_nodes(m, func)
    )


def _may_return_bare(m: Module, helper: Func, seen: set[object]) -> bool:
    if id(helper) in seen:
        return False  # followed already (or being followed): its returns are looked at there
    seen.add(id(helper))
    return any(_may_be_bare(m, ret.value, "", helper, seen) for ret in own_returns(m, helper))


def called_defs(m: Module, name: str, depth: int = 0) -> list[Func]:
    """Every def a call of ``name`` may run: the defs of that name, and the defs a call whose
    value is bound to it is given (`h = partial(f, k=1)`, `h = jax.jit(f)`), through such names
    too (`h = jax.jit(p)` with `p = partial(f, k=1)`)."""
    found = list(m.defs.get(name, ()))
    for call in calls_bound_to(m, name) if depth < 2 else ():
        given = [*call.args, *(k.value for k in call.keywords)]
        found.extend(d for arg in given if isinstance(arg, ast.Name) for d in called_defs(m, arg.id, depth + 1))
    return found


def rule_arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    """The rule sites.rules.rule_arg reads (its keyword, else its position); None on any doubt."""
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    named = [k.value for k in call.keywords if k.arg == keyword]
    if named:
        return named[0]
    return call.args[index] if index < len(call.args) else None


def call_value(call: ast.Call, index: int, name: str) -> ast.expr | None:
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if position == index:
            return arg
    if any(k.arg is None for k in call.keywords):
        return None
    return next((k.value for k in call.keywords if k.arg == name), None)
