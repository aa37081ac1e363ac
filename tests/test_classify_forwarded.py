"""classify: arguments forwarded to a helper without being named: a tuple or list literal spread
with `*` (in place, or bound once to a local: `geo = (A1, e_LA)`, then `_residual(th, *geo)`)
passes each item at its own position (probe26 G1, a suspension-kinematics solver whose 14
geometry arrays were VJP002); `**locals()` passes each parameter by its name (probe25b G7,
axlearn's fp8 `_q_dot_dq_impl(**locals(), is_training=False)`)."""

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
BY_NAME = "def _helper(a, x):\n    return jnp.sum(x, axis=a)\n"
DOT = "def _helper(a, x, scale=1.0):\n    return jnp.dot(x, a) * scale\n"


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
        pytest.param("return _helper(**locals())", BY_NAME, ArgKind.STATIC, "`axis=`", id="locals, a static place"),
        pytest.param("return _helper(**locals(), scale=2.0)", DOT, ArgKind.ARRAY, "`jnp.dot`", id="locals, array data"),
        pytest.param(
            lines("def inner():", "    return _helper(**locals())", "return inner()"),
            BY_NAME,
            ArgKind.UNKNOWN,
            None,
            id="locals of a nested def",
        ),
        pytest.param("return (lambda: _helper(**locals()))()", BY_NAME, ArgKind.UNKNOWN, None, id="locals of a lambda"),
    ],
)
def test_forwarded_arguments_reach_the_helper_s_parameters(
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


def test_locals_forwarded_by_double_star_run_as_the_tool_reads_them() -> None:
    """What the test above assumes of Python: `**locals()` at the top of a def passes each
    parameter by its name; in a nested def or a lambda, only that function's own locals."""

    def top(a: int, x: jax.Array) -> jax.Array:
        return _sum_over(**locals())

    def nested(a: int, x: jax.Array) -> dict[str, object]:
        def inner() -> dict[str, object]:
            return dict(**locals())

        return inner()

    assert top(1, jnp.ones((2, 3))).tolist() == [3.0, 3.0]
    assert nested(1, jnp.ones(2)) == {}
    assert (lambda: dict(**locals()))() == {}


def _sum_over(a: int, x: jax.Array) -> jax.Array:
    return jnp.sum(x, axis=a)
