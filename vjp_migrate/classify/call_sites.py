"""Classify, step 8: evidence from the calls of a site: values passed, a jitted caller's traced or
static parameters, loops and helpers that carry them, `jax.jit(run)` and `jax.jit(partial(run, ...))`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.annotations import annotated_leafless, annotation_evidence, unquoted
from vjp_migrate.classify.context import Context, Wrapped, function_locals, own_body
from vjp_migrate.classify.expressions import (
    all_params,
    arithmetic_leaves,
    call_value,
    code_text,
    first_positional,
    is_int_tuple,
    is_string_like,
)
from vjp_migrate.classify.weights import CALL_SITE, LEAFLESS
from vjp_migrate.imports import JIT, PARTIAL, ImportTable, dotted
from vjp_migrate.model import ArgKind, Evidence, VjpSite
from vjp_migrate.sites import jit_call_static_names, jit_static_names, own_returns, positional_params
from vjp_migrate.vocabulary import ARRAY_MODULES, MAPPING_ANNOTATION_NAMES


def call_site_evidence(
    value: cst.BaseExpression,
    ctx: Context,
    callers: tuple[cst.FunctionDef, ...],
    line: int | None,
    passed: frozenset[str] = frozenset(),
    wrapped: Wrapped | None = None,
    lambda_params: frozenset[str] = frozenset(),
) -> tuple[Evidence, str] | None:
    """What the value passed at one call site of the primal says about the argument (``passed``:
    the functions the module hands to another call, `jax.jit(run)`, whose parameters may be Tracers;
    ``wrapped``: those a `jax.jit(run, ...)` call wraps; ``lambda_params``: the names lambdas
    around the call bind, which are none of the callers' parameters or locals)."""
    text = cst.Module([]).code_for_node(value)
    at = f"at a call site (`{text}`)"
    if isinstance(value, cst.Lambda) or (isinstance(value, cst.Name) and ctx.definitions(value.value)):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if is_string_like(value) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
        return Evidence(ArgKind.STATIC, f"a constant is passed {at}", line), CALL_SITE
    if is_int_tuple(value):
        return Evidence(ArgKind.STATIC, f"a shape is passed {at}", line), CALL_SITE
    qname = ctx.imports.qualify(value.func if isinstance(value, cst.Call) else value) or ""
    if isinstance(value, cst.Call) and qname.startswith(ARRAY_MODULES):
        return Evidence(ArgKind.ARRAY, f"an array is passed {at}", line), CALL_SITE
    if not isinstance(value, cst.Call) and qname.startswith(("jax.", "numpy.")):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if (traced := traced_parameter(value, ctx, callers, wrapped or {}, lambda_params)) is not None:
        param, jitted, through = traced
        how = f", through `{through}`" if through else ""
        text = f"a traced value (from the parameter `{param}` of the jitted `{jitted}`{how}) is passed {at}"
        return Evidence(ArgKind.ARRAY, text, line), CALL_SITE
    if isinstance(value, cst.Name) and value.value not in lambda_params:
        for caller in reversed(callers):  # the def that binds the name: the call's, or one around it
            params = (*positional_params(caller), *(p.name.value for p in caller.params.kwonly_params))
            if value.value in params:
                if _rebound(caller, value.value, ctx):
                    break
                if value.value in jit_static_names(caller, ctx.imports):
                    return Evidence(
                        ArgKind.STATIC, f"a jit-static parameter of `{caller.name.value}` is passed {at}", line
                    ), CALL_SITE
                if annotated_leafless(caller, value.value, ctx):  # untraced under a jit of the caller too
                    return _passed_on(caller, value.value, ctx, at)
                if (
                    ctx.helpers.get(caller.name.value) is caller
                    and not caller.decorators
                    and caller.name.value not in passed
                ):
                    return _passed_on(caller, value.value, ctx, at)
                break
            if value.value in function_locals(caller, ctx).bindings:
                break
    return None


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
            and not _rebound(caller, leaf.value, ctx)
            and not annotated_leafless(caller, leaf.value, ctx)
        ):
            return leaf.value, caller.name.value, through
        bound = _local_values(leaf.value, callers[-1], ctx) if callers and caller is None and depth < 3 else ()
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


def _local_values(name: str, func: cst.FunctionDef, ctx: Context) -> tuple[cst.BaseExpression, ...]:
    """The value a local of ``func`` that one plain assignment binds is bound to (`s = w * 2.0`),
    or what a local that one loop binds takes its items from: the sequence (`for w in ws`), or
    each item a literal lists (`for w in (w1, w2)`; `*ws` in it gives the sequence ws)."""
    bound = function_locals(func, ctx).bindings.get(name, [])
    if len(bound) != 1 or bound[0].values is None:
        return ()
    node = bound[0].node
    if isinstance(node, (cst.For, cst.CompFor)):
        sequence = _loop_sequence(name, node.target, node.iter)
        if sequence is None or _keyed(sequence, func) or _looks_up(func, sequence, name):
            return ()
        sequence = _bound_tuple(sequence, func, ctx) or sequence
        if isinstance(sequence, (cst.Tuple, cst.List, cst.Set)):
            return tuple(element.value for element in sequence.elements)
        return (sequence,)
    if not isinstance(node, (cst.Assign, cst.AnnAssign)):
        return ()
    return tuple(bound[0].values)


def _bound_tuple(sequence: cst.BaseExpression, func: cst.FunctionDef, ctx: Context) -> cst.Tuple | None:
    """The literal tuple a local of ``func`` is bound to (`pair = (w1, w2)`), if no other binding
    of it is: a tuple is never changed in place, so a loop over the name takes those items."""
    bound = function_locals(func, ctx).bindings.get(sequence.value, []) if isinstance(sequence, cst.Name) else []
    if len(bound) != 1 or not isinstance(bound[0].node, (cst.Assign, cst.AnnAssign)) or bound[0].values is None:
        return None
    value = bound[0].values[0]
    return value if isinstance(value, cst.Tuple) else None


def _loop_sequence(name: str, target: cst.BaseExpression, iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """The sequence whose items the loop target ``name`` takes: `ws` in `for w in ws`,
    `for i, w in enumerate(ws)` and `for w, b in zip(ws, bs)` (not `i`: a Python int)."""
    if isinstance(target, cst.Name):
        return iterable if target.value == name else None
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterable, cst.Call):
        return None
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    sequences = [a.value for a in iterable.args if not a.keyword and not a.star]
    if len(sequences) != len(iterable.args) or name not in names or not isinstance(iterable.func, cst.Name):
        return None
    if iterable.func.value == "enumerate" and len(names) == 2 and len(sequences) == 1:
        return sequences[0] if names[1] == name else None
    if iterable.func.value == "zip" and len(names) == len(sequences):
        return sequences[names.index(name)]
    return None


def _keyed(sequence: cst.BaseExpression, func: cst.FunctionDef) -> bool:
    """Whether ``sequence`` is a parameter of ``func`` annotated as a mapping: a loop over it
    takes its keys, Python values."""
    param = next(
        (p for p in all_params(func.params) if isinstance(sequence, cst.Name) and p.name.value == sequence.value), None
    )
    annotation = param.annotation.annotation if param is not None and param.annotation is not None else None
    if annotation is None:
        return False
    annotation = unquoted(annotation)
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    return (dotted(head) or "").rsplit(".", 1)[-1] in MAPPING_ANNOTATION_NAMES


class _Lookups(cst.CSTVisitor):
    """The key names subscripting one name: `k` in `params[k]`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.keys: set[str] = set()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.name and len(node.slice) == 1:
            key = node.slice[0].slice
            if isinstance(key, cst.Index) and isinstance(key.value, cst.Name):
                self.keys.add(key.value.value)


def _looks_up(func: cst.FunctionDef, sequence: cst.BaseExpression, name: str) -> bool:
    """Whether ``func`` subscripts the looped-over ``sequence`` with the loop target ``name``
    (`for k in params: ... params[k]`): a mapping's keys, Python values."""
    if not isinstance(sequence, cst.Name):
        return False
    lookups = _Lookups(sequence.value)
    for stmt in own_body(func):
        walk.visit(stmt, lookups)
    return name in lookups.keys


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
        if name in params and all(name in names for names in returned[1:]) and not _rebound(helper, name, ctx):
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


def _passed_on(caller: cst.FunctionDef, param: str, ctx: Context, at: str) -> tuple[Evidence, str] | None:
    """A parameter of an undecorated module-level caller (no method, no def inside another, not
    handed to a call such as `jax.jit(run)`) passed on as it came: what its own annotation or
    default says static (`use_tf32: bool = True`) holds for the argument too."""
    where = f"the caller `{caller.name.value}`"
    weight = LEAFLESS if annotated_leafless(caller, param, ctx) else CALL_SITE
    for evidence, _ in annotation_evidence(caller, param, ctx, where):
        if evidence.kind is ArgKind.STATIC:
            return replace(evidence, text=f"{evidence.text}, passed on {at}"), weight
    return None


def _rebound(func: cst.FunctionDef, param: str, ctx: Context) -> bool:
    """Whether the body of ``func`` assigns its parameter ``param`` (`scale = scale / x.std()`)."""
    return any(not isinstance(b.node, cst.Param) for b in function_locals(func, ctx).bindings.get(param, ()))


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
        if name is not None:
            self.calls.append((name, node, tuple(self.stack)))
            if self.lambdas:
                self.lambda_params[id(node)] = frozenset().union(*self.lambdas)
        self.passed.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name))


def calls_of(site: VjpSite, module: cst.Module, ctx: Context) -> list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]:
    """The calls of the site's custom_vjp, in module order (one walk per module, not per site)."""
    calls = ctx.calls.get(id(module))
    if calls is None:
        finder = CallSites()
        walk.visit(module, finder)
        calls = ctx.calls[id(module)] = finder.calls
        ctx.passed[id(module)] = frozenset(finder.passed)
        ctx.lambda_params.update(finder.lambda_params)
        ctx.wrapped[id(module)] = _jit_wrapped(calls, ctx)
    names = {site.name, site.qualname}
    return [(call, caller) for name, call, caller in calls if name in names]


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
