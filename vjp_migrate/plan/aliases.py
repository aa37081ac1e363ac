"""Plan, step 8: the module aliases of `partial(jax.custom_vjp, ...)` (sites.nondiff) that the plans
leave with no use in the module.

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

from vjp_migrate.model import PartialAlias, RewritePlan


def left_unused(plans: Sequence[RewritePlan]) -> list[PartialAlias]:
    """The aliases whose every use in the module is a site the plans rewrite."""
    aliases = {id(p.site.alias.assign): p.site.alias for p in plans if p.site.alias is not None}
    rewritten = Counter(id(p.site.alias.assign) for p in plans if p.site.alias is not None)
    return [alias for key, alias in aliases.items() if alias.uses == rewritten[key]]


def importable(alias: PartialAlias) -> bool:
    """Whether other modules may import the alias: a public name, or one `__all__` lists."""
    return alias.exported or not alias.name.startswith("_")


def unused_aliases(plans: Sequence[RewritePlan], keep: AbstractSet[str] = frozenset()) -> list[PartialAlias]:
    """The aliases the fix removes: private ones left unused, but those in ``keep`` (other files
    of the run import them from the module)."""
    return [a for a in left_unused(plans) if not importable(a) and a.name not in keep]
