"""Classify, step 8a: the calls of a site, found in one walk of the module (with the functions each
is in, the names lambdas around it bind, the functions handed to other calls), those through a
factory that returns the site (factory_calls.py) or an instance of its class (method_calls.py),
and the defs a `jax.jit(run, ...)` or `jax.jit(partial(run, ...), ...)` call wraps."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.context import Context, Wrapped, function_locals
from vjp_migrate.classify.expressions import all_params, first_positional
from vjp_migrate.classify.factory_calls import CALLED_RESULT, factory_calls
from vjp_migrate.classify.method_calls import instance_calls
from vjp_migrate.imports import JIT, PARTIAL, dotted
from vjp_migrate.model import VjpSite
from vjp_migrate.sites import jit_call_static_names, positional_params


class CallSites(cst.CSTVisitor):
    """Every call of a dotted name in the module, with that name and the functions the call is in."""

    def __init__(self) -> None:
        self.stack: list[cst.FunctionDef] = []
        self.calls: list[tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]] = []
        self.passed: set[str] = set()
        self.lambdas: list[frozenset[str]] = []
        self.lambda_params: dict[int, frozenset[str]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.lambdas.append(frozenset(p.name.value for p in all_params(node.params) if not _captures_itself(p)))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.lambdas.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func)
        if name is None and isinstance(node.func, cst.Call):  # `make(cfg)(x, k)`
            inner = dotted(node.func.func)
            name = inner + CALLED_RESULT if inner is not None else None
        if name is not None:
            self.calls.append((name, node, tuple(self.stack)))
            if self.lambdas:
                self.lambda_params[id(node)] = frozenset().union(*self.lambdas)
        self.passed.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name))


def calls_of(
    site: VjpSite, module: cst.Module, ctx: Context, jitted: str | None = None
) -> list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]:
    """The calls of the site's custom_vjp, in module order (one walk per module, not per site);
    also those through ``jitted``, the name or attribute a ``jax.jit`` of the primal is bound to
    (``simulate.jit(x, tend=t)``, ``simulate.jit.lower(...)``), whose arguments are the primal's."""
    calls = ctx.calls.get(id(module))
    if calls is None:
        finder = CallSites()
        walk.visit(module, finder)
        calls = ctx.calls[id(module)] = finder.calls
        ctx.passed[id(module)] = frozenset(finder.passed)
        ctx.lambda_params.update(finder.lambda_params)
        ctx.wrapped[id(module)] = _jit_wrapped(calls, ctx)
    names = {site.name, site.qualname, *((jitted, f"{jitted}.lower") if jitted else ())}
    direct = [(call, caller) for name, call, caller in calls if name in names and _may_reach(site, caller, ctx)]
    seen = {id(call) for call, _ in direct}
    through = [*factory_calls(site, module, ctx, calls), *instance_calls(site, module, ctx, calls)]
    return direct + [(call, caller) for call, caller in through if id(call) not in seen]


def _may_reach(site: VjpSite, callers: tuple[cst.FunctionDef, ...], ctx: Context) -> bool:
    """Whether a call of the site's name in ``callers`` may call the site: not when the innermost
    def binding that name binds it to something else (another test's own `masked`)."""
    for caller in reversed(callers):
        bound = function_locals(caller, ctx).bindings.get(site.name)
        if bound:
            return any(b.node is site.primal or any(v is site.carrier for v in b.values or ()) for b in bound)
    return True


def _jit_wrapped(calls: list[tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]], ctx: Context) -> Wrapped:
    """The module's defs that a call ``jax.jit(run, ...)`` or ``jax.jit(partial(run, ...), ...)``
    wraps (where no def around it binds ``run`` otherwise), each with the parameters every such
    call with literal static arguments marks static or binds with its partial."""
    wrapped: Wrapped = {}
    for _, call, callers in calls:
        if not call.args or call.args[0].keyword or call.args[0].star or not ctx.imports.is_one_of(call.func, JIT):
            continue
        target: cst.BaseExpression | None = call.args[0].value
        partial = target if isinstance(target, cst.Call) and ctx.imports.is_one_of(target.func, PARTIAL) else None
        if partial is not None:
            target = first_positional(partial)
        func = ctx.helpers.get(target.value) if isinstance(target, cst.Name) else None
        if func is None or any(func.name.value in function_locals(caller, ctx).bindings for caller in callers):
            continue
        bound = _partial_bound(partial, func) if partial is not None else (0, frozenset[str]())
        if bound is None:
            continue
        count, names = bound
        if names & set(positional_params(func)[count:]) and any(
            a.keyword and a.keyword.value == "static_argnums" for a in call.args
        ):
            continue  # a positional parameter bound by keyword makes those after it keyword-only
        static = jit_call_static_names(call, func, count)
        if static is not None:
            wrapped.setdefault(func.name.value, []).append(static | names | set(positional_params(func)[:count]))
    return wrapped


def _partial_bound(partial: cst.Call, func: cst.FunctionDef) -> tuple[int, frozenset[str]] | None:
    """How many leading positions of ``func`` the call ``partial(func, ...)`` fills, and the
    parameters it binds by keyword (jit passes both on as the Python values they are); None
    when it passes ``*``/``**``."""
    rest = partial.args[1:]
    if any(arg.star for arg in rest):
        return None
    names = frozenset(arg.keyword.value for arg in rest if arg.keyword is not None)
    return sum(arg.keyword is None for arg in rest), names


def _captures_itself(param: cst.Param) -> bool:
    """`w=w`: a lambda's parameter whose default is the value of that name around it."""
    return isinstance(param.default, cst.Name) and param.default.value == param.name.value
