"""Verify stage 6 (parent side): the requests for the worker processes (``pool.py`` runs them)
and their answers as ``VerifyReport`` objects. Never imports JAX; never runs user code in-process.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vjp_migrate
from vjp_migrate.verify.model import FunctionRow, VerifyOptions, VerifyReport
from vjp_migrate.verify.pool import Job, Worker, run_pool

MISSING_JAX = "JAX is not installed: verification needs it. Install it with: pip install 'vjp-migrate[verify]'"


@dataclass(frozen=True)
class Side:
    """One version of the module: its path, and its text when it exists only in memory."""

    path: Path
    source: str | None = None
    label: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The request form."""
        return {"path": str(self.path.resolve()), "source": self.source, "label": self.label or str(self.path)}


def _header(options: VerifyOptions) -> dict[str, Any]:
    """The first line of a worker's request: what every job shares."""
    return {
        "emit": str(options.emit_tests.resolve()) if options.emit_tests else None,
        "options": {
            "examples": str(options.examples.resolve()) if options.examples else None,
            "inputs": str(options.inputs.resolve()) if options.inputs else None,
            "rtol": options.rtol,
            "atol": options.atol,
            "device": options.device,
            "seed": options.seed,
            "strict": options.strict,
        },
    }


def _failed(labels: tuple[str, str], options: VerifyOptions, message: str) -> VerifyReport:
    return VerifyReport(*labels, errors=(message,), strict=options.strict)


def worker_env() -> dict[str, str]:
    """The environment of the worker: no bytecode written."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


# The worker loads this vjp_migrate from its folder, and only it: `python -m` would look in the
# current folder first, where another copy (a checkout of vjp-migrate) shadows this one, and a
# PYTHONPATH entry would hand the worker's interpreter (VerifyOptions.python may be another
# Python) the whole folder this one is installed in.
_LAUNCH = """\
import importlib.util, os, runpy, sys
folder = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location(
    "vjp_migrate", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
)
sys.modules["vjp_migrate"] = package = importlib.util.module_from_spec(spec)
spec.loader.exec_module(package)
runpy.run_module("vjp_migrate.verify.worker", run_name="__main__", alter_sys=True)
"""


def worker_command(python: str | None) -> list[str]:
    """The command that starts a worker process on ``python`` (default: this interpreter)."""
    return [python or sys.executable, "-c", _LAUNCH, str(Path(vjp_migrate.__file__).resolve().parent)]


CACHE_DIR_VARIABLE = "JAX_COMPILATION_CACHE_DIR"


@contextmanager
def compilation_cache(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with JAX's persistent compilation cache in a new private folder, removed when the
    worker is done (unless the user chose a cache folder: theirs is kept, with their settings).

    BEFORE and AFTER compile many of the same programs (a migration leaves the forward pass
    alone), as do the pairs of one run, and JAX's in-memory caches are keyed by the Python
    function: a third of the compilations of 30 fixture pairs in one worker were of a program
    compiled before. The on-disk cache is keyed by the program. Every program is kept (JAX's
    default keeps only those that took a second to compile). One folder per worker and per
    run: a worker writes it alone (JAX writes entries in place, unlocked), and compiled code is
    never read from a folder another process could have written."""
    if env.get(CACHE_DIR_VARIABLE):
        yield env
        return
    try:
        folder = tempfile.TemporaryDirectory(prefix="vjp-migrate-xla-", ignore_cleanup_errors=True)
    except OSError:  # no writable temporary folder: compile everything, as JAX does by default
        yield env
        return
    with folder as made:
        yield {**env, CACHE_DIR_VARIABLE: made, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def run_jobs(
    jobs: list[tuple[Side, Side]],
    options: VerifyOptions,
    examples: list[Path | None] | None = None,
    workers: int = 1,
) -> list[VerifyReport]:
    """Verify the pairs in up to ``workers`` worker processes (timeout: ``options.timeout`` per
    pair); ``examples`` gives each pair its own examples file instead of ``options.examples``."""
    return run_requests(source_requests(jobs, examples), options, workers)


def source_requests(jobs: list[tuple[Side, Side]], examples: list[Path | None] | None = None) -> list[Request]:
    """The requests that verify each (BEFORE, AFTER) pair of modules, with its examples file."""
    per_job = examples or [None] * len(jobs)
    return [
        Request(
            {"before": b.to_dict(), "after": a.to_dict(), "examples": str(e.resolve()) if e else None},
            (b.label or str(b.path), a.label or str(a.path)),
        )
        for (b, a), e in zip(jobs, per_job, strict=False)
    ]


@dataclass(frozen=True)
class Request:
    """One job for the worker (see worker.py), the (BEFORE, AFTER) labels that name it in a
    failure report, and its units of work: its timeout is ``options.timeout`` per unit."""

    job: dict[str, Any]
    labels: tuple[str, str]
    units: int = 1


def run_requests(requests: list[Request], options: VerifyOptions, workers: int = 1) -> list[VerifyReport]:
    """Run the jobs in up to ``workers`` worker processes; one report per job, in order."""
    if not requests:
        return []
    if options.python is None and importlib.util.find_spec("jax") is None:
        return [_failed(r.labels, options, MISSING_JAX) for r in requests]
    command = worker_command(options.python)
    header = _header(options)

    def start(stack: ExitStack) -> Worker:
        return Worker(command, stack.enter_context(compilation_cache(worker_env())), header)

    jobs = [Job(r.job, options.timeout * max(1, r.units)) for r in requests]
    answers = run_pool(jobs, start, workers)
    return [
        _report(a.report, options) if a.report is not None else _failed(r.labels, options, a.error or "no answer")
        for r, a in zip(requests, answers, strict=True)
    ]


def _report(data: dict[str, Any], options: VerifyOptions) -> VerifyReport:
    emitted: list[str] = []
    errors = list(data["errors"])
    if options.emit_tests is not None:
        try:
            options.emit_tests.mkdir(parents=True, exist_ok=True)
            for test in data.get("emitted", []):
                target = options.emit_tests / test["filename"]
                target.write_text(test["text"], encoding="utf-8")
                emitted.append(str(target))
        except OSError as error:
            errors.append(f"cannot write the tests into {options.emit_tests}: {error.strerror or error}")
    return VerifyReport(
        before=data["before"],
        after=data["after"],
        rows=tuple(FunctionRow.from_dict(r) for r in data["rows"]),
        errors=tuple(errors),
        warnings=tuple(data["warnings"]),
        backends=tuple(data.get("backends", ())),
        jax_version=data.get("jax_version"),
        strict=options.strict,
        emitted=tuple(emitted),
    )
