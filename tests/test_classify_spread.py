"""classify: a tuple or list literal spread into a call with `*` (in place, or bound once to a
local: `geo = (A1, e_LA)`, then `_residual(th, *geo)`) passes each item at its own position
(probe26 G1, a suspension-kinematics solver whose 14 geometry arrays were VJP002)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_classify import classify, lines

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.model import ArgKind

ARITHMETIC = "def _helper(x, w):\n    return jnp.sin(x) * w\n"
AXIS = "def _helper(x, n):\n    return jnp.sum(x, axis=n)\n"


@pytest.mark.parametrize(
    ("primal", "helper", "kind", "reason"),
    [
        pytest.param(
            lines("geo = (a,)", "return _helper(x, *geo)"), ARITHMETIC, ArgKind.ARRAY, "arithmetic", id="local"
        ),
        pytest.param("return _helper(x, *[a])", ARITHMETIC, ArgKind.ARRAY, "arithmetic", id="list in place"),
        pytest.param("return _helper(*(x,), a)", AXIS, ArgKind.STATIC, "`axis=`", id="positions after it"),
        pytest.param(lines("dims = (x, a)", "return _helper(*dims)"), AXIS, ArgKind.STATIC, "`axis=`", id="static"),
        pytest.param(
            lines("geo = (*(), a)", "return _helper(x, *geo)"), ARITHMETIC, ArgKind.UNKNOWN, None, id="starred"
        ),
        pytest.param(
            lines("geo = (a,)", "geo = (x,)", "return _helper(x, *geo)"),
            ARITHMETIC,
            ArgKind.UNKNOWN,
            None,
            id="rebound",
        ),
    ],
)
def test_a_spread_literal_passes_each_item_at_its_position(
    primal: str, helper: str, kind: ArgKind, reason: str | None
) -> None:
    found, reasons, _ = classify(primal, "return (g,)", extra=helper)
    assert found is kind, reasons
    assert reason is None or any(reason in r and "helper `_helper`" in r for r in reasons), reasons


SPREAD = """\
from functools import partial

import jax
import jax.numpy as jnp


def _residual(th, a, b):
    return jnp.sin(th) * a + b


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def solve(th, a, b):
    geo = (a, b)
    return _residual(th, *geo)


def solve_fwd(th, a, b):
    return solve(th, a, b), th


def solve_bwd(a, b, th, g):
    return (g * jnp.cos(th) * a,)


solve.defvjp(solve_fwd, solve_bwd)
"""


def _grad_under_jit(code: str) -> jax.Array:
    namespace: dict[str, Any] = {}
    exec(compile(code, "spread.py", "exec"), namespace)
    solve = namespace["solve"]
    return jax.jit(jax.grad(lambda th, a, b: solve(th, a, b).sum()))(jnp.ones(2), jnp.full(2, 2.0), jnp.zeros(2))


def test_the_spread_arrays_are_a_safe_fix_that_runs_under_jit() -> None:
    """Real JAX on CPU: the original fails with the spread arrays traced; the fix runs, with
    the gradient the rules give."""
    assert [(d.code, d.argument, d.fixable) for d in check_source(SPREAD)] == [
        ("VJP001", "a", True),
        ("VJP001", "b", True),
    ]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        _grad_under_jit(SPREAD)
    assert _grad_under_jit(fix_source(SPREAD).source).tolist() == pytest.approx([2 * 0.5403023] * 2)
