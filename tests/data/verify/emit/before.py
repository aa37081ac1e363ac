"""Inputs that --emit-tests must write faithfully, or leave out saying why
(tests/test_verify_edges.py): a typed PRNG key, complex values, a large array."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def dropout(rate, key, x):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


def dropout_fwd(rate, key, x):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0), keep


def dropout_bwd(rate, key, keep, g):
    return (jnp.where(keep, g / (1 - rate), 0.0),)


dropout.defvjp(dropout_fwd, dropout_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def cscale(s, z):
    return z * s


def cscale_fwd(s, z):
    return z * s, None


def cscale_bwd(s, _, g):
    return (g * jnp.conj(s),)


cscale.defvjp(cscale_fwd, cscale_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def shift(b, x):
    return x + b


shift.defvjp(lambda b, x: (x + b, None), lambda b, _, g: (g,))
