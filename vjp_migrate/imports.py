"""Stage 4: module -> which local name means which qualified name (our own cheap import tracking).

LibCST's QualifiedNameProvider would do this too, at a cost that more than doubles a pass; the
tool only needs "does this expression name jax.custom_vjp / functools.partial / jax.numpy.x".
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator

import libcst as cst

from vjp_migrate.vocabulary import imported_name, public_name

CUSTOM_VJP = frozenset(
    {"jax.custom_vjp", "jax.custom_derivatives.custom_vjp", "jax._src.custom_derivatives.custom_vjp"}
)
PARTIAL = frozenset({"functools.partial", "jax.partial"})  # jax.partial: old JAX re-exported it
JIT = frozenset({"jax.jit", "jax.api.jit"})
_BUILTINS = frozenset(dir(builtins))


def node_types(*classes: type) -> frozenset[type]:
    """The classes and every class derived from them, so that ``type(node) in node_types(...)``
    is ``isinstance(node, classes)`` for LibCST's nodes. LibCST's classes are ABCs: there,
    ``isinstance`` runs ``ABCMeta.__instancecheck__`` whenever the type is not the class itself.
    A class no other derives from (``cst.Name``) is tested with ``type(node) is cst.Name``
    (tests/test_sites.py lists those used so)."""
    found: set[type] = set()
    pending = list(classes)
    while pending:
        kind = pending.pop()
        if kind not in found:
            found.add(kind)
            pending.extend(kind.__subclasses__())
    return frozenset(found)


def dotted(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text, or None for anything that is not a plain dotted name."""
    if type(expr) is cst.Name:  # `type() is`, not isinstance, for LibCST's final classes: see node_types
        return expr.value
    if type(expr) is cst.Attribute:
        head = dotted(expr.value)
        return None if head is None else f"{head}.{expr.attr.value}"
    return None


def _import_module_name(node: cst.Attribute | cst.Name) -> str:
    return dotted(node) or ""


class ImportTable:
    """Local names bound by imports, and names the module binds otherwise (which shadow)."""

    def __init__(self, aliases: dict[str, str], shadowed: frozenset[str]) -> None:
        self.aliases = aliases
        self.shadowed = shadowed

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        text = dotted(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head in self.shadowed:
            return None
        if head in self.aliases:
            base = self.aliases[head]
        elif head in _BUILTINS:
            base = f"builtins.{head}"
        else:
            return None
        name = f"{base}.{rest}" if rest else base
        return public_name(name) if name.startswith("jax._src.") else name

    def is_one_of(self, expr: cst.BaseExpression, names: frozenset[str]) -> bool:
        """Whether the callee ``expr`` is one of ``names``; a generic one parametrized too
        (`partial[Any](jax.custom_vjp, ...)`, `jax.custom_vjp[Array](f, ...)`): the same callable."""
        if type(expr) is cst.Subscript:
            expr = expr.value
        return self.qualify(expr) in names


def _module_bindings(module: cst.Module) -> Iterator[str]:
    """Names bound at module level by something other than an import."""
    for stmt in module.body:
        yield from statement_bindings(stmt)


def statement_bindings(stmt: cst.BaseStatement) -> Iterator[str]:
    """The names one statement of a scope surely binds there, other than by an import: a def's,
    a class's, an assignment's (not those of an `if` or a loop, which may not run)."""
    if type(stmt) is cst.FunctionDef or type(stmt) is cst.ClassDef:
        yield stmt.name.value
    elif type(stmt) is cst.SimpleStatementLine:
        for small in stmt.body:
            if type(small) is cst.Assign:
                for target in small.targets:
                    yield from target_names(target.target)
            elif type(small) is cst.AnnAssign or type(small) is cst.AugAssign:
                yield from target_names(small.target)


def target_names(target: cst.CSTNode | None) -> Iterator[str]:
    """The names a target binds (``a``, ``a, (b, *c)``); none for ``x[0]`` or ``self.a``."""
    if type(target) is cst.Name:
        yield target.value
    elif type(target) is cst.Tuple or type(target) is cst.List:
        for element in target.elements:
            yield from target_names(element.value)
    elif type(target) is cst.StarredElement:
        yield from target_names(target.value)


_SUITE_FIELDS = ("body", "handlers", "cases", "orelse", "finalbody")  # in source order
_EXPRESSIONS = node_types(cst.BaseExpression)
_SMALL = node_types(cst.BaseSmallStatement)
_LINES = node_types(cst.SimpleStatementLine, cst.SimpleStatementSuite)
_NODES = node_types(cst.CSTNode)


def small_statements(node: cst.CSTNode) -> Iterator[cst.BaseSmallStatement]:
    """Every small statement (import, assignment, ...) at any depth below ``node``, in source order.

    Imports are statements, so this finds all of them without walking a single expression.
    """
    for name in _SUITE_FIELDS:
        value = getattr(node, name, None)
        if value is None or type(value) in _EXPRESSIONS:  # a Lambda's body
            continue
        for part in value if isinstance(value, (list, tuple)) else (value,):
            kind = type(part)
            if kind in _SMALL:
                yield part
            elif kind in _LINES:
                yield from part.body
            elif kind in _NODES:
                yield from small_statements(part)


def _collect(node: cst.Import | cst.ImportFrom, aliases: dict[str, str]) -> None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _import_module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                aliases[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                aliases[head] = head
        return
    if isinstance(node.names, cst.ImportStar):
        return
    module = "." * len(node.relative) + (_import_module_name(node.module) if node.module is not None else "")
    for alias in node.names:
        name = _import_module_name(alias.name)
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        aliases[local] = imported_name(module, name)


# The modules whose star import binds `custom_vjp` (JAX's own: no `__all__` leaves it out).
_STARS_WITH_CUSTOM_VJP = frozenset({"jax", "jax.custom_derivatives"})


def import_table(module: cst.Module) -> ImportTable:
    """Build the table from every import in the module (function-level ones included)."""
    aliases: dict[str, str] = {}
    stars: list[str] = []  # the modules star-imported
    for small in small_statements(module):
        if type(small) is cst.Import or type(small) is cst.ImportFrom:
            _collect(small, aliases)
            if type(small) is cst.ImportFrom and type(small.names) is cst.ImportStar:
                stars.append("." * len(small.relative) + (_import_module_name(small.module) if small.module else ""))
    if stars:
        # `from optimism.JaxConfig import *` then `@partial(custom_vjp, ...)`: a `partial` nothing
        # else binds comes from the star import, and one that takes custom_vjp is functools'.
        aliases.setdefault("partial", "functools.partial")
    if _STARS_WITH_CUSTOM_VJP & set(stars) and all(s == "jax" or s.startswith("jax.") for s in stars):
        # `from jax import *`: a `custom_vjp` nothing else binds is JAX's, when no other module's
        # star import may bind it too.
        aliases.setdefault("custom_vjp", "jax.custom_vjp")
    return ImportTable(aliases, frozenset(_module_bindings(module)))
