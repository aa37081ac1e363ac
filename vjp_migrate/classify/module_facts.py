"""Classify, step 3: module-wide facts the evidence rules consult: the defs of the module scope,
its enum classes, JAX primitives and arrays, the names bound once."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from vjp_migrate.classify.expressions import all_params
from vjp_migrate.imports import JIT, PARTIAL, ImportTable, dotted, node_types, small_statements, target_names
from vjp_migrate.sites.jit import jit_call_static_names
from vjp_migrate.vocabulary import ENUM_CLASSES, PRIMITIVE_CLASSES, makes_jax_array


def module_helpers(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """The functions the module defines in its own scope, by name: each def at its top level (the
    last of a name), and a def inside a module-level ``if``, ``try`` or ``with`` (``if HAS_JAX:``)
    whose name nothing else in the module's scope binds."""
    return {name: defs[0] for name, defs in _module_defs(module).items() if len(defs) == 1}


def module_variants(module: cst.Module) -> dict[str, tuple[cst.FunctionDef, ...]]:
    """The names bound to more than one def in the module's scope, one of them at least inside a
    block (``if HAS_JAX: def f ... else: def f ...``): which one a call reaches is not known."""
    return {name: defs for name, defs in _module_defs(module).items() if len(defs) > 1}


def _module_defs(module: cst.Module) -> dict[str, tuple[cst.FunctionDef, ...]]:
    top: dict[str, cst.FunctionDef] = {}
    nested: dict[str, list[cst.FunctionDef]] = {}
    others: set[str] = set()
    for stmt, in_block in _scope_statements(module.body):
        if isinstance(stmt, cst.FunctionDef):
            if in_block:
                nested.setdefault(stmt.name.value, []).append(stmt)
            else:
                top[stmt.name.value] = stmt
        else:
            others.update(names_bound_by(stmt))
    found: dict[str, tuple[cst.FunctionDef, ...]] = {name: (func,) for name, func in top.items()}
    for name, defs in nested.items():
        if name in others:  # `try: from fast import f` / `except ImportError: def f ...`
            found.pop(name, None)
        else:
            found[name] = (*((top[name],) if name in top else ()), *defs)
    return found


_BLOCKS = node_types(cst.If, cst.Try, cst.TryStar, cst.With, cst.For, cst.While)

# What the scopes of the functions around a nested def bind, by name: the def a call of the name
# reaches, or None when the name is bound otherwise or more than once (a call reaches no known def).
Enclosing = dict[str, cst.FunctionDef | None]


def enclosing_defs(module: cst.Module) -> dict[int, Enclosing]:
    """For each def nested in a function (a factory's helpers and rules), by its id: the defs the
    enclosing functions' scopes bind, the innermost scope's binding of a name winning."""
    found: dict[int, Enclosing] = {}

    def scan(statements: list[cst.BaseStatement | cst.BaseSmallStatement], outer: Enclosing | None) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.FunctionDef):
                if outer is not None:
                    found[id(stmt)] = outer
                own = _scope_of(stmt)
                if any(isinstance(inner, (cst.FunctionDef, cst.ClassDef)) for inner in own):  # else no scope to pass
                    scan(own, {**(outer or {}), **_function_scope(stmt, own)})
            elif isinstance(stmt, cst.ClassDef):  # a class's scope is not its methods'
                scan(_scope_of(stmt), outer)

    scan([stmt for stmt, _ in _scope_statements(module.body)], None)
    return found


def _scope_of(node: cst.FunctionDef | cst.ClassDef) -> list[cst.BaseStatement | cst.BaseSmallStatement]:
    """The statements run in the scope of a def or a class, in its blocks too."""
    return [stmt for stmt, _ in _scope_statements(list(_block_statements(node)))]


def _function_scope(func: cst.FunctionDef, own: list[cst.BaseStatement | cst.BaseSmallStatement]) -> Enclosing:
    """What ``func``'s scope binds (``own``: its statements), by name."""
    defs: dict[str, list[cst.FunctionDef]] = {}
    others = {param.name.value for param in all_params(func.params)}
    for stmt in own:
        if isinstance(stmt, cst.FunctionDef):
            defs.setdefault(stmt.name.value, []).append(stmt)
        else:
            others.update(names_bound_by(stmt))
    scope: Enclosing = {name: None for name in others}
    scope.update({name: found[0] if len(found) == 1 and name not in others else None for name, found in defs.items()})
    return scope


def _scope_statements(
    statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement], in_block: bool = False
) -> Iterator[tuple[cst.BaseStatement | cst.BaseSmallStatement, bool]]:
    """The statements run in the module's own scope (not in a def's or a class's), each with
    whether it is inside a block."""
    for stmt in statements:
        yield stmt, in_block
        if type(stmt) in _BLOCKS:
            yield from _scope_statements(list(_block_statements(stmt)), True)


def _block_statements(node: cst.CSTNode) -> Iterator[cst.BaseStatement | cst.BaseSmallStatement]:
    for name in ("body", "handlers", "orelse", "finalbody"):
        value = getattr(node, name, None)
        for part in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(part, cst.BaseSuite):
                yield from part.body
            elif isinstance(part, cst.If):  # elif
                yield part
            elif isinstance(part, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)):
                yield from _block_statements(part)


_SMALL_STATEMENTS = node_types(cst.BaseSmallStatement)


def names_bound_by(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> Iterator[str]:
    """The names a statement other than a def binds in the scope it runs in (not inside it)."""
    if type(stmt) is cst.SimpleStatementLine:  # `type() is`: see imports.node_types
        for small in stmt.body:
            yield from _small_bound_names(small)
    elif type(stmt) is cst.ClassDef:
        yield stmt.name.value
    elif type(stmt) is cst.For:
        yield from target_names(stmt.target)
    elif type(stmt) is cst.With:
        for item in stmt.items:
            if item.asname is not None:
                yield from target_names(item.asname.name)
    elif type(stmt) in _SMALL_STATEMENTS and isinstance(stmt, cst.BaseSmallStatement):
        yield from _small_bound_names(stmt)


def module_enums(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The classes the module defines at its top level that derive (through each other too) from
    ``enum.Enum``, ``StrEnum`` or ``Flag``: not ``IntEnum``/``IntFlag``, whose members are ints that
    a comparison with an array would broadcast against."""
    classes = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)}
    enums: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name not in enums and any(
                imports.qualify(base.value) in ENUM_CLASSES
                or (isinstance(base.value, cst.Name) and base.value.value in enums)
                for base in node.bases
            ):
                enums.add(name)
                changed = True
    return bound_once(module, enums)


def module_primitives(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """Names the module binds once, at its top level, to a new ``Primitive(...)``; a name bound by
    any other assignment, import, def or class anywhere in the module is not one."""
    return bound_once_to_a_call(module, lambda func: imports.qualify(func) in PRIMITIVE_CLASSES)


def bound_once_to_a_call(module: cst.Module, calls: Callable[[cst.BaseExpression], bool]) -> frozenset[str]:
    """The names the module binds once, at its top level, by `name = f(...)` with ``calls(f)``."""
    made: set[str] = set()
    for stmt in module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Call)
                and calls(small.value.func)
            ):
                made.add(small.targets[0].target.value)
    return bound_once(module, made)


def module_arrays(module: cst.Module, imports: ImportTable) -> dict[str, cst.Call]:
    """Names the module binds once, at its top level, to what a JAX array function makes
    (`SIZES = jnp.array([50, 450])`), each with that call."""
    found = {
        name: value
        for name, value in _top_level_assigns(module)
        if isinstance(value, cst.Call) and makes_jax_array(imports.qualify(value.func))
    }
    once = bound_once(module, set(found))
    return {name: value for name, value in found.items() if name in once}


def bound_once(module: cst.Module, names: set[str]) -> frozenset[str]:
    """Those of ``names`` that the module binds exactly once, counting every binding anywhere."""
    if not names:
        return frozenset()
    counts: dict[str, int] = {}
    for name in _bound_names(module):
        counts[name] = counts.get(name, 0) + 1
    return frozenset(name for name in names if counts.get(name) == 1)


def _bound_names(module: cst.Module) -> Iterator[str]:
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            yield stmt.name.value
    for small in small_statements(module):
        yield from _small_bound_names(small)


def _small_bound_names(small: cst.BaseSmallStatement) -> Iterator[str]:
    if type(small) is cst.Assign:  # `type() is`: see imports.node_types
        for target in small.targets:
            yield from target_names(target.target)
    elif type(small) is cst.AnnAssign or type(small) is cst.AugAssign:
        yield from target_names(small.target)
    elif (type(small) is cst.Import or type(small) is cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        for alias in small.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            text = dotted(bound)  # None for anything but a Name or an Attribute
            if text is not None:
                yield text.split(".")[0]


def _top_level_assigns(module: cst.Module) -> Iterator[tuple[str, cst.BaseExpression]]:
    """Each `name = value` of the module's top level with one plain name as its target."""
    for small in (s for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine) for s in stmt.body):
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            yield small.targets[0].target.value, small.value


def module_partial_aliases(
    module: cst.Module, imports: ImportTable, helpers: dict[str, cst.FunctionDef]
) -> dict[str, cst.FunctionDef]:
    """The names the module binds once, at its top level, to `partial(f, k=v, ...)` of one of its
    defs with keywords only (`_run_vjp = partial(_run_inner, is_vjp=True)`): a call of one passes its
    positional arguments to ``f``'s positional parameters unchanged, so ``f`` is what it runs; and
    to one of its defs itself (`clip = _clip`)."""
    found: dict[str, cst.FunctionDef] = {}
    for name, value in _top_level_assigns(module):
        if type(value) is cst.Name and value.value in helpers:
            found[name] = helpers[value.value]
            continue
        if not isinstance(value, cst.Call) or imports.qualify(value.func) not in PARTIAL or not value.args:
            continue
        first, rest = value.args[0], value.args[1:]
        func = helpers.get(first.value.value) if isinstance(first.value, cst.Name) and first.keyword is None else None
        if func is not None and rest and all(arg.keyword is not None and not arg.star for arg in rest):
            bound = {arg.keyword.value for arg in rest if arg.keyword is not None}
            positional = {p.name.value for p in (*func.params.posonly_params, *func.params.params)}
            if not bound & positional or _trailing(func, bound):
                found[name] = func
    return {name: func for name, func in found.items() if name in bound_once(module, set(found))}


def module_attribute_aliases(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The names the module binds once, at its top level, to an attribute of a module it imports
    (`window = helpers.window`), each with that dotted name: a call of one calls it."""
    found: dict[str, str] = {}
    for name, value in _top_level_assigns(module):
        if type(value) is cst.Attribute and (text := dotted(value)) and text.partition(".")[0] in imports.aliases:
            found[name] = text
    return {name: text for name, text in found.items() if name in bound_once(module, set(found))}


def module_jit_aliases(
    module: cst.Module, imports: ImportTable, helpers: dict[str, cst.FunctionDef]
) -> dict[str, tuple[cst.FunctionDef, frozenset[str]]]:
    """The names the module binds once, at its top level, to `jax.jit(f, ...)` of one of its defs
    whose static arguments are literals (`_gj = jax.jit(_g, static_argnums=1)`), each with ``f``
    and the parameters that jit marks static: a call of one runs ``f``, and hashes those."""
    found: dict[str, tuple[cst.FunctionDef, frozenset[str]]] = {}
    for name, value in _top_level_assigns(module):
        if not isinstance(value, cst.Call) or not value.args or not imports.is_one_of(value.func, JIT):
            continue
        first = value.args[0]
        func = helpers.get(first.value.value) if isinstance(first.value, cst.Name) and first.keyword is None else None
        static = jit_call_static_names(value, func) if func is not None else None
        if func is not None and static is not None:
            found[name] = (func, static)
    return {name: jitted for name, jitted in found.items() if name in bound_once(module, set(found))}


def _trailing(func: cst.FunctionDef, bound: set[str]) -> bool:
    """Whether the positional parameters bound by keyword are the last ones (`is_vjp=False` after
    the rest): the positions before them are passed through unchanged."""
    names = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    kept = [name for name in names if name not in bound]
    return names[: len(kept)] == kept


STATIC_ARGUMENTS = frozenset({"static_argnums", "static_argnames"})


def jit_rebinding(module: cst.Module, name: str, imports: ImportTable) -> tuple[cst.Call, str | None] | None:
    """The call of ``name = jax.jit(name, ...)`` at the module's top level, or of another wrapper
    given ``static_argnums``/``static_argnames`` (ejkernel's ``ejit``, after ``defvjp``): every later
    use of the name goes through it, and a wrapper taking those keywords hashes what they name.
    Else a ``jax.jit(name, ...)`` bound to another name or an attribute (``name.jit = ...``): the
    module calls the site through it, and jit hashes what it marks static. With that other target's code."""
    found: tuple[cst.Call, str | None] | None = None
    for stmt in module.body:
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            if not (type(small) is cst.Assign and len(small.targets) == 1 and type(small.value) is cst.Call):
                continue
            target, call = small.targets[0].target, small.value
            first = call.args[0] if call.args else None
            if not (
                first is not None
                and first.keyword is None
                and not first.star
                and type(first.value) is cst.Name
                and first.value.value == name
            ):
                continue
            if type(target) is cst.Name and target.value == name:
                if imports.is_one_of(call.func, JIT) or any(
                    a.keyword is not None and a.keyword.value in STATIC_ARGUMENTS for a in call.args
                ):
                    return call, None
            elif found is None and type(target) in (cst.Name, cst.Attribute) and imports.is_one_of(call.func, JIT):
                found = call, dotted(target) or name
    return found
