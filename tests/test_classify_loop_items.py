"""classify: the items a loop over the argument itself takes (`for w in ws`, `sum(w * x for w in ws)`):
their arithmetic is the argument's, as `ws[0] * x` is (uses_names.py, uses_operators.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from test_classify import _unscreened, lines, site_module

from vjp_migrate.model import ArgKind


@pytest.mark.parametrize(
    ("primal", "item"),
    [
        pytest.param(lines("out = x", "for w in a:", "    out = out + w * x", "return out"), "w", id="for"),
        pytest.param(
            lines("out = x", "for i, w in enumerate(a):", "    out = out + w * x", "return out"), "w", id="enumerate"
        ),
        pytest.param(lines("out = x", "for w, b in zip(a, x):", "    out = out + w * b", "return out"), "w", id="zip"),
        pytest.param("return sum(v * x for v in a)", "v", id="a generator"),
        pytest.param("return x * jnp.stack([v ** 2 for v in a]).sum()", "v", id="a list comprehension"),
    ],
)
def test_arithmetic_on_an_item_of_the_argument_looped_over_is_array_data(primal: str, item: str) -> None:
    # classify21 left this: the loop target was a derived value, whose arithmetic says nothing.
    # The screen does not keep all of these yet: a strict xfail in test_prefilter.
    info = _unscreened(site_module(primal))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence
    assert info.evidence[0].text == f"used in arithmetic (its item `{item}`, looped over) in the primal `f`"


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines("out = x", "for i, w in enumerate(a):", "    out = out + i * x", "return out"), id="the index"
        ),
        pytest.param(lines("out = x", "for w in a.values():", "    out = out + w * x", "return out"), id="values"),
        pytest.param(
            lines("out = x", "for w in a:", "    out = out + w * x", "w = 2.0", "return out * w"), id="bound twice"
        ),
        pytest.param(lines("out = x", "for w in a:", "    out = out + x.shape[0] * w", "return out"), id="a size"),
    ],
)
def test_no_item_of_the_argument_in_arithmetic_says_nothing(primal: str) -> None:
    info = _unscreened(site_module(primal))
    assert not any("looped over" in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines("out = x", "for n in a:", "    out = out + jnp.zeros(n).sum() * x + n * x", "return out"),
            id="a shape",
        ),
        pytest.param(
            lines("out = x", "for k in a:", "    if k > 1:", "        out = out + k * x", "return out"), id="an if"
        ),
    ],
)
def test_an_item_needed_concretely_still_makes_it_static(primal: str) -> None:
    info = _unscreened(site_module(primal))
    assert info.kind is ArgKind.STATIC, info.evidence


def _mix(moved: bool):  # type: ignore[no-untyped-def]
    def mix(ws, x):  # type: ignore[no-untyped-def]
        out = x
        for w in ws:
            out = out + w * x
        return out

    def fwd(ws, x):  # type: ignore[no-untyped-def]
        return mix(ws, x), ws

    if moved:
        rule = jax.custom_vjp(mix)
        rule.defvjp(fwd, lambda ws, g: (None, g * (1 + sum(ws))))
    else:
        rule = jax.custom_vjp(mix, nondiff_argnums=(0,))
        rule.defvjp(fwd, lambda ws, _, g: (g * (1 + sum(ws)),))
    return rule


@pytest.mark.parametrize(
    "ws",
    [
        pytest.param((0.5, 2.0), id="a tuple of floats"),
        pytest.param([jnp.array([0.5, 1.0]), jnp.array([2.0, 0.0])], id="a list of arrays"),
    ],
)
def test_a_looped_over_argument_moved_to_the_residuals_gives_the_same_gradients(ws: object) -> None:
    # What the items' arithmetic shows: numbers or arrays, both of which work as regular
    # arguments, so the move is safe; a list of traced arrays breaks in nondiff_argnums.
    x = jnp.array([1.0, 3.0])

    def loss(rule):  # type: ignore[no-untyped-def]
        return lambda ws, x: rule(ws, x).sum()

    eager = jax.grad(loss(_mix(False)), argnums=1)(ws, x)
    assert jnp.allclose(jax.jit(jax.grad(loss(_mix(True)), argnums=1))(ws, x), eager)
    assert jnp.allclose(jax.grad(loss(_mix(True)), argnums=1)(ws, x), eager)
    if isinstance(ws, list):
        with pytest.raises(jax.errors.UnexpectedTracerError):
            jax.jit(jax.grad(loss(_mix(False)), argnums=1))(ws, x)
