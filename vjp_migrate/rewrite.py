"""Stage 9: module + plans -> new module. The only place that builds CST nodes."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted, small_statements
from vjp_migrate.model import JitEdit, Layout, OrNone, RewritePlan, TupleType
from vjp_migrate.plan.cotangents import cotangent_count, literal_branches, trailing_slots

_SPACE = cst.SimpleWhitespace(" ")
# The first clause of a comment saying fwd saves nothing ("no residual values to save", "nothing
# to save: ..."), which the migration makes false.
_NOTHING_SAVED = re.compile(
    r"(?i)(?P<lead>#\s*)(?P<clause>(?:no|nothing)\b[^:;,.()]*\b(?:residuals?|save|saved)\b[^:;,.()]*)"
)


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=_SPACE)


def _tuple_of(names: Sequence[str]) -> cst.BaseExpression:
    if len(names) == 1:
        return cst.Name(names[0])
    return cst.parse_expression("(" + ", ".join(names) + ")")


def _positions_expr(original: cst.BaseExpression, kept: tuple[int, ...], as_list: bool) -> cst.BaseExpression:
    """The positions ``kept``, in the spelling of ``original``. A tuple or list literal loses the
    elements that go (its comments stay, section 1); anything else is written anew."""
    if isinstance(original, (cst.Tuple, cst.List)):
        values = [e.value.value if isinstance(e.value, cst.Integer) else None for e in original.elements]
        numbers = [int(v, 0) for v in values if v is not None]
        if len(numbers) == len(values) and set(kept) <= set(numbers):
            return _literal_without(original, lambda e: int(_text(e), 0) not in kept)
    if isinstance(original, cst.Integer):
        return cst.Integer(str(kept[0]))
    text = ", ".join(map(str, kept))
    if as_list:
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(kept) == 1 else f"({text})")


def _names_expr(original: cst.BaseExpression, names: list[str]) -> cst.BaseExpression:
    strings = (
        [original]
        if isinstance(original, cst.SimpleString)
        else [e.value for e in getattr(original, "elements", ()) if isinstance(e.value, cst.SimpleString)]
    )
    if isinstance(original, (cst.Tuple, cst.List)) and len(strings) == len(original.elements):
        listed = {s.evaluated_value for s in strings if isinstance(s, cst.SimpleString)}
        if set(names) <= listed:
            return _literal_without(original, lambda e: _text(e) not in names)
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


def _literal_without(literal: cst.Tuple | cst.List, gone: Callable[[cst.Element], bool]) -> cst.Tuple | cst.List:
    """A tuple/list literal without the elements that are ``gone``, in the author's order and
    layout; a tuple left with one element gets its trailing comma."""
    open_ws = literal.lpar[0].whitespace_after if isinstance(literal, cst.Tuple) and literal.lpar else None
    if isinstance(literal, cst.List):
        open_ws = literal.lbracket.whitespace_after
    elements, lead = without([e for e in literal.elements if isinstance(e, cst.Element)], gone, open_ws)
    if isinstance(literal, cst.Tuple) and len(elements) == 1 and not isinstance(elements[0].comma, cst.Comma):
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    if isinstance(literal, cst.List):
        return literal.with_changes(elements=elements, lbracket=literal.lbracket.with_changes(whitespace_after=lead))
    if literal.lpar and lead is not None:
        lpar = [literal.lpar[0].with_changes(whitespace_after=lead), *literal.lpar[1:]]
        return literal.with_changes(elements=elements, lpar=lpar)
    return literal.with_changes(elements=elements)


_Item = TypeVar("_Item", cst.Param, cst.Arg, cst.Element, cst.ImportAlias)
_Whitespace = cst.BaseParenthesizableWhitespace
_Break = cst.ParenthesizedWhitespace
_Literal = cst.Tuple | cst.List


def without(
    items: Sequence[_Item], gone: Callable[[_Item], bool], lead: _Whitespace | None
) -> tuple[list[_Item], _Whitespace | None]:
    """``items`` without those that are ``gone``, keeping every comment about other code; and
    the new whitespace after the opening bracket (``lead``, the old one; None when there is no
    bracket).

    A removed item's comma took the line break after it, with the comment on its own line and
    the comment lines below it, above the next item; these join the whitespace before the
    removed item, so each comment line stays in front of the item it stood before. The comment
    on the removed item's own line describes it and goes with it.
    """
    kept: list[_Item] = []
    before = lead  # the whitespace leading to the next item, with what removed items left
    changed = False
    for item in items:
        if not gone(item):
            if changed and kept:
                kept[-1] = kept[-1].with_changes(comma=_comma_with(kept[-1].comma, before))
            elif changed:
                lead = _no_blank_start(before)
            kept.append(item)
            before = item.comma.whitespace_after if isinstance(item.comma, cst.Comma) else None
            changed = False
            continue
        after = item.comma.whitespace_after if isinstance(item.comma, cst.Comma) else None
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


def _comma_with(comma: cst.Comma | cst.MaybeSentinel, whitespace: _Whitespace | None) -> cst.Comma | cst.MaybeSentinel:
    if whitespace is None:
        return comma
    if isinstance(comma, cst.Comma):
        return comma.with_changes(whitespace_after=whitespace)
    return cst.Comma(whitespace_after=whitespace)


def _no_blank_start(whitespace: _Whitespace | None) -> _Whitespace | None:
    """The whitespace after an opening bracket without blank lines right below it (they set the
    removed first items apart from the rest)."""
    if not isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace
    lines = list(whitespace.empty_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return whitespace.with_changes(empty_lines=lines)


def _has_comment(whitespace: _Whitespace | None) -> bool:
    return isinstance(whitespace, cst.ParenthesizedWhitespace) and (
        whitespace.first_line.comment is not None or any(line.comment for line in whitespace.empty_lines)
    )


def _joined(before: _Whitespace | None, after: _Whitespace | None) -> _Whitespace | None:
    """The whitespace in place of ``before`` + removed item + ``after`` (see ``without``)."""
    if not isinstance(after, cst.ParenthesizedWhitespace):
        return before
    if not isinstance(before, cst.ParenthesizedWhitespace):  # the item shared a line with the one before
        return after
    lines = [*before.empty_lines, *after.empty_lines]  # the comment on the item's own line is about it
    return after.with_changes(first_line=before.first_line, empty_lines=lines)


def _names_one_of(comment: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", comment) for name in names)


def _fix_trailing(args: list[cst.Arg], template: Sequence[cst.Arg]) -> list[cst.Arg]:
    """After removing arguments, the last one takes the comma the original last one had."""
    if args and template:
        args[-1] = args[-1].with_changes(comma=template[-1].comma)
    return args


def _new_args(plan: RewritePlan, originals: Sequence[cst.Arg], args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """The arguments of custom_vjp/partial after the change (matched on the originals); the
    first one (the primal or `jax.custom_vjp`) always stays."""
    site = plan.site
    kept_names = [site.params[p] for p in plan.kept]
    result: list[cst.Arg] = []
    gone: set[int] = set()
    for original, arg in zip(originals, args, strict=True):
        if original is site.nondiff.argnums_arg:
            listed = [p for p in plan.kept if p not in _named_positions(plan)]
            if not listed:
                gone.add(id(arg))
            else:
                value = _positions_expr(arg.value, tuple(listed), site.nondiff.as_list)
                arg = arg.with_changes(value=value)
        elif original is site.nondiff.argnames_arg:
            names = [n for n in kept_names if site.params.index(n) in _named_positions(plan)]
            if not names:
                gone.add(id(arg))
            else:
                arg = arg.with_changes(value=_names_expr(arg.value, names))
        result.append(arg)
    return without(result, lambda a: id(a) in gone, None)[0]


def _named_positions(plan: RewritePlan) -> set[int]:
    """Positions that the module lists by name in nondiff_argnames (and not by number)."""
    site = plan.site
    arg = site.nondiff.argnames_arg
    if arg is None:
        return set()
    value = arg.value
    elements = [value] if isinstance(value, cst.SimpleString) else [e.value for e in getattr(value, "elements", [])]
    names = {e.evaluated_value for e in elements if isinstance(e, cst.SimpleString)}
    return {site.params.index(n) for n in names if n in site.params}


class _Apply(cst.CSTTransformer):
    # Plans for several users of one shared fwd/bwd agree on it (plan.reconcile_shared), so
    # keying by node applies that change once.
    def __init__(self, plans: Sequence[RewritePlan], module: cst.Module) -> None:
        self.plans = plans
        self.config = module.config_for_parsing
        self.top_level = {id(stmt) for stmt in module.body}
        self.carriers = {id(p.site.carrier): p for p in plans}
        self.fwd_returns = {id(r): p for p in plans for r in p.fwd_returns}
        self.bwd_returns = {id(r): p for p in plans for r in p.bwd_returns}
        self.bwds = {id(p.site.bwd.node): p for p in plans if p.site.bwd and p.site.bwd.node}
        self.unpacks = {id(p.tuple_unpack): p for p in plans if p.tuple_unpack is not None}
        self.fwd_assigns = {id(p.fwd_assign): p for p in plans if p.fwd_assign is not None}
        self.temp_returns = {id(r): p for p in plans for r in p.temp_returns}
        self.cotangent_literals = {id(a): p for p in plans for a in p.cotangent_literals}
        self.temp_values: dict[int, tuple[str, cst.BaseExpression]] = {}  # return -> its stored value
        self.dels = {id(node): names for p in plans for node, names in p.dels}
        self.renames = {id(node): name for p in plans for node, name in p.reused}
        self.jits = {id(e.decorator): e for p in plans for e in p.jit_edits}
        self.fwd_lambdas = {id(p.site.fwd.lambda_node): p for p in plans if p.site.fwd and p.site.fwd.lambda_node}
        self.bwd_lambdas = {id(p.site.bwd.lambda_node): p for p in plans if p.site.bwd and p.site.bwd.lambda_node}
        self.retyped = {id(node): annotation for p in plans for node, annotation in p.retyped}
        self.new_defs: dict[int, list[cst.FunctionDef]] = {}  # id(defvjp call) -> defs to put before it
        self.removed_names: set[str] = set()
        self.index = walk.index_of(module)

    def _wraps(self, original: cst.BaseExpression | None) -> bool:
        """Whether ``original`` is a literal of the module whose items fill its lines and wrap
        (`(a, b,\n    c)`, `(x,\n    y)` under a hanging indent), not one item per line (items
        under the first one, or black's layout): a new item then joins its neighbour's line."""
        if not isinstance(original, (cst.Tuple, cst.List)) or not original.elements or _one_per_line(original):
            return False
        if not self.index.covers(original):
            return False
        elements = original.elements
        breaks = [isinstance(e.comma, cst.Comma) and isinstance(e.comma.whitespace_after, _Break) for e in elements]
        if not any(breaks[:-1]):
            return False
        first = self.index.span(elements[0])[1]
        return not all(breaks[:-1]) or any(self.index.span(e)[1] != first for e in elements[1:])

    # --- the primal's decorator or call --------------------------------------------------------

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        edit = self.jits.get(id(original_node))
        if edit is not None:
            return self._jit_decorator(edit, updated_node)
        plan = self.carriers.get(id(original_node))
        if plan is None:
            return updated_node
        call, before = updated_node.decorator, original_node.decorator
        assert isinstance(call, cst.Call) and isinstance(before, cst.Call)
        self._forget_nondiff(plan)
        args = _new_args(plan, before.args, call.args)
        if len(args) > 1:
            return updated_node.with_changes(decorator=call.with_changes(args=args))
        self._forget(call.func)
        above = _comment_lines(call.with_changes(args=args))  # `@partial(\n    # ...\n    jax.custom_vjp, ...)`
        return updated_node.with_changes(
            decorator=call.args[0].value, leading_lines=[*updated_node.leading_lines, *above]
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.carriers.get(id(original_node))
        if plan is None:
            return updated_node
        self._forget_nondiff(plan)
        if isinstance(updated_node.func, cst.Call):  # partial(jax.custom_vjp, ...)(f)
            inner, before = updated_node.func, original_node.func
            assert isinstance(before, cst.Call)
            args = _new_args(plan, before.args, inner.args)
            if len(args) > 1:
                return updated_node.with_changes(func=inner.with_changes(args=args))
            self._forget(inner.func)
            return updated_node.with_changes(func=inner.args[0].value)
        return updated_node.with_changes(args=_new_args(plan, original_node.args, updated_node.args))

    def _jit_decorator(self, edit: JitEdit, node: cst.Decorator) -> cst.Decorator:
        call = node.decorator
        assert isinstance(call, cst.Call)
        options: list[cst.Arg] = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "static_argnums":
                if edit.static_argnums:
                    as_list = isinstance(arg.value, cst.List)  # jit's are int literals (sites.rule_jit)
                    options.append(arg.with_changes(value=_positions_expr(arg.value, edit.static_argnums, as_list)))
            elif keyword == "static_argnames":
                if edit.static_argnames:
                    options.append(arg.with_changes(value=_names_expr(arg.value, list(edit.static_argnames))))
            else:
                options.append(arg)
        via_partial = bool(call.args) and call.args[0].keyword is None
        if via_partial and len(options) == 1:  # partial(jax.jit) -> jax.jit
            self._forget(call.func)
            return node.with_changes(decorator=options[0].value)
        if not via_partial and not options:  # jax.jit(static_argnums=...) -> jax.jit
            return node.with_changes(decorator=call.func)
        return node.with_changes(decorator=call.with_changes(args=_fix_trailing(options, call.args)))

    def _forget_nondiff(self, plan: RewritePlan) -> None:
        """A rewritten nondiff_argnums may leave an import unused (`builtins.list(...)`)."""
        for arg in (plan.site.nondiff.argnums_arg, plan.site.nondiff.argnames_arg):
            if arg is not None:
                self._forget_names(arg.value)

    def _forget(self, partial_func: cst.BaseExpression) -> None:
        name = dotted(partial_func)
        if name:
            self.removed_names.add(name.split(".")[0])

    # --- fwd -----------------------------------------------------------------------------------

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        plan = self.fwd_returns.get(id(original_node))
        if plan is not None and plan.layout not in (Layout.UNCHANGED, Layout.VARIABLE):
            return updated_node.with_changes(value=self._fwd_value(plan, updated_node.value, original_node.value))
        plan = self.temp_returns.get(id(original_node))
        if plan is not None:
            assert updated_node.value is not None
            self.temp_values[id(original_node)] = (plan.temp_name, updated_node.value)
            return updated_node.with_changes(value=self._bwd_value(plan, cst.Name(plan.temp_name), None))
        plan = self.bwd_returns.get(id(original_node))
        if plan is not None:
            return updated_node.with_changes(value=self._bwd_value(plan, updated_node.value, original_node.value))
        return updated_node

    def _store_first(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.FlattenSentinel[cst.BaseStatement] | None:
        """A bwd return sliced around a None: its value goes to a temporary on the line before."""
        stored = self.temp_values.get(id(original_node.body[0])) if len(original_node.body) == 1 else None
        if stored is None:
            return None
        name, value = stored
        assign = cst.SimpleStatementLine(
            body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)],
            leading_lines=updated_node.leading_lines,
        )
        return cst.FlattenSentinel([assign, updated_node.with_changes(leading_lines=[])])

    def _fwd_value(
        self, plan: RewritePlan, value: cst.BaseExpression | None, original: cst.BaseExpression | None
    ) -> cst.BaseExpression:
        """``original``: the same value in the module (``value`` may have changed below it)."""
        assert isinstance(value, cst.Tuple) and isinstance(original, cst.Tuple)
        out, old = value.elements
        saved = plan.saved_fwd_names
        if plan.layout is Layout.NONE:
            residual = _tuple_of(saved)
        elif plan.layout is Layout.TUPLE:
            assert isinstance(old.value, cst.Tuple)
            residual = _prepend(old.value, saved, self._wraps(original.elements[1].value))
        else:
            residual = cst.Tuple(_rebuild([cst.Element(old.value)], [*saved, cst.Element(old.value)]))
        return value.with_changes(elements=[out, old.with_changes(value=residual)])

    # --- bwd -----------------------------------------------------------------------------------

    def _bwd_value(
        self, plan: RewritePlan, value: cst.BaseExpression | None, original: cst.BaseExpression | None
    ) -> cst.BaseExpression:
        """``original``: the same value in the module (None for a temporary's name)."""
        if isinstance(value, cst.IfExp) and literal_branches(value) is not None:  # (a,) if c else (b,)
            assert isinstance(original, cst.IfExp)
            return value.with_changes(
                body=self._bwd_value(plan, value.body, original.body),
                orelse=self._bwd_value(plan, value.orelse, original.orelse),
            )
        slots = plan.none_slots
        trailing = trailing_slots(slots, cotangent_count(plan.site, plan.kept))
        wraps = self._wraps(original)
        if isinstance(value, (cst.Tuple, cst.List)) and trailing:
            return _with_items(value, [*value.elements, *["None"] * len(slots)], wraps)
        if isinstance(value, (cst.Tuple, cst.List)):
            known = dict(plan.starred_lengths)
            items: list[cst.BaseElement | str] = []
            old = list(value.elements)
            slot = 0
            for index, element in enumerate(old):
                while slot in slots:
                    items.append("None")
                    slot += 1
                items.append(element)
                name = element.value.value if isinstance(element.value, cst.Name) else ""
                if not isinstance(element, cst.StarredElement):
                    slot += 1
                elif name in known:
                    slot += known[name]
                else:  # plan_site made sure no None is needed after it
                    items.extend(old[index + 1 :])
                    break
            else:
                while slot in slots:
                    items.append("None")
                    slot += 1
            return _with_items(value, items, wraps)
        assert value is not None
        text = cst.Module([]).code_for_node(value)
        grads = text if isinstance(value, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) else f"({text})"
        if list(slots) == list(range(len(slots))):
            return cst.parse_expression("(" + ", ".join(["None"] * len(slots) + [f"*{grads}"]) + ")")
        if trailing:
            return cst.parse_expression("(" + ", ".join([f"*{grads}"] + ["None"] * len(slots)) + ")")
        parts: list[str] = []
        start = 0
        for count, slot in enumerate(slots):
            before = slot - count  # old cotangents standing before this slot
            if before > start:
                parts.append(f"*{grads}[{start}:{before}]" if start else f"*{grads}[:{before}]")
            parts.append("None")
            start = before
        parts.append(f"*{grads}[{start}:]")
        return cst.parse_expression("(" + ", ".join(parts) + ")")

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        plan = self.cotangent_literals.get(id(original_node))
        if plan is not None:  # `grads = (a, b)` that bwd returns: `grads = (a, None, b)`
            return updated_node.with_changes(value=self._bwd_value(plan, updated_node.value, original_node.value))
        plan = self.fwd_assigns.get(id(original_node))
        if plan is not None:
            assert isinstance(updated_node.value, (cst.Tuple, cst.List))
            wraps = self._wraps(original_node.value)
            return updated_node.with_changes(value=_prepend(updated_node.value, plan.saved_fwd_names, wraps))
        plan = self.unpacks.get(id(original_node))
        if plan is None:
            return updated_node
        target = updated_node.targets[0].target
        if plan.layout is Layout.BOUND:  # `params = res` -> `lo, params = res`; `a, b = res` -> `lo, (a, b) = res`
            if isinstance(target, cst.Tuple) and not target.lpar:
                target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            whole = cst.Tuple([cst.Element(target)])
            new_target: cst.BaseAssignTargetExpression = whole.with_changes(
                elements=_rebuild(whole.elements, [*plan.saved_bwd_names, whole.elements[0]]), lpar=[], rpar=[]
            )
        else:
            assert isinstance(target, (cst.Tuple, cst.List))
            new_target = _prepend(target, plan.saved_bwd_names, self._wraps(original_node.targets[0].target))
        return updated_node.with_changes(targets=[updated_node.targets[0].with_changes(target=new_target)])

    # --- bwd's `del`s and unpack targets, lambdas ----------------------------------------------

    def leave_Del(self, original_node: cst.Del, updated_node: cst.Del) -> cst.Del | cst.RemovalSentinel:
        names = self.dels.get(id(original_node))
        if names is None:
            return updated_node
        target = updated_node.target
        if not isinstance(target, (cst.Tuple, cst.List)):
            return cst.RemoveFromParent() if isinstance(target, cst.Name) and target.value in names else updated_node

        def gone(element: cst.Element) -> bool:
            return isinstance(element.value, cst.Name) and element.value.value in names

        # Before rebuilding: a bare `lo, hi` left empty would be a tuple without parentheses.
        if all(isinstance(e, cst.Element) and gone(e) for e in target.elements):
            return cst.RemoveFromParent()
        new = _literal_without(target, gone)
        if len(new.elements) == 1 and not target.lpar and not isinstance(target, cst.List):
            return updated_node.with_changes(target=new.elements[0].value)
        return updated_node.with_changes(target=new)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        if len(updated_node.body) < len(original_node.body) and updated_node.body:  # a `del` went
            last = updated_node.body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            updated_node = updated_node.with_changes(body=[*updated_node.body[:-1], last])
        stored = self._store_first(original_node, updated_node)
        if stored is not None:
            return stored
        updated_node = self._true_comment(original_node, updated_node)
        defs = [d for small in original_node.body for d in self.new_defs.get(id(getattr(small, "value", None)), [])]
        if not defs:
            return updated_node
        # The new def takes the blank lines above the statement; comments right above it stay.
        lines = list(updated_node.leading_lines)
        comments = 0
        while comments < len(lines) and lines[len(lines) - 1 - comments].comment is not None:
            comments += 1
        split = len(lines) - comments
        gap = [cst.EmptyLine(indent=False)] * (2 if id(original_node) in self.top_level else 1)
        defs[0] = defs[0].with_changes(leading_lines=lines[:split])
        defs[1:] = [d.with_changes(leading_lines=gap) for d in defs[1:]]
        return cst.FlattenSentinel([*defs, updated_node.with_changes(leading_lines=[*gap, *lines[split:]])])

    def _true_comment(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """A fwd return that saved nothing and now saves the moved arguments: its comment saying
        nothing is saved (on the line, or right above it) says what is saved instead."""
        small = original_node.body[0] if len(original_node.body) == 1 else None
        plan = self.fwd_returns.get(id(small))
        if plan is None or plan.layout in (Layout.UNCHANGED, Layout.VARIABLE) or not _saved_nothing(small):
            return updated_node
        said = f"save {_spoken(plan.saved_fwd_names)} as residuals"
        trailing = updated_node.trailing_whitespace
        if trailing.comment is not None and (text := _corrected(trailing.comment.value, said)) is not None:
            comment = trailing.comment.with_changes(value=text)
            return updated_node.with_changes(trailing_whitespace=trailing.with_changes(comment=comment))
        lines = list(updated_node.leading_lines)
        if lines and lines[-1].comment is not None and (text := _corrected(lines[-1].comment.value, said)) is not None:
            lines[-1] = lines[-1].with_changes(comment=lines[-1].comment.with_changes(value=text))
            return updated_node.with_changes(leading_lines=lines)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        name = self.renames.get(id(original_node))
        return updated_node if name is None else updated_node.with_changes(value=name)

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.BaseExpression:
        plan = self.fwd_lambdas.get(id(original_node))
        if plan is not None:
            if plan.layout is Layout.UNCHANGED:
                return updated_node
            return updated_node.with_changes(body=self._fwd_value(plan, updated_node.body, original_node.body))
        plan = self.bwd_lambdas.get(id(original_node))
        if plan is None:
            return updated_node
        params = self._bwd_params(plan, updated_node.params, None)[0]
        body = self._bwd_value(plan, updated_node.body, original_node.body)
        if plan.bwd_def_name is None:
            return updated_node.with_changes(params=params, body=body)
        empty = cst.Module([])
        header = f"def {plan.bwd_def_name}({empty.code_for_node(params)}):\n"
        returned = empty.code_for_node(body)
        try:
            node = cst.parse_statement(f"{header}    return {returned}\n", self.config)
        except cst.ParserSyntaxError:  # a body spanning lines inside defvjp's own parentheses
            node = cst.parse_statement(f"{header}    return ({returned})\n", self.config)
        assert isinstance(node, cst.FunctionDef) and plan.site.defvjp is not None
        self.new_defs.setdefault(id(plan.site.defvjp), []).append(self._with_unpack(plan, node))
        return cst.Name(plan.bwd_def_name)

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        if id(original_node) not in self.retyped:
            return updated_node
        self._forget_names(updated_node.annotation)
        return updated_node.with_changes(
            annotation=_annotation(updated_node.annotation, self.retyped[id(original_node)])
        )

    def _forget_names(self, node: cst.CSTNode | None) -> None:
        """An annotation or expression that goes may leave imports unused (`Tuple`)."""
        if node is not None:
            uses = _NameUses(None)
            walk.visit(node, uses)
            self.removed_names |= uses.used

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if id(original_node) in self.retyped:
            self._forget_names(updated_node.returns)
            returns = _annotation(updated_node.returns, self.retyped[id(original_node)])
            updated_node = updated_node.with_changes(returns=returns)
        plan = self.bwds.get(id(original_node))
        if plan is None:
            return updated_node
        params, lead = self._bwd_params(plan, updated_node.params, updated_node.whitespace_before_params)
        node = updated_node.with_changes(params=params, whitespace_before_params=lead)
        return self._with_unpack(plan, node)

    def _with_unpack(self, plan: RewritePlan, node: cst.FunctionDef) -> cst.FunctionDef:
        if plan.layout is Layout.GENERAL or (plan.layout is Layout.NONE and len(plan.saved_bwd_names) > 1):
            targets = list(plan.saved_bwd_names)
            if plan.layout is Layout.GENERAL:
                targets.append(plan.old_residual_name)
            unpack = cst.parse_statement(f"{', '.join(targets)} = {plan.residual_param}\n")
            body = node.body
            assert isinstance(body, cst.IndentedBlock)
            statements = list(body.body)
            at = 1 if statements and _is_docstring(statements[0]) else 0
            statements.insert(at, unpack)
            node = node.with_changes(body=body.with_changes(body=statements))
        return node

    def _bwd_params(
        self, plan: RewritePlan, params: cst.Parameters, lead: _Whitespace | None
    ) -> tuple[cst.Parameters, _Whitespace | None]:
        """bwd's parameters without the moved ones (their comments kept, ``without``), the
        residual renamed; and the new whitespace after the opening parenthesis (``lead``)."""
        assert plan.site.bwd is not None
        n_nondiff = len(plan.site.nondiff.positions) + plan.site.bwd.bound_args
        single = plan.layout is Layout.NONE and len(plan.saved_bwd_names) == 1
        residual_name = plan.saved_bwd_names[0] if single else plan.residual_param
        every = [*params.posonly_params, *params.params]
        every[n_nondiff] = every[n_nondiff].with_changes(name=cst.Name(residual_name))
        moved = set(plan.moved_bwd_params)

        def gone(param: cst.Param) -> bool:
            return param is not every[n_nondiff] and param.name.value in moved

        slash = params.posonly_ind
        n_posonly = len(params.posonly_params)
        if not isinstance(slash, cst.ParamSlash) or all(gone(p) for p in every[:n_posonly]):
            rest, lead = without(every, gone, lead)  # no `/`, or nothing left before it: it goes
            return params.with_changes(posonly_params=[], posonly_ind=cst.MaybeSentinel.DEFAULT, params=rest), lead
        posonly, lead = without(every[:n_posonly], gone, lead)
        if not isinstance(slash.comma, cst.Comma):  # `(w, res, g, /)`
            return params.with_changes(posonly_params=posonly, params=every[n_posonly:]), lead
        rest, after_slash = without(every[n_posonly:], gone, slash.comma.whitespace_after)
        if after_slash is not None:
            slash = slash.with_changes(comma=slash.comma.with_changes(whitespace_after=after_slash))
        params = params.with_changes(posonly_ind=slash)
        return params.with_changes(posonly_params=posonly, params=rest), lead


def _annotation(old: cst.Annotation | None, new: cst.Annotation | TupleType | None) -> cst.Annotation | None:
    """The annotation in place of ``old``: ``new``, or ``old`` with its type updated to ``new``."""
    if not isinstance(new, TupleType):
        return new
    assert old is not None
    return old.with_changes(annotation=_tuple_type(new))


def _uncommented(comma: cst.Comma) -> cst.Comma:
    """A comma like ``comma`` for a new item: its line break, not the comment on its line."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        first = after.first_line.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
        return comma.with_changes(whitespace_after=after.with_changes(first_line=first, empty_lines=[]))
    return comma


def _tuple_type(new: TupleType) -> cst.BaseExpression:
    items = [_type_item(i) for i in new.items]
    if new.old is None:
        fresh = [cst.SubscriptElement(cst.Index(i.deep_clone()), comma=_comma()) for i in items]
        fresh[-1] = fresh[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Subscript(cst.parse_expression(new.spelling), fresh)
    original = list(new.old.slice)
    kept = {id(e.slice.value): e for e in original if isinstance(e.slice, cst.Index)}
    separators = [e.comma for e in original[:-1] if isinstance(e.comma, cst.Comma)]
    separator = _uncommented(separators[0]) if separators else _comma()
    trailing = original[-1].comma if len(original) > 1 else cst.MaybeSentinel.DEFAULT
    elements: list[cst.SubscriptElement] = []
    for index, item in enumerate(items):
        element = kept.get(id(item)) or cst.SubscriptElement(cst.Index(item.deep_clone()))
        last = index == len(items) - 1
        if last or element is original[-1] or id(item) not in kept:  # a new item, or a new last one
            element = element.with_changes(comma=trailing if last else separator)
        elements.append(element)
    return new.old.with_changes(slice=elements)


def _type_item(item: cst.BaseExpression | TupleType | OrNone | None) -> cst.BaseExpression:
    if isinstance(item, TupleType):
        return _tuple_type(item)
    if isinstance(item, OrNone):  # `A | B` needs no parentheses before `| None`
        return cst.BinaryOperation(item.item, cst.BitOr(_SPACE, _SPACE), cst.Name("None"))
    return cst.Name("None") if item is None else item


def _comment_lines(node: cst.CSTNode) -> list[cst.EmptyLine]:
    """The comments inside a node that goes, as lines to put above its statement."""
    return [cst.EmptyLine(comment=c) for c in walk.comments(node)]


def _saved_nothing(small: cst.BaseSmallStatement | None) -> bool:
    """``return out, None`` or ``return out, ()``."""
    value = small.value if isinstance(small, cst.Return) else None
    if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
        return False
    residual = value.elements[1].value
    return (isinstance(residual, cst.Name) and residual.value == "None") or (
        isinstance(residual, cst.Tuple) and not residual.elements
    )


def _spoken(names: Sequence[str]) -> str:
    """``lo``, ``lo and hi``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _corrected(comment: str, said: str) -> str | None:
    """The comment with its "nothing is saved" clause replaced by ``said`` (None: no such clause)."""
    found = _NOTHING_SAVED.match(comment)
    if found is None:
        return None
    clause = found["clause"].rstrip()
    said = said[0].upper() + said[1:] if clause[0].isupper() else said
    return found["lead"] + said + comment[found.start("clause") + len(clause) :]


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _rebuild(
    original: Sequence[cst.BaseElement], items: Sequence[cst.BaseElement | str], wraps: bool = False
) -> list[cst.BaseElement]:
    """Elements for a tuple/list that gains names, with commas in the original's style.

    New items take the separator the original uses between elements (a plain `, ` when its
    items ``wraps``: they join the line of the item next to them); the last item keeps the
    original's trailing comma only when the original had several elements (``(g,)`` becomes
    ``(None, g)``, a multi-line tuple keeps its trailing comma).
    """
    separators = [e.comma for e in original[:-1] if isinstance(e.comma, cst.Comma)]
    separator = _uncommented(separators[0]) if separators and not wraps else _comma()
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


def _prepend(node: _Literal, names: Sequence[str], wraps: bool) -> _Literal:
    return _with_items(node, [*names, *node.elements], wraps)


def _with_items(node: _Literal, items: Sequence[cst.BaseElement | str], wraps: bool) -> _Literal:
    """``node`` holding ``items`` (its own elements and new names), in the original's layout
    (``wraps``: see ``_Apply._wraps``)."""
    brackets = _one_per_line(node)
    if brackets is None:
        return node.with_changes(elements=_rebuild(node.elements, items, wraps))
    opening, closing = brackets
    old = list(node.elements)
    # The comment lines above each element, and the rest of each element's own line.
    above = {id(old[0]): opening.empty_lines}
    own_line = {id(old[-1]): closing.first_line}
    for element, following in itertools.pairwise(old):
        assert isinstance(element.comma, cst.Comma) and isinstance(element.comma.whitespace_after, _Break)
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


def _one_per_line(node: _Literal) -> tuple[_Break, _Break] | None:
    """The line breaks after the opening and before the closing bracket of a literal written one
    element per line (black's "magic trailing comma" layout), or None for any other layout."""
    if type(node) is cst.List:  # `type() is`: see imports.node_types
        opening, closing = node.lbracket.whitespace_after, node.rbracket.whitespace_before
    elif len(node.lpar) == 1 and node.elements:
        opening, closing = node.lpar[0].whitespace_after, node.rpar[0].whitespace_before
    else:
        return None
    separators = [e.comma.whitespace_after if type(e.comma) is cst.Comma else None for e in node.elements[:-1]]
    if type(opening) is _Break and type(closing) is _Break and all(type(s) is _Break for s in separators):
        return opening, closing
    return None


class _NameUses(cst.CSTVisitor):
    """Which of ``names`` (None: any name) a node reads, attributes' own names aside."""

    def __init__(self, names: set[str] | None) -> None:
        self.names = names
        self.used: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if self.names is None or node.value in self.names:
            self.used.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk.visit(node.value, self)
        return False


class _DropImports(cst.CSTTransformer):
    """Remove import aliases binding the given names (the change made them unused).

    A statement line that goes leaves its blank lines above it to the next statement, unless
    that one is set apart already: the gap after a docstring or between groups stays. A block
    (`try:`, `if TYPE_CHECKING:`...) whose every line would go keeps its imports unchanged.
    """

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.emptied: set[int] = set()  # id() of the statement lines this visit removed

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if not updated_node.body and original_node.body:
            self.emptied.add(id(original_node))
            return cst.RemoveFromParent()
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not updated_node.body:  # a person keeps `try: import x` rather than write `try: pass`
            return original_node
        return updated_node.with_changes(body=self.close_gaps(original_node.body, updated_node.body))

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        return updated_node if updated_node.body else original_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self.module_body(original_node, updated_node.body))

    def module_body(self, module: cst.Module, new: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``close_gaps`` for a module: a file no longer starts with the lines that went, and
        no longer starts with a blank line either (after its header comments one stays)."""
        body = self.close_gaps(module.body, new)
        header = module.header
        if body and module.body and id(module.body[0]) in self.emptied and (not header or header[-1].comment is None):
            lines = list(_leading_lines(body[0]))
            body[0] = body[0].with_changes(leading_lines=lines[len(_blank_lead(body[0])) :])
        return body

    def close_gaps(self, old: Sequence[cst.BaseStatement], new: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``new``: ``old`` without the lines this visit emptied (the others in order, maybe
        changed); each removed line's leading blank lines moved to the statement after it."""
        body: list[cst.BaseStatement] = []
        kept = iter(new)
        gap: list[cst.EmptyLine] = []
        heading: list[cst.EmptyLine] = []  # comment lines above the removed lines, since the last gap
        for stmt in old:
            if id(stmt) in self.emptied:
                blank = _blank_lead(stmt)
                gap = gap or blank
                heading = [*([] if blank else heading), *_leading_lines(stmt)[len(blank) :]]
                continue
            following = next(kept)
            if heading and not _blank_lead(following) and _is_import(following) and not self._about_removed(heading):
                following = following.with_changes(leading_lines=[*heading, *_leading_lines(following)])
            if gap and not _blank_lead(following):
                following = following.with_changes(leading_lines=[*gap, *_leading_lines(following)])
            body.append(following)
            gap, heading = [], []
        return body

    def _about_removed(self, lines: Sequence[cst.EmptyLine]) -> bool:
        """Whether comment lines above removed imports name one of them (else they head a group)."""
        return any(line.comment and _names_one_of(line.comment.value, self.names) for line in lines)

    def _keep(self, alias: cst.ImportAlias) -> bool:
        return _bound_name(alias).split(".")[0] not in self.names

    def drops(self, node: cst.BaseSmallStatement) -> bool:
        """Whether the import ``node`` loses a name."""
        if type(node) is cst.Import or type(node) is cst.ImportFrom:  # `type() is`: see imports.node_types
            names = node.names
            return type(names) is not cst.ImportStar and not all(self._keep(a) for a in names)  # type: ignore[union-attr]
        return False

    def _trim(
        self, node: cst.Import | cst.ImportFrom, names: Sequence[cst.ImportAlias]
    ) -> cst.Import | cst.ImportFrom | cst.RemovalSentinel:
        if all(self._keep(a) for a in names):
            return node
        lpar = node.lpar if isinstance(node, cst.ImportFrom) else None
        lead = lpar.whitespace_after if lpar is not None else None
        kept, lead = without(names, lambda a: not self._keep(a), lead)
        if not kept:
            return cst.RemoveFromParent()
        if lpar is None:  # `import a, b` / `from m import a, b` take no trailing comma
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif lead is not None:
            node = node.with_changes(lpar=lpar.with_changes(whitespace_after=lead))
        return node.with_changes(names=kept)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body
    )


def _bound_name(alias: cst.ImportAlias) -> str:
    bound = alias.asname.name if alias.asname else alias.name
    return (dotted(bound) if isinstance(bound, (cst.Name, cst.Attribute)) else None) or ""


def _leading_lines(stmt: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    lines: Sequence[cst.EmptyLine] = getattr(stmt, "leading_lines", ())  # every statement kind has them
    return lines


def _blank_lead(stmt: cst.BaseStatement) -> list[cst.EmptyLine]:
    """The blank lines (no comment) that start ``stmt``'s leading lines."""
    lines: list[cst.EmptyLine] = []
    for line in _leading_lines(stmt):
        if line.comment is not None:
            break
        lines.append(line)
    return lines


def apply_plans(module: cst.Module, plans: Sequence[RewritePlan], local: bool = True) -> cst.Module:
    """Apply every plan in one pass, then drop the imports the change made unused.

    ``local``: rebuild only the nodes that change and their ancestors (walk.Index) instead of
    running the transformers over the whole module; the result is the same.
    """
    if not plans:
        return module
    applier = _Apply(plans, module)
    if local:
        new, applier = _transform(module, applier)
    else:
        new = module.visit(applier)
    if applier.removed_names:
        uses = _NameUses(applier.removed_names)
        if local:
            walk.visit(new, uses)
        else:
            new.visit(uses)
        unused = applier.removed_names - uses.used
        if unused:
            new = (
                _drop_imports(new, _DropImports(unused), walk.index_of(module))
                if local
                else new.visit(_DropImports(unused))
            )
    return new


def _statement_anchors(plans: Sequence[RewritePlan]) -> Iterator[cst.CSTNode]:
    """Nodes whose statement line leave_SimpleStatementLine changes: a return that stores its
    value first, a `del` that shrinks, a defvjp call that gets a new def before it, a fwd return
    that saved nothing (its comment may say so)."""
    for plan in plans:
        yield from plan.temp_returns
        yield from (node for node in plan.fwd_returns if _saved_nothing(node))
        yield from (node for node, _ in plan.dels)
        if plan.bwd_def_name and plan.site.defvjp is not None:
            yield plan.site.defvjp


def _transform(module: cst.Module, applier: _Apply) -> tuple[cst.Module, _Apply]:
    # _Apply changes only nodes whose id is a key of one of its tables, and the statement lines
    # around the anchors above; an anchor with no line (in a body on its def line, or a lambda
    # rule's return made by the plan) has none to change (tests/test_walk.py compares this with
    # the whole-module visit over every fixture).
    index = walk.index_of(module)
    keys = set().union(*(table for table in vars(applier).values() if isinstance(table, dict)))
    try:
        lines = [index.statement_line(node) for node in _statement_anchors(applier.plans)]
        new = index.transform(module, applier, [*index.nodes(keys), *filter(None, lines)])
    except (walk.NotLocal, KeyError):  # the applier may be half-way: start again
        applier = _Apply(applier.plans, module)
        return module.visit(applier), applier
    assert isinstance(new, cst.Module)
    return new, applier


# The nodes _DropImports has a leave method for, but the module.
_DROPPER_KINDS = frozenset(
    {cst.SimpleStatementLine, cst.IndentedBlock, cst.SimpleStatementSuite, cst.Import, cst.ImportFrom}
)


def _drop_imports(module: cst.Module, dropper: _DropImports, index: walk.Index) -> cst.Module:
    """``module.visit(dropper)``, run only on the top-level statements that hold an import
    (as ``index.transform`` of their lines, blocks and imports, where ``index`` covers them)."""
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if not any(dropper.drops(s) for s in small_statements(stmt)):  # unchanged by the visit
            body.append(stmt)
            continue
        new = _drop_from(stmt, dropper, index) if index.covers(stmt) else stmt.visit(dropper)
        if isinstance(new, cst.BaseStatement):
            body.append(new)
    return module.with_changes(body=dropper.module_body(module, body))


def _drop_from(stmt: cst.BaseStatement, dropper: _DropImports, index: walk.Index) -> object:
    """``stmt.visit(dropper)`` for a statement of the indexed module. The transform's root must
    stay a node, so a statement line's own leave (which may remove it) is called here."""
    targets = index.descendants(stmt, _DROPPER_KINDS)
    if type(stmt) is not cst.SimpleStatementLine:
        return index.transform(stmt, dropper, targets, again=True)
    updated = index.transform(stmt, dropper, targets[1:], again=True)
    return dropper.leave_SimpleStatementLine(stmt, updated)
