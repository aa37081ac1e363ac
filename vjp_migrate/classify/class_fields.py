"""Classify, step 4b: ``static_field_passed``, a value a method passes from a field its class
declares static (`self.rtol`, with `rtol: float = eqx.field(static=True)` in an `eqx.Module`,
`struct.field(pytree_node=False)` in a flax struct class, or listed in the `meta_fields` of a
`register_dataclass`), or from any field of a class the module registers with no leaves: pytree
aux data, which jit passes on as it is, never a Tracer. And ``plain_methods``: the methods of the
classes that are no pytree at all, whose `self` is no JAX value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from vjp_migrate.classify.module_facts import bound_once
from vjp_migrate.classify.pytrees import (
    EQUINOX_MODULE,
    argument_at,
    call_registrations,
    decorator_registrations,
    field_declarations,
    pytree_base,
)
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.sites import body_statements, positional_params, scope_statements
from vjp_migrate.vocabulary import (
    DATACLASS_REGISTRARS,
    EQUINOX_FIELDS,
    EQUINOX_STATIC_FIELDS,
    FLAX_FIELDS,
    PLAIN_BASES,
    PLAIN_METACLASSES,
)

NOT_ON_AN_INSTANCE = frozenset({"staticmethod", "classmethod"})


@dataclass(frozen=True)
class ClassFields:
    """The class a method is defined in: its name, its static fields (each with how it is
    declared), and how the class is registered if it has no leaves at all."""

    name: str
    static: dict[str, str] = field(default_factory=dict)
    leafless: str | None = None


def method_classes(
    module: cst.Module, imports: ImportTable, static_classes: Mapping[str, str]
) -> dict[int, ClassFields]:
    """For each method of a module-level class with static fields, or of one registered with no
    leaves (``static_classes``), by the method's id: what its class declares."""
    found: dict[int, ClassFields] = {}
    meta = _meta_fields(module, imports)
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef):
            continue
        static = {**static_fields(cls, imports), **meta.get(cls.name.value, {})}
        fields = ClassFields(cls.name.value, static, static_classes.get(cls.name.value))
        if not fields.static and fields.leafless is None:
            continue
        for method in instance_methods(cls):
            found[id(method)] = fields
    return found


def instance_methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods of the class called on an instance (not static or class methods)."""
    return [
        stmt
        for stmt in body_statements(cls)
        if isinstance(stmt, cst.FunctionDef)
        and not any(dotted(d.decorator) in NOT_ON_AN_INSTANCE for d in stmt.decorators)
    ]


def method_instances(module: cst.Module) -> dict[int, tuple[str, str]]:
    """For each instance method of a class of the module's top level, and each def inside one that
    does not bind the same name, by id: what it calls its instance (its first parameter, `self`),
    and the class's name."""
    found: dict[int, tuple[str, str]] = {}
    for cls in (stmt for stmt in scope_statements(module.body) if isinstance(stmt, cst.ClassDef)):
        for method in instance_methods(cls):
            params = positional_params(method)
            todo = [method] if params else []
            while todo:
                func = todo.pop()
                found[id(func)] = (params[0], cls.name.value)
                todo.extend(
                    inner
                    for inner in scope_statements(body_statements(func))
                    if isinstance(inner, cst.FunctionDef) and params[0] not in positional_params(inner)
                )
    return found


def static_fields(cls: cst.ClassDef, imports: ImportTable) -> dict[str, str]:
    """The fields an `eqx.Module` declares `eqx.field(static=True)` (or `eqx.static_field()`), or a
    flax struct class `struct.field(pytree_node=False)`, each with that declaration."""
    kind = pytree_base(cls, imports)
    if kind is None:
        return {}
    equinox = kind == EQUINOX_MODULE
    found: dict[str, str] = {}
    for name, declared in field_declarations(cls):
        how = _declared_static(declared.value, imports, equinox)
        if how is not None:
            found[name] = how
    return found


def plain_methods(module: cst.Module, imports: ImportTable) -> dict[int, str]:
    """The methods of the module's plain classes (no base but `object`, `abc.ABC` or another plain
    class of the module, no decorator, no metaclass but `abc.ABCMeta`, registered as a pytree by no
    call of the module, no subclass in the module that is not plain, bound once), by id, with the
    class's name: an instance of one is no JAX value, so jit never traces it."""
    plain = _plain(module, imports, dataclasses=False)
    found: dict[int, str] = {}
    for name, cls in plain.items():
        for method in instance_methods(cls):
            found[id(method)] = name
    return found


def plain_classes(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The module's plain classes, as for ``plain_methods``, and its plain dataclasses (decorated
    `dataclasses.dataclass` alone, also called: `@dataclass(frozen=True)`): no pytree, so an
    instance is no JAX value and jit cannot take one as an argument."""
    return frozenset(_plain(module, imports, dataclasses=True))


def _plain(module: cst.Module, imports: ImportTable, dataclasses: bool) -> dict[str, cst.ClassDef]:
    registered = {name for name, _, _ in call_registrations(module, imports)}
    if dataclasses:  # any module-level call given the class may register it (`nodetype=Config`)
        registered |= _passed_at_module_level(module)
    classes = [cls for cls in module.body if isinstance(cls, cst.ClassDef)]
    own = {
        cls.name.value: cls
        for cls in classes
        if (not cls.decorators or (dataclasses and _dataclass_only(cls, imports)))
        and all(_plain_metaclass(keyword, imports) for keyword in cls.keywords)
        and cls.name.value not in registered
    }
    once = bound_once(module, set(own))
    return _with_plain_kin({name: cls for name, cls in own.items() if name in once}, classes, imports)


def _with_plain_kin(
    own: dict[str, cst.ClassDef], classes: list[cst.ClassDef], imports: ImportTable
) -> dict[str, cst.ClassDef]:
    """Those of ``own`` whose every base is `object`, `abc.ABC` or another plain class of the
    module, and whose every subclass in the module is plain too: a subclass registered as a
    pytree (or deriving from one) would make an instance of the base possibly hold arrays."""
    plain = dict(own)
    changed = True
    while changed:
        changed = False
        for cls in classes:
            name = cls.name.value
            kin = [_module_base(base) for base in cls.bases]
            if name in plain and not all(
                base in plain or imports.qualify(arg.value) in PLAIN_BASES
                for base, arg in zip(kin, cls.bases, strict=True)
            ):
                del plain[name]
                changed = True
            if name not in plain:
                for base in kin:
                    if base is not None and plain.pop(base, None) is not None:
                        changed = True
    return plain


def _module_base(base: cst.Arg) -> str | None:
    """The name of a base written as a bare name (`class ZipUp(Strategy)`): maybe a module class."""
    return base.value.value if isinstance(base.value, cst.Name) and base.keyword is None and not base.star else None


def _plain_metaclass(keyword: cst.Arg, imports: ImportTable) -> bool:
    """Whether a class keyword leaves the class plain: `metaclass=abc.ABCMeta`."""
    return (
        keyword.keyword is not None
        and keyword.keyword.value == "metaclass"
        and imports.qualify(keyword.value) in PLAIN_METACLASSES
    )


def _passed_at_module_level(module: cst.Module) -> set[str]:
    """The names a module-level statement passes to a call (`register(..., nodetype=Config)`)."""
    found: set[str] = set()
    for stmt in module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if isinstance(value, cst.Call):
                found.update(arg.value.value for arg in value.args if isinstance(arg.value, cst.Name))
    return found


def _dataclass_only(cls: cst.ClassDef, imports: ImportTable) -> bool:
    """Whether the class's one decorator is `dataclasses.dataclass` (also called with options)."""
    if len(cls.decorators) != 1:
        return False
    decorator = cls.decorators[0].decorator
    return imports.qualify(decorator.func if isinstance(decorator, cst.Call) else decorator) == "dataclasses.dataclass"


def _meta_fields(module: cst.Module, imports: ImportTable) -> dict[str, dict[str, str]]:
    """The fields each module class lists in the literal `meta_fields` of a `register_dataclass`
    (its decorator, or a module-level call), by class name: aux data, as eqx's static fields are."""
    registrations = [
        (cls.name.value, registrar, args)
        for cls in module.body
        if isinstance(cls, cst.ClassDef)
        for registrar, args in decorator_registrations(cls, imports)
    ]
    found: dict[str, dict[str, str]] = {}
    for name, registrar, args in [*registrations, *call_registrations(module, imports)]:
        listed = argument_at(args, 1, "meta_fields") if registrar in DATACLASS_REGISTRARS else None
        if isinstance(listed, (cst.List, cst.Tuple)):
            how = f"in the `meta_fields` of `{registrar}`"
            for element in listed.elements:
                if isinstance(element.value, cst.SimpleString) and isinstance(element.value.evaluated_value, str):
                    found.setdefault(name, {})[element.value.evaluated_value] = how
    return found


def _declared_static(value: cst.BaseExpression | None, imports: ImportTable, equinox: bool) -> str | None:
    """How a field's value declares it static: `eqx.field(static=True)`, `eqx.static_field()` in an
    equinox module, `struct.field(pytree_node=False)` in a flax struct class; None if it does not."""
    if not isinstance(value, cst.Call):
        return None
    qname = imports.qualify(value.func)
    callee = dotted(value.func) or qname or ""
    if equinox and qname in EQUINOX_STATIC_FIELDS:
        return f"`{callee}()`"
    keyword, flag, callees = ("static", "True", EQUINOX_FIELDS) if equinox else ("pytree_node", "False", FLAX_FIELDS)
    given = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == keyword), None)
    if qname in callees and isinstance(given, cst.Name) and given.value == flag:
        return f"`{callee}({keyword}={flag})`"
    return None


def static_field_passed(
    value: cst.BaseExpression,
    callers: tuple[cst.FunctionDef, ...],
    classes: Mapping[int, ClassFields],
    lambda_params: frozenset[str] = frozenset(),
) -> str | None:
    """How to say that ``value``, `self.<name>` in a method (or a def or lambda inside one), reads a
    field the method's class declares static, or any field of a class with no leaves; None if not
    (``lambda_params``: the names lambdas around the call bind, another `self`)."""
    if not (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name)):
        return None
    if value.value.value in lambda_params:
        return None
    instance, name = value.value.value, value.attr.value
    for caller in reversed(callers):
        params = positional_params(caller)
        fields = classes.get(id(caller))
        if fields is not None and params[:1] == (instance,):
            if name in fields.static:
                how = fields.static[name]
                return f"the field `{name}` that `{fields.name}` declares static ({how}), which jit never traces,"
            if fields.leafless is not None:
                return f"a field of `{fields.name}`, {fields.leafless}, which jit passes on untraced,"
            return None
        if instance in params or any(p.name.value == instance for p in caller.params.kwonly_params):
            return None
    return None
