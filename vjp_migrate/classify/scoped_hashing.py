"""Classify, step 3e: the dicts and cached functions a def sees besides the module's (hashing.py):
those a function around it binds once (a factory's `cache = {}`, `window =
functools.lru_cache(maxsize=None)(_window)`, and its other containers: `scales = (1.0, 0.5)`,
`table = jnp.asarray(table)`), and the containers a module class keeps
(class_containers.py: `self._table = {}` in its methods, `SCALES = (1.0, 0.5)` in its body), which
its methods, and the defs inside them, read through the methods' first parameter
(`self._table.get(key)`, `self.SCALES[level]`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst

from vjp_migrate.classify.class_containers import ARRAY, DICT, SEQUENCES, container_kind
from vjp_migrate.classify.class_fields import instance_methods
from vjp_migrate.classify.expressions import all_params
from vjp_migrate.classify.hashing import cached_by, plain_assignments
from vjp_migrate.classify.module_facts import names_bound_by
from vjp_migrate.imports import ImportTable
from vjp_migrate.sites import body_statements, positional_params, scope_statements


@dataclass(frozen=True)
class Hashers:
    """What hashes what it gets, seen from one def: cached functions by name, each with how its
    decorator is written, and dicts by their dotted name (`cache`, `self._table`), each with how to
    name it; and the sequences its class or a factory keeps, indexed only by a concrete value
    (`self.SCALES`, `scales`), and the JAX arrays, which take a Tracer as their index."""

    cached: dict[str, str] = field(default_factory=dict)
    dicts: dict[str, str] = field(default_factory=dict)
    # `self.SCALES`, `scales`: a tuple, list, string or host NumPy array, with its kind and how to name it
    sequences: dict[str, tuple[str, str]] = field(default_factory=dict)
    arrays: frozenset[str] = frozenset()  # `self.table = jnp.asarray(table)`, `table`: indexed by a Tracer too


# A name of a function's scope: ("cached", how), or a container's kind ("dict", "tuple", "list",
# "string", "NumPy array", "array": class_containers.py) and how to name it, or None if bound otherwise.
_Bound = dict[str, "tuple[str, str] | None"]


def scoped_hashers(
    module: cst.Module, imports: ImportTable, kept: Mapping[int, Mapping[str, str]]
) -> dict[int, Hashers]:
    """For each def that sees a factory's dict or cached function, or is a method of a class
    keeping a container (``kept``: class_containers.py), or a def inside one, by its id: those."""
    found: dict[int, Hashers] = {}
    for stmt in scope_statements(module.body):
        if isinstance(stmt, cst.FunctionDef):
            _nested(stmt, {}, imports, found)
        elif isinstance(stmt, cst.ClassDef):
            containers = kept.get(id(stmt), {})
            for method in instance_methods(stmt):
                first = positional_params(method)[:1]
                outer: _Bound = {
                    f"{first[0]}.{attr}": (kind, f"the {kind} `{first[0]}.{attr}` that `{stmt.name.value}` keeps")
                    for attr, kind in (containers.items() if first else ())
                }
                if outer:
                    found[id(method)] = _seen_from(outer)
                _nested(method, outer, imports, found, first[0] if first else None)
    return found


def _seen_from(scope: _Bound) -> Hashers:
    """What a def sees of ``scope``: its cached functions, its dicts, its sequences and arrays."""
    kinds: dict[str, dict[str, str]] = {}
    for name, bound in scope.items():
        if bound is not None:
            kinds.setdefault(bound[0], {})[name] = bound[1]
    sequences = {name: (kind, text) for kind in SEQUENCES for name, text in kinds.get(kind, {}).items()}
    return Hashers(kinds.get("cached", {}), kinds.get(DICT, {}), sequences, frozenset(kinds.get(ARRAY, ())))


def _nested(
    func: cst.FunctionDef, outer: _Bound, imports: ImportTable, found: dict[int, Hashers], instance: str | None = None
) -> None:
    """Record what the defs nested in ``func`` see of the scopes around them (``outer``: the
    functions' around ``func``, and the containers of its class, for a method calling its
    instance ``instance``), the innermost binding of a name winning."""
    own = list(scope_statements(body_statements(func)))
    inner = [stmt for stmt in own if isinstance(stmt, cst.FunctionDef)]
    if not inner:
        return
    own_scope = _own_scope(func, own, imports)
    # `self.SCALES` of a method's class, unless a def inside binds `self` again
    around = {k: v for k, v in outer.items() if (root := k.split(".")[0]) == instance or root not in own_scope}
    scope = {**around, **own_scope}
    seen = _seen_from(scope)
    for nested in inner:
        if seen != Hashers():
            found[id(nested)] = seen
        _nested(nested, scope, imports, found)


def _own_scope(func: cst.FunctionDef, own: Sequence[cst.BaseStatement], imports: ImportTable) -> _Bound:
    """What ``func``'s own scope binds: the names bound once to a cached function or a new
    container (class_containers.py's kinds), and None for every other name it binds."""
    counts: dict[str, int] = {param.name.value: 1 for param in all_params(func.params)}
    values: dict[str, tuple[str, str]] = {}
    for stmt in own:
        names = [stmt.name.value] if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else list(names_bound_by(stmt))
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        for name, value in plain_assignments(stmt):
            if (how := cached_by(value, imports)) is not None:
                values[name] = ("cached", how)
            elif (kind := container_kind(value, imports)) is not None:
                values[name] = (kind, f"the {kind} `{name}` that `{func.name.value}` binds")
    return {name: values.get(name) if count == 1 else None for name, count in counts.items()}
