"""Stage 6e: the custom_vjp functions of other files that a site passes a moved argument to.

plan.closures refuses a site whose moved argument would reach a position of a custom_vjp that
stays in nondiff_argnums (`inner(x, w)` in `outer`, with `from pkg.b import inner`); here a
called name the module imports is told apart. Its import is followed (re-exports too) among the
run's files, or else on disk below the folder the project imports its top-level package from
(modules.folder_holding). A name imported from anything else (an installed package, an import
inside a function) or a file that does not parse stays unknown, as it always was: the site is
planned as if the name were no custom_vjp.

- A custom_vjp of a file the run does not include is not fixed with the site: every position
  it lists stays nondiff.
- One of a file of the run is as its own decisions leave it. Phase 2 (project.py) analyses both
  files: the site is first planned on the hope that the callee's plan moves every position, and
  again while a callee keeps more than the site was planned with (the rounds only ever keep
  more, as api's rounds within a module do). Both files are then one multi-file group when the
  site's plan needs the callee's (``relies_on``): neither is written without the other.

Phase 1 analyses each file alone, and the run's other files are not among the files checked
with it then: such a site is refused until phase 2 looks again (FileResult.imported_callees
names the modules of the callees found). Nothing is read for a site that passes no moved
argument to an imported name, and a file whose bytes can hold no custom_vjp with nondiff
arguments, nor an import of the name, is not parsed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate.codes import may_trigger
from vjp_migrate.model import NondiffAfter, SiteDecision
from vjp_migrate.vocabulary import LIBRARY_PREFIXES

if TYPE_CHECKING:
    from collections.abc import Sequence

    import libcst as cst

    from vjp_migrate.api import Analysis
    from vjp_migrate.plan.closures import ImportedCallees
    from vjp_migrate.project import Project

_SITES = frozenset({"VJP001"})  # every code's byte filter is the same: a custom_vjp with nondiff arguments
_OUTSIDE = "not among the files checked with this one"


@dataclass(frozen=True)
class _Callee:
    home: Path  # the file that defines it
    name: str  # its name there
    module: str  # that file's module name
    unfixed: NondiffAfter  # as written: every position it lists kept
    line: int
    in_run: bool


class Callees:
    """What the imported names a project's modules call are (see the module docstring)."""

    def __init__(self, project: Project, hope: bool = True) -> None:
        # ``hope``: a file of the run not analysed (yet) is hoped to move every position, as phase 2
        # starts; else it is taken as not fixed, as by `fix -i` for a file whose change is its own.
        self.project, self.hope = project, hope
        self._resolved: dict[tuple[str, Path], _Callee | None] = {}
        # A file of the run -> its custom_vjp functions as its decisions leave them (phase 2).
        self.after: dict[Path, dict[str, NondiffAfter]] = {}
        # An importing file -> the run's callees its last analysis saw, with the positions they kept then.
        self.seen: dict[Path, dict[_Callee, frozenset[int] | None]] = {}
        self.modules: dict[Path, set[str]] = {}  # an importing file -> the modules of the callees found
        self.read_elsewhere = False  # a file not of the run was read: the result depends on it

    def lookup(self, path: Path, module: cst.Module, unfixed: Path | None = None) -> ImportedCallees:
        """The custom_vjp a name the module at ``path`` calls is; ``unfixed``: a file of the run
        taken as not fixed (every position its custom_vjp functions list kept)."""

        def after(name: str) -> NondiffAfter | None:
            target = self.project.imports_of(path, module).target(name)
            if target is None or target.startswith(LIBRARY_PREFIXES):  # `jnp.sin(w)`: no file to look in
                return None
            callee = self._resolve(target, path)
            if callee is None or callee.home == path:
                return None
            self.modules.setdefault(path, set()).add(callee.module)
            where = f" in {_shown(callee.home)} (line {callee.line}"
            if not callee.in_run:
                return dataclasses.replace(callee.unfixed, where=f"{where}, {_OUTSIDE})")
            kept = callee.unfixed.kept if callee.home == unfixed else self._kept(callee)
            if unfixed is None:
                self.seen.setdefault(path, {})[callee] = kept
            return NondiffAfter(callee.unfixed.params, kept, f"{where})")

        return after

    def note_kept(self, path: Path, decisions: Sequence[SiteDecision]) -> None:
        """The positions the decisions of the run's file at ``path`` keep (and those kept before)."""
        from vjp_migrate.plan.closures import kept_more, nondiff_after

        self.after[path] = kept_more(self.after.get(path, {}), nondiff_after(tuple(decisions)))

    def homes(self, path: Path) -> list[Path]:
        """The run's files whose custom_vjp functions the last analysis of ``path`` saw."""
        return sorted({callee.home for callee in self.seen.get(path, {})})

    def stale(self) -> set[Path]:
        """The files analysed while a callee of theirs kept fewer positions than it keeps now."""
        return {path for path, seen in self.seen.items() if any(k != self._kept(c) for c, k in seen.items())}

    def relies_on(self, path: Path, analysis: Analysis) -> set[Path]:
        """The run's files whose plans the plans of ``analysis`` (of ``path``) need: applied
        without them, a moved argument would be a Tracer at a position they keep nondiff."""
        plans = [d.plan for d in analysis.decisions if d.plan is not None]
        homes = self.homes(path)
        if not plans or not homes:
            return set()
        import libcst as cst

        from vjp_migrate.imports import import_table
        from vjp_migrate.plan.closures import nondiff_after, static_capture

        module = analysis.module
        assert isinstance(module, cst.Module)
        imports, own = import_table(module), nondiff_after(analysis.decisions)
        return {
            home
            for home in homes
            if any(
                static_capture(p.site, p.moved, p.moved_bwd_params, own, imports, self.lookup(path, module, home))
                for p in plans
            )
        }

    def _kept(self, callee: _Callee) -> frozenset[int] | None:
        found = self.after.get(callee.home)
        if found is None:  # not analysed (yet): phase 2 looks again once it is
            return frozenset() if self.hope else callee.unfixed.kept
        return found[callee.name].kept if callee.name in found else callee.unfixed.kept

    def _resolve(self, target: str, importer: Path) -> _Callee | None:
        key = (target, importer)
        if key not in self._resolved:
            self._resolved[key] = self._find(target, importer)
        return self._resolved[key]

    def _find(self, target: str, importer: Path) -> _Callee | None:
        follow = self.project.follow
        followed = follow(target, _site_named, importer, may_hold=may_hold)
        in_run = followed.module_name is not None and not (followed.found is None and "." in followed.attribute)
        if not in_run:  # no file of the run (`pkg.sub.f` where pkg is one and pkg.sub is not)
            disk = self.project.disk_modules(target.partition(".")[0], importer)
            if disk is None:
                return None
            self.read_elsewhere = True
            followed = follow(target, _site_named, importer, disk, may_hold)
        if followed.found is None or followed.path is None or followed.module_name is None:
            return None
        unfixed, line = followed.found
        return _Callee(followed.path, followed.attribute, followed.module_name, unfixed, line, in_run)


def may_hold(path: Path, name: str) -> bool:
    """Whether the file at ``path`` may define a custom_vjp with nondiff arguments (or an alias of
    the partial) or import ``name`` (to re-export it), by its bytes; one that cannot be read may
    (load says why)."""
    from vjp_migrate.cross_uses import import_lines
    from vjp_migrate.files import read_bytes

    try:
        data = read_bytes(path)
    except OSError:
        return True
    head = name.partition(".")[0]
    if may_trigger(data, _SITES):
        return True
    return head.encode() in data and head in re.findall(r"\w+", import_lines(data.decode("utf-8", "replace")))


def _site_named(module: cst.Module, name: str) -> tuple[NondiffAfter, int] | None:
    """The custom_vjp function ``name`` of ``module``, as written, and its line."""
    from vjp_migrate import walk
    from vjp_migrate.imports import import_table
    from vjp_migrate.plan.closures import nondiff_hoped
    from vjp_migrate.sites import find_sites

    imports = import_table(module)
    if name.partition(".")[0] not in imports.shadowed:  # not bound by the module itself
        return None
    with walk.aside():  # the module analysed stays the current one
        sites = [site for site in find_sites(module, imports) if name in (site.name, site.qualname)]
        if not sites:
            return None
        line = walk.index_of(module).line(sites[0].anchor) or 1
    return nondiff_hoped(sites, [()] * len(sites))[name], line  # nothing moved: every position kept


def _shown(path: Path) -> str:
    """``path`` as a message shows it: a file found on disk relative to the current folder when below it."""
    if not path.is_absolute():
        return str(path)
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
