"""Screen step 4: what a `jax.jit` may trace, and the positions it surely marks static."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator

from vjp_migrate.screen.names import JIT, PARTIAL, exactly, int_positions, positional_params, qualified, str_names
from vjp_migrate.screen.sites import Site, call_value, known_as
from vjp_migrate.screen.tree import Doubt, Func, Module, dotted, own_nodes, walk_nodes


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
    """classify._traced_parameter: a call passes, for the argument, a parameter a jax.jit of a def
    around it may trace, as it came or in arithmetic (`f(w * 2.0)`)."""
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
        if any(isinstance(leaf, ast.Name) and leaf.id in traced for leaf in _arithmetic_leaves(value)):
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
            for call in wrapped.get(func.name, ()):
                traced |= _traced_by_call(m, call, func)
            if traced:
                found.append((func, _computed_from(m, func, traced)))
    return found


def _jit_wrapped(m: Module) -> dict[str, list[ast.Call]]:
    """The `jax.jit(name, ...)` calls of the module, by the name they are given."""
    found: dict[str, list[ast.Call]] = {}
    for call in m.calls:
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and _may_be_jit(m, call.func):
            found.setdefault(first.id, []).append(call)
    return found


def _traced_by_call(m: Module, call: ast.Call, func: Func) -> set[str]:
    params = [p.arg for p in positional_params(func)]
    static: set[str] = set()
    for keyword in call.keywords:
        with contextlib.suppress(Doubt, IndexError):
            if keyword.arg == "static_argnums":
                static.update(params[i] for i in int_positions(m, keyword.value, allow_range=False))
            elif keyword.arg == "static_argnames":
                static.update(str_names(m, keyword.value))
    return {*params, *(p.arg for p in func.args.kwonlyargs)} - static


def _computed_from(m: Module, func: Func, names: set[str]) -> set[str]:
    """``names`` and the names ``func`` binds to arithmetic on them (`s = w * 2.0`), to a fixpoint."""
    if id(func) not in m.bodies:  # nested defs too: a local of one may come from this def's parameter
        m.bodies[id(func)] = own_nodes(m, func) + walk_nodes(m.nested[id(func)])
    assigns = [node for node in m.bodies[id(func)] if isinstance(node, ast.Assign)]
    grown = True
    while grown:
        before = len(names)
        for node in assigns:
            if any(isinstance(leaf, ast.Name) and leaf.id in names for leaf in _arithmetic_leaves(node.value)):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
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
