"""classify on what probe27 found in real code: a nondiff tuple unpacked into its items
(G6, primus_turbo's `handle`, unpacked into index and weight arrays)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from helpers import executed
from test_classify import classified, lines, site_module

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import ArgKind, Settings

COMBINE = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def combine(x, handle):
    src_idx, weights = handle
    return jnp.take(x, src_idx, axis=0) * weights[:, None]


def combine_fwd(x, handle):
    return combine(x, handle), x.shape


def combine_bwd(handle, shape, g):
    src_idx, weights = handle
    return (jnp.zeros(shape, g.dtype).at[src_idx].add(g * weights[:, None]),)


combine.defvjp(combine_fwd, combine_bwd)
"""


@pytest.mark.parametrize(
    ("primal", "kind", "reason"),
    [
        pytest.param(lines("w, b = a", "return x * w + b"), ArgKind.ARRAY, "(its item `w`, unpacked)", id="arithmetic"),
        pytest.param(lines("[w, b] = a", "return x * w"), ArgKind.ARRAY, "(its item `w`, unpacked)", id="a list"),
        pytest.param(
            lines("n, w = a", "for _ in range(n):", "    x = x * w", "return x"), ArgKind.STATIC, "range", id="range"
        ),
        pytest.param(lines("w, b = a", "w = 2.0", "return x * w"), ArgKind.UNKNOWN, None, id="rebound"),
    ],
)
def test_the_items_of_an_unpacked_argument_are_its_own(primal: str, kind: ArgKind, reason: str | None) -> None:
    info = classified(site_module(primal, "return (g,)"))
    shown = [e.text for e in info.evidence]
    assert info.kind is kind, shown
    assert reason is None or any(reason in text for text in shown), shown


def test_the_screen_keeps_an_argument_whose_items_are_array_data() -> None:
    assert screen.may_report(COMBINE, Settings(DEFAULT_SELECT))
    assert not screen.may_report(
        COMBINE.replace("handle", "handle_")
        .replace("src_idx, weights = handle_", "pass")
        .replace("src_idx", "0")
        .replace("weights[:, None]", "1.0"),
        Settings(DEFAULT_SELECT),
    )


def test_the_original_breaks_under_jit_with_the_tuple_traced_and_the_safe_fix_runs() -> None:
    found = check_source(COMBINE, settings=Settings(frozenset(BY_CODE)))
    assert [(d.code, d.argument, d.fixable) for d in found] == [("VJP001", "handle", True)]
    fixed = fix_source(COMBINE).source
    assert "@jax.custom_vjp\ndef combine(x, handle):" in fixed
    old, new = executed(COMBINE, "combine.py"), executed(fixed, "combine_fixed.py")

    def grad(namespace: dict[str, Any]) -> Any:
        return lambda x, idx, w: jax.grad(lambda x: (namespace["combine"](x, (idx, w)) ** 2).sum())(x)

    x = jnp.arange(6.0).reshape(3, 2)
    idx, w = jnp.array([2, 0, 2]), jnp.array([0.5, 2.0, -1.0])
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(grad(old))(x, idx, w)
    assert jnp.allclose(jax.jit(grad(new))(x, idx, w), grad(old)(x, idx, w))
    assert jax.vmap(grad(new), in_axes=(None, None, 0))(x, idx, jnp.stack([w, 2 * w])).shape == (2, 3, 2)


# G5 (a phylogenetics likelihood's `model`, unannotated, read as `model.eigenvalues` and `model.pi`
# of the module's `class DiagModel(NamedTuple)`): VJP002, so the default check said nothing.
LOGLIKE = """\
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp


class DiagModel(NamedTuple):
    eigenvalues: jax.Array
    pi: jax.Array
    steps: int = 1


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def loglike(t, model):
    mu = model.eigenvalues
    return jnp.sum(jnp.exp(mu[None, :] * t[:, None]) * model.pi)


def loglike_fwd(t, model):
    return loglike(t, model), t


def loglike_bwd(model, t, g):
    mu = model.eigenvalues
    return (g * jnp.sum(mu[None, :] * jnp.exp(mu[None, :] * t[:, None]) * model.pi, axis=1),)


loglike.defvjp(loglike_fwd, loglike_bwd)
"""


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        pytest.param(("", ""), ArgKind.ARRAY, id="the fields of one class"),
        pytest.param(("* model.pi)\n", "* model.pi * model.scale)\n"), ArgKind.UNKNOWN, id="an attribute no class has"),
        pytest.param(
            (
                "    steps: int = 1\n",
                "    steps: int = 1\n\n\nclass Other(NamedTuple):\n    eigenvalues: jax.Array\n    pi: jax.Array\n",
            ),
            ArgKind.UNKNOWN,
            id="two classes match",
        ),
        pytest.param(
            (
                "    mu = model.eigenvalues\n    return",
                "    mu = model.eigenvalues\n    t = jnp.tile(t, model.steps)\n    return",
            ),
            ArgKind.STATIC,
            id="a field needed concrete",
        ),
        pytest.param(("def loglike(t, model):", "def loglike(t, model: object):"), ArgKind.UNKNOWN, id="annotated"),
    ],
)
def test_an_unannotated_argument_reading_the_fields_of_a_pytree_class(change: tuple[str, str], kind: ArgKind) -> None:
    info = classified(LOGLIKE.replace(*change, 1) if change[0] else LOGLIKE)
    shown = [e.text for e in info.evidence]
    assert info.kind is kind, shown
    if kind is ArgKind.ARRAY:
        assert not info.strong, shown  # matched by names, not declared: no safe fix
        assert any(t.startswith("its attribute `eigenvalues` (annotated `jax.Array` in `DiagModel`") for t in shown)


def test_the_unsafe_fix_of_a_matched_pytree_runs_under_jit() -> None:
    found = check_source(LOGLIKE)
    assert [(d.code, d.argument, d.fixable) for d in found] == [("VJP001", "model", False)]
    assert screen.may_report(LOGLIKE, Settings(DEFAULT_SELECT))
    fixed = fix_source(LOGLIKE, settings=Settings(DEFAULT_SELECT, unsafe_fixes=True)).source
    assert "@jax.custom_vjp\ndef loglike(t, model):" in fixed
    old, new = executed(LOGLIKE, "loglike.py"), executed(fixed, "loglike_fixed.py")

    def grad(namespace: dict[str, Any]) -> Any:
        return lambda t, mu, pi: jax.grad(namespace["loglike"])(t, namespace["DiagModel"](mu, pi))

    t, mu, pi = jnp.array([0.1, 0.5]), jnp.array([-1.0, -0.25]), jnp.array([0.3, 0.7])
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(grad(old))(t, mu, pi)
    assert jnp.allclose(jax.jit(grad(new))(t, mu, pi), grad(old)(t, mu, pi))
