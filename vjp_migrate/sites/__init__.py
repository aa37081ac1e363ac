"""Stage 5: module -> every jax.custom_vjp with nondiff arguments, its fwd/bwd and its defvjp.

The steps: ``scopes`` (what the module's scopes bind), ``jit`` (what a stacked or called
`jax.jit` marks static), ``rules`` (a site's rules and the parameters its positions name),
``nondiff`` (a site's nondiff_argnums and nondiff_argnames read), ``imported`` (an alias of the
partial imported from another module), ``built`` (a primal or rule a
call builds, which is not followed), ``methods`` (rules a class's
instance registers in a method, bound to it), ``overrides`` (the subclasses that may replace
them), ``stretch`` (the statements where a site's name keeps its binding: a notebook may define
it again), ``defvjp`` (a site linked to
its defvjp call and rules), ``finder`` (the walk that collects the sites). The names later
stages use are exported here.
"""

from __future__ import annotations

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import VjpSite
from vjp_migrate.sites.finder import ImportedAlias, ImportedRule, ImportedValue, SiteFinder
from vjp_migrate.sites.jit import (
    jit_call_static_names,
    jit_static_names,
    jit_static_positions,
    other_decorator,
    rule_jit,
)
from vjp_migrate.sites.methods import class_bound
from vjp_migrate.sites.rules import ignored_argnames, unnamed_position, varargs_item, varargs_owner
from vjp_migrate.sites.scopes import (
    OwnReturns,
    Scope,
    body_statements,
    find_def,
    module_constants,
    own_returns,
    positional_params,
    scope_statements,
)

__all__ = [
    "ImportedAlias",
    "ImportedRule",
    "ImportedValue",
    "OwnReturns",
    "Scope",
    "SiteFinder",
    "body_statements",
    "class_bound",
    "find_def",
    "find_sites",
    "ignored_argnames",
    "jit_call_static_names",
    "jit_static_names",
    "jit_static_positions",
    "module_constants",
    "other_decorator",
    "own_returns",
    "positional_params",
    "rule_jit",
    "scope_statements",
    "unnamed_position",
    "varargs_item",
    "varargs_owner",
]


def find_sites(
    module: cst.Module,
    imports: ImportTable,
    imported_rule: ImportedRule | None = None,
    imported_value: ImportedValue | None = None,
    imported_alias: ImportedAlias | None = None,
) -> list[VjpSite]:
    """Every custom_vjp in the module that has nondiff_argnums or nondiff_argnames."""
    return SiteFinder(module, imports, imported_rule, imported_value, imported_alias).find()
