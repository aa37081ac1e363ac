"""Classify, step 3c: the dicts and cached functions a def sees besides the module's (hashing.py):
those a function around it binds once (a factory's `cache = {}`, `window =
functools.lru_cache(maxsize=None)(_window)`), and the dicts a module class keeps (`self._table = {}`
in its methods, `_table = {}` in its body, and nothing else bound to that attribute), which its
methods read through their first parameter (`self._table.get(key)`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from vjp_migrate.classify.class_fields import instance_methods
from vjp_migrate.classify.expressions import all_params
from vjp_migrate.classify.hashing import cached_by, new_dict, plain_assignments
from vjp_migrate.classify.module_facts import names_bound_by
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.sites import body_statements, positional_params, scope_statements


@dataclass(frozen=True)
class Hashers:
    """What hashes what it gets, seen from one def: cached functions by name, each with how its
    decorator is written, and dicts by their dotted name (`cache`, `self._table`), each with how to
    name it."""

    cached: dict[str, str] = field(default_factory=dict)
    dicts: dict[str, str] = field(default_factory=dict)


# A name of a function's scope: ("cached", how) or ("dict", how to name it), or None if bound otherwise.
_Bound = dict[str, "tuple[str, str] | None"]


def scoped_hashers(module: cst.Module, imports: ImportTable) -> dict[int, Hashers]:
    """For each def that sees a factory's dict or cached function, or is a method of a class
    keeping a dict, by its id: those."""
    found: dict[int, Hashers] = {}
    for stmt in scope_statements(module.body):
        if isinstance(stmt, cst.FunctionDef):
            _nested(stmt, {}, imports, found)
        elif isinstance(stmt, cst.ClassDef):
            kept = _class_dicts(stmt, imports)
            for method in instance_methods(stmt):
                first = positional_params(method)[:1]
                if kept and first:
                    dicts = {
                        f"{first[0]}.{attr}": f"the dict `{first[0]}.{attr}` that `{stmt.name.value}` keeps"
                        for attr in kept
                    }
                    found[id(method)] = Hashers(dicts=dicts)
                _nested(method, {}, imports, found)
    return found


def _nested(func: cst.FunctionDef, outer: _Bound, imports: ImportTable, found: dict[int, Hashers]) -> None:
    """Record what the defs nested in ``func`` see of the scopes around them (``outer``: the
    functions' around ``func``), the innermost binding of a name winning."""
    own = list(scope_statements(body_statements(func)))
    inner = [stmt for stmt in own if isinstance(stmt, cst.FunctionDef)]
    if not inner:
        return
    scope = {**outer, **_own_scope(func, own, imports)}
    cached = {name: bound[1] for name, bound in scope.items() if bound is not None and bound[0] == "cached"}
    dicts = {name: bound[1] for name, bound in scope.items() if bound is not None and bound[0] == "dict"}
    for nested in inner:
        if cached or dicts:
            found[id(nested)] = Hashers(cached, dicts)
        _nested(nested, scope, imports, found)


def _own_scope(func: cst.FunctionDef, own: Sequence[cst.BaseStatement], imports: ImportTable) -> _Bound:
    """What ``func``'s own scope binds: the names bound once to a cached function or a new dict,
    and None for every other name it binds."""
    counts: dict[str, int] = {param.name.value: 1 for param in all_params(func.params)}
    values: dict[str, tuple[str, str]] = {}
    for stmt in own:
        names = [stmt.name.value] if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else list(names_bound_by(stmt))
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        for name, value in plain_assignments(stmt):
            if (how := cached_by(value, imports)) is not None:
                values[name] = ("cached", how)
            elif new_dict(value, imports):
                values[name] = ("dict", f"the dict `{name}` that `{func.name.value}` binds")
    return {name: values.get(name) if count == 1 else None for name, count in counts.items()}


def _class_dicts(cls: cst.ClassDef, imports: ImportTable) -> frozenset[str]:
    """The attributes the class binds only to new dicts: in its body (once), or through its
    methods' first parameter (`self._table = {}`); an attribute bound to anything else is not one."""
    values: dict[str, list[cst.BaseExpression | None]] = {}
    for stmt in body_statements(cls):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            values.setdefault(stmt.name.value, []).append(None)
            continue
        assigned = dict(plain_assignments(stmt))
        for name in names_bound_by(stmt):
            values.setdefault(name, []).append(assigned.get(name))
    for method in instance_methods(cls):
        first = positional_params(method)[:1]
        for stmt in scope_statements(body_statements(method)) if first else ():
            for attr, value in _attribute_assignments(stmt, first[0]):
                values.setdefault(attr, []).append(value)
    return frozenset(attr for attr, bound in values.items() if all(new_dict(v, imports) for v in bound))


def _attribute_assignments(stmt: cst.BaseStatement, instance: str) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """Each `instance.attr` a simple statement binds, with the value when it is a plain assignment."""
    for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.Assign):
            targets, value = [t.target for t in small.targets], small.value if len(small.targets) == 1 else None
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets, value = [small.target], small.value if isinstance(small, cst.AnnAssign) else None
        elif isinstance(small, cst.Del):
            targets = [small.target]
        for target in targets:
            for element in _flattened(target):
                if isinstance(element, cst.Attribute) and dotted(element.value) == instance:
                    yield element.attr.value, value if element is target else None


def _flattened(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _flattened(element.value)
    else:
        yield target
