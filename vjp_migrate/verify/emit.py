"""Verify stage 8 (in the worker): compose ``--emit-tests`` files, standalone pytest modules
that keep the proof: BEFORE's outputs and cotangents for the inputs used, checked against the
migrated function eagerly, under ``jax.jit`` with the migrated arguments traced, and for zero
cotangents of the migrated arguments. The worker only composes the text; the parent writes it.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from vjp_migrate.verify.loading import locate

_HEADER = '''"""Gradient proof for `{name}`, emitted by `vjp-migrate verify --emit-tests`.

BEFORE: {before}
AFTER:  {after}

The expected outputs and cotangents were computed with the BEFORE version (migrated
arguments in nondiff_argnums). These tests check the current version of `{module}` against
them: eagerly, under jax.jit with the migrated arguments traced, and that the migrated
arguments get zero cotangents.
"""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str((Path(__file__).parent / {root!r}).resolve()))
MODULE = importlib.import_module({module!r})
FUNCTION = {name!r}
DIFFERENTIABLE = {diff!r}  # positions whose cotangents must match BEFORE
MIGRATED = {moved!r}  # positions that left nondiff_argnums
RTOL, ATOL = {rtol!r}, {atol!r}


def _ref(ref):
    module, _, qualname = ref.partition(":")
    target = MODULE if module == MODULE.__name__ else importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _function():
    return _ref(f"{{MODULE.__name__}}:{{FUNCTION}}")


def _probe(fn, args, traced, wrt, cotangent):
    def run(values):
        full = list(args)
        for p, v in zip(traced, values):
            full[p] = v

        def partial_fn(*wrt_values):
            call = list(full)
            for p, v in zip(wrt, wrt_values):
                call[p] = v
            return fn(*call)

        out, vjp_fn = jax.vjp(partial_fn, *[full[p] for p in wrt])
        return out, vjp_fn(cotangent)

    return run


def _assert_close(expected, actual):
    is_none = lambda x: x is None  # noqa: E731
    expected_leaves = jax.tree_util.tree_leaves(expected, is_leaf=is_none)
    actual_leaves = jax.tree_util.tree_leaves(actual, is_leaf=is_none)
    assert len(expected_leaves) == len(actual_leaves)
    for e, a in zip(expected_leaves, actual_leaves):
        if e is not None:
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(e, np.float64), rtol=RTOL, atol=ATOL)

'''

_TESTS = """
EXAMPLES = [
{examples}
]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["id"])
def test_outputs_and_cotangents_match_before(example):
    out, cts = _probe(_function(), example["args"], (), DIFFERENTIABLE, example["cotangent"])(())
    _assert_close(example["output"], out)
    _assert_close(example["cotangents"], cts)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["id"])
def test_jit_with_migrated_arguments_traced(example):
    traced = tuple(sorted(set(DIFFERENTIABLE) | set(MIGRATED)))
    probe = _probe(_function(), example["args"], traced, DIFFERENTIABLE, example["cotangent"])
    out, cts = jax.jit(probe)(tuple(example["args"][p] for p in traced))
    _assert_close(example["output"], out)
    _assert_close(example["cotangents"], cts)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["id"])
def test_migrated_arguments_get_zero_cotangents(example):
    wrt = tuple(sorted(set(DIFFERENTIABLE) | set(MIGRATED)))
    _, cts = _probe(_function(), example["args"], (), wrt, example["cotangent"])(())
    for position, ct in zip(wrt, cts):
        if position in MIGRATED:
            for leaf in jax.tree_util.tree_leaves(ct):
                if leaf.dtype != jax.dtypes.float0:
                    assert not np.any(np.asarray(leaf)), f"non-zero cotangent at position {{position}}"
"""

_UNVERIFIED = '''

@pytest.mark.skip(reason={reason!r})
def test_not_verified():
    """vjp-migrate found no inputs for this function: add them with `--examples` and emit again."""
'''


class _NotLiteral(Exception):
    pass


def literal(value: Any, module_names: frozenset[str]) -> str:
    """Python source that rebuilds ``value`` (raises _NotLiteral when it cannot)."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, complex):
        return repr(value)
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        array = np.asarray(value)
        if array.dtype == jax.dtypes.float0:
            return "None"
        dtype = str(array.dtype)
        values = array.astype(np.float64).tolist() if dtype not in np.sctypeDict else array.tolist()
        text = repr(values).replace("nan", "float('nan')").replace("inf", "float('inf')")
        if dtype not in np.sctypeDict:
            return f"jnp.asarray({text}, dtype=jnp.{dtype})"
        return f"np.asarray({text}, dtype=np.{dtype})"
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = [literal(v, module_names) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, module_names) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{literal(k, module_names)}: {literal(v, module_names)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, functools.partial):
        parts = [literal(value.func, module_names)] + [literal(a, module_names) for a in value.args]
        parts += [f"{k}={literal(v, module_names)}" for k, v in value.keywords.items()]
        return f"functools.partial({', '.join(parts)})"
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        if module in module_names or module.rpartition(".")[2].startswith("__vjp_migrate_"):
            return f"_ref(f'{{MODULE.__name__}}:{qualname}')"
        return f"_ref({module + ':' + qualname!r})"
    raise _NotLiteral(type(value).__name__)


def emit_test(result: Any, before_path: Path, after_path: Path, emit_dir: Path) -> dict[str, str]:
    """The emitted test for one ``session.PairResult``: {function, filename, text}."""
    pair = result.pair
    location = locate(after_path)
    names = frozenset({location.module_name, locate(before_path).module_name})
    runs = [r for r in result.runs if r.reference is not None and r.backend == (result.runs[0].backend)]
    nargs = len(result.inputs.examples[0]) if result.inputs.examples else len(pair.params)
    rtol = 1e-5 if result.runs and result.runs[0].rtol is None else result.runs[0].rtol if result.runs else 1e-5
    atol = 1e-6 if result.runs and result.runs[0].atol is None else result.runs[0].atol if result.runs else 1e-6
    header = _HEADER.format(
        name=pair.name,
        before=before_path,
        after=after_path,
        module=location.module_name,
        root=os.path.relpath(location.root, emit_dir.resolve()),
        diff=pair.differentiable(nargs),
        moved=pair.moved,
        rtol=rtol,
        atol=atol,
    )
    entries = []
    for run in runs:
        assert run.reference is not None
        try:
            entry = (
                f"    dict(\n        id={f'{result.inputs.source} #{run.index}'!r},\n"
                f"        args={literal(run.args, names)},\n"
                f"        cotangent={literal(run.cotangent, names)},\n"
                f"        output={literal(run.reference[0], names)},\n"
                f"        cotangents={literal(run.reference[1], names)},\n    ),"
            )
        except _NotLiteral as exc:
            entry = f"    # example #{run.index} left out: a {exc} argument cannot be written as source"
        entries.append(entry)
    written = [e for e in entries if not e.lstrip().startswith("#")]
    if written:
        body = _TESTS.format(examples="\n".join(entries))
    else:
        reason = result.inputs.note or "no example inputs could be written as source"
        body = "\n" + "\n".join(entries) + _UNVERIFIED.format(reason=f"not verified (no inputs): {reason}")
    stem = location.module_name.rpartition(".")[2]
    filename = f"test_vjp_{stem}_{pair.name.replace('.', '_')}.py".lower()
    return {"function": pair.name, "filename": filename, "text": header + body}
