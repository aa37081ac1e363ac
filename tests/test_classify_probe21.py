"""classify on what probe21 found in real code (notes/probe21-findings.md, "Gaps")."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import pytest
from test_classify import HEADER, classified

from vjp_migrate.model import ArgKind

_FIXED_POINT = HEADER + (
    "import equinox as eqx\nimport flax\nfrom flax import struct\n"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef solve(x, rtol):\n    return x * rtol\n"
    "def solve_fwd(x, rtol):\n    return solve(x, rtol), None\n"
    "def solve_bwd(rtol, _, g):\n    return (g * rtol,)\nsolve.defvjp(solve_fwd, solve_bwd)\n"
)


def _solver(header: str, field: str, call: str = "solve(x, self.rtol)") -> str:
    return _FIXED_POINT + f"{header}\n    rtol: float = {field}\n    def run(self, x):\n        return {call}\n"


@pytest.mark.parametrize(
    ("header", "field", "shown"),
    [
        pytest.param("class Solver(eqx.Module):", "eqx.field(static=True, default=1e-6)", "eqx.field", id="eqx"),
        pytest.param("class Solver(eqx.Module):", "eqx.static_field()", "eqx.static_field()", id="eqx static_field"),
        pytest.param(
            "@flax.struct.dataclass\nclass Solver:", "struct.field(pytree_node=False)", "struct.field", id="flax"
        ),
        pytest.param(
            "class Solver(struct.PyTreeNode):", "struct.field(pytree_node=False)", "struct.field", id="PyTreeNode"
        ),
    ],
)
def test_a_static_field_a_method_passes_is_static(header: str, field: str, shown: str) -> None:
    # probe21 q08 (aquaflux): `_implicit_solve(..., self.rtol, ...)` from an `eqx.Module` whose
    # `rtol` is `eqx.field(static=True)`: arithmetic made it a VJP001 with a safe fix.
    info = classified(_solver(header, field))
    assert info.kind is ArgKind.STATIC, info.evidence
    text = info.evidence[0].text
    assert text.startswith("the field `rtol` that `Solver` declares static (`" + shown), text
    assert text.endswith("is passed at a call site (`self.rtol`)"), text


@pytest.mark.parametrize(
    "registration",
    [
        pytest.param(
            "@partial(jax.tree_util.register_dataclass, data_fields=['x'], meta_fields=['rtol'])\n"
            "@dataclasses.dataclass\nclass Solver:",
            id="decorator",
        ),
        pytest.param(
            "@dataclasses.dataclass\nclass Solver:",
            id="module-level call",
        ),
    ],
)
def test_a_meta_field_of_a_registered_dataclass_a_method_passes_is_static(registration: str) -> None:
    code = "import dataclasses\n" + _solver(registration, "1e-6").replace("    rtol:", "    x: jax.Array\n    rtol:")
    if "@partial" not in registration:
        code += "jax.tree_util.register_dataclass(Solver, ['x'], ['rtol'])\n"
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence
    assert "in the `meta_fields` of `jax.tree_util.register_dataclass`" in info.evidence[0].text, info.evidence


def test_a_data_field_of_a_registered_dataclass_is_no_evidence() -> None:
    code = "import dataclasses\n" + _solver(
        "@partial(jax.tree_util.register_dataclass, data_fields=['rtol'], meta_fields=['x'])\n"
        "@dataclasses.dataclass\nclass Solver:",
        "1e-6",
    )
    info = classified(code)
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_field_of_a_leafless_class_a_method_passes_is_static() -> None:
    code = _solver("@jax.tree_util.register_static\nclass Solver:", "1e-6")
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence


@pytest.mark.parametrize(
    ("header", "field", "call"),
    [
        pytest.param("class Solver(eqx.Module):", "eqx.field(default=1e-6)", "solve(x, self.rtol)", id="a leaf"),
        pytest.param("class Solver(eqx.Module):", "eqx.field(static=False)", "solve(x, self.rtol)", id="static=False"),
        pytest.param("class Solver:", "eqx.field(static=True)", "solve(x, self.rtol)", id="no module"),
        pytest.param(
            "@flax.struct.dataclass\nclass Solver:",
            "struct.field(pytree_node=True)",
            "solve(x, self.rtol)",
            id="flax leaf",
        ),
        pytest.param(
            "class Solver(eqx.Module):", "eqx.field(static=True)", "solve(x, other.rtol)", id="another object"
        ),
        pytest.param(
            "class Solver(eqx.Module):",
            "eqx.field(static=True)",
            "(lambda self: solve(x, self.rtol))(y)",
            id="a lambda's own self",
        ),
    ],
)
def test_no_static_field_of_the_method_s_class_is_no_evidence(header: str, field: str, call: str) -> None:
    info = classified(_solver(header, field, call))
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_static_field_is_no_tracer_under_jit() -> None:
    # eqx.Module keeps a `static=True` field as aux data, as `register_dataclass` meta_fields do.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def solve(x: jax.Array, rtol: float) -> jax.Array:
        return x * rtol

    solve.defvjp(lambda x, rtol: (solve(x, rtol), None), lambda rtol, _, g: (g * rtol,))

    @dataclasses.dataclass(frozen=True)
    class Solver:
        rtol: float = 0.5

        def run(self, x: jax.Array) -> jax.Array:
            return solve(x, self.rtol)

    jax.tree_util.register_dataclass(Solver, data_fields=[], meta_fields=["rtol"])
    loss = jax.jit(jax.grad(lambda x, s: s.run(x).sum()))
    assert loss(jnp.ones(2), Solver()).tolist() == [0.5, 0.5]
