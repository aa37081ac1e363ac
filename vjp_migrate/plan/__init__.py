"""Stage 7: site + ArgInfo -> a RewritePlan, or the reason it cannot be rewritten (pure: no CST
building but the analysis views of type comments).

The steps, in data-flow order: ``bodies`` (what a rule's body holds), ``returned`` (what bwd
returns, through the module's helpers), ``consistency`` (whether the rules agree), ``endings``
(whether bwd can end without a return), ``cotangents``, ``type_comments`` (the rules' PEP 484
type comments read as annotations), ``annotations``, ``residuals`` and ``jit`` (each part of the
plan), ``closures`` (a moved argument captured by a function passed at a static position),
``shared`` (rules several sites or other code use), ``aliases`` (module aliases of the partial
the plans leave unused); ``decide`` and ``plan_site`` here put it together. ``needs`` (which
plans need another site's, for `fix --interactive`) comes after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import (
    ArgInfo,
    ArgKind,
    Layout,
    NondiffAfter,
    RewritePlan,
    Settings,
    SiteDecision,
    VjpSite,
)
from vjp_migrate.plan.aliases import imported_problem
from vjp_migrate.plan.annotations import returns_only_lists, retyped
from vjp_migrate.plan.bodies import bindings_of, code_of, dropped_dels, names_in, param_names, returns_of
from vjp_migrate.plan.closures import ImportedCallees, static_capture
from vjp_migrate.plan.consistency import inconsistency, repeated_param
from vjp_migrate.plan.cotangents import bwd_return_plan, cotangent_count, cotangent_slots, symbolic_zeros
from vjp_migrate.plan.jit import jit_edits
from vjp_migrate.plan.residuals import (
    TEMP_NAMES,
    already_saved,
    fresh_name,
    fwd_residual_assign,
    indexed_reads,
    layout_of,
)
from vjp_migrate.plan.returned import Helpers, Returned, unsure_cotangents
from vjp_migrate.plan.type_comments import read_type_comments, retyped_with_comments
from vjp_migrate.sites import own_returns, positional_params, varargs_owner
from vjp_migrate.wording import spoken


def moved_positions(infos: tuple[ArgInfo, ...], settings: Settings) -> tuple[int, ...]:
    """The arguments fix moves: selected codes only, unsafe ones only with --unsafe-fixes."""
    moved = []
    for info in infos:
        if not info.fixable:
            continue
        if (info.kind is ArgKind.ARRAY and "VJP001" in settings.select and (info.strong or settings.unsafe_fixes)) or (
            info.kind is ArgKind.UNKNOWN and "VJP002" in settings.select and settings.unsafe_fixes
        ):
            moved.append(info.index)
    return tuple(moved)


def _unsaved(fwd: cst.FunctionDef, saved: tuple[str, ...], bound: set[str], deleted: set[str]) -> str | None:
    """Why fwd cannot save its arguments ``saved`` at its returns: it rebinds or deletes them first.
    Names in position order: each finding names its own first."""
    rebound = [f"`{name}`" for name in saved if name in bound]
    gone = [f"`{name}`" for name in saved if name in deleted and name not in bound]
    if not rebound and not gone:
        return None
    does = [f"assigns to {spoken(rebound)}"] if rebound else []
    does += [f"deletes {spoken(gone)}"] if gone else []
    them = "them" if len(rebound) + len(gone) > 1 else "it"
    return f"fwd `{fwd.name.value}` {' and '.join(does)} before saving {them}"


def plan_site(
    site: VjpSite,
    moved: tuple[int, ...],
    imports: ImportTable,
    callees: Mapping[str, NondiffAfter] | None = None,
    imported: ImportedCallees | None = None,
) -> RewritePlan | str:
    """The rewrite for moving ``moved`` out of nondiff_argnums, or why it cannot be done.
    ``callees``: the module's custom_vjp functions by name, with the positions the fix keeps
    nondiff (``closures.nondiff_after``); the site's own come from ``moved``. ``imported``: those
    of other files (``closures.static_capture``)."""
    if site.problem:
        return site.problem
    if not site.nondiff.literal and site.nondiff.constant is None:
        return site.nondiff.problem or "nondiff_argnums is not a literal"
    starred = [p for p in moved if p >= len(site.params)]
    star = varargs_owner(site)
    if starred and star is not None:
        return f"position {starred[0]} falls in `*{star[0]}` of {star[1]}, which the rewrite does not handle"
    for ref in (site.fwd, site.bwd):
        if ref is None or ref.node is None:
            return ref.problem if ref and ref.problem else "the rules were not found"
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    fwd, bwd = site.fwd.node, site.bwd.node
    for func in (f for f in (site.primal, fwd, bwd) if f is not None):
        if (twice := repeated_param(func)) is not None:
            return f"`{func.name.value}` has two parameters named `{twice}`, which Python rejects"
    if site.bwd.decorator_problem:
        return site.bwd.decorator_problem
    if (symbolic := symbolic_zeros(site.defvjp)) is not None:
        return (
            f"defvjp is called with `symbolic_zeros={symbolic}`: fwd would get the moved arguments "
            "wrapped in CustomVJPPrimal (`.value`, `.perturbed`), not as arrays"
        )
    # A functools.partial binds the leading parameters; JAX's arguments fill the rest.
    fwd_params = positional_params(fwd)[site.fwd.bound_args :]
    bwd_params = positional_params(bwd)[site.bwd.bound_args :]
    if isinstance(bwd.params.star_arg, cst.Param):
        return f"bwd `{bwd.name.value}` takes *{bwd.params.star_arg.name.value}"
    required = [p.name.value for p in bwd.params.kwonly_params if p.default is None]
    if required:  # JAX passes bwd's arguments by position: a call would raise TypeError
        return (
            f"bwd `{bwd.name.value}` has a keyword-only parameter `{required[0]}` without a default, "
            "which JAX never passes"
        )
    bwd_comments = read_type_comments(site.bwd, "bwd", imports)
    if isinstance(bwd_comments, str):  # its parameters change, and so would its signature's types
        return bwd_comments
    order = site.nondiff.positions
    kept = tuple(p for p in order if p not in moved)
    if (alias_problem := imported_problem(site, kept)) is not None:
        return alias_problem
    moved_bwd = tuple(bwd_params[order.index(p)] for p in moved)
    bwd_names = names_in(bwd)
    read = tuple(p for p in moved if bwd_names.loads(bwd_params[order.index(p)]) > 0)
    if any(p >= len(fwd_params) for p in read):
        return f"fwd `{fwd.name.value}` takes the argument through *args"
    fwd_names = names_in(fwd)
    fwd_bound = fwd_names.bound
    fwd_walk = returns_of(fwd)  # its returns, and its own assignments (where an alias of an argument may be bound)
    fwd_returns = fwd_walk.returns
    reused = already_saved(
        read, order, fwd_params, bwd_params, bwd, bwd_names.counts, fwd, fwd_returns, fwd_bound, fwd_walk.assigns
    )
    saved = tuple(p for p in read if p not in reused)
    residual = bwd_params[len(order)]
    indexed = None
    if saved and site.bwd.lambda_node is None:
        indexed = indexed_reads(saved, fwd_params, residual, bwd, fwd, fwd_returns, fwd_bound, fwd_walk.assigns)
    read_at = tuple(zip((bwd_params[order.index(p)] for p in saved), indexed, strict=True)) if indexed else ()
    saved = () if indexed else saved
    saved_fwd = tuple(fwd_params[p] for p in saved)
    saved_bwd = tuple(bwd_params[order.index(p)] for p in saved)
    if (unsaved := _unsaved(fwd, saved_fwd, fwd_bound, fwd_names.deleted)) is not None:
        return unsaved
    for ret in fwd_returns:
        value = ret.value
        elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()
        if len(elements) != 2 or any(isinstance(e, cst.StarredElement) for e in elements):
            return f"fwd `{fwd.name.value}` returns `{code_of(value)}`, not an `(output, residuals)` pair"
        if isinstance(value, cst.List):  # JAX takes a list pair too
            return (
                f"fwd `{fwd.name.value}` returns the list `{code_of(value)}`, a pair JAX accepts but that the "
                "rewrite does not extend: write it as a tuple `(output, residuals)`"
            )
    if not fwd_returns:
        return f"fwd `{fwd.name.value}` has no return statement"
    slots = cotangent_slots(site, kept, moved)
    bwd_bindings = bindings_of(bwd)
    returned = bwd_return_plan(bwd, slots, cotangent_count(site, kept), bwd_bindings, bwd_names.counts, imports)
    if isinstance(returned, str):
        return returned
    temp_returns, starred_lengths, literals = returned
    taken = set(bwd_names.counts) | (param_names(bwd) - {residual})
    layout, new_param, old_name, unpack = layout_of(saved_bwd, residual, bwd, bwd_names.counts, fwd_returns, taken)
    needs_unpack = layout in (Layout.NONE, Layout.GENERAL) and new_param != saved_bwd[0]
    def_name = site.bwd.def_name if needs_unpack and site.bwd.lambda_node is not None else None
    if needs_unpack and def_name is None and not isinstance(bwd.body, cst.IndentedBlock):
        return f"bwd `{bwd.name.value}` is written on one line"
    fwd_assign = fwd_residual_assign(fwd, fwd_returns, unpack) if layout is Layout.BOUND else None
    if fwd_assign is not None:
        layout = Layout.VARIABLE
    fwd_comments = read_type_comments(site.fwd, "fwd", imports)
    if isinstance(fwd_comments, str):
        if layout is not Layout.UNCHANGED:  # its return type changes with the residual
            return fwd_comments
        fwd_comments = None
    temp_name = fresh_name(taken | {new_param, residual}, TEMP_NAMES) if temp_returns else ""
    if (captured := static_capture(site, moved, moved_bwd, callees or {}, imports, imported)) is not None:
        return captured
    edits = jit_edits(site, moved, moved_bwd, residual, new_param)
    if isinstance(edits, str):
        return edits
    unread = {bwd_params[order.index(p)] for p in moved if p not in read}
    if layout is Layout.NONE:  # the old residual (always None, never read) leaves the signature
        unread.add(residual)
    lists = returns_only_lists(own_returns(bwd), literals)
    retyped_nodes, type_comments = retyped_with_comments(
        site,
        (fwd_comments, bwd_comments),
        lambda seen: retyped(seen, layout, saved_fwd, saved_bwd, unpack, slots, lists, imports),
    )
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
        bwd_returns=tuple(r for r in own_returns(bwd) if id(r) not in literals),
        cotangent_literals=tuple({id(a): a for a in literals.values()}.values()),
        none_slots=slots,
        fwd_assign=fwd_assign,
        temp_name=temp_name,
        temp_returns=tuple(temp_returns),
        starred_lengths=tuple(sorted(starred_lengths.items())),
        dels=dropped_dels(bwd, unread),
        reused=tuple(rename for renames in reused.values() for rename in renames),
        read_at=read_at,
        jit_edits=edits,
        bwd_def_name=def_name,
        retyped=retyped_nodes,
        type_comments=type_comments,
    )


def decide(
    site: VjpSite,
    infos: tuple[ArgInfo, ...],
    settings: Settings,
    imports: ImportTable,
    helpers: Helpers,
    callees: Mapping[str, NondiffAfter] | None = None,
    imported: ImportedCallees | None = None,
) -> SiteDecision:
    """Combine classification, settings and rewritability into what check and fix do
    (``helpers``: the defs a call in a rule may reach, followed for what bwd returns;
    ``callees`` and ``imported``: as ``plan_site`` takes them)."""
    returned = Returned(imports, helpers if site.bwd is None or site.bwd.module is None else None)
    broken = inconsistency(site, imports, returned)
    infos = unsure_cotangents(site, infos, returned, helpers)
    moved = moved_positions(infos, settings)
    if broken is not None:
        return SiteDecision(site, infos, moved, None, None, broken)
    candidates = tuple(i.index for i in infos if i.kind is not ArgKind.STATIC)
    if not candidates:
        return SiteDecision(site, infos, moved, None, None, None)
    # Rewritability is judged for every non-static argument, so check's verdict does not
    # depend on --unsafe-fixes; the plan itself moves only what the settings allow.
    probe = plan_site(site, candidates, imports, callees, imported)
    arrays = tuple(i.index for i in infos if i.kind is ArgKind.ARRAY)
    alone = (
        plan_site(site, arrays, imports, callees, imported)
        if isinstance(probe, str) and arrays and arrays != candidates
        else None
    )
    blocked: str | None = None
    if isinstance(probe, str) and alone is not None:
        # What blocks moving the unknown arguments too need not block the arrays alone: then the
        # unknown ones stay, with the reason, whatever --unsafe-fixes says; the arrays' VJP003,
        # if any, names what blocks them.
        infos = tuple(replace(i, fixable=False) if i.kind is ArgKind.UNKNOWN else i for i in infos)
        blocked, candidates, probe, moved = probe, arrays, alone, moved_positions(infos, settings)
    if isinstance(probe, str):
        return SiteDecision(site, infos, moved, None, probe, None, blocked)
    if not moved:
        plan: RewritePlan | str | None = None
    else:  # usually every candidate moves: the probe is the plan
        plan = probe if moved == candidates else plan_site(site, moved, imports, callees, imported)
    if isinstance(plan, str):
        return SiteDecision(site, infos, moved, None, plan, None)
    if plan is not None and settings.line_length != plan.line_length:
        plan = replace(plan, line_length=settings.line_length)
    return SiteDecision(site, infos, moved, plan, None, None, blocked)
