"""New style (the AFTER of the record test): lo/hi and scale are regular arguments."""

from functools import partial

import jax

from ._util import clip


@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_scaled(f, scale, x):
    return f(x) * scale


def apply_scaled_fwd(f, scale, x):
    y, f_vjp = jax.vjp(f, x)
    return y * scale, (scale, f_vjp)


def apply_scaled_bwd(f, res, g):
    scale, f_vjp = res
    return (None, *f_vjp(g * scale))


apply_scaled.defvjp(apply_scaled_fwd, apply_scaled_bwd)
