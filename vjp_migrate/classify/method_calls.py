"""Classify, step 8a'': the calls of a site defined in a module class's body (`@partial(jax.custom_vjp,
...) def layer(solver, z_init, params)`) through an instance, `self.layer(a, b, c)` in a method of
that class or of a module class deriving from it. A custom_vjp object is no descriptor: the
instance is not passed, so the call passes the site's arguments as `Solver.layer(a, b, c)` does."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.class_fields import instance_methods
from vjp_migrate.classify.context import Context, function_locals
from vjp_migrate.imports import dotted
from vjp_migrate.model import VjpSite
from vjp_migrate.sites import positional_params

Call = tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]


def instance_calls(
    site: VjpSite, module: cst.Module, ctx: Context, calls: list[Call]
) -> list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]:
    """The calls `self.<site>(...)` from the methods of the site's class and of its subclasses."""
    owner, _, name = site.qualname.rpartition(".")
    if not owner or "." in owner or site.primal is None or site.primal_expr is not None:
        return []
    if not any(d is site.carrier for d in site.primal.decorators):
        return []  # a method wrapped otherwise may be bound to its instance
    methods = _methods_of({owner, *_subclasses(module, owner)}, module)
    found: list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]] = []
    for called, call, callers in calls:
        instance, _, attribute = called.rpartition(".")
        if attribute == name and "." not in instance and instance and _instance_of(instance, callers, methods, ctx):
            found.append((call, callers))
    return found


def _subclasses(module: cst.Module, owner: str) -> set[str]:
    """The module-level classes deriving, directly or through each other, from ``owner``."""
    classes = [stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            bases = {dotted(base.value) for base in cls.bases}
            if cls.name.value not in found and cls.name.value != owner and bases & {owner, *found}:
                found.add(cls.name.value)
                changed = True
    return found


def _methods_of(classes: set[str], module: cst.Module) -> set[int]:
    """The ids of the methods (called on an instance) of those module-level classes."""
    return {
        id(method)
        for cls in module.body
        if isinstance(cls, cst.ClassDef) and cls.name.value in classes
        for method in instance_methods(cls)
    }


def _instance_of(instance: str, callers: tuple[cst.FunctionDef, ...], methods: set[int], ctx: Context) -> bool:
    """Whether ``instance`` in the innermost of ``callers`` is the first parameter of one of
    ``methods`` around it, which no def between rebinds (nor the method itself)."""
    for caller in reversed(callers):
        if id(caller) in methods and positional_params(caller)[:1] == (instance,):
            bound = function_locals(caller, ctx).bindings.get(instance, [])
            return all(isinstance(b.node, cst.Param) for b in bound)
        if instance in function_locals(caller, ctx).bindings:
            return False
    return False
