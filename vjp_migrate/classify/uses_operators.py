"""Classify, step 7b: ``Operators``, the evidence from operators and reads of an argument:
arithmetic, a string or list it is combined with, sizes, truth values, comparisons (with a string,
an enum member), slice bounds, array attributes."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.classify.containers import indexed_text, maybe_indexed_text, subscript_indexes
from vjp_migrate.classify.expressions import code_text, is_string_like, key_lookup
from vjp_migrate.classify.hashing import hashing_membership, hashing_subscript
from vjp_migrate.classify.uses_containers import Containers
from vjp_migrate.classify.weights import ARITHMETIC, STRONG, WEAK
from vjp_migrate.model import ArgKind
from vjp_migrate.vocabulary import ARRAY_ATTRIBUTES, METADATA_ATTRIBUTES, SIZE_NAMES, is_size_function


class Operators(Containers):
    """What operators, comparisons, slices and attribute reads do with the argument."""

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if self._rooted(side):
                if isinstance(other, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
                    self._add(ArgKind.STATIC, "combined with a string", node)
                elif isinstance(other, (cst.List, cst.Tuple)):  # `[0] * n` repeats: n must be an int
                    self._add(ArgKind.STATIC, "combined with a list or tuple", node)
                elif self._size(other):  # `tokens // block` with `tokens = x.shape[0]`: sizes, likely
                    self._note(f"used in arithmetic with the size `{code_text(other)}` (a size or count, likely)", node)
                else:
                    self._add(ArgKind.ARRAY, ARITHMETIC, node)
            elif isinstance(side, cst.Name) and side.value in self.derived and is_string_like(other):
                self._add(ArgKind.STATIC, "combined with a string", node, via=self._via(side))
            elif (how := self._item(side)) and not isinstance(other, (cst.List, cst.Tuple)) and not self._size(other):
                self._add(ArgKind.ARRAY, f"{ARITHMETIC} (its item `{code_text(side)}`, {how})", node)

    def _item(self, expr: cst.BaseExpression) -> str | None:
        """How a name takes the argument's items, bound by that alone: a loop over the argument
        (`looped over`) or its unpacking (`unpacked`), or a part of it (`w[:, None]`); None otherwise."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if not isinstance(expr, cst.Name) or expr.value not in self.items:
            return None
        bound = self.bindings.get(expr.value, [])
        if len(bound) != 1:
            return None
        if isinstance(bound[0].node, (cst.For, cst.CompFor)):
            return "looped over"
        return "unpacked" if isinstance(bound[0].node, cst.Assign) else None

    def _size(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """``x.shape[0]``, ``len(x)``, ``int(x.shape[0])``, or a local only ever bound to such a value."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in SIZE_NAMES
        if isinstance(expr, cst.Call):
            qname = self.ctx.imports.qualify(expr.func) or ""
            if qname == "builtins.int" and len(expr.args) == 1 and not expr.args[0].star:
                return self._size(expr.args[0].value, depth + 1)  # `int(x.shape[0])`
            return is_size_function(qname)
        if isinstance(expr, cst.Name) and depth < 3 and expr.value not in self.names:
            found = self.bindings.get(expr.value)
            return bool(found) and all(
                b.values is not None and all(self._size(v, depth + 1) for v in b.values) for b in found or ()
            )
        return False

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if self._rooted(node.expression):
            if isinstance(node.operator, cst.Not):
                self._add(ArgKind.STATIC, "used as a truth value", node)
            else:
                self._add(ArgKind.ARRAY, ARITHMETIC, node)
        elif isinstance(node.operator, cst.Not) and (via := self._via(node.expression)) is not None:
            self._add(ArgKind.STATIC, "used as a truth value", node, via=via)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # `scale or default`, `mask and x`: Python calls bool() on every operand but the last
        # (a Tracer raises there); the last is handed on as it is. Only the argument, a value
        # from it or a comparison of it: what a call makes of it may be a Python value.
        text = f"used as a truth value (`... {'or' if isinstance(node.operator, cst.Or) else 'and'} ...`)"
        left = node.left
        if self._rooted(left) or (isinstance(left, cst.Comparison) and self._mentions(left)):
            self._add(ArgKind.STATIC, text, node)
        elif isinstance(left, cst.Name) and (via := self._via(left)) is not None:
            self._add(ArgKind.STATIC, text, node, via=via)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        # `f"{x:.3f}"` calls format(x, ".3f"), which a Tracer refuses; `f"{x}"` prints one.
        if node.format_spec is None:
            return
        self._static_use(
            node.expression, "formatted with a format spec in an f-string, which needs a concrete value", node
        )

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if key_lookup(node):
            return
        if (keyed := hashing_membership(node, self._dicts())) is not None and self._hashed_key(*keyed, node):
            return
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        if not any(self._rooted(o) for o in operands):
            if any(is_string_like(o) for o in operands) and (via := self._via(node)) is not None:
                self._add(ArgKind.STATIC, "compared with a string", node, via=via)
            return
        if (enum := next(filter(None, map(self._enum_of_member, operands)), None)) is not None:
            self._add(ArgKind.STATIC, f"compared with a member of the enum `{enum}`", node)
            return
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in node.comparisons):
            return  # `x is None` says nothing: optional arrays are common
        if any(is_string_like(o) for o in operands):
            self._add(ArgKind.STATIC, "compared with a string", node)
        else:
            self._add(ArgKind.ARRAY, "compared element-wise", node, weight=WEAK)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if (keyed := hashing_subscript(node, self._dicts())) is not None:
            self._hashed_key(*keyed, node)
            return
        indexes = [i for i in subscript_indexes(node) if self._rooted(i) or self._via(i) is not None]
        if not indexes:
            return
        if (found := self._sequence(node.value)) is not None:
            for index in indexes:  # `_SCALES[level]`, `_TABLE[k]` of host NumPy; a JAX array's `x[i]` is not
                self._static_use(index, indexed_text(*found), node)
        elif (unknown := self._unknown_container(node.value)) is not None:
            for index in indexes:  # `self.table[level]`, `_TABLE[k]` with `_TABLE = load()`
                self._doubtful_use(index, maybe_indexed_text(unknown), node)

    def _hashed_key(self, key: cst.BaseExpression, text: str, node: cst.CSTNode) -> bool:
        """The argument, or a value from it, used as a key of a dict: hashed, so static."""
        return self._static_use(key, text, node)

    def _enum_of_member(self, expr: cst.BaseExpression) -> str | None:
        """``Mode`` for ``Mode.FAST``, a member of an enum of the module (a Tracer is never one,
        and JAX cannot compare one with it)."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in self.ctx.enums:
            return expr.value.value
        return None

    def visit_Slice(self, node: cst.Slice) -> None:
        for bound in (node.lower, node.upper, node.step):
            if bound is None:
                continue
            self._static_use(bound, "used as a slice bound", node)  # `x[i:n]` with a Tracer `n` raises

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ARRAY_ATTRIBUTES and self._rooted(node.value):
            # `.shape`, `.dtype`: what a `jax.ShapeDtypeStruct` or a device mesh has too, which moved fail
            weight = WEAK if node.attr.value in METADATA_ATTRIBUTES else STRONG
            self._add(ArgKind.ARRAY, f"has its `.{node.attr.value}` read", node, weight=weight)
