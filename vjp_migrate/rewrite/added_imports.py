"""Rewrite, step 5b: `import jax` for a module whose change writes `jax.custom_vjp` where it has no
name for JAX (a use of an alias imported from another module replaced, plan.aliases), put where
isort and ruff would put it among the imports at its top: in the group of third-party imports,
before the first `from` import and the plain imports that sort after it; else in a group of its
own after the standard library's and before the project's own imports."""

from __future__ import annotations

import sys

import libcst as cst

from vjp_migrate.imports import dotted
from vjp_migrate.plan.type_comments import leading_lines
from vjp_migrate.rewrite.comments import is_docstring
from vjp_migrate.rewrite.unused_imports import blank_lead

_STANDARD = frozenset(sys.stdlib_module_names) | {"__future__"}
_BLANK = cst.EmptyLine()


def with_jax_import(module: cst.Module, first_party: str) -> cst.Module:
    """``module`` with `import jax` among its leading imports (``first_party``: a module of the
    project, whose top-level package's imports are the project's own)."""
    body: list[cst.BaseStatement] = list(module.body)
    start = 1 if body and is_docstring(body[0]) else 0
    end = start
    while end < len(body) and _imported(body[end]) is not None:
        end += 1
    kinds = [_kind(body[k], first_party.split(".")[0]) for k in range(start, end)]
    new = cst.parse_statement("import jax\n")
    assert isinstance(new, cst.SimpleStatementLine)
    if "third" in kinds:
        first = start + kinds.index("third")
        at = first
        while at < end and kinds[at - start] == "third" and (at == first or not blank_lead(body[at])):
            if _after_jax(body[at]):
                return _insert(module, body, at, new, own_group=False)
            at += 1
        return _insert_after(module, body, at - 1, new, own_group=False)
    if any(kind == "standard" for kind in kinds):
        last = start + max(k for k, kind in enumerate(kinds) if kind == "standard")
        return _insert_after(module, body, last, new, own_group=True)
    return _insert(module, body, start, new, own_group=True)


def _insert(
    module: cst.Module, body: list[cst.BaseStatement], at: int, new: cst.SimpleStatementLine, own_group: bool
) -> cst.Module:
    """``new`` before ``body[at]``, taking its blank lines (one at most, none at the file's
    start); ``own_group``: a blank line (two before a def or class) then sets the statement after
    it apart."""
    if at == len(body):
        body.append(new)
        return module.with_changes(body=body)
    following = body[at]
    blank = blank_lead(following)
    lines = list(leading_lines(following))
    rest = lines[len(blank) :]
    if own_group:
        apart = [_BLANK, _BLANK] if isinstance(following, (cst.FunctionDef, cst.ClassDef)) else [_BLANK]
        rest = [*apart, *rest]
    body[at] = following.with_changes(leading_lines=rest)
    body.insert(at, new.with_changes(leading_lines=blank[:1] if at > 0 or module.header else []))
    return module.with_changes(body=body)


def _insert_after(
    module: cst.Module, body: list[cst.BaseStatement], at: int, new: cst.SimpleStatementLine, own_group: bool
) -> cst.Module:
    """``new`` right after ``body[at]`` (``own_group``: after a blank line)."""
    body.insert(at + 1, new.with_changes(leading_lines=[_BLANK] if own_group else []))
    return module.with_changes(body=body)


def _imported(stmt: cst.BaseStatement) -> cst.Import | cst.ImportFrom | None:
    """The first import of a line holding only imports."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return None
    if not all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body):
        return None
    first = stmt.body[0]
    assert isinstance(first, (cst.Import, cst.ImportFrom))
    return first


def _module_name(node: cst.Import | cst.ImportFrom) -> str:
    if isinstance(node, cst.Import):
        return dotted(node.names[0].name) or ""
    return "." * len(node.relative) + (dotted(node.module) or "" if node.module is not None else "")


def _kind(stmt: cst.BaseStatement, project: str) -> str:
    node = _imported(stmt)
    assert node is not None
    name = _module_name(node)
    top = name.split(".")[0]
    if name.startswith(".") or top == project:
        return "project"
    return "standard" if top in _STANDARD else "third"


def _after_jax(stmt: cst.BaseStatement) -> bool:
    """Whether `import jax` sorts before this import: a `from` import, or a plain one of a later name."""
    node = _imported(stmt)
    return isinstance(node, cst.ImportFrom) or (node is not None and _module_name(node).lower() > "jax")
