"""Stage 12, for ``fix --verify``: each planned rewrite proven with real JAX before it is written.

The files a migration changes alone and the multi-file migrations (``also_touches``), staged as
copies of their packages, go to the verify worker processes as one batch; what is proven is
written (a multi-file migration all together, or none of it), the rest comes back FAILED with
what failed. A Verifier does this for one run: for `fix` once, for `fix --interactive` after
each accepted change, and for `fix -` without writing (the proven source is printed).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate import api
from vjp_migrate.model import FileResult, Status

if TYPE_CHECKING:
    from vjp_migrate.transaction import FileChange
    from vjp_migrate.verify import VerifyOptions, VerifyReport
    from vjp_migrate.verify.model import FunctionRow
    from vjp_migrate.verify.trees import Staged


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


@dataclass
class Verifier:
    """`fix --verify` over one run: how to prove, in how many workers, and what it has proven so far."""

    options: VerifyOptions
    workers: int
    proof: Proof = field(default_factory=Proof)

    def write(self, planned: list[FileResult]) -> list[FileResult]:
        """``write_verified``: the rewrites that are proven are written."""
        return write_verified(planned, self.options, self.proof, self.workers)

    def prove(self, planned: list[FileResult]) -> list[FileResult]:
        """``write_verified`` writing nothing: for a rewrite that is printed, not written."""
        return write_verified(planned, self.options, self.proof, self.workers, write=False)


def write_verified(
    planned: list[FileResult], verify_options: object, proof: Proof | None = None, workers: int = 1, write: bool = True
) -> list[FileResult]:
    """Verify each planned rewrite with real JAX, write the ones that verify, refuse the rest.

    ``planned`` comes from ``fix(..., write=False)``. A file whose rewrite shows a mismatch or
    cannot be run is not written and comes back FAILED with the reason. The files of one
    multi-file migration are proven together (``verify_trees`` over a copy of their packages
    before and after) and written together, or none of them is. Every file and every such
    migration is a job of its own for up to ``workers`` worker processes, with its own timeout.
    Without ``write``, what is proven comes back as planned, unwritten (`fix --verify -` prints it).
    """
    import tempfile
    from contextlib import ExitStack

    from vjp_migrate.transaction import Outcome
    from vjp_migrate.verify import VerifyOptions, verify_batch

    assert isinstance(verify_options, VerifyOptions)
    together = _multi_file(planned)
    pending = {r.path: r for r in planned if r.path in together and _rewrites(r)}
    decided: dict[Path, FileResult] = {}
    groups: list[tuple[list[FileResult], list[FileChange], Staged]] = []
    grouped: set[Path] = set()
    with ExitStack() as stack:
        for result in planned:
            if result.path not in pending or result.path in grouped:
                continue
            group = [pending[p] for p in sorted(together[result.path]) if p in pending]
            grouped.update(r.path for r in group)
            prepared = _stage(group, stack.enter_context(tempfile.TemporaryDirectory(prefix="vjp-migrate-verify-")))
            if isinstance(prepared, list):
                decided.update((r.path, r) for r in prepared)
            else:
                groups.append((group, *prepared))
        alone = [r for r in planned if r.path not in pending and _rewrites(r)]
        singles, trees = verify_batch(
            [(r.old_text or "", r.new_text or "", r.path) for r in alone],
            [(staged.before, staged.after, None) for _, _, staged in groups],
            verify_options,
            workers,
        )
    for (group, changes, staged), report in zip(groups, trees, strict=True):
        why = _failure(report, staged)
        if why is not None:
            decided.update((r.path, r) for r in _refused(group, f"{_NOT_WRITTEN}: {why}"))
            continue
        if proof is not None:
            proof.take(report)
        decided.update((r.path, r) for r in (api.write_all(Outcome(group, [changes])) if write else group))
    for result, report in zip(alone, singles, strict=True):
        why = _failure(report)
        if why is None:
            if proof is not None:
                proof.take(report)
            decided[result.path] = api.write_result(result) if write else result
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


def _stage(group: list[FileResult], folder: str) -> list[FileResult] | tuple[list[FileChange], Staged]:
    """Copies of the packages of one multi-file migration, before and after, in ``folder``; or
    the group refused, when a file changed since planning or the packages cannot be copied."""
    from vjp_migrate.verify.trees import stage_trees

    changes = _changes(group)
    if isinstance(changes, str):
        return _refused(group, f"rewrite not written: {changes}")
    try:
        staged = stage_trees({c.path: (c.old, c.new) for c in changes}, Path(folder))
    except (ValueError, OSError) as error:
        return _refused(group, f"{_NOT_WRITTEN}: could not copy the project to import it: {error}")
    return changes, staged


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
