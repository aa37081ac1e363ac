"""Plan, step 7: rules shared by several sites or used elsewhere in the module, and the groups of
plans one rewrite must apply together."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted
from vjp_migrate.model import FunctionRef, Layout, RewritePlan, SiteDecision
from vjp_migrate.sites import body_statements, positional_params


def rule_change(decision: SiteDecision, role: str) -> tuple[object, ...]:
    """What one site's plan does to its fwd or bwd: equal for users that change it the same way."""
    plan = decision.plan
    if decision.inconsistency is not None or decision.problem is not None:
        return ("cannot be rewritten",)
    if plan is None:
        return ("unchanged",)
    jit = tuple((id(e.decorator), e.static_argnums, e.static_argnames) for e in plan.jit_edits)
    if role == "fwd":
        return (plan.moved, plan.saved_fwd_names, plan.layout, jit)
    return (
        plan.moved_bwd_params,
        plan.saved_bwd_names,
        tuple((id(t), name) for t, name in plan.reused),
        plan.read_at,
        plan.layout,
        plan.residual_param,
        plan.old_residual_name,
        plan.none_slots,
        id(plan.tuple_unpack),
        jit,
    )


def _describe(decision: SiteDecision, role: str, details: bool) -> str:
    plan, site = decision.plan, decision.site
    name = f"`{site.qualname}`"
    if decision.inconsistency is not None or decision.problem is not None:
        return f"{name} cannot be rewritten ({decision.inconsistency or decision.problem})"
    ref = site.fwd if role == "fwd" else site.bwd
    assert ref is not None and ref.node is not None
    params = positional_params(ref.node)[ref.bound_args :]
    order = site.nondiff.positions
    if role == "fwd":
        moved = [params[p] for p in plan.moved if p < len(params)] if plan else []
        kept = [params[p] for p in order if p < len(params) and params[p] not in moved]
    else:
        moved = list(plan.moved_bwd_params) if plan else []
        kept = [p for p in params[: len(order)] if p not in moved]
    parts = [f"moves {_names(moved)}"] if moved else []
    parts += [f"keeps {_names(kept)}"] if kept else []
    text = f"{name} {' and '.join(parts) or 'moves nothing'}"
    if details and plan is not None:
        slots = ", ".join(map(str, plan.none_slots))
        text += f" (None at cotangent position {slots}, {plan.layout.value} residual)"
    return text


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def reconcile_shared(decisions: tuple[SiteDecision, ...]) -> tuple[SiteDecision, ...]:
    """A fwd or bwd used by several custom_vjp functions is rewritten once, and only when every
    user's plan changes it the same way; otherwise each user with a plan gets VJP003."""
    users: dict[int, tuple[str, str, list[int]]] = {}
    for index, decision in enumerate(decisions):
        for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd)):
            if ref is not None and ref.node is not None and ref.lambda_node is None:
                entry = users.setdefault(id(ref.node), (role, ref.node.name.value, []))
                if index not in entry[2]:
                    entry[2].append(index)
    result = list(decisions)
    for role, rule, group in users.values():
        if len(group) < 2 or len({rule_change(decisions[i], role) for i in group}) == 1:
            continue
        names = ", ".join(f"`{decisions[i].site.qualname}`" for i in group)
        plain = [_describe(decisions[i], role, False) for i in group]
        details = len({p.split(" ", 1)[1] for p in plain}) == 1
        why = "; ".join(_describe(decisions[i], role, details) for i in group)
        detail = f"{role} `{rule}` is shared by {names}, which would change it differently: {why}"
        for i in group:
            decision = result[i]
            if _plannable(decision):
                result[i] = replace(decision, plan=None, problem=detail)
    return tuple(result)


def plan_groups(plans: list[RewritePlan]) -> list[list[RewritePlan]]:
    """Plans that must be applied together: those sharing a fwd or bwd, in first-seen order."""
    groups: list[tuple[set[int], list[RewritePlan]]] = []
    for plan in plans:
        keys = {id(r.node) for r in (plan.site.fwd, plan.site.bwd) if r is not None and r.node is not None}
        joined = [g for g in groups if g[0] & keys]
        merged: tuple[set[int], list[RewritePlan]] = (keys, [])
        for group in joined:
            merged[0].update(group[0])
            merged[1].extend(group[1])
        merged[1].append(plan)
        at = groups.index(joined[0]) if joined else len(groups)
        groups = [g for g in groups if g not in joined]
        groups.insert(min(at, len(groups)), merged)
    return [plans_ for _, plans_ in groups]


class _OtherLoads(ast.NodeVisitor):
    """Lines where ``names`` are read at module level or in functions that do not bind them,
    outside the `<owner>.defvjp(...)` calls of ``owners``: called by name, or used otherwise.
    A dotted name that ends in one of them (`ops.clip_bwd`, another module's) is kept apart,
    under its whole spelling."""

    def __init__(self, names: set[str], owners: set[str | None]) -> None:
        self.names, self.owners = names, owners
        self.shadowed: list[set[str]] = []
        self.lines: dict[str, list[int]] = {}  # read as a value
        self.called: dict[str, list[int]] = {}  # called by name
        self.residual_read: dict[str, list[int]] = {}  # called, and more than the output `[0]` kept
        self.output_only: set[int] = set()  # calls whose result is only indexed `[0]` or unpacked into `out, _`

    def uses(self, name: str, role: str, dotted: bool = False) -> list[int]:
        """The lines where the rewrite of ``name``, the site's ``role``, changes what a use gets:
        any call of bwd (its signature changes), a call of fwd whose residuals are kept (they
        change), and any other read of either; with ``dotted`` (a method), `obj.<name>` too."""
        calls = self.called if role == "bwd" else self.residual_read
        found = self.lines.get(name, []) + calls.get(name, [])
        if dotted:
            found += [
                line
                for table in (self.lines, calls)
                for key, at in table.items()
                if key.endswith(f".{name}")
                for line in at
            ]
        return sorted(found)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0:
            self.output_only.add(id(node.value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            residuals = target.elts[1]
            if isinstance(residuals, ast.Name) and residuals.id == "_":
                self.output_only.add(id(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        owner = _defvjp_owner(node.func)
        if owner is not None and owner in self.owners:
            return
        spelled = self._spelled(node.func)
        if spelled is not None:
            self.called.setdefault(spelled, []).append(node.lineno)
            if id(node) not in self.output_only:
                self.residual_read.setdefault(spelled, []).append(node.lineno)
            for child in (*node.args, *node.keywords):
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        spelled = self._spelled(node)
        if spelled is None:
            self.generic_visit(node)
        elif isinstance(node.ctx, ast.Load):
            self.lines.setdefault(spelled, []).append(node.lineno)

    def _spelled(self, node: ast.expr) -> str | None:
        """``node``'s name when it is one of ``names`` read here, or a dotted name ending in one."""
        if isinstance(node, ast.Name):
            return node.id if self._seen(node) else None
        if not isinstance(node, ast.Attribute) or node.attr not in self.names:
            return None
        owner = node.value
        while isinstance(owner, ast.Attribute):
            owner = owner.value
        return ast.unparse(node) if isinstance(owner, ast.Name) else None

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
                    bound.add(inner.id)
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.add(inner.name)
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
        self.shadowed.append(bound & self.names)
        for statement in body:
            self.visit(statement)
        self.shadowed.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _seen(self, node: ast.Name) -> bool:
        return isinstance(node.ctx, ast.Load) and node.id in self.names and not any(node.id in s for s in self.shadowed)

    def visit_Name(self, node: ast.Name) -> None:
        if self._seen(node):
            self.lines.setdefault(node.id, []).append(node.lineno)


def _defvjp_owner(func: ast.expr) -> str | None:
    """``f`` for ``f.defvjp`` and ``getattr(f, "defvjp")``."""
    if isinstance(func, ast.Attribute) and func.attr == "defvjp":
        return ast.unparse(func.value)
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and isinstance(func.args[1], ast.Constant)
        and func.args[1].value == "defvjp"
    ):
        return ast.unparse(func.args[0])
    return None


def rules_used_elsewhere(
    decisions: tuple[SiteDecision, ...], module: cst.Module, text: str
) -> tuple[SiteDecision, ...]:
    """A module-level fwd or bwd (or a method of a module-level class, read as `obj.<name>`) that
    something other than the sites' defvjp calls uses would be broken by the rewrite: its users
    get VJP003. A use is any read of bwd or call of it, and any read of fwd or call that keeps
    more than its output (`f_fwd(x)[0]` and `out, _ = f_fwd(x)` do not); a fwd the plan leaves
    as it is (``leaves_fwd_unchanged``) is not looked for. ``text`` is ``module``'s source (its
    ``.code`` would generate it all again)."""
    top = {id(statement) for statement in module.body}
    # a method of a module-level class is a rule through `self.<name>` (read as `obj.<name>` too)
    methods = {id(s) for c in module.body if type(c) is cst.ClassDef for s in body_statements(c)}
    rules = [  # (index of the decision, role, def): module-level rules of sites that would be rewritten
        (index, role, node)
        for index, decision in enumerate(decisions)
        if _plannable(decision)
        for role, _, node in rewritten_rules(decision)
        if id(node) in top or id(node) in methods
    ]
    if not rules:
        return decisions
    calls = {id(d.site.defvjp): d.site.defvjp for d in decisions if d.site.defvjp is not None}
    owned = {key: _owner(call.func, module) for key, call in calls.items()}
    names = {node.name.value for _, _, node in rules}
    if _named_only_by_defs_and(names, [calls[key] for key, owner in owned.items() if owner is not None], module, text):
        return decisions
    visitor = _OtherLoads(names, set(owned.values()))
    try:
        visitor.visit(ast.parse(text))
    except SyntaxError:  # newer syntax than this Python's ast reads: nothing is judged
        return decisions
    result = list(decisions)
    for index, role, node in rules:
        if result[index] is not decisions[index]:
            continue  # its fwd is used elsewhere already: that is the problem named
        # fwd keeps its signature and output: a call that keeps only the output (a primal written
        # `return f_fwd(x)[0]`) does not see the residual change; `f_fwd(x)[1]` does.
        name = node.name.value
        lines = visitor.uses(name, role, dotted=id(node) in methods)
        if lines:
            problem = (
                f"{role} `{name}` is also used on line {lines[0]}, not only by defvjp, "
                "and the rewrite would change what that use gets"
            )
            result[index] = replace(result[index], plan=None, problem=problem)
    return tuple(result)


def rewritten_rules(decision: SiteDecision) -> Iterator[tuple[str, FunctionRef, cst.FunctionDef]]:
    """("fwd" or "bwd", the rule, its def) for each def of the site that its plan changes, where
    another use would see it: not a lambda, not a fwd the plan leaves as it is."""
    for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd)):
        if ref is None or ref.node is None or ref.lambda_node is not None:
            continue
        if role == "bwd" or not leaves_fwd_unchanged(decision):
            yield role, ref, ref.node


def leaves_fwd_unchanged(decision: SiteDecision) -> bool:
    """Whether the site's plan leaves its fwd as it is (bwd never reads a moved argument, so
    nothing is saved, and fwd's jax.jit keeps its options): then no other use of fwd is at stake."""
    plan, fwd = decision.plan, decision.site.fwd
    if plan is None or plan.layout is not Layout.UNCHANGED or fwd is None or fwd.node is None:
        return False
    return not any(edit.decorator is decorator for edit in plan.jit_edits for decorator in fwd.node.decorators)


def loads_besides_defvjp(
    tree: ast.Module, names: set[str]
) -> tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]]]:
    """The lines of another module that read ``names`` (bare, or at the end of a dotted name:
    `ops.clip_bwd`) other than in a ``defvjp`` call (another site's would be: a shared rule,
    judged apart), as ``rules_used_elsewhere`` reads the site's own module: by spelling, those
    read as a value, those called, and the calls that keep more than the output `[0]` (what
    fwd's rewrite changes)."""
    owners = {_defvjp_owner(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)} - {None}
    visitor = _OtherLoads(names, owners)
    visitor.visit(tree)
    return visitor.lines, visitor.called, visitor.residual_read


def _owner(func: cst.BaseExpression, module: cst.Module) -> str | None:
    """``_defvjp_owner`` of the ast of ``func``: read off the node for ``f.defvjp`` (what
    ast.unparse gives a dotted name; an identifier that is not ASCII may be NFKC-normalized)."""
    if type(func) is cst.Attribute and func.attr.value == "defvjp":  # `type() is`: see imports.node_types
        owner = dotted(func.value)
        if owner is not None and owner.isascii():
            return owner
    return _defvjp_owner(_expression(module.code_for_node(func)))


def _named_only_by_defs_and(names: set[str], calls: list[cst.Call], module: cst.Module, text: str) -> bool:
    """Whether every occurrence of ``names`` in ``text`` is a module-level def's name or a name
    inside ``calls`` (defvjp calls _OtherLoads skips): then no other use exists, and the ast walk
    is not needed. Occurrences are counted in the raw text, which holds one for every name token
    (and maybe more: comments, longer names), so equal counts prove it; an identifier that is
    not ASCII may be an NFKC spelling of a name, so such a text is never judged here."""
    if not text.isascii():
        return False
    known = dict.fromkeys(names, 0)
    for statement in module.body:
        if type(statement) is cst.FunctionDef and statement.name.value in known:  # see imports.node_types
            known[statement.name.value] += 1
        elif type(statement) is cst.SimpleStatementLine:
            for small in statement.body:  # disjoint and not nested: each token is counted once
                if type(small) is cst.Expr and any(small.value is call for call in calls):
                    walk.visit(small.value, _NameCount(known))
    return all(text.count(name) == seen for name, seen in known.items())


class _NameCount(cst.CSTVisitor):
    """Counts the Name tokens whose value is a key of ``counts``."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.counts:
            self.counts[node.value] += 1


def _plannable(decision: SiteDecision) -> bool:
    """A plan, or none only because the settings move nothing (as reconcile_shared counts them)."""
    return decision.plan is not None or (decision.problem is None and decision.inconsistency is None)


def _expression(code: str) -> ast.expr:
    """``code`` (an expression, maybe spread over lines) as an ast node."""
    return ast.parse(f"(\n{code}\n)", mode="eval").body
