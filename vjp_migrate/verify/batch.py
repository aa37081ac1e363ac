"""Verify stage 6 (parent side), for ``fix --verify``: module pairs and tree pairs as one batch
of worker jobs, their reports back in order. A pair of trees with no module to run gets its
report here, without a job."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vjp_migrate.verify.model import FunctionRow, VerifyOptions, VerifyReport, missing_row
from vjp_migrate.verify.runner import Request, Side, run_requests, source_requests


def verify_batch(
    rewrites: list[tuple[str, str, Path]],
    trees: list[tuple[Path, Path, Path | None]],
    options: VerifyOptions,
    workers: int = 1,
) -> tuple[list[VerifyReport], list[VerifyReport]]:
    """``verify_sources_many``'s modules and ``verify_trees_many``'s trees in one set of up to
    ``workers`` worker processes (``fix --verify`` proves the files it changes alone and its
    multi-file migrations together); their reports, in order, as two lists."""
    planned = [_tree_request(before, after, options, examples) for before, after, examples in trees]
    requests = [p.request for p in planned if p.request is not None]  # first: a tree is the longest job
    requests += source_requests(
        [
            (Side(path, before, f"{path} (before)"), Side(path, after, f"{path} (after)"))
            for before, after, path in rewrites
        ]
    )
    reports = iter(run_requests(requests, options, workers))
    together = [p.report(next(reports) if p.request is not None else None) for p in planned]
    return [next(reports) for _ in rewrites], together


@dataclasses.dataclass(frozen=True)
class _TreeRequest:
    """A pair of trees: the job for a worker, or the report when no module needs one."""

    request: Request | None
    early: VerifyReport | None = None
    removed: tuple[FunctionRow, ...] = ()

    def report(self, answered: VerifyReport | None) -> VerifyReport:
        if answered is None:
            assert self.early is not None
            return self.early
        return dataclasses.replace(answered, rows=self.removed + answered.rows) if self.removed else answered


def _tree_request(before: Path, after: Path, options: VerifyOptions, examples: Path | None) -> _TreeRequest:
    from vjp_migrate.verify.trees import plan_tree  # imports LibCST, which a worker may lack

    plan = plan_tree(before, after)
    label = (str(before), str(after))
    if not plan.changed:
        return _TreeRequest(
            None, VerifyReport(*label, warnings=("the two folders hold the same .py files",), strict=options.strict)
        )
    removed = tuple(
        missing_row(rel, str(before / rel), str(after), what="a file of BEFORE using custom_vjp")
        for rel in plan.removed
    )
    if not plan.modules:
        warnings = plan.warnings
        if not removed:
            warnings += ("no custom_vjp function is affected by the differences between BEFORE and AFTER",)
        return _TreeRequest(None, VerifyReport(*label, rows=removed, warnings=warnings, strict=options.strict))
    examples = examples or options.examples
    job = {
        "kind": "tree",
        "before": {"root": str(before.resolve()), "label": label[0]},
        "after": {"root": str(after.resolve()), "label": label[1]},
        "package": plan.package,
        "modules": [{"name": m.name, "relative": m.relative} for m in plan.modules],
        "warnings": list(plan.warnings),
        "examples": str(examples.resolve()) if examples else None,
    }
    return _TreeRequest(Request(job, label, len(plan.modules)), removed=removed)
