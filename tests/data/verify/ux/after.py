"""verify's inputs and verdicts: keyword examples, inputs on the chosen device, an AFTER that
fails under vmap only (tests/test_verify_inputs.py)."""

import jax
import jax.numpy as jnp
import numpy as np


def _on_the_cpu(x):
    """A concrete input must be a jax.Array committed to the CPU (where `--device cpu` puts it)."""
    if isinstance(x, jax.core.Tracer):
        return
    if not (isinstance(x, jax.Array) and x.committed and x.devices() == {jax.devices("cpu")[0]}):
        raise ValueError(f"input not committed to the cpu device: {type(x).__name__}")


@jax.custom_vjp
def clip_kw(lo, hi, x, scale=1.0):
    return x * scale


def clip_kw_fwd(lo, hi, x, scale=1.0):
    return x * scale, (lo, hi, scale)


def clip_kw_bwd(res, g):
    lo, hi, scale = res
    return (None, None, jnp.clip(g, lo, hi) * scale, None)


clip_kw.defvjp(clip_kw_fwd, clip_kw_bwd)


@jax.custom_vjp
def placed(s, x):
    _on_the_cpu(x)
    return s * x


def placed_fwd(s, x):
    return s * x, s


def placed_bwd(s, g):
    return (None, s * g)


placed.defvjp(placed_fwd, placed_bwd)


@jax.custom_vjp
def logged(s, x):
    return s * x


def _host_double(v):
    return np.asarray(v) * 2


def logged_fwd(s, x):
    # A host callback without a vmap_method: runs eagerly and under jit, raises under vmap.
    twice = jax.pure_callback(_host_double, jax.ShapeDtypeStruct(jnp.shape(s), jnp.result_type(s)), s)
    return s * x, twice


def logged_bwd(twice, g):
    return (None, twice / 2 * g)


logged.defvjp(logged_fwd, logged_bwd)
