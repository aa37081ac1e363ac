"""Rewrite, step 1: comma-separated items (parameters, arguments, tuple and list elements, import
names) with one taken out or new ones put in, commas, comments and layout kept in the original's style."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import libcst as cst

from vjp_migrate.model import RewritePlan

SPACE = cst.SimpleWhitespace(" ")


def plain_comma() -> cst.Comma:
    return cst.Comma(whitespace_after=SPACE)


def tuple_of(names: Sequence[str]) -> cst.BaseExpression:
    if len(names) == 1:
        return cst.Name(names[0])
    return cst.parse_expression("(" + ", ".join(names) + ")")


def positions_expr(original: cst.BaseExpression, kept: tuple[int, ...], as_list: bool) -> cst.BaseExpression:
    """The positions ``kept``, in the spelling of ``original``. A tuple, list or set literal loses
    the elements that go (its comments stay, section 1); anything else is written anew."""
    if isinstance(original, (cst.Tuple, cst.List, cst.Set)):
        values = [e.value.value if isinstance(e.value, cst.Integer) else None for e in original.elements]
        numbers = [int(v, 0) for v in values if v is not None]
        if len(numbers) == len(values) and set(kept) <= set(numbers):
            return literal_without(original, lambda e: int(_text(e), 0) not in kept)
    if isinstance(original, cst.Integer):
        return cst.Integer(str(kept[0]))
    text = ", ".join(map(str, kept))
    if as_list:
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(kept) == 1 else f"({text})")


def names_expr(original: cst.BaseExpression, names: list[str]) -> cst.BaseExpression:
    strings = (
        [original]
        if isinstance(original, cst.SimpleString)
        else [e.value for e in getattr(original, "elements", ()) if isinstance(e.value, cst.SimpleString)]
    )
    if isinstance(original, (cst.Tuple, cst.List)) and len(strings) == len(original.elements):
        listed = {s.evaluated_value for s in strings if isinstance(s, cst.SimpleString)}
        if set(names) <= listed:
            return literal_without(original, lambda e: _text(e) not in names)
    quote = strings[0].quote if strings else '"'
    text = ", ".join(f"{quote}{n}{quote}" for n in names)
    if isinstance(original, cst.SimpleString):
        return cst.parse_expression(text if len(names) == 1 else f"({text})")
    if isinstance(original, cst.List):
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(names) == 1 else f"({text})")


def _text(element: cst.BaseElement) -> str:
    """The value of an int or string literal element."""
    value = element.value
    if isinstance(value, cst.SimpleString):
        return str(value.evaluated_value)
    assert isinstance(value, cst.Integer)
    return value.value


def literal_without(
    literal: cst.Tuple | cst.List | cst.Set, gone: Callable[[cst.Element], bool]
) -> cst.Tuple | cst.List | cst.Set:
    """A tuple/list/set literal without the elements that are ``gone``, in the author's order and
    layout; a tuple left with one element gets its trailing comma."""
    open_ws = literal.lpar[0].whitespace_after if isinstance(literal, cst.Tuple) and literal.lpar else None
    if isinstance(literal, cst.List):
        open_ws = literal.lbracket.whitespace_after
    elif isinstance(literal, cst.Set):
        open_ws = literal.lbrace.whitespace_after
    elements, lead = without([e for e in literal.elements if isinstance(e, cst.Element)], gone, open_ws)
    if isinstance(literal, cst.Tuple) and len(elements) == 1 and not isinstance(elements[0].comma, cst.Comma):
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    if isinstance(literal, cst.List):
        return literal.with_changes(elements=elements, lbracket=literal.lbracket.with_changes(whitespace_after=lead))
    if isinstance(literal, cst.Set):
        return literal.with_changes(elements=elements, lbrace=literal.lbrace.with_changes(whitespace_after=lead))
    if literal.lpar and lead is not None:
        lpar = [literal.lpar[0].with_changes(whitespace_after=lead), *literal.lpar[1:]]
        return literal.with_changes(elements=elements, lpar=lpar)
    return literal.with_changes(elements=elements)


Item = TypeVar("Item", cst.Param, cst.Arg, cst.Element, cst.ImportAlias)
Whitespace = cst.BaseParenthesizableWhitespace
Break = cst.ParenthesizedWhitespace
Literal = cst.Tuple | cst.List


def without(
    items: Sequence[Item], gone: Callable[[Item], bool], lead: Whitespace | None
) -> tuple[list[Item], Whitespace | None]:
    """``items`` without those that are ``gone``, keeping every comment about other code; and
    the new whitespace after the opening bracket (``lead``, the old one; None when there is no
    bracket).

    A removed item's comma took the line break after it, with the comment on its own line and
    the comment lines below it, above the next item; these join the whitespace before the
    removed item, so each comment line stays in front of the item it stood before. The comment
    on the removed item's own line describes it and goes with it, also on the opening bracket's
    line (`def f_bwd(w,  # weights`), where the first item kept then takes the removed ones'
    place when no comment line stands before it.
    """
    kept: list[Item] = []
    before = lead  # the whitespace leading to the next item, with what removed items left
    changed = False
    for item in items:
        if not gone(item):
            if changed and kept:
                kept[-1] = kept[-1].with_changes(comma=_comma_with(kept[-1].comma, before))
            elif changed:
                lead = lead if _on_bracket_line(lead) and not _has_comment(before) else _no_blank_start(before)
            kept.append(item)
            before = item.comma.whitespace_after if isinstance(item.comma, cst.Comma) else None
            changed = False
            continue
        after = item.comma.whitespace_after if isinstance(item.comma, cst.Comma) else None
        if not kept and before is lead and _on_bracket_line(lead) and isinstance(after, cst.ParenthesizedWhitespace):
            after = after.with_changes(first_line=cst.TrailingWhitespace())  # the first line's comment was about it
        before = _joined(before, after)
        changed = True
    if changed and kept:  # the last items went: the last kept one takes the last one's comma
        last = items[-1].comma
        if isinstance(last, cst.Comma):
            kept[-1] = kept[-1].with_changes(comma=last.with_changes(whitespace_after=before))
        elif _has_comment(before):
            kept[-1] = kept[-1].with_changes(comma=_comma_with(kept[-1].comma, before))
        else:
            kept[-1] = kept[-1].with_changes(comma=last)
            if isinstance(kept[-1], cst.Arg) and isinstance(items[-1], cst.Arg):
                kept[-1] = kept[-1].with_changes(whitespace_after_arg=items[-1].whitespace_after_arg)
    return kept, lead


def _comma_with(comma: cst.Comma | cst.MaybeSentinel, whitespace: Whitespace | None) -> cst.Comma | cst.MaybeSentinel:
    if whitespace is None:
        return comma
    if isinstance(comma, cst.Comma):
        return comma.with_changes(whitespace_after=whitespace)
    return cst.Comma(whitespace_after=whitespace)


def _no_blank_start(whitespace: Whitespace | None) -> Whitespace | None:
    """The whitespace after an opening bracket without blank lines right below it (they set the
    removed first items apart from the rest)."""
    if not isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace
    lines = list(whitespace.empty_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return whitespace.with_changes(empty_lines=lines)


def _on_bracket_line(lead: Whitespace | None) -> bool:
    """Whether the first item stands on the opening bracket's line (``lead`` breaks no line)."""
    return lead is not None and not isinstance(lead, cst.ParenthesizedWhitespace)


def _has_comment(whitespace: Whitespace | None) -> bool:
    return isinstance(whitespace, cst.ParenthesizedWhitespace) and (
        whitespace.first_line.comment is not None or any(line.comment for line in whitespace.empty_lines)
    )


def _joined(before: Whitespace | None, after: Whitespace | None) -> Whitespace | None:
    """The whitespace in place of ``before`` + removed item + ``after`` (see ``without``)."""
    if not isinstance(after, cst.ParenthesizedWhitespace):
        return before
    if not isinstance(before, cst.ParenthesizedWhitespace):  # the item shared a line with the one before
        return after
    lines = [*before.empty_lines, *after.empty_lines]  # the comment on the item's own line is about it
    return after.with_changes(first_line=before.first_line, empty_lines=lines)


def names_one_of(comment: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", comment) for name in names)


def fix_trailing(args: list[cst.Arg], template: Sequence[cst.Arg]) -> list[cst.Arg]:
    """After removing arguments, the last one takes the comma the original last one had."""
    if args and template:
        args[-1] = args[-1].with_changes(comma=template[-1].comma)
    return args


def new_args(plan: RewritePlan, originals: Sequence[cst.Arg], args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """The arguments of custom_vjp/partial after the change (matched on the originals); the
    first one (the primal or `jax.custom_vjp`) always stays."""
    site = plan.site
    kept_names = [site.params[p] for p in plan.kept]
    result: list[cst.Arg] = []
    gone: set[int] = set()
    for original, arg in zip(originals, args, strict=True):
        if original is site.nondiff.argnums_arg:
            listed = listed_positions(plan)
            if not listed and original.keyword is None and _names_left_by_position(plan):
                arg = arg.with_changes(value=cst.Tuple([]))  # `custom_vjp(f, (), ("n",))` keeps its place
            elif not listed:
                gone.add(id(arg))
            elif own_constant(plan) is None:  # else the constant takes them (Apply.leave_Assign)
                arg = arg.with_changes(value=positions_expr(arg.value, listed, site.nondiff.as_list))
        elif original is site.nondiff.argnames_arg:
            names = [n for n in kept_names if site.params.index(n) in named_positions(plan)]
            if not names:
                gone.add(id(arg))
            else:
                arg = arg.with_changes(value=names_expr(arg.value, names))
        result.append(arg)
    return without(result, lambda a: id(a) in gone, None)[0]


def _names_left_by_position(plan: RewritePlan) -> bool:
    """nondiff_argnames is given by position, after nondiff_argnums, and keeps a name."""
    arg = plan.site.nondiff.argnames_arg
    named = named_positions(plan)
    return arg is not None and arg.keyword is None and any(p in named for p in plan.kept)


def own_constant(plan: RewritePlan) -> cst.Assign | None:
    """The module constant giving nondiff_argnums that only this site reads: the fix changes it
    (or removes it with the keyword, when no position is left) instead of the keyword."""
    constant = plan.site.nondiff.constant
    return constant.assign if constant is not None and not constant.shared else None


def listed_positions(plan: RewritePlan) -> tuple[int, ...]:
    """The positions nondiff_argnums lists after the change."""
    named = named_positions(plan)
    return tuple(p for p in plan.kept if p not in named)


def named_positions(plan: RewritePlan) -> set[int]:
    """Positions that the module lists by name in nondiff_argnames (and not by number)."""
    site = plan.site
    arg = site.nondiff.argnames_arg
    if arg is None:
        return set()
    value = arg.value
    elements = [value] if isinstance(value, cst.SimpleString) else [e.value for e in getattr(value, "elements", [])]
    names = {e.evaluated_value for e in elements if isinstance(e, cst.SimpleString)}
    return {site.params.index(n) for n in names if n in site.params}


def uncommented(comma: cst.Comma) -> cst.Comma:
    """A comma like ``comma`` for a new item: its line break, not the comment on its line."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        first = after.first_line.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
        return comma.with_changes(whitespace_after=after.with_changes(first_line=first, empty_lines=[]))
    return comma


def rebuilt_elements(
    original: Sequence[cst.BaseElement], items: Sequence[cst.BaseElement | str], wraps: bool = False
) -> list[cst.BaseElement]:
    """Elements for a tuple/list that gains names, with commas in the original's style.

    New items take the separator the original uses between elements (a plain `, ` when its
    items ``wraps``: they join the line of the item next to them); the last item keeps the
    original's trailing comma only when the original had several elements (``(g,)`` becomes
    ``(None, g)``, a multi-line tuple keeps its trailing comma).
    """
    separators = [e.comma for e in original[:-1] if isinstance(e.comma, cst.Comma)]
    separator = uncommented(separators[0]) if separators and not wraps else plain_comma()
    trailing = original[-1].comma if len(original) > 1 else cst.MaybeSentinel.DEFAULT
    result: list[cst.BaseElement] = []
    for index, item in enumerate(items):
        element = cst.Element(cst.Name(item)) if isinstance(item, str) else item
        if index == len(items) - 1:
            result.append(element.with_changes(comma=trailing))
        elif isinstance(item, str) or item is original[-1]:
            result.append(element.with_changes(comma=separator))
        else:
            result.append(element)
    return result


def prepend(node: Literal, names: Sequence[str], wraps: bool) -> Literal:
    return with_items(node, [*names, *node.elements], wraps)


def with_items(node: Literal, items: Sequence[cst.BaseElement | str], wraps: bool) -> Literal:
    """``node`` holding ``items`` (its own elements and new names), in the original's layout
    (``wraps``: see ``Apply._wraps``)."""
    brackets = one_per_line(node)
    if brackets is None:
        return _unpadded(node).with_changes(elements=rebuilt_elements(node.elements, items, wraps))
    opening, closing = brackets
    old = list(node.elements)
    # The comment lines above each element, and the rest of each element's own line.
    above = {id(old[0]): opening.empty_lines}
    own_line = {id(old[-1]): closing.first_line}
    for element, following in itertools.pairwise(old):
        assert isinstance(element.comma, cst.Comma) and isinstance(element.comma.whitespace_after, Break)
        above[id(following)] = element.comma.whitespace_after.empty_lines
        own_line[id(element)] = element.comma.whitespace_after.first_line
    elements = [cst.Element(cst.Name(item)) if isinstance(item, str) else item for item in items]
    laid: list[cst.BaseElement] = []
    for element, following in itertools.pairwise(elements):
        comma = element.comma if isinstance(element.comma, cst.Comma) else cst.Comma()
        line_break = opening.with_changes(
            first_line=own_line.get(id(element), cst.TrailingWhitespace()), empty_lines=above.get(id(following), [])
        )
        laid.append(element.with_changes(comma=comma.with_changes(whitespace_after=line_break)))
    laid.append(elements[-1].with_changes(comma=old[-1].comma))
    opening = opening.with_changes(empty_lines=above.get(id(elements[0]), []))
    closing = closing.with_changes(first_line=own_line.get(id(elements[-1]), cst.TrailingWhitespace()))
    if isinstance(node, cst.List):
        return node.with_changes(
            elements=laid,
            lbracket=node.lbracket.with_changes(whitespace_after=opening),
            rbracket=node.rbracket.with_changes(whitespace_before=closing),
        )
    return node.with_changes(
        elements=laid,
        lpar=[node.lpar[0].with_changes(whitespace_after=opening)],
        rpar=[node.rpar[0].with_changes(whitespace_before=closing)],
    )


def _unpadded(node: Literal) -> Literal:
    """``node`` without the space a one-item literal kept between its trailing comma and the
    closing bracket (`(g, )`), which loses that comma: `(g, None)`, not `(g, None )`. A literal
    padded at both ends (`( g, )`) keeps its style."""
    if len(node.elements) != 1 or not isinstance(node.elements[0].comma, cst.Comma):
        return node
    if isinstance(node, cst.List):
        opening, closing = node.lbracket.whitespace_after, node.rbracket.whitespace_before
    elif node.lpar and node.rpar:
        opening, closing = node.lpar[0].whitespace_after, node.rpar[-1].whitespace_before
    else:
        return node
    padded = isinstance(opening, cst.SimpleWhitespace) and opening.value
    if not isinstance(closing, cst.SimpleWhitespace) or not closing.value or padded:
        return node
    if isinstance(node, cst.List):
        return node.with_changes(rbracket=node.rbracket.with_changes(whitespace_before=cst.SimpleWhitespace("")))
    rpar = [*node.rpar[:-1], node.rpar[-1].with_changes(whitespace_before=cst.SimpleWhitespace(""))]
    return node.with_changes(rpar=rpar)


def one_per_line(node: Literal) -> tuple[Break, Break] | None:
    """The line breaks after the opening and before the closing bracket of a literal written one
    element per line (black's "magic trailing comma" layout), or None for any other layout."""
    if type(node) is cst.List:  # `type() is`: see imports.node_types
        opening, closing = node.lbracket.whitespace_after, node.rbracket.whitespace_before
    elif len(node.lpar) == 1 and node.elements:
        opening, closing = node.lpar[0].whitespace_after, node.rpar[0].whitespace_before
    else:
        return None
    separators = [e.comma.whitespace_after if type(e.comma) is cst.Comma else None for e in node.elements[:-1]]
    if type(opening) is Break and type(closing) is Break and all(type(s) is Break for s in separators):
        return opening, closing
    return None
