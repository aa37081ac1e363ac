"""Verify stage 0: the plain data of a verification run (options in, report out).

Everything here is JSON-friendly so the report can cross the subprocess boundary:
the worker builds rows, serialises them with ``to_dict`` and the parent rebuilds them
with ``from_dict``.
"""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# A line the worker writes on stderr before it runs user code: "<PROGRESS>job\t<text>" when
# it starts a BEFORE/AFTER pair, "<PROGRESS>step\t<text>" for each step of it. The parent
# reads the last ones to say where a timeout or a crash happened.
PROGRESS = "\x1evjp-migrate-verify:"
_last_progress: dict[str, str] = {}


def progress(kind: str, text: str) -> None:
    """Announce (on stderr, and for ``last_step``) what the worker is about to run."""
    if kind == "job":
        _last_progress.clear()
    _last_progress[kind] = text
    sys.stderr.write(f"{PROGRESS}{kind}\t{text}\n")
    sys.stderr.flush()


def where_stopped(markers: dict[str, str]) -> str:
    """'while running STEP (JOB)' from the last progress markers, or ''."""
    step, job = markers.get("step"), markers.get("job")
    if step and job:
        return f" while running {step} ({job})"
    if step or job:
        return f" while running {step or job}"
    return ""


def last_step() -> str:
    """``where_stopped`` of this process's own last markers (for the worker's fatal errors)."""
    return where_stopped(_last_progress)


class Verdict(enum.Enum):
    """The outcome for one custom_vjp function."""

    EQUAL = "equal"
    MISMATCH = "mismatch"
    # Equal everywhere else, but AFTER raises under jax.vmap: no number was compared there.
    FAILS_UNDER_VMAP = "fails under vmap"
    # In BEFORE, not in AFTER: a migration never renames or removes a custom_vjp function.
    MISSING = "missing in AFTER"
    NOT_VERIFIED = "not verified (no inputs)"
    ERROR = "error"


class CheckStatus(enum.Enum):
    """The outcome of one check on one example."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    NOT_APPLICABLE = "n/a"
    # BEFORE failing under jit/vmap with a traced migrated argument: the point of the migration.
    EXPECTED_FAILURE = "fails as expected"


@dataclass(frozen=True)
class VerifyOptions:
    """How to verify: inputs, tolerances, devices, limits."""

    examples: Path | None = None
    inputs: Path | None = None
    rtol: float | None = None  # None: a default that depends on the dtype
    atol: float | None = None
    device: str | None = None  # None: JAX's default backend; "cpu", "gpu", "tpu" or "all"
    timeout: float = 300.0
    seed: int = 0
    strict: bool = False
    emit_tests: Path | None = None
    python: str | None = None  # interpreter for the worker; None: the current one


@dataclass(frozen=True)
class ExampleCall:
    """One example given with keyword arguments (``call(x, lo=-1.0)`` in an examples file)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def call(*args: Any, **kwargs: Any) -> ExampleCall:
    """An example call with keyword arguments, for an examples file:
    ``EXAMPLES = {"clip": [call(x, lo=-1.0, hi=1.0)]}``. Verify binds the keywords to their
    positions through the primal's signature, as ``jax.custom_vjp`` itself does."""
    return ExampleCall(args, kwargs)


Example = tuple[Any, ...] | ExampleCall  # positional arguments, or ``call(*args, **kwargs)``
Examples = dict[str, list[Example]]  # an examples file's EXAMPLES, by function name


@dataclass(frozen=True)
class CheckOutcome:
    """One check (primal, cotangent, jit, ...) of one example, on one backend."""

    check: str
    status: CheckStatus
    example: int | None = None
    backend: str | None = None
    where: str | None = None  # "output[0]", "argument x (position 2)"
    max_abs_err: float | None = None
    max_rel_err: float | None = None  # over the values where BEFORE is not 0
    detail: str = ""
    reference_zero: bool = False  # max_abs_err is where BEFORE gives 0

    def describe(self) -> str:
        """One line a person can act on."""
        parts = [self.check]
        if self.example is not None:
            parts.append(f"example #{self.example}")
        if self.backend:
            parts.append(f"on {self.backend}")
        if self.where:
            parts.append(self.where)
        text = ", ".join(parts) + f": {self.status.value}"
        if self.max_abs_err is not None:
            text += f" ({self._errors()})"
        if self.detail:
            text += f": {self.detail}"
        return text

    def _errors(self) -> str:
        """'max abs err 0.5, max rel err 2'; against a 0 of BEFORE no ratio means anything, so
        that is said instead: 'max abs err 1 where BEFORE gives 0'."""
        abs_text = f"max abs err {self.max_abs_err:.3g}"
        rel = self.max_rel_err or 0.0
        if not self.reference_zero:
            return f"{abs_text}, max rel err {rel:.3g}"
        abs_text += " where BEFORE gives 0"
        return f"{abs_text}, max rel err {rel:.3g} elsewhere" if rel else abs_text


@dataclass(frozen=True)
class FunctionRow:
    """Everything verify found out about one custom_vjp function."""

    name: str
    moved: tuple[str, ...] = ()
    input_source: str = "none"  # "examples", "recorded", "synthesized", "none"
    examples: int = 0
    primal_max_err: float | None = None
    cotangent_max_err: float | None = None
    jit: str = "n/a"
    vmap: str = "n/a"
    before_traced: str = "n/a"
    verdict: Verdict = Verdict.NOT_VERIFIED
    message: str = ""
    checks: tuple[CheckOutcome, ...] = ()

    @property
    def problems(self) -> tuple[CheckOutcome, ...]:
        """The failed or crashed checks."""
        bad = (CheckStatus.FAIL, CheckStatus.ERROR)
        return tuple(c for c in self.checks if c.status in bad)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["checks"] = [_check_to_dict(c) for c in self.checks]
        data["moved"] = list(self.moved)
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FunctionRow:
        """The inverse of ``to_dict``."""
        values = dict(data)
        values["verdict"] = Verdict(values["verdict"])
        values["moved"] = tuple(values.get("moved", ()))
        values["checks"] = tuple(_check_from_dict(c) for c in values.get("checks", ()))
        return FunctionRow(**values)


def _check_to_dict(check: CheckOutcome) -> dict[str, Any]:
    data = asdict(check)
    data["status"] = check.status.value
    return data


def _check_from_dict(data: dict[str, Any]) -> CheckOutcome:
    values = dict(data)
    values["status"] = CheckStatus(values["status"])
    return CheckOutcome(**values)


def missing_row(
    name: str, before: str, after: str, instead: tuple[str, ...] = (), what: str = "a custom_vjp function of BEFORE"
) -> FunctionRow:
    """The row of a custom_vjp function (or a file using custom_vjp) of BEFORE that AFTER lacks
    (``instead``: the ones AFTER alone has, the likely new names)."""
    message = f"{what} ({before}) that AFTER ({after}) lacks"
    if instead:
        message += f"; AFTER has {', '.join(instead)} instead"
    message += ": a migration never renames or removes one"
    return FunctionRow(name, verdict=Verdict.MISSING, message=message)


@dataclass(frozen=True)
class EmittedTest:
    """A standalone pytest file the worker composed for ``--emit-tests``."""

    function: str
    filename: str
    text: str


@dataclass(frozen=True)
class VerifyReport:
    """The result of verifying one BEFORE/AFTER pair."""

    before: str
    after: str
    rows: tuple[FunctionRow, ...] = ()
    errors: tuple[str, ...] = ()  # the pair could not be run at all (import error, timeout...)
    warnings: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    jax_version: str | None = None
    strict: bool = False
    emitted: tuple[str, ...] = field(default=())  # paths written by --emit-tests

    @property
    def exit_code(self) -> int:
        """0 all verified equal, 1 a mismatch (or AFTER fails under vmap, or lacks a function of
        BEFORE), 2 something could not be run."""
        if self.errors or any(r.verdict is Verdict.ERROR for r in self.rows):
            return 2
        if any(r.verdict in (Verdict.MISMATCH, Verdict.FAILS_UNDER_VMAP, Verdict.MISSING) for r in self.rows):
            return 1
        if self.strict and any(r.verdict is Verdict.NOT_VERIFIED for r in self.rows):
            return 2
        return 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the exit code."""
        return {
            "before": self.before,
            "after": self.after,
            "exit_code": self.exit_code,
            "jax_version": self.jax_version,
            "backends": list(self.backends),
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "emitted": list(self.emitted),
            "functions": [r.to_dict() for r in self.rows],
        }

    def to_json(self) -> str:
        """The report as indented JSON (the ``--output-format json`` output)."""
        return json.dumps(self.to_dict(), indent=2)
