"""Stage 6c: what the other files of a run use of the names a file's fix changes.

The fix of a module changes its module-level fwd and bwd (bwd's parameters, fwd's residual) and
may remove an import it made unused (`from functools import partial`) or a private alias of the
partial it left unused (`_vjp_w`, plan.aliases). Another file of the run that calls that bwd (a
test: `clip_bwd(lo, hi, res, g)`), reads that fwd as a value, or imports that name from the
module (`from pkg.ops import partial`) would break. Phase 1 notes those
names (FileResult.changed_names, see ``changed_rules``); phase 2 (project.py) looks for their
uses here: the site is then VJP003, as for such a use in its own module
(plan.shared.rules_used_elsewhere), and the import (or alias) stays. The custom_vjp itself is
noted too (role CALL): a call of it in another file that passes a static value where the fix
moves an argument (cross_calls.py) is read by classification as a call in its own module is. A
rule a site reads through the instance (`self.apply_bwd`, a method of a module-level class) is
noted as `Layer.apply_bwd`: a class of another file deriving from `Layer` (through that file's
classes too) that defines `apply_bwd` again registers its own, old-style one (sites/overrides.py
does the same in the module).

A use counts when the other file's imports lead to the name's module: `from pkg.ops import
clip_bwd`, `from . import ops` + `ops.clip_bwd`, `import pkg.ops as o` + `o.clip_bwd`, a star
import, a re-export (Project.leads_to); imports inside functions too. A file is read only when
it holds one of the names, and parsed (by `ast`) only when an import line of it also names the
module (or, for a rule, one of its packages); nothing of it is kept but the uses found.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from vjp_migrate.cross_calls import CALL, Passed, static_passed
from vjp_migrate.model import FileResult, Status
from vjp_migrate.screen.tree import dotted
from vjp_migrate.source import SourceError, decode, lf_endings

if TYPE_CHECKING:
    from vjp_migrate.api import Analysis
    from vjp_migrate.model import FunctionRef, SiteDecision
    from vjp_migrate.project import Project

IMPORT = "import"  # the role of a name whose import (or alias of the partial) the fix removes


class Wanted(NamedTuple):
    """A name of ``home`` that its fix changes, in ``role`` ("fwd", "bwd" or IMPORT); ``in_home``:
    uses in ``home`` itself count too (a rule that a site in another file migrates)."""

    home: Path
    name: str
    role: str
    in_home: bool = False


Use = tuple[Path, int]  # a file and the first line of it that uses a name


def _rules(decisions: Sequence[SiteDecision], module: object) -> Iterator[tuple[str, FunctionRef, str]]:
    """The fwd and bwd the plans of ``decisions`` change that another module can reach, each with
    the name it is reached by: a module-level def of ``module``, or one in the other file a site
    imports it from (its name), or a method of a module-level class that a site reads through the
    instance (`self.apply_bwd`), which a subclass in another file may override (`Class.method`)."""
    import libcst as cst

    from vjp_migrate.plan.shared import rewritten_rules
    from vjp_migrate.sites import body_statements

    body = module.body if isinstance(module, cst.Module) else ()
    top = {id(statement) for statement in body}
    methods = {id(s): c.name.value for c in body if type(c) is cst.ClassDef for s in body_statements(c)}
    for decision in decisions:
        if decision.plan is None:
            continue
        for role, ref, node in rewritten_rules(decision):
            if ref.path is not None or id(node) in top:
                yield role, ref, node.name.value
            elif (owner := methods.get(id(node))) is not None and ref.name != f"{owner}.{node.name.value}":
                yield role, ref, f"{owner}.{node.name.value}"


def changed_rules(decisions: Sequence[SiteDecision], module: object) -> set[tuple[str, str]]:
    """(role, name) of each fwd and bwd of ``module`` that its plans change, as another module
    reaches it (``_rules``), and of each custom_vjp (no method) whose plan moves arguments (CALL)."""
    found = {(role, name) for role, ref, name in _rules(decisions, module) if ref.path is None}
    found |= {(CALL, d.site.name) for d in decisions if d.plan and d.plan.moved and "." not in d.site.qualname}
    return found


def used_elsewhere(analyses: Mapping[Path, Analysis], others: OtherFiles) -> dict[int, str]:
    """Rules that another file of the run uses besides defvjp (`clip_bwd(lo, hi, x, g)` in a
    test, or in a fused path beside them): the rewrite would change what that use gets, so
    their sites are not rewritten, as for a use in the site's own module (plan.shared)."""
    rules: dict[int, list[Wanted]] = {}  # id(def) -> the rule in each site it is a rule of
    for path, analysis in analyses.items():
        for role, ref, name in _rules(analysis.decisions, analysis.module):
            assert ref.node is not None
            home = Path(ref.path) if ref.path is not None else path
            rules.setdefault(id(ref.node), []).append(Wanted(home, name, role, ref.path is not None))
    uses = others.uses_of(wanted for found in rules.values() for wanted in found)
    blocked: dict[int, str] = {}
    for key, found in rules.items():
        for wanted in found:
            if (use := uses.get(wanted)) is None:
                continue
            owner, _, method = wanted.name.rpartition(".")
            blocked[key] = (
                f"{wanted.role} `{method}` of `{owner}` may be another method for an instance of a subclass: one "
                f"in {use[0]} on line {use[1]} defines its own `{method}`, and the rewrite would change "
                f"`{wanted.name}` only"
                if owner
                else f"{wanted.role} `{wanted.name}` is also used in {use[0]} on line {use[1]}, not only by "
                "defvjp, and the rewrite would change what that use gets"
            )
            break
    return blocked


@dataclass
class _FileImports:
    """The imports of a module, also those inside its functions (a test imports in its test):
    local name -> the absolute targets it is bound to, the absolute target of each name a
    `from` import takes with its line, and the modules it star-imports."""

    targets: dict[str, set[str]] = field(default_factory=dict)
    froms: list[tuple[str, int]] = field(default_factory=list)
    stars: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, tree: ast.Module, package: str) -> _FileImports:
        from vjp_migrate.modules import from_binding, import_binding

        found = cls()
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local, target = import_binding(alias.name, alias.asname)
                    found.targets.setdefault(local, set()).add(target)
            elif isinstance(node, ast.ImportFrom):
                written = "." * node.level + (node.module or "")
                for alias in node.names:
                    local, bound = from_binding(written, alias.name, alias.asname, package)
                    if bound is None:
                        continue
                    if alias.name == "*":
                        found.stars.append(bound.rpartition(".")[0])
                        continue
                    found.targets.setdefault(local, set()).add(bound)
                    found.froms.append((bound, node.lineno))
        return found


Needles = dict[str, tuple[str, ...]]  # a name -> the texts that show a use of it (any one)


def _holding(haystack: str | bytes, names: Needles) -> set[str]:
    """Those of ``names`` whose texts ``haystack`` holds; a dotted one holds where each of its parts
    does (a method, `Base.apply_bwd`, is overridden where both its class and its name are). Only
    names whose first part is a word of ``haystack`` are searched: one scan for its words, however
    many names a run asks about (the bytes' words are ASCII: the caller asks the others of a text)."""
    if isinstance(haystack, bytes):
        data = haystack
        words = {word.decode() for word in set(re.findall(rb"\w+", data))}

        def held(part: str) -> bool:
            return part.encode() in data
    else:
        text = haystack
        words = set(re.findall(r"\w+", text))

        def held(part: str) -> bool:
            return part in text

    return {
        name
        for name, needles in names.items()
        if name.partition(".")[0] in words and any(all(map(held, needle.split("."))) for needle in needles)
    }


class OtherFiles:
    """The files of the run, read for uses of the names fixes change. Each file is read (decoded
    as Python would, or the text phase 2 loaded) and parsed once per batch of names, only when
    it may use one, and nothing of it is kept but the uses found: a run over tens of thousands
    of files must not hold their texts. The run's Project (``files`` and ``roots`` indexed) is
    made when first needed: no other file may hold a name (and LibCST is not imported then)."""

    def __init__(self, files: Sequence[Path], roots: Sequence[Path] = (), project: Project | None = None) -> None:
        self.files, self.roots, self._project = files, roots, project
        self.found: dict[Wanted, Use | None] = {}
        self.passed: dict[Wanted, list[Passed]] = {}  # the static values each CALL's calls pass

    @property
    def project(self) -> Project:
        if self._project is None:
            from vjp_migrate.project import Project

            self._project = Project((tuple(self.files), tuple(self.roots)))
        return self._project

    def again(self) -> OtherFiles:
        """The same run in a new Project (phase 2 starting over), with the uses found so far."""
        from vjp_migrate.project import Project

        others = OtherFiles(self.files, self.roots, Project(self.project.index))
        others.found, others.passed = self.found, self.passed
        return others

    def outside(self) -> dict[Path, dict[str, tuple[Passed, ...]]]:
        """By file and custom_vjp: the static values calls in the run's other files pass it."""
        found: dict[Path, dict[str, tuple[Passed, ...]]] = {}
        for wanted, passed in self.passed.items():
            found.setdefault(wanted.home, {})[wanted.name] = tuple(passed)
        return found

    def changed_and_used(self, results: Iterable[FileResult]) -> set[Path]:
        """The files of phase 1's ``results`` with a changed name (FileResult.changed_names) that
        another file of the run uses."""
        changes = (
            Wanted(r.path, name, role) for r in results if r.status is Status.OK for role, name in r.changed_names
        )
        return {wanted.home for wanted in self.uses_of(changes)}

    def uses_of(self, wanted: Iterable[Wanted]) -> dict[Wanted, Use]:
        """For each name: the first file and line of the run that use it."""
        asked = set(wanted)
        missing = sorted(asked - self.found.keys())
        self.found.update(dict.fromkeys(missing))
        by_name: dict[str, list[Wanted]] = {}  # the names still looked for
        homes: dict[str, set[str]] = {}  # a part of a home's names -> those homes (see _importing)
        for w in missing:
            by_name.setdefault(w.name, []).append(w)
            for part in _path_names(w.home):
                homes.setdefault(part, set()).add(str(w.home))
        # A custom_vjp (CALL) matters only where it is called, `scale(`, or renamed, `scale as s`.
        needles: Needles = {
            name: (f"{name}(", f"{name} as ") if all(w.role == CALL for w in ws) else (name,)
            for name, ws in by_name.items()
        }
        for path in self.files:
            if not by_name:
                break
            read = self._read(path, needles)
            if read is None:
                continue
            text, present = read
            here = self._importing(path, text, [w for name in present for w in by_name[name]], homes)
            tree = _tree(text) if here else None
            if tree is None:
                continue
            for w, line in self._uses_in(path, tree, here, text).items():
                if self.found[w] is None:
                    self.found[w] = (path, line)
                if w.role == CALL:  # every call is read: a later one may pass a static value too
                    continue
                by_name[w.name].remove(w)
                if not by_name[w.name]:
                    del by_name[w.name], needles[w.name]
        return {w: use for w in asked if (use := self.found[w]) is not None}

    def imported(self, home: Path, names: Iterable[str]) -> set[str]:
        """Which of ``names`` (imports and aliases the fix of ``home`` removes) other files of the run take from it."""
        return {w.name for w in self.uses_of(Wanted(home, name, IMPORT) for name in names)}

    def _read(self, path: Path, names: Needles) -> tuple[str, set[str]] | None:
        """The text of the module at ``path`` and which of ``names`` it holds (any of the texts
        searched for each), when it holds one."""
        from vjp_migrate.files import read_bytes

        if path.suffix != ".py":
            return None
        text = self._project.loaded_text(path) if self._project is not None else None
        if text is not None:
            present = _holding(text, names)
            return (text, present) if present else None
        others = {name: needles for name, needles in names.items() if not name.isascii()}
        try:
            data = read_bytes(path)
            # An ASCII name is in the bytes, whichever encoding Python reads the source in.
            present = _holding(data, names)
            if not present and not others:
                return None
            text = decode(data).text
        except (SourceError, OSError):
            return None
        present |= _holding(text, others)
        return (text, present) if present else None

    def _importing(self, path: Path, text: str, asked: list[Wanted], homes: dict[str, set[str]]) -> list[Wanted]:
        """Those of ``asked`` that ``path`` may import: an import line names their module (or,
        for a rule, a folder above it: a package, which may re-export it). ``homes``: the homes of
        the names asked, by each part of their names (``_path_names``), looked up by the import
        lines' words (a short name is asked of many homes, and a Path compares slowly)."""
        here, words = str(path), set(re.findall(r"\w+", import_lines(text)))
        near = set().union(*(homes[word] for word in words if word in homes))
        kept = []
        for wanted in asked:
            home = str(wanted.home)
            if home == here:
                if wanted.in_home:
                    kept.append(wanted)
            elif home in near and (wanted.role != IMPORT or _path_names(wanted.home)[-1] in words):
                kept.append(wanted)
        return kept

    def _modules(self, home: Path) -> list[str]:
        """``home``'s module names in the run, the canonical one last."""
        index = self.project.index
        names = [name for name in (index.rooted.get(home), index.names.get(home)) if name]
        return names or [home.parent.name if home.stem == "__init__" else home.stem]

    def _uses_in(self, path: Path, tree: ast.Module, asked: list[Wanted], text: str) -> dict[Wanted, int]:
        """The first line of ``path`` that uses each of ``asked``. Its code is read only for the
        names its imports may bind (the code of a large module takes long to walk). A CALL's use
        is a call that passes a static value (noted in ``passed``)."""
        from vjp_migrate.plan.shared import loads_besides_defvjp

        imports = _FileImports.of(tree, self.project.index.package_of(path))
        found: dict[Wanted, int] = {}
        spellings: dict[Wanted, set[str]] = {}  # the name, and the local names it is imported as
        for wanted in asked:
            owner, _, method = wanted.name.rpartition(".")
            if owner:  # a method read through the instance: a subclass overriding it is a use
                means = functools.partial(self._means, path, imports, wanted=wanted._replace(name=owner))
                if (line := _overriding(tree, method, means)) is not None:
                    found[wanted] = line
                continue
            if wanted.role == IMPORT:  # the import itself fails once the name is gone
                lines = [line for target, line in imports.froms if self._takes(target, path, wanted)]
                if lines:
                    found[wanted] = min(lines)
                    continue
            aliases = {
                local
                for local, targets in imports.targets.items()
                if any(self._takes(t, path, wanted) for t in targets)
            }
            if aliases or self._may_read(path, imports, wanted):
                spellings[wanted] = {wanted.name, *aliases}
        primals = {wanted: names for wanted, names in spellings.items() if wanted.role == CALL}
        if primals:
            found.update(self._calls_in(path, tree, imports, primals, text))
        spellings = {wanted: names for wanted, names in spellings.items() if wanted.role != CALL}
        if not spellings:
            return found
        try:
            values, calls, residual_reads = loads_besides_defvjp(tree, set().union(*spellings.values()))
        except (RecursionError, MemoryError):  # too deep to walk: taken for a use, at its first import
            first = min((line for _, line in imports.froms), default=1)
            return {**found, **dict.fromkeys(spellings, first)}
        for wanted, names in spellings.items():
            # fwd keeps its signature: a call that keeps only its output `[0]` sees no change.
            tables = [values, residual_reads] if wanted.role == "fwd" else [values, calls]
            lines = [
                line
                for table in tables
                for spelled, at in table.items()
                if spelled.rpartition(".")[2] in names and self._means(path, imports, spelled, wanted)
                for line in at
            ]
            if lines:
                found[wanted] = min(lines)
        return found

    def _calls_in(
        self, path: Path, tree: ast.Module, imports: _FileImports, calls: dict[Wanted, set[str]], text: str
    ) -> dict[Wanted, int]:
        """The static values the calls of each of ``calls`` in ``path`` pass (noted in
        ``passed``), and the first line of such a call."""
        defs = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

        def resolve(name: str) -> str | None:
            head, _, rest = name.partition(".")
            targets = imports.targets.get(head, set())
            if len(targets) == 1:
                return f"{next(iter(targets))}.{rest}" if rest else next(iter(targets))
            return "" if name in defs and not targets else None

        found: dict[Wanted, int] = {}
        for node in ast.walk(tree):
            spelled = dotted(node.func) if isinstance(node, ast.Call) else None
            if spelled is None:
                continue
            assert isinstance(node, ast.Call)
            for wanted, names in calls.items():
                if spelled.rpartition(".")[2] not in names or not self._means(path, imports, spelled, wanted):
                    continue
                passed = list(static_passed(node, text, str(path), resolve))
                if passed:
                    self.passed.setdefault(wanted, []).extend(passed)
                    found[wanted] = min(found.get(wanted, node.lineno), node.lineno)
        return found

    def _takes(self, target: str, path: Path, wanted: Wanted) -> bool:
        """Whether an import of ``path`` with ``target`` takes ``wanted``'s name."""
        return target.rpartition(".")[2] == wanted.name and self._leads(target, path, wanted)

    def _may_read(self, path: Path, imports: _FileImports, wanted: Wanted) -> bool:
        """Whether ``path`` may read ``wanted``'s name without importing it by name: it is its
        home, star-imports it, or imports its module or a package of it."""
        if path == wanted.home or any(self._leads(f"{star}.{wanted.name}", path, wanted) for star in imports.stars):
            return True
        modules = self._modules(wanted.home)
        bound = {target for targets in imports.targets.values() for target in targets}
        return any(module == target or module.startswith(f"{target}.") for module in modules for target in bound)

    def _means(self, path: Path, imports: _FileImports, spelled: str, wanted: Wanted) -> bool:
        """Whether ``spelled`` (`clip_bwd`, `ops.clip_bwd`) read in ``path`` is ``wanted``'s name."""
        head, _, rest = spelled.partition(".")
        targets = imports.targets.get(head)
        if targets:
            return any(self._leads(f"{target}.{rest}" if rest else target, path, wanted) for target in targets)
        if rest:
            return False
        if path == wanted.home:
            return True
        return any(self._leads(f"{star}.{spelled}", path, wanted) for star in imports.stars)

    def _leads(self, target: str, path: Path, wanted: Wanted) -> bool:
        return self.project.leads_to(target, path, wanted.home, wanted.name)


def _overriding(tree: ast.Module, method: str, means: Callable[[str], bool]) -> int | None:
    """The line of the first class of ``tree`` that derives from the class ``means`` takes a base
    for (through other classes of ``tree`` too) and binds ``method`` in its body."""
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    heirs: set[str] = set()
    while True:
        more = {c.name for c in classes if c.name not in heirs and any(_derives(b, heirs, means) for b in c.bases)}
        if not more:
            break
        heirs |= more
    lines = [c.lineno for c in classes if c.name in heirs and _binds(c, method)]
    return min(lines, default=None)


def _derives(base: ast.expr, heirs: set[str], means: Callable[[str], bool]) -> bool:
    """Whether a base (`Base`, `layers.Base`, `Base[T]`) is one of ``heirs`` or what ``means`` takes it for."""
    base = base.value if isinstance(base, ast.Subscript) else base
    if not isinstance(base, (ast.Name, ast.Attribute)):
        return False
    spelled = ast.unparse(base)
    return spelled in heirs or means(spelled)


def _binds(cls: ast.ClassDef, name: str) -> bool:
    """Whether the body of ``cls`` binds ``name``: a def, a class, an assignment (not inside its defs)."""
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name == name:
                return True
            continue
        for node in ast.walk(statement):
            named = getattr(node, "name", None) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            if named == name or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name):
                return True
    return False


@functools.lru_cache(maxsize=4096)  # asked once per file of the run that may use the module
def _path_names(home: Path) -> tuple[str, ...]:
    """The folder names above ``home`` and its module's own name, last: the parts of any name
    the module has (its packages, or its folders below an import root)."""
    *folders, _ = Path(os.path.abspath(home)).parts
    own = folders[-1] if home.stem == "__init__" else home.stem
    return (*(folder for folder in folders if folder.isidentifier() and folder != own), own)


def _statements(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """The statements of ``body`` and of the blocks in them (an import is a statement: the
    expressions, most of a module's nodes, are not walked)."""
    for statement in body:
        yield statement
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(statement, block, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def import_lines(text: str) -> str:
    """The lines of ``text`` where `import` follows only blanks, a `from` clause or a `;`, each
    with the rest of a parenthesized list it opens (`from . import (\n    ops,\n)`): every
    import statement, and maybe a few lines of strings."""
    text = lf_endings(text)  # a lone CR ends a line too
    lines = []
    at = text.find("import")
    while at != -1:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end == -1 else end
        if "(" in text[at:end] and ")" not in text[at:end]:
            close = text.find(")", end)
            end = len(text) if close == -1 else close
        head = text[start:at].lstrip()
        word = not (text[at + 6 : at + 7].isalnum() or text[at + 6 : at + 7] == "_")  # not `important`
        if word and (not head or head.startswith("from") or ";" in head):
            lines.append(text[start:end])
        at = text.find("import", end)
    return "\n".join(lines)


def _tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
