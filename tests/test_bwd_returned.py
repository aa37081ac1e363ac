"""plan.returned: what bwd returns, followed through the module's helpers. A helper that surely
returns one bare value is VJP004, as a bare value returned directly is; one that surely returns
a tuple keeps the safe fix; one whose result cannot be told leaves only an unsafe fix (the fix
unpacks it as a tuple). The screen keeps every file the pipeline reports."""

from __future__ import annotations

import textwrap

import pytest

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import FixSafety, Settings

ONE_DIFF = """
from functools import partial
import jax
import jax.numpy as jnp
{helpers}

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def masked(x, w):
    return x * w


def masked_fwd(x, w):
    return x * w, None


def masked_bwd(w, _, g):
{body}


masked.defvjp(masked_fwd, masked_bwd)
"""


def _module(helpers: str, body: str) -> str:
    return ONE_DIFF.format(helpers=textwrap.dedent(helpers), body=textwrap.indent(textwrap.dedent(body), "    "))


def _codes(text: str, select: frozenset[str] = DEFAULT_SELECT) -> list[str]:
    return [d.code for d in check_source(text, settings=Settings(select))]


BARE = [
    pytest.param("def scale_ct(g, w):\n    return g * w\n", "return scale_ct(g, w)", id="helper returns arithmetic"),
    pytest.param(
        "def scale_ct(g, w):\n    return jnp.where(w > 0, g, 0.0)\n",
        "return scale_ct(g, w)",
        id="an array function's call",
    ),
    pytest.param(
        "def scale_ct(g, w):\n    ct = g * w\n    return ct\n", "return scale_ct(g, w)", id="a local of the helper"
    ),
    pytest.param("def scale_ct(g, w):\n    return g * w\n", "ct = scale_ct(g, w)\nreturn ct", id="a local of bwd"),
    pytest.param(
        "def _mul(a, b):\n    return a * b\n\ndef scale_ct(g, w):\n    return _mul(g, w)\n",
        "return scale_ct(g, w)",
        id="a helper calling a helper",
    ),
    pytest.param(
        "def _scale_ct(g, w):\n    return g * w\n\nscale_ct = jax.jit(_scale_ct)\n",
        "return scale_ct(g, w)",
        id="a jitted alias",
    ),
    pytest.param(
        "def scale_ct(g, w):\n    return g * w if w.ndim else -g\n", "return scale_ct(g, w)", id="a conditional"
    ),
]


@pytest.mark.parametrize(("helpers", "body"), BARE)
def test_a_bare_value_a_helper_returns_is_vjp004(helpers: str, body: str) -> None:
    text = _module(helpers, body)
    (found,) = check_source(text)
    assert found.code == "VJP004"
    assert "bwd `masked_bwd` returns a bare value" in found.message
    assert fix_source(text).source == text  # no `(*scale_ct(g, w), None)`
    for select in (DEFAULT_SELECT, frozenset({"VJP004"}), frozenset(BY_CODE)):
        assert screen.may_report(text, Settings(select))  # the screen never drops a file with a finding


def test_the_message_names_the_helper() -> None:
    (found,) = check_source(_module("def scale_ct(g, w):\n    return g * w\n", "return scale_ct(g, w)"))
    assert "returns a bare value (the one `scale_ct` returns), but JAX needs a tuple" in found.message


TUPLE = [
    pytest.param("def scale_ct(g, w):\n    return (g * w,)\n", id="a tuple literal"),
    pytest.param("def scale_ct(g, w):\n    grads = (g * w,)\n    return grads\n", id="a local bound to one"),
    pytest.param("def scale_ct(g, w):\n    return [g * w] if w.ndim else (g,)\n", id="a conditional of literals"),
    pytest.param("def scale_ct(g, w):\n    return (g * w,) + ()\n", id="a concatenation"),
    pytest.param("def scale_ct(g, w):\n    return (g * w,) * 1\n", id="a repetition"),
]


@pytest.mark.parametrize("helpers", TUPLE)
def test_a_tuple_a_helper_returns_keeps_the_safe_fix(helpers: str) -> None:
    text = _module(helpers, "return scale_ct(g, w)")
    (found,) = check_source(text)
    assert (found.code, found.fix_safety) == ("VJP001", FixSafety.SAFE)
    assert "    return (*scale_ct(g, w), None)\n" in fix_source(text).source


@pytest.mark.parametrize("value", ["(g * w,) + ()", "(g * w,) * 1"])
def test_a_tuple_joined_or_repeated_in_bwd_is_no_bare_value(value: str) -> None:
    assert _codes(_module("", f"return {value}")) == ["VJP001"]


UNKNOWN = [
    pytest.param(
        "from kernels import scale\n\ndef scale_ct(g, w):\n    return scale(g, w)\n", id="a call the module cannot see"
    ),
    pytest.param("def scale_ct(g, w):\n    return scale_ct(g, w)\n", id="a helper calling itself"),
    pytest.param("def scale_ct(g, w):\n    print(g, w)\n", id="no return"),
    pytest.param("def scale_ct(g, w):\n    if w.ndim:\n        return (g,)\n    return g * w\n", id="bare or tuple"),
    pytest.param("def scale_ct(g, w):\n    return g\n", id="a parameter"),
]


@pytest.mark.parametrize("helpers", UNKNOWN)
def test_a_helper_whose_result_cannot_be_told_leaves_an_unsafe_fix(helpers: str) -> None:
    text = _module(helpers, "return scale_ct(g, w)")
    (found,) = check_source(text)
    assert (found.code, found.fix_safety) == ("VJP001", FixSafety.UNSAFE)
    reason = "bwd `masked_bwd` returns what `scale_ct` returns, which may be one value rather than a tuple"
    assert any(reason in r.text for r in found.reasons)
    assert fix_source(text).source == text
    unsafe = fix_source(text, settings=Settings(DEFAULT_SELECT, unsafe_fixes=True)).source
    assert "    return (*scale_ct(g, w), None)\n" in unsafe


def test_a_bare_helper_of_a_primal_with_two_differentiable_arguments_leaves_an_unsafe_fix() -> None:
    text = _module("def scale_ct(g, w):\n    return g * w\n", "return scale_ct(g, w)")
    text = text.replace("def masked(x, w):", "def masked(x, y, w):").replace(
        "nondiff_argnums=(1,)", "nondiff_argnums=(2,)"
    )
    text = text.replace("def masked_fwd(x, w):", "def masked_fwd(x, y, w):")
    (found,) = check_source(text)
    assert (found.code, found.fix_safety) == ("VJP001", FixSafety.UNSAFE)
    assert any("which is one value, not a tuple of cotangents" in r.text for r in found.reasons)
