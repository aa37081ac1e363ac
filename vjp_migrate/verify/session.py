"""Verify stage 4b (in the worker): run every example of one pair on every backend, the
cross-backend comparison, the ``jax_custom_vjp3`` pass, and fold the outcomes into a row.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax
import numpy as np

from vjp_migrate.verify.checks import AFTER_RAISED, USER_ERRORS, ExampleRun, check_example, error_text, run_jit
from vjp_migrate.verify.compare import all_zero, carries_values, compare_trees
from vjp_migrate.verify.inputs import Inputs, gather
from vjp_migrate.verify.model import (
    CheckOutcome,
    CheckStatus,
    Examples,
    FunctionRow,
    Verdict,
    VerifyOptions,
    progress,
)
from vjp_migrate.verify.pairing import VjpPair
from vjp_migrate.wording import count


@dataclass
class PairResult:
    """What happened to one pair: its inputs and the runs of its examples."""

    pair: VjpPair
    inputs: Inputs
    runs: list[ExampleRun] = field(default_factory=list)
    extra: list[CheckOutcome] = field(default_factory=list)

    def outcomes(self) -> list[CheckOutcome]:
        """Every outcome, in order."""
        return [o for r in self.runs for o in r.outcomes] + self.extra

    def caveat(self) -> str | None:
        """A warning for a function proven equal on synthesized inputs only: they cannot know
        which values reach the rule's branches, so the proof is only as wide as they are."""
        if self.inputs.source != "synthesized" or self.row().verdict is not Verdict.EQUAL:
            return None
        return (
            f"equal on {count(len(self.inputs.examples), 'synthesized input')} only (small float32 values, one "
            "set with both signs, a zero and magnitudes above 1); a branch they do not reach is not checked: "
            "give --examples for the values that matter"
        )

    def warnings(self, name: str) -> list[str]:
        """The report's warnings about this pair, shown as ``name``: no inputs, or a thin proof."""
        found = []
        if self.inputs.source == "none" and self.inputs.note:
            found.append(f"{name}: not verified (no inputs): {self.inputs.note}")
        if caveat := self.caveat():
            found.append(f"{name}: {caveat}")
        if self.row().verdict is Verdict.EQUAL:
            found.extend(
                f"{name}: BEFORE gives {label} a zero cotangent on every input, so its rule was never exercised: "
                "give --examples where it is not zero"
                for label in self.untested()
            )
        return found

    def untested(self) -> list[str]:
        """The differentiable arguments whose cotangent BEFORE gives as zero on every input: an
        AFTER that also gives zero there passes whatever its rule does elsewhere."""
        zero: set[int] | None = None
        for run in self.runs:
            if run.reference is None:
                continue
            here = {
                p for p, ct in zip(run.diff, run.reference[1], strict=False) if carries_values(ct) and all_zero(ct)[0]
            }
            zero = here if zero is None else zero & here
        return [self.pair.arg_label(p) for p in sorted(zero or ())]

    def row(self) -> FunctionRow:
        """The report row for this pair."""
        outcomes = self.outcomes()
        moved = tuple(self.pair.params[p] if p < len(self.pair.params) else str(p) for p in self.pair.moved)
        base = FunctionRow(self.pair.name, moved, self.inputs.source, len(self.inputs.examples))
        if not self.inputs.examples:
            verdict = Verdict.ERROR if self.inputs.broken else Verdict.NOT_VERIFIED
            return replace(base, verdict=verdict, message=self.inputs.note)
        problems = [o for o in outcomes if o.status in (CheckStatus.FAIL, CheckStatus.ERROR)]
        failed = [o for o in problems if o.status is CheckStatus.FAIL]
        first = failed[0] if failed else problems[0] if problems else None
        message = first.describe() if first else ""
        if failed and all(_raised_under_vmap(o) for o in failed):
            verdict = Verdict.FAILS_UNDER_VMAP
            message = _vmap_message(failed[0])
        elif failed:
            verdict = Verdict.MISMATCH
        elif problems:
            verdict = Verdict.ERROR
        else:
            verdict = Verdict.EQUAL
        return replace(
            base,
            primal_max_err=_max_err(outcomes, "primal"),
            cotangent_max_err=_max_err(outcomes, "cotangent"),
            jit=_summary(outcomes, "jit"),
            vmap=_summary(outcomes, "vmap"),
            before_traced=_before_summary(outcomes),
            verdict=verdict,
            message=message,
            checks=tuple(outcomes),
        )


def _raised_under_vmap(outcome: CheckOutcome) -> bool:
    return outcome.check == "vmap" and outcome.detail.startswith(AFTER_RAISED)


def _vmap_message(outcome: CheckOutcome) -> str:
    """What a row whose only failures are AFTER raising under vmap says: where, and the error."""
    where = ", ".join(p for p in (f"example #{outcome.example}", outcome.backend and f"on {outcome.backend}") if p)
    error = outcome.detail[len(AFTER_RAISED) :]
    return f"AFTER raises under jax.vmap ({where}): {error}; no value was compared there, all other checks pass"


def _max_err(outcomes: list[CheckOutcome], check: str) -> float | None:
    errors = [o.max_abs_err for o in outcomes if o.check == check and o.max_abs_err is not None]
    return max(errors) if errors else None


def _summary(outcomes: list[CheckOutcome], check: str) -> str:
    statuses = {o.status for o in outcomes if o.check == check}
    if CheckStatus.FAIL in statuses or CheckStatus.ERROR in statuses:
        return "FAIL"
    if CheckStatus.PASS in statuses:
        return "ok"
    return "n/a"


def _before_summary(outcomes: list[CheckOutcome]) -> str:
    for o in outcomes:
        if o.check == "before jit" and o.status is CheckStatus.EXPECTED_FAILURE:
            return f"fails ({o.detail.split(':')[0]})"
    if any(o.check == "before jit" and o.status is CheckStatus.PASS for o in outcomes):
        return "works"
    return "n/a"


def _members(examples: tuple[tuple[Any, ...], ...], index: int, positions: tuple[int, ...]) -> list[tuple[Any, ...]]:
    """The batch for vmap: this example's values at ``positions`` plus compatible ones of others."""

    def signature(args: tuple[Any, ...]) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten(tuple(args[p] for p in positions))
        return treedef, tuple((np.shape(x), np.asarray(x).dtype) for x in leaves)

    own = examples[index]
    members = [tuple(own[p] for p in positions)]
    for i, other in enumerate(examples):
        if i != index and len(other) == len(own) and len(members) < 2:
            try:
                if signature(other) == signature(own):
                    members.append(tuple(other[p] for p in positions))
            except Exception:
                continue
    if len(members) == 1:
        members.append(members[0])  # the same object: its BEFORE result is reused
    return members


def _on_device(pair: VjpPair, args: tuple[Any, ...], device: Any | None) -> tuple[Any, ...]:
    """``args`` with the NumPy arrays of its differentiable and migrated arguments made JAX
    arrays, committed to ``device`` when one is chosen (``jax.device_put``). A NumPy array a
    custom_vjp rule receives untraced (an unbatched argument under vmap reaches fwd as given)
    would be indexed by NumPy, which rejects a traced index: JAX's own callers (jit, a jnp
    computation) never pass one. Static arguments, and Python scalars anywhere, stay as given:
    they are hashed, compared or used as shapes, not computed on."""
    dynamic = set(pair.differentiable(len(args))) | set(pair.moved)

    def put(leaf: Any) -> Any:
        if not isinstance(leaf, (np.ndarray, np.generic, jax.Array)):
            return leaf
        return jax.numpy.asarray(leaf) if device is None else jax.device_put(leaf, device)

    return tuple(jax.tree_util.tree_map(put, a) if i in dynamic else a for i, a in enumerate(args))


def verify_pair(
    pair: VjpPair,
    before_module: types.ModuleType,
    before_path: Path,
    before_source: str,
    examples: Examples | None,
    recording: Any,
    options: VerifyOptions,
    backends: list[str],
) -> PairResult:
    """Gather the inputs and run every check of every example on every backend."""
    from vjp_migrate.verify.worker import _device_context

    def runs(args: tuple[Any, ...]) -> str | None:
        trial = ExampleRun(pair, args, 0, backends[0], options.rtol, options.atol, options.seed)
        return None if trial.baseline() else trial.outcomes[-1].detail

    progress("step", f"{pair.name}: the search for inputs")
    inputs = gather(pair, before_module, before_path, before_source, examples, recording, runs, options.seed)
    result = PairResult(pair, inputs)
    per_backend: dict[str, list[ExampleRun]] = {}
    for backend in backends:
        with _device_context(backend):
            device = None if options.device is None else jax.devices(backend)[0]  # chosen: the inputs go there
            here = tuple(_on_device(pair, args, device) for args in inputs.examples)
            for index, args in enumerate(here):
                run = ExampleRun(pair, args, index, backend, options.rtol, options.atol, options.seed)
                try:
                    batched = pair.moved or run.dynamic
                    check_example(run, _members(here, index, batched))
                except USER_ERRORS as exc:  # a bug in a check must not hide the others
                    run.add("checks", CheckStatus.ERROR, detail=error_text(exc))
                result.runs.append(run)
                per_backend.setdefault(backend, []).append(run)
    if len(backends) > 1:
        _cross_backend(result, per_backend, options)
    return result


def _cross_backend(result: PairResult, per_backend: dict[str, list[ExampleRun]], options: VerifyOptions) -> None:
    first, *others = list(per_backend)
    for backend in others:
        for ref, run in zip(per_backend[first], per_backend[backend], strict=False):
            if ref.after_eager is None or run.after_eager is None:
                continue
            out = compare_trees(ref.after_eager, run.after_eager, options.rtol, options.atol)
            status = CheckStatus.PASS if out.ok else CheckStatus.FAIL
            result.extra.append(
                CheckOutcome(
                    f"{first} vs {backend}",
                    status,
                    run.index,
                    backend,
                    out.where,
                    out.max_abs,
                    out.max_rel,
                    out.detail,
                    out.at_zero,
                )
            )


def vjp3_phase(results: list[PairResult], after_path: Path, after_source: str | None, options: VerifyOptions) -> None:
    """Re-import AFTER with ``jax_custom_vjp3`` on and check it again (n/a without the option)."""
    from vjp_migrate.verify.loading import load_module
    from vjp_migrate.verify.pairing import find_custom_vjps

    def reload(factories: list[str]) -> dict[str, Any]:
        module = load_module(after_path, "after_vjp3", after_source)
        return find_custom_vjps(module, jax.custom_vjp, factories)

    vjp3_recheck(results, reload, options)


def vjp3_recheck(
    results: list[PairResult], reload: Callable[[list[str]], dict[str, Any]], options: VerifyOptions
) -> None:
    """Check AFTER again as ``reload(factories)`` finds it (by pair name) with ``jax_custom_vjp3``
    on (n/a without the option)."""
    todo = [r for r in results if r.inputs.examples]
    if not todo:
        return
    config: Any = jax.config  # its options are typed in some JAX versions, not in others
    try:
        previous = bool(config.jax_custom_vjp3)
    except AttributeError:
        for r in todo:
            r.extra.append(CheckOutcome("custom_vjp3", CheckStatus.NOT_APPLICABLE, detail="not in this JAX"))
        return
    config.update("jax_custom_vjp3", True)
    progress("step", "the import of AFTER with jax_custom_vjp3")
    try:
        try:
            found = reload([r.pair.name for r in todo if r.pair.name.endswith("()")])
        except USER_ERRORS as exc:
            for r in todo:
                r.extra.append(
                    CheckOutcome("custom_vjp3", CheckStatus.FAIL, detail=f"AFTER does not import: {error_text(exc)}")
                )
            return
        for r in todo:
            if r.pair.name not in found:
                r.extra.append(
                    CheckOutcome("custom_vjp3", CheckStatus.FAIL, detail="function not found under custom_vjp3")
                )
                continue
            pair = replace(r.pair, after=found[r.pair.name])
            first_backend = r.runs[0].backend if r.runs else ""
            for done in (d for d in r.runs if d.backend == first_backend and d.reference is not None):
                progress("step", f"{pair.name}, example #{done.index}: custom_vjp3")
                # BEFORE's reference and cotangent from the main pass are reused as they are.
                run = ExampleRun(pair, done.args, done.index, "", options.rtol, options.atol, options.seed)
                run.reference, run.cotangent = done.reference, done.cotangent
                if run.eager():
                    run.transformed("jit", run_jit)
                r.extra.extend(replace(o, check=f"custom_vjp3 {o.check}") for o in run.outcomes)
    finally:
        config.update("jax_custom_vjp3", previous)
