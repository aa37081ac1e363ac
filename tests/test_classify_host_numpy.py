"""classify on host NumPy: a function that hands a Tracer to its own method (`np.sum`, `np.reshape`,
`np.shape`) proves no concrete value, for the argument itself, an attribute of it or a field of
its pytree class; any other `numpy` function (`np.tanh`, `np.dot`) does, since a Tracer is no
NumPy array. The vocabulary is checked against the installed JAX and NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_classify import classify
from test_classify_probe26 import NAMED_TUPLE, params_site

from vjp_migrate.model import ArgKind
from vjp_migrate.vocabulary import NUMPY_TRACER_METHODS

NUMPY = "import numpy as np\n"
# What each NumPy function needs past the array (the rest take it alone).
ARGUMENTS: dict[str, tuple[Any, ...]] = {"reshape": (-1,), "repeat": (2,), "swapaxes": (0, 0), "searchsorted": (1.0,)}


@pytest.mark.parametrize("qname", sorted(NUMPY_TRACER_METHODS))
def test_each_listed_function_takes_a_tracer(qname: str) -> None:
    name = qname.removeprefix("numpy.")
    function: Callable[..., Any] = getattr(np, name)
    jax.jit(lambda x: function(x, *ARGUMENTS.get(name, ())))(jnp.arange(1.0, 3.0))


@pytest.mark.parametrize("name", ["tanh", "dot", "clip", "sort", "ravel", "nansum", "where"])
def test_an_unlisted_function_cannot_take_a_tracer(name: str) -> None:
    assert f"numpy.{name}" not in NUMPY_TRACER_METHODS
    function: Callable[..., Any] = getattr(np, name)
    arguments = {"dot": (np.ones(2),), "clip": (0.0, 1.0), "where": (0.0, 1.0)}.get(name, ())
    with pytest.raises((jax.errors.TracerArrayConversionError, TypeError)):
        jax.jit(lambda x: function(x, *arguments))(jnp.arange(1.0, 3.0))


@pytest.mark.parametrize(
    ("primal", "kind"),
    [
        pytest.param("return x * a + np.sum(a)", ArgKind.ARRAY, id="np.sum and arithmetic"),
        pytest.param("return x * np.sum(a)", ArgKind.UNKNOWN, id="np.sum alone"),
        pytest.param("return x.reshape(np.shape(a))", ArgKind.UNKNOWN, id="np.shape"),
        pytest.param("return x * a + np.tanh(a)", ArgKind.STATIC, id="np.tanh"),
    ],
)
def test_the_argument_itself(primal: str, kind: ArgKind) -> None:
    found, reasons, _ = classify(primal, extra=NUMPY)
    assert found is kind, reasons
    if kind is ArgKind.UNKNOWN and "np.sum" in primal:  # a note, shown when nothing decides
        assert any("passed to host NumPy's `np.sum`, which hands a Tracer to its own method" in r for r in reasons)


@pytest.mark.parametrize(
    ("use", "kind"),
    [
        pytest.param("np.tanh(a.scale)", ArgKind.STATIC, id="np.tanh"),
        pytest.param("np.dot(a.w, a.w)", ArgKind.STATIC, id="np.dot"),
        pytest.param("np.sum(a.recharge)", ArgKind.UNKNOWN, id="np.sum"),
        pytest.param("np.reshape(a.recharge, -1)", ArgKind.UNKNOWN, id="np.reshape"),
    ],
)
def test_an_attribute_of_an_argument_of_no_known_class(use: str, kind: ArgKind) -> None:
    found, reasons, _ = classify(f"return x * jnp.asarray({use}).sum()", extra=NUMPY)
    assert found is kind, reasons


@pytest.mark.parametrize(
    ("use", "kind"),
    [
        pytest.param("np.tanh(p.h)", ArgKind.STATIC, id="np.tanh"),
        pytest.param("np.sum(p.h)", ArgKind.ARRAY, id="np.sum"),
    ],
)
def test_a_field_that_is_no_array_of_a_pytree_class(use: str, kind: ArgKind) -> None:
    info = params_site(NUMPY + NAMED_TUPLE, f"return (p.G @ x) * {use}")
    assert info.kind is kind, [e.text for e in info.evidence]


def test_the_two_fail_differently_on_a_traced_pytree() -> None:
    """Why: with the pytree traced, `np.sum` of its leaf runs, `np.tanh` cannot."""
    params = {"h": jnp.float32(0.5)}
    assert jax.jit(lambda p: np.sum(p["h"]))(params) == 0.5
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.jit(lambda p: np.tanh(p["h"]))(params)
