"""Stage 9: module + plans -> new module. The only place that builds CST nodes.

The steps: ``lists`` (items taken out of or put into comma-separated lists), ``annotations``,
``type_comments``, ``comments``, ``unused_imports`` and ``added_imports`` (what a change brings
along), ``apply`` (the transformer that turns each plan into new nodes); ``apply_plans`` here runs
them over a module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.model import RewritePlan
from vjp_migrate.plan.aliases import adds_jax_import
from vjp_migrate.rewrite.added_imports import with_jax_import
from vjp_migrate.rewrite.apply import Apply
from vjp_migrate.rewrite.comments import saved_nothing
from vjp_migrate.rewrite.lists import own_constant
from vjp_migrate.rewrite.unused_imports import DropImports, NameUses, drop_imports, type_comment_uses


def apply_plans(module: cst.Module, plans: Sequence[RewritePlan], local: bool = True) -> cst.Module:
    """Apply every plan in one pass, then drop the imports the change made unused.

    ``local``: rebuild only the nodes that change and their ancestors (walk.Index) instead of
    running the transformers over the whole module; the result is the same. The lines a change
    may make too long (rewrite.wrap) are then measured in the spliced code of the result, and
    only when one is, the plans are applied again, measuring each line as it changes.
    """
    return rewrite_module(module, plans, local)[0]


def rewrite_module(
    module: cst.Module, plans: Sequence[RewritePlan], local: bool = True, keep: AbstractSet[str] = frozenset()
) -> tuple[cst.Module, frozenset[str]]:
    """``apply_plans``, keeping the imports and the unused aliases (plan.aliases) of the names in
    ``keep`` (other files of the run import them from this module); also the names whose imports
    or aliases it removed."""
    if not plans:
        return module, frozenset()
    if not local:
        new, _, dropped = _apply(module, Apply(plans, module, keep=keep), False)
    else:
        new, applier, dropped = _apply(module, Apply(plans, module, measure=False, keep=keep), True)
        if applier.lines.overflowed(new):
            new, _, dropped = _apply(module, Apply(plans, module, keep=keep), True)
    origin = adds_jax_import(plans)
    return (new if origin is None else with_jax_import(new, origin)), dropped


def _apply(module: cst.Module, applier: Apply, local: bool) -> tuple[cst.Module, Apply, frozenset[str]]:
    if local:
        new, applier = _transform(module, applier)
    else:
        new = module.visit(applier)
    aliases = frozenset(alias.name for alias in applier.gone_aliases.values())
    if not applier.removed_names:
        return new, applier, aliases
    uses = NameUses(applier.removed_names)
    if local:
        walk.visit(new, uses)
    else:
        new.visit(uses)
    unused = applier.removed_names - uses.used - uses.kept - applier.keep
    unused -= type_comment_uses(new, unused, module) if unused else set()
    if not unused:
        return new, applier, aliases
    dropper = DropImports(unused)
    new = drop_imports(new, dropper, walk.index_of(module)) if local else new.visit(dropper)
    return new, applier, aliases | dropper.dropped


def _statement_anchors(applier: Apply) -> Iterator[cst.CSTNode]:
    """Nodes whose statement line leave_SimpleStatementLine changes: a return that stores its
    value first, a `del` that shrinks, a defvjp call that gets a new def before it, a fwd return
    that saved nothing (its comment may say so), a constant or an alias that goes (a semicolon
    may be left)."""
    for plan in applier.plans:
        yield from plan.temp_returns
        yield from (node for node in plan.fwd_returns if saved_nothing(node))
        yield from (node for node, _ in plan.dels)
        yield from filter(None, [own_constant(plan)])
        if plan.bwd_def_name and plan.site.defvjp is not None:
            yield plan.site.defvjp
    yield from (alias.assign for alias in applier.gone_aliases.values())


def _transform(module: cst.Module, applier: Apply) -> tuple[cst.Module, Apply]:
    # Apply changes only nodes whose id is a key of one of its tables, and the statement lines
    # around the anchors above; an anchor with no line (in a body on its def line, or a lambda
    # rule's return made by the plan) has none to change (tests/test_walk.py compares this with
    # the whole-module visit over every fixture).
    index = walk.index_of(module)
    keys = set().union(*(table for table in vars(applier).values() if isinstance(table, dict)))
    try:
        lines = [index.statement_line(node) for node in _statement_anchors(applier)]
        new = index.transform(module, applier, [*index.nodes(keys), *filter(None, lines)])
    except (walk.NotLocal, KeyError):  # the applier may be half-way: start again
        applier = Apply(applier.plans, module, applier.lines.measure, applier.keep)
        return module.visit(applier), applier
    assert isinstance(new, cst.Module)
    return new, applier
