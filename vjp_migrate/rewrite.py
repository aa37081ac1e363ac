"""Stage 6: module + plans -> new module. The only place that builds CST nodes."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted, small_statements
from vjp_migrate.model import Layout, RewritePlan

_SPACE = cst.SimpleWhitespace(" ")


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=_SPACE)


def _tuple_of(names: Sequence[str]) -> cst.BaseExpression:
    if len(names) == 1:
        return cst.Name(names[0])
    return cst.parse_expression("(" + ", ".join(names) + ")")


def _positions_expr(original: cst.BaseExpression, kept: tuple[int, ...]) -> cst.BaseExpression:
    if isinstance(original, cst.Integer):
        return cst.Integer(str(kept[0]))
    text = ", ".join(map(str, kept))
    if isinstance(original, cst.List):
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(kept) == 1 else f"({text})")


def _names_expr(original: cst.BaseExpression, names: list[str]) -> cst.BaseExpression:
    strings = (
        [original]
        if isinstance(original, cst.SimpleString)
        else [e.value for e in getattr(original, "elements", ()) if isinstance(e.value, cst.SimpleString)]
    )
    quote = strings[0].quote if strings else '"'
    text = ", ".join(f"{quote}{n}{quote}" for n in names)
    if isinstance(original, cst.SimpleString):
        return cst.parse_expression(text if len(names) == 1 else f"({text})")
    if isinstance(original, cst.List):
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(names) == 1 else f"({text})")


def _fix_trailing(args: list[cst.Arg], template: Sequence[cst.Arg]) -> list[cst.Arg]:
    """After removing arguments, the last one takes the comma the original last one had."""
    if args and template:
        args[-1] = args[-1].with_changes(comma=template[-1].comma)
    return args


def _new_options(plan: RewritePlan, originals: Sequence[cst.Arg], options: Sequence[cst.Arg]) -> list[cst.Arg]:
    """The keyword arguments of custom_vjp/partial after the change (matched on the originals)."""
    site = plan.site
    kept_names = [site.params[p] for p in plan.kept]
    result: list[cst.Arg] = []
    for original, arg in zip(originals, options, strict=True):
        if original is site.nondiff.argnums_arg:
            old = arg.value
            listed = [p for p in plan.kept if p not in _named_positions(plan)]
            if listed:
                result.append(arg.with_changes(value=_positions_expr(old, tuple(listed))))
        elif original is site.nondiff.argnames_arg:
            names = [n for n in kept_names if site.params.index(n) in _named_positions(plan)]
            if names:
                result.append(arg.with_changes(value=_names_expr(arg.value, names)))
        else:
            result.append(arg)
    return _fix_trailing(result, options)


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
    def __init__(self, plans: Sequence[RewritePlan]) -> None:
        self.plans = plans
        self.carriers = {id(p.site.carrier): p for p in plans}
        self.fwd_returns = {id(r): p for p in plans for r in p.fwd_returns}
        self.bwd_returns = {id(r): p for p in plans for r in p.bwd_returns}
        self.bwds = {id(p.site.bwd.node): p for p in plans if p.site.bwd and p.site.bwd.node}
        self.unpacks = {id(p.tuple_unpack): p for p in plans if p.tuple_unpack is not None}
        self.removed_names: set[str] = set()

    # --- the primal's decorator or call --------------------------------------------------------

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        plan = self.carriers.get(id(original_node))
        if plan is None:
            return updated_node
        call, before = updated_node.decorator, original_node.decorator
        assert isinstance(call, cst.Call) and isinstance(before, cst.Call)
        options = _new_options(plan, before.args[1:], call.args[1:])
        if options:
            return updated_node.with_changes(decorator=call.with_changes(args=[call.args[0], *options]))
        self._forget(call.func)
        return updated_node.with_changes(decorator=call.args[0].value)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.carriers.get(id(original_node))
        if plan is None:
            return updated_node
        if isinstance(updated_node.func, cst.Call):  # partial(jax.custom_vjp, ...)(f)
            inner, before = updated_node.func, original_node.func
            assert isinstance(before, cst.Call)
            options = _new_options(plan, before.args[1:], inner.args[1:])
            if options:
                return updated_node.with_changes(func=inner.with_changes(args=[inner.args[0], *options]))
            self._forget(inner.func)
            return updated_node.with_changes(func=inner.args[0].value)
        options = _new_options(plan, original_node.args[1:], updated_node.args[1:])
        return updated_node.with_changes(args=_fix_trailing([updated_node.args[0], *options], updated_node.args))

    def _forget(self, partial_func: cst.BaseExpression) -> None:
        name = dotted(partial_func)
        if name:
            self.removed_names.add(name.split(".")[0])

    # --- fwd -----------------------------------------------------------------------------------

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        plan = self.fwd_returns.get(id(original_node))
        if plan is not None and plan.layout is not Layout.UNCHANGED:
            return updated_node.with_changes(value=self._fwd_value(plan, updated_node.value))
        plan = self.bwd_returns.get(id(original_node))
        if plan is not None:
            return updated_node.with_changes(value=self._bwd_value(plan, updated_node.value))
        return updated_node

    def _fwd_value(self, plan: RewritePlan, value: cst.BaseExpression | None) -> cst.BaseExpression:
        assert isinstance(value, cst.Tuple)
        out, old = value.elements
        saved = plan.saved_fwd_names
        if plan.layout is Layout.NONE:
            residual = _tuple_of(saved)
        elif plan.layout is Layout.TUPLE:
            assert isinstance(old.value, cst.Tuple)
            residual = _prepend(old.value, saved)
        else:
            residual = cst.Tuple(_rebuild([cst.Element(old.value)], [*saved, cst.Element(old.value)]))
        return value.with_changes(elements=[out, old.with_changes(value=residual)])

    # --- bwd -----------------------------------------------------------------------------------

    def _bwd_value(self, plan: RewritePlan, value: cst.BaseExpression | None) -> cst.BaseExpression:
        slots = plan.none_slots
        if isinstance(value, (cst.Tuple, cst.List)):
            items: list[cst.BaseElement | str] = []
            old = list(value.elements)
            slot = 0
            while True:
                if slot in slots:
                    items.append("None")
                elif old:
                    element = old.pop(0)
                    items.append(element)
                    if isinstance(element, cst.StarredElement):
                        items.extend(old)
                        break
                else:
                    break
                slot += 1
            elements = _rebuild(value.elements, items)
            if isinstance(value, cst.List):
                return value.with_changes(elements=elements)
            return value.with_changes(
                elements=elements, lpar=value.lpar or [cst.LeftParen()], rpar=value.rpar or [cst.RightParen()]
            )
        assert value is not None
        text = cst.Module([]).code_for_node(value)
        grads = text if isinstance(value, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) else f"({text})"
        if list(slots) == list(range(len(slots))):
            return cst.parse_expression("(" + ", ".join(["None"] * len(slots) + [f"*{grads}"]) + ")")
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
        plan = self.unpacks.get(id(original_node))
        if plan is None:
            return updated_node
        target = updated_node.targets[0].target
        assert isinstance(target, (cst.Tuple, cst.List))
        return updated_node.with_changes(
            targets=[updated_node.targets[0].with_changes(target=_prepend(target, plan.saved_bwd_names))]
        )

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        plan = self.bwds.get(id(original_node))
        if plan is None:
            return updated_node
        node = updated_node.with_changes(params=self._bwd_params(plan, updated_node.params))
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

    def _bwd_params(self, plan: RewritePlan, params: cst.Parameters) -> cst.Parameters:
        n_nondiff = len(plan.site.nondiff.positions)
        single = plan.layout is Layout.NONE and len(plan.saved_bwd_names) == 1
        residual_name = plan.saved_bwd_names[0] if single else plan.residual_param
        groups: list[list[cst.Param]] = [[], []]
        for index, param in enumerate([*params.posonly_params, *params.params]):
            group = groups[0 if index < len(params.posonly_params) else 1]
            if index == n_nondiff:
                group.append(param.with_changes(name=cst.Name(residual_name)))
            elif param.name.value not in plan.moved_bwd_params:
                group.append(param)
        return params.with_changes(posonly_params=groups[0], params=groups[1])


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _rebuild(original: Sequence[cst.BaseElement], items: Sequence[cst.BaseElement | str]) -> list[cst.BaseElement]:
    """Elements for a tuple/list that gains names, with commas in the original's style.

    New items take the separator the original uses between elements; the last item keeps the
    original's trailing comma only when the original had several elements (``(g,)`` becomes
    ``(None, g)``, a multi-line tuple keeps its trailing comma).
    """
    separators = [e.comma for e in original[:-1] if isinstance(e.comma, cst.Comma)]
    separator = separators[0] if separators else _comma()
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


def _prepend(node: cst.Tuple | cst.List, names: Sequence[str]) -> cst.Tuple | cst.List:
    return node.with_changes(elements=_rebuild(node.elements, [*names, *node.elements]))


class _NameUses(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.used: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.used.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk.visit(node.value, self)
        return False


class _DropImports(cst.CSTTransformer):
    """Remove import aliases binding the given names (the change made them unused)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def _keep(self, alias: cst.ImportAlias) -> bool:
        bound = alias.asname.name if alias.asname else alias.name
        local = dotted(bound) if isinstance(bound, (cst.Name, cst.Attribute)) else None
        return (local or "").split(".")[0] not in self.names

    def drops(self, node: cst.BaseSmallStatement) -> bool:
        """Whether the import ``node`` loses a name."""
        if isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            return not all(self._keep(a) for a in node.names)
        return False

    def _trim(
        self, node: cst.Import | cst.ImportFrom, names: Sequence[cst.ImportAlias]
    ) -> cst.Import | cst.ImportFrom | cst.RemovalSentinel:
        kept = [a for a in names if self._keep(a)]
        if len(kept) == len(names):
            return node
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return node.with_changes(names=kept)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]


def apply_plans(module: cst.Module, plans: Sequence[RewritePlan], local: bool = True) -> cst.Module:
    """Apply every plan in one pass, then drop the imports the change made unused.

    ``local``: rebuild only the nodes that change and their ancestors (walk.Index) instead of
    running the transformers over the whole module; the result is the same.
    """
    if not plans:
        return module
    applier = _Apply(plans)
    new = _transform(module, applier) if local else module.visit(applier)
    if applier.removed_names:
        uses = _NameUses(applier.removed_names)
        if local:
            walk.visit(new, uses)
        else:
            new.visit(uses)
        unused = applier.removed_names - uses.used
        if unused:
            new = _drop_imports(new, _DropImports(unused)) if local else new.visit(_DropImports(unused))
    return new


def _transform(module: cst.Module, applier: _Apply) -> cst.Module:
    # _Apply changes only nodes whose id is a key of one of its tables (tests/test_walk.py
    # compares this with the whole-module visit over every fixture).
    index = walk.index_of(module)
    keys = set().union(*(table for table in vars(applier).values() if isinstance(table, dict)))
    try:
        new = index.transform(module, applier, index.nodes(keys))
    except walk.NotLocal:
        return module.visit(_Apply(applier.plans))
    assert isinstance(new, cst.Module)
    return new


def _drop_imports(module: cst.Module, dropper: _DropImports) -> cst.Module:
    """``module.visit(dropper)``, run only on the top-level statements that hold an import."""
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if not any(dropper.drops(s) for s in small_statements(stmt)):  # unchanged by the visit
            body.append(stmt)
            continue
        new = stmt.visit(dropper)
        if isinstance(new, cst.RemovalSentinel):
            continue
        assert isinstance(new, cst.BaseStatement)
        if not stmt._is_removable() and new._is_removable():  # what the module's own visit does
            continue
        body.append(new)
    return module.with_changes(body=body)
