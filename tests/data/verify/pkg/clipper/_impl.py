import jax.numpy as jnp


def clip(g, lo, hi):
    return jnp.clip(g, lo, hi)
