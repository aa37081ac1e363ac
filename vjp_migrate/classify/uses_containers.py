"""Classify, step 7a': ``Containers``, what the containers a function reads hold, for an argument
used as their index or key: a dict hashes its key (hashing.py, scoped_hashing.py, or one the
function binds itself); a tuple, list, string or host NumPy array takes only a concrete index, in
its subscript and in a host NumPy array's methods (`_TABLE.take(k)`: containers.py,
class_containers.py); a JAX array takes a Tracer; a name or attribute nothing tells the kind of
(`_S = load()`, `self.table = table`) may be any of them, a doubt."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.class_containers import ARRAY, DICT, SEQUENCES
from vjp_migrate.classify.containers import HOST, literal_sequence, sequence_kind
from vjp_migrate.classify.expressions import code_text
from vjp_migrate.classify.hashing import KEYED_METHODS, hashing_call, module_dict_text, new_dict
from vjp_migrate.classify.uses_names import UseState
from vjp_migrate.imports import dotted
from vjp_migrate.sites.scopes import ModuleBindings
from vjp_migrate.vocabulary import ARRAY_ATTRIBUTES, HOST_ARRAY_METHODS, INDEXING_METHODS, LIBRARY_PREFIXES


class Containers(UseState):
    """What the containers the function walked reads hold, as an index or a key needs it."""

    def _dicts(self) -> dict[str, str]:
        """The dicts the function walked sees (hashing.py, scoped_hashing.py), each with how to name
        it, and those it assigns once itself (`coeffs = {1: a, 2: b}`)."""
        found = {name: module_dict_text(name) for name in self.ctx.dicts if self._module_level(name)}
        found.update(self._kept(DICT))
        scoped = self.ctx.hashers.get(id(self.func)) if self.func is not None else None
        if scoped is not None:
            found.update((name, text) for name, text in scoped.dicts.items() if self._seen(name))
        found.update((name, self._own(name, "dict")) for name in self._own_dicts)
        return found

    def _kept(self, kind: str) -> dict[str, str]:
        """The containers of ``kind`` that module classes keep, seen through the class or a
        module-level instance (`Levels.SCALES`), each with how to name it."""
        return {
            name: text
            for name, (found, text) in self.ctx.attribute_containers.items()
            if found == kind and self._module_level(name.split(".")[0])
        }

    @cached_property
    def _own_dicts(self) -> tuple[str, ...]:
        """The locals the function walked assigns once, to a new dict (read once its bindings are set)."""
        return tuple(name for name in self.bindings if new_dict(self._assigned_once(name), self.ctx.imports))

    def _own(self, name: str, kind: str) -> str:
        """How to name a ``kind`` (a dict, a tuple...) the function walked binds to ``name``."""
        assert self.func is not None  # a walk with no def has no locals
        return f"the {kind} `{name}` that `{self.func.name.value}` binds"

    def _sequence(self, expr: cst.BaseExpression) -> tuple[str, str] | None:
        """The kind of ``expr`` and how to name it, when it is surely a Python tuple, list or
        string, or a host NumPy array (containers.py): a literal, one made in place, a module-level
        name bound once to one, a local assigned once to one, one a factory around the function or
        a module class keeps (scoped_hashing.py, class_containers.py: `scales`, `self.SCALES`,
        `Levels.SCALES`, `cfg.scales`)."""
        if (kind := literal_sequence(expr)) is not None:
            return kind, f"a {kind} literal"
        if isinstance(expr, (cst.Call, cst.ListComp)) and (kind := sequence_kind(expr, self.ctx.imports)):
            return kind, f"the {kind} `{code_text(expr)}`"  # `np.asarray(table)[k]`
        scoped = self.ctx.hashers.get(id(self.func)) if self.func is not None else None
        name = dotted(expr)
        if scoped is not None and name in scoped.sequences and self._seen(name):
            return scoped.sequences[name]  # `self.SCALES`, a factory's `scales`
        if isinstance(expr, cst.Attribute) and name is not None:
            kept = self.ctx.attribute_containers.get(name)
            seen = kept is not None and kept[0] in SEQUENCES and self._module_level(name.split(".")[0])
            return kept if seen else None
        if not isinstance(expr, cst.Name):
            return None
        if expr.value in self.ctx.sequences and self._module_level(expr.value):
            kind = self.ctx.sequences[expr.value]
            return kind, f"the module-level {kind} `{expr.value}`"
        kind = sequence_kind(self._assigned_once(expr.value), self.ctx.imports)
        return (kind, self._own(expr.value, kind)) if kind is not None else None

    def _unknown_container(self, expr: cst.BaseExpression) -> str | None:
        """How to name ``expr``, a name or an attribute (`self.table`, `cfg.scales`) of what the
        function walked does not bind (a module-level, enclosing or imported name) or of a
        method's instance, when nothing tells what it holds: a Python list or a host NumPy array
        there takes no Tracer as its index, a JAX array does."""
        if isinstance(expr, cst.Name):
            return self._unknown_name(expr)
        if not isinstance(expr, cst.Attribute) or expr.attr.value in ARRAY_ATTRIBUTES:
            return None
        name = dotted(expr)
        if name is None or (self.ctx.imports.qualify(expr) or "").startswith(LIBRARY_PREFIXES):
            return None  # `jnp.index_exp[i]`
        root, _, attr = name.partition(".")
        instance, cls = self.ctx.instances.get(id(self.func), ("", "")) if self.func is not None else ("", "")
        if root in self.bindings and not (root == instance and self._seen(name)):
            return None  # a parameter or local: array data, as far as anything says
        scoped = self.ctx.hashers.get(id(self.func)) if self.func is not None else None
        if (scoped is not None and name in scoped.arrays and self._seen(name)) or name in self._kept(ARRAY):
            return None  # `self.table = jnp.asarray(table)`
        if root == instance and attr in getattr(self.ctx.array_fields.get(cls), "fields", ()):
            return None  # `table: jax.Array` declared in the class
        return f"`{name}`"

    def _hashing(self, call: cst.Call, position: int, keyword: str | None) -> str | None:
        """What ``call`` does with the value at ``position``, if it hashes it (a cached function's
        call, a dict's key: hashing.py)."""
        cached = {name: how for name, how in self.ctx.cached.items() if self._module_level(name)}
        scoped = self.ctx.hashers.get(id(self.func)) if self.func is not None else None
        if scoped is not None:
            cached.update((name, how) for name, how in scoped.cached.items() if self._seen(name))
        return hashing_call(call, position, keyword, cached, self._dicts())

    def _unknown_name(self, expr: cst.Name) -> str | None:
        """How to name ``expr`` when the function walked reads it from around it (the module, a def
        around it, an import) and nothing tells what it holds: not a JAX array the module binds it
        once to (`jnp.array(...)`, or annotated `jax.Array`) or a factory around it binds once to,
        nor JAX's, NumPy's or a builtin."""
        name = expr.value
        if name in self.names or name in self.derived or name in self.bindings or name in self._bound_inside:
            return None
        scoped = self.ctx.hashers.get(id(self.func)) if self.func is not None else None
        if scoped is not None and name in scoped.arrays:
            return None  # a factory's `table = jnp.asarray(table)`
        qname = self.ctx.imports.qualify(expr)
        if qname is not None:
            return None if qname.startswith(LIBRARY_PREFIXES) else f"`{name}` (imported)"
        known = (self.ctx.arrays, self.ctx.jax_arrays, self.ctx.helpers, self.ctx.sequences, self.ctx.dicts)
        if self._module_level(name) and any(name in names for names in known):
            return None  # a JAX array; a function; a sequence or dict, whose own rules judge it
        return f"`{name}`"

    @cached_property
    def _bound_inside(self) -> frozenset[str]:
        """Every name the def walked binds, in the defs, lambdas and comprehensions inside it too."""
        if self.func is None:
            return frozenset()
        found = _Binders()
        walk.visit(self.func, found)
        return frozenset(found.counts)

    def _container_method(self, call: cst.Call, position: int, keyword: str | None) -> tuple[bool, str] | None:
        """What `table.take(k)` does with ``k`` (given at ``position`` or as ``keyword``), by what
        `table` holds: a host NumPy array's method makes a NumPy value of it (static: True); what
        nothing tells the kind of (``_unknown_container``) may be a dict, which hashes the key of
        `.get(k)`, or a host NumPy array, whose `.take(k)` and `.item(k)` take no Tracer (a
        doubt: False)."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        found = self._sequence(func.value) if method in HOST_ARRAY_METHODS else None
        if found is not None and found[0] == HOST:
            return True, f"passed to `.{method}` of {found[1]}, which makes a NumPy value of it (a Tracer raises)"
        if keyword is not None or position < 0:
            return None
        if method in KEYED_METHODS and position == 0:
            text = "a method no array has: a dict there hashes it (a Tracer is unhashable)"
            described = self._unknown_container(func.value)
            return (False, f"passed as the key to `.{method}` of {described}, {text}") if described else None
        if method in INDEXING_METHODS and (position == 0 or method == "item"):
            text = "which nothing shows to be a JAX array rather than a host NumPy one (which takes no Tracer there)"
            described = self._unknown_container(func.value)
            return (False, f"passed to `.{method}` of {described}, {text}") if described else None
        return None


class _Binders(ModuleBindings):
    """The names bound anywhere below a def: its own and its nested scopes' assignments, loops,
    parameters and comprehension targets."""

    inside = True

    def visit_Param(self, node: cst.Param) -> None:
        self.add(node.name.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)
