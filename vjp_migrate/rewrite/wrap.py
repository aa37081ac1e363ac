"""Rewrite, step 5: a line the rewrite made too long, wrapped as the file wraps its code.

A line the change makes longer than the project's limit (``RewritePlan.line_length``; without
one, 88 as black and ruff, unless the file has longer lines: its author keeps to no 88 then, and
only a line longer than all of them counts), when it was not already, has the bracket the change
grew split the way black and ruff split it: the items under a hanging indent, then the closing
bracket on a line of its own at the line's indent. A tuple or list gets one item per line and a
trailing comma; a def's parameters stay on one line of their own when they fit there (else one
per line too). The hanging indent is the one the file already uses under an opening bracket
(its own indent when none is found). Nothing else is re-wrapped.

Measuring a line takes the code of its new nodes, so ``apply_plans`` first applies the plans
without measuring (``Lines.measure`` False notes the lines that may grow too long), reads their
growth from the edits that splice the new module's code, and applies the plans again, measuring,
only when one of them is too long.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from functools import cached_property

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.source import physical_lines

Literal = cst.Tuple | cst.List
_OPENS_AT_END = re.compile(r"[([{]\s*$")
_INDENT = re.compile(r"[ \t]*")
DEFAULT_LIMIT = 88


def _break(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break, then ``indent`` (the whole indent of the next line)."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=[], indent=False, last_line=cst.SimpleWhitespace(indent)
    )


class Lines:
    """The module's lines, read to tell whether a change made one too long."""

    def __init__(self, index: walk.Index, module: cst.Module, configured: int | None, measure: bool = True) -> None:
        self.index = index
        self.module = module
        self.configured = configured
        self.measure = measure
        # Without measuring: the lines that may have grown too long, each as its length and the
        # ``(original, new)`` nodes that change in it, to be read once the new module's code is
        # spliced (``overflowed``).
        self.grown: list[tuple[int, list[tuple[cst.CSTNode | None, cst.CSTNode | None]]]] = []
        self._lines: list[str] | None = None
        self._unit: str | None = None

    @cached_property
    def limit(self) -> int:
        """The length a new line may reach: the configured one, else 88 or the file's longest line."""
        if self.configured is not None:
            return self.configured
        return max(DEFAULT_LIMIT, *map(len, self.lines()))

    @property
    def kept_to(self) -> int:
        """The length an old line had to keep to (one already longer only grows: not wrapped)."""
        return DEFAULT_LIMIT if self.configured is None else self.configured

    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = [line.rstrip("\r\n") for line in physical_lines(self.index.text(self.module) or "")]
        return self._lines

    def overflow(self, changes: Sequence[tuple[cst.CSTNode | None, cst.CSTNode | None]]) -> str | None:
        """The indent of the line holding the ``(original, new)`` nodes when the new ones make
        it longer than the limit and it was not; None otherwise (also when a node spans lines,
        or the nodes are on different lines). Without measuring, always None: a line that may
        have grown too long is noted in ``grown`` instead."""
        if all(new is old for old, new in changes):
            return None  # the rebuild kept these nodes: the line is as long as it was
        line = None
        growth = 0
        for old, new in changes:
            old_code = "" if old is None else self.index.text(old)
            if old_code is None or _spans_lines(old_code):
                return None
            if self.measure:
                new_code = old_code if new is old else "" if new is None else self.module.code_for_node(new)
                if _spans_lines(new_code):
                    return None
                growth += len(new_code) - len(old_code)
            if old is not None:
                at = self.index.span(old)[0]
                if line not in (None, at):
                    return None
                line = at
        if line is None:
            return None
        text = self.lines()[line - 1]
        if len(text) > self.kept_to:
            return None
        if not self.measure:
            self.grown.append((len(text), [(old, new) for old, new in changes if new is not old]))
            return None
        if len(text) + growth <= self.limit:
            return None
        found = _INDENT.match(text)
        return found.group() if found else ""

    def overflowed(self, new: cst.Module) -> bool:
        """Whether a line noted in ``grown`` is too long in ``new`` (the module made without
        measuring), as ``overflow`` would have found: each node's growth read from the edits
        that splice ``new``'s code (walk.Index.code, kept for the caller), else from the new
        node's code. Measuring then makes the lines that are too long."""
        if not self.grown:
            return False
        self.index.code(new)
        for length, changes in self.grown:
            growth: int | None = 0
            for old, node in changes:
                if old is None:  # a node that was not there: measuring tells
                    return True
                grew = self.index.growth(old)
                if grew is None:
                    grew = self._growth(old, node)
                if grew is None or growth is None:
                    growth = None
                else:
                    growth += grew
            if growth is not None and length + growth > self.limit:
                return True
        return False

    def _growth(self, old: cst.CSTNode, new: cst.CSTNode | None) -> int | None:
        """How much longer ``new``'s code is than ``old``'s; None when it spans lines."""
        new_code = "" if new is None else self.module.code_for_node(new)
        return None if _spans_lines(new_code) else len(new_code) - len(self.index.text(old) or "")

    def too_long(self, old: cst.CSTNode, length: int) -> bool:
        """Whether a new line ``length`` wide that takes the place of ``old``'s line (a lambda
        becoming a def) is too long, when that line was not."""
        code = self.index.text(old)
        if code is None or _spans_lines(code):
            return False
        text = self.lines()[self.index.span(old)[0] - 1]
        return len(text) <= self.kept_to and length > self.limit

    def indent_of(self, node: cst.CSTNode) -> str:
        """The indent of the line ``node`` starts on."""
        return _indent(self.lines()[self.index.span(node)[0] - 1])

    def whole_line(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is all its line holds but a comma after it (and a comment)."""
        code = self.index.text(node)
        if code is None or _spans_lines(code):
            return False
        line = self.lines()[self.index.span(node)[0] - 1].strip()
        return line.split("  #")[0].rstrip().removesuffix(",").rstrip() == code.strip()

    def alone(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` starts its line (after the indent)."""
        code = self.index.text(node)
        if code is None:
            return False
        line = self.lines()[self.index.span(node)[0] - 1]
        return line.lstrip().startswith(code.strip().split("\n")[0])

    def unit(self) -> str:
        """The indent the file puts under a line ending with an opening bracket (the most common
        one), else its own indent."""
        if self._unit is None:
            lines = self.lines()
            steps: Counter[str] = Counter()
            for line, after in itertools.pairwise(lines):
                if not _OPENS_AT_END.search(line) or not after.strip():
                    continue
                indent = _indent(line)
                deeper = _indent(after)
                if deeper.startswith(indent) and len(deeper) > len(indent):
                    steps[deeper[len(indent) :]] += 1
            self._unit = steps.most_common(1)[0][0] if steps else self.module.default_indent
        return self._unit


def _indent(line: str) -> str:
    found = _INDENT.match(line)
    return found.group() if found else ""


def _spans_lines(code: str) -> bool:
    return "\n" in code or "\r" in code


def split_end(node: cst.BaseExpression, indent: str, unit: str) -> cst.BaseExpression | None:
    """``node`` with the literal that ends it one item per line (black's split at the last
    opening bracket): a parenthesized tuple or a list itself, the last item of a bare tuple when
    that is one (`out, (a, b)`), else the bare tuple, which gets parentheses; None for other
    expressions."""
    if isinstance(node, cst.List) or (isinstance(node, cst.Tuple) and node.lpar):
        return one_per_line(node, indent, unit) if node.elements else None
    if not isinstance(node, cst.Tuple) or not node.elements:
        return None
    last = node.elements[-1]
    if isinstance(last, cst.Element) and not isinstance(last.comma, cst.Comma):
        inner = last.value
        if isinstance(inner, cst.List) or (isinstance(inner, cst.Tuple) and inner.lpar):
            split = split_end(inner, indent, unit)
            if split is not None:
                return node.with_changes(elements=[*node.elements[:-1], last.with_changes(value=split)])
    return one_per_line(node, indent, unit)


def split_sum(node: cst.BinaryOperation, indent: str, unit: str, before: int, limit: int) -> cst.BaseExpression | None:
    """A sum of tuples split as black and ruff split it (``before``: the characters in front of
    it on its line). Two terms: the tuple literal ending it one item per line, when what comes
    before its bracket fits (`rest + (\n    a,\n    None,\n)`), or the literal starting it when
    a name ends it (`(\n    None,\n    a,\n) + rest`). More terms: the sum parenthesized, on a
    line of its own when it fits there, else a term per line after its `+` when each fits.
    None otherwise (black would split a bracket the change did not grow)."""
    terms = _terms(node)
    if terms is None:
        return None
    empty = cst.Module([])
    codes = [empty.code_for_node(term) for term in terms]
    if any(_spans_lines(code) for code in codes):
        return None
    if len(terms) == 2:
        left, right = terms
        if _filled(right) and before + len(codes[0]) + len(" + (") <= limit:
            assert isinstance(right, cst.Tuple)
            return node.with_changes(right=one_per_line(right, indent, unit))
        if _filled(left) and isinstance(right, (cst.Name, cst.Attribute)):
            assert isinstance(left, cst.Tuple)
            return node.with_changes(left=one_per_line(left, indent, unit))
        return None
    inner = indent + unit
    parentheses = {
        "lpar": [cst.LeftParen(whitespace_after=_break(inner))],
        "rpar": [cst.RightParen(whitespace_before=_break(indent))],
    }
    if len(inner) + len(empty.code_for_node(node)) <= limit:
        return node.with_changes(**parentheses)
    if any(len(inner) + (2 if k else 0) + len(code) > limit for k, code in enumerate(codes)):
        return None
    return _broken(node, inner).with_changes(**parentheses)


def _is_sum(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and not node.lpar


def _terms(node: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The terms of `a + b + c` (None when one is a difference: black splits there too)."""
    if not _is_sum(node):
        return None
    assert isinstance(node, cst.BinaryOperation)
    left = _terms(node.left) if _is_sum(node.left) else [node.left]
    terms = None if left is None else [*left, node.right]
    if terms is None or any(
        isinstance(t, cst.BinaryOperation) and isinstance(t.operator, cst.Subtract) and not t.lpar for t in terms
    ):
        return None
    return terms


def _broken(node: cst.BinaryOperation, inner: str) -> cst.BinaryOperation:
    """The sum with a line break before each `+`."""
    left = _broken(node.left, inner) if _is_sum(node.left) else node.left  # type: ignore[arg-type]
    operator = node.operator.with_changes(whitespace_before=_break(inner), whitespace_after=cst.SimpleWhitespace(" "))
    return node.with_changes(left=left, operator=operator)


def _filled(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Tuple) and bool(node.lpar) and bool(node.elements)


def one_per_line(literal: Literal, indent: str, unit: str) -> Literal:
    """A tuple or list written one item per line under ``indent + unit``, with a trailing
    comma, its closing bracket at ``indent`` (a bare tuple gets its parentheses)."""
    inner = _break(indent + unit)
    elements = [
        e.with_changes(comma=cst.Comma(whitespace_before=_before(e.comma), whitespace_after=inner))
        for e in literal.elements[:-1]
    ]
    last = literal.elements[-1]
    elements.append(last.with_changes(comma=cst.Comma(whitespace_before=_before(last.comma))))
    close = _break(indent)
    if isinstance(literal, cst.List):
        return literal.with_changes(
            elements=elements,
            lbracket=literal.lbracket.with_changes(whitespace_after=inner),
            rbracket=literal.rbracket.with_changes(whitespace_before=close),
        )
    lpar = literal.lpar or [cst.LeftParen()]
    rpar = literal.rpar or [cst.RightParen()]
    return literal.with_changes(
        elements=elements,
        lpar=[lpar[0].with_changes(whitespace_after=inner), *lpar[1:]],
        rpar=[*rpar[:-1], rpar[-1].with_changes(whitespace_before=close)],
    )


def _before(comma: cst.Comma | cst.MaybeSentinel) -> cst.BaseParenthesizableWhitespace:
    return comma.whitespace_before if isinstance(comma, cst.Comma) else cst.SimpleWhitespace("")


def split_subscript(node: cst.BaseExpression, indent: str, unit: str, fits: int) -> cst.BaseExpression | None:
    """A subscript (`tuple[a, b]`) with its items on a line of their own under ``indent + unit``
    when they fit in ``fits`` characters there, else one per line with a trailing comma; None for
    anything else."""
    if not isinstance(node, cst.Subscript) or not node.slice:
        return None
    inner, close = _break(indent + unit), _break(indent)
    items = [item.with_changes(comma=cst.MaybeSentinel.DEFAULT) for item in node.slice]
    one_line = ", ".join(cst.Module([]).code_for_node(item.slice) for item in items)
    if len(indent + unit + one_line) <= fits:
        spaced = [item.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for item in items[:-1]]
        return node.with_changes(
            slice=[*spaced, items[-1]],
            lbracket=node.lbracket.with_changes(whitespace_after=inner),
            rbracket=node.rbracket.with_changes(whitespace_before=close),
        )
    broken = [item.with_changes(comma=cst.Comma(whitespace_after=inner)) for item in items[:-1]]
    broken.append(items[-1].with_changes(comma=cst.Comma(whitespace_after=close)))
    broken = [_fitted_union(item, indent + unit, fits) for item in broken]
    return node.with_changes(slice=broken, lbracket=node.lbracket.with_changes(whitespace_after=inner))


def _fitted_union(item: cst.SubscriptElement, inner: str, fits: int) -> cst.SubscriptElement:
    """An item on a line of its own (under ``inner``) that is a union too long for it, with a
    line break before each `|` (`A\n| B\n| None,`, as black and ruff break it)."""
    index = item.slice
    if not isinstance(index, cst.Index) or not _is_union(index.value):
        return item
    if len(inner) + len(cst.Module([]).code_for_node(index.value)) + 1 <= fits:
        return item
    return item.with_changes(slice=index.with_changes(value=_broken_union(index.value, inner)))


def _is_union(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr) and not node.lpar


def _broken_union(node: cst.BaseExpression, inner: str) -> cst.BaseExpression:
    """The union with a line break before each `|`."""
    if not _is_union(node):
        return node
    assert isinstance(node, cst.BinaryOperation)
    operator = node.operator.with_changes(whitespace_before=_break(inner), whitespace_after=cst.SimpleWhitespace(" "))
    return node.with_changes(left=_broken_union(node.left, inner), operator=operator)


def split_params(
    params: cst.Parameters, indent: str, unit: str, fits: int
) -> tuple[cst.Parameters, cst.BaseParenthesizableWhitespace] | None:
    """A def's parameters on a line of their own under ``indent + unit`` when they fit in
    ``fits`` characters there, else one per line with a trailing comma; and the whitespace after
    the opening parenthesis. None for parameters other than plain positional ones (`*`, `/`)."""
    plain = params.params
    if not plain or params.posonly_params or params.kwonly_params or params.star_kwarg is not None:
        return None
    if not isinstance(params.star_arg, cst.MaybeSentinel) or not isinstance(params.posonly_ind, cst.MaybeSentinel):
        return None
    inner, close = _break(indent + unit), _break(indent)
    flat = [p.with_changes(whitespace_after_param=cst.SimpleWhitespace("")) for p in plain]
    one_line = ", ".join(cst.Module([]).code_for_node(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in flat)
    if len(indent + unit + one_line) <= fits:
        spaced = [p.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for p in flat[:-1]]
        last = flat[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_param=close)
        return params.with_changes(params=[*spaced, last]), inner
    broken = [p.with_changes(comma=cst.Comma(whitespace_after=inner)) for p in flat[:-1]]
    broken.append(flat[-1].with_changes(comma=cst.Comma(whitespace_after=close)))
    return params.with_changes(params=broken), inner
