"""Inputs that --emit-tests must write faithfully, or leave out saying why
(tests/test_verify_edges.py): a typed PRNG key, complex values, a large array."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def dropout(rate, key, x):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


def dropout_fwd(rate, key, x):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0), (rate, keep)


def dropout_bwd(res, g):
    rate, keep = res
    return (None, None, jnp.where(keep, g / (1 - rate), 0.0))


dropout.defvjp(dropout_fwd, dropout_bwd)


@jax.custom_vjp
def cscale(s, z):
    return z * s


def cscale_fwd(s, z):
    return z * s, s


def cscale_bwd(s, g):
    return (None, g * jnp.conj(s) + 0.5j)  # wrong, in the imaginary part only


cscale.defvjp(cscale_fwd, cscale_bwd)


@jax.custom_vjp
def shift(b, x):
    return x + b


shift.defvjp(lambda b, x: (x + b, None), lambda _, g: (None, g))
