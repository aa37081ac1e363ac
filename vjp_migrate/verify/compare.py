"""Verify (in the worker): numbers — dtype-aware tolerances, pytree comparison, seeded
random cotangents. Imported only inside the worker process, where JAX is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from numpy.typing import NDArray

# (rtol, atol) by dtype itemsize for inexact dtypes; integers and bools compare exactly. A
# dtype with fewer mantissa bits than its size suggests (bfloat16, the float8s) gets at
# least 4 ulps relative and 1 ulp absolute (its eps).
TOLERANCES = {2: (1e-2, 1e-3), 4: (1e-5, 1e-6), 8: (1e-9, 1e-12), 16: (1e-9, 1e-12)}  # emit.py writes it too


@dataclass(frozen=True)
class Comparison:
    """The worst difference between two pytrees, and where it is."""

    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0  # over the values where BEFORE is not 0: against 0 no ratio means anything
    where: str | None = None
    detail: str = ""
    # The largest absolute difference is where BEFORE gives exactly 0.
    at_zero: bool = False


def is_inexact(dtype: Any) -> bool:
    """Floating or complex, including the ml_dtypes ones (bfloat16, float8_*) whose numpy
    kind is "V"; float0 and PRNG key dtypes are not."""
    return bool(jax.numpy.issubdtype(dtype, jax.numpy.inexact))


def _is_complex(dtype: Any) -> bool:
    return bool(jax.numpy.issubdtype(dtype, jax.numpy.complexfloating))


def _eps(dtype: np.dtype[Any]) -> float:
    return float(jax.numpy.finfo(dtype).eps)  # type: ignore[no-untyped-call]


def _real_itemsize(dtype: np.dtype[Any]) -> int:
    return dtype.itemsize // 2 if _is_complex(dtype) else dtype.itemsize


def tolerance(dtype: Any, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """``--rtol/--atol`` when given, else a default for ``dtype``."""
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        default_rtol, default_atol = TOLERANCES.get(_real_itemsize(dtype), (1e-5, 1e-6))
        eps = _eps(dtype)
        default_rtol, default_atol = max(default_rtol, 4 * eps), max(default_atol, eps)
    else:
        default_rtol, default_atol = 0.0, 0.0
    return (default_rtol if rtol is None else rtol, default_atol if atol is None else atol)


def _is_float0(x: Any) -> bool:
    return getattr(x, "dtype", None) == jax.dtypes.float0


def compare_trees(
    expected: Any,
    actual: Any,
    rtol: float | None,
    atol: float | None,
    labels: tuple[str, ...] | None = None,
    check_dtype: bool = False,
) -> Comparison:
    """Compare leaf by leaf; ``labels`` name the top-level items (e.g. the argument names)."""
    exp_leaves, exp_def = jax.tree_util.tree_flatten_with_path(expected, is_leaf=lambda x: x is None)
    act_leaves, act_def = jax.tree_util.tree_flatten_with_path(actual, is_leaf=lambda x: x is None)
    if str(exp_def) != str(act_def):
        return Comparison(False, float("inf"), float("inf"), None, f"structure {act_def} != expected {exp_def}")
    leaves: list[Comparison] = []
    for (path, e), (_, a) in zip(exp_leaves, act_leaves, strict=False):
        where = _label(path, labels)
        if (e is None) != (a is None):
            got, wanted = ("None", "a value") if a is None else ("a value", "None")
            return Comparison(False, float("inf"), float("inf"), where, f"{got} where BEFORE gives {wanted}")
        if e is None or _is_float0(e) or _is_float0(a):
            continue
        e_arr, a_arr = np.asarray(e), np.asarray(a)
        if e_arr.shape != a_arr.shape:
            return Comparison(
                False, float("inf"), float("inf"), where, f"shape {a_arr.shape} != expected {e_arr.shape}"
            )
        if check_dtype and _kind(e_arr.dtype) != _kind(a_arr.dtype):
            return Comparison(
                False, float("inf"), float("inf"), where, f"dtype {a_arr.dtype} != expected {e_arr.dtype}"
            )
        leaves.append(_compare_leaf(e_arr, a_arr, rtol, atol, where, _typed(e)))
    if not leaves:
        return Comparison(True)
    failing = [c for c in leaves if not c.ok]
    worst = max(failing or leaves, key=lambda c: c.max_abs)
    largest = max(leaves, key=lambda c: c.max_abs)
    return Comparison(
        not failing,
        largest.max_abs,
        max(c.max_rel for c in leaves),
        worst.where,
        at_zero=largest.at_zero and largest.max_abs > 0,
    )


def _is_number(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "biu" or is_inexact(dtype)


def _typed(leaf: Any) -> bool:
    """Whether BEFORE's leaf has a dtype of its own: a JAX array not weakly typed. A Python
    scalar, a weakly typed array, or a NumPy value (float64 by default where JAX computes in
    float32) may come back as float32 or float64 in either version."""
    return isinstance(leaf, jax.Array) and not getattr(leaf, "weak_type", False)


def _compare_leaf(
    e: NDArray[Any], a: NDArray[Any], rtol: float | None, atol: float | None, where: str, typed: bool = False
) -> Comparison:
    if not _is_number(e.dtype) or not _is_number(a.dtype):
        same = bool(np.array_equal(e, a))
        return Comparison(same, 0.0 if same else float("inf"), 0.0 if same else float("inf"), where)
    # A float64 result of BEFORE is held to float64's tolerance even when AFTER gives float32
    # (a rule that drops to single precision under jax_enable_x64); a less precise BEFORE
    # sets the tolerance as before.
    less_precise_after = typed and is_inexact(e.dtype) and _least_precise(e.dtype, a.dtype) != e.dtype
    r, t = tolerance(e.dtype if less_precise_after else _least_precise(e.dtype, a.dtype), rtol, atol)
    e64 = e.astype(np.complex128 if _is_complex(e.dtype) else np.float64)
    a64 = a.astype(np.complex128 if _is_complex(a.dtype) else np.float64)
    if e64.size == 0:
        return Comparison(True, 0.0, 0.0, where)
    nan_mismatch = np.isnan(e64) != np.isnan(a64)
    both_nan = np.isnan(e64) & np.isnan(a64)
    with np.errstate(invalid="ignore"):  # inf - inf is nan, replaced just below
        diff = np.where(both_nan, 0.0, np.abs(a64 - e64))
    same_inf = np.isinf(e64) & (e64 == a64)
    diff = np.where(same_inf, 0.0, diff)
    diff = np.where(nan_mismatch, np.inf, diff)
    scale = np.where(np.isfinite(e64), np.abs(e64), 0.0)
    zero = e64 == 0
    with np.errstate(divide="ignore", invalid="ignore"):  # a non-finite reference: inf, as its diff
        rel = np.where((diff == 0) | zero, 0.0, np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.inf))
    ok = bool(np.all(diff <= t + r * scale))
    largest = int(np.argmax(diff))
    return Comparison(ok, float(diff.flat[largest]), float(np.max(rel)), where, at_zero=bool(zero.flat[largest]))


def _kind(dtype: np.dtype[Any]) -> str:
    # float32 vs float64 is not a difference: a Python scalar argument may come back as either
    return "f" if is_inexact(dtype) else "i" if dtype.kind in "iu" else dtype.kind


def _least_precise(a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    inexact = [d for d in (a, b) if is_inexact(d)]
    if not inexact:
        return a
    return max(inexact, key=_eps)


def _label(path: tuple[Any, ...], labels: tuple[str, ...] | None) -> str:
    if labels is not None and path and isinstance(path[0], jax.tree_util.SequenceKey):
        index = path[0].idx
        head = labels[index] if index < len(labels) else f"item {index}"
        rest = jax.tree_util.keystr(path[1:])
        return head + (f" {rest}" if rest else "")
    text = jax.tree_util.keystr(path)
    return f"output{text}" if labels is None else text


def random_like(tree: Any, rng: np.random.Generator) -> Any:
    """Seeded random cotangents with ``tree``'s structure, shapes and dtypes (float0 for ints)."""

    def leaf(x: Any) -> Any:
        dtype = np.dtype(getattr(x, "dtype", np.asarray(x).dtype))
        shape = np.shape(x)
        if not is_inexact(dtype):
            return np.zeros(shape, dtype=jax.dtypes.float0)
        values = rng.standard_normal(shape)
        if _is_complex(dtype):
            values = values + 1j * rng.standard_normal(shape)
        return jax.numpy.asarray(values, dtype=dtype)

    return jax.tree_util.tree_map(leaf, tree)


def all_zero(tree: Any) -> tuple[bool, float]:
    """Whether every leaf is zero (float0 and None count as zero); and the largest magnitude."""
    worst = 0.0
    for x in jax.tree_util.tree_leaves(tree):
        if _is_float0(x):
            continue
        magnitude = float(np.max(np.abs(np.asarray(x)))) if np.size(x) else 0.0
        worst = max(worst, magnitude)
    return worst == 0.0, worst


def carries_values(tree: Any) -> bool:
    """Whether some leaf is a number that could differ (not float0, not None)."""
    return any(not _is_float0(x) for x in jax.tree_util.tree_leaves(tree))
