"""Sites, step 2: stacked `jax.jit` decorators and `jax.jit(...)` calls: the positions and names
they mark static, and the other decorators a rule carries."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.imports import JIT, PARTIAL, ImportTable, dotted
from vjp_migrate.model import JitSpec
from vjp_migrate.sites.scopes import int_literals, positional_params, str_literals
from vjp_migrate.vocabulary import NAMING_DECORATORS


def _jit_call(decorator: cst.Decorator, imports: ImportTable) -> cst.Call | bool:
    """The call of a ``jax.jit`` decorator (True for a bare ``@jax.jit``; False: not jit)."""
    expr = decorator.decorator
    if not isinstance(expr, cst.Call):
        return imports.is_one_of(expr, JIT)
    if imports.is_one_of(expr.func, PARTIAL) and expr.args and imports.is_one_of(expr.args[0].value, JIT):
        return expr
    if imports.is_one_of(expr.func, JIT) and all(a.keyword is not None for a in expr.args):
        return expr
    return False


def _first_jit(func: cst.FunctionDef, imports: ImportTable) -> tuple[int, cst.Call | bool]:
    """The position of the first ``jax.jit`` decorator and its call (-1, False: none)."""
    for position, decorator in enumerate(func.decorators):
        call = _jit_call(decorator, imports)
        if call is not False:
            return position, call
    return -1, False


def rule_jit(func: cst.FunctionDef, imports: ImportTable) -> JitSpec | None:
    """A rule's (first) jax.jit decorator, with its static arguments."""
    position, call = _first_jit(func, imports)
    if call is False:
        return None
    argnums: tuple[int, ...] | None = ()
    argnames: tuple[str, ...] | None = ()
    positional: list[str] = []
    for arg in call.args if isinstance(call, cst.Call) else ():
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "static_argnums":
            argnums = int_literals(arg.value, signed=True)
        elif keyword == "static_argnames":
            argnames = str_literals(arg.value)
        elif keyword in ("donate_argnums", "donate_argnames", "in_shardings", "in_axis_resources"):
            positional.append(keyword)
    return JitSpec(func.decorators[position], argnums, argnames, tuple(positional))


def other_decorator(func: cst.FunctionDef, imports: ImportTable, method: bool = False) -> str | None:
    """The code of a rule's first decorator other than its first jax.jit, ``staticmethod`` and
    those that only name its calls (``@partial(jax.named_call, name=...)``); ``classmethod`` too
    for a ``method`` read through the instance (`self.apply_bwd`: its class fills `cls`)."""
    position = _first_jit(func, imports)[0]
    binders = ("staticmethod", "classmethod") if method else ("staticmethod",)
    for index, decorator in enumerate(func.decorators):
        if index != position and dotted(decorator.decorator) not in binders and not _naming(decorator, imports):
            return cst.Module([]).code_for_node(decorator.decorator)
    return None


def rule_decorations(
    role: str, name: str, func: cst.FunctionDef, imports: ImportTable, method: bool = False
) -> tuple[JitSpec | None, str | None]:
    """A rule's jax.jit decorator, and for bwd a decorator that may tie its signature (the
    VJP003 detail), read with the imports of the rule's own module (``method``: see other_decorator)."""
    other = other_decorator(func, imports, method) if role == "bwd" else None
    problem = f"bwd `{name}` is decorated with `@{other}`, which may depend on its signature" if other else None
    return rule_jit(func, imports), problem


def _naming(decorator: cst.Decorator, imports: ImportTable) -> bool:
    """``@jax.named_call``, ``@jax.named_scope("...")``, ``@partial(jax.named_call, name=...)``."""
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        first = expr.args[0] if expr.args else None
        if imports.is_one_of(expr.func, PARTIAL) and first is not None and first.keyword is None:
            expr = first.value
        else:
            expr = expr.func
    return imports.is_one_of(expr, NAMING_DECORATORS)


def jit_static_positions(func: cst.FunctionDef, params: tuple[str, ...], imports: ImportTable) -> frozenset[int]:
    """Positions a ``jax.jit`` decorator on ``func`` (plain or through partial) marks static."""
    numbers, names = _jit_static(func, imports)
    return frozenset(_counted(numbers, len(params)) | {params.index(n) for n in names if n in params})


def jit_static_names(func: cst.FunctionDef, imports: ImportTable) -> frozenset[str]:
    """The parameters (keyword-only ones too) a ``jax.jit`` decorator on ``func`` marks static."""
    numbers, names = _jit_static(func, imports)
    return static_params(func, numbers, names)


def jit_call_static_names(call: cst.Call, func: cst.FunctionDef, bound: int = 0) -> frozenset[str] | None:
    """The parameters of ``func`` that the call ``jax.jit(func, ...)`` marks static; None when it
    gives its static arguments by other than literals (or by ``*``/``**``). ``bound``: the leading
    positions a ``partial(func, ...)`` it wraps fills, which its argnums count past."""
    literals = jit_call_literals(call, bound)
    return static_params(func, *literals) if literals is not None else None


def jit_call_literals(call: cst.Call, bound: int = 0) -> tuple[set[int], set[str]] | None:
    """The literal ``static_argnums`` (past ``bound``) and ``static_argnames`` of the call
    ``jax.jit(func, ...)``; None when it gives them by other than literals (or by ``*``/``**``)."""
    numbers: set[int] = set()
    names: set[str] = set()
    for arg in call.args[1:]:
        keyword = arg.keyword.value if arg.keyword else None
        if arg.star or keyword is None:
            return None
        if keyword == "static_argnums":
            found = int_literals(arg.value, signed=True)
            if found is None:
                return None
            numbers.update(n + bound if n >= 0 else n for n in found)
        elif keyword == "static_argnames":
            named = str_literals(arg.value)
            if named is None:
                return None
            names.update(named)
    return numbers, names


def static_params(func: cst.FunctionDef, numbers: set[int], names: set[str]) -> frozenset[str]:
    """The parameters of ``func`` that jit's ``static_argnums`` ``numbers`` and ``static_argnames``
    ``names`` mark (a name ``func`` does not declare marks nothing)."""
    params = positional_params(func)
    declared = {*params, *(p.name.value for p in func.params.kwonly_params)}
    return frozenset({params[i] for i in _counted(numbers, len(params)) if i < len(params)} | (names & declared))


def _counted(numbers: set[int], n_params: int) -> set[int]:
    """jit's argnums as positions among ``n_params`` parameters (a negative one counts from the end)."""
    return {i + n_params if i < 0 else i for i in numbers if i >= -n_params}


def _jit_static(func: cst.FunctionDef, imports: ImportTable) -> tuple[set[int], set[str]]:
    """The literal ``static_argnums`` and ``static_argnames`` of the ``jax.jit`` decorators on ``func``."""
    numbers: set[int] = set()
    names: set[str] = set()
    for decorator in func.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or not _jit_decorator(call, imports):
            continue
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "static_argnums":
                numbers.update(int_literals(arg.value, signed=True) or ())
            elif keyword == "static_argnames":
                names.update(str_literals(arg.value) or ())
    return numbers, names


def _jit_decorator(call: cst.Call, imports: ImportTable) -> bool:
    """``jax.jit(...)`` or ``partial(jax.jit, ...)``."""
    via_partial = imports.is_one_of(call.func, PARTIAL) and bool(call.args)
    return (via_partial and imports.is_one_of(call.args[0].value, JIT)) or imports.is_one_of(call.func, JIT)
