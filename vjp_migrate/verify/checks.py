"""Verify stage 4 (in the worker): the checks of one example of one BEFORE/AFTER pair.

The central object is ``probe(fn, traced, wrt)``: a function of the values at the ``traced``
positions that returns the primal output and the cotangents (``jax.vjp`` with a fixed seeded
output cotangent) with respect to the ``wrt`` positions. Every check runs such a probe, eagerly
or inside a transformation (jit, vmap, scan, cond), and compares it with BEFORE's eager result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax import lax

from vjp_migrate.verify.compare import Comparison, all_zero, compare_trees, random_like
from vjp_migrate.verify.model import CheckOutcome, CheckStatus, progress
from vjp_migrate.verify.pairing import VjpPair

Probe = Callable[[tuple[Any, ...]], tuple[Any, Any]]

AFTER_RAISED = "AFTER raised "  # the detail of a check AFTER's exception failed, before the error

# What the user's code may raise inside a check: a sys.exit() there fails the check, not the run.
USER_ERRORS = (Exception, SystemExit)


def error_text(exc: BaseException) -> str:
    """``TypeName: first line of the message``."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "Binding failed with the error:" says nothing yet
        first = f"{first} {lines[1]}"
    return f"{type(exc).__name__}: {first}"[:300]


@dataclass
class ExampleRun:
    """The state and outcomes of checking one example on one backend."""

    pair: VjpPair
    args: tuple[Any, ...]
    index: int
    backend: str
    rtol: float | None
    atol: float | None
    seed: int
    outcomes: list[CheckOutcome] = field(default_factory=list)
    reference: tuple[Any, Any] | None = None  # BEFORE's eager (output, cotangents)
    after_eager: tuple[Any, Any] | None = None
    cotangent: Any = None

    @property
    def diff(self) -> tuple[int, ...]:
        return self.pair.differentiable(len(self.args))

    @property
    def dynamic(self) -> tuple[int, ...]:
        """Positions traced in AFTER: the differentiable and the migrated ones."""
        return tuple(sorted(set(self.diff) | set(self.pair.moved)))

    def probe(self, fn: Any, traced: tuple[int, ...], wrt: tuple[int, ...]) -> Probe:
        args, ct = self.args, self.cotangent

        def run(values: tuple[Any, ...]) -> tuple[Any, Any]:
            full = list(args)
            for p, v in zip(traced, values, strict=False):
                full[p] = v

            def partial_fn(*wrt_values: Any) -> Any:
                call = list(full)
                for p, v in zip(wrt, wrt_values, strict=False):
                    call[p] = v
                return fn(*call)

            out, vjp_fn = jax.vjp(partial_fn, *[full[p] for p in wrt])
            return out, vjp_fn(same_classes(ct, out))

        return run

    def values(self, positions: tuple[int, ...]) -> tuple[Any, ...]:
        return tuple(self.args[p] for p in positions)

    def add(self, check: str, status: CheckStatus, **kw: Any) -> None:
        self.outcomes.append(CheckOutcome(check, status, self.index, self.backend, **kw))

    def add_comparison(self, check: str, result: Comparison) -> None:
        """Record one compare_trees result as a pass or a fail, with its errors."""
        self.add(
            check,
            CheckStatus.PASS if result.ok else CheckStatus.FAIL,
            where=result.where,
            max_abs_err=result.max_abs,
            max_rel_err=result.max_rel,
            detail=result.detail,
            reference_zero=result.at_zero,
        )

    def labels(self, positions: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.pair.arg_label(p) for p in positions)

    def compare(self, check: str, expected: tuple[Any, Any], actual: tuple[Any, Any], *, dtype: bool = False) -> bool:
        """Compare (output, cotangents) pairs and record one outcome (the worse of the two)."""
        out = compare_trees(expected[0], actual[0], self.rtol, self.atol, None, dtype)
        cts = compare_trees(expected[1], actual[1], self.rtol, self.atol, self.labels(self.diff), dtype)
        bad = out if not out.ok else cts
        status = CheckStatus.PASS if out.ok and cts.ok else CheckStatus.FAIL
        largest = max(out, cts, key=lambda c: c.max_abs)
        self.add(
            check,
            status,
            where=None if status is CheckStatus.PASS else bad.where,
            max_abs_err=largest.max_abs,
            max_rel_err=max(out.max_rel, cts.max_rel),
            detail=bad.detail,
            reference_zero=largest.at_zero,
        )
        return status is CheckStatus.PASS

    # ------------------------------------------------------------------ the checks

    def baseline(self) -> bool:
        """BEFORE eagerly; False (and an error outcome) when the example does not run."""
        try:
            out = self.pair.before(*self.args)
            self.cotangent = random_like(out, np.random.default_rng([self.seed, self.index]))
            self.reference = self.probe(self.pair.before, (), self.diff)(())
            again = self.probe(self.pair.before, (), self.diff)(())
        except USER_ERRORS as exc:  # the user's code: anything can happen
            self.add("before", CheckStatus.ERROR, detail=f"BEFORE does not run on this example: {error_text(exc)}")
            return False
        return self._deterministic(again)

    def _deterministic(self, again: tuple[Any, Any]) -> bool:
        """BEFORE run twice on the example must agree, or no difference from AFTER means anything."""
        assert self.reference is not None
        out = compare_trees(self.reference[0], again[0], self.rtol, self.atol)
        cts = compare_trees(self.reference[1], again[1], self.rtol, self.atol, self.labels(self.diff))
        bad = out if not out.ok else cts
        if bad.ok:
            return True
        self.add(
            "before",
            CheckStatus.ERROR,
            where=bad.where,
            max_abs_err=bad.max_abs,
            max_rel_err=bad.max_rel,
            reference_zero=bad.at_zero,
            detail="BEFORE is not deterministic: two runs of this example differ, so AFTER cannot be compared "
            "with it (make its randomness explicit, e.g. a jax.random key argument)",
        )
        self.reference = None
        return False

    def eager(self) -> bool:
        """Primal outputs and cotangents of the originally differentiable arguments."""
        assert self.reference is not None
        try:
            self.after_eager = self.probe(self.pair.after, (), self.diff)(())
        except USER_ERRORS as exc:
            self.add("primal", CheckStatus.FAIL, detail=AFTER_RAISED + error_text(exc))
            return False
        out = compare_trees(self.reference[0], self.after_eager[0], self.rtol, self.atol, None, True)
        self.add_comparison("primal", out)
        cts = compare_trees(self.reference[1], self.after_eager[1], self.rtol, self.atol, self.labels(self.diff))
        self.add_comparison("cotangent", cts)
        return out.ok and cts.ok

    def moved_zero(self) -> None:
        """The migrated arguments get zero (None) cotangents from AFTER."""
        moved = self.pair.moved
        if not moved:
            self.add("moved cotangents", CheckStatus.NOT_APPLICABLE, detail="no migrated arguments")
            return
        try:
            _, cts = self.probe(self.pair.after, (), self.dynamic)(())
        except USER_ERRORS as exc:
            self.add("moved cotangents", CheckStatus.FAIL, detail=AFTER_RAISED + error_text(exc))
            return
        for position, ct in zip(self.dynamic, cts, strict=False):
            if position in moved:
                zero, worst = all_zero(ct)
                if not zero:
                    self.add(
                        "moved cotangents",
                        CheckStatus.FAIL,
                        where=self.pair.arg_label(position),
                        max_abs_err=worst,
                        max_rel_err=None,
                        reference_zero=True,
                        detail="expected a zero (None) cotangent",
                    )
                    return
        self.add("moved cotangents", CheckStatus.PASS)

    def transformed(self, check: str, run: Callable[[Probe, tuple[Any, ...]], tuple[Any, Any]]) -> None:
        """AFTER inside a transformation, migrated and differentiable arguments traced."""
        assert self.reference is not None
        try:
            got = run(self.probe(self.pair.after, self.dynamic, self.diff), self.values(self.dynamic))
        except USER_ERRORS as exc:
            self.add(check, CheckStatus.FAIL, detail=AFTER_RAISED + error_text(exc))
            return
        self.compare(check, self.reference, got)

    def before_traced(self) -> None:
        """BEFORE under jit with the migrated arguments traced: expected to fail."""
        if not self.pair.moved:
            self.add("before jit", CheckStatus.NOT_APPLICABLE, detail="no migrated arguments")
            return
        try:
            jax.jit(self.probe(self.pair.before, self.dynamic, self.diff))(self.values(self.dynamic))
        except USER_ERRORS as exc:
            self.add("before jit", CheckStatus.EXPECTED_FAILURE, detail=error_text(exc))
            return
        self.add("before jit", CheckStatus.PASS, detail="BEFORE also works with traced arguments")

    def vmap(self, members: list[tuple[Any, ...]]) -> None:
        """AFTER under vmap over a batch of the migrated arguments, against BEFORE per member."""
        batched = self.pair.moved or self.dynamic
        if not batched:
            self.add("vmap", CheckStatus.NOT_APPLICABLE, detail="no array arguments")
            return
        try:
            expected = [self._before_at(batched, m, members[0]) for m in members]
        except USER_ERRORS as exc:
            self.add("vmap", CheckStatus.ERROR, detail=f"BEFORE does not run on the batch: {error_text(exc)}")
            return
        try:
            stacked = jax.tree_util.tree_map(lambda *xs: jax.numpy.stack([jax.numpy.asarray(x) for x in xs]), *members)
            got = jax.vmap(self.probe(self.pair.after, batched, self.diff))(stacked)
        except USER_ERRORS as exc:
            self.add("vmap", CheckStatus.FAIL, detail=AFTER_RAISED + error_text(exc))
            return
        for i, reference in enumerate(expected):
            member = jax.tree_util.tree_map(lambda x, i=i: x[i], got)
            if not self.compare("vmap", reference, member):
                return
            self.outcomes.pop()  # keep one vmap outcome per example
        self.add("vmap", CheckStatus.PASS)

    def _before_at(self, positions: tuple[int, ...], values: tuple[Any, ...], own: tuple[Any, ...]) -> tuple[Any, Any]:
        # The first member is the example itself: BEFORE's result is the reference already.
        if values is own and self.reference is not None:
            return self.reference
        return self.probe(self.pair.before, positions, self.diff)(values)

    def second_order(self) -> None:
        """Nested grad: reverse mode through the cotangents, where BEFORE's rule supports it."""
        diff = self.diff
        if not diff:
            self.add("grad of grad", CheckStatus.NOT_APPLICABLE, detail="no differentiable arguments")
            return

        def second(fn: Any) -> Any:
            first = self.probe(fn, diff, diff)

            def cotangents(*xs: Any) -> Any:
                return first(xs)[1]

            cts, vjp2 = jax.vjp(cotangents, *self.values(diff))
            return vjp2(random_like(cts, np.random.default_rng([self.seed, self.index, 2])))

        try:
            expected = second(self.pair.before)
        except USER_ERRORS as exc:
            self.add(
                "grad of grad", CheckStatus.NOT_APPLICABLE, detail=f"BEFORE does not support it: {error_text(exc)}"
            )
            return
        try:
            got = second(self.pair.after)
        except USER_ERRORS as exc:
            self.add("grad of grad", CheckStatus.FAIL, detail=AFTER_RAISED + error_text(exc))
            return
        self.add_comparison("grad of grad", compare_trees(expected, got, self.rtol, self.atol, self.labels(diff)))


def run_jit(probe: Probe, values: tuple[Any, ...]) -> tuple[Any, Any]:
    """The probe under jax.jit, every dynamic argument a jit argument."""
    return jax.jit(probe)(values)  # type: ignore[no-any-return]


def run_scan(probe: Probe, values: tuple[Any, ...]) -> tuple[Any, Any]:
    """The probe as the body of lax.scan over two copies of the arguments; returns the last."""
    xs = jax.tree_util.tree_map(lambda x: jax.numpy.stack([jax.numpy.asarray(x)] * 2), values)
    _, ys = lax.scan(lambda carry, x: (carry, probe(x)), 0, xs)
    return jax.tree_util.tree_map(lambda y: y[-1], ys)  # type: ignore[no-any-return]


def run_cond(probe: Probe, values: tuple[Any, ...]) -> tuple[Any, Any]:
    """The probe in one branch of lax.cond with a traced predicate (zeros in the other)."""

    def other(xs: tuple[Any, ...]) -> tuple[Any, Any]:
        return jax.tree_util.tree_map(jax.numpy.zeros_like, probe(xs))  # type: ignore[no-any-return]

    return jax.jit(lambda p, xs: lax.cond(p, probe, other, xs))(True, values)  # type: ignore[no-any-return]


def check_example(run: ExampleRun, members: list[tuple[Any, ...]]) -> None:
    """Every check of one example, in order; stops early when the baseline cannot run."""
    step = f"{run.pair.name}, example #{run.index} on {run.backend}"
    progress("step", f"{step}: BEFORE")
    if not run.baseline():
        return
    progress("step", f"{step}: AFTER")
    run.eager()
    if run.after_eager is None:  # AFTER raised: every other check would say the same
        return
    checks: list[tuple[str, Callable[[], None]]] = [
        ("moved cotangents", run.moved_zero),
        ("jit", lambda: run.transformed("jit", run_jit)),
        ("BEFORE under jit", run.before_traced),
        ("vmap", lambda: run.vmap(members)),
        ("scan", lambda: run.transformed("scan", run_scan)),
        ("cond", lambda: run.transformed("cond", run_cond)),
        ("grad of grad", run.second_order),
    ]
    for name, check in checks:
        progress("step", f"{step}: {name}")
        check()


def same_classes(cotangent: Any, out: Any) -> Any:
    """BEFORE's cotangent in the node classes of ``out``: where a module defines the output's
    class (a NamedTuple, a dataclass pytree), AFTER's is another class of the same name, which
    JAX refuses ("unexpected tree structure"); compare_trees reads such structures as equal too."""
    given: Any = jax.tree_util.tree_structure(cotangent)
    wanted: Any = jax.tree_util.tree_structure(out)
    if given == wanted or str(given) != str(wanted):
        return cotangent
    return jax.tree_util.tree_unflatten(wanted, jax.tree_util.tree_leaves(cotangent))
