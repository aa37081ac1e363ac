"""classify on what probe29 found in real code: an argument that must be a Python number
(G1: pvn's `chex.assert_scalar(alpha)`, `isinstance` guards) and a jitted helper bound by an
assignment with static arguments (G2, `_gj = jax.jit(_g, static_argnums=1)`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from helpers import executed
from test_classify import classified, lines, site_module

from vjp_migrate.api import fix_source
from vjp_migrate.model import ArgKind

IMPORTS = "import numbers\nimport chex\n"


@pytest.mark.parametrize(
    ("guard", "shown"),
    [
        pytest.param("assert isinstance(a, float)", "`isinstance(a, float)`", id="assert"),
        pytest.param(
            "assert x.ndim == 1 and isinstance(a, numbers.Real)", "`isinstance(a, numbers.Real)`", id="assert ... and"
        ),
        pytest.param(
            lines("if not isinstance(a, (int, float)):", "    raise TypeError('a must be a number')"),
            "`isinstance(a, (int, float))`",
            id="if not ...: raise",
        ),
        pytest.param(
            lines("if x.ndim > 2 or not isinstance(a, float):", "    raise ValueError"),
            "`isinstance(a, float)`",
            id="if ... or not ...: raise",
        ),
        pytest.param("chex.assert_scalar(a)", "passed to `chex.assert_scalar`", id="chex.assert_scalar"),
        pytest.param(
            "chex.assert_scalar_positive(a)",
            "passed to `chex.assert_scalar_positive`",
            id="chex.assert_scalar_positive",
        ),
    ],
)
def test_an_argument_that_must_be_a_python_number_is_static(guard: str, shown: str) -> None:
    info = classified(site_module(lines(guard, "return x * a"), "return (g * a,)", extra=IMPORTS))
    reasons = [e.text for e in info.evidence]
    assert info.kind is ArgKind.STATIC, reasons
    assert any(shown in text for text in reasons), reasons


@pytest.mark.parametrize(
    "guard",
    [
        pytest.param("assert isinstance(a, (float, jax.Array))", id="an array type accepted too"),
        pytest.param(lines("if isinstance(a, float):", "    a = jnp.asarray(a)"), id="converted, not required"),
        pytest.param(lines("if not isinstance(a, float):", "    print('not a float')"), id="no raise"),
        pytest.param(
            lines("if not isinstance(a, float):", "    raise TypeError", "else:", "    pass"), id="raise with an else"
        ),
        pytest.param("assert not isinstance(a, float) or x.ndim", id="negated in an assert"),
        pytest.param("chex.assert_shape(a, ())", id="a shape check"),
        pytest.param("assert isinstance(x, float)", id="another argument"),
    ],
)
def test_a_type_test_that_admits_tracers_keeps_the_array_evidence(guard: str) -> None:
    info = classified(site_module(lines(guard, "return x * a"), "return (g * a,)", extra=IMPORTS))
    assert info.kind is ArgKind.ARRAY, [e.text for e in info.evidence]


def test_a_tracer_never_passes_the_python_number_guard() -> None:
    # Why the guard makes the argument static: once migrated it is traced, and the test fails.
    def guarded(x: jax.Array, a: float) -> jax.Array:
        assert isinstance(a, (int, float))
        return x * a

    assert guarded(jnp.ones(2), 0.5).tolist() == [0.5, 0.5]
    with pytest.raises(AssertionError):
        jax.jit(guarded)(jnp.ones(2), 0.5)


JITTED_HELPER = """\
from functools import partial
import jax


def _g(x, a):
    return x * a


_gj = {binding}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, a):
    return _gj(x, a)


def f_fwd(x, a):
    return f(x, a), None


def f_bwd(a, _, g):
    return (g * a,)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("binding", "kind", "shown"),
    [
        pytest.param(
            "jax.jit(_g, static_argnums=1)",
            ArgKind.STATIC,
            "passed as `a` to `_gj`, whose jax.jit marks it static",
            id="static_argnums",
        ),
        pytest.param(
            "jax.jit(_g, static_argnames=('a',))",
            ArgKind.STATIC,
            "passed as `a` to `_gj`, whose jax.jit marks it static",
            id="static_argnames",
        ),
        pytest.param("jax.jit(_g)", ArgKind.ARRAY, "in helper `_gj`", id="no static arguments: followed"),
    ],
)
def test_a_helper_jitted_by_an_assignment_is_followed_with_its_static_arguments(
    binding: str, kind: ArgKind, shown: str
) -> None:
    info = classified(JITTED_HELPER.format(binding=binding))
    reasons = [e.text for e in info.evidence]
    assert info.kind is kind, reasons
    assert any(shown in text for text in reasons), reasons


def test_the_assigned_jit_with_static_arguments_is_left_alone() -> None:
    # The original works under jit with `a` a Python constant; moved out of nondiff_argnums, `a`
    # would be a Tracer in `_gj`'s static slot: "Non-hashable static arguments are not supported".
    code = JITTED_HELPER.format(binding="jax.jit(_g, static_argnums=1)")
    assert not fix_source(code).changed
    f = executed(code, "before.py")["f"]
    x = jnp.array([1.0, 2.0])
    assert jax.jit(jax.grad(lambda x: jnp.sum(f(x, 0.5))))(x).tolist() == [0.5, 0.5]
    moved = code.replace("nondiff_argnums=(1,)", "nondiff_argnums=()").replace(
        "def f_bwd(a, _, g):", "def f_bwd(_, g):"
    )
    moved = moved.replace("return f(x, a), None", "return f(x, a), a").replace(
        "return (g * a,)", "return (g * _, None)"
    )
    g = executed(moved, "after.py")["f"]
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda x, a: g(x, a))(x, 0.5)


def test_an_assigned_jit_rebound_is_not_followed() -> None:
    code = JITTED_HELPER.format(binding="jax.jit(_g, static_argnums=1)").replace(
        "\n\n@partial", "\n_gj = lambda x, a: x * a\n\n\n@partial", 1
    )
    info = classified(code)
    assert not any("_gj" in e.text and "static" in e.text for e in info.evidence), [e.text for e in info.evidence]
