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

from vjp_migrate.verify.compare import TOLERANCES
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
RTOL, ATOL = {rtol!r}, {atol!r}  # None: by dtype, as vjp-migrate verify compared
_DEFAULTS = {tolerances!r}


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


def _tolerance(dtype):
    if not jnp.issubdtype(dtype, jnp.inexact):
        rtol, atol = 0.0, 0.0
    else:
        size = dtype.itemsize // 2 if jnp.issubdtype(dtype, jnp.complexfloating) else dtype.itemsize
        rtol, atol = _DEFAULTS.get(size, (1e-5, 1e-6))
        eps = float(jnp.finfo(dtype).eps)
        rtol, atol = max(rtol, 4 * eps), max(atol, eps)
    return (rtol if RTOL is None else RTOL), (atol if ATOL is None else ATOL)


def _number(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if jnp.issubdtype(x.dtype, jnp.complexfloating) else np.float64)


def _assert_close(expected, actual):
    is_none = lambda x: x is None  # noqa: E731
    expected_leaves = jax.tree_util.tree_leaves(expected, is_leaf=is_none)
    actual_leaves = jax.tree_util.tree_leaves(actual, is_leaf=is_none)
    assert len(expected_leaves) == len(actual_leaves)
    for e, a in zip(expected_leaves, actual_leaves):
        if e is not None:
            rtol, atol = _tolerance(np.asarray(e).dtype)
            np.testing.assert_allclose(_number(a), _number(e), rtol=rtol, atol=atol)

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


# An array with more values than this is not written into a test file (it would be megabytes
# of source): its example is left out, with a comment saying so.
MAX_VALUES = 10_000


def literal(value: Any, module_names: frozenset[str]) -> str:
    """Python source that rebuilds ``value`` (raises _NotLiteral when it cannot)."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, complex):
        return repr(value)
    if isinstance(value, jax.Array) and jax.numpy.issubdtype(value.dtype, jax.dtypes.prng_key):
        impl = str(jax.random.key_impl(value))
        data = literal(np.asarray(jax.random.key_data(value)), module_names)
        return f"jax.random.wrap_key_data({data}, impl={impl!r})"
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        array = np.asarray(value)
        if array.size > MAX_VALUES:
            raise _NotLiteral(
                f"an array of {array.size:,} values is too large to write as source (over {MAX_VALUES:,})"
            )
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
    raise _NotLiteral(f"a {type(value).__name__} argument cannot be written as source")


def emit_test(result: Any, before_path: Path, after_path: Path, emit_dir: Path) -> dict[str, str]:
    """The emitted test for one ``session.PairResult``: {function, filename, text}."""
    pair = result.pair
    location = locate(after_path)
    names = frozenset({location.module_name, locate(before_path).module_name})
    runs = [r for r in result.runs if r.reference is not None and r.backend == (result.runs[0].backend)]
    nargs = len(result.inputs.examples[0]) if result.inputs.examples else len(pair.params)
    rtol = result.runs[0].rtol if result.runs else None
    atol = result.runs[0].atol if result.runs else None
    header = _HEADER.format(
        name=pair.name,
        before=before_path,
        after=after_path,
        module=location.module_name,
        root=os.path.relpath(location.root, emit_dir.resolve()),
        diff=pair.differentiable(nargs),
        moved=pair.moved,
        tolerances=TOLERANCES,
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
            entry = f"    # example #{run.index} left out: {exc}"
        except Exception as exc:  # a value whose conversion fails must not cost the whole report
            entry = f"    # example #{run.index} left out: {type(exc).__name__} while writing it as source"
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
