"""Plan, step 8 (`fix --interactive`): the plans that are correct only with another site's plan
applied too, and the order to offer the groups of plans in.

``api``'s rounds plan a site that passes a moved argument to another custom_vjp of the module on
the hope that the other site's plan moves that position too (plan.closures). Applied without that
plan, the moved argument would be a Tracer in a static position: so a plan is asked about after
the plans it needs (plans that need each other, together), and not at all once one of them is
declined.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import RewritePlan, SiteDecision
from vjp_migrate.plan.closures import nondiff_applied, static_capture

Needs = dict[int, dict[int, str]]  # plan index -> {index of a plan it needs: why}


@dataclass(frozen=True)
class Question:
    """Plans applied together (one answer), and the earlier questions whose plans they need."""

    plans: tuple[RewritePlan, ...]
    needs: tuple[tuple[int, str], ...]  # (index of an earlier question, why its plans are needed)


def plan_needs(decisions: Sequence[SiteDecision], plans: Sequence[RewritePlan], imports: ImportTable) -> Needs:
    """For each of ``plans`` (those that would be applied, of ``decisions``), the others without
    which it would leave a moved argument in a position that stays nondiff, with that reason."""

    def refused(plan: RewritePlan, applied: Sequence[RewritePlan]) -> str | None:
        callees = nondiff_applied(decisions, applied)
        return static_capture(plan.site, plan.moved, plan.moved_bwd_params, callees, imports)

    needs: Needs = {}
    for i, plan in enumerate(plans):
        if refused(plan, [plan]) is None:  # correct on its own: the usual case, one look
            continue
        for j, other in enumerate(plans):
            if j != i and (why := refused(plan, [p for p in plans if p is not other])) is not None:
                needs.setdefault(i, {})[j] = why
    return needs


def questions(groups: Sequence[Sequence[RewritePlan]], plans: Sequence[RewritePlan], needs: Needs) -> list[Question]:
    """``groups`` (``shared.plan_groups`` of ``plans``) in their order, except that a group comes
    after the groups it needs; groups that need each other are one question."""
    group_of = {id(plan): g for g, group in enumerate(groups) for plan in group}
    edges: dict[int, dict[int, str]] = {g: {} for g in range(len(groups))}
    for i, needed in needs.items():
        for j, why in needed.items():
            a, b = group_of[id(plans[i])], group_of[id(plans[j])]
            if a != b:
                edges[a].setdefault(b, why)
    reach = {g: _reached(g, edges) for g in edges}
    # a group with those that reach it back: one question, placed at its first group
    merged = {g: min([g, *(h for h in reach[g] if g in reach[h])]) for g in edges}
    order: list[int] = []  # the first group of each question, in the order asked
    waiting = sorted(set(merged.values()))
    while waiting:
        ready = next(g for g in waiting if all(merged[h] in order for h in reach[g] if merged[h] != g))
        order.append(ready)
        waiting.remove(ready)
    asked: list[Question] = []
    for first in order:
        members = [g for g in edges if merged[g] == first]
        needed = {order.index(merged[h]): why for g in members for h, why in edges[g].items() if merged[h] != first}
        asked.append(Question(tuple(p for g in members for p in groups[g]), tuple(sorted(needed.items()))))
    return asked


def _reached(start: int, edges: dict[int, dict[int, str]]) -> set[int]:
    seen: set[int] = set()
    stack = list(edges[start])
    while stack:
        g = stack.pop()
        if g not in seen:
            seen.add(g)
            stack.extend(edges[g])
    return seen
