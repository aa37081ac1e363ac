"""Sites, step 4c: the classes of the module whose instances may get another attribute than the
class's own: `self.apply_bwd`, a rule a method finds (methods.py) in `Base.__init__`, is the bwd of
`Sub` when `Sub(Base)` defines its own `apply_bwd`, which keeps its signature when the fix
rewrites `Base.apply_bwd`; `self.SCALES` is `Sub`'s (classify/class_containers.py). A subclass
whose bases listed before the one leading to the class are not all classes of the module (a
mixin imported) may get the attribute from one of them: that cannot be told."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.sites.scopes import ModuleBindings, body_statements, scope_statements
from vjp_migrate.vocabulary import PLAIN_BASES


def overriding(module: cst.Module, imports: ImportTable, owner: str, method: str) -> tuple[cst.ClassDef, str] | None:
    """The first class of the module deriving from the class ``owner`` (through others too) whose
    instances may get another ``method`` than ``owner``'s, with why (what it does: "defines its
    own ..."): it binds ``method`` itself, or a base before the one leading to ``owner`` does (or
    may: a class not defined here)."""
    classes = list(_classes(module.body))
    by_name: dict[str, list[cst.ClassDef]] = {}
    for cls in classes:
        by_name.setdefault(cls.name.value, []).append(cls)
    heirs, changed = {owner}, True
    while changed:
        changed = False
        for cls in classes:
            if cls.name.value not in heirs and any(base in heirs for base in _bases(cls)):
                heirs.add(cls.name.value)
                changed = True
    for cls in classes:
        name = cls.name.value
        if name == owner or name not in heirs:
            continue
        if _binds(cls, method):
            return cls, f"defines its own `{method}`"
        for base, arg in zip(_bases(cls), cls.bases, strict=True):
            if base in heirs:
                break
            if imports.qualify(arg.value) in PLAIN_BASES:
                continue
            if base is None or base not in by_name:
                shown = module.code_for_node(arg.value)
                return cls, f"also derives from `{shown}`, not a class of this module, which may define `{method}`"
            if any(_binds(kin, method) for kin in _ancestry(base, by_name)):
                return cls, f"gets `{method}` from `{base}`, a base listed before the one leading to `{owner}`"
    return None


def _classes(body: Sequence[cst.BaseStatement]) -> Iterator[cst.ClassDef]:
    """The classes defined in ``body``, in source order, those inside its defs and classes too."""
    for stmt in scope_statements(body):
        if isinstance(stmt, cst.ClassDef):
            yield stmt
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            yield from _classes(body_statements(stmt))


def _bases(cls: cst.ClassDef) -> list[str | None]:
    """The last name of each positional base (`Base`, `mod.Base`, `Base[T]`), None for one written
    otherwise (a call)."""
    found: list[str | None] = []
    for arg in cls.bases:
        value = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value
        name = dotted(value) if arg.keyword is None and not arg.star else None
        found.append(name.rsplit(".", 1)[-1] if name else None)
    return found


def _ancestry(name: str, by_name: dict[str, list[cst.ClassDef]]) -> list[cst.ClassDef]:
    """The module's classes named ``name`` and those they derive from, through the module's classes."""
    found: dict[int, cst.ClassDef] = {}
    todo = [name]
    while todo:
        for cls in by_name.get(todo.pop(), []):
            if id(cls) not in found:
                found[id(cls)] = cls
                todo.extend(base for base in _bases(cls) if base is not None)
    return list(found.values())


def _binds(cls: cst.ClassDef, name: str) -> bool:
    """Whether the class body binds ``name`` (a def, an assignment, an import)."""
    counter = ModuleBindings()
    for stmt in body_statements(cls):
        walk.visit(stmt, counter)
    return name in counter.counts
