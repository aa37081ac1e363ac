"""Screen, step 4: what a `jax.jit` may trace, and the positions it surely marks static."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator

from vjp_migrate.screen.names import JIT, PARTIAL, exactly, int_positions, positional_params, qualified, str_names
from vjp_migrate.screen.sites import Site, call_value, known_as
from vjp_migrate.screen.tree import Doubt, Func, Module, body_nodes, dotted, grown_list


def jit_static(m: Module, primal: Func) -> set[int]:
    """Positions a stacked jax.jit surely marks static (the evidence classify always finds)."""
    if id(primal) not in m.jit_static:
        m.jit_static[id(primal)] = _find_jit_static(m, primal)
    return m.jit_static[id(primal)]


def _find_jit_static(m: Module, primal: Func) -> set[int]:
    params = [p.arg for p in positional_params(primal)]
    static: set[int] = set()
    for keyword in _jit_keywords(m, primal):
        try:
            if keyword.arg == "static_argnums":
                static.update(int_positions(m, keyword.value, allow_range=False))
            elif keyword.arg == "static_argnames":
                static.update(params.index(n) for n in str_names(m, keyword.value) if n in params)
        except (Doubt, IndexError):
            continue
    return static


def _jit_keywords(m: Module, func: Func) -> Iterator[ast.keyword]:
    """The keywords of ``func``'s stacked ``jax.jit(...)``/``partial(jax.jit, ...)`` decorators."""
    for decorator in func.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        first = decorator.args[0] if decorator.args else None
        via_partial = first is not None and exactly(m, decorator.func, PARTIAL) and exactly(m, first, JIT)
        if via_partial or exactly(m, decorator.func, JIT):
            yield from decorator.keywords


def call_site_may_pass_traced(m: Module, site: Site, index: int, name: str) -> bool:
    """classify.call_traced.traced_parameter: a call passes, for the argument, a parameter a jax.jit of a def
    around it may trace, as it came, in arithmetic (`f(w * 2.0)`) or through a module helper
    (`f(doubled(w))`)."""
    names = known_as(m, site)
    for call in m.calls:
        called = dotted(call.func)
        if called is None or called.rsplit(".", 1)[-1] not in names:
            continue
        value = call_value(call, index, name)
        if value is None:
            continue
        if m.traced is None:
            m.traced = _may_be_traced_parameters(m)
        traced = {n for func, params in m.traced if _encloses(func, call) for n in params}
        if _reads(m, value, traced):
            return True
    return False


def _reads(m: Module, expr: ast.expr, names: set[str]) -> bool:
    """``expr`` is one of ``names``, arithmetic on them, or a call of a def of the module given
    such a value (classify follows a helper that returns its parameter or arithmetic on it)."""
    for leaf in _arithmetic_leaves(expr):
        if isinstance(leaf, ast.Name) and leaf.id in names:
            return True
        if (
            isinstance(leaf, ast.Call)
            and isinstance(leaf.func, ast.Name)
            and leaf.func.id in m.defs
            and any(_reads(m, given, names) for given in [*leaf.args, *(k.value for k in leaf.keywords)])
        ):
            return True
    return False


def _may_be_traced_parameters(m: Module) -> list[tuple[Func, set[str]]]:
    """Every def a jax.jit may trace (decorated, or passed to a `jax.jit(run, ...)` call), with
    its parameters but those the jit surely marks static, and the locals computed from them."""
    wrapped = _jit_wrapped(m)
    found = []
    for funcs in m.defs.values():
        for func in funcs:
            traced: set[str] = set()
            if func.decorator_list and may_be_jitted(m, func):
                static = jit_static(m, func)
                traced |= {p.arg for i, p in enumerate(positional_params(func)) if i not in static}
                traced |= {p.arg for p in func.args.kwonlyargs} - _static_names(m, func)
            for call, bound in wrapped.get(func.name, ()):
                traced |= _traced_by_call(m, call, func, bound)
            if traced:
                found.append((func, _computed_from(m, func, traced)))
    return found


def _jit_wrapped(m: Module) -> dict[str, list[tuple[ast.Call, ast.Call | None]]]:
    """The `jax.jit(name, ...)` and `jax.jit(partial(name, ...), ...)` calls of the module, by the
    name they are given, each with the partial call (None without one)."""
    found: dict[str, list[tuple[ast.Call, ast.Call | None]]] = {}
    for call in m.calls:
        first = call.args[0] if call.args else None
        if not _may_be_jit(m, call.func):
            continue
        bound = None
        if isinstance(first, ast.Call) and first.args and _may_be_partial(m, first.func):
            bound, first = first, first.args[0]
        if isinstance(first, ast.Name):
            found.setdefault(first.id, []).append((call, bound))
    return found


def _may_be_partial(m: Module, func: ast.expr) -> bool:
    return any(q.rsplit(".", 1)[-1] == "partial" for q in qualified(m, func) | {dotted(func) or ""})


def _traced_by_call(m: Module, call: ast.Call, func: Func, bound: ast.Call | None) -> set[str]:
    """The parameters the jit call may trace: not those its partial binds (passed on as they
    are) nor those its literal static arguments mark, counted past the partial's positions."""
    params = [p.arg for p in positional_params(func)]
    given = bound.args[1:] if bound is not None else []
    skip = 0 if any(isinstance(a, ast.Starred) for a in given) else len(given)
    static = {k.arg for k in bound.keywords if k.arg} if bound is not None else set()
    static |= set(params[:skip])
    for keyword in call.keywords:
        with contextlib.suppress(Doubt, IndexError):
            if keyword.arg == "static_argnums":
                static.update(params[skip:][i] for i in int_positions(m, keyword.value, allow_range=False))
            elif keyword.arg == "static_argnames":
                static.update(str_names(m, keyword.value))
    return {*params, *(p.arg for p in func.args.kwonlyargs)} - static


def _computed_from(m: Module, func: Func, names: set[str]) -> set[str]:
    """``names`` and the names ``func`` binds to values read from them, to a fixpoint: arithmetic
    on them or a helper's result (`s = w * 2.0`), a literal holding one (`pair = (w1, w2)`), the
    parts of one unpacked (`a, b = pair`), and the items of a loop or comprehension over anything
    that mentions them (`for w in ws`), and a list grown with them (`ws += [w]`, `ws.append(w)`)."""
    body = body_nodes(m, func)  # nested defs too: a local of one may come from this def's parameter
    binders: list[tuple[list[ast.expr], ast.expr]] = [(n.targets, n.value) for n in body if isinstance(n, ast.Assign)]
    binders += [([n.target], n.value) for n in body if isinstance(n, ast.AugAssign)]  # `ws += [w2]`
    for owner, given in filter(None, map(grown_list, body)):  # `ws.append(w2)`: ws holds what it is given
        binders += [([owner], value) for value in given]
    loops = [(n.target, n.iter) for n in body if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension))]
    grown = True
    while grown:
        before = len(names)
        for targets, value in binders:
            parts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]  # `pair = (w1, w2)`
            if any(_reads(m, part, names) for part in parts):
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for target, over in loops:
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(over)):
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        grown = len(names) > before
    return names


def _static_names(m: Module, func: Func) -> set[str]:
    """The names a stacked jax.jit's literal ``static_argnames`` surely marks static."""
    names: set[str] = set()
    for keyword in _jit_keywords(m, func):
        if keyword.arg == "static_argnames":
            with contextlib.suppress(Doubt):
                names.update(str_names(m, keyword.value))
    return names


def _encloses(func: Func, node: ast.expr) -> bool:
    return func.lineno <= node.lineno <= (func.end_lineno or func.lineno)


def _arithmetic_leaves(expr: ast.expr) -> Iterator[ast.expr]:
    if isinstance(expr, ast.BinOp):
        yield from _arithmetic_leaves(expr.left)
        yield from _arithmetic_leaves(expr.right)
    elif isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        yield from _arithmetic_leaves(expr.operand)
    else:
        yield expr


def may_be_jitted(m: Module, func: Func) -> bool:
    """A decorator of ``func`` may be a ``jax.jit`` (``@jax.jit``, ``@partial(jax.jit, ...)``,
    ``@jax.jit(...)``, under any alias)."""
    for decorator in func.decorator_list:
        parts = [decorator]
        if isinstance(decorator, ast.Call):
            parts += [decorator.func, *decorator.args[:1]]
        if any(_may_be_jit(m, part) for part in parts):
            return True
    return False


def _may_be_jit(m: Module, expr: ast.expr) -> bool:
    return isinstance(expr, (ast.Name, ast.Attribute)) and any(
        q == "jit" or q.endswith(".jit") for q in qualified(m, expr) | {dotted(expr) or ""}
    )
