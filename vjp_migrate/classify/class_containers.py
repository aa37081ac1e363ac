"""Classify, step 3d: the containers a module class keeps in an attribute, and how code reaches
them: through a method's instance (`self._table`, `self.SCALES`: scoped_hashing.py), through
the class (`Levels.SCALES`) or through a module-level instance of it (`cfg.scales`, with
`cfg = Config()`). An attribute counts when the class binds it only to new dicts (a dict hashes
its keys: hashing.py), or only to new tuples, lists or strings of one kind, or host NumPy arrays
(indexed only by a concrete value: containers.py), in its body or through its methods' instance (`self._table = {}`),
and nothing else may bind it: no other assignment to that attribute in the module (`cfg.scales =
...`), no subclass of the module binding it again (`Sub.SCALES = jnp.array(...)`, as
sites/overrides.py finds a method defined again). A sequence annotated in the class body is a
field whose default it is (a dataclass's): the instance may hold anything. An attribute bound only
to what a JAX array function makes (`self.table = jnp.asarray(table)`) is kept too: an array,
which takes a Tracer as its index (uses_names.py doubts an index into an attribute it cannot
tell of)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.class_fields import instance_methods
from vjp_migrate.classify.containers import HOST, sequence_kind
from vjp_migrate.classify.hashing import new_dict, plain_assignments, top_level_values
from vjp_migrate.classify.module_facts import bound_once, names_bound_by
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.sites import body_statements, positional_params, scope_statements
from vjp_migrate.sites.overrides import overriding
from vjp_migrate.sites.scopes import ModuleBindings
from vjp_migrate.vocabulary import makes_jax_array

DICT, ARRAY = "dict", "array"  # and containers.py's "tuple", "list", "string", "NumPy array"
SEQUENCES = frozenset({"tuple", "list", "string", HOST})  # indexed only by a concrete value


def module_kept(module: cst.Module, imports: ImportTable) -> dict[int, dict[str, str]]:
    """For each class of the module's top level (`if` and `try` blocks too) keeping a container,
    by its id: its attributes that hold one, each with the kind: ``dict``, ``array`` (what a JAX
    array function makes), or the ``tuple``, ``list``, ``string`` or ``NumPy array`` containers.py
    names."""
    found: dict[int, dict[str, str]] = {}
    targets: _AttributeTargets | None = None  # every attribute target of the module, once needed
    for cls in (stmt for stmt in scope_statements(module.body) if isinstance(stmt, cst.ClassDef)):
        kinds = _kinds(cls, imports)
        if kinds and targets is None:
            targets = _AttributeTargets()
            walk.visit(module, targets)
        if kinds and targets is not None:
            kept = {
                attr: kind
                for attr, (kind, own) in kinds.items()
                if targets.counts.get(attr, 0) <= own and overriding(module, imports, cls.name.value, attr) is None
            }
            if kept:
                found[id(cls)] = kept
    return found


def module_attribute_containers(module: cst.Module, kept: dict[int, dict[str, str]]) -> dict[str, tuple[str, str]]:
    """The containers module-level classes keep (``kept``), reached through the class or a
    module-level instance of it, both bound once: `Levels.SCALES`, `cfg.scales` (with `cfg =
    Config()`), each with its kind and how to name it."""
    classes = {
        stmt.name.value: kept[id(stmt)] for stmt in module.body if isinstance(stmt, cst.ClassDef) and id(stmt) in kept
    }
    if not classes:
        return {}
    instances = {
        name: value.func.value
        for name, value in top_level_values(module)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in classes
    }
    once = bound_once(module, {*classes, *instances})
    found: dict[str, tuple[str, str]] = {}
    for name, owner in [*((n, n) for n in classes), *instances.items()]:
        if name in once and owner in once:
            for attr, kind in classes[owner].items():
                found[f"{name}.{attr}"] = (kind, f"the {kind} `{name}.{attr}` that `{owner}` keeps")
    return found


def _kinds(cls: cst.ClassDef, imports: ImportTable) -> dict[str, tuple[str, int]]:
    """The attributes the class binds only to new containers of one kind, in its body or through
    its methods' instance, each with that kind and how many times its methods bind it."""
    values: dict[str, list[cst.BaseExpression | None]] = {}
    annotated: set[str] = set()
    for stmt in body_statements(cls):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            values.setdefault(stmt.name.value, []).append(None)
            continue
        assigned = dict(plain_assignments(stmt))
        annotated.update(
            s.target.value for s in _smalls(stmt) if isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name)
        )
        for name in names_bound_by(stmt):
            values.setdefault(name, []).append(assigned.get(name))
    own: dict[str, int] = {}
    for method in instance_methods(cls):
        first = positional_params(method)[:1]
        for stmt in scope_statements(body_statements(method)) if first else ():
            for attr, value in _attribute_assignments(stmt, first[0]):
                values.setdefault(attr, []).append(value)
                own[attr] = own.get(attr, 0) + 1
    found: dict[str, tuple[str, int]] = {}
    for attr, bound in values.items():
        kinds = {container_kind(v, imports) if attr not in annotated or new_dict(v, imports) else None for v in bound}
        if len(kinds) == 1 and (kind := kinds.pop()) is not None:
            found[attr] = (kind, own.get(attr, 0))
    return found


def container_kind(value: cst.BaseExpression | None, imports: ImportTable) -> str | None:
    """The kind of container ``value`` makes: a dict, a tuple, list or string, a JAX array."""
    if new_dict(value, imports):
        return DICT
    if isinstance(value, cst.Call) and makes_jax_array(imports.qualify(value.func)):
        return ARRAY
    return sequence_kind(value, imports)


def _smalls(stmt: cst.BaseStatement) -> list[cst.BaseSmallStatement]:
    return list(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else []


class _AttributeTargets(ModuleBindings):
    """How many times each attribute name is bound through an attribute target anywhere (`x.attr =
    ...`, `del x.attr`, `for x.attr in ...`): more in the module than in a class's instance
    methods, something else binds it (`cfg.scales = ...`, `Levels.SCALES += ...`, another class's
    `self.scales = ...`). The names bound are not counted."""

    inside = True

    def add(self, name: str, times: int = 1) -> None:
        pass

    def _targets(self, target: cst.CSTNode) -> None:
        for element in _flattened(target) if isinstance(target, cst.BaseExpression) else ():
            if isinstance(element, cst.Attribute):
                self.counts[element.attr.value] = self.counts.get(element.attr.value, 0) + 1


def _attribute_assignments(stmt: cst.BaseStatement, instance: str) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """Each `instance.attr` a simple statement binds, with the value when it is a plain assignment."""
    for small in _smalls(stmt):
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
