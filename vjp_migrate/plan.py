"""Stage 5: site + ArgInfo -> a RewritePlan, or the reason it cannot be rewritten (pure: no CST building)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify import ARRAY_MODULES
from vjp_migrate.imports import ImportTable
from vjp_migrate.model import ArgInfo, ArgKind, Layout, RewritePlan, Settings, SiteDecision, VjpSite
from vjp_migrate.sites import body_statements, positional_params

RESIDUAL_NAMES = ("res", "residuals", "res_")


class _Returns(cst.CSTVisitor):
    """The function's own return statements (not those of nested functions or lambdas)."""

    def __init__(self) -> None:
        self.returns: list[cst.Return] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)


class _Names(cst.CSTVisitor):
    """Every name loaded or bound in a function, and which ones its own body rebinds."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.bound: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.bound.update(_target_names(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(_target_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bound.update(_target_names(node.target))

    def visit_For(self, node: cst.For) -> None:
        self.bound.update(_target_names(node.target))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bound.update(_target_names(node.target))

    def visit_AsName(self, node: cst.AsName) -> None:
        self.bound.update(_target_names(node.name))


def _target_names(target: cst.CSTNode) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


def own_returns(func: cst.FunctionDef) -> list[cst.Return]:
    visitor = _Returns()
    for stmt in body_statements(func):
        walk.visit(stmt, visitor)
    return visitor.returns


def names_in(func: cst.FunctionDef) -> _Names:
    visitor = _Names()
    for stmt in body_statements(func):
        walk.visit(stmt, visitor)
    return visitor


def _is_bare_value(value: cst.BaseExpression | None, cotangent: str, imports: ImportTable) -> bool:
    if isinstance(value, cst.Call):  # jnp.multiply(g, s) is one array; f_vjp(g) may be a tuple
        return (imports.qualify(value.func) or "").startswith(ARRAY_MODULES)
    return isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)) or (
        isinstance(value, cst.Name) and value.value == cotangent
    )


def inconsistency(site: VjpSite, imports: ImportTable) -> str | None:
    """The VJP004 detail for a rule whose shape does not fit its primal, if any."""
    fwd = site.fwd.node if site.fwd else None
    bwd = site.bwd.node if site.bwd else None
    n_nondiff = len(site.nondiff.positions)
    if not n_nondiff:
        return None  # positions unreadable (negative, strings...): nothing can be judged
    beyond = [p for p in site.nondiff.positions if p >= len(site.params)]
    if beyond and not site.has_varargs:
        return (
            f"nondiff_argnums lists position {beyond[0]}, but `{site.primal.name.value}` takes "
            f"{len(site.params)} positional parameter{'s' if len(site.params) != 1 else ''}"
        )
    if bwd is not None and not isinstance(bwd.params.star_arg, cst.Param):
        count = len(positional_params(bwd))
        if count != n_nondiff + 2:
            return (
                f"bwd `{bwd.name.value}` takes {count} parameters, but JAX calls it with "
                f"{n_nondiff} nondiff argument{'s' if n_nondiff != 1 else ''} + residuals + "
                f"cotangent = {n_nondiff + 2}"
            )
    fwd_varargs = fwd is not None and isinstance(fwd.params.star_arg, cst.Param)
    if fwd is not None and not site.has_varargs and not fwd_varargs and len(positional_params(fwd)) != len(site.params):
        return (
            f"fwd `{fwd.name.value}` takes {len(positional_params(fwd))} parameters but the "
            f"primal `{site.name}` takes {len(site.params)}"
        )
    if bwd is not None and not site.has_varargs and len(site.params) - n_nondiff == 1:
        params = positional_params(bwd)
        cotangent = params[-1] if params else ""
        if any(_is_bare_value(r.value, cotangent, imports) for r in own_returns(bwd)):
            return f"bwd `{bwd.name.value}` returns a bare value; JAX needs a tuple with one cotangent per argument"
    return None


def moved_positions(infos: tuple[ArgInfo, ...], settings: Settings) -> tuple[int, ...]:
    """The arguments fix moves: selected codes only, unsafe ones only with --unsafe-fixes."""
    moved = []
    for info in infos:
        if (info.kind is ArgKind.ARRAY and "VJP001" in settings.select and (info.strong or settings.unsafe_fixes)) or (
            info.kind is ArgKind.UNKNOWN and "VJP002" in settings.select and settings.unsafe_fixes
        ):
            moved.append(info.index)
    return tuple(moved)


def _fresh(taken: set[str]) -> str:
    for name in RESIDUAL_NAMES:
        if name not in taken:
            return name
    index = 2
    while f"res{index}" in taken:
        index += 1
    return f"res{index}"


def _cotangent_slots(site: VjpSite, kept: tuple[int, ...], moved: tuple[int, ...]) -> tuple[int, ...]:
    slots, slot = [], 0
    for index in range(len(site.params)):
        if index in kept:
            continue
        if index in moved:
            slots.append(slot)
        slot += 1
    return tuple(slots)


def _literal_return_problem(value: cst.BaseExpression | None, slots: tuple[int, ...]) -> str | None:
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    slot = 0
    for element in value.elements:
        while slot in slots:
            slot += 1
        if isinstance(element, cst.StarredElement):
            if any(s > slot for s in slots):
                return "a starred cotangent stands before a position that needs None"
            return None
        slot += 1
    return None


def plan_site(site: VjpSite, moved: tuple[int, ...]) -> RewritePlan | str:
    """The rewrite for moving ``moved`` out of nondiff_argnums, or why it cannot be done."""
    if site.problem:
        return site.problem
    if not site.nondiff.literal:
        return site.nondiff.problem or "nondiff_argnums is not a literal"
    for ref in (site.fwd, site.bwd):
        if ref is None or ref.node is None:
            return ref.problem if ref and ref.problem else "the rules were not found"
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    fwd, bwd = site.fwd.node, site.bwd.node
    if bwd.decorators:
        return f"bwd `{bwd.name.value}` is decorated, so its signature cannot change"
    fwd_params, bwd_params = positional_params(fwd), positional_params(bwd)
    if isinstance(bwd.params.star_arg, cst.Param) or bwd.params.kwonly_params:
        return f"bwd `{bwd.name.value}` takes *args or keyword-only parameters"
    order = site.nondiff.positions
    kept = tuple(p for p in order if p not in moved)
    moved_bwd = tuple(bwd_params[order.index(p)] for p in moved)
    bwd_names = names_in(bwd)
    saved = tuple(p for p in moved if bwd_names.counts.get(bwd_params[order.index(p)], 0) > 0)
    if any(p >= len(fwd_params) for p in saved):
        return f"fwd `{fwd.name.value}` takes the argument through *args"
    saved_fwd = tuple(fwd_params[p] for p in saved)
    saved_bwd = tuple(bwd_params[order.index(p)] for p in saved)
    rebound = sorted(set(saved_fwd) & names_in(fwd).bound)
    if rebound:
        return f"fwd `{fwd.name.value}` assigns to `{rebound[0]}` before saving it"
    fwd_returns = own_returns(fwd)
    for ret in fwd_returns:
        value = ret.value
        if not (isinstance(value, cst.Tuple) and len(value.elements) == 2) or any(
            isinstance(e, cst.StarredElement) for e in value.elements
        ):
            text = cst.Module([]).code_for_node(value) if value is not None else "nothing"
            return f"fwd `{fwd.name.value}` returns `{text}`, not an `(output, residuals)` pair"
    if not fwd_returns:
        return f"fwd `{fwd.name.value}` has no return statement"
    slots = _cotangent_slots(site, kept, moved)
    bwd_returns = own_returns(bwd)
    leading = list(slots) == list(range(len(slots)))
    for ret in bwd_returns:
        if not leading and not isinstance(ret.value, (cst.Tuple, cst.List, cst.Name)):
            # (*f(g)[:k], None, *f(g)[k:]) would evaluate the call twice.
            text = cst.Module([]).code_for_node(ret.value) if ret.value is not None else "nothing"
            return f"bwd `{bwd.name.value}` returns `{text}`, and None is needed between its cotangents"
        problem = _literal_return_problem(ret.value, slots)
        if problem:
            return f"in bwd `{bwd.name.value}`, {problem}"
    residual = bwd_params[len(order)]
    taken = set(bwd_names.counts) | (set(bwd_params) - {residual})
    layout, new_param, old_name, unpack = _layout(site, saved_bwd, residual, bwd, bwd_names.counts, fwd_returns, taken)
    if (
        layout in (Layout.NONE, Layout.GENERAL)
        and new_param != saved_bwd[0]
        and not isinstance(bwd.body, cst.IndentedBlock)
    ):
        return f"bwd `{bwd.name.value}` is written on one line"
    return RewritePlan(
        site=site,
        moved=moved,
        kept=kept,
        saved_fwd_names=saved_fwd,
        saved_bwd_names=saved_bwd,
        moved_bwd_params=moved_bwd,
        layout=layout,
        residual_param=new_param,
        old_residual_name=old_name,
        tuple_unpack=unpack,
        fwd_returns=tuple(fwd_returns),
        bwd_returns=tuple(bwd_returns),
        none_slots=slots,
    )


def _layout(
    site: VjpSite,
    saved_bwd: tuple[str, ...],
    residual: str,
    bwd: cst.FunctionDef,
    counts: dict[str, int],
    fwd_returns: list[cst.Return],
    taken: set[str],
) -> tuple[Layout, str, str, cst.Assign | None]:
    if not saved_bwd:
        return Layout.UNCHANGED, residual, residual, None
    residual_used = counts.get(residual, 0) > 0
    values = [r.value.elements[1].value for r in fwd_returns if isinstance(r.value, cst.Tuple)]
    if not residual_used and all(isinstance(v, cst.Name) and v.value == "None" for v in values):
        if len(saved_bwd) == 1:
            return Layout.NONE, saved_bwd[0], residual, None
        return Layout.NONE, _fresh(taken), residual, None
    unpack = _single_unpack(bwd, residual, counts)
    if unpack is not None:
        width = len(unpack.targets[0].target.elements)  # type: ignore[attr-defined]
        if all(
            isinstance(v, cst.Tuple)
            and v.lpar
            and len(v.elements) == width
            and not any(isinstance(e, cst.StarredElement) for e in v.elements)
            for v in values
        ):
            return Layout.TUPLE, residual, residual, unpack
    return Layout.GENERAL, _fresh(taken), residual if residual_used else "_", None


def _single_unpack(bwd: cst.FunctionDef, residual: str, counts: dict[str, int]) -> cst.Assign | None:
    """The one plain `a, b = res` statement, when res is used nowhere else."""
    if counts.get(residual, 0) != 1:
        return None
    for stmt in body_statements(bwd):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, (cst.Tuple, cst.List))
                and all(
                    isinstance(e.value, cst.Name) and not isinstance(e, cst.StarredElement)
                    for e in small.targets[0].target.elements
                )
                and isinstance(small.value, cst.Name)
                and small.value.value == residual
            ):
                return small
    return None


def decide(site: VjpSite, infos: tuple[ArgInfo, ...], settings: Settings, imports: ImportTable) -> SiteDecision:
    """Combine classification, settings and rewritability into what check and fix do."""
    broken = inconsistency(site, imports)
    moved = moved_positions(infos, settings)
    if broken is not None:
        return SiteDecision(site, infos, moved, None, None, broken)
    candidates = tuple(i.index for i in infos if i.kind is not ArgKind.STATIC)
    if not candidates:
        return SiteDecision(site, infos, moved, None, None, None)
    # Rewritability is judged for every non-static argument, so check's verdict does not
    # depend on --unsafe-fixes; the plan itself moves only what the settings allow.
    probe = plan_site(site, candidates)
    if isinstance(probe, str):
        return SiteDecision(site, infos, moved, None, probe, None)
    if not moved:
        plan: RewritePlan | str | None = None
    else:  # usually every candidate moves: the probe is the plan
        plan = probe if moved == candidates else plan_site(site, moved)
    if isinstance(plan, str):
        return SiteDecision(site, infos, moved, None, plan, None)
    return SiteDecision(site, infos, moved, plan, None, None)
