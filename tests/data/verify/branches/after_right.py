"""AFTER: the faithful migration."""

import jax


@jax.custom_vjp
def scale(lo, x):
    return x * lo


def scale_fwd(lo, x):
    return x * lo, lo


def scale_bwd(lo, g):
    return (None, g * lo)


scale.defvjp(scale_fwd, scale_bwd)
