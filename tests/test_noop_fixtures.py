"""The no-op fixtures (fixtures/noop_*, nothing to change) are working JAX code, not just text:
each example of its examples.py runs eagerly, under jax.jit and through jax.vjp (fwd and bwd run)
with its nondiff arguments given as the static values they are, and jit and vjp agree with the
eager result. A no-op whose code did not even run would prove nothing about leaving it alone."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FIXTURES

CASES = sorted(c for c in FIXTURES.glob("noop_*") if (c / "before.py").is_file() and (c / "examples.py").is_file())


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _function(module: ModuleType, name: str) -> Callable[..., Any]:
    value: Any = module
    for part in name.removesuffix("()").split("."):
        value = getattr(value, part)
    return value() if name.endswith("()") else value  # type: ignore[no-any-return]


def _differentiable(value: object) -> bool:
    return isinstance(value, (float, jax.Array, np.ndarray)) and jnp.issubdtype(jnp.result_type(value), jnp.inexact)


def _examples(case: Path) -> list[tuple[str, str, tuple[Any, ...]]]:
    module = _load(case / "examples.py", f"_noop_examples_{case.name}")
    return [
        (name, f"{case.name}:{name}#{i}", args)
        for name, calls in module.EXAMPLES.items()
        for i, args in enumerate(calls)
    ]


EXAMPLES = [(case, *example) for case in CASES for example in _examples(case)]


def test_every_noop_fixture_has_examples_to_run() -> None:
    assert len(CASES) >= 10
    assert {case for case, *_ in EXAMPLES} == set(CASES)


@pytest.mark.parametrize(("case", "name", "label", "args"), EXAMPLES, ids=[label for _, _, label, _ in EXAMPLES])
def test_noop_fixture_runs_eagerly_under_jit_and_vjp(case: Path, name: str, label: str, args: Sequence[Any]) -> None:
    function = _function(_load(case / "before.py", f"_noop_before_{case.name}"), name)
    nondiff = set(getattr(function, "nondiff_argnums", ()))
    free = [i for i, value in enumerate(args) if i not in nondiff and _differentiable(value)]
    assert free, "nothing to differentiate: the rules would never run"

    def closed(*values: Any) -> Any:
        full = list(args)
        for i, value in zip(free, values, strict=True):
            full[i] = value
        return function(*full)

    eager = function(*args)
    inputs = [args[i] for i in free]
    jitted = jax.jit(closed)(*inputs)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), jitted, eager)
    out, pullback = jax.vjp(closed, *inputs)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), out, eager)
    cotangents = pullback(jax.tree_util.tree_map(jnp.ones_like, out))
    assert len(cotangents) == len(free)
    for value, cotangent in zip(inputs, cotangents, strict=True):
        assert jnp.shape(cotangent) == jnp.shape(value) and bool(jnp.all(jnp.isfinite(cotangent)))
