"""Stage 6b: project-wide analysis: custom_vjp rules imported from other files of the same run.

Phase 1 analyses every file on its own (workers, cache); a site whose fwd or bwd is imported
is then VJP003 ("... which is not among the files checked") and its file says which modules
it imports rules from (``FileResult.imported_rules``). Phase 2, here, analyses those files
again in one ``Project``: every file is parsed once, an imported rule resolves to the
FunctionDef in the other file's tree, and classification and planning run unchanged on those
nodes. The plans of one migration are applied to every file they touch, and the files a
migration touches form one group, written together.

A rule used by several custom_vjp functions (in any files) is rewritten only when every user
migrates the same argument positions the same way; otherwise all users get VJP003.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from vjp_migrate.model import Diagnostic, FileResult, FunctionRef, RewritePlan, Settings, SiteDecision, Status, VjpSite
from vjp_migrate.modules import ModuleImports, ModuleIndex, module_imports
from vjp_migrate.source import SourceError, SourceText, check_syntax, decode, encode, parse
from vjp_migrate.transaction import FileChange, Outcome

if TYPE_CHECKING:
    import libcst as cst

    from vjp_migrate.api import Analysis
    from vjp_migrate.classify.context import Context
    from vjp_migrate.imports import ImportTable
    from vjp_migrate.sites import ImportedRule, ImportedValue

_MAX_REEXPORTS = 4  # `from ._impl import bwd` in an __init__.py, followed this many times


def _not_checked(module: str) -> str:
    return f"imported from `{module}`, which is not among the files checked"


def outside_message(role: str, name: str, module: str) -> str:
    return (
        f"{role} `{name}` is imported from `{module}`, which is not among the files checked; "
        "include it to migrate this function"
    )


@dataclass
class _Loaded:
    data: bytes
    source: SourceText
    module: cst.Module


@dataclass
class Project:
    """The parsed files of one run and the answers analyze asks of them (see api.analyze)."""

    # A Path: the project of that one file, indexed when first needed (most files never need it:
    # the index only resolves rules imported from other files, and building it reads folders).
    indexed: ModuleIndex | Path
    loaded: dict[Path, _Loaded | str] = field(default_factory=dict)  # a str says why it failed
    # The modules each analysed file imports rules from (phase 1 reports them).
    imported: dict[Path, set[str]] = field(default_factory=dict)
    blocked: dict[int, str] = field(default_factory=dict)  # id(rule node) -> the VJP003 detail

    @classmethod
    def for_file(cls, path: Path) -> Project:
        """A project of one file: imported rules are named, never resolved."""
        return cls(path)

    @property
    def index(self) -> ModuleIndex:
        if isinstance(self.indexed, Path):
            self.indexed = ModuleIndex.build([self.indexed])
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
            module, imports, self.imported_rule(Path(path), importer), self.imported_value(Path(path), importer)
        )
        return [self._block(site) for site in sites]

    def _block(self, site: VjpSite) -> VjpSite:
        for ref in (site.fwd, site.bwd):
            if ref is not None and ref.node is not None and id(ref.node) in self.blocked:
                return dataclasses.replace(site, problem=self.blocked[id(ref.node)])
        return site

    def widen(self, ctx: Context, sites: Sequence[VjpSite]) -> Context:
        """Let classification read rules from other modules with those modules' imports."""
        from vjp_migrate import walk
        from vjp_migrate.classify.module_facts import module_helpers
        from vjp_migrate.imports import ImportTable, import_table

        others = {ref.path for site in sites for ref in (site.fwd, site.bwd) if ref is not None and ref.path}
        if not others:
            return ctx
        aliases, shadowed, helpers = dict(ctx.imports.aliases), set(ctx.imports.shadowed), dict(ctx.helpers)
        conflicts: set[str] = set()
        for other in sorted(others):
            loaded = self.loaded.get(Path(other))
            if not isinstance(loaded, _Loaded):
                continue
            walk.cover(loaded.module)  # its helpers are walked by replays, not node by node
            table = import_table(loaded.module)
            for name, target in table.aliases.items():
                if aliases.setdefault(name, target) != target:
                    conflicts.add(name)  # two meanings: neither is trusted
            shadowed |= table.shadowed
            for name, helper in module_helpers(loaded.module).items():
                helpers.setdefault(name, helper)
        for name in conflicts:
            aliases.pop(name, None)
        return dataclasses.replace(ctx, imports=ImportTable(aliases, frozenset(shadowed)), helpers=helpers)

    # --- resolving imported rules and constants ----------------------------------------------

    def _importer(self, path: Path, module: cst.Module) -> Callable[[str], tuple[str, str | None] | None]:
        """For a local name the module imports: the module it comes from (recorded for phase 1)
        and its absolute target when that can be told; None when the name is not imported."""
        found: list[ModuleImports] = []  # read on the first name looked up (most modules: never)

        def origin_and_target(local: str) -> tuple[str, str | None] | None:
            if not found:
                found.append(module_imports(module, self.index.package_of(path)))
            origin = found[0].origin(local)
            if origin is None:
                return None
            self.imported.setdefault(path, set()).add(origin)
            return origin, found[0].target(local)

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

    def _follow(
        self, target: str, find: Callable[[cst.Module, str], _Found | None], importer: Path
    ) -> _Followed[_Found]:
        """Where an import target of the module at ``importer`` leads among the checked modules,
        re-exports followed (up to _MAX_REEXPORTS): what ``find`` finds there, or why nothing is found."""
        depth = 0
        while True:
            split = self.index.split(target)
            if split is None:
                return _Followed(target)
            module_name, attribute = split
            paths = self.index.files_named(module_name, importer)
            if len(paths) > 1:
                problem = f"{len(paths)} files of the run are `{module_name}`: " + ", ".join(map(str, paths))
                return _Followed(target, module_name, attribute, problem=problem)
            path = importer = paths[0]
            loaded = self.load(path)
            if isinstance(loaded, str):
                return _Followed(target, module_name, attribute, path, problem=loaded)
            found = find(loaded.module, attribute)
            if found is not None:
                return _Followed(target, module_name, attribute, path, found=found)
            further = module_imports(loaded.module, self.index.package_of(path)).target(attribute)
            if further is None or depth == _MAX_REEXPORTS:
                return _Followed(target, module_name, attribute, path)
            target, depth = further, depth + 1

    def _constant(self, target: str, importer: Path) -> cst.BaseExpression | str:
        from vjp_migrate.sites import module_constants

        followed = self._follow(target, lambda module, name: module_constants(module).get(name), importer)
        if followed.module_name is None:
            return _not_checked(followed.target.rpartition(".")[0] or followed.target)
        if followed.problem is not None:
            return f"imported from `{followed.module_name}`, which could not be used ({followed.problem})"
        if followed.found is not None:
            return followed.found
        return f"imported from `{followed.module_name}`, where no constant `{followed.attribute}` is assigned"

    def _lookup(self, role: str, local: str, target: str, importer: Path) -> FunctionRef:
        from vjp_migrate.imports import ImportTable, import_table
        from vjp_migrate.sites import Scope, find_def
        from vjp_migrate.sites.jit import rule_decorations

        followed = self._follow(
            target, lambda module, name: find_def(Scope(list(module.body), None, False, ""), name), importer
        )
        origin = followed.target.rpartition(".")[0] or followed.target
        module_name = followed.module_name
        if module_name is None:
            return FunctionRef(local, None, outside_message(role, local, origin), module=origin)
        if followed.problem is not None:
            held = f"`{module_name}`" + (f" ({followed.path})" if followed.path is not None else "")
            problem = f"{role} `{local}` is imported from {held}, which could not be used ({followed.problem})"
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


_Found = TypeVar("_Found")


@dataclass(frozen=True)
class _Followed(Generic[_Found]):
    """The end of Project._follow: the last target followed, the checked module that holds it
    (None: no checked module does), why that module could not be read, or what was found."""

    target: str
    module_name: str | None = None
    attribute: str = ""
    path: Path | None = None
    problem: str | None = None
    found: _Found | None = None


# --- phase 2 -----------------------------------------------------------------------------------


def _rule_files(decision: SiteDecision) -> set[str]:
    site = decision.site
    return {ref.path for ref in (site.fwd, site.bwd) if ref is not None and ref.path is not None}


class _OtherFiles:
    """The files of the run, read for uses of rules besides defvjp. Each file is read (decoded as
    Python would, or the text phase 2 loaded) and parsed by `ast` once per batch of rule names,
    only when a name is in it, and nothing of it is kept but the uses found: a run over tens of
    thousands of files must not hold their texts."""

    def __init__(self, project: Project, files: Sequence[Path]) -> None:
        self.project, self.files = project, files
        self.found: dict[tuple[str, str], tuple[Path, int] | None] = {}

    def uses_of(self, rules: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[Path, int]]:
        """For each (name, role) of a rule: the first file and line that use it besides a defvjp call."""
        from vjp_migrate.plan.shared import uses_besides_defvjp

        missing = sorted(rules - self.found.keys())
        self.found.update(dict.fromkeys(missing))
        names = {name for name, _ in missing}
        for path in self.files if missing else ():
            text = self._text(path)
            present = {name for name in names if name in text} if text is not None else set()
            tree = self._tree(text) if text is not None and present else None
            if tree is None:
                continue
            for name, role in missing:
                if name in present and self.found[(name, role)] is None:
                    lines = uses_besides_defvjp(tree, name, role)
                    if lines:
                        self.found[(name, role)] = (path, lines[0])
        return {rule: use for rule in rules if (use := self.found[rule]) is not None}

    def _text(self, path: Path) -> str | None:
        from vjp_migrate.files import read_bytes

        loaded = self.project.loaded.get(path)
        try:
            return loaded.source.text if isinstance(loaded, _Loaded) else decode(read_bytes(path)).text
        except (SourceError, OSError):
            return None

    @staticmethod
    def _tree(text: str) -> ast.Module | None:
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _used_elsewhere(analyses: dict[Path, Analysis], others: _OtherFiles) -> dict[int, str]:
    """Rules in another file of the run that something besides defvjp uses there or elsewhere
    (`clip_bwd(lo, hi, x, g)` in a fused path): the rewrite would change what that use gets, so
    their sites are not rewritten, as for a rule in the site's own module (plan.shared)."""
    rules: dict[int, list[tuple[str, str]]] = {}  # a def's (name, role) in each site it is a rule of
    for analysis in analyses.values():
        for decision in analysis.decisions:
            if decision.plan is None:
                continue
            for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd)):
                if ref is not None and ref.node is not None and ref.path is not None:
                    rules.setdefault(id(ref.node), []).append((ref.node.name.value, role))
    uses = others.uses_of({rule for found in rules.values() for rule in found})
    blocked: dict[int, str] = {}
    for key, found in rules.items():
        for name, role in found:
            if (use := uses.get((name, role))) is not None:
                blocked[key] = (
                    f"{role} `{name}` is also used in {use[0]} on line {use[1]}, not only by defvjp, "
                    "and the rewrite would change what that use gets"
                )
                break
    return blocked


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
        for decision in analysis.decisions:
            pending.extend(Path(p) for p in sorted(_rule_files(decision)))
    return analyses


def complete(
    results: list[FileResult], files: Sequence[Path], roots: Sequence[Path], settings: Settings, fix: bool
) -> Outcome:
    """Phase 2 over phase 1's ``results``: files whose rules are imported from other given files.

    ``fix``: the results carry the new texts and the outcome the groups of changes to write.
    """
    flagged = [r.path for r in results if r.status is Status.OK and r.imported_rules]
    if not flagged or len(files) < 2:
        return Outcome(results, [])
    project = Project(ModuleIndex.build(files, roots))
    analyses = _analyse_all(project, flagged, settings)
    others = _OtherFiles(project, files)
    while True:  # each round blocks at least one more rule, so this ends
        found = {**_used_elsewhere(analyses, others), **_disagreements(analyses)}
        blocked = {k: v for k, v in found.items() if k not in project.blocked}
        if not blocked:
            break
        project.blocked.update(blocked)
        analyses = _analyse_all(project, list(analyses), settings)
    return _outcome(results, project, analyses, fix)


def _outcome(results: list[FileResult], project: Project, analyses: dict[Path, Analysis], fix: bool) -> Outcome:
    groups = _Groups()
    plans_for: dict[Path, list[RewritePlan]] = {}
    touches: dict[int, tuple[str, ...]] = {}  # id(decision) -> the other files its fix changes
    for path, analysis in analyses.items():
        for decision in analysis.decisions:
            if decision.plan is None:
                continue
            plans_for.setdefault(path, []).append(decision.plan)
            for other in sorted(_rule_files(decision) - {str(path)}):
                plans_for.setdefault(Path(other), []).append(decision.plan)
                groups.join(path, Path(other))
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
        by_path[path] = _file_result(path, analyses.get(path), project, plans, touches, fix)
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
    project: Project,
    plans: list[RewritePlan],
    touches: dict[int, tuple[str, ...]],
    fix: bool,
) -> FileResult:
    loaded = project.loaded[path]
    assert isinstance(loaded, _Loaded)
    imported = tuple(sorted(project.imported.get(path, ())))
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
        return FileResult(path, Status.OK, diagnostics=diagnostics, imported_rules=imported)
    new_text = loaded.source.text
    if plans:
        from vjp_migrate.rewrite import apply_plans

        new_text = apply_plans(loaded.module, plans).code
        try:
            check_syntax(new_text, str(path))
        except SourceError as error:
            reason = f"internal error: the rewrite would not parse ({error}); left untouched"
            return FileResult(path, Status.FAILED, reason)
    fixed = tuple(d for d in diagnostics if (d.function, d.index) in moved)
    return FileResult(
        path,
        Status.OK,
        diagnostics=diagnostics,
        fixed=fixed,
        old_text=loaded.source.text,
        new_text=new_text,
        imported_rules=imported,
    )
