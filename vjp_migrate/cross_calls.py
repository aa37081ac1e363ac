"""Stage 6d: what the other files of a run pass to a custom_vjp whose fix moves arguments.

A call of the primal in its own module that passes a static value at a moved position (a string,
a shape, a function) is evidence against the move (classify/call_sites.py): moved, the value
becomes a regular argument, and JAX rejects it (`TypeError: ... is not a valid JAX type`). The
same call in another file of the run counts the same way: cross_uses.py finds the calls of each
migrated custom_vjp there (FileResult.changed_names with the role CALL), and ``static_passed``
says which of their values are static. Phase 2 (project.py) hands what was found to
classification (Context.outside), which weighs it as a call site of the module.

Read with ``ast``, out of the other file's context: only values that no context can make a
Tracer count (literals, a lambda, a def of that file, a function of JAX or NumPy).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.screen.tree import dotted

CALL = "call"  # the role of a custom_vjp whose callers in other files are read
Passed = tuple[int, str | None, Evidence]  # position (-1: by keyword or unknown), keyword, what it says


def static_passed(call: ast.Call, text: str, where: str, resolve: Callable[[str], str | None]) -> Iterator[Passed]:
    """The static values ``call`` (in the file ``where``, whose source is ``text``) passes, each
    with its position or keyword. ``resolve``: the absolute target a dotted name is imported as,
    or "" for a def of that file, None otherwise."""
    position = 0
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            position = -1_000_000  # positions after `*args` are unknown
            continue
        if position >= 0 and (said := _said(arg, text, where, resolve)) is not None:
            yield position, None, said
        position += 1
    for keyword in call.keywords:
        if keyword.arg is not None and (said := _said(keyword.value, text, where, resolve)) is not None:
            yield -1, keyword.arg, said


def _said(value: ast.expr, text: str, where: str, resolve: Callable[[str], str | None]) -> Evidence | None:
    what = _static_kind(value, resolve)
    if what is None:
        return None
    shown = ast.get_source_segment(text, value) or ast.unparse(value)
    return Evidence(ArgKind.STATIC, f"{what} is passed at a call site (`{shown}`)", value.lineno, where)


def _static_kind(value: ast.expr, resolve: Callable[[str], str | None]) -> str | None:
    """What ``value`` is when it is static wherever the call runs: a constant (a string, a bool),
    a shape (a tuple of int literals), a dtype or shape read off a value, a function."""
    if isinstance(value, ast.JoinedStr) or (
        isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes, bool))
    ):
        return "a constant"
    if isinstance(value, (ast.Tuple, ast.List)) and value.elts:
        if all(isinstance(e, ast.Constant) and type(e.value) is int for e in value.elts):
            return "a shape"
        if all(_static_kind(e, resolve) == "a constant" for e in value.elts):
            return "a constant"
    if isinstance(value, ast.Attribute) and value.attr in ("shape", "dtype"):
        return f"a {value.attr}"
    if isinstance(value, ast.Lambda):
        return "a function"
    name = dotted(value)
    target = resolve(name) if name is not None else None
    if target == "" or (target is not None and target.startswith(("jax.", "numpy."))):
        return "a function"
    return None
