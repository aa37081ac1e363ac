"""Sites, step 4d: where a site's name keeps the binding its definition gives, among its scope's
own statements: up to the next statement that binds the name again (a notebook defining `f` and
its rules anew, cell after cell). The defvjp calls there register on this site, and the rules are
the defs bound where the call runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from vjp_migrate.imports import statement_bindings
from vjp_migrate.model import VjpSite
from vjp_migrate.sites.scopes import Scope, scope_statements


def defines(stmt: cst.BaseStatement, site: VjpSite) -> bool:
    """Whether ``stmt`` is the one defining ``site``: its decorated def, or its assignment line."""
    if type(stmt) is cst.FunctionDef:  # `type() is`: see imports.node_types
        return any(d is site.carrier for d in stmt.decorators)
    return type(stmt) is cst.SimpleStatementLine and any(
        type(small) is cst.Assign and small.value is site.carrier for small in stmt.body
    )


def stretch(site: VjpSite, scope: Scope) -> range | None:
    """The indices of ``scope``'s own statements from the one defining ``site`` to the last before
    one that surely binds its name again (``statement_bindings``); None when the definition is no
    statement of the scope itself (it is under an `if`)."""
    statements = scope.statements
    start = next((k for k, stmt in enumerate(statements) if defines(stmt, site)), None)
    if start is None:
        return None
    root = site.name.split(".")[0]
    for k in range(start + 1, len(statements)):
        if root in statement_bindings(statements[k]):
            return range(start, k)
    return range(start, len(statements))


def numbered(statements: Sequence[cst.BaseStatement]) -> Iterator[tuple[int, cst.BaseStatement]]:
    """``scope_statements``, each with the index of the scope's own statement holding it."""
    for k, top in enumerate(statements):
        for stmt in scope_statements([top]):
            yield k, stmt
