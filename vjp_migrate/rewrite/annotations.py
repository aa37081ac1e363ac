"""Rewrite, step 2: the annotations a plan retypes, as nodes (`tuple[X | None, ...]`)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vjp_migrate.model import OrNone, TupleType
from vjp_migrate.rewrite.lists import SPACE, plain_comma, uncommented

Fit = Callable[[cst.Subscript, cst.BaseExpression], cst.BaseExpression]


def new_annotation(
    old: cst.Annotation | None, new: cst.Annotation | TupleType | None, fit: Fit | None = None
) -> cst.Annotation | None:
    """The annotation in place of ``old``: ``new``, or ``old`` with its type updated to ``new``;
    ``fit`` takes each nested tuple type that changes (its old subscript and new code) and gives
    it as it should be written (split when its line grows too long)."""
    if not isinstance(new, TupleType):
        return new
    assert old is not None
    return old.with_changes(annotation=_tuple_type(new, fit))


def _tuple_type(new: TupleType, fit: Fit | None = None) -> cst.BaseExpression:
    items = [_type_item(i, fit) for i in new.items]
    if new.old is None:
        fresh = [cst.SubscriptElement(cst.Index(i.deep_clone()), comma=plain_comma()) for i in items]
        fresh[-1] = fresh[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Subscript(cst.parse_expression(new.spelling), fresh)
    original = list(new.old.slice)
    kept = {id(e.slice.value): e for e in original if isinstance(e.slice, cst.Index)}
    separators = [e.comma for e in original[:-1] if isinstance(e.comma, cst.Comma)]
    separator = uncommented(separators[0]) if separators else plain_comma()
    trailing = original[-1].comma if len(original) > 1 else cst.MaybeSentinel.DEFAULT
    elements: list[cst.SubscriptElement] = []
    for index, item in enumerate(items):
        element = kept.get(id(item)) or cst.SubscriptElement(cst.Index(item.deep_clone()))
        last = index == len(items) - 1
        if last or element is original[-1] or id(item) not in kept:  # a new item, or a new last one
            element = element.with_changes(comma=trailing if last else separator)
        elements.append(element)
    return new.old.with_changes(slice=elements)


def _type_item(item: cst.BaseExpression | TupleType | OrNone | None, fit: Fit | None) -> cst.BaseExpression:
    if isinstance(item, TupleType):
        nested = _tuple_type(item, fit)
        return nested if fit is None or item.old is None else fit(item.old, nested)
    if isinstance(item, OrNone):  # `A | B` needs no parentheses before `| None`
        return cst.BinaryOperation(item.item, cst.BitOr(SPACE, SPACE), cst.Name("None"))
    return cst.Name("None") if item is None else item
