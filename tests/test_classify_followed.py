"""classify on values followed further (classify21): helpers a factory defines next to its site,
reached through `partial` or a tree map."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from test_classify import classified
from test_classify_real_gaps import _factory

from vjp_migrate.model import ArgKind

_FLOAT = "    def _helper(x, w):\n        return x * float(w)\n"


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return partial(_helper, w=w)(x)", id="partial by keyword"),
        pytest.param("return functools.partial(_helper, x, w)()", id="partial by position"),
        pytest.param("return jax.tree_util.tree_map(_helper, x, w)", id="tree_map"),
    ],
)
def test_a_conversion_in_a_factory_helper_bound_or_mapped_next_to_the_site_is_static(primal: str) -> None:
    # classify20's G4 followed a factory's helpers by name only: the partial and the tree map
    # looked among the module's helpers, so `w` stayed array data (a wrong safe fix for a partial).
    info = classified("import functools\n" + _factory(_FLOAT, primal=primal, bwd="return (g * w,)"))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert "float" in info.evidence[0].text, info.evidence


def test_a_local_of_the_site_hides_the_factory_helper_of_its_name() -> None:
    primal = "_helper = pick()\n        return partial(_helper, w=w)(x)"
    info = classified(_factory(_FLOAT, primal=primal, bwd="return (g * w,)"))
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_partial_of_a_factory_helper_cannot_take_a_tracer() -> None:
    def helper(x: jax.Array, w: float) -> jax.Array:
        return x * float(w)

    assert functools.partial(helper, w=2.0)(jnp.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x, w: functools.partial(helper, w=w)(x))(jnp.ones(2), 2.0)
