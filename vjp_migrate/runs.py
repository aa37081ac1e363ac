"""Stage 12: one command's whole run over its paths: the files by configuration -> api -> baseline.

The CLI builds a Request from its options and prints what comes back; the decisions about
which configuration applies to which file and which findings a baseline hides live here.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate import api
from vjp_migrate.config import CliOptions, Group, Resolver, groups
from vjp_migrate.discover import Found, Scoping, discover_scoped
from vjp_migrate.model import FileResult, Status

if TYPE_CHECKING:
    from vjp_migrate.baseline import Key

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class Request:
    paths: tuple[Path, ...]
    options: CliOptions
    stdin: bytes | None = None  # the source when the only path is "-"
    stdin_filename: str = "-"
    baseline: Path | None = None  # findings recorded there are not reported


def _stdin_group_path(request: Request) -> Path:
    return Path(request.stdin_filename) if request.stdin_filename != "-" else Path("-")


def _stdin_group(request: Request) -> Group | FileResult:
    """The configuration for the source read from stdin; or, when ``--force-exclude`` skips its
    ``--stdin-filename`` (as ruff does), the SKIPPED result that stands for it."""
    path = _stdin_group_path(request)
    (group,) = groups([path], request.options)
    return group if group.paths else FileResult(path, Status.SKIPPED, "excluded")


def _read_baseline(baseline: Path | None) -> Counter[Key] | None:
    if baseline is None:
        return None
    from vjp_migrate.baseline import read_baseline

    return read_baseline(baseline)


def _apply_baseline(results: list[FileResult], known: Counter[Key] | None, baseline: Path | None) -> list[FileResult]:
    if known is None or baseline is None:
        return results
    from vjp_migrate.baseline import filter_results

    return filter_results(results, known, baseline.parent)


def _warn_pending(paths: tuple[Path, ...], notice: api.Notice | None) -> None:
    """A run that writes nothing does not finish an interrupted multi-file fix, but says so."""
    from vjp_migrate.transaction import pending

    for message in pending(paths):
        api.notify(notice, message)


def _execution(group: Group) -> api.Execution:
    how = api.current_execution()
    if not how.project_cache:
        return how
    from vjp_migrate.cache import project_dir

    return dataclasses.replace(how, cache_dir=project_dir(group.config_path), project_cache=False)


def check(
    request: Request, with_fixes: bool = False, progress: Progress = None, notice: api.Notice | None = None
) -> list[FileResult]:
    """Findings for every path, each under its own configuration.

    ``with_fixes`` runs fix without writing, so the results also carry the migrated text
    (SARIF's fix information). A multi-file fix interrupted below or above the paths is not
    finished (nothing is written) but gets a warning to ``notice`` (see api.fix_paths).
    """
    return record(request, None, with_fixes, progress, notice)[0]


def record(
    request: Request,
    target: Path | None,
    with_fixes: bool = False,
    progress: Progress = None,
    notice: api.Notice | None = None,
) -> tuple[list[FileResult], int]:
    """check, also writing every current finding to the baseline ``target`` (when given), those
    ``request.baseline`` hides included: refreshing a baseline in place keeps what it held.

    Returns the results without the hidden findings, and the number of findings recorded.
    """
    known = _read_baseline(request.baseline)  # before the run, and before ``target`` replaces it
    results = _check(request, with_fixes, progress, notice)
    recorded = 0
    if target is not None:
        from vjp_migrate.baseline import write_baseline

        recorded = write_baseline(results, target)
    return _apply_baseline(results, known, request.baseline), recorded


def _check(request: Request, with_fixes: bool, progress: Progress, notice: api.Notice | None) -> list[FileResult]:
    if request.stdin is not None:
        group = _stdin_group(request)
        if isinstance(group, FileResult):
            return [group]
        if with_fixes:
            one = api.fix_stdin(request.stdin, request.stdin_filename, group.settings)
        else:
            one = api.check_stdin(request.stdin, request.stdin_filename, group.settings)
        return [one]
    _warn_pending(request.paths, notice)
    results: list[FileResult] = []
    resolver = Resolver(request.options)
    for group, found in parts(groups(request.paths, request.options, resolver), resolver):
        if with_fixes:
            results.extend(api.fix_found(found, group.settings, False, progress))
        else:
            results.extend(api.check_found(found, group.settings, progress, _execution(group)))
    return results


def fix(
    request: Request,
    write: bool,
    progress: Progress = None,
    notice: api.Notice | None = None,
    recover_first: bool | None = None,
) -> list[FileResult]:
    """Migrate every path (in place when ``write``), each under its own configuration.

    Interrupted multi-file migrations are finished first when writing (or ``recover_first``),
    see api.fix_paths; otherwise each gets a warning.
    """
    if request.stdin is not None:
        group = _stdin_group(request)
        if isinstance(group, FileResult):
            return [group]
        return [api.fix_stdin(request.stdin, request.stdin_filename, group.settings)]
    resolver = Resolver(request.options)
    named = groups(request.paths, request.options, resolver)
    if write if recover_first is None else recover_first:
        from vjp_migrate.transaction import recover

        for message in recover([path for group in named for path in group.paths]):
            api.notify(notice, message)
    else:
        _warn_pending(request.paths, notice)
    results: list[FileResult] = []
    for group, found in parts(named, resolver):
        results.extend(api.fix_found(found, group.settings, write, progress))
    return results


def parts(named_groups: Sequence[Group], resolver: Resolver) -> list[tuple[Group, Found]]:
    """The files below the paths of ``named_groups`` (config.groups) by their configuration, the
    nearest above each (a folder the walk enters may bring its own, as in ruff), in the order
    found. Every Found's roots are all the paths named."""
    named = [(path, group) for group in named_groups for path in group.paths]
    roots = tuple(path for path, _ in named)
    by: dict[tuple[Path | None, int | None], tuple[Group, Found]] = {}

    def part(group: Group) -> Found:
        if group.key not in by:
            by[group.key] = (dataclasses.replace(group, paths=[]), Found([], [], roots))
        return by[group.key][1]

    for _, group in named:  # the parts of the paths named come in their order
        part(group)
    scoping = Scoping(resolver.inside, lambda group: group.exclude, lambda group: group.respect_gitignore)
    candidates, rejected = discover_scoped(named, scoping)
    for reason, group in rejected:
        part(group).rejected.append(reason)
    for candidate, group in candidates:
        part(group).candidates.append(candidate)
    return [(group, found) for group, found in by.values() if found.candidates or found.rejected]


def add_noqa(request: Request, notice: api.Notice | None = None) -> list[FileResult]:
    """Write `# noqa: CODE` for every current finding; results say which files changed."""
    from vjp_migrate.noqa import add_noqa as add

    results = []
    for result in check(request, notice=notice):
        if result.status is not Status.OK or not result.diagnostics:
            results.append(result)
            continue
        from vjp_migrate.source import SourceError, decode

        try:
            text = decode(result.path.read_bytes()).text
            if result.path.suffix == ".ipynb":
                from vjp_migrate.notebook import add_noqa as add_to_notebook

                new_text = add_to_notebook(text, result.diagnostics)
            else:
                new_text, _ = add(text, result.diagnostics)
        except (OSError, SourceError) as error:
            results.append(api.failed_result(result.path, error))
            continue
        # Written like a fix: a read-only file or one edited meanwhile comes back FAILED, untouched.
        results.append(api.write_result(dataclasses.replace(result, old_text=text, new_text=new_text)))
    return results
