"""Classify, step 4: config classes that are pytrees with no leaves (jit passes them on untraced):
`register_static`, `register_dataclass` with no data fields, `register_pytree_node_class` whose
`tree_flatten` returns no children (or `register_pytree_with_keys_class`, `tree_flatten_with_keys`),
`register_pytree_node` with a flatten function returning none, flax struct dataclasses with only
static fields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.module_facts import bound_once, names_bound_by
from vjp_migrate.imports import PARTIAL, ImportTable, dotted
from vjp_migrate.sites import body_statements, own_returns
from vjp_migrate.vocabulary import (
    DATACLASS_FIELDS,
    DATACLASS_REGISTRARS,
    EQUINOX_MODULES,
    FLAX_DATACLASSES,
    FLAX_FIELDS,
    FLAX_PYTREE_NODES,
    PYTREE_NODE_CLASS_REGISTRARS,
    PYTREE_NODE_REGISTRARS,
    PYTREE_WITH_KEYS_CLASS_REGISTRARS,
    REGISTRAR_CLASS_PARAMETERS,
    STATIC_PYTREE_DECORATORS,
)


def module_static_classes(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The classes the module defines at its top level and registers as pytrees with no leaves,
    each with how: ``@jax.tree_util.register_static``, ``register_dataclass`` with no data
    fields, ``register_pytree_node_class`` with a ``tree_flatten`` returning no children,
    ``register_pytree_node(Config, flatten, unflatten)`` with a ``flatten`` returning none, a flax
    struct class whose every field is ``pytree_node=False``. jit passes such an object on as it is."""
    classes = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)}
    defs = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.FunctionDef)}
    functions = {name: defs[name] for name in bound_once(module, set(defs))}
    found: dict[str, str] = {}
    for name, cls in classes.items():
        how = _flax_leafless(cls, imports)
        for registrar, args in decorator_registrations(cls, imports):
            how = how or _leafless_registration(registrar, args, cls, imports, functions)
        if how:
            found[name] = how
    for name, registrar, args in call_registrations(module, imports):
        how = _leafless_registration(registrar, args, classes[name], imports, functions) if name in classes else None
        if how and name not in found:
            found[name] = how
    once = bound_once(module, set(found))
    return {name: how for name, how in found.items() if name in once}


def decorator_registrations(cls: cst.ClassDef, imports: ImportTable) -> Iterator[tuple[str, Sequence[cst.Arg]]]:
    """The class's decorators as (registrar, arguments past the class): `@register_static`,
    `@partial(register_dataclass, data_fields=[], meta_fields=[...])` (a positional argument
    bound by `partial` would be the class's own place: no registration read)."""
    for decorator in cls.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and imports.qualify(expr.func) in PARTIAL and expr.args:
            bound = expr.args[1:]
            yield ("" if any(_plain(arg) for arg in bound) else imports.qualify(expr.args[0].value) or ""), bound
        else:
            yield imports.qualify(expr) or "", ()


def call_registrations(module: cst.Module, imports: ImportTable) -> Iterator[tuple[str, str, Sequence[cst.Arg]]]:
    """Module-level statements `register_dataclass(Config, data_fields=[], meta_fields=[...])`
    (or `nodetype=Config`): the class's name, the registrar and the arguments past the class."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                registrar = imports.qualify(small.value.func) or ""
                registered = _registered_class(small.value, REGISTRAR_CLASS_PARAMETERS.get(registrar))
                if registered is not None:
                    yield registered[0], registrar, registered[1]


def _registered_class(call: cst.Call, keyword: str | None) -> tuple[str, Sequence[cst.Arg]] | None:
    """The class a registrar's call names, first or by its parameter's ``keyword`` (with no
    positional argument beside it), and the arguments past it."""
    first = call.args[0] if call.args else None
    if first is not None and isinstance(first.value, cst.Name) and _plain(first):
        return first.value.value, call.args[1:]
    named = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword]
    if len(named) != 1 or not isinstance(named[0].value, cst.Name) or any(_plain(arg) for arg in call.args):
        return None
    return named[0].value.value, [arg for arg in call.args if arg is not named[0]]


def _plain(arg: cst.Arg) -> bool:
    return arg.keyword is None and not arg.star


def _leafless_registration(
    registrar: str,
    args: Sequence[cst.Arg],
    cls: cst.ClassDef,
    imports: ImportTable,
    functions: Mapping[str, cst.FunctionDef],
) -> str | None:
    """How ``registrar`` called with ``args`` (past the class) registers ``cls`` with no leaves, if
    it does (``functions``: the module's top-level defs bound once, which a flatten argument may name)."""
    if registrar in STATIC_PYTREE_DECORATORS and not args:
        return "a class registered with `jax.tree_util.register_static`"
    if registrar in DATACLASS_REGISTRARS:
        data, meta = argument_at(args, 0, "data_fields"), argument_at(args, 1, "meta_fields")
        if isinstance(data, (cst.List, cst.Tuple)) and not data.elements and meta is not None:
            return "a class registered with `jax.tree_util.register_dataclass` with no data fields"
        if not args and not cls.bases and _every_field(cls, imports, static_dataclass_field):
            return "a class registered with `jax.tree_util.register_dataclass` whose every field is static"
    if registrar in PYTREE_NODE_CLASS_REGISTRARS and not args and _method_flattens_to_no_children(cls, "tree_flatten"):
        registered = "a class registered with `jax.tree_util.register_pytree_node_class`"
        return f"{registered} whose `tree_flatten` returns no children"
    if registrar in PYTREE_WITH_KEYS_CLASS_REGISTRARS and not args and _keys_class_leafless(cls):
        registered = "a class registered with `jax.tree_util.register_pytree_with_keys_class`"
        return f"{registered} whose `tree_flatten_with_keys` returns no children"
    if registrar in PYTREE_NODE_REGISTRARS:
        flattens = [argument_at(args, at, keyword) for at, keyword in PYTREE_NODE_REGISTRARS[registrar]]
        if flattens[0] is not None and all(f is None or _flattens_to_no_children(f, functions) for f in flattens):
            return f"a class registered with `{registrar}` whose flatten function returns no children"
    return None


def argument_at(args: Sequence[cst.Arg], position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument passed at ``position`` or as ``keyword``; None if absent or behind a star."""
    if any(arg.star for arg in args):
        return None
    for at, arg in enumerate(args):
        if (arg.keyword is None and at == position) or (arg.keyword is not None and arg.keyword.value == keyword):
            return arg.value
    return None


def _method_flattens_to_no_children(cls: cst.ClassDef, name: str) -> bool:
    """Whether the class's own method ``name`` (`tree_flatten`) returns `((), aux)` at every return."""
    methods = _own_methods(cls, name)
    return methods is not None and len(methods) == 1 and _returns_no_children(methods[0])


def _keys_class_leafless(cls: cst.ClassDef) -> bool:
    """Whether `register_pytree_with_keys_class` finds no children in ``cls``: it flattens with the
    class's `tree_flatten` if it has one (its own, or a base's: a base is not read), else with
    `tree_flatten_with_keys`; both must return `((), aux)`."""
    if not _method_flattens_to_no_children(cls, "tree_flatten_with_keys"):
        return False
    return _method_flattens_to_no_children(cls, "tree_flatten") or (
        _own_methods(cls, "tree_flatten") == [] and not cls.bases
    )


def _own_methods(cls: cst.ClassDef, name: str) -> list[cst.FunctionDef] | None:
    """The defs of ``name`` in the class body; None if a statement other than a def binds it there
    (`tree_flatten = flatten`), which is not read."""
    methods: list[cst.FunctionDef] = []
    for stmt in body_statements(cls):
        if isinstance(stmt, cst.FunctionDef):
            if stmt.name.value == name:
                methods.append(stmt)
        elif name in names_bound_by(stmt) or _mentions(stmt, name):
            return None
    return methods


class _Mentions(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value == self.name


def _mentions(stmt: cst.BaseStatement, name: str) -> bool:
    """Whether a compound statement of the class body (`if`, `try`) names ``name`` anywhere (a def
    of it on one branch, an import of it): it may bind it, which is not read."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return False
    mentions = _Mentions(name)
    walk.visit(stmt, mentions)
    return mentions.found


def _flattens_to_no_children(flatten: cst.BaseExpression, functions: Mapping[str, cst.FunctionDef]) -> bool:
    """Whether a flatten function given to a registrar returns `((), aux)`: a lambda, or a module
    def (undecorated) at every return."""
    if isinstance(flatten, cst.Lambda):
        return _no_children(flatten.body)
    func = functions.get(flatten.value) if isinstance(flatten, cst.Name) else None
    return func is not None and _returns_no_children(func)


def _returns_no_children(func: cst.FunctionDef) -> bool:
    if func.decorators:
        return False
    returns = own_returns(func)
    return bool(returns) and all(_no_children(ret.value) for ret in returns)


def _no_children(value: cst.BaseExpression | None) -> bool:
    """`((), aux)` or `[], aux`: a pair whose first item is an empty tuple or list literal."""
    if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
        return False
    first = value.elements[0]
    return (
        isinstance(first, cst.Element) and isinstance(first.value, (cst.Tuple, cst.List)) and not first.value.elements
    )


EQUINOX_MODULE = "an `eqx.Module`"


def pytree_base(cls: cst.ClassDef, imports: ImportTable) -> str | None:
    """How a class is a pytree by its base or decorator, if it is: an `eqx.Module`, a
    `flax.struct.PyTreeNode`, a `flax.struct.dataclass`."""
    bases = {imports.qualify(base.value) for base in cls.bases}
    if bases & EQUINOX_MODULES:
        return EQUINOX_MODULE
    if bases & FLAX_PYTREE_NODES:
        return "a `flax.struct.PyTreeNode`"
    if flax_struct_decorated(cls, imports):
        return "a `flax.struct.dataclass`"
    return None


def flax_struct_decorated(cls: cst.ClassDef, imports: ImportTable) -> bool:
    """Whether a decorator of the class is `flax.struct.dataclass` (also called with options)."""
    return any(
        imports.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in FLAX_DATACLASSES
        for d in cls.decorators
    )


def _flax_leafless(cls: cst.ClassDef, imports: ImportTable) -> str | None:
    """A flax struct class (`@struct.dataclass`, or a `struct.PyTreeNode` with no other base)
    whose every field is `struct.field(pytree_node=False)`: how it is declared, if it is one."""
    bases = [imports.qualify(base.value) for base in cls.bases]
    decorated = flax_struct_decorated(cls, imports)
    node = len(bases) == 1 and bases[0] in FLAX_PYTREE_NODES and all(map(_dataclass_keyword, cls.keywords))
    if not ((decorated and not bases) or node):
        return None
    if not _every_field(cls, imports, _static_flax_field):
        return None
    kind = "`flax.struct.PyTreeNode`" if node else "`flax.struct.dataclass`"
    return f"a {kind} class whose every field is `pytree_node=False`"


def _dataclass_keyword(keyword: cst.Arg) -> bool:
    """A class keyword that `PyTreeNode.__init_subclass__` hands on to `dataclasses.dataclass`
    (`kw_only=True`, `frozen=False`): none adds a field. A metaclass is not handed on."""
    return keyword.keyword is not None and keyword.keyword.value != "metaclass"


def _every_field(
    cls: cst.ClassDef, imports: ImportTable, static: Callable[[cst.BaseExpression | None, ImportTable], bool]
) -> bool:
    """Whether every field the class body declares (`x: int = ...`; not a `ClassVar`) has a
    value that ``static`` accepts."""
    return all(static(declared.value, imports) for _, declared in field_declarations(cls) if not class_var(declared))


def field_declarations(cls: cst.ClassDef) -> Iterator[tuple[str, cst.AnnAssign]]:
    """The annotated names the class body declares (`n: int = 3`), each with its declaration."""
    for stmt in body_statements(cls):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                yield small.target.value, small


def class_var(declared: cst.AnnAssign) -> bool:
    """`n: ClassVar[int] = 3`: a class attribute, no field."""
    annotation = declared.annotation.annotation
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    return (dotted(head) or "").rsplit(".", 1)[-1] == "ClassVar"


def _static_flax_field(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """`struct.field(pytree_node=False, ...)`."""
    if not isinstance(value, cst.Call) or imports.qualify(value.func) not in FLAX_FIELDS:
        return False
    flag = argument_at(value.args, 0, "pytree_node")
    return isinstance(flag, cst.Name) and flag.value == "False"


def static_dataclass_field(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """`dataclasses.field(..., metadata={"static": True})` or `metadata=dict(static=True)`."""
    if not isinstance(value, cst.Call) or imports.qualify(value.func) not in DATACLASS_FIELDS:
        return False
    metadata = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "metadata"), None)
    if isinstance(metadata, cst.Call) and imports.qualify(metadata.func) == "builtins.dict":
        flag = next((a.value for a in metadata.args if a.keyword is not None and a.keyword.value == "static"), None)
    elif isinstance(metadata, cst.Dict):
        flag = next(
            (
                e.value
                for e in metadata.elements
                if isinstance(e, cst.DictElement)
                and isinstance(e.key, cst.SimpleString)
                and e.key.evaluated_value == "static"
            ),
            None,
        )
    else:
        flag = None
    return isinstance(flag, cst.Name) and flag.value == "True"
