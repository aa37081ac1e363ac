"""Stage 12: one command's whole run over its paths: configuration groups -> api -> baseline.

The CLI builds a Request from its options and prints what comes back; the decisions about
which configuration applies to which path and which findings a baseline hides live here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate import api
from vjp_migrate.config import CliOptions, Group, groups
from vjp_migrate.model import FileResult, Status

if TYPE_CHECKING:
    from vjp_migrate.transaction import FileChange
    from vjp_migrate.verify import VerifyOptions, VerifyReport
    from vjp_migrate.verify.model import FunctionRow
    from vjp_migrate.verify.trees import Staged

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


def _apply_baseline(results: list[FileResult], baseline: Path | None) -> list[FileResult]:
    if baseline is None:
        return results
    from vjp_migrate.baseline import filter_results, read_baseline

    return filter_results(results, read_baseline(baseline), baseline.parent)


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
    if request.stdin is not None:
        group = _stdin_group(request)
        if isinstance(group, FileResult):
            return [group]
        if with_fixes:
            one = api.fix_stdin(request.stdin, request.stdin_filename, group.settings)
        else:
            one = api.check_stdin(request.stdin, request.stdin_filename, group.settings)
        return _apply_baseline([one], request.baseline)
    _warn_pending(request.paths, notice)
    results: list[FileResult] = []
    for group in groups(request.paths, request.options):
        if with_fixes:
            results.extend(api.fix_paths(group.paths, group.settings, False, group.exclude, progress))
        else:
            results.extend(api.check_paths(group.paths, group.settings, group.exclude, progress, _execution(group)))
    return _apply_baseline(results, request.baseline)


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
    if not (write if recover_first is None else recover_first):
        _warn_pending(request.paths, notice)
    results: list[FileResult] = []
    for group in groups(request.paths, request.options):
        results.extend(
            api.fix_paths(group.paths, group.settings, write, group.exclude, progress, None, notice, recover_first)
        )
    return results


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


def _multi_file(results: list[FileResult]) -> dict[Path, set[Path]]:
    """The files of each multi-file migration (see project.py), by file."""
    groups: dict[Path, set[Path]] = {}
    for result in results:
        for d in result.diagnostics:
            if d.also_touches:
                group = {result.path, *(Path(p) for p in d.also_touches)}
                for path in list(group):
                    group |= groups.get(path, set())
                for path in group:
                    groups[path] = group
    return groups


@dataclass
class Proof:
    """What `fix --verify` proved about the rewrites that passed: verify's rows for them."""

    rows: list[FunctionRow] = field(default_factory=list)
    backends: set[str] = field(default_factory=set)
    jax_version: str | None = None

    def take(self, report: VerifyReport) -> None:
        self.rows.extend(report.rows)
        self.backends.update(report.backends)
        self.jax_version = report.jax_version or self.jax_version

    def summary(self) -> str | None:
        """One line: how many functions were proven, with what, and which had no inputs to run."""
        from vjp_migrate.verify.model import Verdict

        equal = [r for r in self.rows if r.verdict is Verdict.EQUAL]
        unproven = sorted({r.name for r in self.rows if r.verdict is Verdict.NOT_VERIFIED})
        if not equal and not unproven:
            return None
        used = [f"JAX {self.jax_version}"] if self.jax_version else []
        used += sorted(self.backends)
        where = f" ({', '.join(used)})" if used else ""
        parts = []
        if equal:
            n, one = len(equal), len(equal) == 1
            part = f"{n} custom_vjp function{'' if one else 's'} give{'s' if one else ''} equal outputs and cotangents"
            if all(r.jit == r.vmap == "ok" for r in equal):
                part += f", and run{'s' if one else ''} under jit and vmap"
            if synthesized := sorted(r.name for r in equal if r.input_source == "synthesized"):
                names = ", ".join(f"`{name}`" for name in synthesized)
                part += f" ({names} on synthesized inputs only: give examples for the values that matter)"
            parts.append(part)
        if unproven:
            names = ", ".join(f"`{name}`" for name in unproven)
            parts.append(f"written without proof, no inputs to run {names} (give examples: docs/verify.md)")
        return f"Verified before writing{where}: {'; '.join(parts)}."


def write_verified(
    planned: list[FileResult], verify_options: object, proof: Proof | None = None, workers: int = 1
) -> list[FileResult]:
    """Verify each planned rewrite with real JAX, write the ones that verify, refuse the rest.

    ``planned`` comes from ``fix(..., write=False)``. A file whose rewrite shows a mismatch or
    cannot be run is not written and comes back FAILED with the reason. The files of one
    multi-file migration are proven together (``verify_trees`` over a copy of their packages
    before and after) and written together, or none of them is. The other files are proven in
    up to ``workers`` worker processes, each file with its own timeout.
    """
    from vjp_migrate.verify import VerifyOptions, verify_sources_many

    assert isinstance(verify_options, VerifyOptions)
    together = _multi_file(planned)
    pending = {r.path: r for r in planned if r.path in together and _rewrites(r)}
    decided: dict[Path, FileResult] = {}
    for result in planned:
        if result.path in pending and result.path not in decided:
            group = [pending[p] for p in sorted(together[result.path]) if p in pending]
            decided.update((r.path, r) for r in _write_group(group, verify_options, proof))
    alone = [r for r in planned if r.path not in decided and _rewrites(r)]
    reports = verify_sources_many(
        [(r.old_text or "", r.new_text or "", r.path) for r in alone], verify_options, workers
    )
    for result, report in zip(alone, reports, strict=True):
        why = _failure(report)
        if why is None:
            if proof is not None:
                proof.take(report)
            decided[result.path] = api.write_result(result)
        else:
            decided[result.path] = dataclasses.replace(result, status=Status.FAILED, reason=f"{_NOT_WRITTEN}: {why}")
    return [decided.get(r.path, r) for r in planned]


_NOT_WRITTEN = "rewrite not written, verification failed"


def _rewrites(result: FileResult) -> bool:
    return result.changed and result.old_text is not None and result.new_text is not None


def _failure(report: VerifyReport, staged: Staged | None = None) -> str | None:
    """None when the report proves the rewrite; otherwise what failed, in one line."""
    if report.exit_code == 0:
        return None
    problems = [
        f"{row.name}: {row.message or row.verdict.value}" for row in report.rows if row.verdict.value != "equal"
    ]
    why = "; ".join([*report.errors, *problems]) or "verification failed"
    if staged is not None and len(staged.roots) == 1:  # name the user's files, not the copies
        for copy in (staged.before, staged.after):
            why = why.replace(str(copy), str(staged.roots[0]))
    return why


def _write_group(group: list[FileResult], verify_options: VerifyOptions, proof: Proof | None) -> list[FileResult]:
    """Prove the files of one multi-file migration together; write all of them, or none."""
    import tempfile

    from vjp_migrate.transaction import Outcome
    from vjp_migrate.verify import verify_trees
    from vjp_migrate.verify.trees import stage_trees

    changes = _changes(group)
    if isinstance(changes, str):
        return _refused(group, f"rewrite not written: {changes}")
    report: VerifyReport | None = None
    with tempfile.TemporaryDirectory(prefix="vjp-migrate-verify-") as folder:
        try:
            staged = stage_trees({c.path: (c.old, c.new) for c in changes}, Path(folder))
        except (ValueError, OSError) as error:
            why: str | None = f"could not copy the project to import it: {error}"
        else:
            report = verify_trees(staged.before, staged.after, verify_options)
            why = _failure(report, staged)
    if why is not None or report is None:
        return _refused(group, f"{_NOT_WRITTEN}: {why}")
    if proof is not None:
        proof.take(report)
    return api.write_all(Outcome(group, [changes]))


def _changes(group: list[FileResult]) -> list[FileChange] | str:
    """Each file's bytes now and after the rewrite; or why a file cannot be rewritten any more."""
    from vjp_migrate.source import SourceError
    from vjp_migrate.transaction import FileChange

    changes = []
    for result in group:
        try:
            data, new = api.planned_bytes(result)
        except (OSError, SourceError) as error:
            return f"{result.path}: {api.failed_result(result.path, error).reason}"
        changes.append(FileChange(result.path, data, new))
    return changes


def _refused(group: list[FileResult], reason: str) -> list[FileResult]:
    names = ", ".join(str(r.path) for r in group)
    reason = f"{reason} (this migration changes {names} together; none of them was written)"
    return [dataclasses.replace(r, status=Status.FAILED, reason=reason) for r in group]
