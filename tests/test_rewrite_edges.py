"""rewrite at the edges of what the last sessions added: the residual fwd already saves, read
in bwd instead of its parameter, and `tuple[X, ...]` gaining None (notes/mut17-findings.md)."""

from __future__ import annotations

import pytest
from test_rewrite import HEAD, fix

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
    out = fix(HEAD + "from lib import norm, cfg\n" + _SAVED.replace("BODY", body))
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


def test_a_parameter_bwd_binds_again_is_saved_again() -> None:
    # `w_static = 2.0 * w_static` after the unpack: reading `w` for it would double `w` itself.
    body = "w, c = res\n    w_static = 2.0 * w_static\n    return (g * c * w * w_static,)"
    out = fix(HEAD + _SAVED.replace("BODY", body))
    assert "    return f(x, w), (w, w, jnp.cos(x))\n" in out, out
    assert "    w_static, w, c = res\n    w_static = 2.0 * w_static\n" in out, out
