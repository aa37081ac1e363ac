"""Unit tests of the verify stages that run inside the worker (in-process here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vjp_migrate.verify.loading import load_module, locate

DATA = Path(__file__).parent / "data" / "verify"


def _bf16(values: list[float]) -> np.ndarray:
    import ml_dtypes

    return np.asarray(values, dtype=ml_dtypes.bfloat16)


def test_before_and_after_load_as_separate_module_objects_with_relative_imports() -> None:
    path = DATA / "pkg" / "clipper" / "ops.py"
    assert locate(path).module_name == "clipper.ops"
    before = load_module(path, "before")
    after = load_module(path, "after", path.read_text().replace("(0, 1)", "(0,)"))
    assert before is not after and before.clip_gradient is not after.clip_gradient
    assert before.clip_gradient.nondiff_argnums == (0, 1)
    assert after.clip_gradient.nondiff_argnums == (0,)
    assert before.clip is after.clip  # the relative import resolved to the one real package module


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        pytest.param(np.float32(1.0), np.float32(1.0 + 1e-7), True, id="float32 within tolerance"),
        pytest.param(np.float32(1.0), np.float32(1.001), False, id="float32 beyond tolerance"),
        pytest.param(np.float32(1.0), np.float32(1.0001), False, id="float32 beyond rtol 1e-5"),
        pytest.param(np.float64(1.0), np.float64(1.0 + 1e-7), False, id="float64 beyond rtol 1e-9"),
        pytest.param(0.3, np.float32(0.3), True, id="python float vs float32 uses float32 tolerance"),
        pytest.param(np.array([np.nan]), np.array([np.nan]), True, id="nan equals nan"),
        pytest.param(
            np.array([np.inf, -np.inf]),
            np.array([np.inf, -np.inf]),
            True,
            id="inf equals inf",
            marks=pytest.mark.filterwarnings("error::RuntimeWarning"),  # and says nothing of inf - inf
        ),
        pytest.param(np.array([np.inf]), np.array([-np.inf]), False, id="inf against -inf"),
        pytest.param(np.zeros(1), np.zeros(3), False, id="shapes differ, broadcastable"),
        pytest.param(np.array([1, 2]), np.array([1, 3]), False, id="ints compare exactly"),
        pytest.param((1.0, 2.0), (1.0,), False, id="structure differs"),
        pytest.param(_bf16([1.0, 3.0]), _bf16([1.0, 3.0 + 2**-6]), True, id="bfloat16 one ulp apart"),
        pytest.param(_bf16([1.0, 3.0]), _bf16([1.0, 3.25]), False, id="bfloat16 beyond tolerance"),
        pytest.param(_bf16([np.nan]), _bf16([1.0]), False, id="bfloat16 nan against a number"),
        pytest.param(np.complex64([1 + 1j]), np.complex64([1 + 1.01j]), False, id="complex imaginary part differs"),
        pytest.param((np.float32(1.0), None), (np.float32(1.0), np.float32(2.0)), False, id="None against a value"),
        pytest.param((np.float32(1.0), np.float32(2.0)), (np.float32(1.0), None), False, id="a value against None"),
    ],
)
def test_compare_trees(expected: object, actual: object, ok: bool) -> None:
    from vjp_migrate.verify.compare import compare_trees

    assert compare_trees(expected, actual, None, None).ok is ok


def test_a_nan_against_a_number_is_an_infinite_difference() -> None:
    from vjp_migrate.verify.compare import compare_trees

    found = compare_trees(np.array([1.0, np.nan]), np.array([1.0, 2.0]), None, None)
    assert (found.ok, found.max_abs) == (False, float("inf"))


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        pytest.param(np.float32(1.0), np.float64(1.0), True, id="float32 vs float64 is no difference"),
        pytest.param(np.float32(1.0), np.int32(1), False, id="float vs int"),
        pytest.param(np.int32(1), np.bool_(True), False, id="int vs bool"),
    ],
)
def test_compare_trees_with_check_dtype(expected: object, actual: object, ok: bool) -> None:
    from vjp_migrate.verify.compare import compare_trees

    assert compare_trees(expected, actual, None, None, check_dtype=True).ok is ok
    assert compare_trees(expected, actual, None, None).ok  # equal values: only the dtype differs


def test_random_cotangents_of_bfloat16_outputs_are_bfloat16_not_float0() -> None:
    import jax.numpy as jnp

    from vjp_migrate.verify.compare import random_like

    cotangent = random_like(_bf16([1.0, 2.0]), np.random.default_rng(0))
    assert cotangent.dtype == jnp.bfloat16 and bool(jnp.any(cotangent != 0))


def test_synthesis_uses_call_site_literals_and_refuses_to_guess_callables() -> None:
    from vjp_migrate.verify.synth import call_site_values

    module = load_module(DATA / "pkg" / "clipper" / "ops.py", "synth")
    values = call_site_values((DATA / "pkg" / "clipper" / "ops.py").read_text(), "clip_gradient", module)
    assert values[0] == [-1.0] and values[1] == [1.0]


def test_recording_decoder_rejects_opaque_values() -> None:
    from vjp_migrate.verify.values import UnsupportedValue, decode

    with pytest.raises(UnsupportedValue):
        decode({"t": "opaque", "repr": "<object>"}, {}, lambda ref: None, lambda s, d: None)
    spec = {"t": "tuple", "items": [{"t": "py", "v": 1.5}, {"t": "abstract", "shape": [2], "dtype": "float32"}]}
    assert decode(spec, {}, lambda ref: None, lambda s, d: np.zeros(s, d))[1].shape == (2,)
