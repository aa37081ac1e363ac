"""A module inside a package, with a relative import (the in-memory verify test)."""

from functools import partial

import jax

from ._impl import clip


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def use(x):
    return clip_gradient(-1.0, 1.0, x)
