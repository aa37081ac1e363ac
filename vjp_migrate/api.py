"""The library the CLI stands on: check_source / fix_source and their path-level versions.

Nothing here raises for one bad file: path-level functions return a FileResult saying what
went wrong, and the other files are still processed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.codes import DEFAULT_SELECT, triggers_for
from vjp_migrate.discover import Candidate, discover
from vjp_migrate.model import Diagnostic, FileResult, FixResult, Settings, SiteDecision, Status, VjpSite
from vjp_migrate.source import SourceError, SourceText, check_syntax, decode, encode, parse

__all__ = [
    "Settings",
    "SourceError",
    "check_source",
    "fix_source",
    "check_file",
    "fix_file",
    "check_paths",
    "fix_paths",
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


def analyze(text: str, path: str, settings: Settings, parse_anyway: bool = False) -> Analysis:
    """Parse (when a finding is possible) and decide every site; SourceError for bad input."""
    if not _may_contain(text, settings):
        if parse_anyway:
            check_syntax(text, path)
        return Analysis((), (), None)
    module = parse(text, path)
    # Imported here: a run where the byte filter rules everything out never loads these.
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from vjp_migrate.classify import Context, apply_overrides, classify_site, module_helpers
    from vjp_migrate.findings import diagnostics_for
    from vjp_migrate.imports import import_table
    from vjp_migrate.plan import decide
    from vjp_migrate.sites import find_sites

    imports = import_table(module)
    sites = find_sites(module, imports)
    if not sites:
        return Analysis((), (), module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def line_of(node: cst.CSTNode) -> int | None:
        where = positions.get(node)
        return where.start.line if where else None

    def span_of(node: cst.CSTNode) -> tuple[int, int, int, int]:
        where = positions[node]
        return where.start.line, where.start.column + 1, where.end.line, where.end.column + 1

    from vjp_migrate.noqa import suppress

    def header_of(site: VjpSite) -> range:
        """The decorator and def lines, where a `# noqa` silences the site."""
        first = site.primal.decorators[0] if site.primal.decorators else site.primal
        body = positions[site.primal.body].start.line
        end = body if isinstance(site.primal.body, cst.SimpleStatementSuite) else body - 1
        return range(positions[first].start.line, end + 1)

    ctx = Context(imports, module_helpers(module), line_of)
    decisions = tuple(
        decide(site, tuple(apply_overrides(classify_site(site, module, ctx), site, path, settings)), settings, imports)
        for site in sites
    )
    diagnostics = tuple(d for decision in decisions for d in diagnostics_for(decision, settings, span_of, path))
    decisions, diagnostics = suppress(text, decisions, diagnostics, header_of)
    return Analysis(diagnostics, decisions, module)


def check_source(code: str, *, path: str = "<string>", settings: Settings = DEFAULT_SETTINGS) -> list[Diagnostic]:
    """Findings in one source text. Raises SourceError (one line, no traceback) for bad input."""
    return list(analyze(code, path, settings, parse_anyway=True).diagnostics)


def fix_source(code: str, *, path: str = "<string>", settings: Settings = DEFAULT_SETTINGS) -> FixResult:
    """The migrated text of one source. Raises SourceError for bad input.

    The output is checked to parse; a rewrite that would not parse raises SourceError and
    nothing is changed.
    """
    analysis = analyze(code, path, settings, parse_anyway=True)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    if not plans:
        return FixResult(code, False, analysis.diagnostics, ())
    from vjp_migrate.rewrite import apply_plans

    new_code: str = apply_plans(analysis.module, plans).code  # type: ignore[arg-type]
    try:
        check_syntax(new_code, path)
    except SourceError as error:
        raise SourceError(f"internal error: the rewrite would not parse ({error}); left untouched") from None
    moved = {(d.site.qualname, i) for d in analysis.decisions if d.plan for i in d.plan.moved}
    fixed = tuple(d for d in analysis.diagnostics if (d.function, d.index) in moved)
    return FixResult(new_code, new_code != code, analysis.diagnostics, fixed)


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _guard(path: Path, work: Callable[[], FileResult]) -> FileResult:
    try:
        return work()
    except SourceError as error:
        return FileResult(path, Status.FAILED, str(error))
    except OSError as error:
        return FileResult(path, Status.FAILED, f"cannot be read: {error.strerror or error}")
    except RecursionError:
        return FileResult(path, Status.FAILED, "nested too deeply to analyse")
    except Exception as error:  # one file must never take the run down
        return FileResult(path, Status.FAILED, f"internal error: {type(error).__name__}: {error}")


def check_file(path: Path, settings: Settings = DEFAULT_SETTINGS, explicit: bool = True) -> FileResult:
    """Findings in one file; FAILED with the reason when it cannot be processed."""

    def work() -> FileResult:
        data = _read(path)
        if not explicit and not any(word in data for word in triggers_for(settings.select)):
            return FileResult(path, Status.OK)
        source = decode(data)
        analysis = analyze(source.text, str(path), settings, parse_anyway=explicit)
        return FileResult(path, Status.OK, diagnostics=analysis.diagnostics)

    return _guard(path, work)


def write_atomically(path: Path, data: bytes, expected: bytes) -> None:
    """Replace a file's bytes via a temporary file in its folder, keeping its mode.

    Raises SourceError when the file changed on disk since it was read.
    """
    mode = path.stat().st_mode
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".vjp-migrate.tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode & 0o7777)
        if _read(path) != expected:
            raise SourceError("changed on disk while it was being fixed; left untouched")
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def fix_file(path: Path, settings: Settings = DEFAULT_SETTINGS, write: bool = True, explicit: bool = True) -> FileResult:
    """Migrate one file (in place when ``write``); the result carries old and new text."""

    def work() -> FileResult:
        data = _read(path)
        if not explicit and not any(word in data for word in triggers_for(settings.select)):
            return FileResult(path, Status.OK)
        source: SourceText = decode(data)
        result = fix_source(source.text, path=str(path), settings=settings)
        written = False
        if result.changed and write:
            write_atomically(path, encode(source, result.source), data)
            written = True
        return FileResult(
            path, Status.OK, diagnostics=result.diagnostics, fixed=result.fixed,
            old_text=source.text, new_text=result.source, written=written,
        )

    return _guard(path, work)


def _run(
    paths: Sequence[Path], exclude: Sequence[str], one: Callable[[Candidate], FileResult]
) -> list[FileResult]:
    candidates, rejected = discover(paths, exclude)
    results = [FileResult(r.path, Status.FAILED, r.reason) for r in rejected]
    results.extend(one(c) for c in candidates)
    return results


def check_paths(paths: Sequence[Path], settings: Settings = DEFAULT_SETTINGS, exclude: Sequence[str] = ()) -> list[FileResult]:
    """check_file over every file below ``paths``, in a stable order."""
    return _run(paths, exclude, lambda c: check_file(c.path, settings, c.explicit))


def fix_paths(
    paths: Sequence[Path], settings: Settings = DEFAULT_SETTINGS, write: bool = True, exclude: Sequence[str] = ()
) -> list[FileResult]:
    """fix_file over every file below ``paths``, in a stable order."""
    return _run(paths, exclude, lambda c: fix_file(c.path, settings, write, c.explicit))


def check_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """check for source read from standard input, reported under ``name``."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        return FileResult(path, Status.OK, diagnostics=analyze(source.text, name, settings, parse_anyway=True).diagnostics)

    return _guard(path, work)


def fix_stdin(data: bytes, name: str, settings: Settings = DEFAULT_SETTINGS) -> FileResult:
    """fix for source read from standard input; the new text is in ``new_text``, nothing is written."""
    path = Path(name)

    def work() -> FileResult:
        source = decode(data)
        result = fix_source(source.text, path=name, settings=settings)
        return FileResult(
            path, Status.OK, diagnostics=result.diagnostics, fixed=result.fixed,
            old_text=source.text, new_text=result.source,
        )

    return _guard(path, work)
