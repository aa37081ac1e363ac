"""A callable static argument that the module never passes at a call site."""

from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def apply_scaled(f, scale, x):
    return f(x) * scale


def apply_scaled_fwd(f, scale, x):
    y, f_vjp = jax.vjp(f, x)
    return y * scale, f_vjp


def apply_scaled_bwd(f, scale, f_vjp, g):
    return f_vjp(g * scale)


apply_scaled.defvjp(apply_scaled_fwd, apply_scaled_bwd)
