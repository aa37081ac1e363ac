"""Stage 8: site decisions -> Diagnostics (codes, messages and positions; no decisions made here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from vjp_migrate.codes import ALIAS_KEPT, BY_CODE, format_message
from vjp_migrate.model import ArgInfo, ArgKind, Diagnostic, FixSafety, Settings, SiteDecision
from vjp_migrate.plan.aliases import importable, left_unused
from vjp_migrate.sites import unnamed_position
from vjp_migrate.sites.scopes import str_literals

Span = tuple[int, int, int, int]  # line, column (1-based), end line, end column
SpanOf = Callable[[cst.CSTNode], Span]


def _param_node(decision: SiteDecision, index: int) -> cst.CSTNode:
    site = decision.site
    if site.primal is None or site.primal_from is not None:  # no def here: the nondiff_argnums entry
        return _listed_at(site.nondiff.argnums_arg, index) or site.anchor
    params = [*site.primal.params.posonly_params, *site.primal.params.params]
    if index < len(params):
        return params[index].name
    star = site.primal.params.star_arg  # the position falls in `*args`
    return star.name if isinstance(star, cst.Param) else site.anchor


def _listed_in(decision: SiteDecision, info: ArgInfo | None) -> str:
    """The keyword that lists the argument, as the user wrote it: nondiff_argnames when it names it."""
    argnames = decision.site.nondiff.argnames_arg
    names = str_literals(argnames.value) if argnames is not None else None
    listed = info is not None and names is not None and info.name in names
    return "nondiff_argnames" if listed or (argnames and not decision.site.nondiff.argnums_arg) else "nondiff_argnums"


def _listed_at(argnums: cst.Arg | None, index: int) -> cst.CSTNode | None:
    if argnums is None:
        return None
    value = argnums.value
    items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
    for item in items:
        if isinstance(item, cst.Integer) and int(item.value, 0) == index:
            return item
    return argnums


def _diagnostic(
    code: str,
    decision: SiteDecision,
    node: cst.CSTNode,
    span_of: SpanOf,
    path: str,
    info: ArgInfo | None,
    fixable: bool,
    detail: str = "",
) -> Diagnostic:
    line, column, end_line, end_column = span_of(node)
    blocked = bool(detail and BY_CODE[code].blocked)  # a VJP002 whose rule cannot be rewritten
    if blocked or (info is not None and not info.fixable):
        safety = FixSafety.NONE
    elif info is None or info.strong or code != "VJP001":
        safety = BY_CODE[code].fix_safety
    else:
        safety = FixSafety.UNSAFE
    return Diagnostic(
        code=code,
        message=format_message(
            code,
            blocked,
            info is not None and unnamed_position(decision.site, info.index) is not None,
            function=decision.site.qualname,
            argument=info.name if info else "",
            index=info.index if info else "",
            detail=detail,
            nondiff_argnums=_listed_in(decision, info),
        ),
        path=path,
        line=line,
        column=column,
        end_line=end_line,
        end_column=end_column,
        function=decision.site.qualname,
        argument=info.name if info else None,
        index=info.index if info else None,
        fixable=fixable,
        fix_safety=safety,
        reasons=info.evidence if info else (),
    )


def diagnostics_for(decision: SiteDecision, settings: Settings, span_of: SpanOf, path: str) -> list[Diagnostic]:
    """One diagnostic per offending argument (VJP001-003), or one per site (VJP004)."""
    if decision.inconsistency is not None:
        if "VJP004" not in settings.select:
            return []
        return [
            _diagnostic("VJP004", decision, decision.site.anchor, span_of, path, None, False, decision.inconsistency)
        ]
    found: list[Diagnostic] = []
    moved = decision.plan.moved if decision.plan else ()
    for info in decision.infos:
        if info.kind is ArgKind.ARRAY:
            code = "VJP003" if decision.problem else "VJP001"
        elif info.kind is ArgKind.UNKNOWN:
            code = "VJP002"
        else:
            continue
        if code in settings.select:
            found.append(
                _diagnostic(
                    code,
                    decision,
                    _param_node(decision, info.index),
                    span_of,
                    path,
                    info,
                    info.index in moved,
                    (decision.blocked if code == "VJP002" else None) or decision.problem or "",
                )
            )
    return found


def with_alias_notes(decisions: Sequence[SiteDecision], diagnostics: Sequence[Diagnostic]) -> tuple[Diagnostic, ...]:
    """``diagnostics``, each one the fix fixes through a module alias of the partial that it leaves
    unused but keeps for the modules that may import it (plan.aliases) noting that the alias
    still lists the argument."""
    kept = {id(a.assign) for a in left_unused([d.plan for d in decisions if d.plan]) if importable(a)}
    notes: dict[tuple[str, int], str] = {}
    for decision in decisions:
        alias = decision.site.alias
        if decision.plan is None or alias is None or id(alias.assign) not in kept:
            continue
        for info in decision.infos:
            if info.index in decision.plan.moved:
                keyword = _listed_in(decision, info)
                listed = f"`{info.name}`" if keyword == "nondiff_argnames" else f"position {info.index}"
                text = ALIAS_KEPT.format(alias=alias.name, nondiff_argnums=keyword, listed=listed)
                notes[(decision.site.qualname, info.index)] = text
    return tuple(
        replace(d, notes=(*d.notes, note)) if d.index is not None and (note := notes.get((d.function, d.index))) else d
        for d in diagnostics
    )
