"""Screen, step 2: what an expression may name, through every import alias, and the literals it
may hold (positions, argument names), read as the sites stage reads them."""

from __future__ import annotations

import ast
import builtins
import contextlib
import re
from collections.abc import Iterator
from typing import TypeGuard

from vjp_migrate.screen.tree import Doubt, Func, Module, dotted
from vjp_migrate.vocabulary import ARRAY_MODULES

ARRAY_TRANSFORMS = frozenset({"jax.vjp", "jax.jvp", "jax.linearize"})  # and any "tree" function
JIT = frozenset({"jax.jit", "jax.api.jit"})
PARTIAL = frozenset({"functools.partial", "jax.partial"})  # jax.partial: old JAX re-exported it
_BUILTINS = frozenset(dir(builtins))


def qualified(m: Module, expr: ast.expr) -> set[str]:
    """Every qualified name the expression may have (any import of its head; shadowing ignored)."""
    text = dotted(expr)
    if text is None:
        return set()
    head, _, rest = text.partition(".")
    bases = set(m.aliases.get(head, ()))
    if not bases and head in _BUILTINS:
        bases = {f"builtins.{head}"}
    return {f"{base}.{rest}" if rest else base for base in bases}


def exactly(m: Module, expr: ast.expr, names: frozenset[str]) -> bool:
    """True only when the expression surely is one of ``names`` the way imports.py resolves it."""
    text = dotted(expr)
    head = (text or "").partition(".")[0]
    if text is None or head in m.shadowed or len(m.aliases.get(head, ())) != 1:
        return False
    found = qualified(m, expr)
    return len(found) == 1 and found <= names


def may_be_custom_vjp(m: Module, expr: ast.expr) -> bool:
    if isinstance(expr, ast.Subscript):  # `jax.custom_vjp[Array](f, ...)`, as imports.is_one_of reads it
        expr = expr.value
    names = qualified(m, expr) | {dotted(expr) or ""}
    return any(n == "custom_vjp" or n.endswith(".custom_vjp") for n in names)


def may_be_array_function(m: Module, func: ast.expr) -> bool:
    return any(q.startswith(ARRAY_MODULES) or q in ARRAY_TRANSFORMS or "tree" in q for q in qualified(m, func))


def _may_make_ffi_function(m: Module, func: ast.expr) -> bool:
    return any(q.rsplit(".", 1)[-1] == "ffi_call" for q in qualified(m, func) | {dotted(func) or ""})


def may_be_ffi_function(m: Module, func: ast.expr) -> bool:
    """``func`` may be a function ``jax.ffi.ffi_call(...)`` returns: called in place, or a name
    bound anywhere to such a result (classify: a local bound to it once)."""
    if isinstance(func, ast.Call):
        return _may_make_ffi_function(m, func.func)
    if not isinstance(func, ast.Name):
        return False
    if m.ffi_names is None:
        made = (c for c in m.calls if _may_make_ffi_function(m, c.func))
        m.ffi_names = {name for c in made for name in m.assigned.get(id(c), [])}
    return func.id in m.ffi_names


def positional_params(func: Func) -> list[ast.arg]:
    return [*func.args.posonlyargs, *func.args.args]


def int_positions(m: Module, expr: ast.expr, allow_range: bool = True) -> list[int]:
    """The literal positions, as the sites stage reads them; Doubt for anything else."""
    if isinstance(expr, (ast.Tuple, ast.List)):
        values = [int_positions(m, e, False) for e in expr.elts]
        return [v for value in values for v in value] if all(len(v) == 1 for v in values) else _doubt()
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return [expr.value]
    if allow_range and _builtin_call(expr, m, "range") and len(expr.args) <= 3:
        return list(range(*[int_positions(m, a, False)[0] for a in expr.args]))
    if allow_range and (_builtin_call(expr, m, "tuple") or _builtin_call(expr, m, "list")) and len(expr.args) == 1:
        return int_positions(m, expr.args[0])  # tuple(range(4, 9)), list((1, 2))
    return _doubt()


def _builtin_call(expr: ast.expr, m: Module, name: str) -> TypeGuard[ast.Call]:
    """A call of the builtin ``name`` with positional arguments only, none starred."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == name
        and name not in m.shadowed
        and name not in m.aliases
        and not expr.keywords
        and bool(expr.args)
        and not any(isinstance(a, ast.Starred) for a in expr.args)
    )


def str_names(m: Module, expr: ast.expr, nested: bool = False) -> list[str]:
    """The literal names; Doubt for anything but plain one-piece string literals."""
    if isinstance(expr, (ast.Tuple, ast.List)) and not nested:
        return [name for e in expr.elts for name in str_names(m, e, True)]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        source = segment(m, expr)
        if len(source) >= 2 and source[0] == source[-1] and source[0] in "'\"" and source[1:-1] == expr.value:
            return [expr.value]
    return _doubt()


def segment(m: Module, node: ast.expr) -> str:
    """The source of a one-line node (ast columns count UTF-8 bytes)."""
    if node.lineno != node.end_lineno or node.end_col_offset is None:
        return ""
    if m.encoded_lines is None:
        m.encoded_lines = [line.encode("utf-8", "surrogatepass") for line in re.split(r"\r\n|\r|\n", m.text)]
    line = m.encoded_lines[node.lineno - 1] if node.lineno <= len(m.encoded_lines) else b""
    return line[node.col_offset : node.end_col_offset].decode("utf-8", "replace")


def _doubt() -> list:  # type: ignore[type-arg]
    raise Doubt


def annotation_nodes(annotation: ast.expr) -> Iterator[ast.AST]:
    """Every node of an annotation, and of the annotation each string in it holds when it parses
    (`"jax.Array"`, `Optional["Array"]`), as classify reads a string annotation."""
    for node in ast.walk(annotation):
        yield node
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            with contextlib.suppress(SyntaxError, ValueError):
                yield from annotation_nodes(ast.parse(node.value.strip(), mode="eval").body)


def annotation_parts(m: Module, annotation: ast.expr, into: list[ast.expr]) -> bool:
    """Append the parts of an annotation to ``into`` in the order classify's annotation step reads
    them, outermost first (`Callable[[Array], Array] | None`: Callable, the list, Array, None).
    False where the two trees may differ, after the parts before it: a string (classify reads
    only a single literal's text), a parenthesized tuple index (one element for LibCST, several
    for ast)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return False
    if isinstance(annotation, ast.Subscript):
        index = annotation.slice
        into.append(annotation.value)
        if isinstance(index, ast.Tuple) and segment(m, index).startswith("("):
            return False
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        return all(isinstance(e, ast.Slice) or annotation_parts(m, e, into) for e in elements)
    if isinstance(annotation, ast.BinOp):
        return annotation_parts(m, annotation.left, into) and annotation_parts(m, annotation.right, into)
    into.append(annotation)
    return True
