"""verify's inputs and verdicts: keyword examples, inputs on the chosen device, an AFTER that
fails under vmap only (tests/test_verify_inputs.py)."""

from functools import partial

import jax
import jax.numpy as jnp


def _on_the_cpu(x):
    """A concrete input must be a jax.Array committed to the CPU (where `--device cpu` puts it)."""
    if isinstance(x, jax.core.Tracer):
        return
    if not (isinstance(x, jax.Array) and x.committed and x.devices() == {jax.devices("cpu")[0]}):
        raise ValueError(f"input not committed to the cpu device: {type(x).__name__}")


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_kw(lo, hi, x, scale=1.0):
    return x * scale


def clip_kw_fwd(lo, hi, x, scale=1.0):
    return x * scale, scale


def clip_kw_bwd(lo, hi, scale, g):
    return (jnp.clip(g, lo, hi) * scale, None)


clip_kw.defvjp(clip_kw_fwd, clip_kw_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def placed(s, x):
    _on_the_cpu(x)
    return s * x


def placed_fwd(s, x):
    return s * x, None


def placed_bwd(s, _, g):
    return (s * g,)


placed.defvjp(placed_fwd, placed_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def logged(s, x):
    return s * x


def logged_fwd(s, x):
    return s * x, None


def logged_bwd(s, _, g):
    return (s * g,)


logged.defvjp(logged_fwd, logged_bwd)
