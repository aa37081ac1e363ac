"""The library the CLI stands on: check_source / fix_source and their path-level versions.

Nothing here raises for one bad file: path-level functions return a FileResult saying what
went wrong, and the other files are still processed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vjp_migrate.codes import DEFAULT_SELECT, triggers_for
from vjp_migrate.discover import discover
from vjp_migrate.model import Diagnostic, FileResult, FixResult, Settings, SiteDecision, Status, VjpSite
from vjp_migrate.screen import Verdict, screen
from vjp_migrate.source import SourceError, SourceText, check_size, check_syntax, decode, encode, parse

if TYPE_CHECKING:
    from vjp_migrate.cache import Cache
    from vjp_migrate.discover import Candidate
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


def _may_contain(text: str, settings: Settings) -> bool:
    words = triggers_for(settings.select)
    return any(word.decode() in text for word in words)


def analyze(
    text: str, path: str, settings: Settings, parse_anyway: bool = False, project: Project | None = None
) -> Analysis:
    """Parse (when a finding is possible) and decide every site; SourceError for bad input.

    ``project`` resolves rules imported from other files (project.py); without it, such a
    rule is named in a VJP003 and left alone.
    """
    return _analyze(text, path, settings, parse_anyway, project)


def _analyze(
    text: str,
    path: str,
    settings: Settings,
    parse_anyway: bool,
    project: Project | None = None,
    syntax_checked: bool = False,
) -> Analysis:
    if not _may_contain(text, settings):
        if parse_anyway and not syntax_checked:
            check_syntax(text, path)
        return Analysis((), (), None)
    module = (project.parse if project else parse)(text, path, syntax_checked=syntax_checked)
    # Imported here: a run where the byte filter rules everything out never loads these.
    import libcst as cst

    from vjp_migrate.classify import Context, apply_overrides, classify_site, module_helpers
    from vjp_migrate.findings import diagnostics_for
    from vjp_migrate.imports import import_table
    from vjp_migrate.noqa import suppress
    from vjp_migrate.plan import decide, reconcile_shared
    from vjp_migrate.sites import find_sites
    from vjp_migrate.walk import index_of

    imports = import_table(module)
    sites = project.find_sites(module, imports, path) if project is not None else find_sites(module, imports)
    if not sites:
        return Analysis((), (), module)
    index = index_of(module)  # positions, and cheap replays of the visitors below

    def header_of(site: VjpSite) -> range:
        """The decorator and def lines, where a `# noqa` silences the site."""
        first = site.primal.decorators[0] if site.primal.decorators else site.primal
        body = index.span(site.primal.body)[0]
        end = body if isinstance(site.primal.body, cst.SimpleStatementSuite) else body - 1
        return range(index.span(first)[0], end + 1)

    ctx = Context(imports, module_helpers(module), index.line)
    if project is not None:
        ctx = project.widen(ctx, sites)
    decisions = tuple(
        decide(site, tuple(apply_overrides(classify_site(site, module, ctx), site, path, settings)), settings, imports)
        for site in sites
    )
    decisions = reconcile_shared(decisions)
    diagnostics = tuple(d for decision in decisions for d in diagnostics_for(decision, settings, index.span, path))
    decisions, diagnostics = suppress(text, decisions, diagnostics, header_of)
    decisions = reconcile_shared(decisions)  # a silenced user keeps the rules it shares unchanged
    return Analysis(diagnostics, decisions, module)


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
    from vjp_migrate.rewrite import apply_plans
    from vjp_migrate.walk import index_of

    module = analysis.module
    assert module is not None
    # Statements the rewrite left alone are copied from the source; only the others are
    # generated and checked again (top-level statements parse on their own).
    new_code, changed = index_of(module).code(apply_plans(module, plans))  # type: ignore[arg-type]
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


def read_bytes(path: Path) -> bytes:
    """The file's bytes; SourceError for a pipe, socket or device (opened without blocking)."""
    # O_NONBLOCK: a named pipe or device that took a file's place since discovery must not
    # block the run; it is refused after fstat. (No effect on regular files.)
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise SourceError("not a regular file (a pipe, socket or device); skipped")
        return handle.read()


def _guard(path: Path, work: Callable[[], FileResult]) -> FileResult:
    try:
        return work()
    except Exception as error:  # one file must never take the run down
        return failed_result(path, error)


def failed_result(path: Path, error: BaseException) -> FileResult:
    """The FAILED result for ``path`` whose reason is ``error`` in one line (no traceback)."""
    if isinstance(error, SourceError):
        return FileResult(path, Status.FAILED, str(error))
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
        if not explicit and not any(word in data for word in triggers_for(settings.select)):
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
            imported = tuple(sorted(project.imported.get(path, ())))
            result = FileResult(path, Status.OK, diagnostics=analysis.diagnostics, imported_rules=imported)
        if cache is not None:
            cache.put(path, data, explicit, result)
        return result

    return _guard(path, work)


TEMPORARY_SUFFIX = ".vjp-migrate.tmp"
READ_ONLY = "is read-only"


def read_only(path: Path) -> bool:
    """Whether a file must not be written: we may not write it, or no write bit is set (a file
    made read-only by chmod is refused even when root, who may write anything, runs the fix)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # gone: the read before the rename says so
    return not mode & 0o222 or not os.access(path, os.W_OK)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    # A killed run's workers can linger as zombies nobody reaps (PID 1 of a container): dead.
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):  # no /proc (macOS): trust kill()
        return True
    return state not in (b"Z", b"X")


def remove_stray_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files that a killed run left in ``folder``; return them.

    Temporaries are named ``.<file>.<pid>.<random>.vjp-migrate.tmp``; one whose process is
    still running belongs to a concurrent run and is left alone.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)):
            continue
        parts = name[: -len(TEMPORARY_SUFFIX)].split(".")
        if len(parts) >= 4 and parts[-2].isdigit() and pid_alive(int(parts[-2])):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def write_atomically(path: Path, data: bytes, expected: bytes) -> None:
    """Replace a file's bytes via a temporary file in its folder, keeping its mode and owner.

    A run killed at any moment leaves the file either untouched or complete: the new bytes
    are written and fsynced to a temporary file, which ``os.replace`` renames over the file.
    A symbolic link is written through (the link stays a link). Temporaries left by a killed
    run in the same folder are removed first. Raises SourceError when the file changed on
    disk since it was read, or is read-only (``read_only``: refused, never replaced).
    """
    staged = _stage(path, data, clean=True)
    try:
        _fsync(staged.temporary)
        _commit(staged, expected)
    finally:
        staged.discard()
    fsync_folder(staged.target.parent)


@dataclass
class _Staged:
    """New bytes written (not yet fsynced) to a closed temporary file next to the target."""

    target: Path
    status: os.stat_result
    temporary: str

    def discard(self) -> None:
        if os.path.exists(self.temporary):
            os.unlink(self.temporary)


def _stage(path: Path, data: bytes, clean: bool) -> _Staged:
    target = Path(os.path.realpath(path))
    if clean:
        remove_stray_temporaries(target.parent)
    status = target.stat()
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=TEMPORARY_SUFFIX, dir=target.parent
    )
    staged = _Staged(target, status, temporary)
    try:  # closed at once: a batch of thousands of files must not hold as many descriptors
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        staged.discard()
        raise
    return staged


def _fsync(temporary: str) -> None:
    """Make a closed file's bytes durable (fsync flushes the file, whichever descriptor wrote it)."""
    descriptor = os.open(temporary, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _take_owner(staged: _Staged) -> None:
    """Give the closed temporary its target's mode and owner."""
    status, temporary = staged.status, staged.temporary
    os.chmod(temporary, stat.S_IMODE(status.st_mode))
    if (status.st_uid, status.st_gid) != (os.getuid(), os.getgid()):
        # Not allowed unless root: then the file becomes ours, as with any editor.
        with contextlib.suppress(OSError):
            os.chown(temporary, status.st_uid, status.st_gid)


def write_temporary(target: Path, data: bytes) -> str:
    """A fsynced temporary file beside ``target`` holding ``data``, with target's mode and owner."""
    staged = _stage(target, data, clean=False)
    try:
        _fsync(staged.temporary)
        _take_owner(staged)
    except BaseException:
        staged.discard()
        raise
    return staged.temporary


def _commit(staged: _Staged, expected: bytes) -> None:
    """Rename a staged (and fsynced) temporary over its target, unless the target changed."""
    _take_owner(staged)
    temporary, target = staged.temporary, staged.target
    if read_bytes(target) != expected:
        raise SourceError("changed on disk while it was being fixed; left untouched")
    if read_only(target):
        raise SourceError(f"{READ_ONLY}; left untouched")
    os.replace(temporary, target)


class WriteBatch:
    """The writes of a group of files, made durable together.

    Each file is still replaced atomically (temporary file, fsync, checked rename), but the
    writes wait for ``finish``: then every temporary is written (and closed: a batch never holds
    a descriptor per file), all their fsyncs run at once in threads (the file system commits
    them together instead of one journal commit per file), the renames follow, and each folder
    is fsynced once. Until ``finish`` returns, a power cut can only bring back old files, never
    half ones.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, bytes, bytes]] = []
        self._pool: Any = None

    def write(self, path: Path, data: bytes, expected: bytes) -> None:
        self._pending.append((path, data, expected))

    def finish(self) -> dict[Path, FileResult]:
        """Do the writes; the FAILED result of each file that could not be written."""
        failed: dict[Path, FileResult] = {}
        staged: list[tuple[Path, _Staged, bytes]] = []
        folders: set[Path] = set()
        try:
            for path, data, expected in self._pending:
                folder = Path(os.path.realpath(path)).parent
                try:
                    staged.append((path, _stage(path, data, clean=folder not in folders), expected))
                except Exception as error:
                    failed[path] = failed_result(path, error)
                folders.add(folder)
            if self._pool is None and staged:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="vjp-migrate-fsync")
            synced = list(self._pool.map(_fsync_or_error, [s.temporary for _, s, _ in staged])) if staged else []
            for (path, one, expected), problem in zip(staged, synced, strict=True):
                try:
                    if problem is not None:
                        raise problem
                    _commit(one, expected)
                except Exception as error:
                    failed[path] = failed_result(path, error)
            for folder in sorted(folders):
                fsync_folder(folder)
        finally:
            for _, one, _ in staged:
                one.discard()  # nothing left after a rename
            self._pending.clear()
        return failed

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _fsync_or_error(temporary: str) -> OSError | None:
    try:
        _fsync(temporary)
    except OSError as error:
        return error
    return None


_BATCH: list[WriteBatch] = []


def write_file(path: Path, data: bytes, expected: bytes) -> None:
    """Write ``data`` over ``path`` if it still holds ``expected``: now, or inside ``write_batch``
    through the batch (a failure then replaces the file's result in WriteBatch.finish)."""
    if _BATCH:
        _BATCH[-1].write(path, data, expected)
    else:
        write_atomically(path, data, expected)


@contextmanager
def write_batch() -> Iterator[WriteBatch]:
    """Inside the block, fix_file hands its writes to the batch (see WriteBatch)."""
    batch = WriteBatch()
    _BATCH.append(batch)
    try:
        yield batch
    finally:
        _BATCH.pop()
        batch.finish()
        batch.close()


def fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a power cut after it must not bring the old file back)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _fixed(path: Path, old_text: str, result: FixResult, written: bool, imported: tuple[str, ...] = ()) -> FileResult:
    return FileResult(
        path,
        Status.OK,
        diagnostics=result.diagnostics,
        fixed=result.fixed,
        old_text=old_text,
        new_text=result.source,
        written=written,
        imported_rules=imported,
    )


def fix_file(
    path: Path, settings: Settings = DEFAULT_SETTINGS, write: bool = True, explicit: bool = True
) -> FileResult:
    """Migrate one file (in place when ``write``); the result carries old and new text."""

    def work() -> FileResult:
        data = read_bytes(path)
        if not explicit and not any(word in data for word in triggers_for(settings.select)):
            return FileResult(path, Status.OK)
        source: SourceText = decode(data)
        imported: tuple[str, ...] = ()
        if path.suffix == ".ipynb":
            from vjp_migrate.notebook import fix_notebook

            result = fix_notebook(source.text, str(path), settings)
        elif not (verdict := _screen(source.text, settings)).may_report:  # it parsed, and nothing can change
            result = FixResult(source.text, False, (), ())
        else:
            from vjp_migrate.project import Project

            project = Project.for_file(path)
            result = _fix_text(source.text, str(path), settings, project, syntax_checked=verdict.parses)
            imported = tuple(sorted(project.imported.get(path, ())))
        return _fixed(path, source.text, result, False, imported)

    planned = _guard(path, work)
    return write_result(planned) if write else planned


Progress = Callable[[int, int], None]  # (files done, files in all), after each file
Notice = Callable[[str], None]  # one line for the user, not about one file


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


def _run(
    paths: Sequence[Path], exclude: Sequence[str], task: Task, how: Execution | None, progress: Progress | None
) -> tuple[list[FileResult], list[Candidate]]:
    from vjp_migrate import workers

    how = how or _EXECUTION[-1]
    candidates, rejected = discover(paths, exclude)
    results = [FileResult(r.path, Status.FAILED, r.reason) for r in rejected]
    results.extend(workers.run(candidates, task, how.jobs, progress))
    return results, candidates


def analyze_paths(
    paths: Sequence[Path], exclude: Sequence[str], task: Task, how: Execution | None, progress: Progress | None
) -> Outcome:
    """Phase 1 per file (workers, cache), then phase 2 for rules imported between the files."""
    from vjp_migrate.transaction import Outcome

    results, candidates = _run(paths, exclude, task, how, progress)
    if len(candidates) < 2 or not any(r.status is Status.OK and r.imported_rules for r in results):
        return Outcome(results, [])  # nothing for phase 2 (and no LibCST import on a clean run)
    from vjp_migrate.project import complete

    return complete(results, [c.path for c in candidates], paths, task.settings, fix=task.mode == "fix")


def check_paths(
    paths: Sequence[Path],
    settings: Settings = DEFAULT_SETTINGS,
    exclude: Sequence[str] = (),
    progress: Progress | None = None,
    how: Execution | None = None,
) -> list[FileResult]:
    """check_file over every file below ``paths``, in a stable order (see Execution for ``how``)."""
    from vjp_migrate.workers import Task

    how = how or _EXECUTION[-1]
    return analyze_paths(paths, exclude, Task("check", settings, cache_dir=how.cache_dir), how, progress).results


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
    from vjp_migrate.workers import Task

    if write if recover_first is None else recover_first:
        from vjp_migrate.transaction import recover

        for message in recover(paths):
            (notice or logging.getLogger("vjp_migrate").warning)(message)
    # Nothing is written before phase 2 has decided: a rule module's own fix may be forbidden
    # by a custom_vjp in another file that shares the rule.
    outcome = analyze_paths(paths, exclude, Task("fix", settings), how, progress)
    return write_all(outcome) if write else outcome.results


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
    return [_after_write(r, failed[r.path]) if r.path in failed else r for r in results]


def check_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """check for source read from standard input, reported under ``name``."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        return FileResult(
            path, Status.OK, diagnostics=analyze(source.text, name, settings, parse_anyway=True).diagnostics
        )

    return _guard(path, work)


def fix_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """fix for source read from standard input; the new text is in ``new_text``, nothing is written."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        return _fixed(path, source.text, fix_source(source.text, path=name, settings=settings), False)

    return _guard(path, work)


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

    return _after_write(result, _guard(result.path, work))


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
