"""Verify stage 5b (in the worker): one job over two folders, BEFORE and AFTER of a project.

Each folder is imported under the real module names, one after the other (``load_tree``), so
AFTER's ``pkg.ops`` runs with AFTER's ``pkg.rules``. Every custom_vjp function of the modules
the parent chose (``trees.plan_tree``) is verified, and the rows are named ``pkg.ops:fn``.
"""

from __future__ import annotations

import functools
import types
from pathlib import Path
from typing import Any

from vjp_migrate.verify.model import Examples, VerifyOptions


def _factories(examples: Examples, names: list[str], modules: dict[str, types.ModuleType]) -> dict[str, list[str]]:
    """Per module, the ``"make_op()"`` factories the examples name (plainly or as ``mod:make_op()``)."""
    out: dict[str, list[str]] = {name: [] for name in names}
    for key in (k for k in examples if k.endswith("()")):
        module, sep, local = key.rpartition(":")
        if sep and module in out:
            out[module].append(local)
        elif not sep:
            for name, loaded in modules.items():
                if hasattr(loaded, key[: -len("()")].split(".")[0]):
                    out[name].append(key)
    return out


def _per_module(examples: Examples, found: dict[str, set[str]]) -> tuple[dict[str, Examples], list[str]]:
    """The examples of each module by local name: ``pkg.ops:fn`` keys, and plain ``fn`` keys
    when exactly one module has a custom_vjp of that name."""
    out: dict[str, Examples] = {name: {} for name in found}
    warnings = []
    for key, values in examples.items():
        unused = f"EXAMPLES key {key!r} names no custom_vjp function of the verified modules; not used"
        module, sep, local = key.rpartition(":")
        if sep:
            if module in out and local in found[module]:
                out[module][local] = values
            else:
                warnings.append(unused)
            continue
        owners = [name for name, locals_ in found.items() if key in locals_]
        if len(owners) == 1:
            out[owners[0]].setdefault(key, values)
        elif not owners:
            warnings.append(unused)
        elif len(owners) > 1:
            choices = ", ".join(f"{owner}:{key}" for owner in owners)
            warnings.append(f"EXAMPLES key {key!r} is ambiguous ({choices}); not used: name one of those instead")
    return out, warnings


def run_tree_job(job: dict[str, Any], options: VerifyOptions, emit: Path | None) -> dict[str, Any]:
    """Verify the chosen modules of two folders; one report dict."""
    import jax

    from vjp_migrate.verify.inputs import load_examples, load_recording
    from vjp_migrate.verify.loading import exception_line, load_tree
    from vjp_migrate.verify.model import progress
    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions
    from vjp_migrate.verify.session import PairResult, verify_pair, vjp3_recheck
    from vjp_migrate.verify.worker import missing_rows, new_report, start_report

    roots = {role: Path(job[role]["root"]) for role in ("before", "after")}
    package: str | None = job.get("package")
    relative = {m["name"]: m["relative"] for m in job["modules"]}
    names = list(relative)
    report = new_report(job["before"]["label"], job["after"]["label"], job.get("warnings"))
    progress("job", f"{report['before']} -> {report['after']}")
    if not start_report(report, options.device):
        return report
    backends = report["backends"]
    progress("step", "the loading of the inputs")
    try:
        examples_path = Path(job["examples"]) if job.get("examples") else options.examples
        examples = load_examples(examples_path) if examples_path else {}
        recording = load_recording(options.inputs) if options.inputs else None
    except BaseException as exc:
        report["errors"].append(f"could not load the inputs: {exception_line(exc)}")
        return report
    loaded: dict[str, dict[str, types.ModuleType]] = {}
    for role, root in roots.items():
        progress("step", f"the import of {role.upper()}")
        loaded[role], errors = load_tree(root, package, names)
        for name, error in errors.items():
            report["errors"].append(f"could not import {role.upper()} {name} ({root / relative[name]}): {error}")
    names = [n for n in names if n in loaded["before"] and n in loaded["after"]]
    factories = _factories(examples, names, loaded["before"])
    found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for name in names:
        try:
            found[name] = tuple(  # type: ignore[assignment]
                find_custom_vjps(loaded[role][name], jax.custom_vjp, factories[name]) for role in ("before", "after")
            )
        except BaseException as exc:
            report["errors"].append(f"{name}: could not call a factory named in the examples: {exception_line(exc)}")
    per_module, warnings = _per_module(examples, {n: set(b) | set(a) for n, (b, a) in found.items()})
    report["warnings"].extend(warnings)

    @functools.cache
    def after_again() -> dict[str, types.ModuleType]:
        modules, errors = load_tree(roots["after"], package, names)
        if errors:
            raise ImportError("; ".join(f"{n}: {e}" for n, e in errors.items()))
        return modules

    any_pair = False
    for name, (before_found, after_found) in found.items():
        pairs, pair_warnings, missing = pair_functions(before_found, after_found, every=True)
        report["warnings"].extend(f"{name}: {w}" for w in pair_warnings)
        before_path, after_path = roots["before"] / relative[name], roots["after"] / relative[name]
        for row in missing_rows(missing, after_found, before_found, str(before_path), str(after_path)):
            any_pair = True
            row["name"] = f"{name}:{row['name']}"
            report["rows"].append(row)
        source = before_path.read_text(encoding="utf-8")
        results: list[PairResult] = [
            verify_pair(p, loaded["before"][name], before_path, source, per_module[name], recording, options, backends)
            for p in pairs
        ]

        def reload(more: list[str], name: str = name) -> dict[str, Any]:
            return find_custom_vjps(after_again()[name], jax.custom_vjp, factories[name] + more)

        vjp3_recheck(results, reload, options)
        for result in results:
            any_pair = True
            row = result.row().to_dict()
            row["name"] = f"{name}:{row['name']}"
            report["rows"].append(row)
            report["warnings"].extend(result.warnings(row["name"]))
            if emit is not None:
                from vjp_migrate.verify.emit import emit_test

                progress("step", f"{row['name']}: the writing of its test (--emit-tests)")

                report["emitted"].append(emit_test(result, before_path, after_path, emit))
    if not any_pair and not report["errors"]:
        report["warnings"].append("no custom_vjp function is affected by the differences between BEFORE and AFTER")
    return report
