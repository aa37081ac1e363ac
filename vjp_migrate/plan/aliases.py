"""Plan, step 8: the module aliases of `partial(jax.custom_vjp, ...)` (sites.nondiff) that the plans
leave with no use in the module, and the uses of one imported from another module (sites.imported).

A private one (`_vjp_w`) goes, as an import the change made unused does, unless another file of
the run imports it from the module (the run looks for its name as for such an import: cross_uses).
A public one, or one a string of the module names (`__all__`), stays as it is: another module may
import it, and no run sees every module that may. Its findings say so (findings.with_alias_notes),
as it still lists the positions the fix moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from vjp_migrate.model import PartialAlias, RewritePlan, VjpSite
from vjp_migrate.wording import spoken


def left_unused(plans: Sequence[RewritePlan]) -> list[PartialAlias]:
    """The module's own aliases whose every use in the module is a site the plans rewrite."""
    own = [p.site.alias for p in plans if p.site.alias is not None and p.site.alias.module is None]
    aliases = {id(alias.assign): alias for alias in own}
    rewritten = Counter(id(alias.assign) for alias in own)
    return [alias for key, alias in aliases.items() if alias.uses == rewritten[key]]


def imported_problem(site: VjpSite, kept: tuple[int, ...]) -> str | None:
    """Why a use of an alias imported from another module cannot be rewritten (None: it can).
    The fix writes `jax.custom_vjp` in its place, as this module spells it (or with an `import
    jax` it adds), and leaves the alias to its module: no position may stay nondiff, since the
    module has no partial of its own to keep them in."""
    alias = site.alias
    if alias is None or alias.module is None:
        return None
    given = f"nondiff_argnums is given by `{alias.name}`, imported from `{alias.module}`"
    if kept:
        listed = spoken([str(p) for p in kept])
        return (
            f"{given}, and {'positions' if len(kept) > 1 else 'position'} {listed} would stay nondiff: "
            "the fix only replaces such an alias with `jax.custom_vjp`; write the partial here by hand"
        )
    if alias.custom_vjp is None:
        return (
            f"{given}, and this module binds `jax` otherwise than by an import at its top, so the fix "
            "can neither write `jax.custom_vjp` nor import it"
        )
    return None


def adds_jax_import(plans: Sequence[RewritePlan]) -> str | None:
    """The module an alias the plans replace is imported from, when the fix must add `import jax`
    for it (the module has no name for JAX); the new import goes before that module's group."""
    for plan in plans:
        alias = plan.site.alias
        if alias is not None and alias.module is not None and alias.custom_vjp == "":
            return alias.module
    return None


def importable(alias: PartialAlias) -> bool:
    """Whether other modules may import the alias: a public name, or one `__all__` lists."""
    return alias.exported or not alias.name.startswith("_")


def unused_aliases(plans: Sequence[RewritePlan], keep: AbstractSet[str] = frozenset()) -> list[PartialAlias]:
    """The aliases the fix removes: private ones left unused, but those in ``keep`` (other files
    of the run import them from the module)."""
    return [a for a in left_unused(plans) if not importable(a) and a.name not in keep]
