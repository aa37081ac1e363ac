"""rewrite at the edges of what the last sessions added: the residual fwd already saves, read
in bwd instead of its parameter, and `tuple[X, ...]` gaining None (notes/mut17-findings.md)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from test_rewrite import HEAD, RULES_BELOW, fix

from vjp_migrate.api import DEFAULT_SETTINGS, fix_source

_SAVED = """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    return f(x, w), (w, jnp.cos(x))

def f_bwd(w_static, res, g):
    BODY

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("body", "migrated"),
    [
        pytest.param(
            "w, c = res\n    return (norm(g * c * w, w_static=w_static),)",
            "w, c = res\n    return (norm(g * c * w, w_static=w), None)",
            id="keyword argument",
        ),
        pytest.param(
            "w, c = res\n    return (g * c * w * w_static * cfg.w_static,)",
            "w, c = res\n    return (g * c * w * w * cfg.w_static, None)",
            id="attribute",
        ),
    ],
)
def test_only_reads_of_the_parameter_read_the_saved_residual_instead(body: str, migrated: str) -> None:
    # `w_static=` names a keyword and `cfg.w_static` an attribute: neither reads the parameter.
    # (`norm` is not read, so the fix is unsafe: probe32 P3.)
    code = HEAD + "from lib import norm, cfg\n" + _SAVED.replace("BODY", body)
    out = fix_source(code, settings=dataclasses.replace(DEFAULT_SETTINGS, unsafe_fixes=True)).source
    assert "    return f(x, w), (w, jnp.cos(x))\n" in out and f"    {migrated}\n" in out, out


_ANNOTATED = """\
from typing import Any, Union
from jax import Array

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w, y):
    return jnp.sin(x) * w + y

def f_fwd(x, w, y):
    return f(x, w, y), jnp.cos(x)

def f_bwd(w, c, g) -> ANNOTATION:
    return (g * c * w, g)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "annotation",
    [
        pytest.param("tuple[Union[Array, None], ...]", id="Union with None"),
        pytest.param("tuple[None | Array, ...]", id="None first"),
        pytest.param("tuple[Any, ...]", id="Any"),
    ],
)
def test_a_variadic_cotangent_annotation_that_admits_none_stays(annotation: str) -> None:
    out = fix(HEAD + _ANNOTATED.replace("ANNOTATION", annotation))
    assert f"def f_bwd(res, g) -> {annotation}:\n" in out, out


def test_a_parameter_bwd_binds_again_is_read_from_the_residual_first() -> None:
    # `w_static = 2.0 * w_static` after the unpack: renaming it to `w` would double `w` itself;
    # bound from the residual's item at bwd's top, it starts as the parameter did.
    body = "w, c = res\n    w_static = 2.0 * w_static\n    return (g * c * w * w_static,)"
    out = fix(HEAD + _SAVED.replace("BODY", body))
    assert "    return f(x, w), (w, jnp.cos(x))\n" in out, out
    assert "    w_static = res[0]\n    w, c = res\n    w_static = 2.0 * w_static\n" in out, out


# The rules rewrite19 added (notes/mut19-findings.md): aliases of a moved argument fwd saves, an
# empty residual, a concatenation of tuples gaining its Nones in an end literal, trailing spaces.

_ALIASED = """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    FWD

def f_bwd(w_static, res, g):
    w_saved, c = res
    return (g * c * w_saved * w_static,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "fwd_body",
    [
        pytest.param(
            "w_ = w\n    def reset(w):\n        nonlocal w_\n        w_ = w\n    reset(x)\n"
            "    return f(x, w), (w_, jnp.cos(x))",
            id="a nested def binds it to its own parameter of that name",
        ),
        pytest.param("w_, _ = w\n    return f(x, w), (w_, jnp.cos(x))", id="unpacked from the argument"),
    ],
)
def test_a_name_not_holding_the_argument_everywhere_is_no_alias(fwd_body: str) -> None:
    # `w_` holds x after reset(x), or w's first item: bwd must get the argument saved on its own.
    out = fix(HEAD + _ALIASED.replace("FWD", fwd_body))
    assert "def f_bwd(res, g):\n    w_static, w_saved, c = res\n" in out, out


def test_an_alias_of_an_alias_bound_above_it_in_a_loop_is_reused() -> None:
    # `b = a` stands above `a = w`: only a second look at the bindings sees `b` hold `w` too.
    fwd_body = (
        "for i in range(2):\n        if i:\n            b = a\n        a = w\n    return f(x, w), (b, jnp.cos(x))"
    )
    out = fix(HEAD + _ALIASED.replace("FWD", fwd_body))
    assert "def f_bwd(res, g):\n    w_saved, c = res\n    return (g * c * w_saved * w_saved, None)\n" in out, out


def test_a_residual_bwd_never_reads_keeps_what_fwd_saved() -> None:
    # Only `None` and `()` save nothing: a tuple with items stays, the argument saved beside it.
    code = HEAD + RULES_BELOW.replace("f(x, w), None", "f(x, w), (x, jnp.cos(x))")
    out = fix(code)
    assert "    return f(x, w), (w, (x, jnp.cos(x)))\n" in out, out


def test_a_product_of_a_tuple_takes_no_none_inside() -> None:
    # `(g,) * 2` is no concatenation: `(None, g) * 2` would give four cotangents.
    code = HEAD + (
        "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(w, x, y):\n    return x * w + y\n\n"
        "def f_fwd(w, x, y):\n    return f(w, x, y), None\n\n"
        "def f_bwd(w, _, g):\n    return (g * w,) * 2\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    out = fix(code)
    assert "    return (None, *((g * w,) * 2))\n" in out, out


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        pytest.param("(\n        g,\n    )", "(\n        g,\n        None,\n    )", id="one item per line"),
        pytest.param(
            "(g * 2,\n                                  g * 3, g)",
            "(g * 2,\n                                  g * 3, g, None)",
            id="items filling their lines",
        ),
    ],
)
def test_an_end_literal_spread_over_lines_takes_its_none_in_its_layout(literal: str, expected: str) -> None:
    # Items that fill their lines and wrap: the None joins the last item's line, as in `(a, b,\n c)`.
    code = HEAD + (
        "@partial(jax.custom_vjp, nondiff_argnums=(2,))\ndef f(x, y, w):\n    return x * w + y\n\n"
        "def f_fwd(x, y, w):\n    return f(x, y, w), None\n\n"
        f"def f_bwd(w, _, g):\n    return tuple(g for _ in y) + {literal}\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    out = fix(code)
    assert f"    return tuple(g for _ in y) + {expected}\n" in out, out


def test_a_literal_keeping_its_trailing_comma_keeps_the_space_before_its_bracket() -> None:
    # Only a one-item literal loses its trailing comma (and the space after it) when it gains items.
    code = HEAD + RULES_BELOW.replace("def f(x, w)", "def f(x, y, w)").replace(
        "nondiff_argnums=(1,)", "nondiff_argnums=(2,)"
    )
    code = code.replace("f(x, w)", "f(x, y, w)").replace("def f_fwd(x, w)", "def f_fwd(x, y, w)")
    out = fix(code.replace("return (g * w,)", "return (g * w, g, )"))
    assert "    return (g * w, g, None, )\n" in out, out


STARRED_TARGET = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(w, x, b):
    return jnp.sin(x) * w + b


def f_fwd(w, x, b):
    return f(w, x, b), (x, b, b)


def f_bwd(w, res, g):
    x, *rest = res
    return (g * jnp.cos(x) * w, g * len(rest) / 2)


f.defvjp(f_fwd, f_bwd)
"""


def test_a_starred_unpack_target_takes_the_saved_arguments_first() -> None:
    """fwd's tuple has more items than bwd's starred target names: the moved argument goes
    first in both, and the starred name still takes the rest (the fix runs under jit, real JAX)."""
    out = fix_source(STARRED_TARGET).source
    assert "    return f(w, x, b), (w, x, b, b)\n" in out, out
    assert "def f_bwd(res, g):\n    w, x, *rest = res\n" in out, out
    namespace: dict[str, object] = {}
    exec(compile(out, "starred.py", "exec"), namespace)
    f = namespace["f"]
    grad = jax.jit(jax.grad(lambda w, x: f(w, x, x).sum(), argnums=1))(jnp.float32(2.0), jnp.zeros(2))  # type: ignore[operator]
    assert grad.tolist() == [3.0, 3.0]
