"""Sites, step 4a: rules a class registers through its instance, in a method:
`self.apply.defvjp(self.apply_fwd, self.apply_bwd)`. `self.apply` is the custom_vjp of the class
body (it has no `__get__`, so JAX calls it with no instance), while the rules are bound methods:
the instance fills their first parameter, and JAX's arguments come after it."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted
from vjp_migrate.sites.scopes import Scope, body_statements, positional_params, scope_statements

Owner = Callable[[cst.BaseExpression], "str | None"]  # `f` for `f.defvjp` (RuleLinker._defvjp_owner)


def instance_name(scope: Scope) -> str | None:
    """What a method's body calls its instance (`self`): the first parameter of a def directly in
    a class, neither a staticmethod nor a classmethod."""
    func, parent = scope.func, scope.parent
    if func is None or parent is None or not parent.is_class or _decorated(func) & {"staticmethod", "classmethod"}:
        return None
    params = positional_params(func)
    return params[0] if params else None


def method_rule(scope: Scope, name: str) -> tuple[cst.FunctionDef, int] | None:
    """For `self.<method>` read in a method: the class's def of that method, and how many leading
    parameters the instance binds (none for a staticmethod's; a classmethod's `cls`)."""
    instance = instance_name(scope)
    head, _, rest = name.partition(".")
    if instance is None or head != instance or not rest.isidentifier() or scope.parent is None:
        return None
    found = [
        s for s in scope_statements(scope.parent.statements) if type(s) is cst.FunctionDef and s.name.value == rest
    ]
    if not found:
        return None
    return found[-1], 0 if "staticmethod" in _decorated(found[-1]) else 1


def class_bound(func: cst.FunctionDef) -> int:
    """How many leading parameters a def read through its class (`Layer.apply_bwd`) has bound:
    a classmethod's `cls`."""
    return 1 if "classmethod" in _decorated(func) else 0


def method_defvjps(name: str, class_scope: Scope, owner: Owner) -> list[tuple[cst.Call, Scope]]:
    """Every `self.<name>.defvjp(...)` call in the methods of a class, each with its method's scope."""
    found: list[tuple[cst.Call, Scope]] = []
    for stmt in scope_statements(class_scope.statements):
        if type(stmt) is not cst.FunctionDef:
            continue
        scope = Scope(body_statements(stmt), class_scope, False, "", stmt)
        instance = instance_name(scope)
        if instance is None:
            continue
        calls = DefvjpCalls(owner, f"{instance}.{name}")
        walk.visit(stmt.body, calls)
        found.extend((call, scope) for call in calls.found)
    return found


def _decorated(func: cst.FunctionDef) -> set[str]:
    return {(dotted(d.decorator) or "").rsplit(".", 1)[-1] for d in func.decorators}


class DefvjpCalls(cst.CSTVisitor):
    """The ``<name>.defvjp(...)`` calls in what it walks (``suffix``: the owners ending with ``name``)."""

    def __init__(self, owner: Owner, name: str, suffix: bool = False) -> None:
        super().__init__()
        self.owner, self.name, self.suffix = owner, name, suffix
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        owner = self.owner(node.func)
        if owner == self.name or (self.suffix and owner is not None and owner.endswith(self.name)):
            self.found.append(node)
