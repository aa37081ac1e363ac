"""Verify stage 6 (parent side): run the worker in a subprocess with a timeout and turn its
answer into ``VerifyReport`` objects. Never imports JAX; never runs user code in-process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vjp_migrate
from vjp_migrate.verify.model import PROGRESS, FunctionRow, VerifyOptions, VerifyReport, where_stopped

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


def _request(jobs: list[dict[str, Any]], options: VerifyOptions) -> str:
    return json.dumps(
        {
            "jobs": jobs,
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
    )


def _failed(labels: list[tuple[str, str]], options: VerifyOptions, message: str) -> list[VerifyReport]:
    return [VerifyReport(b, a, errors=(message,), strict=options.strict) for b, a in labels]


def worker_env() -> dict[str, str]:
    """The environment of the worker: this vjp_migrate importable, no bytecode written."""
    env = dict(os.environ)
    package_parent = str(Path(vjp_migrate.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


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
    jobs: list[tuple[Side, Side]], options: VerifyOptions, examples: list[Path | None] | None = None
) -> list[VerifyReport]:
    """Verify the pairs in one worker process (timeout: ``options.timeout`` per pair);
    ``examples`` gives each pair its own examples file instead of ``options.examples``."""
    per_job = examples or [None] * len(jobs)
    requests = [
        {"before": b.to_dict(), "after": a.to_dict(), "examples": str(e.resolve()) if e else None}
        for (b, a), e in zip(jobs, per_job, strict=False)
    ]
    labels = [(b.label or str(b.path), a.label or str(a.path)) for b, a in jobs]
    return run_requests(requests, labels, options, len(jobs))


def run_requests(
    requests: list[dict[str, Any]], labels: list[tuple[str, str]], options: VerifyOptions, units: int
) -> list[VerifyReport]:
    """Run job requests (see worker.py) in one worker process, with ``options.timeout`` per
    unit of work; ``labels`` (BEFORE, AFTER) name each job in a failure report."""
    if options.python is None and importlib.util.find_spec("jax") is None:
        return _failed(labels, options, MISSING_JAX)
    command = [options.python or sys.executable, "-m", "vjp_migrate.verify.worker"]
    try:
        with compilation_cache(worker_env()) as env:
            done = subprocess.run(
                command,
                input=_request(requests, options),
                capture_output=True,
                text=True,
                timeout=options.timeout * max(1, units),
                env=env,
                check=False,
            )
    except subprocess.TimeoutExpired as exc:
        where = where_stopped(_markers(exc.stderr))
        return _failed(labels, options, f"timed out after {exc.timeout:g}s{where}; raise --timeout if it is only slow")
    except OSError as exc:
        return _failed(labels, options, f"could not start the worker: {exc}")
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        return _failed(labels, options, _crash(done.returncode, done.stderr))
    if "fatal" in answer:
        return _failed(labels, options, answer["fatal"])
    return [_report(data, options) for data in answer["reports"]]


def _markers(stderr: str | bytes | None) -> dict[str, str]:
    """The last progress markers (``model.progress``) in the worker's stderr."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr or ""
    markers: dict[str, str] = {}
    for line in text.split("\n"):  # not splitlines(): the marker's \x1e is a line break to it
        kind, _, what = line.partition(PROGRESS)[2].partition("\t")
        if line.startswith(PROGRESS) and what:
            if kind == "job":
                markers.clear()
            markers[kind] = what
    return markers


def _crash(returncode: int, stderr: str) -> str:
    """One line: how the worker died, and where (or its last words when it died starting)."""
    if returncode < 0:
        try:
            how = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"killed by signal {-returncode}"
    else:
        how = f"exit {returncode}"
    where = where_stopped(_markers(stderr))
    if not where:
        said = [line.strip() for line in stderr.split("\n") if line.strip() and not line.startswith(PROGRESS)]
        where = f": {said[-1][:300]}" if said else ""
    return f"the worker crashed ({how}){where}"


def _report(data: dict[str, Any], options: VerifyOptions) -> VerifyReport:
    emitted: list[str] = []
    if options.emit_tests is not None:
        options.emit_tests.mkdir(parents=True, exist_ok=True)
        for test in data.get("emitted", []):
            target = options.emit_tests / test["filename"]
            target.write_text(test["text"], encoding="utf-8")
            emitted.append(str(target))
    return VerifyReport(
        before=data["before"],
        after=data["after"],
        rows=tuple(FunctionRow.from_dict(r) for r in data["rows"]),
        errors=tuple(data["errors"]),
        warnings=tuple(data["warnings"]),
        backends=tuple(data.get("backends", ())),
        jax_version=data.get("jax_version"),
        strict=options.strict,
        emitted=tuple(emitted),
    )
