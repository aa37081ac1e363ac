"""Rewrite, step 5: ``Apply``, the transformer that turns each plan into new nodes: the primal's
decorator, fwd's residuals, bwd's parameters, unpacking and cotangents, a jit's static arguments."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.model import JitEdit, Layout, RewritePlan, TypeComments, TypedParam
from vjp_migrate.plan.aliases import unused_aliases
from vjp_migrate.plan.cotangents import cotangent_count, literal_branches, trailing_slots
from vjp_migrate.rewrite.annotations import new_annotation
from vjp_migrate.rewrite.comments import (
    comment_lines,
    corrected,
    is_docstring,
    kept_del_comments,
    left_above,
    saved_nothing,
)
from vjp_migrate.rewrite.docstrings import without_entries
from vjp_migrate.rewrite.lists import (
    Break,
    Whitespace,
    fix_trailing,
    listed_positions,
    literal_without,
    names_expr,
    new_args,
    one_per_line,
    own_constant,
    positions_expr,
    prepend,
    rebuilt_elements,
    tuple_of,
    with_items,
    without,
)
from vjp_migrate.rewrite.type_comments import param_comment, signature, with_param_comment, with_signature
from vjp_migrate.rewrite.unused_imports import NameUses
from vjp_migrate.rewrite.wrap import Lines, split_end, split_params, split_subscript, split_sum
from vjp_migrate.wording import spoken

Compound = TypeVar("Compound", bound=cst.BaseCompoundStatement)


class Apply(cst.CSTTransformer):
    # Plans for several users of one shared fwd/bwd agree on it (plan.reconcile_shared), so
    # keying by node applies that change once.
    # ``keep``: names of the module other files of the run import (an alias that stays unused).
    def __init__(
        self,
        plans: Sequence[RewritePlan],
        module: cst.Module,
        measure: bool = True,
        keep: AbstractSet[str] = frozenset(),
    ) -> None:
        self.plans = plans
        self.keep = keep
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
        self.type_comments = {id(c.func): c for p in plans for c in p.type_comments}
        self.param_comments = {
            id(t.param): (c, t) for p in plans for c in p.type_comments for t in c.params if _retypes(c, t)
        }
        self.new_defs: dict[int, list[cst.FunctionDef]] = {}  # id(defvjp call) -> defs to put before it
        self.removed_names: set[str] = set()
        for comments in (c for p in plans for c in p.type_comments):
            self._forget_comment_types(comments)
        self.index = walk.index_of(module)
        self.lines = Lines(self.index, module, plans[0].line_length if plans else None, measure)
        self.constants = {id(a): p for p in plans if (a := own_constant(p)) is not None}
        self.gone_aliases = {id(a.assign): a for a in unused_aliases(plans, keep)}
        self.comment_heirs = self._comment_heirs()  # id(statement line) -> comment lines it takes above it
        self._constant_heirs(module)

    def _comment_heirs(self) -> dict[int, list[cst.EmptyLine]]:
        """The comments at the end of `del` lines that go, when not about the deleted names, by
        the statement line that takes them above it (comments.kept_del_comments)."""
        gone: dict[int, list[str]] = {}
        blocks: list[cst.IndentedBlock] = []
        for plan in self.plans:
            bwd = plan.site.bwd.node if plan.site.bwd is not None else None
            if not plan.dels or bwd is None or not self.index.covers(bwd):
                continue
            for node, _ in plan.dels:
                line = self.index.statement_line(node)
                if line is not None and all(self._del_goes(small) for small in line.body):
                    gone[id(line)] = [name for small in line.body for name in self.dels[id(small)]]
            blocks.extend(
                b for b in self.index.descendants(bwd, {cst.IndentedBlock}) if isinstance(b, cst.IndentedBlock)
            )
        return kept_del_comments(blocks, gone) if gone else {}

    def _constant_heirs(self, module: cst.Module) -> None:
        """A constant line that goes (no position left), or an alias line, leaves the comments
        above it that are not about it to the statement after it (comments.left_above)."""
        body = list(module.body)
        for index, stmt in enumerate(body[:-1]):
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                continue
            plan = self.constants.get(id(stmt.body[0]))
            goes = id(stmt.body[0]) in self.gone_aliases or (plan is not None and not listed_positions(plan))
            if goes and (lines := left_above(stmt)):
                heir = id(body[index + 1])
                self.comment_heirs[heir] = [*lines, *self.comment_heirs.get(heir, [])]

    def _del_goes(self, small: cst.BaseSmallStatement) -> bool:
        """Whether leave_Del removes this statement whole."""
        names = self.dels.get(id(small)) if isinstance(small, cst.Del) else None
        if names is None:
            return False
        assert isinstance(small, cst.Del)
        target = small.target
        if isinstance(target, (cst.Tuple, cst.List)):
            return all(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and e.value.value in names
                for e in target.elements
            )
        return isinstance(target, cst.Name) and target.value in names

    def _wraps(self, original: cst.BaseExpression | None) -> bool:
        """Whether ``original`` is a literal of the module whose items fill its lines and wrap
        (`(a, b,\n    c)`, `(x,\n    y)` under a hanging indent), not one item per line (items
        under the first one, or black's layout): a new item then joins its neighbour's line."""
        if not isinstance(original, (cst.Tuple, cst.List)) or not original.elements or one_per_line(original):
            return False
        if not self.index.covers(original):
            return False
        elements = original.elements
        breaks = [isinstance(e.comma, cst.Comma) and isinstance(e.comma.whitespace_after, Break) for e in elements]
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
        if plan.site.alias is not None:  # `@vjp_w`
            return updated_node.with_changes(decorator=self._unaliased(plan))
        call, before = updated_node.decorator, original_node.decorator
        assert isinstance(call, cst.Call) and isinstance(before, cst.Call)
        self._forget_nondiff(plan)
        args = new_args(plan, before.args, call.args)
        if len(args) > 1:
            return updated_node.with_changes(decorator=call.with_changes(args=args))
        self._forget_names(call.func)
        above = comment_lines(call.with_changes(args=args))  # `@partial(\n    # ...\n    jax.custom_vjp, ...)`
        return updated_node.with_changes(
            decorator=call.args[0].value, leading_lines=[*updated_node.leading_lines, *above]
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.carriers.get(id(original_node))
        if plan is None:
            return updated_node
        if plan.site.alias is not None:  # `vjp_w(f)`
            return updated_node.with_changes(func=self._unaliased(plan))
        self._forget_nondiff(plan)
        if isinstance(updated_node.func, cst.Call):  # partial(jax.custom_vjp, ...)(f)
            inner, before = updated_node.func, original_node.func
            assert isinstance(before, cst.Call)
            args = new_args(plan, before.args, inner.args)
            if len(args) > 1:
                return updated_node.with_changes(func=inner.with_changes(args=args))
            self._forget_names(inner.func)
            return updated_node.with_changes(func=inner.args[0].value)
        return updated_node.with_changes(args=new_args(plan, original_node.args, updated_node.args))

    def _unaliased(self, plan: RewritePlan) -> cst.BaseExpression:
        """A use of a module alias of `partial(jax.custom_vjp, ...)` spelled out: a copy of its call
        with the positions left, or its `jax.custom_vjp` when none is left (the alias may stay,
        for other uses; plan.aliases)."""
        alias = plan.site.alias
        assert alias is not None
        if alias.module is not None:  # imported: `jax.custom_vjp`, as the module spells it
            self.removed_names.add(alias.name)
            return cst.parse_expression(alias.custom_vjp or "jax.custom_vjp")
        copy = alias.call.deep_clone()
        args = new_args(plan, alias.call.args, copy.args)
        return copy.with_changes(args=args) if len(args) > 1 else copy.args[0].value

    def _jit_decorator(self, edit: JitEdit, node: cst.Decorator) -> cst.Decorator:
        call = node.decorator
        assert isinstance(call, cst.Call)
        options: list[cst.Arg] = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "static_argnums":
                if edit.static_argnums:
                    as_list = isinstance(arg.value, cst.List)  # jit's are int literals (sites.rule_jit)
                    options.append(arg.with_changes(value=positions_expr(arg.value, edit.static_argnums, as_list)))
            elif keyword == "static_argnames":
                if edit.static_argnames:
                    options.append(arg.with_changes(value=names_expr(arg.value, list(edit.static_argnames))))
            else:
                options.append(arg)
        via_partial = bool(call.args) and call.args[0].keyword is None
        if via_partial and len(options) == 1:  # partial(jax.jit) -> jax.jit
            self._forget_names(call.func)
            return node.with_changes(decorator=options[0].value)
        if not via_partial and not options:  # jax.jit(static_argnums=...) -> jax.jit
            return node.with_changes(decorator=call.func)
        return node.with_changes(decorator=call.with_changes(args=fix_trailing(options, call.args)))

    def _forget_nondiff(self, plan: RewritePlan) -> None:
        """A rewritten nondiff_argnums may leave an import unused (`builtins.list(...)`)."""
        for arg in (plan.site.nondiff.argnums_arg, plan.site.nondiff.argnames_arg):
            if arg is not None:
                self._forget_names(arg.value)

    # --- fwd -----------------------------------------------------------------------------------

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        plan = self.fwd_returns.get(id(original_node))
        if plan is not None and plan.layout not in (Layout.UNCHANGED, Layout.VARIABLE):
            value = self._fwd_value(plan, updated_node.value, original_node.value)
            return updated_node.with_changes(value=self._fitted(original_node.value, value))
        plan = self.temp_returns.get(id(original_node))
        if plan is not None:
            assert updated_node.value is not None
            self.temp_values[id(original_node)] = (plan.temp_name, updated_node.value)
            value = self._bwd_value(plan, cst.Name(plan.temp_name), None)
            return updated_node.with_changes(value=self._fitted(original_node.value, value))
        plan = self.bwd_returns.get(id(original_node))
        if plan is not None:
            value = self._bwd_value(plan, updated_node.value, original_node.value)
            return updated_node.with_changes(value=self._fitted(original_node.value, value))
        return updated_node

    def _fitted(
        self,
        original: cst.BaseExpression | None,
        new: cst.BaseExpression,
        others: Sequence[tuple[cst.CSTNode, cst.CSTNode]] = (),
    ) -> cst.BaseExpression:
        """``new`` split at the literal ending it when it (with the ``others`` changes of its
        line) makes the line of ``original`` longer than the project's limit (rewrite.wrap)."""
        indent = self.lines.overflow([*others, (original, new)])
        if indent is None or original is None:
            return new
        return self._split(new, indent, self.index.span(original)[1] - 1)

    def _split(self, new: cst.BaseExpression, indent: str, before: int) -> cst.BaseExpression:
        """``new``, ``before`` characters into a line indented by ``indent``, split at the
        literal ending it, or a sum of tuples as black splits it (rewrite.wrap)."""
        if isinstance(new, cst.BinaryOperation):
            split = split_sum(new, indent, self.lines.unit(), before, self.lines.limit)
        else:
            split = split_end(new, indent, self.lines.unit())
        return new if split is None else split

    def _fitted_body(
        self, original: cst.Lambda, new: cst.BaseExpression, others: Sequence[tuple[cst.CSTNode, cst.CSTNode]] = ()
    ) -> cst.BaseExpression:
        """A lambda's new body, split as ``_fitted`` splits a value when the lambda is all its
        line holds (an argument of a call written one per line); on a line with more, black
        would split the call's brackets first, which the change did not grow."""
        return self._fitted(original.body, new, others) if self.lines.whole_line(original) else new

    def _fitted_return(
        self, lambda_node: cst.Lambda, defvjp: cst.CSTNode, node: cst.FunctionDef, code: str
    ) -> cst.FunctionDef:
        """A def made from a lambda whose return line (returning ``code``) is longer than the
        project's limit, when the lambda's line was not: the value split as ``_fitted`` splits one."""
        block = node.body
        if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
            return node
        line = block.body[0]
        returned = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if (
            not isinstance(line, cst.SimpleStatementLine)
            or not isinstance(returned, cst.Return)
            or returned.value is None
        ):
            return node
        value = returned.value
        indent = self.lines.indent_of(defvjp) + (
            block.indent if block.indent is not None else self.lines.module.default_indent
        )
        if "\n" in code or not self.lines.too_long(lambda_node, len(indent) + len("return ") + len(code)):
            return node
        split = self._split(value, indent, len(indent) + len("return "))
        new_line = line.with_changes(body=[returned.with_changes(value=split)])
        return node.with_changes(body=block.with_changes(body=[new_line]))

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
            residual = tuple_of(saved)
        elif plan.layout is Layout.TUPLE:
            assert isinstance(old.value, cst.Tuple)
            residual = prepend(old.value, saved, self._wraps(original.elements[1].value))
        else:
            residual = cst.Tuple(rebuilt_elements([cst.Element(old.value)], [*saved, cst.Element(old.value)]))
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
            return with_items(value, [*value.elements, *["None"] * len(slots)], wraps)
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
            return with_items(value, items, wraps)
        assert value is not None
        joined = self._joined_end(plan, value, original, trailing)
        if joined is not None:
            return joined
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

    def _joined_end(
        self, plan: RewritePlan, value: cst.BaseExpression, original: cst.BaseExpression | None, trailing: bool
    ) -> cst.BaseExpression | None:
        """A concatenation of tuples, `(a,) + rest + (b,)`, whose last literal takes the Nones
        that all go at the end, or whose first the Nones that all go first (None otherwise)."""
        if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, cst.Add):
            return None
        leading = list(plan.none_slots) == list(range(len(plan.none_slots)))
        nones = ["None"] * len(plan.none_slots)
        before = original if isinstance(original, cst.BinaryOperation) else None
        if trailing and _filled_tuple(value.right):
            assert isinstance(value.right, cst.Tuple)
            wraps = self._wraps(before.right if before else None)
            return value.with_changes(right=with_items(value.right, [*value.right.elements, *nones], wraps))
        if leading and isinstance(value.left, cst.BinaryOperation):
            left = self._joined_end(plan, value.left, before.left if before else None, False)
            return value.with_changes(left=left) if left is not None else None
        if leading and _filled_tuple(value.left):
            assert isinstance(value.left, cst.Tuple)
            wraps = self._wraps(before.left if before else None)
            return value.with_changes(left=with_items(value.left, [*nones, *value.left.elements], wraps))
        return None

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign | cst.RemovalSentinel:
        if id(original_node) in self.gone_aliases:  # `vjp_w = partial(jax.custom_vjp, ...)`, now unused
            self._forget_names(original_node.value)
            return cst.RemoveFromParent()
        plan = self.constants.get(id(original_node))
        if plan is not None:  # `_NONDIFF = (0, 2)` that only the site reads
            self._forget_names(original_node.value)
            listed = listed_positions(plan)
            if not listed:
                return cst.RemoveFromParent()
            value = positions_expr(updated_node.value, listed, plan.site.nondiff.as_list)
            return updated_node.with_changes(value=value)
        plan = self.cotangent_literals.get(id(original_node))
        if plan is not None:  # `grads = (a, b)` that bwd returns: `grads = (a, None, b)`
            value = self._bwd_value(plan, updated_node.value, original_node.value)
            return updated_node.with_changes(value=self._fitted(original_node.value, value))
        plan = self.fwd_assigns.get(id(original_node))
        if plan is not None:
            assert isinstance(updated_node.value, (cst.Tuple, cst.List))
            wraps = self._wraps(original_node.value)
            value = prepend(updated_node.value, plan.saved_fwd_names, wraps)
            return updated_node.with_changes(value=self._fitted(original_node.value, value))
        plan = self.unpacks.get(id(original_node))
        if plan is None:
            return updated_node
        target = updated_node.targets[0].target
        if plan.layout is Layout.BOUND:  # `params = res` -> `lo, params = res`; `a, b = res` -> `lo, (a, b) = res`
            if isinstance(target, cst.Tuple) and not target.lpar:
                target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            whole = cst.Tuple([cst.Element(target)])
            new_target: cst.BaseAssignTargetExpression = whole.with_changes(
                elements=rebuilt_elements(whole.elements, [*plan.saved_bwd_names, whole.elements[0]]), lpar=[], rpar=[]
            )
        else:
            assert isinstance(target, (cst.Tuple, cst.List))
            new_target = prepend(target, plan.saved_bwd_names, self._wraps(original_node.targets[0].target))
        fitted = self._fitted(original_node.targets[0].target, new_target)
        if isinstance(fitted, (cst.Tuple, cst.List)):
            new_target = fitted
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
        new = literal_without(target, gone)
        if len(new.elements) == 1 and not target.lpar and not isinstance(target, cst.List):
            return updated_node.with_changes(target=new.elements[0].value)
        return updated_node.with_changes(target=new)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        heirs = self.comment_heirs.get(id(original_node))
        if heirs:  # the comment of a `del` line that went, above the line that follows it
            updated_node = updated_node.with_changes(leading_lines=[*heirs, *updated_node.leading_lines])
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

    def _with_heirs(self, original_node: Compound, updated_node: Compound) -> Compound:
        """A compound statement after a `del` line that went takes its comment above it, as a
        statement line does (leave_SimpleStatementLine)."""
        heirs = self.comment_heirs.get(id(original_node))
        if not heirs:
            return updated_node
        return updated_node.with_changes(leading_lines=[*heirs, *updated_node.leading_lines])

    leave_If = leave_For = leave_While = leave_With = _with_heirs
    leave_Try = leave_TryStar = leave_Match = leave_ClassDef = _with_heirs

    def _true_comment(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """A fwd return that saved nothing and now saves the moved arguments: its comment saying
        nothing is saved (on the line, or right above it) says what is saved instead."""
        small = original_node.body[0] if len(original_node.body) == 1 else None
        plan = self.fwd_returns.get(id(small))
        if plan is None or plan.layout in (Layout.UNCHANGED, Layout.VARIABLE) or not saved_nothing(small):
            return updated_node
        names = plan.saved_fwd_names
        said = f"save {spoken(names)} as {'residuals' if len(names) > 1 else 'a residual'}"
        trailing = updated_node.trailing_whitespace
        if trailing.comment is not None and (text := corrected(trailing.comment.value, said)) is not None:
            comment = trailing.comment.with_changes(value=text)
            return updated_node.with_changes(trailing_whitespace=trailing.with_changes(comment=comment))
        lines = list(updated_node.leading_lines)
        if lines and lines[-1].comment is not None and (text := corrected(lines[-1].comment.value, said)) is not None:
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
            body = self._fwd_value(plan, updated_node.body, original_node.body)
            return updated_node.with_changes(body=self._fitted_body(original_node, body))
        plan = self.bwd_lambdas.get(id(original_node))
        if plan is None:
            return updated_node
        params = self._bwd_params(plan, updated_node.params, None)[0]
        body = self._bwd_value(plan, updated_node.body, original_node.body)
        if plan.bwd_def_name is None:
            body = self._fitted_body(original_node, body, [(original_node.params, params)])
            return updated_node.with_changes(params=params, body=body)
        empty = cst.Module([])
        header = f"def {plan.bwd_def_name}({empty.code_for_node(params)}):\n"
        returned = empty.code_for_node(body)
        try:
            node = cst.parse_statement(f"{header}    return {returned}\n", self.config)
        except cst.ParserSyntaxError:  # a body spanning lines inside defvjp's own parentheses
            returned = f"({returned})"
            node = cst.parse_statement(f"{header}    return {returned}\n", self.config)
        assert isinstance(node, cst.FunctionDef) and plan.site.defvjp is not None
        node = self._fitted_return(original_node, plan.site.defvjp, node, returned)
        self.new_defs.setdefault(id(plan.site.defvjp), []).append(self._with_unpack(plan, node))
        return cst.Name(plan.bwd_def_name)

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        commented = self.param_comments.get(id(original_node))
        if commented is not None:
            return with_param_comment(updated_node, param_comment(*commented))
        if id(original_node) not in self.retyped:
            return updated_node
        self._forget_names(updated_node.annotation)
        annotation = new_annotation(updated_node.annotation, self.retyped[id(original_node)])
        return updated_node.with_changes(annotation=self._fitted_annotation(original_node, annotation))

    def _fitted_annotation(self, original_node: cst.Param, new: cst.Annotation | None) -> cst.Annotation | None:
        """The new annotation of a parameter on a line of its own (a def already split), its
        brackets split when it makes that line longer than the project's limit (rewrite.wrap);
        a parameter on the def line is left to _fitted_header."""
        old = original_node.annotation
        if old is None or new is None or not self.lines.alone(original_node):
            return new
        indent = self.lines.overflow([(old.annotation, new.annotation)])
        split = None if indent is None else split_subscript(new.annotation, indent, self.lines.unit(), self.lines.limit)
        return new if split is None else new.with_changes(annotation=split)

    def _fitted_item(self, old: cst.Subscript, new: cst.BaseExpression) -> cst.BaseExpression:
        """A tuple type nested in an annotation spanning lines (the residual item of fwd's
        return type written one item per line), on a line of its own: its brackets split when
        it makes that line longer than the project's limit."""
        if not self.lines.whole_line(old):
            return new
        indent = self.lines.overflow([(old, new)])
        split = None if indent is None else split_subscript(new, indent, self.lines.unit(), self.lines.limit)
        return new if split is None else split

    def _forget_comment_types(self, comments: TypeComments) -> None:
        """The types a rule's type comments give (``view``'s annotations): the change rewrites the
        comments, which may leave imports unused (`Optional`); those the new ones read stay."""
        listed = comments.comment is not None
        for typed in comments.params:
            if listed or typed.head is not None:
                self._forget_names(typed.view.annotation)
        if listed:
            self._forget_names(comments.view.returns)

    def _forget_names(self, node: cst.CSTNode | None) -> None:
        """An annotation or expression that goes may leave imports unused (`Tuple`)."""
        if node is not None:
            uses = NameUses(None)
            walk.visit(node, uses)
            self.removed_names |= uses.used

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        updated_node = self._with_heirs(original_node, updated_node)
        if id(original_node) in self.retyped:
            self._forget_names(updated_node.returns)
            returns = new_annotation(updated_node.returns, self.retyped[id(original_node)], self._fitted_item)
            updated_node = updated_node.with_changes(returns=returns)
        plan = self.bwds.get(id(original_node))
        if plan is not None:
            params, lead = self._bwd_params(plan, updated_node.params, updated_node.whitespace_before_params)
            updated_node = updated_node.with_changes(params=params, whitespace_before_params=lead)
            updated_node = _with_docstring(updated_node, *_docstring_changes(plan, original_node))
        if plan is None and id(original_node) not in self.retyped:
            return self._with_type_comment(original_node, updated_node)
        updated_node = self._fitted_header(original_node, updated_node)
        if plan is not None:
            updated_node = self._with_unpack(plan, updated_node)
        return self._with_type_comment(original_node, updated_node, plan)

    def _with_type_comment(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef, plan: RewritePlan | None = None
    ) -> cst.FunctionDef:
        """A rule's `# type: (A, B) -> R` for its new signature, kept first under the def line."""
        comments = self.type_comments.get(id(original_node))
        if comments is None or comments.comment is None:
            return updated_node
        gone: set[int] = set()
        if plan is not None and plan.site.bwd is not None:  # bwd's parameters that leave
            at = len(plan.site.nondiff.positions) + plan.site.bwd.bound_args
            moved = set(plan.moved_bwd_params)
            gone = {i for i, t in enumerate(comments.params) if i != at and t.param.name.value in moved}
        return with_signature(original_node, updated_node, comments, signature(comments, gone))

    def _fitted_header(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        """A def line the change made longer than the project's limit: its parameters split
        (black splits a def at its first bracket; rewrite.wrap)."""
        changes: list[tuple[cst.CSTNode | None, cst.CSTNode | None]] = [(original_node.params, updated_node.params)]
        if original_node.returns is not None:  # an annotation's code needs its parent's `->`
            returns = updated_node.returns
            changes.append((original_node.returns.annotation, returns.annotation if returns else None))
        indent = self.lines.overflow(changes)
        lines = self.lines
        split = None if indent is None else split_params(updated_node.params, indent, lines.unit(), lines.limit)
        if split is None:
            return updated_node
        params, lead = split
        return updated_node.with_changes(params=params, whitespace_before_params=lead)

    def _with_unpack(self, plan: RewritePlan, node: cst.FunctionDef) -> cst.FunctionDef:
        lines = [f"{name} = {item}\n" for name, item in plan.read_at]
        if plan.layout is Layout.GENERAL or (plan.layout is Layout.NONE and len(plan.saved_bwd_names) > 1):
            targets = list(plan.saved_bwd_names)
            if plan.layout is Layout.GENERAL:
                targets.append(plan.old_residual_name)
            lines.append(f"{', '.join(targets)} = {plan.residual_param}\n")
        if lines:
            body = node.body
            assert isinstance(body, cst.IndentedBlock)
            statements = list(body.body)
            at = 1 if statements and is_docstring(statements[0]) else 0
            statements[at:at] = map(cst.parse_statement, lines)
            node = node.with_changes(body=body.with_changes(body=statements))
        return node

    def _bwd_params(
        self, plan: RewritePlan, params: cst.Parameters, lead: Whitespace | None
    ) -> tuple[cst.Parameters, Whitespace | None]:
        """bwd's parameters without the moved ones (their comments kept, ``without``), the
        residual renamed; and the new whitespace after the opening parenthesis (``lead``)."""
        assert plan.site.bwd is not None
        n_nondiff = len(plan.site.nondiff.positions) + plan.site.bwd.bound_args
        residual_name = _lone_saved(plan) or plan.residual_param
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


def _retypes(comments: TypeComments, typed: TypedParam) -> bool:
    """Whether the change retypes this parameter in a comment of its own (a function's comment
    that lists the parameters' types has them all)."""
    return not comments.listed and any(node is typed.view for node, _ in comments.retyped)


def _lone_saved(plan: RewritePlan) -> str | None:
    """The saved argument that alone is the new residual (the old one was None), by its bwd name:
    bwd's residual parameter takes that name."""
    single = plan.layout is Layout.NONE and len(plan.saved_bwd_names) == 1
    return plan.saved_bwd_names[0] if single else None


def _gone_params(plan: RewritePlan) -> tuple[str, ...]:
    """The parameters that leave bwd's signature (a lone saved argument stays, as the residual)."""
    lone = _lone_saved(plan)
    return tuple(n for n in plan.moved_bwd_params if n != lone)


def _docstring_changes(plan: RewritePlan, bwd: cst.FunctionDef) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """The parameters whose docstring entries go, and the residual's rename: an old residual that
    was None is gone, one that is now inside the new residual keeps its entry, renamed."""
    assert plan.site.bwd is not None
    gone = _gone_params(plan)
    at = len(plan.site.nondiff.positions) + plan.site.bwd.bound_args
    every = [*bwd.params.posonly_params, *bwd.params.params]
    old = every[at].name.value if at < len(every) else None
    new = _lone_saved(plan) or plan.residual_param
    if old is None or old == new or plan.layout is Layout.UNCHANGED:
        return gone, None
    if plan.layout is Layout.NONE:
        return (*gone, old), None
    return gone, (old, new)


def _with_docstring(
    node: cst.FunctionDef, gone: tuple[str, ...], renamed: tuple[str, str] | None = None
) -> cst.FunctionDef:
    """``node`` without the docstring entries of its parameters ``gone``, and the residual's
    entry renamed (rewrite.docstrings)."""
    body = node.body
    first = body.body[0] if isinstance(body, cst.IndentedBlock) and body.body else None
    if first is None or not is_docstring(first):
        return node
    assert isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr)
    docstring = first.body[0].value
    if not isinstance(docstring, cst.SimpleString):
        return node
    new = without_entries(docstring, gone, renamed)
    if new is docstring:
        return node
    line = first.with_changes(body=[first.body[0].with_changes(value=new)])
    assert isinstance(body, cst.IndentedBlock)
    return node.with_changes(body=body.with_changes(body=[line, *body.body[1:]]))


def _filled_tuple(node: cst.BaseExpression) -> bool:
    """A parenthesized tuple literal with items (`()` gaining one None would read `(None)`)."""
    return isinstance(node, cst.Tuple) and bool(node.lpar) and bool(node.elements)
