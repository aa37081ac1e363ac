# What vjp-migrate fix wrote for fixtures/vjp003_closure_over_moved_in_static_slot before it declined
# the site (probe30 G1): `c` moved, while fwd's lambda over it still goes to the static `fn`.
"""Level sets of a traced function: the iso-surface `fn(x) == c`, as in differentiable sphere tracing."""

from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def shifted(fn, x, c):
    return fn(x) - c


def shifted_fwd(fn, x, c):
    # the forward pass runs the primal again on the shifted function
    y = shifted(lambda z: fn(z) - c, x, 0.0)
    return y, x


def shifted_bwd(fn, x, g):
    _, pullback = jax.vjp(fn, x)
    return (*pullback(g), None)


shifted.defvjp(shifted_fwd, shifted_bwd)
