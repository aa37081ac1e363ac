"""Verify stage 5: the worker process (started by ``runner.worker_command``).

The only place user code runs and JAX is imported. Reads JSON lines on stdin (the request's
header, then one job at a time, as ``pool.py`` hands them out), writes one JSON answer line per
job to the original stdout (user code's own prints go to stderr), writes no files.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any

MISSING_JAX = "JAX is not installed: verification needs it. Install it with: pip install 'vjp-migrate[verify]'"


def main() -> int:
    """Entry point: the request's header, then one job per line, on stdin; one answer line per
    job on the real stdout."""
    sys.dont_write_bytecode = True
    from vjp_migrate.lifeline import exit_with

    exit_with(os.getppid())  # a job must not outlive the run (the end of stdin tells only between jobs)
    _cwd_last()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the user's prints must not corrupt the answers
    jobs = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # nor may user code that reads stdin take a job
    if importlib.util.find_spec("jax") is None:
        _answer(answers, {"fatal": MISSING_JAX})
        return 0
    try:
        options, emit = _setup(json.loads(jobs.readline()))
    except BaseException as exc:  # no job can run: say why for all of them
        _answer(answers, {"fatal": _stopped(exc)})
        return 0
    for line in jobs:
        job = json.loads(line)["job"]
        try:
            from vjp_migrate.verify.tree_job import run_tree_job

            report = run_tree_job(job, options, emit) if job.get("kind") == "tree" else run_job(job, options, emit)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # report, never crash silently; the next job still runs
            _answer(answers, {"error": _stopped(exc)})
            continue
        _answer(answers, {"report": report})
    return 0


def _answer(out: IO[str], answer: dict[str, Any]) -> None:
    out.write(json.dumps(answer) + "\n")
    out.flush()


def _stopped(exc: BaseException) -> str:
    from vjp_migrate.verify.loading import exception_line
    from vjp_migrate.verify.model import last_step

    return f"the verifier stopped: {exception_line(exc)}{last_step()}"


def _cwd_last() -> None:
    """``python -c`` puts the current folder first on sys.path, where a ``glob.py`` or
    ``random.py`` of the user's would shadow the standard library JAX imports; keep it, last."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path.append(sys.path.pop(0))


def _setup(header: dict[str, Any]) -> tuple[Any, Path | None]:
    """The options and the folder for emitted tests that every job of the request shares."""
    from vjp_migrate.verify.model import VerifyOptions

    raw = header["options"]
    options = VerifyOptions(
        examples=Path(raw["examples"]) if raw.get("examples") else None,
        inputs=Path(raw["inputs"]) if raw.get("inputs") else None,
        rtol=raw.get("rtol"),
        atol=raw.get("atol"),
        device=raw.get("device"),
        seed=raw.get("seed", 0),
        strict=raw.get("strict", False),
    )
    return options, Path(header["emit"]) if header.get("emit") else None


def _backends(device: str | None) -> tuple[list[str], str | None]:
    import jax

    if device is None:
        return [jax.default_backend()], None
    wanted = ["cpu", "gpu", "tpu"] if device == "all" else [device]
    found = []
    for name in wanted:
        try:
            if jax.devices(name):
                found.append(name)
        except RuntimeError:
            continue
    if not found or (device != "all" and device not in found):
        return [], f"no {device} backend available (JAX has: {jax.default_backend()})"
    return found, None


def _device_context(backend: str) -> AbstractContextManager[Any]:
    import jax

    if backend == jax.default_backend():
        return nullcontext()
    return jax.default_device(jax.devices(backend)[0])  # type: ignore[no-any-return]


def new_report(before: str, after: str, warnings: list[str] | None = None) -> dict[str, Any]:
    """An empty report dict, as the parent process reads it."""
    import jax

    return {
        "before": before,
        "after": after,
        "errors": [],
        "warnings": list(warnings or ()),
        "rows": [],
        "emitted": [],
        "jax_version": jax.__version__,
    }


def start_report(report: dict[str, Any], device: str | None) -> bool:
    """Record the backends ``device`` selects; False (and the error) when there are none."""
    backends, problem = _backends(device)
    report["backends"] = backends
    if problem:
        report["errors"].append(problem)
        return False
    return True


def run_job(job: dict[str, Any], options: Any, emit: Path | None) -> dict[str, Any]:
    """Verify one BEFORE/AFTER pair; a report dict (and emitted test texts when asked)."""
    import jax

    from vjp_migrate.verify.loading import exception_line, load_module, module_text
    from vjp_migrate.verify.model import progress
    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions

    before_path, after_path = Path(job["before"]["path"]), Path(job["after"]["path"])
    report = new_report(job["before"].get("label", str(before_path)), job["after"].get("label", str(after_path)))
    progress("job", f"{report['before']} -> {report['after']}")
    if not start_report(report, options.device):
        return report
    backends = report["backends"]
    modules = []
    for role, path in (("before", before_path), ("after", after_path)):
        progress("step", f"the import of {role.upper()}")
        try:
            modules.append(load_module(path, role, job[role].get("source")))
        except BaseException as exc:
            report["errors"].append(f"could not import {role.upper()} ({path}): {exception_line(exc)}")
            return report
    before, after = modules
    before_source = module_text(before_path, job["before"].get("source"))
    progress("step", "the loading of the inputs")
    try:
        from vjp_migrate.verify.inputs import load_examples, load_recording

        examples_path = Path(job["examples"]) if job.get("examples") else options.examples
        examples = load_examples(examples_path) if examples_path else None
        recording = load_recording(options.inputs) if options.inputs else None
    except BaseException as exc:
        report["errors"].append(f"could not load the inputs: {exception_line(exc)}")
        return report
    factories = [name for name in (examples or {}) if name.endswith("()")]
    progress("step", "the factories named in the examples")
    try:
        found_before = find_custom_vjps(before, jax.custom_vjp, factories)
        found_after = find_custom_vjps(after, jax.custom_vjp, factories)
    except BaseException as exc:
        report["errors"].append(f"could not call a factory named in the examples: {exception_line(exc)}")
        return report
    pairs, warnings, missing = pair_functions(found_before, found_after)
    report["warnings"].extend(warnings)
    report["rows"].extend(missing_rows(missing, found_after, found_before, report["before"], report["after"]))
    report["warnings"].extend(unused_example_keys(examples or {}, set(found_before) | set(found_after)))
    if not pairs and not missing:
        report["warnings"].append("no custom_vjp function differs between BEFORE and AFTER")
    from vjp_migrate.verify.session import verify_pair, vjp3_phase

    results = [
        verify_pair(p, before, before_path, before_source, examples, recording, options, backends) for p in pairs
    ]
    vjp3_phase(results, after_path, job["after"].get("source"), options)
    for result in results:
        report["rows"].append(result.row().to_dict())
        report["warnings"].extend(result.warnings(result.pair.name))
        if emit is not None:
            from vjp_migrate.verify.emit import emit_test

            progress("step", f"{result.pair.name}: the writing of its test (--emit-tests)")

            report["emitted"].append(emit_test(result, before_path, after_path, emit))
    return report


def missing_rows(
    missing: list[str], after: dict[str, Any], before: dict[str, Any], before_label: str, after_label: str
) -> list[dict[str, Any]]:
    """A failing row for each custom_vjp function of BEFORE that AFTER lacks."""
    from vjp_migrate.verify.model import missing_row

    instead = tuple(sorted(name for name in after if name not in before))
    return [missing_row(name, before_label, after_label, instead).to_dict() for name in missing]


def unused_example_keys(examples: dict[str, Any], names: set[str]) -> list[str]:
    """A warning for each EXAMPLES key that names no custom_vjp function: a misspelt key would
    otherwise leave its function to synthesized inputs without a word."""
    unused = sorted(key for key in examples if key not in names)
    if not unused:
        return []
    have = ", ".join(sorted(names)) or "none"
    return [f"EXAMPLES key {key!r} names no custom_vjp function; not used (functions: {have})" for key in unused]


if __name__ == "__main__":
    raise SystemExit(main())
