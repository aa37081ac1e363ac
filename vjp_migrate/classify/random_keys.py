"""Classify, step 7c: ``key_parameter``, whether a helper of the module hands the parameter a call
fills to a `jax.random` function as its PRNG key (`def noise_fn(shape, key): return
jax.random.uniform(key, shape) - 0.5`): what an argument's attribute passed there holds is a key."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.context import own_body
from vjp_migrate.classify.expressions import shadowing
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.sites import positional_params
from vjp_migrate.vocabulary import takes_random_key


def key_parameter(helper: cst.FunctionDef, position: int, keyword: str | None, imports: ImportTable) -> str | None:
    """The `jax.random` function (as written) that takes as its key the parameter of ``helper`` a
    call fills at ``position`` (or ``keyword``), as it came; None if none does."""
    params = positional_params(helper)
    named = {*params, *(p.name.value for p in helper.params.kwonly_params)}
    name = keyword if keyword in named else (params[position] if 0 <= position < len(params) else None)
    if name is None:
        return None
    finder = _KeyUses(name, imports)
    for stmt in own_body(helper):
        walk.visit(stmt, finder)
    return finder.found


class _KeyUses(cst.CSTVisitor):
    """The first `jax.random` call taking one name as its PRNG key (not in a def or lambda that
    rebinds the name)."""

    def __init__(self, name: str, imports: ImportTable) -> None:
        self.name = name
        self.imports = imports
        self.found: str | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self.name not in shadowing(node.params)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.name not in shadowing(node.params)

    def visit_Call(self, node: cst.Call) -> None:
        qname = self.imports.qualify(node.func)
        if self.found is not None or qname is None:
            return
        positional = 0
        for arg in node.args:
            if arg.star:
                return
            keyword = arg.keyword.value if arg.keyword is not None else None
            place = positional if keyword is None else -1
            if (
                isinstance(arg.value, cst.Name)
                and arg.value.value == self.name
                and takes_random_key(qname, place, keyword)
            ):
                self.found = dotted(node.func) or qname
                return
            positional += keyword is None
