"""Stage 10: the library the CLI stands on: check_source / fix_source and their path-level versions.

Nothing here raises for one bad file: path-level functions return a FileResult saying what
went wrong, and the other files are still processed.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate.codes import DEFAULT_SELECT, may_trigger
from vjp_migrate.discover import Found, discover
from vjp_migrate.files import WriteError, read_bytes, write_batch, write_file
from vjp_migrate.model import Diagnostic, FileResult, FixResult, Settings, SiteDecision, Status, VjpSite
from vjp_migrate.screen import Verdict, screen
from vjp_migrate.source import SourceError, SourceText, check_size, check_syntax, decode, encode, parse

if TYPE_CHECKING:
    from vjp_migrate.cache import Cache
    from vjp_migrate.project import Project
    from vjp_migrate.transaction import Outcome
    from vjp_migrate.workers import Task

__all__ = [
    "Settings",
    "SourceError",
    "check_file",
    "check_paths",
    "check_source",
    "fix_file",
    "fix_paths",
    "fix_source",
]

DEFAULT_SETTINGS = Settings(select=DEFAULT_SELECT)


@dataclass(frozen=True)
class Analysis:
    diagnostics: tuple[Diagnostic, ...]
    decisions: tuple[SiteDecision, ...]
    module: object | None  # the libcst Module, when the text was parsed
    silenced: tuple[Diagnostic, ...] = ()  # the findings that noqa comments silenced


def _may_contain(text: str, settings: Settings) -> bool:
    return may_trigger(text.encode("utf-8", "surrogatepass"), settings.select)


def analyze(
    text: str,
    path: str,
    settings: Settings,
    parse_anyway: bool = False,
    project: Project | None = None,
    noqa: bool = True,
) -> Analysis:
    """Parse (when a finding is possible) and decide every site; SourceError for bad input.

    ``project`` resolves rules imported from other files (project.py); without it, such a
    rule is named in a VJP003 and left alone. ``noqa=False``: `# noqa` comments silence nothing
    (flake8's --disable-noqa).
    """
    return _analyze(text, path, settings, parse_anyway, project, noqa=noqa)


def _analyze(
    text: str,
    path: str,
    settings: Settings,
    parse_anyway: bool,
    project: Project | None = None,
    syntax_checked: bool = False,
    noqa: bool = True,
) -> Analysis:
    if not _may_contain(text, settings):
        if parse_anyway and not syntax_checked:
            check_syntax(text, path)
        return Analysis((), (), None)
    module = (project.parse if project else parse)(text, path, syntax_checked=syntax_checked)
    # Imported here: a run where the byte filter rules everything out never loads these.
    import libcst as cst

    from vjp_migrate.classify import apply_overrides, classify_site
    from vjp_migrate.classify.context import Context
    from vjp_migrate.findings import diagnostics_for, with_alias_notes
    from vjp_migrate.imports import import_table
    from vjp_migrate.noqa import suppress
    from vjp_migrate.plan import decide, moved_positions
    from vjp_migrate.plan.closures import kept_more, nondiff_after, nondiff_hoped
    from vjp_migrate.plan.shared import reconcile_shared, rules_used_elsewhere
    from vjp_migrate.sites import find_sites
    from vjp_migrate.walk import index_of

    imports = import_table(module)
    sites = project.find_sites(module, imports, path) if project is not None else find_sites(module, imports)
    if not sites:
        return Analysis((), (), module)
    index = index_of(module)  # positions, and cheap replays of the visitors below

    def header_of(site: VjpSite) -> range:
        """The decorator and def lines, where a `# noqa` silences the site (the call's, for a
        primal that is no def of the module)."""
        if site.primal is None or site.primal_expr is not None:
            lines = index.span(site.carrier)
            return range(lines[0], lines[2] + 1)
        first = site.primal.decorators[0] if site.primal.decorators else site.primal
        body = index.span(site.primal.body)[0]
        end = body if isinstance(site.primal.body, cst.SimpleStatementSuite) else body - 1
        return range(index.span(first)[0], end + 1)

    ctx = Context.of(module, imports, index.line).with_sites(sites)
    if project is not None:
        ctx = project.widen(ctx, sites, module, path)
    infos = tuple(tuple(apply_overrides(classify_site(site, module, ctx), site, path, settings)) for site in sites)
    # A site's plan depends on the positions other sites keep nondiff (plan.closures): rounds from
    # the hope that every plan moves what the settings select, until the plans keep no more (a
    # site silenced by a noqa comment keeps all of them). Those of other files: callees.py.
    callees = nondiff_hoped(sites, tuple(moved_positions(i, settings) for i in infos))
    imported = project.imported_callees(path, module) if project is not None else None
    while True:
        decisions = tuple(
            decide(site, i, settings, imports, ctx, callees, imported) for site, i in zip(sites, infos, strict=True)
        )
        decisions = reconcile_shared(rules_used_elsewhere(decisions, module, text))
        diagnostics = tuple(d for decision in decisions for d in diagnostics_for(decision, settings, index.span, path))
        silenced: tuple[Diagnostic, ...] = ()
        if noqa:
            decisions, diagnostics, silenced = suppress(text, decisions, diagnostics, header_of)
        decisions = reconcile_shared(decisions)  # a silenced user keeps the rules it shares unchanged
        wider = kept_more(callees, nondiff_after(decisions))
        if wider == callees:
            break
        callees = wider
    diagnostics = with_alias_notes(decisions, diagnostics)
    if project is not None:
        project.note_changes(path, decisions, module)
    return Analysis(diagnostics, decisions, module, silenced)


def check_source(code: str, *, path: str = "<string>", settings: Settings = DEFAULT_SETTINGS) -> list[Diagnostic]:
    """Findings in one source text. Raises SourceError (one line, no traceback) for bad input."""
    return list(analyze(code, path, settings, parse_anyway=True).diagnostics)


def fix_source(code: str, *, path: str = "<string>", settings: Settings = DEFAULT_SETTINGS) -> FixResult:
    """The migrated text of one source. Raises SourceError for bad input.

    The output is checked to parse; a rewrite that would not parse raises SourceError and
    nothing is changed.
    """
    return _fix_text(code, path, settings, None)


def _fix_text(
    code: str, path: str, settings: Settings, project: Project | None, syntax_checked: bool = False
) -> FixResult:
    analysis = _analyze(code, path, settings, True, project, syntax_checked)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    if not plans:
        return FixResult(code, False, analysis.diagnostics, ())
    import libcst as cst

    from vjp_migrate.rewrite import rewrite_module
    from vjp_migrate.roundtrip import kept_source
    from vjp_migrate.walk import index_of

    module = analysis.module
    assert isinstance(module, cst.Module)
    new_module, dropped = rewrite_module(module, plans)
    if project is not None:
        project.note_dropped(path, dropped)
    # The source text with only the changed nodes' code generated (splice.py); the statements
    # of the module's body that changed are checked again (they parse on their own).
    new_code, changed = index_of(module).code(new_module)
    new_code = kept_source(code, module, new_code)
    try:
        check_syntax("".join(changed), path)  # one parse (each ends with its newline)
    except SourceError:
        try:  # the whole file: the message names its line (and a `from __future__` may come late)
            check_syntax(new_code, path)
        except SourceError as error:
            raise SourceError(f"internal error: the rewrite would not parse ({error}); left untouched") from None
    moved = {(d.site.qualname, i) for d in analysis.decisions if d.plan for i in d.plan.moved}
    fixed = tuple(d for d in analysis.diagnostics if (d.function, d.index) in moved)
    return FixResult(new_code, new_code != code, analysis.diagnostics, fixed)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """CPython's cyclic garbage collector paused while one file is analysed (or phase 2 runs,
    which holds the tree of every module it reads while it analyses). The screen's ast,
    the LibCST tree and what the stages make of it are thousands of objects that live until the
    file is done, and every 700 of them started a collection that had to walk them and found
    no garbage. Reference counting frees them at the end of the block (the index of the module
    analysed last too: ``walk.forget``), so the next collection finds few objects to walk; it
    also collects whatever cycles were made inside."""
    if not gc.isenabled():  # paused by the caller, or by another thread in such a block
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        walk = sys.modules.get("vjp_migrate.walk")  # not imported when no file got that far
        if walk is not None:
            walk.forget()
        gc.enable()


def guarded(path: Path, work: Callable[[], FileResult]) -> FileResult:
    """``work()``, or the FAILED result for ``path`` saying in one line why it raised."""
    try:
        return work()
    except Exception as error:  # one file must never take the run down
        return failed_result(path, error)


def failed_result(path: Path, error: BaseException) -> FileResult:
    """The FAILED result for ``path`` whose reason is ``error`` in one line (no traceback)."""
    if isinstance(error, SourceError):
        return FileResult(path, Status.FAILED, str(error))
    if isinstance(error, WriteError):
        return FileResult(path, Status.FAILED, f"cannot be written: {error.strerror or error}; left untouched")
    if isinstance(error, OSError):
        return FileResult(path, Status.FAILED, f"cannot be read: {error.strerror or error}")
    if isinstance(error, RecursionError):
        return FileResult(path, Status.FAILED, "nested too deeply to analyse")
    return FileResult(path, Status.FAILED, f"internal error: {type(error).__name__}: {error}")


def _screen(text: str, settings: Settings) -> Verdict:
    """Whether the full analysis is needed; SourceError when the source is too large for it."""
    if _may_contain(text, settings):
        check_size(text)  # before the screen: even its ast pass takes many seconds on such a file
    return screen(text, settings)


def check_file(
    path: Path, settings: Settings = DEFAULT_SETTINGS, explicit: bool = True, cache: Cache | None = None
) -> FileResult:
    """Findings in one file; FAILED with the reason when it cannot be processed."""

    def work() -> FileResult:
        data = read_bytes(path)
        if not explicit and not may_trigger(data, settings.select):
            return FileResult(path, Status.OK)
        cached = cache.get(path, data, explicit) if cache is not None else None
        if cached is not None:
            return cached
        source = decode(data)
        if path.suffix == ".ipynb":
            from vjp_migrate.notebook import check_notebook

            result = FileResult(path, Status.OK, diagnostics=check_notebook(source.text, str(path), settings))
        elif not (verdict := _screen(source.text, settings)).may_report:  # it parsed, and nothing can be found
            result = FileResult(path, Status.OK)
        else:
            from vjp_migrate.project import Project

            project = Project.for_file(path)
            analysis = _analyze(source.text, str(path), settings, explicit, project, syntax_checked=verdict.parses)
            result = project.with_origins(FileResult(path, Status.OK, diagnostics=analysis.diagnostics))
            if project.read_elsewhere:  # it read another file (an imported callee or alias): not cached
                return result
        if cache is not None:
            cache.put(path, data, explicit, result)
        return result

    with _no_cycle_collection():
        return guarded(path, work)


def _fixed(path: Path, source: SourceText, result: FixResult) -> FileResult:
    return FileResult(
        path,
        Status.OK,
        diagnostics=result.diagnostics,
        fixed=result.fixed,
        old_text=source.text,
        new_text=result.source,
        encoding=source.encoding,
    )


def fix_file(
    path: Path, settings: Settings = DEFAULT_SETTINGS, write: bool = True, explicit: bool = True
) -> FileResult:
    """Migrate one file (in place when ``write``); the result carries old and new text."""

    def work() -> FileResult:
        data = read_bytes(path)
        if not explicit and not may_trigger(data, settings.select):
            return FileResult(path, Status.OK)
        source: SourceText = decode(data)
        if path.suffix == ".ipynb":
            from vjp_migrate.notebook import fix_notebook

            result = fix_notebook(source.text, str(path), settings)
        elif not (verdict := _screen(source.text, settings)).may_report:  # it parsed, and nothing can change
            result = FixResult(source.text, False, (), ())
        else:
            from vjp_migrate.project import Project

            project = Project.for_file(path)
            result = _fix_text(source.text, str(path), settings, project, syntax_checked=verdict.parses)
            return project.with_origins(_fixed(path, source, result))
        return _fixed(path, source, result)

    with _no_cycle_collection():
        planned = guarded(path, work)
    return write_result(planned) if write else planned


Progress = Callable[[int, int], None]  # (files done, files in all), after each file
Notice = Callable[[str], None]  # one line for the user, not about one file


def notify(notice: Notice | None, message: str) -> None:
    """Tell ``notice`` (default: a warning on the ``vjp_migrate`` logger)."""
    (notice or logging.getLogger("vjp_migrate").warning)(message)


@dataclass(frozen=True)
class Execution:
    """How a path-level run executes: worker processes and the check cache."""

    jobs: int | None = 1  # None: one worker process per CPU; 1: in this process
    cache_dir: Path | None = None  # check only; None: no cache (unless project_cache)
    project_cache: bool = False  # check: runs.check puts the cache in each configuration's project root


_EXECUTION = [Execution()]


def current_execution() -> Execution:
    """The Execution of the innermost ``execution`` block (the default outside any)."""
    return _EXECUTION[-1]


@contextmanager
def execution(how: Execution) -> Iterator[None]:
    """Run the path-level functions called inside the block with ``how`` (the CLI's options)."""
    _EXECUTION.append(how)
    try:
        yield
    finally:
        _EXECUTION.pop()


def found_below(paths: Sequence[Path], exclude: Sequence[str]) -> Found:
    """The files below ``paths`` a walk finds, and those it rejects (discover.py)."""
    candidates, rejected = discover(paths, exclude)
    return Found(candidates, rejected, tuple(paths))


def analyze_found(found: Found, task: Task, how: Execution | None, progress: Progress | None) -> Outcome:
    """Phase 1 per file (workers, cache), then phase 2 for rules and helpers imported between the files."""
    from vjp_migrate import workers
    from vjp_migrate.transaction import Outcome

    how = how or _EXECUTION[-1]
    results = [FileResult(r.path, Status.FAILED, r.reason) for r in found.rejected]
    results.extend(workers.run(found.candidates, task, how.jobs, progress))
    if len(found.candidates) < 2 or not any(r.imports_from_others or r.changed_names for r in results):
        return Outcome(results, [])  # nothing for phase 2 (and no LibCST import on a clean run)
    from vjp_migrate.cross_uses import OtherFiles

    others = OtherFiles([c.path for c in found.candidates], found.roots)
    used = others.changed_and_used(results)  # the other files are read, LibCST not imported, for most runs
    if not used and not any(r.imports_from_others for r in results):
        return Outcome(results, [])
    from vjp_migrate.project import complete

    jobs = workers.default_jobs() if how.jobs is None else how.jobs
    with _no_cycle_collection():  # which also forgets the indexes of the modules phase 2 read
        return complete(results, others, used, task.settings, task.mode == "fix", jobs)


def check_found(
    found: Found, settings: Settings = DEFAULT_SETTINGS, progress: Progress | None = None, how: Execution | None = None
) -> list[FileResult]:
    """check_file over files already discovered (see check_paths)."""
    from vjp_migrate.workers import Task

    how = how or _EXECUTION[-1]
    return analyze_found(found, Task("check", settings, cache_dir=how.cache_dir), how, progress).results


def fix_found(
    found: Found,
    settings: Settings = DEFAULT_SETTINGS,
    write: bool = True,
    progress: Progress | None = None,
    how: Execution | None = None,
) -> list[FileResult]:
    """fix_file over files already discovered (see fix_paths; no interrupted migration is finished here)."""
    from vjp_migrate.workers import Task

    # Nothing is written before phase 2 has decided: a rule module's own fix may be forbidden
    # by a custom_vjp in another file that shares the rule.
    outcome = analyze_found(found, Task("fix", settings), how, progress)
    return write_all(outcome) if write else outcome.results


def check_paths(
    paths: Sequence[Path],
    settings: Settings = DEFAULT_SETTINGS,
    exclude: Sequence[str] = (),
    progress: Progress | None = None,
    how: Execution | None = None,
) -> list[FileResult]:
    """check_file over every file below ``paths``, in a stable order (see Execution for ``how``)."""
    return check_found(found_below(paths, exclude), settings, progress, how)


def fix_paths(
    paths: Sequence[Path],
    settings: Settings = DEFAULT_SETTINGS,
    write: bool = True,
    exclude: Sequence[str] = (),
    progress: Progress | None = None,
    how: Execution | None = None,
    notice: Notice | None = None,
    recover_first: bool | None = None,
) -> list[FileResult]:
    """fix_file over every file below ``paths``, in a stable order (see Execution for ``how``).

    The files one migration changes (a custom_vjp and the rules it imports from other files)
    are written together (vjp_migrate.transaction): if any of them cannot be written, none is.
    A run that writes (or ``recover_first``) first finishes multi-file migrations interrupted
    below or above ``paths``; each gets one line to ``notice`` (default: a warning on the
    ``vjp_migrate`` logger).
    """
    if write if recover_first is None else recover_first:
        from vjp_migrate.transaction import recover

        for message in recover(paths):
            notify(notice, message)
    return fix_found(found_below(paths, exclude), settings, write, progress, how)


def write_all(outcome: Outcome) -> list[FileResult]:
    """Write each multi-file migration together, then every other changed file on its own."""
    from vjp_migrate.transaction import write_together

    done: dict[Path, FileResult] = {}
    for group in outcome.groups:
        try:
            write_together(group)
        except SourceError as error:
            for change in group:
                done[change.path] = FileResult(change.path, Status.FAILED, str(error))
        else:
            done.update((change.path, FileResult(change.path, Status.OK, written=True)) for change in group)
    with write_batch() as batch:
        results = [_after_write(r, done[r.path]) if r.path in done else write_result(r) for r in outcome.results]
        failed = batch.finish()
    return [_after_write(r, failed_result(r.path, failed[r.path])) if r.path in failed else r for r in results]


def check_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """check for source read from standard input, reported under ``name``."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        if path.suffix == ".ipynb":
            from vjp_migrate.notebook import check_notebook

            return FileResult(path, Status.OK, diagnostics=check_notebook(source.text, name, settings))
        return FileResult(
            path, Status.OK, diagnostics=analyze(source.text, name, settings, parse_anyway=True).diagnostics
        )

    return guarded(path, work)


def fix_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """fix for source read from standard input; the new text is in ``new_text``, nothing is written."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        if path.suffix == ".ipynb":
            from vjp_migrate.notebook import fix_notebook

            return _fixed(path, source, fix_notebook(source.text, name, settings))
        return _fixed(path, source, fix_source(source.text, path=name, settings=settings))

    return guarded(path, work)


def write_result(result: FileResult) -> FileResult:
    """Write a result computed with ``write=False`` (plan now, apply later, e.g. after verify).

    The file must still hold the text the plan was made from; otherwise it is left untouched
    and the result says so.
    """
    if not result.changed or result.new_text is None:
        return result

    def work() -> FileResult:
        data, new = planned_bytes(result)
        write_file(result.path, new, data)
        return dataclasses.replace(result, written=True)

    return _after_write(result, guarded(result.path, work))


def _after_write(result: FileResult, outcome: FileResult) -> FileResult:
    """``result`` once written, as ``outcome`` tells; a failure keeps the analysis (what was not fixed)."""
    if outcome.status is Status.FAILED:
        return dataclasses.replace(result, status=Status.FAILED, reason=outcome.reason, written=False)
    return dataclasses.replace(result, written=outcome.written)


def planned_bytes(result: FileResult) -> tuple[bytes, bytes]:
    """The file's bytes now and the bytes of its planned rewrite (a ``write=False`` result).

    SourceError when the file no longer holds the text the plan was made from; OSError when it
    cannot be read.
    """
    data = read_bytes(result.path)
    source = decode(data)
    if source.text != result.old_text:
        raise SourceError("changed on disk while it was being fixed; left untouched")
    return data, encode(source, result.new_text or "")
