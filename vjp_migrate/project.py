"""Stage 6b: project-wide analysis: custom_vjp rules imported from other files of the same run.

Phase 1 analyses every file on its own (workers, cache); a site whose fwd or bwd is imported
is then VJP003 ("... which is not among the files checked") and its file says which modules
it imports rules from (``FileResult.imported_rules``), and helpers it passes nondiff arguments
to (``imported_helpers``). Phase 2, here, analyses those files again in one ``Project``: every
file is parsed once, an imported rule resolves to the FunctionDef in the other file's tree, and
classification and planning run unchanged on those nodes. The plans of one migration are
applied to every file they touch, and the files a migration touches form one group, written
together. A file that imports no rules from the run (only helpers) shares nothing with the
others, so with several jobs those files are analysed again in worker processes, one by one.

A rule used by several custom_vjp functions (in any files) is rewritten only when every user
migrates the same argument positions the same way; otherwise all users get VJP003. A file whose
fix changes a name that another file of the run uses (a test calling its bwd, an import of a
name the fix removes: FileResult.changed_names, cross_uses.py) is analysed here again too: its
rule is then VJP003, the import stays; so is one whose custom_vjp another file calls with a
static value where the fix moves an argument (cross_calls.py): classification reads those calls.
So is a file whose site passes a moved argument to a custom_vjp of another file of the run
(FileResult.imported_callees, callees.py), with that file: the two are one group when the site's
plan needs the other's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from vjp_migrate.model import (
    PRIMAL_ROLE,
    Diagnostic,
    FileResult,
    FunctionRef,
    RewritePlan,
    Settings,
    SiteDecision,
    Status,
    VjpSite,
)
from vjp_migrate.modules import DiskModules, ModuleImports, ModuleIndex, Modules, folder_holding, module_imports
from vjp_migrate.source import SourceError, SourceText, check_syntax, decode, encode, parse
from vjp_migrate.transaction import FileChange, Outcome

if TYPE_CHECKING:
    import libcst as cst

    from vjp_migrate.api import Analysis
    from vjp_migrate.callees import Callees
    from vjp_migrate.classify.context import Context, ImportedHelper, Where
    from vjp_migrate.cross_calls import Passed
    from vjp_migrate.cross_uses import OtherFiles
    from vjp_migrate.imports import ImportTable
    from vjp_migrate.model import PartialAlias
    from vjp_migrate.plan.closures import ImportedCallees
    from vjp_migrate.sites import ImportedAlias, ImportedRule, ImportedValue
    from vjp_migrate.sites.nondiff import NondiffReader

_Run = tuple[tuple[Path, ...], tuple[Path, ...]]  # a run's files and roots (ModuleIndex.build's arguments)
_MAX_REEXPORTS = 4  # `from ._impl import bwd` in an __init__.py, followed this many times


def _not_checked(module: str) -> str:
    return f"imported from `{module}`, which is not among the files checked"


def _unusable(problem: str) -> str:
    """What is wrong with a checked module, after its name: `which has a syntax error at line 22,
    column 12: invalid syntax`, `which could not be used (cannot be read: Permission denied)`."""
    if problem.startswith("syntax error at "):
        return f"which has a {problem}"
    return f"which could not be used ({problem})"


def outside_message(role: str, name: str, module: str) -> str:
    wanted = "read its uses" if role == PRIMAL_ROLE else "migrate this function"
    return f"{role} `{name}` is imported from `{module}`, which is not among the files checked; include it to {wanted}"


@dataclass
class _Loaded:
    data: bytes
    source: SourceText
    module: cst.Module


@dataclass
class Project:
    """The parsed files of one run and the answers analyze asks of them (see api.analyze)."""

    # A Path: the project of that one file; a run's files and roots: theirs. Indexed when first
    # needed (most files never need it: the index only resolves names imported from other files,
    # and building it reads folders).
    indexed: ModuleIndex | Path | _Run
    loaded: dict[Path, _Loaded | str] = field(default_factory=dict)  # a str says why it failed
    # The modules each analysed file imports rules (or constants) from, and those it imports
    # helpers from (phase 1 reports them: FileResult.imported_rules, imported_helpers).
    imported: dict[Path, set[str]] = field(default_factory=dict)
    helper_origins: dict[Path, set[str]] = field(default_factory=dict)
    blocked: dict[int, str] = field(default_factory=dict)  # id(rule node) -> the VJP003 detail
    # (role, name) of the names of each analysed file whose meaning its fix changes (phase 1
    # reports them: FileResult.changed_names, see cross_uses).
    changes: dict[Path, set[tuple[str, str]]] = field(default_factory=dict)
    # By file and custom_vjp: the static values calls in the run's other files pass it (cross_calls).
    outside: dict[Path, dict[str, tuple[Passed, ...]]] = field(default_factory=dict)
    _alias_read: bool = False  # an imported alias of the partial was looked up in another file
    _imports: dict[Path, ModuleImports] = field(default_factory=dict)
    _helpers: dict[int, dict[str, cst.FunctionDef]] = field(default_factory=dict)  # by id(module)
    # (top-level name, importing folder) -> the folder holding it (modules.folder_holding), and the
    # modules below each such folder: the on-disk lookups of helpers, callees and imported aliases
    _tops: dict[tuple[str, Path], Path | None] = field(default_factory=dict)
    _disk: dict[Path, DiskModules] = field(default_factory=dict)
    # (import target, importing file) -> where it leads, for the helpers classification follows
    _helper_defs: dict[tuple[str, Path], _Followed[cst.FunctionDef]] = field(default_factory=dict)
    _callees: Callees | None = None
    hope: bool = True  # see Callees

    @classmethod
    def for_file(cls, path: Path) -> Project:
        """A project of one file: imported rules are named, never resolved."""
        return cls(path)

    @classmethod
    def for_run(cls, files: Sequence[Path], roots: Sequence[Path]) -> Project:
        """A project of a run's files, as `fix -i` reads a file whose change is its own: imported
        rules and helpers resolve among them, and the custom_vjp functions of the other files are
        as written (a plan that needed one of their plans would be part of a multi-file change)."""
        return cls(ModuleIndex.build(files, roots), hope=False)

    @property
    def callees(self) -> Callees:
        """The custom_vjp functions of other files that the analysed modules' sites call."""
        if self._callees is None:
            from vjp_migrate.callees import Callees

            self._callees = Callees(self, self.hope)
        return self._callees

    @property
    def index(self) -> ModuleIndex:
        if isinstance(self.indexed, Path):
            self.indexed = ModuleIndex.build([self.indexed])
        elif isinstance(self.indexed, tuple):
            self.indexed = ModuleIndex.build(*self.indexed)
        return self.indexed

    # --- files -------------------------------------------------------------------------------

    def load(self, path: Path) -> _Loaded | str:
        if path not in self.loaded:
            from vjp_migrate.files import read_bytes

            try:
                data = read_bytes(path)
                source = decode(data)
                self.loaded[path] = _Loaded(data, source, parse(source.text, str(path)))
            except SourceError as error:
                self.loaded[path] = str(error)
            except OSError as error:
                self.loaded[path] = f"cannot be read: {error.strerror or error}"
        return self.loaded[path]

    def loaded_text(self, path: Path) -> str | None:
        """The text of ``path`` when it is loaded."""
        loaded = self.loaded.get(path)
        return loaded.source.text if isinstance(loaded, _Loaded) else None

    def with_origins(self, result: FileResult) -> FileResult:
        """``result`` saying which modules its file imports rules, helpers and custom_vjp
        functions it passes moved arguments to from, and which of its names its fix changes."""
        callees = self._callees.modules.get(result.path, ()) if self._callees is not None else ()
        return dataclasses.replace(
            result,
            imported_rules=tuple(sorted(self.imported.get(result.path, ()))),
            imported_helpers=tuple(sorted(self.helper_origins.get(result.path, ()))),
            imported_callees=tuple(sorted(callees)),
            changed_names=tuple(sorted(self.changes.get(result.path, ()))),
        )

    @property
    def read_elsewhere(self) -> bool:
        """Whether an analysis read a file that is not among the run's (its result depends on that file)."""
        return self._alias_read or (self._callees is not None and self._callees.read_elsewhere)

    def note_changes(self, path: str, decisions: Sequence[SiteDecision], module: object) -> None:
        """The fwd and bwd of the module at ``path`` that ``decisions`` change."""
        from vjp_migrate.cross_uses import changed_rules

        if found := changed_rules(decisions, module):
            self.changes.setdefault(Path(path), set()).update(found)

    def note_dropped(self, path: str, names: Iterable[str]) -> None:
        """The names whose imports (or aliases of the partial) the fix of the module at ``path`` removes."""
        from vjp_migrate.cross_uses import IMPORT

        if names:
            self.changes.setdefault(Path(path), set()).update((IMPORT, name) for name in names)

    # --- the hooks api.analyze calls ---------------------------------------------------------

    def parse(self, text: str, path: str, syntax_checked: bool = False) -> cst.Module:
        """The module for ``text``: the tree other files' rules point into, when already loaded."""
        known = self.loaded.get(Path(path))
        if isinstance(known, _Loaded) and known.source.text == text:
            return known.module
        return parse(text, path, syntax_checked=syntax_checked)

    def find_sites(self, module: cst.Module, imports: ImportTable, path: str) -> list[VjpSite]:
        from vjp_migrate.sites import find_sites

        importer = self._importer(Path(path), module)
        sites = find_sites(
            module,
            imports,
            self.imported_rule(Path(path), importer),
            self.imported_value(Path(path), importer),
            self.imported_alias(Path(path), importer),
        )
        return [self._block(site) for site in sites]

    def _block(self, site: VjpSite) -> VjpSite:
        for ref in (site.fwd, site.bwd):
            if ref is not None and ref.node is not None and id(ref.node) in self.blocked:
                return dataclasses.replace(site, problem=self.blocked[id(ref.node)])
        return site

    def imported_callees(self, path: str, module: cst.Module) -> ImportedCallees:
        """What each name the module at ``path`` imports and calls is (plan.closures): callees.py."""
        return self.callees.lookup(Path(path), module)

    def widen(self, ctx: Context, sites: Sequence[VjpSite], module: cst.Module, path: str) -> Context:
        """Let classification read rules from other modules with those modules' imports, and
        follow the helpers this module (or a rule's module) imports from the run's other files.
        A file checked alone only notes the modules such helpers come from (phase 1)."""
        from vjp_migrate import walk

        homes = [(Path(path), module)]
        others = {ref.path for site in sites for ref in (site.fwd, site.bwd) if ref is not None and ref.path}
        others |= {site.primal_from.path for site in sites if site.primal_from and site.primal_from.path}
        for other in sorted(others):
            loaded = self.loaded.get(Path(other))
            if isinstance(loaded, _Loaded):
                homes.append((Path(other), loaded.module))
                walk.cover(loaded.module)  # its helpers are walked by replays, not node by node
        if len(homes) > 1:
            helpers = dict(ctx.helpers)
            for _, other_module in homes[1:]:
                for name, helper in self._helpers_of(other_module).items():
                    helpers.setdefault(name, helper)
            imports = self._merged_imports(ctx, [other_module for _, other_module in homes[1:]])
            ctx = dataclasses.replace(ctx, imports=imports, helpers=helpers, elsewhere=_lines_in(homes[1:]))
        outside = self.outside.get(Path(path), {})
        return dataclasses.replace(ctx, imported=self._helper_finder(ctx, homes, Path(path)), outside=outside)

    @staticmethod
    def _merged_imports(ctx: Context, modules: Sequence[cst.Module]) -> ImportTable:
        """``ctx``'s imports and those of ``modules``: a name with two meanings is trusted in neither."""
        from vjp_migrate.imports import ImportTable, import_table

        aliases, shadowed = dict(ctx.imports.aliases), set(ctx.imports.shadowed)
        conflicts: set[str] = set()
        for other in modules:
            table = import_table(other)
            for name, target in table.aliases.items():
                if aliases.setdefault(name, target) != target:
                    conflicts.add(name)
            shadowed |= table.shadowed
        for name in conflicts:
            aliases.pop(name, None)
        return ImportTable(aliases, frozenset(shadowed))

    def _helper_finder(self, ctx: Context, homes: list[tuple[Path, cst.Module]], noted: Path | None) -> ImportedHelper:
        """What a called name imports from another module of the run, as ``homes`` import it (the
        modules whose code is read in ``ctx``): the def and the context to read it in; None when no
        checked module defines it, or two of ``homes`` import different defs by that name. The
        modules names come from are noted for ``noted`` (phase 1 then knows to ask for phase 2)."""
        contexts: dict[Path, Context] = {}

        def find(name: str) -> tuple[cst.FunctionDef, Context, str] | None:
            found: dict[int, tuple[cst.FunctionDef, Path, cst.Module, str]] = {}
            for home, home_module in homes:
                imports = self.imports_of(home, home_module)
                target = imports.target(name)
                if target is None:
                    continue
                if home == noted and self._nearby(home, imports, name):
                    self.helper_origins.setdefault(home, set()).add(imports.origin(name) or target)
                if (target, home) not in self._helper_defs:
                    self._helper_defs[(target, home)] = self.follow(
                        target, lambda module, attribute: self._helpers_of(module).get(attribute), home
                    )
                followed = self._helper_defs[(target, home)]
                loaded = self.loaded.get(followed.path) if followed.path is not None else None
                if followed.found is not None and followed.path is not None and isinstance(loaded, _Loaded):
                    name_of = followed.module_name or str(followed.path)
                    found[id(followed.found)] = (followed.found, followed.path, loaded.module, name_of)
            if len(found) != 1:
                return None
            helper, where, module, module_name = next(iter(found.values()))
            if where not in contexts:
                contexts[where] = self._helper_context(ctx, where, module)
            return helper, contexts[where], module_name

        return find

    def _nearby(self, path: Path, imports: ModuleImports, name: str) -> bool:
        """Whether the module ``name`` is imported from may be a file of a run over a folder that
        holds ``path``: a relative import, or an absolute one whose top-level package or module is
        in a folder above ``path`` or in the current folder (`einops` is not, in most projects: a
        file whose helpers all come from such modules asks for no second phase)."""
        head = name.partition(".")[0]
        if imports.spelled.get(head, "").startswith("."):
            return True
        top = (imports.target(name) or "").partition(".")[0]
        if not top:
            return False
        return self.disk_modules(top, path) is not None

    def disk_modules(self, top: str, importer: Path) -> DiskModules | None:
        """The modules below the folder the module at ``importer`` imports ``top`` from, when a
        folder above it (or the current one) holds it; None for `jax`, `numpy`, ... in most projects."""
        key = (top, importer.parent)
        if key not in self._tops:
            self._tops[key] = folder_holding(top, importer)
        folder = self._tops[key]
        return None if folder is None else self._disk.setdefault(folder, DiskModules(folder))

    def _helper_context(self, ctx: Context, path: Path, module: cst.Module) -> Context:
        """``ctx`` widened to read a helper of ``module``: its imports and its own helpers added,
        a name with two meanings trusted in neither, and the helpers it imports followed in turn."""
        own = self._helpers_of(module)
        helpers = {**ctx.helpers, **own}
        for name in set(ctx.helpers) & set(own):
            if ctx.helpers[name] is not own[name]:
                del helpers[name]
        inner = dataclasses.replace(ctx, imports=self._merged_imports(ctx, [module]), helpers=helpers)
        return dataclasses.replace(inner, imported=self._helper_finder(inner, [(path, module)], None))

    def imports_of(self, path: Path, module: cst.Module) -> ModuleImports:
        if path not in self._imports:
            self._imports[path] = module_imports(module, self.index.package_of(path))
        return self._imports[path]

    def _helpers_of(self, module: cst.Module) -> dict[str, cst.FunctionDef]:
        from vjp_migrate.classify.module_facts import module_helpers

        if id(module) not in self._helpers:
            self._helpers[id(module)] = module_helpers(module)
        return self._helpers[id(module)]

    # --- resolving imported rules and constants ----------------------------------------------

    def _importer(self, path: Path, module: cst.Module) -> Callable[[str], tuple[str, str | None] | None]:
        """For a local name the module imports: the module it comes from (recorded for phase 1)
        and its absolute target when that can be told; None when the name is not imported."""

        def origin_and_target(local: str) -> tuple[str, str | None] | None:
            imports = self.imports_of(path, module)  # read on the first name looked up (most modules: never)
            origin = imports.origin(local)
            if origin is None:
                return None
            self.imported.setdefault(path, set()).add(origin)
            return origin, imports.target(local)

        return origin_and_target

    def imported_rule(self, path: Path, importer: Callable[[str], tuple[str, str | None] | None]) -> ImportedRule:
        def resolve(role: str, local: str) -> FunctionRef | None:
            imported = importer(local)
            if imported is None:
                return None
            origin, target = imported
            if target is None:
                return FunctionRef(local, None, outside_message(role, local, origin), module=origin)
            return self._lookup(role, local, target, path)

        return resolve

    def imported_value(self, path: Path, importer: Callable[[str], tuple[str, str | None] | None]) -> ImportedValue:
        """A constant's value in the checked module it is imported from (`nondiff_argnums=NONDIFF`)."""

        def resolve(local: str) -> cst.BaseExpression | str | None:
            imported = importer(local)
            if imported is None:
                return None
            origin, target = imported
            return self._constant(target, path) if target is not None else _not_checked(origin)

        return resolve

    def imported_alias(self, path: Path, importer: Callable[[str], tuple[str, str | None] | None]) -> ImportedAlias:
        """An alias of the partial imported from another module (`from mylib.vjp import vjp_w`): its
        definition in the checked module it comes from, else in the module on disk the import
        means from ``path`` (modules.folder_holding), which is read, never changed."""
        from vjp_migrate.callees import may_hold
        from vjp_migrate.sites.imported import AliasSource

        sources: dict[int, AliasSource] = {}

        def find(module: cst.Module, name: str) -> tuple[PartialAlias, NondiffReader] | None:
            source = sources.setdefault(id(module), AliasSource(module))
            return (source.aliases[name], source) if name in source.aliases else None

        def resolve(local: str) -> tuple[PartialAlias, NondiffReader] | None:
            imported = importer(local)
            if imported is None or imported[1] is None:
                return None
            followed = self.follow(imported[1], find, path, may_hold=may_hold)
            if followed.module_name is None and (disk := self.disk_modules(imported[1].split(".")[0], path)):
                self._alias_read = True
                followed = self.follow(imported[1], find, path, disk, may_hold)
            if followed.found is None:
                return None
            alias, source = followed.found
            return dataclasses.replace(alias, module=followed.module_name), source

        return resolve

    def follow(
        self,
        target: str,
        find: Callable[[cst.Module, str], _Found | None],
        importer: Path,
        modules: Modules | None = None,
        may_hold: Callable[[Path, str], bool] | None = None,
        depth: int = 0,
    ) -> _Followed[_Found]:
        """Where an import target of the module at ``importer`` leads among the checked modules
        (or ``modules``), re-exports followed (up to _MAX_REEXPORTS, by name or by a star import
        that exports it): what ``find`` finds there, or why nothing is found. A file ``may_hold``
        rules out (by its bytes) is not parsed."""
        index = modules or self.index
        while True:
            split = index.split(target)
            if split is None:
                return _Followed(target)
            module_name, attribute = split
            paths = index.files_named(module_name, importer)
            if len(paths) > 1:
                problem = f"{len(paths)} files of the run are `{module_name}`: " + ", ".join(map(str, paths))
                return _Followed(target, module_name, attribute, problem=problem)
            path = importer = paths[0]
            if may_hold is not None and not may_hold(path, attribute):
                return _Followed(target, module_name, attribute, path)
            loaded = self.load(path)
            if isinstance(loaded, str):
                return _Followed(target, module_name, attribute, path, problem=loaded)
            found = find(loaded.module, attribute)
            if found is not None:
                return _Followed(target, module_name, attribute, path, found=found)
            imports = module_imports(loaded.module, index.package_of(path))
            further = imports.target(attribute)
            if further is None and depth < _MAX_REEXPORTS:  # `from .rules import *` in an __init__.py
                for star in reversed(imports.stars):  # the last one binding the name wins
                    if self._star_binds(star, attribute.partition(".")[0], path, index):
                        followed = self.follow(f"{star}.{attribute}", find, path, modules, may_hold, depth + 1)
                        if followed.found is not None:
                            return followed
            if further is None or depth == _MAX_REEXPORTS:
                return _Followed(target, module_name, attribute, path)
            target, depth = further, depth + 1

    def _star_binds(self, star: str, name: str, importer: Path, index: Modules) -> bool:
        """Whether `from <star> import *` in the module at ``importer`` binds ``name`` (`__all__`)."""
        from vjp_migrate.modules import star_exports

        paths = index.files_named(star, importer)
        loaded = self.load(paths[0]) if len(paths) == 1 else None
        return isinstance(loaded, _Loaded) and star_exports(loaded.module, name)

    def leads_to(self, target: str, importer: Path, home: Path, name: str) -> bool:
        """Whether the import target ``target`` of the module at ``importer`` means ``name`` of
        the module at ``home``, re-exports followed (as rules are)."""
        split = self.index.split(target)
        if split is None:
            return False
        if home in self.index.files_named(split[0], importer):  # the usual import: no module read
            return split[1] == name
        loaded = self.load(home)
        if isinstance(loaded, str):
            return False
        home_module = loaded.module

        def find(module: cst.Module, attribute: str) -> bool | None:
            return True if module is home_module and attribute == name else None

        return self.follow(target, find, importer).found is True

    def _constant(self, target: str, importer: Path) -> cst.BaseExpression | str:
        from vjp_migrate.sites import module_constants

        followed = self.follow(target, lambda module, name: module_constants(module).get(name), importer)
        if followed.module_name is None:
            return _not_checked(followed.target.rpartition(".")[0] or followed.target)
        if followed.problem is not None:
            return f"imported from `{followed.module_name}`, {_unusable(followed.problem)}"
        if followed.found is not None:
            return followed.found
        return f"imported from `{followed.module_name}`, where no constant `{followed.attribute}` is assigned"

    def _lookup(self, role: str, local: str, target: str, importer: Path) -> FunctionRef:
        from vjp_migrate.imports import ImportTable, import_table
        from vjp_migrate.sites import Scope, find_def
        from vjp_migrate.sites.jit import rule_decorations

        followed = self.follow(
            target, lambda module, name: find_def(Scope(list(module.body), None, False, ""), name), importer
        )
        origin = followed.target.rpartition(".")[0] or followed.target
        module_name = followed.module_name
        if module_name is None:
            return FunctionRef(local, None, outside_message(role, local, origin), module=origin)
        if followed.problem is not None:
            held = f"`{module_name}`" + (f" ({followed.path})" if followed.path is not None else "")
            problem = f"{role} `{local}` is imported from {held}, {_unusable(followed.problem)}"
            return FunctionRef(local, None, problem, module=module_name)
        if followed.found is not None:
            where = None if followed.path == importer else str(followed.path)
            loaded = self.loaded.get(followed.path) if followed.path is not None else None
            imports = import_table(loaded.module) if isinstance(loaded, _Loaded) else ImportTable({}, frozenset())
            jit, decorated = rule_decorations(role, local, followed.found, imports)
            return FunctionRef(
                local, followed.found, module=module_name, path=where, jit=jit, decorator_problem=decorated
            )
        if "." in followed.attribute:  # `pkg.sub.f` where pkg is checked and pkg.sub is not
            return FunctionRef(local, None, outside_message(role, local, origin), module=origin)
        problem = (
            f"{role} `{local}` is imported from `{module_name}`, where no function `{followed.attribute}` is defined"
        )
        return FunctionRef(local, None, problem, module=module_name)


def _lines_in(homes: list[tuple[Path, cst.Module]]) -> Callable[[cst.CSTNode], Where]:
    """Where a node of one of ``homes`` (other modules whose rules a site's analysis reads) is."""
    from vjp_migrate import walk

    def where(node: cst.CSTNode) -> Where:
        for path, module in homes:
            line = walk.line_in(module, node)
            if line is not None:
                return line, str(path)
        return None, None

    return where


_Found = TypeVar("_Found")


@dataclass(frozen=True)
class _Followed(Generic[_Found]):
    """The end of Project.follow: the last target followed, the checked module that holds it
    (None: no checked module does), why that module could not be read, or what was found."""

    target: str
    module_name: str | None = None
    attribute: str = ""
    path: Path | None = None
    problem: str | None = None
    found: _Found | None = None


# --- phase 2 -----------------------------------------------------------------------------------


def rule_files(decision: SiteDecision) -> set[str]:
    """The other files holding the fwd and bwd of ``decision``'s site."""
    site = decision.site
    return {ref.path for ref in (site.fwd, site.bwd) if ref is not None and ref.path is not None}


def _disagreements(analyses: dict[Path, Analysis]) -> dict[int, str]:
    """Rules shared across files whose users do not all migrate the same way."""
    from vjp_migrate.plan.shared import rule_change  # the same test a module applies to its own shared rules

    users: dict[int, list[tuple[Path, SiteDecision, str, FunctionRef]]] = {}
    crosses: set[int] = set()
    for path, analysis in analyses.items():
        for decision in analysis.decisions:
            for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd)):
                if ref is None or ref.node is None:
                    continue
                users.setdefault(id(ref.node), []).append((path, decision, role, ref))
                if ref.path is not None:
                    crosses.add(id(ref.node))
    found: dict[int, str] = {}
    for key in crosses:
        entries = users[key]
        if len(entries) < 2:
            continue
        shapes = {rule_change(d, role) for _, d, role, _ in entries}
        if len(shapes) == 1:
            continue
        names = ", ".join(f"`{d.site.qualname}` ({path})" for path, d, _, _ in sorted(entries, key=_user_order))
        ref = entries[0][3]
        found[key] = (
            f"`{ref.name}` is shared by the custom_vjp functions {names}, which do not all migrate "
            "the same arguments the same way"
        )
    return found


def _user_order(entry: tuple[Path, SiteDecision, str, FunctionRef]) -> tuple[str, str]:
    return str(entry[0]), entry[1].site.qualname


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[Path, Path] = {}

    def find(self, path: Path) -> Path:
        self.parent.setdefault(path, path)
        while self.parent[path] != path:
            path = self.parent[path]
        return path

    def join(self, a: Path, b: Path) -> None:
        self.parent[self.find(a)] = self.find(b)


def _analyse_all(project: Project, start: list[Path], settings: Settings) -> dict[Path, Analysis]:
    from vjp_migrate.api import analyze

    analyses: dict[Path, Analysis] = {}
    pending = list(start)
    while pending:
        path = pending.pop(0)
        if path in analyses:
            continue
        loaded = project.load(path)
        if isinstance(loaded, str):
            continue
        analysis = analyze(loaded.source.text, str(path), settings, parse_anyway=True, project=project)
        analyses[path] = analysis
        project.callees.note_kept(path, analysis.decisions)
        for decision in analysis.decisions:
            pending.extend(Path(p) for p in sorted(rule_files(decision)))
        pending.extend(project.callees.homes(path))
    return analyses


def complete(
    results: list[FileResult], others: OtherFiles, used: set[Path], settings: Settings, fix: bool, jobs: int = 1
) -> Outcome:
    """Phase 2 over phase 1's ``results`` for the files of ``others`` (at least two): files whose
    rules or helpers are imported from other files of the run, and ``used``, those with a changed
    name (fwd, bwd, a removed import) that others use (OtherFiles.changed_and_used).

    ``fix``: the results carry the new texts and the outcome the groups of changes to write.
    ``jobs`` > 1: the files that only follow helpers are analysed in that many worker processes.
    """
    flagged = [r for r in results if r.imports_from_others]
    if not (flagged or used):
        return Outcome(results, [])
    project = others.project

    def holds(module: str) -> bool:
        return project.index.holds(module)

    # A file that imports rules or helpers only from modules outside the run gets nothing new
    # here. One that calls a custom_vjp of the run's may need its plan: the two are analysed together.
    rules = {r.path for r in flagged if any(map(holds, (*r.imported_rules, *r.imported_callees)))} | used
    start = [r.path for r in flagged if r.path in rules or any(map(holds, r.imported_helpers))]
    start += sorted(used - set(start))
    if not start:
        return Outcome(results, [])
    alone = [path for path in start if path not in rules]
    done: dict[Path, FileResult] = {}
    if jobs > 1 and len(alone) > 1:
        analyses = _analyse_rounds(project, [path for path in start if path in rules], settings, others)
        rest = [path for path in alone if path not in analyses]
        done = _alone_in_workers(project, rest, (tuple(others.files), tuple(others.roots)), settings, fix, jobs)
        if any(any(map(holds, (*r.imported_rules, *r.imported_callees))) for r in done.values()):
            # One of them imports rules from the run after all (not seen in phase 1): all together.
            others, done = others.again(), {}
            project = others.project
            analyses = _analyse_rounds(project, start, settings, others)
    else:
        analyses = _analyse_rounds(project, start, settings, others)
    outcome = _outcome(results, analyses, fix, others)
    return Outcome([done.get(result.path, result) for result in outcome.results], outcome.groups)


def _analyse_rounds(
    project: Project, start: list[Path], settings: Settings, others: OtherFiles
) -> dict[Path, Analysis]:
    """``start`` and the files of the rules and custom_vjp functions they import analysed
    together, again until no more rules are blocked by uses elsewhere or by users that disagree,
    and no file was planned while a callee in another kept fewer positions than it keeps now."""
    from vjp_migrate.cross_uses import used_elsewhere

    project.outside = others.outside()
    analyses = _analyse_all(project, start, settings)
    while True:  # each round blocks one more rule or keeps more positions, so this ends
        found = {**used_elsewhere(analyses, others), **_disagreements(analyses)}
        blocked = {k: v for k, v in found.items() if k not in project.blocked}
        if blocked:
            project.blocked.update(blocked)
            analyses = _analyse_all(project, list(analyses), settings)
        elif stale := project.callees.stale():
            analyses.update(_analyse_all(project, sorted(stale), settings))
        else:
            return analyses


# The project phase 2 has read so far: a forked worker starts from it (a spawned one indexes the run).
_SHARED: list[Project] = []


def _alone_in_workers(
    project: Project, paths: list[Path], run: _Run, settings: Settings, fix: bool, jobs: int
) -> dict[Path, FileResult]:
    """Phase 2 of files that share no rules with the others (they only follow helpers into
    them): each is analysed on its own, so they are spread over worker processes, which also
    survive a crash of the parser, as in phase 1. A bare OK result means the file could not be
    loaded again; its phase 1 result stands."""
    from vjp_migrate import workers
    from vjp_migrate.discover import Candidate

    task = workers.Task("fix" if fix else "check", settings, phase=2, run=run)
    _SHARED[:] = [project]
    try:
        results = workers.run([Candidate(path, True) for path in paths], task, jobs)
    finally:
        _SHARED.clear()
    return {result.path: result for result in results if result != FileResult(result.path, Status.OK)}


def analyse_alone(path: Path, settings: Settings, fix: bool, run: _Run) -> FileResult:
    """Phase 2 of one file that only follows helpers into the run's other files (in a worker
    process; ``run``: the run's files and roots, indexed once by a worker that was not forked)."""
    from vjp_migrate.api import guarded

    if not _SHARED:
        _SHARED.append(Project(ModuleIndex.build(*run)))
    project = _SHARED[0]

    def work() -> FileResult:
        from vjp_migrate.cross_uses import OtherFiles

        others = OtherFiles(*run, project)
        analyses = _analyse_rounds(project, [path], settings, others)
        if path not in analyses:
            return FileResult(path, Status.OK)
        plans = [d.plan for d in analyses[path].decisions if d.plan is not None] if fix else []
        return _file_result(path, analyses[path], plans, {}, fix, others)

    return guarded(path, work)


def _outcome(results: list[FileResult], analyses: dict[Path, Analysis], fix: bool, others: OtherFiles) -> Outcome:
    project = others.project
    groups = _Groups()
    plans_for: dict[Path, list[RewritePlan]] = {}
    touches: dict[int, tuple[str, ...]] = {}  # id(decision) -> the other files its fix changes
    for path, analysis in analyses.items():
        for decision in analysis.decisions:
            if decision.plan is None:
                continue
            plans_for.setdefault(path, []).append(decision.plan)
            for other in sorted(rule_files(decision) - {str(path)}):
                plans_for.setdefault(Path(other), []).append(decision.plan)
                groups.join(path, Path(other))
        for home in project.callees.relies_on(path, analysis):  # written alone, it passes a Tracer there
            groups.join(path, home)
    members_of: dict[Path, set[str]] = {}
    for path in plans_for:
        members_of.setdefault(groups.find(path), set()).add(str(path))
    for path, analysis in analyses.items():
        for decision in analysis.decisions:
            if decision.plan is not None:
                touches[id(decision)] = tuple(sorted(members_of[groups.find(path)] - {str(path)}))
    by_path: dict[Path, FileResult] = {}
    for path in [*analyses, *(p for p in plans_for if p not in analyses)]:
        plans = plans_for.get(path, []) if fix else []
        by_path[path] = _file_result(path, analyses.get(path), plans, touches, fix, others)
    failed = {groups.find(p): p for p, r in by_path.items() if r.status is Status.FAILED}
    members: dict[Path, list[FileChange]] = {}
    for path, result in by_path.items():
        root = groups.find(path)
        if root in failed and result.status is Status.OK:
            reason = f"not changed: {failed[root]}, changed by the same migration, could not be rewritten"
            by_path[path] = FileResult(path, Status.FAILED, reason)
            continue
        loaded = project.loaded.get(path)
        if isinstance(loaded, _Loaded) and result.new_text is not None:
            # Phase 1 wrote nothing (fix writes once phase 2 has decided): against the bytes on disk.
            new = encode(loaded.source, result.new_text)
            if new != loaded.data:
                members.setdefault(root, []).append(FileChange(path, loaded.data, new))
    merged = [by_path[r.path] if r.status is Status.OK and r.path in by_path else r for r in results]
    return Outcome(merged, [sorted(group, key=lambda c: str(c.path)) for group in members.values()])


def _file_result(
    path: Path,
    analysis: Analysis | None,
    plans: list[RewritePlan],
    touches: dict[int, tuple[str, ...]],
    fix: bool,
    others: OtherFiles,
) -> FileResult:
    project = others.project
    loaded = project.loaded[path]
    assert isinstance(loaded, _Loaded)
    diagnostics: tuple[Diagnostic, ...] = ()
    moved: set[tuple[str, int]] = set()
    if analysis is not None:
        notes = {d.site.qualname: touches[id(d)] for d in analysis.decisions if touches.get(id(d))}
        diagnostics = tuple(
            dataclasses.replace(d, also_touches=notes[d.function]) if d.function in notes else d
            for d in analysis.diagnostics
        )
        moved = {(d.site.qualname, i) for d in analysis.decisions if d.plan for i in d.plan.moved}
    if not fix:
        return project.with_origins(FileResult(path, Status.OK, diagnostics=diagnostics))
    new_text = loaded.source.text
    if plans:
        from vjp_migrate.rewrite import rewrite_module
        from vjp_migrate.roundtrip import kept_source

        try:
            new_module, dropped = rewrite_module(loaded.module, plans)
            if dropped and (imported := others.imported(path, dropped)):  # `from .ops import partial, _vjp_w`
                new_module = rewrite_module(loaded.module, plans, keep=imported)[0]
            new_text = kept_source(loaded.source.text, loaded.module, new_module.code)
        except SourceError as error:
            return FileResult(path, Status.FAILED, str(error))
        try:
            check_syntax(new_text, str(path))
        except SourceError as error:
            reason = f"internal error: the rewrite would not parse ({error}); left untouched"
            return FileResult(path, Status.FAILED, reason)
    fixed = tuple(d for d in diagnostics if (d.function, d.index) in moved)
    source = loaded.source
    result = FileResult(
        path,
        Status.OK,
        diagnostics=diagnostics,
        fixed=fixed,
        old_text=source.text,
        new_text=new_text,
        encoding=source.encoding,
    )
    return project.with_origins(result)
