"""Old style: array-valued lo/hi in nondiff_argnums (the BEFORE of the record test)."""

from functools import partial

import jax

from ._util import clip


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def apply_scaled(f, scale, x):
    return f(x) * scale


def apply_scaled_fwd(f, scale, x):
    y, f_vjp = jax.vjp(f, x)
    return y * scale, f_vjp


def apply_scaled_bwd(f, scale, f_vjp, g):
    return f_vjp(g * scale)


apply_scaled.defvjp(apply_scaled_fwd, apply_scaled_bwd)
