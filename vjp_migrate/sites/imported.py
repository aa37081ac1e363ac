"""Sites, step 4e: a module alias of `partial(jax.custom_vjp, ...)` that the module imports from
another module (`from mylib.vjp import vjp_w`, then `@vjp_w` or `f = vjp_w(_f)` at its top level).

The project resolves the import (project.py: a file of the run, else the file on disk the import
means from the module's file); ``AliasSource`` reads that module's own aliases as
``NondiffReader.partial_aliases`` does, and the site's positions are read there, from the alias's
definition. What this module knows: the names its top-level defvjp calls register rules on (no
other use of an imported name is looked up), and how it spells `jax.custom_vjp` for the fix.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vjp_migrate.imports import CUSTOM_VJP, ImportTable, dotted, import_table
from vjp_migrate.model import PartialAlias
from vjp_migrate.sites.nondiff import NondiffReader
from vjp_migrate.sites.scopes import constant_assigns

# A local name the module imports -> the alias it names in the module it comes from (its
# ``module`` set, its ``name`` that module's), with the reader of that module; None when the
# name is no such alias, or its module is neither a file of the run nor found on disk.
ImportedAlias = Callable[[str], "tuple[PartialAlias, NondiffReader] | None"]


class AliasSource(NondiffReader):
    """The module an alias is imported from, read without making it the module analysed."""

    current = False

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.imports = import_table(module)
        self.imported_value = None
        self.constants = constant_assigns(module)
        self.mentions = None
        self.aliases = self.partial_aliases()


def defvjp_owners(module: cst.Module, owner_of: Callable[[cst.BaseExpression], str | None]) -> frozenset[str]:
    """The names the module's own top-level statements call `defvjp` on (`f.defvjp(fwd, bwd)`)."""
    found: set[str] = set()
    for stmt in module.body:
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            call = small.value if type(small) is cst.Expr else None
            if type(call) is cst.Call and (owner := owner_of(call.func)) is not None:
                found.add(owner)
    return frozenset(found)


def custom_vjp_spelling(module: cst.Module, imports: ImportTable, bindings: dict[str, int]) -> str | None:
    """How the module's top-level imports spell `jax.custom_vjp` (`jax.custom_vjp`, `J.custom_vjp`,
    `custom_vjp` of `from jax import custom_vjp`), each name bound once in the module (``bindings``:
    sites.scopes.AnyBindings' counts); "" when nothing binds `jax`, so that the fix may add
    `import jax`; None when `jax` names something else."""
    modules: list[str] = []
    functions: list[str] = []
    for stmt in module.body:
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            if type(small) is not cst.Import and type(small) is not cst.ImportFrom:
                continue
            for alias in small.names if not isinstance(small.names, cst.ImportStar) else ():
                bound = alias.asname.name if alias.asname is not None else alias.name
                local = (dotted(bound) or "").split(".")[0]
                meaning = imports.aliases.get(local)
                if bindings.get(local, 0) != 1 or local in imports.shadowed:
                    continue
                if meaning == "jax":
                    modules.append(f"{local}.custom_vjp")
                elif meaning in CUSTOM_VJP:
                    functions.append(local)
    if modules or functions:
        return sorted(modules, key=lambda text: text != "jax.custom_vjp")[0] if modules else functions[0]
    return "" if "jax" not in bindings and "jax" not in imports.aliases else None
